"""The golden set: questions with evidence strings, the evidence rule, and highlight spans."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document, read_jsonl
from ragtui.core.errors import InputError

#: The grade the evidence rule gives a chunk that contains an evidence string ("answers fully").
EVIDENCE_GRADE = 2

_WORD = re.compile(r"\w+")

#: Words too common to mark in the chunk view; BM25 still scores them.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


@dataclass(frozen=True, slots=True)
class Question:
    """One golden question: id, text, evidence strings (any one makes a chunk relevant) and slices."""

    id: str
    text: str
    evidence: tuple[str, ...] = ()
    slices: tuple[str, ...] = ()
    line: int = 0
    retired: bool = False
    """Retired from the app: kept in the file with ``"retired": true``, left out of every mean."""


class QuestionColumns(Sequence[Question]):
    """Questions kept as the columns they were read as (the questions cache), each ``Question``
    built the first time it is asked for: the first screen of 100,000 questions reads a few dozen,
    and building them all (with their strings cut from the cache) was 0.19-0.27 s of the load.

    The columns are read-only once given (``QuestionSet`` reads them whole: ids, texts, rows,
    retired, and the evidence with its digest).
    """

    __slots__ = (
        "_built",
        "evidence",
        "evidence_digest",
        "ids",
        "lines",
        "retired",
        "rows",
        "slices",
        "text_digest",
        "texts",
    )

    def __init__(
        self,
        ids: list[str],
        texts: Sequence[str],
        evidence: Sequence[tuple[str, ...]],
        slices: list[tuple[str, ...]],
        lines: list[int],
        retired: list[bool],
        *,
        rows: dict[str, int],
        text_digest: str,
        evidence_digest: str,
    ) -> None:
        if not len(ids) == len(texts) == len(evidence) == len(slices) == len(lines) == len(retired):
            raise ValueError("question columns of different lengths")
        self.ids, self.texts, self.evidence = ids, texts, evidence
        self.slices, self.lines, self.retired = slices, lines, retired
        #: Each id's row; ``list_digest`` of the texts and of the evidence lists (kept by the cache).
        self.rows, self.text_digest, self.evidence_digest = rows, text_digest, evidence_digest
        self._built: list[Question | None] = [None] * len(ids)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Question: ...
    @overload
    def __getitem__(self, index: slice) -> list[Question]: ...
    def __getitem__(self, index: int | slice) -> Question | list[Question]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self.ids))[index]]
        q = self._built[index]
        if q is None:
            q = self._built[index] = Question(
                self.ids[index],
                self.texts[index],
                self.evidence[index],
                self.slices[index],
                self.lines[index],
                self.retired[index],
            )
        return q

    def __iter__(self) -> Iterator[Question]:
        built = self._built
        if None in built:
            # A pass over every question (a report, a sample) builds those not built yet in one
            # go, its columns read in order: 0.25 s at 100,000 questions, against 0.38 s one by one.
            columns = (self.ids, self.texts, self.evidence, self.slices, self.lines, self.retired)
            rows = zip(*columns, strict=True)
            self._built = built = [
                Question(*row) if q is None else q for q, row in zip(built, rows, strict=True)
            ]
        return iter(built)  # type: ignore[arg-type]  # every entry built above


def normalize_ws(text: str) -> str:
    """Collapse every run of white space to one space and strip the ends."""
    return " ".join(text.split())


def query_terms(text: str) -> list[str]:
    """Lower-case word tokens, the same tokens BM25 scores."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """The distinct BM25 tokens of ``text`` that are not stop words, in order of first use."""
    return [t for t in dict.fromkeys(query_terms(text)) if t not in _STOPWORDS]


def _str_list(
    value: object, path: Path, line: int, field: str, allow_empty: bool
) -> tuple[str, ...]:
    if type(value) is str:  # the common case first: one string
        if allow_empty or value.strip():
            return (value,)
        raise InputError(path, f"'{field}' must not be empty", line)
    if not isinstance(value, list):
        if isinstance(value, str):
            value = [value]
        else:
            raise InputError(path, f"'{field}' must be a string or a list of strings", line)
    for v in value:
        if not isinstance(v, str):
            raise InputError(path, f"'{field}' must be a string or a list of strings", line)
    if not allow_empty and (not value or any(not v.strip() for v in value)):
        raise InputError(path, f"'{field}' must not be empty", line)
    return tuple(value)


def parse_question(
    obj: dict[str, Any], path: Path, line: int, require_evidence: bool = True
) -> Question:
    """Validate one ``questions.jsonl`` object."""
    qid = obj.get("id")
    if type(qid) is not str or not qid.strip():
        if qid is None:
            raise InputError(path, "missing field 'id'", line)
        if not isinstance(qid, str) or not qid.strip():
            raise InputError(path, "'id' must be a non-empty string", line)
    text = obj.get("question")
    if type(text) is not str or not text.strip():
        if text is None:
            raise InputError(path, "missing field 'question'", line)
        if not isinstance(text, str) or not text.strip():
            raise InputError(path, "'question' must be a non-empty string", line)
    raw_evidence = obj.get("evidence", _MISSING)
    if raw_evidence is _MISSING:
        if require_evidence:
            raise InputError(path, "missing field 'evidence'", line)
        evidence: tuple[str, ...] = ()
    else:
        evidence = _str_list(raw_evidence, path, line, "evidence", allow_empty=False)
    raw_slices = obj.get("slices")
    slices = (
        ()
        if raw_slices is None and "slices" not in obj
        else _str_list(raw_slices, path, line, "slices", allow_empty=True)
    )
    retired = obj.get("retired", False)
    if retired is not False and retired is not True:
        raise InputError(path, "'retired' must be true or false", line)
    return Question(id=qid, text=text, evidence=evidence, slices=slices, line=line, retired=retired)


#: Marks a field that is absent (None is a value a JSON line can hold).
_MISSING: Any = object()


def load_questions(
    path: str | Path, require_evidence: bool = True, raw: bytes | None = None
) -> list[Question]:
    """Read ``questions.jsonl`` (``raw``: its bytes, already read); malformed lines and duplicate ids
    raise InputError naming the line."""
    path = Path(path)
    questions: list[Question] = []
    first_line: dict[str, int] = {}
    for line, obj in read_jsonl(path, raw):
        question = parse_question(obj, path, line, require_evidence)
        if question.id in first_line:
            raise InputError(
                path,
                f"duplicate question id {question.id!r} (first on line {first_line[question.id]})",
                line,
            )
        first_line[question.id] = line
        questions.append(question)
    if not questions:
        raise InputError(path, "the golden set holds no questions")
    return questions


class EvidenceIndex:
    """Finds the chunks containing a question's evidence, comparing white-space-collapsed text."""

    def __init__(self, chunk_ids: Sequence[str], chunk_texts: Sequence[str]) -> None:
        self.chunk_ids = list(chunk_ids)
        self._normalized = [normalize_ws(t) for t in chunk_texts]

    def matching_chunks(self, evidence: Iterable[str]) -> list[str]:
        """Ids of the chunks that contain any of the evidence strings, in chunk order."""
        needles = [normalize_ws(e) for e in evidence if normalize_ws(e)]
        if not needles:
            return []
        return [
            cid
            for cid, text in zip(self.chunk_ids, self._normalized, strict=True)
            if any(n in text for n in needles)
        ]

    def matching_indices(self, needle: str) -> list[int]:
        """Positions of the chunks that contain one evidence string already white-space-collapsed, in chunk order."""
        return [i for i, text in enumerate(self._normalized) if needle in text]


