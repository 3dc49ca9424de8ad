"""Evaluation of rankings against graded relevance, with running means that one grade change updates.

Means follow trec_eval: they are over the questions that have at least one judgement (a grade of
any value); a question whose judgements all fall below the threshold counts with zeros (as
trec_eval's ``-l 2`` counts it), one with no judgement at all is skipped; a question whose run is
empty counts as 0. Changing one question's grades updates that question's values and
the running sums in O(depth), whatever the number of questions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ragtui.core.metrics.formulas import QuestionMetrics, judged_at_k, question_metrics

#: A ranking: (chunk id, score) pairs, best first (what a retriever returns, what is evaluated).
Ranking = list[tuple[str, float]]

#: The per-question values that are averaged, in display order.
MEAN_FIELDS = ("recall", "precision", "precision_ceiling", "rr", "ndcg")


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


class Evaluation:
    """Per-question metrics for every retriever and running sums for the means."""

    def __init__(
        self,
        question_ids: Sequence[str],
        grades: Callable[[str], Mapping[str, int]],
        rankings: Mapping[str, Mapping[str, Ranking]],
        k: int,
        threshold: int = 1,
    ) -> None:
        self.question_ids = list(question_ids)
        self.grades = grades
        self.k = k
        self.threshold = threshold
        self.rankings: dict[str, Mapping[str, Ranking]] = {}
        self.per_question: dict[str, dict[str, QuestionMetrics]] = {}
        #: Judged@k per retriever and question: the share of the top k that carries any grade.
        self.judged: dict[str, dict[str, float]] = {}
        self._sums: dict[str, list[float]] = {}
        self._judged_sums: dict[str, float] = {}
        self._gains: dict[str, Mapping[str, int]] = {}
        self.evaluated: set[str] = set()
        for qid in self.question_ids:
            gains = grades(qid)
            self._gains[qid] = gains
            if gains:
                self.evaluated.add(qid)
        for name, by_question in rankings.items():
            self.set_rankings(name, by_question)

    @property
    def retrievers(self) -> list[str]:
        """The retrievers evaluated so far, in the order they were added."""
        return list(self.rankings)

    @property
    def skipped(self) -> list[str]:
        """Questions with no judgement at all, in golden-set order: never averaged in."""
        return [q for q in self.question_ids if q not in self.evaluated]

    def _compute(self, name: str, qid: str) -> QuestionMetrics:
        ranked = [cid for cid, _ in self.rankings[name].get(qid, ())]
        return question_metrics(ranked, self._gains[qid], self.k, self.threshold)

    def _judged(self, name: str, qid: str) -> float:
        ranked = [cid for cid, _ in self.rankings[name].get(qid, ())]
        return judged_at_k(ranked, self._gains[qid], self.k)

    def set_rankings(self, name: str, by_question: Mapping[str, Ranking]) -> None:
        """Add (or replace) a retriever's rankings and compute its values."""
        self.rankings[name] = by_question
        values = {qid: self._compute(name, qid) for qid in self.question_ids}
        self.per_question[name] = values
        self._sums[name] = [
            math.fsum(getattr(values[q], f) for q in self.evaluated) for f in MEAN_FIELDS
        ]
        judged = {qid: self._judged(name, qid) for qid in self.question_ids}
        self.judged[name] = judged
        self._judged_sums[name] = math.fsum(judged[q] for q in self.evaluated)

    def _add(self, name: str, qid: str, sign: int) -> None:
        values = self.per_question[name][qid]
        sums = self._sums[name]
        for i, field in enumerate(MEAN_FIELDS):
            sums[i] += sign * getattr(values, field)
        self._judged_sums[name] += sign * self.judged[name][qid]

    def update_question(self, qid: str) -> dict[str, tuple[QuestionMetrics, QuestionMetrics]]:
        """Re-read one question's grades and update its values and the running sums; returns (old, new) per retriever."""
        was = qid in self.evaluated
        for name in self.rankings:
            if was:
                self._add(name, qid, -1)
        gains = self.grades(qid)
        self._gains[qid] = gains
        now = bool(gains)
        if now:
            self.evaluated.add(qid)
        else:
            self.evaluated.discard(qid)
        changes = {}
        for name in self.rankings:
            old = self.per_question[name][qid]
            new = self._compute(name, qid)
            self.per_question[name][qid] = new
            self.judged[name][qid] = self._judged(name, qid)
            if now:
                self._add(name, qid, +1)
            changes[name] = (old, new)
        return changes

    def judged_mean(self, name: str, questions: Iterable[str] | None = None) -> float:
        """Mean Judged@k of one retriever over the evaluated questions (or the evaluated ones among ``questions``)."""
        if questions is None:
            return self._judged_sums[name] / len(self.evaluated) if self.evaluated else 0.0
        chosen = [q for q in questions if q in self.evaluated]
        return math.fsum(self.judged[name][q] for q in chosen) / len(chosen) if chosen else 0.0

    def gains(self, qid: str) -> Mapping[str, int]:
        """The effective grades the values of ``qid`` were computed from."""
        return self._gains[qid]

    def summary(self, name: str, questions: Iterable[str] | None = None) -> Summary:
        """Means of one retriever over all evaluated questions, or over the evaluated ones among ``questions``."""
        if questions is None:
            count = len(self.evaluated)
            sums = self._sums[name]
        else:
            chosen = [q for q in questions if q in self.evaluated]
            count = len(chosen)
            values = self.per_question[name]
            sums = [math.fsum(getattr(values[q], f) for q in chosen) for f in MEAN_FIELDS]
        if count == 0:
            return Summary(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        recall, precision, ceiling, rr, ndcg = (s / count for s in sums)
        return Summary(count, recall, precision, ceiling, rr, ndcg)
