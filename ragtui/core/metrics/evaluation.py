"""Evaluation of rankings against graded relevance, with running means that one grade change updates.

Means follow trec_eval: they are over the questions that have at least one judgement (a grade of
any value); a question whose judgements all fall below the threshold counts with zeros (as
trec_eval's ``-l 2`` counts it), one with no judgement at all is skipped; a question whose run is
empty counts as 0. Changing one question's grades updates that question's values and
the running sums in O(depth), whatever the number of questions.

The values of every question are computed at once with numpy (``batch.batch_metrics``, the same
numbers as ``formulas.question_metrics``) and kept in arrays; ``per_question`` and ``judged`` read
them as mappings that build a question's ``QuestionMetrics`` when asked. A question whose grades
change is computed again with ``question_metrics`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from ragtui.core.metrics.batch import batch_metrics, duplicate_rows
from ragtui.core.metrics.formulas import (
    QuestionMetrics,
    evidence_recall,
    judged_at_k,
    question_metrics,
)
from ragtui.core.metrics.sums import fsum_array
from ragtui.core.metrics.tables import (
    GradeArrays,
    RankingTable,
    gather_rows,
    in_order,
    source_rows,
)

#: A ranking: (chunk id, score) pairs, best first (what a retriever returns, what is evaluated).
Ranking = list[tuple[str, float]]

#: The per-question values that are averaged, in display order.
MEAN_FIELDS = ("recall", "precision", "precision_ceiling", "rr", "ndcg")


@dataclass(frozen=True)
class OwnPassages:
    """How to judge a retriever that returns passages of its own (a live retriever's passages that
    ragtui does not hold): they count for it alone, never for the retrievers that search ragtui's chunks.

    ``gains(qid, ranked, shared)`` gives the grades it is judged by: those of what it could return
    (its own passages in ``ranked``, and ragtui's chunks when it returns any of them), so that
    nDCG's ideal and the precision ceiling are over its own collection.
    """

    gains: Callable[[str, Sequence[str], Mapping[str, int]], Mapping[str, int]]


#: The units a table's measures are computed in: ragtui's chunks, or the evidence (docs/metrics.md).
UNIT_CHUNKS = "chunks"
UNIT_EVIDENCE = "evidence"


def definitions(unit: str, k: int) -> dict[str, str]:
    """What each figure of a table in ``unit`` is, by its JSON name (``ragtui eval --json``'s
    ``definitions``; docs/metrics.md#units has the table)."""
    if unit == UNIT_EVIDENCE:
        recall = (
            f"evidence recall@{k}: the share of the question's evidence units (its evidence "
            "strings; without any, the documents of its relevant chunks) held by a relevant "
            f"passage of the top {k}"
        )
        ideal = (
            "what the retriever could return (its own passages; ragtui's chunks if it returns any)"
        )
    else:
        recall = f"recall@{k}: the share of the question's relevant chunks in the top {k}"
        ideal = "ragtui's judged chunks"
    return {
        "recall": recall,
        "precision": f"precision@{k}: relevant passages in the top {k} / {k}",
        "precision_ceiling": f"the best precision@{k} with the question's relevant passages among {ideal}",
        "rr": "1 / the rank of the first relevant passage (0 when none is returned)",
        "ndcg": f"nDCG@{k}, linear gain, log2 discount, the ideal over every grade among {ideal}",
    }


#: Evidence-level measures, defined for every retriever whatever passages it returns:
#: ``ranks(qid, ranked, gains, shared)`` gives, for each evidence unit of the question (its evidence
#: strings; without any, the documents of its relevant chunks), the rank (1-based) of the first
#: relevant passage of ``ranked`` that holds it, None when none does (``gains``: the retriever's
#: grades; ``shared``: the question's grades of ragtui's chunks). Evidence recall@k is
#: :func:`evidence_recall` of those ranks (DPR's top-k accuracy per string, pyserini's ``has_answers``).
EvidenceUnits = Callable[
    [str, Sequence[str], Mapping[str, int], Mapping[str, int]], tuple[int | None, ...]
]


@dataclass(frozen=True, slots=True)
class Summary:
    """Mean metrics of one retriever over a set of questions."""

    questions: int
    recall: float
    precision: float
    precision_ceiling: float
    mrr: float
    ndcg: float

    def as_dict(self) -> dict[str, float]:
        """The five means, named as in ``ragtui eval --json``."""
        return {
            "recall": self.recall,
            "precision": self.precision,
            "precision_ceiling": self.precision_ceiling,
            "mrr": self.mrr,
            "ndcg": self.ndcg,
        }


class _Values:
    """One retriever's per-question values, one array per field, in question order."""

    __slots__ = (
        "first",
        "judged",
        "ndcg",
        "num_relevant",
        "precision",
        "precision_ceiling",
        "recall",
        "rr",
    )

    def __init__(self, n: int) -> None:
        self.first = np.zeros(n, dtype=np.int64)
        self.recall = np.zeros(n)
        self.precision = np.zeros(n)
        self.precision_ceiling = np.zeros(n)
        self.rr = np.zeros(n)
        self.ndcg = np.zeros(n)
        self.num_relevant = np.zeros(n, dtype=np.int64)
        self.judged = np.zeros(n)

    def get(self, i: int) -> QuestionMetrics:
        first = int(self.first[i])
        return QuestionMetrics(
            first_relevant_rank=first if first > 0 else None,
            recall=float(self.recall[i]),
            precision=float(self.precision[i]),
            precision_ceiling=float(self.precision_ceiling[i]),
            rr=float(self.rr[i]),
            ndcg=float(self.ndcg[i]),
            num_relevant=int(self.num_relevant[i]),
        )

    def put(self, i: int, m: QuestionMetrics, judged: float) -> None:
        self.first[i] = m.first_relevant_rank or 0
        self.recall[i] = m.recall
        self.precision[i] = m.precision
        self.precision_ceiling[i] = m.precision_ceiling
        self.rr[i] = m.rr
        self.ndcg[i] = m.ndcg
        self.num_relevant[i] = m.num_relevant
        self.judged[i] = judged


#: The value type of a row view.
_V = TypeVar("_V")


class _RowView(Mapping[str, _V]):
    """Question id -> one retriever's value, read from the arrays when asked (the keys are the
    evaluated questions, in order)."""

    def __init__(self, rows: Mapping[str, int], order: Sequence[str], values: _Values) -> None:
        self._rows, self._order, self._values = rows, order, values

    def __contains__(self, qid: object) -> bool:
        return qid in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


class PerQuestion(_RowView[QuestionMetrics]):
    """Question id -> its ``QuestionMetrics`` for one retriever, built from the arrays when asked."""

    def __getitem__(self, qid: str) -> QuestionMetrics:
        return self._values.get(self._rows[qid])


class JudgedValues(_RowView[float]):
    """Question id -> Judged@k for one retriever, read from the arrays."""

    def __getitem__(self, qid: str) -> float:
        return float(self._values.judged[self._rows[qid]])


class EvaluatedSet(AbstractSet[str]):
    """The questions that have at least one judgement, read from a mask in question order."""

    def __init__(self, rows: Mapping[str, int], order: Sequence[str], mask: np.ndarray) -> None:
        self._rows, self._order, self._mask = rows, order, mask

    def __contains__(self, qid: object) -> bool:
        row = self._rows.get(qid) if isinstance(qid, str) else None
        return row is not None and bool(self._mask[row])

    def __iter__(self) -> Iterator[str]:
        order = self._order
        return (order[i] for i in np.flatnonzero(self._mask).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self._mask))


class Evaluation:
    """Per-question metrics for every retriever and running sums for the means.

    ``grade_arrays`` gives the grades of many questions at once (else ``grades`` is asked for each
    question); ``grades`` is asked for the questions named in ``regraded`` and those the arrays
    lack, and for any question whose grades change later (``update_question``). ``rows``, when the
    caller holds it, is ``question_ids``' own row mapping (``{q: i for i, q in
    enumerate(question_ids)}``), and ``question_ids`` a list nobody changes: both are kept as they
    are (tables of the same list then need no lookup at all).
    """

    def __init__(
        self,
        question_ids: Sequence[str],
        grades: Callable[[str], Mapping[str, int]],
        rankings: Mapping[str, Mapping[str, Ranking]],
        k: int,
        threshold: int = 1,
        *,
        grade_arrays: GradeArrays | None = None,
        regraded: Iterable[str] = (),
        own: Mapping[str, OwnPassages] | None = None,
        rows: Mapping[str, int] | None = None,
        units: EvidenceUnits | None = None,
    ) -> None:
        if rows is not None and isinstance(question_ids, list):
            self.question_ids = question_ids
            self._rows = rows
        else:
            self.question_ids = list(question_ids)
            self._rows = {q: i for i, q in enumerate(self.question_ids)}
        self.grades = grades
        self.k = k
        self.threshold = threshold
        self.rankings: dict[str, Mapping[str, Ranking]] = {}
        self.per_question: dict[str, PerQuestion] = {}
        #: Judged@k per retriever and question: the share of the top k that carries any grade.
        self.judged: dict[str, JudgedValues] = {}
        self._values: dict[str, _Values] = {}
        #: Retrievers judged with passages of their own (see ``OwnPassages``).
        self.own: dict[str, OwnPassages] = {}
        #: Evidence-level measures for every retriever (None: chunk level, see ``unit``).
        self.units = units
        #: Each retriever's evidence ranks per evaluated question (evidence level only).
        self._unit_ranks: dict[str, dict[str, tuple[int | None, ...]]] = {}
        self._sums: dict[str, list[float]] = {}
        self._judged_sums: dict[str, float] = {}
        if grade_arrays is None:
            grade_arrays = GradeArrays.from_mappings(self.question_ids, grades)
        # Every question's grades in this evaluation's codes; a question in ``_gains`` has the
        # grades given there instead of its row (it was regraded).
        self._ids: list[str] = []
        self._codes: dict[str, int] = {}
        translate = self._encode_ids(grade_arrays.ids)
        source = source_rows(self.question_ids, grade_arrays.qids, grade_arrays.rows)
        offsets, codes, values = gather_rows(
            grade_arrays.offsets, source, grade_arrays.codes, grade_arrays.grades
        )
        self._grade_offsets = offsets
        self._grade_codes = translate[codes] if len(codes) else codes.astype(np.int64)
        self._grade_values = values.astype(np.int64)
        self._gains: dict[str, Mapping[str, int]] = {}
        self._mask = np.diff(offsets) > 0
        order = self.question_ids
        asked = set(regraded) | {order[i] for i in np.flatnonzero(source < 0).tolist()}
        for qid in asked:
            if qid in self._rows:
                gains = grades(qid)
                self._gains[qid] = gains
                self._mask[self._rows[qid]] = bool(gains)
        self.evaluated = EvaluatedSet(self._rows, self.question_ids, self._mask)
        for name, by_question in rankings.items():
            self.set_rankings(name, by_question, (own or {}).get(name))

    def _encode_ids(self, ids: Sequence[str]) -> np.ndarray:
        """This evaluation's code of every id in ``ids`` (new ids get new codes)."""
        codes = self._codes
        out = np.empty(len(ids), dtype=np.int64)
        for i, cid in enumerate(ids):
            code = codes.get(cid)
            if code is None:
                code = codes[cid] = len(self._ids)
                self._ids.append(cid)
            out[i] = code
        return out

    def _code(self, cid: str) -> int:
        code = self._codes.get(cid)
        if code is None:
            code = self._codes[cid] = len(self._ids)
            self._ids.append(cid)
        return code

    @property
    def retrievers(self) -> list[str]:
        """The retrievers evaluated so far, in the order they were added."""
        return list(self.rankings)

    @property
    def skipped(self) -> list[str]:
        """Questions with no judgement at all, in golden-set order: never averaged in."""
        order = self.question_ids
        return [order[i] for i in np.flatnonzero(~self._mask).tolist()]

    def _ranked(self, name: str, qid: str) -> list[str]:
        return [cid for cid, _ in self.rankings[name].get(qid, ())]

    def _ranked_codes(
        self, by_question: Mapping[str, Ranking]
    ) -> tuple[np.ndarray, list[int], bool]:
        """Every question's ranking as a code matrix, the rows that must be computed one by one,
        and whether the rows are known to hold no code twice."""
        n = len(self.question_ids)
        slow: list[int] = []
        if isinstance(by_question, RankingTable):
            translate = np.append(self._encode_ids(by_question.ids), -1)
            source = source_rows(self.question_ids, by_question.qids, by_question.rows)
            present = source >= 0
            if not present.all():
                matrix = np.full((n, by_question.depth), -1, dtype=np.int64)
                matrix[present] = translate[by_question.index[source[present]]]
            elif in_order(source, len(by_question.index)):  # one gather: the table's own rows
                matrix = translate[by_question.index]
            else:
                matrix = translate[by_question.index[source]]
            slow = np.flatnonzero(~present).tolist()
            slow += [self._rows[q] for q in by_question.changed() if q in self._rows]
            return matrix, slow, by_question.distinct
        rows: list[list[int]] = []
        for qid in self.question_ids:
            ranking = by_question.get(qid, ())
            rows.append([self._code(cid) for cid, _ in ranking])
        depth = max((len(r) for r in rows), default=0)
        matrix = np.full((n, depth), -1, dtype=np.int64)
        for i, row in enumerate(rows):
            if row:
                matrix[i, : len(row)] = row
        return matrix, slow, False

    def set_rankings(
        self, name: str, by_question: Mapping[str, Ranking], own: OwnPassages | None = None
    ) -> None:
        """Add (or replace) a retriever's rankings and compute its values; with ``own``, it is
        judged with its own passages too (every other retriever's values stay as they are)."""
        self.rankings[name] = by_question
        if own is None:
            self.own.pop(name, None)
        else:
            self.own[name] = own
        matrix, slow, distinct = self._ranked_codes(by_question)
        batch = batch_metrics(
            matrix,
            self._grade_offsets,
            self._grade_codes,
            self._grade_values,
            self.k,
            self.threshold,
        )
        values = _Values(len(self.question_ids))
        values.first, values.recall, values.precision = batch.first, batch.recall, batch.precision
        values.precision_ceiling, values.rr, values.ndcg = (
            batch.precision_ceiling,
            batch.rr,
            batch.ndcg,
        )
        values.num_relevant, values.judged = batch.num_relevant, batch.judged
        # Rows the arrays cannot stand for: a regraded question, a ranking assigned to a table,
        # an id ranked twice (question_metrics counts its first place only).
        redo = set(slow)
        if not distinct:
            redo |= set(np.flatnonzero(duplicate_rows(matrix)).tolist())
        redo |= {self._rows[q] for q in self._gains}
        self._unit_ranks[name] = {}
        if own is not None:
            redo = set(range(len(self.question_ids)))
        for i in sorted(redo):
            qid = self.question_ids[i]
            values.put(i, self._compute(name, qid), self._judged(name, qid))
        if self.units is not None:
            # The arrays hold every other value: only recall is evidence recall.
            for i in sorted(set(range(len(self.question_ids))) - redo):
                qid = self.question_ids[i]
                values.recall[i] = self._evidence_recall(name, qid, self._ranked(name, qid))
        self._values[name] = values
        self.per_question[name] = PerQuestion(self._rows, self.question_ids, values)
        self.judged[name] = JudgedValues(self._rows, self.question_ids, values)
        mask = self._mask
        self._sums[name] = [fsum_array(getattr(values, f)[mask]) for f in MEAN_FIELDS]
        self._judged_sums[name] = fsum_array(values.judged[mask])

    def _compute(self, name: str, qid: str) -> QuestionMetrics:
        ranked = self._ranked(name, qid)
        gains = self.gains_for(name, qid)
        metrics = question_metrics(ranked, gains, self.k, self.threshold)
        if self.units is not None:
            metrics = replace(metrics, recall=self._evidence_recall(name, qid, ranked))
        return metrics

    def _evidence_recall(self, name: str, qid: str, ranked: Sequence[str]) -> float:
        """Evidence recall@k of one retriever on one question, keeping its evidence ranks."""
        assert self.units is not None
        ranks = self.units(qid, ranked, self.gains_for(name, qid), self.gains(qid))
        self._unit_ranks.setdefault(name, {})[qid] = ranks
        return evidence_recall(ranks, self.k)

    @property
    def unit(self) -> str:
        """The unit every row's measures are in: ``chunks`` (recall over ragtui's relevant chunks)
        or ``evidence`` (recall over the evidence units, for every retriever alike)."""
        return UNIT_CHUNKS if self.units is None else UNIT_EVIDENCE

    def set_units(self, units: EvidenceUnits | None) -> None:
        """Change the unit of every row (a live retriever with passages of its own arrived): every
        retriever's values are computed again."""
        self.units = units
        for name in list(self.rankings):
            self.set_rankings(name, self.rankings[name], self.own.get(name))

    def unit_ranks(self, name: str) -> Mapping[str, tuple[int | None, ...]] | None:
        """At evidence level, each question's evidence ranks for ``name`` (see ``EvidenceUnits``);
        None at chunk level."""
        return None if self.units is None else self._unit_ranks.get(name, {})

    def _judged(self, name: str, qid: str) -> float:
        return judged_at_k(self._ranked(name, qid), self.gains_for(name, qid), self.k)

    def gains_for(self, name: str, qid: str) -> Mapping[str, int]:
        """The grades one retriever's values of ``qid`` were computed from: ``gains`` (ragtui's
        chunks), and for a retriever with passages of its own, theirs too."""
        shared = self.gains(qid)
        own = self.own.get(name)
        if own is None:
            return shared
        return own.gains(qid, self._ranked(name, qid), shared)

    def _add(self, name: str, qid: str, sign: int) -> None:
        values = self._values[name]
        row = self._rows[qid]
        sums = self._sums[name]
        for i, field in enumerate(MEAN_FIELDS):
            sums[i] += sign * float(getattr(values, field)[row])
        self._judged_sums[name] += sign * float(values.judged[row])

    def covers(self, qid: str) -> bool:
        """Whether ``qid`` is one of the questions evaluated here (a retired one is not)."""
        return qid in self._rows

    def update_question(self, qid: str) -> dict[str, tuple[QuestionMetrics, QuestionMetrics]]:
        """Re-read one question's grades and update its values and the running sums; returns (old, new) per retriever."""
        row = self._rows[qid]
        was = bool(self._mask[row])
        for name in self.rankings:
            if was:
                self._add(name, qid, -1)
        gains = self.grades(qid)
        self._gains[qid] = gains
        now = bool(gains)
        self._mask[row] = now
        changes = {}
        for name in self.rankings:
            values = self._values[name]
            old = values.get(row)
            new = self._compute(name, qid)
            values.put(row, new, self._judged(name, qid))
            if now:
                self._add(name, qid, +1)
            changes[name] = (old, new)
        return changes

    def judged_mean(self, name: str, questions: Iterable[str] | None = None) -> float:
        """Mean Judged@k of one retriever over the evaluated questions (or the evaluated ones among ``questions``)."""
        if questions is None:
            count = int(np.count_nonzero(self._mask))
            return self._judged_sums[name] / count if count else 0.0
        chosen = self._chosen_rows(questions)
        judged = self._values[name].judged
        return fsum_array(judged[chosen]) / len(chosen) if len(chosen) else 0.0

    def gains(self, qid: str) -> Mapping[str, int]:
        """The effective grades the values of ``qid`` were computed from."""
        found = self._gains.get(qid)
        if found is not None:
            return found
        row = self._rows[qid]
        start, end = int(self._grade_offsets[row]), int(self._grade_offsets[row + 1])
        ids = self._ids
        return {
            ids[c]: g
            for c, g in zip(
                self._grade_codes[start:end].tolist(),
                self._grade_values[start:end].tolist(),
                strict=True,
            )
        }

    def rows_of(self, questions: Iterable[str]) -> np.ndarray:
        """Each question's row in the value arrays (``question_ids`` order), ``-1`` for one not evaluated here."""
        rows = self._rows
        return np.fromiter((rows.get(q, -1) for q in questions), dtype=np.int64)

    def column(self, name: str, field: str) -> np.ndarray:
        """One retriever's values of one field for every question, in ``question_ids`` order
        (``first`` is 0 where no relevant chunk was retrieved; ``judged`` is Judged@k); read-only."""
        if field not in ("first", "judged", "num_relevant", *MEAN_FIELDS):
            raise KeyError(field)
        view: np.ndarray = getattr(self._values[name], field).view()
        view.flags.writeable = False
        return view

    @property
    def evaluated_mask(self) -> np.ndarray:
        """Whether each question (``question_ids`` order) has a judgement; read-only."""
        view = self._mask.view()
        view.flags.writeable = False
        return view

    def _chosen_rows(self, questions: Iterable[str]) -> np.ndarray:
        """The rows of the evaluated questions among ``questions``, in the order given."""
        rows = self._rows
        mask = self._mask
        chosen = [row for row in (rows.get(q) for q in questions) if row is not None and mask[row]]
        return np.asarray(chosen, dtype=np.int64)

    def summary(self, name: str, questions: Iterable[str] | None = None) -> Summary:
        """Means of one retriever over all evaluated questions, or over the evaluated ones among ``questions``."""
        if questions is None:
            count = int(np.count_nonzero(self._mask))
            sums = self._sums[name]
        else:
            chosen = self._chosen_rows(questions)
            count = len(chosen)
            values = self._values[name]
            sums = [fsum_array(getattr(values, f)[chosen]) for f in MEAN_FIELDS]
        if count == 0:
            return Summary(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        recall, precision, ceiling, rr, ndcg = (s / count for s in sums)
        return Summary(count, recall, precision, ceiling, rr, ndcg)