@functools.lru_cache(maxsize=4096)
def evidence_pattern(evidence: str) -> re.Pattern[str]:
    """A regex matching ``evidence`` with any run of white space where it has one (kept: every row
    of a result list asks for its question's again, on every repaint)."""
    words = evidence.split()
    return re.compile(r"\s+".join(re.escape(w) for w in words))


def evidence_spans(text: str, evidence: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans in ``text`` where an evidence string occurs (white space collapsed)."""
    spans: list[tuple[int, int]] = []
    for item in evidence:
        if not item.split():
            continue
        spans.extend(m.span() for m in evidence_pattern(item).finditer(text))
    return sorted(spans)


#: The words of the texts searched lately (lower-cased word -> its spans, in order), by text: the
#: app asks for the terms of the same chunks again and again (every row of a result list, the
#: chunk view), for question after question. Tuples of numbers, so that the garbage collector
#: stops walking them after its first pass.
_word_spans: dict[str, dict[str, tuple[tuple[int, int], ...]]] = {}
#: Texts whose words are kept (the index is emptied when it holds more).
WORD_SPANS_KEPT = 512


def _words(text: str) -> dict[str, tuple[tuple[int, int], ...]]:
    """Each lower-cased word of ``text`` with its spans (kept for the texts searched lately)."""
    index = _word_spans.get(text)
    if index is None:
        found: dict[str, list[tuple[int, int]]] = {}
        for m in _WORD.finditer(text):
            found.setdefault(m.group().lower(), []).append(m.span())
        index = {word: tuple(spans) for word, spans in found.items()}
        if len(_word_spans) >= WORD_SPANS_KEPT:
            _word_spans.clear()
        _word_spans[text] = index
    return index


@functools.lru_cache(maxsize=4096)
def _search_terms(question: str) -> frozenset[str]:
    """The question's words but the stop words (kept, as ``evidence_pattern``)."""
    return frozenset(t for t in query_terms(question) if t not in _STOPWORDS)


def term_spans(text: str, question: str) -> list[tuple[int, int]]:
    """Character spans of the question's (non-stop) words in ``text``, matched whole and case-blind."""
    terms = _search_terms(question)
    if not terms:
        return []
    words = _words(text)
    found = [words[t] for t in terms if t in words]
    if len(found) == 1:
        return list(found[0])
    return sorted(itertools.chain.from_iterable(found))


def straddling_pairs(
    documents: Sequence[Document], chunks: Sequence[Chunk], evidence: str
) -> list[tuple[str, str]]:
    """Neighbouring chunk pairs whose joined text holds ``evidence`` when neither chunk alone does."""
    needle = normalize_ws(evidence)
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc, []).append(c)
    pairs = []
    for doc in documents:
        if needle not in normalize_ws(doc.text):
            continue
        doc_chunks = by_doc.get(doc.path, [])
        for a, b in itertools.pairwise(doc_chunks):
            if (
                needle in normalize_ws(doc.text[a.start : b.end])
                and needle not in normalize_ws(a.text)
                and needle not in normalize_ws(b.text)
            ):
                pairs.append((a.id, b.id))
    return pairs


