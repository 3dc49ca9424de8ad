"""The random sample of questions people judge fully, for the prediction-powered estimate.

The estimate (``eval --estimate``) corrects a model judge with the people's grades on questions
drawn at random: only then is the human-minus-model difference on them an unbiased guess of the
difference everywhere. Questions people chose themselves are not a random sample, so the draw is
recorded in ``sample.json`` beside the label journal: the seed, the questions it was drawn from
(their number and a hash of their ids), and the drawn questions in order. A person may judge the
first n of them; the estimate uses those that people judged fully.

Drawing is ``random.Random(seed).sample`` over the question ids in golden-set order: the same seed
and questions give the same sample on every machine.

Two designs. ``uniform``: a simple random sample of the questions. ``strata``: the questions split
into strata (by how unsure the judge was of their pools, or by slice), each sampled at random
apart, with more questions where the judge is less sure and fewer where a question's pool costs
more pairs (``allocate``); the file records each stratum's questions and how many were drawn, so
every question's chance of being drawn is known and the estimate weighs each stratum by its size
(``estimate.stratified_mean``). The drawn questions are interleaved so that any first part of the
order keeps the allocation's proportions: people who judge only the first questions still leave a
random sample of each stratum.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from ragtui.core.errors import InputError
from ragtui.core.files import content_hash, read_regular, write_atomic
from ragtui.core.labelling.labels import now_iso

__all__ = [
    "DESIGNS",
    "MIN_PER_STRATUM",
    "SAMPLE_FILE",
    "HumanSample",
    "SampleStratum",
    "allocate",
    "confidence_strata",
    "draw_sample",
    "draw_stratified",
    "load_sample",
    "save_sample",
]

#: The sampling designs: a simple random sample, or strata sampled apart.
DESIGNS = ("uniform", "strata")
#: Questions drawn from each stratum at least (its variance needs two).
MIN_PER_STRATUM = 2
#: Confidence strata: the questions split into this many groups of rising doubt...
CONFIDENCE_STRATA = 3
#: ... each of at least this many questions (fewer groups for a small golden set).
MIN_CONFIDENCE_STRATUM = 6

#: The file beside ``labels.jsonl`` that records the random sample.
SAMPLE_FILE = "sample.json"


def _ids_sha1(question_ids: Sequence[str]) -> str:
    return content_hash("\n".join(question_ids))


@dataclass(frozen=True, slots=True)
class SampleStratum:
    """One stratum of a stratified draw: its questions (golden-set order), how many were drawn, the
    judge's doubt there at the draw (the allocation's weight; 0: not known) and the mean pool pairs
    people grade to judge one of its questions fully."""

    label: str
    questions: tuple[str, ...]
    drawn: int
    doubt: float = 0.0
    pairs: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "questions": list(self.questions),
            "drawn": self.drawn,
            "doubt": self.doubt,
            "pairs": self.pairs,
        }


@dataclass(frozen=True, slots=True)
class HumanSample:
    """A random draw of questions: the seed, what it was drawn from, and the drawn ids in order;
    for the ``strata`` design, the strata (``by``: what they were formed by)."""

    seed: int
    population: int
    population_sha1: str
    questions: tuple[str, ...]
    at: str = ""
    design: str = "uniform"
    by: str = ""
    strata: tuple[SampleStratum, ...] = ()

    def describe_design(self) -> str:
        """``uniform`` or ``strata by confidence (3: 4/8/16 drawn)``."""
        if self.design != "strata":
            return "uniform"
        drawn = "/".join(str(s.drawn) for s in self.strata)
        return f"strata by {self.by} ({len(self.strata)}: {drawn} drawn)"

    def drawn_from(self, question_ids: Sequence[str]) -> bool:
        """Whether the sample was drawn from exactly these questions (in this order)."""
        return len(question_ids) == self.population and _ids_sha1(question_ids) == (
            self.population_sha1
        )

    def to_json(self) -> bytes:
        """The file's content."""
        return orjson.dumps(
            {
                "seed": self.seed,
                "population": self.population,
                "population_sha1": self.population_sha1,
                "questions": list(self.questions),
                "at": self.at,
                "design": self.design,
                **(
                    {"by": self.by, "strata": [s.as_json() for s in self.strata]}
                    if self.design == "strata"
                    else {}
                ),
            },
            option=orjson.OPT_INDENT_2,
        )


def draw_sample(question_ids: Sequence[str], n: int, seed: int) -> HumanSample:
    """``n`` questions drawn at random (``random.Random(seed)``) from ``question_ids`` (all when fewer)."""
    if n < 1:
        raise ValueError("a sample needs at least one question")
    ids = list(question_ids)
    drawn = random.Random(seed).sample(ids, min(n, len(ids)))
    return HumanSample(seed, len(ids), _ids_sha1(ids), tuple(drawn), now_iso())


