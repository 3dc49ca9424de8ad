"""The question list's filter and sort: which questions to show, in which order.

A filter is words and terms, all of which a question must match:
- a word matches the question's id or text (case-insensitive);
- ``slice:NAME`` the questions in that slice;
- ``miss:RETRIEVER`` the questions whose relevant chunks that retriever does not all have in its top k
  (``miss:any``: some shown retriever misses);
- ``unjudged`` the questions with a pooled chunk (any shown retriever's top k) without a hand grade;
- ``disputed`` the questions with a pair that annotators graded differently and nobody adjudicated
  (``Workspace.disputed_pairs`` gives the pairs, for an adjudication pass).
- ``why:CAUSE`` the questions some shown retriever misses with that cause (any of its causes, see
  ``ragtui.core.analysis.why.CAUSES``), ``why:CAUSE:RETRIEVER`` those that retriever misses with it;
  a cause is named in full (``fusion-loss``) or by the why column's short mark (``fuse``).
- ``judge:disagree`` the questions with a pooled pair (the pairs people judge: a shown
  retriever's top k) where a model judge and a person or the evidence rule disagree
  (``ragtui.core.judges.agreement.disagreeing_questions``: another grade than a person's, or the
  other side of the threshold from the rule); a pair the judge graded beyond the pool does not
  count.

A miss is one rule everywhere (``misses_in_top_k``): the retriever's recall@k is below 1, that is
some relevant chunk is not in its top k. The question list's ``✗`` and ``miss:`` both use it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from ragtui.core.analysis.why import CAUSE_MARKS, CAUSES, WhyIndex
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import JudgingQueue

#: The terms a filter understands besides plain words.
TERMS = (
    "slice:NAME",
    "miss:RETRIEVER",
    "miss:any",
    "unjudged",
    "disputed",
    "why:CAUSE",
    "why:CAUSE:RETRIEVER",
    "judge:disagree",
)
#: What a filter may hold, in one line (the app's placeholder, help and palette).
FILTER_SYNTAX = "words, " + ", ".join(TERMS)
#: The cause each ``why:`` word stands for: its full name and the why column's short mark.
CAUSE_WORDS: dict[str, str] = {
    **{cause: cause for cause in CAUSES},
    **{mark: cause for cause, mark in CAUSE_MARKS.items()},
}


def cause_list() -> str:
    """The causes a ``why:`` term takes, each with its short mark: ``label-gap (label), split, ...``."""
    return ", ".join(
        cause if CAUSE_MARKS.get(cause, cause) == cause else f"{cause} ({CAUSE_MARKS[cause]})"
        for cause in CAUSES
    )


@dataclass(frozen=True)
class QuestionFilter:
    """A parsed filter (see the module docstring)."""

    words: tuple[str, ...] = ()
    slices: tuple[str, ...] = ()
    misses: tuple[str, ...] = ()
    unjudged: bool = False
    disputed: bool = False
    #: ``why:`` terms: (cause, retriever or None for any shown retriever).
    causes: tuple[tuple[str, str | None], ...] = ()
    #: ``judge:disagree``: questions where a model judge and a person or the rule disagree.
    judge_disagree: bool = False

    @property
    def empty(self) -> bool:
        """Whether the filter lets every question through."""
        return not (
            self.words
            or self.slices
            or self.misses
            or self.unjudged
            or self.disputed
            or self.causes
            or self.judge_disagree
        )

    @property
    def by_grades(self) -> bool:
        """Whether which questions pass depends on the grades (a grade change can let a question
        in or out: the list is filtered again after each)."""
        return bool(
            self.misses or self.unjudged or self.disputed or self.causes or self.judge_disagree
        )

    @classmethod
    def parse(cls, text: str, retrievers: Sequence[str]) -> QuestionFilter:
        """Parse a filter; ValueError names a term it cannot use (an unknown retriever or cause)."""
        words: list[str] = []
        slices: list[str] = []
        misses: list[str] = []
        causes: list[tuple[str, str | None]] = []
        unjudged = False
        disputed = False
        judge_disagree = False
        known = {r.lower(): r for r in retrievers}
        for token in text.lower().split():
            head, sep, rest = token.partition(":")
            if sep and head == "slice" and rest:
                slices.append(rest)
            elif sep and head == "why" and rest:
                word, _, retriever = rest.partition(":")
                cause = CAUSE_WORDS.get(word)
                if cause is None:
                    raise ValueError(f"why:{word}: no such cause (causes: {cause_list()})")
                if retriever and retriever not in known:
                    raise ValueError(
                        f"why:{rest}: no such retriever (shown: {', '.join(retrievers)})"
                    )
                causes.append((cause, known[retriever] if retriever else None))
            elif sep and head == "miss" and rest:
                if rest != "any" and rest not in known:
                    raise ValueError(
                        f"miss:{rest}: no such retriever (shown: {', '.join(retrievers)}, or any)"
                    )
                misses.append("any" if rest == "any" else known[rest])
            elif sep and head == "judge":
                if rest != "disagree":
                    raise ValueError(
                        f"judge:{rest}: not a filter (judge:disagree: the questions where a "
                        "model judge and a person or the evidence rule disagree)"
                    )
                judge_disagree = True
            elif token == "unjudged":
                unjudged = True
            elif token == "disputed":
                disputed = True
            else:
                words.append(token)
        return cls(
            tuple(words),
            tuple(slices),
            tuple(misses),
            unjudged,
            disputed,
            tuple(causes),
            judge_disagree,
        )


def misses_in_top_k(values: QuestionMetrics) -> bool:
    """Whether a retriever's values on one question are a miss: it has a relevant chunk and
    recall@k below 1 (some relevant chunk is not in the top k; for a live retriever scored by
    evidence recall, some evidence string is not found). The one rule of ``✗`` and ``miss:``."""
    return values.num_relevant > 0 and values.recall < 1.0


def misses(ws: Workspace, retriever: str, qid: str) -> bool:
    """Whether ``retriever`` leaves a relevant chunk of ``qid`` out of its top k (False for a question
    with no relevant chunk, or a retriever without rankings yet)."""
    ev = ws.evaluation
    if ev is None or retriever not in ev.per_question or qid not in ev.evaluated:
        return False
    return misses_in_top_k(ev.per_question[retriever][qid])


def misses_with(why: WhyIndex, cause: str, retrievers: Sequence[str], qid: str) -> bool:
    """Whether one of ``retrievers`` misses question ``qid`` with ``cause`` among its causes."""
    return any(cause in why.causes(qid, r) for r in retrievers)


def filter_questions(
    ws: Workspace,
    flt: QuestionFilter,
    queue: JudgingQueue | None = None,
    why: WhyIndex | None = None,
    among: Collection[str] | None = None,
) -> list[str]:
    """The ids of the questions ``flt`` lets through, in golden-set order (``queue`` is needed for
    ``unjudged``, ``why`` for ``why:`` terms; each is built when not given: keep one and ``update``
    it after a grade change rather than rebuilding it for every keystroke); with ``among``, only
    those questions are looked at (whether a grade change let them in or out)."""
    if flt.empty:
        known = ws.questions.by_id
        return ws.questions.ids if among is None else [q for q in among if q in known]
    by_id = ws.questions.by_id
    # Each question's id, text and slices (read from the set's columns: no question is built).
    questions = (
        ws.questions.fields()
        if among is None
        else [(q.id, q.text, q.slices) for q in map(by_id.get, among) if q is not None]
    )
    shown = list(ws.retrievers)
    if (flt.unjudged or flt.judge_disagree) and queue is None:
        queue = JudgingQueue(ws)
    disputed = set(ws.grades.disputed_questions()) if flt.disputed else set()
    disagree: set[str] = set()
    if flt.judge_disagree and queue is not None:
        from ragtui.core.judges.agreement import disagreeing_questions  # only this filter

        pools = queue.pools
        disagree = disagreeing_questions(ws, pooled=lambda q: {e.chunk for e in pools.get(q, ())})
    if flt.causes and why is None:
        why = WhyIndex(ws)
    out = []
    for qid, text, slices in questions:
        if flt.disputed and qid not in disputed:
            continue
        if flt.judge_disagree and qid not in disagree:
            continue
        if flt.slices:
            have = {s.lower() for s in slices}
            if any(s not in have for s in flt.slices):
                continue
        if flt.words:
            haystack = f"{qid} {text}".lower()
            if any(w not in haystack for w in flt.words):
                continue
        if flt.misses:
            wanted = [shown if m == "any" else [m] for m in flt.misses]
            if not all(any(misses(ws, r, qid) for r in group) for group in wanted):
                continue
        if why is not None and not all(
            misses_with(why, cause, shown if r is None else [r], qid) for cause, r in flt.causes
        ):
            continue
        if flt.unjudged and queue is not None:
            count = queue.count(qid)
            if count.judged >= count.pooled:
                continue
        out.append(qid)
    return out


def worst_first(ws: Workspace, qids: Sequence[str]) -> list[str]:
    """Questions sorted worst-first: lowest nDCG@k of the best-informed retriever (hybrid, else
    vector, else bm25, else the first shown), then a miss before a hit, the later first hit first,
    golden-set order; skipped questions last. Sorted on the evaluation's arrays (no per-question
    Python beyond looking each id up)."""
    evaluation = ws.evaluation
    if evaluation is None:
        return list(qids)
    shown: list[str] = [n for n in ("hybrid", "vector", "bm25") if n in evaluation.per_question]
    shown += [n for n in evaluation.per_question if n not in shown]
    if not shown:
        return list(qids)
    chosen = list(qids)
    rows = evaluation.rows_of(chosen)
    known = rows >= 0
    safe = np.where(known, rows, 0)
    evaluated = known & evaluation.evaluated_mask[safe]
    ndcg = np.where(evaluated, evaluation.column(shown[0], "ndcg")[safe], 0.0)
    first = np.where(evaluated, evaluation.column(shown[0], "first")[safe], 0)
    position = ws.questions.positions(chosen)
    # The key (skipped last, nDCG up, a miss before a hit, the later first hit first, golden
    # order); np.lexsort takes the last key as the first.
    order = np.lexsort((position, -first, (first > 0).astype(np.int64), ndcg, ~evaluated))
    return [chosen[i] for i in order.tolist()]
