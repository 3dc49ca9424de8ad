"""Every question's misses computed once (:class:`WhyIndex`), and each cause counted over a set of
questions with its remedy ceiling (:func:`cause_summary`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragtui.core.analysis.why.causes import CAUSES, QuestionWhy
from ragtui.core.analysis.why.coverage import ReadSpans, vector_coverage
from ragtui.core.analysis.why.explain import Context, explain_misses
from ragtui.core.workspace import Workspace

__all__ = ["CauseCount", "RetrieverCauses", "WhyIndex", "cause_summary"]


class WhyIndex:
    """Every question's misses for every shown retriever, computed once; ``update`` recomputes one
    question after its grades change, ``matching`` answers the ``why:CAUSE`` filter."""

    def __init__(
        self, ws: Workspace, coverage: ReadSpans | None = None, lazy: bool = False
    ) -> None:
        """The misses of every question (``lazy``: each computed when first asked for, as the app
        does for the rows it shows)."""
        self.ws = ws
        self._ctx = Context(ws, coverage if coverage is not None else vector_coverage(ws))
        # What the vector retriever read when the index was made: the app makes it before the
        # long-chunk windows are built, and must make it again once they are (see ``stale``).
        self._read_by = None if coverage is not None else _reader(ws)
        self._by_question: dict[str, QuestionWhy] = {}
        if not lazy:
            for q in ws.questions:
                self.update(q.id)

    @property
    def stale(self) -> bool:
        """Whether the workspace's vector retriever now reads chunks otherwise than when the index
        was made (its windows were built since, or the retriever was replaced)."""
        return self._read_by is not None and self._read_by != _reader(self.ws)

    @property
    def k(self) -> int:
        """The cut-off the causes were computed at."""
        return self._ctx.k

    def update(self, qid: str) -> QuestionWhy:
        """Recompute one question (after a grade change) and return it."""
        self._by_question[qid] = explain_misses(self.ws, qid, context=self._ctx)
        return self._by_question[qid]

    def question(self, qid: str) -> QuestionWhy:
        """One question's misses (computed on first use for a question added since)."""
        if qid not in self._by_question:
            return self.update(qid)
        return self._by_question[qid]

    def causes(self, qid: str, retriever: str) -> tuple[str, ...]:
        """The causes of a question's misses for one retriever, first one first (empty: no miss)."""
        found = self.question(qid).retrievers.get(retriever)
        return found.causes if found is not None else ()

    def cause(self, qid: str, retriever: str) -> str | None:
        """A question's first cause for one retriever, or None when it misses nothing."""
        found = self.question(qid).retrievers.get(retriever)
        return found.cause if found is not None else None

    def chunk_causes(self, qid: str, retriever: str, chunk: str) -> tuple[str, ...]:
        """The causes of one missed chunk of a question for one retriever (empty: not a miss)."""
        found = self.question(qid).retrievers.get(retriever)
        return found.chunk_causes(chunk) if found is not None else ()

    def matching(self, cause: str, retrievers: Sequence[str] | None = None) -> list[str]:
        """The questions some of ``retrievers`` (default: every shown one) misses with ``cause``, in golden-set order."""
        names = list(retrievers) if retrievers is not None else list(self.ws.retrievers)
        return [
            q.id for q in self.ws.questions if any(cause in self.causes(q.id, r) for r in names)
        ]

    def questions(self, qids: Iterable[str] | None = None) -> list[QuestionWhy]:
        """The questions' misses, in golden-set order (default: every question)."""
        wanted = set(qids) if qids is not None else None
        return [self.question(q.id) for q in self.ws.questions if wanted is None or q.id in wanted]


@dataclass(frozen=True)
class CauseCount:
    """One cause for one retriever over a set of questions: how many questions have it (``first``:
    as their first cause), how many misses, and recall@k with those misses fixed."""

    cause: str
    questions: int
    first: int
    misses: int
    ceiling: float
    question_ids: tuple[str, ...]


@dataclass(frozen=True)
class RetrieverCauses:
    """One retriever over a set of questions: recall@k now, the questions it misses, each cause's
    count and ceiling, and the ceiling with every miss fixed."""

    retriever: str
    questions: int
    recall: float
    missed: int
    causes: dict[str, CauseCount]
    every_cause: float

    def best(self) -> CauseCount | None:
        """The cause whose fix gains most (the first in precedence order among equals), or None when nothing is missed."""
        counted = [c for c in self.causes.values() if c.questions]
        return max(counted, key=lambda c: c.ceiling - self.recall) if counted else None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def cause_summary(index: WhyIndex, qids: Iterable[str] | None = None) -> dict[str, RetrieverCauses]:
    """Per shown retriever, each cause's question count and remedy ceiling over the questions
    ``qids`` (default: all); means are over the evaluated questions, plus, for a ceiling, those a fix
    would make evaluated (their evidence added)."""
    k = index.k
    whys = index.questions(qids)
    out: dict[str, RetrieverCauses] = {}
    for name in index.ws.retrievers:
        pairs = [(w.question.id, w.retrievers[name]) for w in whys if name in w.retrievers]
        now = [r.recall for _, r in pairs if r.recall is not None]
        counts: dict[str, CauseCount] = {}
        for cause in CAUSES:
            having = [(qid, r) for qid, r in pairs if cause in r.causes]
            ceilings = [v for _, r in pairs if (v := r.fixed_recall(k, cause)) is not None]
            counts[cause] = CauseCount(
                cause,
                len(having),
                sum(1 for _, r in having if r.cause == cause),
                sum(1 for _, r in having for m in r.misses if cause in m.causes),
                _mean(ceilings),
                tuple(qid for qid, _ in having),
            )
        every = [v for _, r in pairs if (v := r.fixed_recall(k, None)) is not None]
        out[name] = RetrieverCauses(
            name,
            len(now),
            _mean(now),
            sum(1 for _, r in pairs if r.misses),
            counts,
            _mean(every),
        )
    return out


def _reader(ws: Workspace) -> tuple[int, bool]:
    """What decides how the vector retriever reads a chunk: the retriever, and whether long chunks
    are read as windows."""
    return id(
        ws.ranked.vector
    ), ws.ranked.windows is not None and ws.ranked.windows.plan is not None
