"""The label journal's lines in memory: a ``Label`` (one line, its JSON and its checks), the labels
of one (question, chunk) pair (``PairLabels``: each annotator's latest grade, the adjudicated one,
the one that counts, whether the pair is disputed), and ``LabelSet``, every pair's labels as the
lines were applied in order (``LabelJournal`` is a ``LabelSet`` read from and written to its file).
"""

from __future__ import annotations

import codecs
import getpass
import heapq
import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ragtui.core.errors import InputError
from ragtui.core.text import without_escapes

__all__ = [
    "GRADES_HUMAN",
    "GRADES_HUMAN_MODEL",
    "GRADES_MODES",
    "MAX_GRADE",
    "MAX_REASON",
    "MIN_GRADE",
    "MODEL_PREFIX",
    "BadLine",
    "Label",
    "LabelSet",
    "PairLabels",
    "default_annotator",
    "is_json_object",
    "is_model_annotator",
    "judge_annotator",
    "loads_line",
    "now_iso",
    "parse_label",
]

#: Hand grades are whole numbers in this range (the digit keys of the app).
MIN_GRADE = 0
MAX_GRADE = 9

#: A model judge's verdicts are journal lines whose annotator is ``model:NAME``; no person may take
#: such a name (``--annotator`` refuses it), so a person's grade is never read as a model's.
MODEL_PREFIX = "model:"
#: How a chat judge's grade was read ("": not a chat judge's, or a line from before there was a choice).
ANSWER_PATHS = ("", "structured", "text")

#: The longest reason a verdict line keeps (a model's sentence; longer ones are cut).
MAX_REASON = 1000

#: Which grades count (``--grades``): the people's only (the default), or the people's and, where
#: no person graded a pair, a model judge's.
GRADES_HUMAN = "human"
GRADES_HUMAN_MODEL = "human+model"
GRADES_MODES = (GRADES_HUMAN, GRADES_HUMAN_MODEL)


def is_model_annotator(annotator: str) -> bool:
    """Whether a journal annotator is a model judge (``model:NAME``), not a person."""
    return annotator.startswith(MODEL_PREFIX)


def judge_annotator(judge: str) -> str:
    """The journal annotator of a judge's verdicts: ``model:NAME``."""
    return MODEL_PREFIX + judge


@dataclass(frozen=True, slots=True)
class Label:
    """One journal line: the grade a person gave a chunk for a question (None removes it)."""

    question: str
    chunk: str
    grade: int | None
    chunk_sha1: str
    at: str
    annotator: str = ""
    line: int = 0
    #: An adjudicated grade: it wins over every annotator's grade of the pair.
    adjudicated: bool = False
    #: A model judge's verdict (annotator ``model:NAME``): the model that gave it, the hash of the
    #: prompt it was given (empty for judges without a prompt) and its one-sentence reason.
    model: str = ""
    prompt_sha1: str = ""
    reason: str = ""
    #: How a chat judge's grade was read (``structured`` or ``text``), and the model's probability
    #: of each grade where the endpoint gave them ((grade, p) pairs).
    answer: str = ""
    probabilities: tuple[tuple[int, float], ...] = ()
    #: A person's grade given in their own queue when several people grade: True when no other
    #: person's grade (nor a judge's) was on screen as they gave it, False when one was; None when
    #: not recorded (one person grading, or a journal from before ragtui recorded it).
    independent: bool | None = None

    @property
    def is_model(self) -> bool:
        """Whether a model judge gave this grade (its annotator is ``model:NAME``)."""
        return is_model_annotator(self.annotator)

    @property
    def judge(self) -> str:
        """The judge's name of a model verdict (``NAME`` of ``model:NAME``); empty for a person's label."""
        return self.annotator[len(MODEL_PREFIX) :] if self.is_model else ""

    def to_json(self) -> bytes:
        """The journal line, without the trailing newline.

        A name that was not UTF-8 (a file name or login name, kept by Python as lone surrogates)
        is written with JSON's ``\\udcXX`` escapes, which read back to the very same string.
        """
        obj: dict[str, object] = {
            "question": self.question,
            "chunk": self.chunk,
            "grade": self.grade,
            "chunk_sha1": self.chunk_sha1,
            "at": self.at,
        }
        if self.annotator:
            obj["annotator"] = self.annotator
        if self.adjudicated:
            obj["adjudicated"] = True
        if self.model:
            obj["model"] = self.model
        if self.prompt_sha1:
            obj["prompt_sha1"] = self.prompt_sha1
        if self.reason:
            obj["reason"] = self.reason
        if self.answer:
            obj["answer"] = self.answer
        if self.probabilities:
            obj["probabilities"] = probabilities_json(self.probabilities)
        if self.independent is not None:
            obj["independent"] = self.independent
        try:
            return orjson.dumps(obj)
        except TypeError:  # orjson refuses lone surrogates; the standard library escapes them
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            # Only a lone surrogate cannot be encoded, and "backslashreplace" writes it as \udcXX:
            # inside a JSON string that is exactly its escape.
            return text.encode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class BadLine:
    """A journal line that could not be read: skipped, never applied, left in the file."""

    path: str
    line: int
    problem: str

    @property
    def message(self) -> str:
        """The one-line warning ``file:line: problem (line skipped)``."""
        return InputError(self.path, f"{self.problem} (line skipped)", self.line).message