def allocate(
    sizes: Sequence[int], doubts: Sequence[float], pairs: Sequence[float], n: int
) -> list[int]:
    """How many questions to draw from each stratum: ``n`` in all, at least ``MIN_PER_STRATUM`` in
    each (none beyond its size), the rest by Neyman's rule with cost,
    ``n_h ~ N_h * s_h / sqrt(c_h)``: ``s_h`` the guess at the stratum's spread, half a flat share
    and half its doubt over the mean doubt (half flat, so a judge sure and wrong somewhere is still
    seen), ``c_h`` its mean pairs a question. Without doubts, by size and cost alone. Largest
    remainders, ties to the earlier stratum."""
    if len(sizes) != len(doubts) or len(sizes) != len(pairs) or not sizes:
        raise ValueError("allocate needs one size, doubt and cost per stratum")
    total = sum(sizes)
    floor = [min(MIN_PER_STRATUM, size) for size in sizes]
    if n < sum(floor):
        raise ValueError(
            f"a stratified sample of {len(sizes)} strata needs at least {sum(floor)} questions, "
            f"got {n}"
        )
    n = min(n, total)
    mean_doubt = sum(size * d for size, d in zip(sizes, doubts, strict=True)) / total
    mean_pairs = sum(size * c for size, c in zip(sizes, pairs, strict=True)) / total or 1.0
    weights = [
        size
        * (0.5 + 0.5 * d / mean_doubt if mean_doubt > 0 else 1.0)
        / math.sqrt(max(c, 1e-9) / mean_pairs if c > 0 else 1.0)
        for size, d, c in zip(sizes, doubts, pairs, strict=True)
    ]
    alloc = list(floor)
    # Hand out the rest one at a time to the stratum furthest below its share (capped by its size).
    scale = sum(weights)
    while sum(alloc) < n:
        gaps = [
            (w / scale * n - a if a < size else -math.inf)
            for w, a, size in zip(weights, alloc, sizes, strict=True)
        ]
        alloc[gaps.index(max(gaps))] += 1
    return alloc


