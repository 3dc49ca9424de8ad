"""Measures named as ir_measures names them (``R@3``, ``P@3``, ``RR``, ``nDCG@10``, ...), and systems to evaluate.

A :class:`System` is one retriever's ranked lists together with the grades that judge them: the
current workspace's retrievers and saved runs both become systems, so measures, curves, diffs and
significance tests work the same on either.

Accepted names (ir_measures spelling first; the trec_eval and ranx spellings are aliases):

* ``R@k`` recall@k (``recall_k``, ``recall@k``), ``P@k`` precision@k (``P_k``, ``precision@k``),
* ``RR`` reciprocal rank over the whole run, ``RR@k`` within the top k (``recip_rank``, ``MRR``),
* ``nDCG@k`` with linear gain, the grade itself, as trec_eval (``ndcg_cut_k``); ``nDCG`` without a
  cut-off is over the whole run, as trec_eval's ``ndcg``,
* ``nDCG_exp@k``: exponential gain 2^grade - 1 (ir_measures: ``nDCG(dcg='exp-log2')@k``); an
  option, never the default,
* ``Success@k`` (``success_k``, ``hits@k``), ``Judged@k`` (share of the top k that is judged at
  all), ``AP`` and ``AP@k`` (``map``, ``map_cut_k``).

``R``, ``P``, ``RR``, ``Success`` and ``AP`` take ir_measures' ``rel`` parameter, the lowest grade
counted as relevant for that measure: ``P(rel=2)@5``.  Means are over the questions that have at
least one relevant chunk at the workspace's threshold, like every other mean in ragtui.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ragtui.core.errors import InputError
from ragtui.core.metrics.evaluation import UNIT_CHUNKS, UNIT_EVIDENCE, Evaluation, Ranking
from ragtui.core.metrics.formulas import (
    average_precision,
    evidence_recall,
    judged_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevant_ids,
    success_at_k,
)

__all__ = [
    "FAMILIES",
    "EvaluatedRuns",
    "Measure",
    "System",
    "default_measures",
    "measure_means",
    "parse_measure",
    "parse_measures",
    "relevant_set",
    "system_from_workspace",
]

#: Canonical family -> (cut-off required, parameters accepted).
FAMILIES: dict[str, tuple[bool, frozenset[str]]] = {
    "R": (True, frozenset({"rel"})),
    "P": (True, frozenset({"rel"})),
    "RR": (False, frozenset({"rel"})),
    "nDCG": (False, frozenset({"dcg"})),
    "nDCG_exp": (False, frozenset()),
    "Success": (True, frozenset({"rel"})),
    "Judged": (True, frozenset()),
    "AP": (False, frozenset({"rel"})),
}

#: Lower-cased spelling -> canonical family.
_ALIASES = {
    "r": "R", "recall": "R",
    "p": "P", "precision": "P",
    "rr": "RR", "mrr": "RR", "recip_rank": "RR",
    "ndcg": "nDCG", "ndcg_cut": "nDCG",
    "ndcg_exp": "nDCG_exp",
    "success": "Success", "hits": "Success", "hit_rate": "Success",
    "judged": "Judged",
    "ap": "AP", "map": "AP", "map_cut": "AP",
}  # fmt: skip

#: trec_eval spellings with the cut-off after an underscore: P_5, recall_5, ndcg_cut_10, ...
_TREC_CUT = re.compile(r"^(P|recall|ndcg_cut|success|map_cut)_(\d+)$", re.IGNORECASE)
_NAME = re.compile(r"^(?P<family>[A-Za-z_]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cutoff>\d+))?$")


@dataclass(frozen=True, slots=True)
class Measure:
    """One measure: family, optional cut-off, optional relevance level; ``name`` is its ir_measures spelling."""

    family: str
    cutoff: int | None = None
    rel: int | None = None

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``nDCG@10``, ``RR``, ``P(rel=2)@5``."""
        params = f"(rel={self.rel})" if self.rel is not None else ""
        cut = f"@{self.cutoff}" if self.cutoff is not None else ""
        return f"{self.family}{params}{cut}"

    def __str__(self) -> str:
        return self.name

    def value(self, ranked: Sequence[Any], gains: Mapping[Any, int], threshold: int = 1) -> float:
        """The measure for one question: ``ranked`` ids best first, ``gains`` id -> grade."""
        level = self.rel if self.rel is not None else threshold
        k = self.cutoff
        family = self.family
        if family in ("nDCG", "nDCG_exp"):
            # No cut-off: the whole run against the whole ideal, as trec_eval's ndcg.
            cut = k if k is not None else max(len(ranked), len(gains), 1)
            return ndcg_at_k(
                ranked, gains, cut, gain="exponential" if family == "nDCG_exp" else "linear"
            )
        if family == "Judged":
            assert k is not None
            return judged_at_k(ranked, gains.keys(), k)
        relevant = relevant_ids(gains, level)
        if family == "R":
            assert k is not None
            return recall_at_k(ranked, relevant, k)
        if family == "P":
            assert k is not None
            return precision_at_k(ranked, relevant, k)
        if family == "Success":
            assert k is not None
            return success_at_k(ranked, relevant, k)
        top = _unique(ranked)[:k] if k is not None else ranked
        if family == "RR":
            return reciprocal_rank(top, relevant)
        if family == "AP":
            # AP@k as trec_eval's map_cut_k: precision at the relevant ranks within k, over |relevant|.
            return average_precision(top, relevant)
        raise AssertionError(family)