_ORDER = itertools.count()


class _Latest:
    """One kind of annotator's (the people's, or the model judges') labels of a pair, the latest
    current one found in logarithmic time however many annotators graded the pair: a heap by line,
    whose entries a later line replaced or withdrew are dropped when they reach the top, and all at
    once when they outnumber the pair's current labels."""

    __slots__ = ("_heap",)

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Label]] = []

    def add(self, label: Label, current: Mapping[str, Label]) -> None:
        """Take ``label``, now current in ``current`` (the pair's labels by annotator)."""
        heap = self._heap
        if len(heap) > 2 * len(current) + 16:
            heap[:] = [entry for entry in heap if current.get(entry[2].annotator) is entry[2]]
            heapq.heapify(heap)
        heapq.heappush(heap, (-label.line, next(_ORDER), label))

    def top(self, current: Mapping[str, Label]) -> Label | None:
        """The latest label that is still current in ``current``, or None."""
        heap = self._heap
        while heap:
            label = heap[0][2]
            if current.get(label.annotator) is label:
                return label
            heapq.heappop(heap)
        return None


@dataclass(slots=True)
class PairLabels:
    """The current labels of one (question, chunk): each annotator's latest grade and the adjudicated one.

    Annotators are people and model judges (``model:NAME``). A person's grade always wins over a
    model's: the grade that counts is the adjudicated one, else the people's (the only one, else
    the latest), and only when model grades are asked for (``models``), else the latest model
    verdict. Disputes are between people only. A removal (``"grade": null``) by an annotator
    withdraws that annotator's grade only; an adjudicated removal withdraws the adjudication.
    ``applies`` (optional everywhere) leaves out labels that do not apply, such as labels on
    another chunk text.
    """

    annotators: dict[str, Label] = field(default_factory=dict)
    adjudicated: Label | None = None
    #: The people's and the model judges' labels by line, kept by ``LabelSet._apply``, which finds
    #: the label that counts with them instead of a pass over every annotator.
    _people: _Latest | None = field(default=None, repr=False, compare=False)
    _models: _Latest | None = field(default=None, repr=False, compare=False)

    def labels(self) -> list[Label]:
        """Every current label of the pair, in journal order."""
        out = list(self.annotators.values())
        if self.adjudicated is not None:
            out.append(self.adjudicated)
        return sorted(out, key=lambda lab: lab.line)

    def _graders(
        self, applies: Callable[[Label], bool] | None, models: bool = False
    ) -> list[Label]:
        return [
            lab
            for lab in self.annotators.values()
            if lab.is_model == models and (applies is None or applies(lab))
        ]

    def effective(
        self, applies: Callable[[Label], bool] | None = None, models: bool = False
    ) -> Label | None:
        """The label that counts: the adjudicated one, else the only person's, else the latest
        person's, else (with ``models``) the latest model verdict."""
        adjudicated = self.adjudicated
        if adjudicated is not None and (applies is None or applies(adjudicated)):
            return adjudicated
        graders = self._graders(applies)
        if not graders and models:
            graders = self._graders(applies, models=True)
        return max(graders, key=lambda lab: lab.line) if graders else None

    def human(self, applies: Callable[[Label], bool] | None = None) -> Label | None:
        """The people's label that counts (adjudicated, else the only or latest person's), model verdicts aside."""
        return self.effective(applies)

    def grades(self, applies: Callable[[Label], bool] | None = None) -> dict[str, int]:
        """Each person's current grade of the pair (adjudication and model judges aside), by name."""
        return {lab.annotator: lab.grade for lab in self._graders(applies) if lab.grade is not None}

    def verdicts(self, applies: Callable[[Label], bool] | None = None) -> dict[str, Label]:
        """Each model judge's current verdict of the pair, by judge name (``NAME`` of ``model:NAME``)."""
        return {
            lab.judge: lab for lab in self._graders(applies, models=True) if lab.grade is not None
        }

    def disputed(self, applies: Callable[[Label], bool] | None = None) -> bool:
        """Whether the people's current grades differ and no adjudicated grade settles it (model judges never dispute)."""
        adjudicated = self.adjudicated
        if adjudicated is not None and (applies is None or applies(adjudicated)):
            return False
        return len(set(self.grades(applies).values())) > 1

    def state(self) -> tuple[object, ...]:
        """What numbers and dispute marks rest on (line numbers aside, which a compaction changes)."""
        adjudicated = self.adjudicated
        latest = self.effective(models=True)
        return (
            None if adjudicated is None else (adjudicated.grade, adjudicated.chunk_sha1),
            tuple(
                sorted(
                    (lab.annotator, lab.grade, lab.chunk_sha1) for lab in self.annotators.values()
                )
            ),
            latest.annotator if latest is not None else "",
        )