def confidence_strata(population: Sequence[str], doubts: Mapping[str, float]) -> dict[str, str]:
    """Each question's confidence stratum: the questions in order of the judge's doubt (golden-set
    order among equals) cut into ``CONFIDENCE_STRATA`` groups of equal size, ``judge sure``,
    ``judge fairly sure`` and ``judge unsure`` (fewer, numbered, for a small golden set)."""
    at = {q: i for i, q in enumerate(population)}
    order = sorted(population, key=lambda q: (doubts.get(q, 0.0), at[q]))
    groups = max(1, min(CONFIDENCE_STRATA, len(order) // MIN_CONFIDENCE_STRATUM))
    names = ("judge sure", "judge fairly sure", "judge unsure")
    labels = names if groups == 3 else tuple(f"doubt {i + 1}" for i in range(groups))
    return {q: labels[i * groups // len(order)] for i, q in enumerate(order)}


def _interleaved(drawn: Sequence[Sequence[str]]) -> list[str]:
    """The strata's drawn questions in one order whose every first part keeps their proportions:
    next, the stratum whose count so far is furthest behind its share (ties to the earlier)."""
    taken = [0] * len(drawn)
    out: list[str] = []
    total = sum(len(d) for d in drawn)
    for position in range(1, total + 1):
        behind = [
            (position * len(d) / total - t if t < len(d) else -math.inf)
            for d, t in zip(drawn, taken, strict=True)
        ]
        h = behind.index(max(behind))
        out.append(drawn[h][taken[h]])
        taken[h] += 1
    return out


def draw_stratified(
    question_ids: Sequence[str],
    stratum_of: Mapping[str, str],
    n: int,
    seed: int,
    by: str,
    doubt: Mapping[str, float] | None = None,
    pairs: Mapping[str, float] | None = None,
) -> HumanSample:
    """``n`` questions drawn by strata: ``stratum_of`` names each question's stratum (strata from
    the surest to the least sure, else in the order their first question comes), ``doubt`` the judge's doubt of each question (the expected
    number of wrong grades in its pool), ``pairs`` the pool pairs people grade to judge it fully.
    Each stratum's allocation (``allocate``) is drawn with ``random.Random(seed)``, stratum by
    stratum, and the draws interleaved."""
    ids = list(question_ids)
    groups: dict[str, list[str]] = {}
    for q in ids:
        groups.setdefault(stratum_of[q], []).append(q)
    spread = {
        label: math.sqrt(sum(doubt.get(q, 0.0) for q in members) / len(members)) if doubt else 0.0
        for label, members in groups.items()
    }
    labels = sorted(groups, key=lambda label: spread[label])  # stable: first come among equals
    sizes = [len(groups[label]) for label in labels]
    doubts = [spread[label] for label in labels]
    costs = [
        sum(pairs.get(q, 0.0) for q in groups[label]) / len(groups[label]) if pairs else 0.0
        for label in labels
    ]
    alloc = allocate(sizes, doubts, costs, n)
    rng = random.Random(seed)
    drawn = [rng.sample(groups[label], a) for label, a in zip(labels, alloc, strict=True)]
    strata = tuple(
        SampleStratum(label, tuple(groups[label]), a, d, c)
        for label, a, d, c in zip(labels, alloc, doubts, costs, strict=True)
    )
    return HumanSample(
        seed,
        len(ids),
        _ids_sha1(ids),
        tuple(_interleaved(drawn)),
        now_iso(),
        "strata",
        by,
        strata,
    )


def save_sample(golden: Path, sample: HumanSample) -> Path:
    """Write ``sample.json`` into the golden-set folder atomically; returns its path."""
    path = Path(golden) / SAMPLE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, sample.to_json() + b"\n", 0o644)
    return path


#: The largest ``sample.json`` read (a sample of 100,000 questions is about 2 MB).
MAX_SAMPLE_BYTES = 32 * 1048576


def load_sample(golden: Path) -> HumanSample | None:
    """The recorded sample of a golden-set folder, or None when there is none; InputError when it is malformed."""
    path = Path(golden) / SAMPLE_FILE
    try:
        raw = read_regular(path, limit=MAX_SAMPLE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"malformed JSON ({exc.args[0].split(':')[0]})") from None
    if not isinstance(obj, dict):
        raise InputError(path, "expected a JSON object")
    seed, population, sha1, questions = (
        obj.get("seed"),
        obj.get("population"),
        obj.get("population_sha1"),
        obj.get("questions"),
    )
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InputError(path, "'seed' must be a whole number")
    if not isinstance(population, int) or isinstance(population, bool) or population < 0:
        raise InputError(path, "'population' must be a whole number")
    if not isinstance(sha1, str):
        raise InputError(path, "'population_sha1' must be a string")
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        raise InputError(path, "'questions' must be a list of question ids")
    if len(set(questions)) != len(questions):
        raise InputError(path, "'questions' names a question twice")
    at = obj.get("at", "")
    design = obj.get("design", "uniform")
    if design not in DESIGNS:
        raise InputError(path, f"'design' must be one of {', '.join(DESIGNS)}")
    strata = _strata(path, obj, questions, population) if design == "strata" else ()
    by = obj.get("by", "")
    return HumanSample(
        seed,
        population,
        sha1,
        tuple(questions),
        at if isinstance(at, str) else "",
        design,
        by if isinstance(by, str) else "",
        strata,
    )


def _strata(
    path: Path, obj: dict[str, object], questions: list[str], population: int
) -> tuple[SampleStratum, ...]:
    """The strata of a stratified ``sample.json``, checked: they split the population, and each
    stratum's drawn count is its questions in the sample."""
    raw = obj.get("strata")
    if not isinstance(raw, list) or not raw:
        raise InputError(path, "'strata' must be a list of strata for the strata design")
    out = []
    seen: set[str] = set()
    drawn = set(questions)
    for i, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise InputError(path, f"stratum {i} is not a JSON object")
        label, members, count = item.get("label"), item.get("questions"), item.get("drawn")
        doubt, pairs = item.get("doubt", 0.0), item.get("pairs", 0.0)
        if not isinstance(label, str):
            raise InputError(path, f"stratum {i}: 'label' must be a string")
        if not isinstance(members, list) or not all(isinstance(q, str) for q in members):
            raise InputError(path, f"stratum {i}: 'questions' must be a list of question ids")
        if not isinstance(count, int) or isinstance(count, bool):
            raise InputError(path, f"stratum {i}: 'drawn' must be a whole number")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (doubt, pairs)):
            raise InputError(path, f"stratum {i}: 'doubt' and 'pairs' must be numbers")
        if seen.intersection(members) or len(set(members)) != len(members):
            raise InputError(path, f"stratum {i}: a question is in two strata")
        seen.update(members)
        if sum(q in drawn for q in members) != count:
            raise InputError(
                path, f"stratum {i}: 'drawn' is {count} but the sample holds a different number"
            )
        out.append(SampleStratum(label, tuple(members), count, float(doubt), float(pairs)))
    if len(seen) != population or not drawn <= seen:
        raise InputError(path, "the strata do not split the population the sample was drawn from")
    return tuple(out)