def passage_start(
    text: str, evidence: Iterable[str], question: str, window: int = 200
) -> tuple[int, str]:
    """Where the passage that matched begins in ``text``: the first evidence string, else the
    ``window`` characters holding the most distinct question terms; with what it is (``evidence``,
    ``terms`` or ``start`` when nothing matched). The offset is moved back to a word start."""
    return _passage_start(text, tuple(evidence), question, window)


@functools.lru_cache(maxsize=4096)
def _passage_start(
    text: str, evidence: tuple[str, ...], question: str, window: int
) -> tuple[int, str]:
    """``passage_start``, kept: a result list's row and the chunk view ask again for the same
    chunk and question whenever the question is shown again."""
    spans = evidence_spans(text, evidence)
    if spans:
        return _word_start(text, spans[0][0]), "evidence"
    terms = term_spans(text, question)
    if not terms:
        return 0, "start"
    # A window sliding over the matches: the distinct terms of terms[i:j] (those ending within
    # ``window`` characters of match i's start), counted as it moves.
    words = [text[s:e].lower() for s, e in terms]
    inside: dict[str, int] = {}
    best_start, best_count = 0, -1
    j = 0
    for i, (start, _) in enumerate(terms):
        j = max(j, i)
        while j < len(terms) and terms[j][1] <= start + window:
            inside[words[j]] = inside.get(words[j], 0) + 1
            j += 1
        if len(inside) > best_count:
            best_start, best_count = start, len(inside)
        if j > i:  # match i leaves the window
            left = inside[words[i]] - 1
            if left:
                inside[words[i]] = left
            else:
                del inside[words[i]]
    return _word_start(text, best_start), "terms"


def _word_start(text: str, offset: int, back: int = 24) -> int:
    """``offset`` moved back by up to ``back`` characters to the start of a word or a line, so a
    snippet shows a little context before the match."""
    start = max(0, offset - back)
    cut = text.rfind("\n", start, offset)
    if cut >= 0:
        return cut + 1
    space = text.find(" ", start, offset)
    return space + 1 if space >= 0 else start


def find_span(text: str, typed: str) -> tuple[int, int] | None:
    """The span of ``text`` that typed words select: the words themselves (case and white space
    ignored), or with ``...`` (or ``…``) between two phrases, everything from the first phrase to
    the next occurrence of the second; None when they are not there."""
    parts = [p for p in re.split(r"\.\.\.|…", typed) if p.strip()]
    if not parts:
        return None
    first = _phrase(parts[0]).search(text)
    if first is None:
        return None
    if len(parts) == 1 or not re.search(r"\.\.\.|…", typed):
        return first.span()
    last = _phrase(parts[-1]).search(text, first.end())
    if last is None:
        return None
    return first.start(), last.end()


def _phrase(words: str) -> re.Pattern[str]:
    """The words as a case-blind pattern with any white space between them."""
    return re.compile(r"\s+".join(re.escape(w) for w in words.split()), re.IGNORECASE)
