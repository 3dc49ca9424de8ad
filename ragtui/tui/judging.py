"""The judging walk: the pooled pairs of the questions a screen shows, in its order, unjudged first.

The pool of a question is every shown retriever's top k (``ragtui.core.labelling.judging``); a
pair counts as judged when it has a hand grade that applies. The walk follows the question order
the main screen shows (its filter and its sort), so a person judges what they are looking at.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtui.core.labelling.judging import JudgedCount, JudgingQueue, PoolEntry, PoolOrder
from ragtui.core.workspace import Workspace

#: The seed of the random pool order (fixed, so a session can be resumed in the same order).
RANDOM_SEED = 0


class JudgingWalk:
    """The pooled pairs of ``qids`` in that order; each question's unjudged pairs first."""

    def __init__(self, ws: Workspace, qids: Sequence[str], order: PoolOrder = "rank") -> None:
        """The walk over these questions, pooled from the workspace as it is now."""
        self.ws = ws
        self.qids = list(qids)
        self.order: PoolOrder = order
        self.queue = JudgingQueue(ws, order=order, seed=RANDOM_SEED)
        self._position = {qid: i for i, qid in enumerate(self.qids)}

    def count(self, qid: str) -> JudgedCount:
        """Judged / pooled of one question."""
        return self.queue.count(qid)

    def totals(self) -> JudgedCount:
        """Judged / pooled over the walk's questions."""
        counts = [self.queue.count(q) for q in self.qids]
        return JudgedCount(sum(c.judged for c in counts), sum(c.pooled for c in counts))

    def pairs(self, qid: str) -> list[PoolEntry]:
        """A question's pool in queue order (judged or not)."""
        return list(self.queue.pools.get(qid, ()))

    def next_unjudged(self, after: tuple[str, str] | None) -> PoolEntry | None:
        """The first unjudged pair after ``after`` (question, chunk), walking the questions in order
        and wrapping round; ``after`` None starts at the first question. None: all are judged."""
        if not self.qids:
            return None
        start_q = 0
        skip_through: str | None = None
        if after is not None and after[0] in self._position:
            start_q = self._position[after[0]]
            skip_through = after[1]
        order = self.qids[start_q:] + self.qids[:start_q] + self.qids[start_q : start_q + 1]
        for turn, qid in enumerate(order):
            pool = self.pairs(qid)
            if turn == 0 and skip_through is not None:
                keys = [e.chunk for e in pool]
                if skip_through in keys:
                    pool = pool[keys.index(skip_through) + 1 :]
            elif turn == len(order) - 1 and skip_through is not None:
                keys = [e.chunk for e in pool]
                if skip_through in keys:
                    pool = pool[: keys.index(skip_through) + 1]
            for entry in pool:
                if not self.queue.is_judged(entry.question, entry.chunk):
                    return entry
        return None