def default_annotator() -> str:
    """The login name, used when no ``--annotator`` is given."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def now_iso() -> str:
    """The current time in ISO 8601, UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def parse_label(obj: dict[str, Any], path: Path, line: int) -> Label:
    """Validate one journal object; InputError names the line and the problem."""
    for key in ("question", "chunk"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise InputError(path, f"'{key}' must be a non-empty string", line)
    if "grade" not in obj:
        raise InputError(path, "missing field 'grade'", line)
    grade = obj["grade"]
    if grade is not None and (isinstance(grade, bool) or not isinstance(grade, int)):
        raise InputError(path, f"'grade' must be a whole number or null, got {grade!r}", line)
    if grade is not None and not MIN_GRADE <= grade <= MAX_GRADE:
        raise InputError(path, f"grade {grade} out of range {MIN_GRADE}..{MAX_GRADE}", line)
    sha1 = obj.get("chunk_sha1", "")
    at = obj.get("at", "")
    annotator = obj.get("annotator", "")
    if not isinstance(sha1, str) or not isinstance(at, str) or not isinstance(annotator, str):
        raise InputError(path, "'chunk_sha1', 'at' and 'annotator' must be strings", line)
    adjudicated = obj.get("adjudicated", False)
    if not isinstance(adjudicated, bool):
        raise InputError(path, f"'adjudicated' must be true or false, got {adjudicated!r}", line)
    model, prompt_sha1, reason = (obj.get(key, "") for key in ("model", "prompt_sha1", "reason"))
    if (
        not isinstance(model, str)
        or not isinstance(prompt_sha1, str)
        or not isinstance(reason, str)
    ):
        raise InputError(path, "'model', 'prompt_sha1' and 'reason' must be strings", line)
    if adjudicated and is_model_annotator(annotator):
        raise InputError(path, "a model judge's verdict cannot be adjudicated", line)
    answer = obj.get("answer", "")
    if answer not in ANSWER_PATHS:
        raise InputError(path, f"'answer' must be one of {', '.join(ANSWER_PATHS[1:])}", line)
    independent = obj.get("independent")
    if independent is not None and not isinstance(independent, bool):
        raise InputError(path, f"'independent' must be true or false, got {independent!r}", line)
    return Label(
        obj["question"],
        obj["chunk"],
        grade,
        sha1,
        at,
        annotator,
        line,
        adjudicated,
        model,
        prompt_sha1,
        # Data from a file: a terminal escape sequence goes whole (its parameters too).
        without_escapes(reason[: MAX_REASON * 4])[:MAX_REASON],
        answer,
        read_probabilities(obj.get("probabilities"), path, line),
        independent,
    )


def probabilities_json(pairs: tuple[tuple[int, float], ...]) -> dict[str, float]:
    """Grade probabilities as a journal line (and the verdict cache) writes them: grade -> p."""
    return {str(g): round(p, 6) for g, p in pairs}


def read_probabilities(
    raw: Any, path: Path | str | None, line: int | None
) -> tuple[tuple[int, float], ...]:
    """A verdict's grade probabilities as a journal line (or the verdict cache) holds them: an
    object of grade -> probability, each from 0 to 1; InputError naming the line otherwise."""
    if raw is None:
        return ()
    problem = "'probabilities' must map grades to numbers from 0 to 1"
    if not isinstance(raw, dict) or len(raw) > MAX_GRADE - MIN_GRADE + 1:
        raise InputError(path, problem, line)
    out = []
    for key, p in raw.items():
        if not (isinstance(key, str) and key.isdigit() and MIN_GRADE <= int(key) <= MAX_GRADE):
            raise InputError(path, problem, line)
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            raise InputError(path, problem, line)
        out.append((int(key), float(p)))
    return tuple(sorted(out))


#: A JSON escape of a lone surrogate (``\udc80``..``\udfff``), which orjson refuses to read.
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def loads_line(raw: bytes) -> Any:
    """One JSON value; lines holding a surrogate escape (a non-UTF-8 name, see ``Label.to_json``) are read by the standard library.

    A byte-order mark before the value (an editor's, or files joined with ``cat``) is read past.
    """
    while raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not _LONE_SURROGATE.search(raw):
            raise
        try:
            return json.loads(raw)
        except ValueError:
            pass
        raise


def is_json_object(raw: bytes) -> bool:
    """Whether ``raw`` is one whole JSON object (a journal line, though perhaps not a valid label)."""
    try:
        return isinstance(loads_line(raw), dict)
    except orjson.JSONDecodeError:
        return False


def _latest(pair: PairLabels, models: bool) -> Label | None:
    """``pair.effective(models=models)`` from the heaps ``LabelSet._apply`` keeps."""
    if pair.adjudicated is not None:
        return pair.adjudicated
    found = pair._people.top(pair.annotators) if pair._people is not None else None
    if found is None and models and pair._models is not None:
        found = pair._models.top(pair.annotators)
    return found


def _mark(label: Label | None) -> tuple[object, ...] | None:
    """What ``PairLabels.state`` keeps of one label: its grade and chunk hash."""
    return None if label is None else (label.grade, label.chunk_sha1)


def _pair_state(pair: PairLabels) -> tuple[object, ...]:
    """``pair.state()``, with the heaps ``LabelSet._apply`` keeps (the annotators as a set)."""
    return (
        _mark(pair.adjudicated),
        frozenset((lab.annotator, lab.grade, lab.chunk_sha1) for lab in pair.annotators.values()),
        _who(_latest(pair, models=True)),
    )


def _who(label: Label | None) -> str:
    """Whose label counts, as ``PairLabels.state`` keeps it."""
    return label.annotator if label is not None else ""


#: Where a reading of a journal's history stopped: its first label and its length then.
HistoryMark = tuple[Label | None, int]


def history_since(
    history: Sequence[Label], read: HistoryMark | None
) -> tuple[Sequence[Label] | None, HistoryMark]:
    """The labels the journal's ``history`` gained since ``read`` (its first label and length when
    last read), or None when it must be read whole (never read, or read again from its start:
    replaced, compacted); and the mark to read from next."""
    first = history[0] if history else None
    mark = (first, len(history))
    if read is None or read[1] > len(history) or (read[1] and read[0] is not first):
        return None, mark
    return history[read[1] :], mark


def labelled_since(
    history: Sequence[Label], counted: HistoryMark | None
) -> tuple[set[str] | None, HistoryMark]:
    """The questions whose labels the journal's ``history`` gained since ``counted``, or None when
    everything must be counted again (``history_since``); and the mark to count from next."""
    since, mark = history_since(history, counted)
    return (None if since is None else {label.question for label in since}), mark


class LabelSet:
    """Every labelled pair's labels, as the journal's lines were applied in order; what changed is
    kept for ``take_touched``."""

    def __init__(self, models: bool = False) -> None:
        #: Whether a model judge's verdict counts where no person graded (``--grades human+model``).
        self.count_models = models
        #: The label that counts for each labelled pair, (question, chunk) -> label (``PairLabels.effective``).
        self.current: dict[tuple[str, str], Label] = {}
        #: The same labels by question: question -> chunk -> label.
        self.by_question: dict[str, dict[str, Label]] = {}
        #: Every current label of every pair: question -> chunk -> its annotators' and adjudicated labels.
        self.pairs: dict[str, dict[str, PairLabels]] = {}
        #: Every line read or written, in journal order.
        self.history: list[Label] = []
        # Questions whose labels changed since take_touched was last called.
        self._touched: set[str] = set()

    def _clear(self) -> None:
        """Forget every label (what was touched is kept)."""
        self.current.clear()
        self.by_question.clear()
        self.pairs.clear()
        self.history.clear()

    def take_touched(self) -> set[str]:
        """The questions whose labels (the grade that counts, or an annotator's) changed since the last call."""
        touched, self._touched = self._touched, set()
        return touched

    def _apply(self, label: Label) -> None:
        """Apply one line: the annotator's (or the adjudicated) label of its pair is replaced or withdrawn.

        In time that does not grow with how many annotators graded the pair (a journal of a
        million lines on one pair is read in linear time): what ``PairLabels.state`` compares is
        compared for the one label that changed, and the latest person's and model's labels come
        from the pair's heaps (``_Latest``).
        """
        self.history.append(label)
        question, chunk = label.question, label.chunk
        by_chunk = self.pairs.setdefault(question, {})
        pair = by_chunk.get(chunk)
        if pair is None:
            pair = by_chunk[chunk] = PairLabels()
        latest_before = _latest(pair, models=True)
        if label.adjudicated:
            old = pair.adjudicated
            new = pair.adjudicated = label if label.grade is not None else None
        else:
            name = label.annotator
            old = pair.annotators.get(name)
            if label.grade is None:
                pair.annotators.pop(name, None)
                new = None
            else:
                new = pair.annotators[name] = label
                if label.is_model:
                    pair._models = pair._models or _Latest()
                    pair._models.add(label, pair.annotators)
                else:
                    pair._people = pair._people or _Latest()
                    pair._people.add(label, pair.annotators)
        latest_after = _latest(pair, models=True)
        if _mark(old) != _mark(new) or _who(latest_before) != _who(latest_after):
            self._touched.add(question)
        effective = _latest(pair, models=self.count_models)
        key = (question, chunk)
        if not pair.annotators and pair.adjudicated is None:
            del by_chunk[chunk]
            if not by_chunk:
                del self.pairs[question]
        if effective is None:
            self.current.pop(key, None)
            self.by_question.get(question, {}).pop(chunk, None)
        else:
            self.current[key] = effective
            self.by_question.setdefault(question, {})[chunk] = effective

    def pair(self, question: str, chunk: str) -> PairLabels | None:
        """Every current label of a pair (each annotator's and the adjudicated one), or None when it has none."""
        return self.pairs.get(question, {}).get(chunk)

    def iter_pairs(self) -> Iterator[tuple[str, str, PairLabels]]:
        """Every labelled pair as (question, chunk, its labels)."""
        for question, by_chunk in self.pairs.items():
            for chunk, pair in by_chunk.items():
                yield question, chunk, pair

    def disputed(self, question: str, chunk: str) -> bool:
        """Whether the annotators' current grades of a pair differ and no adjudicated grade settles it."""
        pair = self.pair(question, chunk)
        return pair is not None and pair.disputed()

    def _state(self) -> dict[str, object]:
        """Each labelled question's labels as ``PairLabels.state`` sees them, chunk by chunk."""
        return {
            question: {chunk: _pair_state(pair) for chunk, pair in by_chunk.items()}
            for question, by_chunk in self.pairs.items()
        }