def relevant_set(gains: Mapping[str, int], threshold: int = 1) -> frozenset[str]:
    """The ids graded at least ``threshold`` (as :func:`ragtui.core.metrics.formulas.relevant_ids`, typed for chunk ids)."""
    return frozenset(cid for cid, grade in gains.items() if grade >= threshold)


def _unique(ranked: Sequence[Hashable]) -> list[Hashable]:
    """The ids of ``ranked`` with later copies dropped, as the metric functions read a ranking."""
    return list(dict.fromkeys(ranked))


def _bad(text: str, problem: str) -> InputError:
    known = "R@k, P@k, RR, RR@k, nDCG@k, nDCG_exp@k, Success@k, Judged@k, AP, AP@k"
    return InputError(None, f"--metrics: {problem} in {text!r}; known measures: {known}")


def parse_measure(text: str) -> Measure:
    """A measure from its name (see the module docstring); raises InputError on an unknown or malformed name."""
    name = text.strip()
    trec = _TREC_CUT.match(name)
    if trec:
        name = f"{trec.group(1)}@{trec.group(2)}"
    match = _NAME.match(name)
    if not match:
        raise _bad(text, "malformed measure name")
    family = _ALIASES.get(match.group("family").lower())
    if family is None:
        raise _bad(text, f"unknown measure {match.group('family')!r}")
    cutoff = int(match.group("cutoff")) if match.group("cutoff") is not None else None
    needs_cutoff, accepted = FAMILIES[family]
    if cutoff is not None and cutoff < 1:
        raise _bad(text, "the cut-off must be at least 1")
    if needs_cutoff and cutoff is None:
        raise _bad(text, f"{family} needs a cut-off such as {family}@3")
    rel: int | None = None
    for param in filter(None, (p.strip() for p in (match.group("params") or "").split(","))):
        key, _, raw = (s.strip() for s in param.partition("="))
        value = raw.strip("'\"")
        if key not in accepted:
            raise _bad(text, f"{family} takes no parameter {key!r}")
        if key == "rel":
            if not value.lstrip("-").isdigit():
                raise _bad(text, f"rel must be a whole number, got {value!r}")
            rel = int(value)
        elif key == "dcg":
            if value == "exp-log2":
                family = "nDCG_exp"
            elif value != "log2":
                raise _bad(text, f"dcg must be 'log2' or 'exp-log2', got {value!r}")
    return Measure(family, cutoff, rel)


def parse_measures(text: str | Iterable[str]) -> list[Measure]:
    """Measures from a comma-separated list (or an iterable of names), duplicates dropped, order kept."""
    names = text.split(",") if isinstance(text, str) else list(text)
    measures = [parse_measure(n) for n in names if n.strip()]
    if not measures:
        raise InputError(None, "--metrics: no measure given")
    return list(dict.fromkeys(measures))


def default_measures(k: int) -> list[Measure]:
    """The measures of the default table, for tests and comparisons: R@k, P@k, RR (whole run), nDCG@k."""
    return [Measure("R", k), Measure("P", k), Measure("RR"), Measure("nDCG", k)]


@dataclass(frozen=True)
class System:
    """One retriever's ranked lists with the grades that judge them (a workspace retriever or a saved run's)."""

    label: str
    rankings: Mapping[str, Sequence[str]]
    grades: Mapping[str, Mapping[str, int]]
    question_ids: Sequence[str]
    threshold: int = 1
    #: At evidence level, each question's evidence ranks (``EvidenceUnits``): recall is then
    #: evidence recall at any cut-off; None: chunk level, recall over the relevant ids.
    unit_ranks: Mapping[str, Sequence[int | None]] | None = None
    #: The questions its means are over, when the grades alone do not say (a retriever judged on
    #: passages of its own may have no grade on a question every other row is judged on).
    averaged: frozenset[str] | None = None

    @property
    def unit(self) -> str:
        """``chunks`` or ``evidence``: the unit its recall is in (docs/metrics.md#units)."""
        return UNIT_CHUNKS if self.unit_ranks is None else UNIT_EVIDENCE

    def value(self, measure: Measure, qid: str) -> float:
        """One measure for one question: evidence recall at evidence level, else ``Measure.value``."""
        if measure.family == "R" and self.unit_ranks is not None and measure.rel is None:
            assert measure.cutoff is not None
            return evidence_recall(self.unit_ranks.get(qid, ()), measure.cutoff)
        return measure.value(self.ranked(qid), self.gains(qid), self.threshold)

    def ranked(self, qid: str) -> Sequence[str]:
        """The ranked ids of a question, best first (empty when the system returned nothing)."""
        return self.rankings.get(qid, ())

    def gains(self, qid: str) -> Mapping[str, int]:
        """The grades of a question."""
        return self.grades.get(qid, {})

    def evaluated(self) -> list[str]:
        """Questions with at least one judgement (any grade), in golden-set order: the ones averaged, as trec_eval does."""
        if self.averaged is not None:
            return [q for q in self.question_ids if q in self.averaged]
        return [q for q in self.question_ids if self.gains(q)]

    def values(self, measure: Measure, questions: Sequence[str]) -> np.ndarray:
        """The measure for each of ``questions``, as a float array in that order."""
        return np.array([self.value(measure, q) for q in questions], dtype=np.float64)

    def recall_curve(self, depth: int, questions: Sequence[str] | None = None) -> list[float]:
        """Mean recall@k for k = 1..depth over ``questions`` (default: the evaluated ones)."""
        chosen = self.evaluated() if questions is None else list(questions)
        if not chosen or depth < 1:
            return [0.0] * max(depth, 0)
        total = np.zeros(depth, dtype=np.float64)
        if self.unit_ranks is not None:
            for cut in range(1, depth + 1):
                recall = Measure("R", cut)
                total[cut - 1] = sum(self.value(recall, q) for q in chosen)
            return [float(v) for v in total / len(chosen)]
        for qid in chosen:
            relevant = relevant_set(self.gains(qid), self.threshold)
            if not relevant:
                continue
            hits = np.zeros(depth, dtype=np.float64)
            for i, cid in enumerate(_unique(self.ranked(qid))[:depth]):
                if cid in relevant:
                    hits[i] = 1.0
            total += np.cumsum(hits) / len(relevant)
        return [float(v) for v in total / len(chosen)]


class EvaluatedRuns(Protocol):
    """What the functions below read of a workspace (``ragtui.core.workspace.Workspace`` is one)."""

    @property
    def evaluation(self) -> Evaluation | None:
        """The evaluation of the shown retrievers (None before one is built)."""
        ...

    @property
    def retrievers(self) -> list[str]:
        """The shown retrievers, in display order."""
        ...

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking of a question."""
        ...


def same_unit(a: System, b: System) -> None:
    """Refuse (InputError, one line) to set a chunk-level system beside an evidence-level one: their
    recall has two definitions (docs/metrics.md#units)."""
    if a.unit != b.unit:
        raise InputError(
            None,
            f"{a.label} is {a.unit}-level and {b.label} {b.unit}-level: their recall has two "
            "definitions; evaluate both with --unit evidence (docs/metrics.md#units)",
        )


def system_from_workspace(ws: EvaluatedRuns, retriever: str) -> System:
    """A workspace retriever as a system, judged by the workspace's effective grades."""
    ev = ws.evaluation
    assert ev is not None
    if retriever not in ws.retrievers:
        raise InputError(
            None, f"unknown retriever {retriever!r}; this workspace has {', '.join(ws.retrievers)}"
        )
    # The evaluation's own rankings: chunks, or documents at document level, as its grades are.
    rankings = {q: [cid for cid, _ in ev.rankings[retriever].get(q, ())] for q in ev.question_ids}
    # Its own grades: a live retriever's own passages count for it alone (on the questions judged
    # on ragtui's chunks, the same set for every retriever).
    grades = {
        q: ev.gains_for(retriever, q) if q in ev.evaluated else ev.gains(q) for q in ev.question_ids
    }
    return System(
        retriever,
        rankings,
        grades,
        tuple(ev.question_ids),
        ev.threshold,
        ev.unit_ranks(retriever),
        frozenset(ev.evaluated),
    )


def measure_means(
    ws: EvaluatedRuns, measures: Sequence[Measure], questions: Iterable[str] | None = None
) -> dict[str, dict[str, float]]:
    """retriever -> measure name -> mean over the evaluated questions (or the evaluated ones among ``questions``)."""
    ev = ws.evaluation
    assert ev is not None
    wanted = None if questions is None else set(questions)
    chosen = [q for q in ev.question_ids if q in ev.evaluated and (wanted is None or q in wanted)]
    out: dict[str, dict[str, float]] = {}
    for name in ws.retrievers:
        system = system_from_workspace(ws, name)
        out[name] = {
            m.name: float(system.values(m, chosen).mean()) if chosen else 0.0 for m in measures
        }
    return out


def measure_values(
    ws: EvaluatedRuns, measures: Sequence[Measure]
) -> dict[str, dict[str, dict[str, float]]]:
    """retriever -> question -> measure name -> value, for the evaluated questions."""
    ev = ws.evaluation
    assert ev is not None
    chosen = [q for q in ev.question_ids if q in ev.evaluated]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in ws.retrievers:
        system = system_from_workspace(ws, name)
        columns = {m.name: system.values(m, chosen) for m in measures}
        out[name] = {
            q: {m: float(col[i]) for m, col in columns.items()} for i, q in enumerate(chosen)
        }
    return out
