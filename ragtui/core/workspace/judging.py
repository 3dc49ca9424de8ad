"""The judging queue (pooling, as TREC builds its pools) and Judged@k per retriever.

The pool of a question is the union of every retriever's top ``pool_depth`` (``k`` by default).
For the queue a pooled chunk counts as judged only when it has a hand grade that applies to the
current chunking (stale labels do not count): the point of the queue is that a person looks at
every pooled chunk, and the evidence rule is exactly what a person should confirm or overrule.
When several people grade (``--annotator`` names one, or the journal holds another person's
grades) the queue is a person's own: a pair is judged once the current annotator graded it, so
each person walks every pooled pair (``JudgingQueue.person``).
Judged@k, on the other hand, is about how much of a top-k the metrics rest on, so there a chunk
counts as judged when it has a hand grade or a base grade (evidence match, or BEIR qrels).

Nothing here prints; a UI builds a :class:`JudgingQueue` once per workspace and calls its methods
after every grade change (they read the workspace's labels live).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ragtui.core.labelling.labels import HistoryMark, history_since
from ragtui.core.metrics.formulas import judged_at_k
from ragtui.core.metrics.tables import RankingTable, in_order, source_rows
from ragtui.core.workspace.workspace import Workspace

#: A mean Judged@k below this marks a retriever's metrics as resting on a thinly judged top-k.
THIN_JUDGED = 0.5

#: How the pool of a question is ordered: by rank, or shuffled with a seed (so position does not bias the judge).
PoolOrder = Literal["rank", "random"]


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """One pooled (question, chunk) pair and where each retriever ranked it (1-based, within the pool depth)."""

    question: str
    chunk: str
    best_rank: int
    ranks: tuple[tuple[str, int], ...]

    @property
    def key(self) -> tuple[str, str]:
        """The (question id, chunk id) pair."""
        return (self.question, self.chunk)

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrievers that put this chunk in their top ``pool_depth``, in retriever order."""
        return tuple(name for name, _ in self.ranks)


@dataclass(frozen=True, slots=True)
class JudgedCount:
    """How many pooled chunks have a hand grade, out of how many."""

    judged: int
    pooled: int

    @property
    def unjudged(self) -> int:
        """Pooled chunks still without a hand grade."""
        return self.pooled - self.judged

    @property
    def fraction(self) -> float:
        """judged / pooled, 1.0 for an empty pool (nothing left to do)."""
        return self.judged / self.pooled if self.pooled else 1.0

    def __str__(self) -> str:
        return f"{self.judged}/{self.pooled}"


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """Judged / pooled over all questions and for each question (golden-set order)."""

    overall: JudgedCount
    per_question: dict[str, JudgedCount]


def pool_question(
    qid: str,
    rankings: Mapping[str, Mapping[str, list[tuple[str, float]]]],
    retrievers: Iterable[str],
    pool_depth: int,
    chunk_order: Mapping[str, int],
) -> list[PoolEntry]:
    """The union of the retrievers' top ``pool_depth`` for one question, best rank first.

    Order: best rank over the retrievers, then the first retriever (in ``retrievers`` order) that
    reached that rank, then chunk order.
    """
    names = list(retrievers)
    ranks: dict[str, list[tuple[str, int]]] = {}
    for name in names:
        seen: set[str] = set()
        rank = 0
        for cid, _ in rankings.get(name, {}).get(qid, ()):
            if cid in seen:  # a duplicate takes no rank, as in the metrics
                continue
            seen.add(cid)
            rank += 1
            if rank > pool_depth:
                break
            ranks.setdefault(cid, []).append((name, rank))
    position = {name: i for i, name in enumerate(names)}
    entries = [PoolEntry(qid, cid, min(r for _, r in by), tuple(by)) for cid, by in ranks.items()]

    unknown = len(chunk_order)

    def order(entry: PoolEntry) -> tuple[int, int, int]:
        first = min(position[n] for n, r in entry.ranks if r == entry.best_rank)
        return (entry.best_rank, first, chunk_order.get(entry.chunk, unknown))

    return sorted(entries, key=order)


class Pools(Mapping[str, list[PoolEntry]]):
    """Question id -> its pool (golden-set order), each question pooled when first asked for."""

    def __init__(self, queue: JudgingQueue) -> None:
        self._queue = queue
        self._done: dict[str, list[PoolEntry]] = {}
        self._ids: set[str] | None = None

    def __getitem__(self, qid: str) -> list[PoolEntry]:
        found = self._done.get(qid)
        if found is None:
            found = self._done[qid] = self._queue.pool(qid)
        return found

    def __contains__(self, qid: object) -> bool:
        if qid in self._done:
            return True
        questions = self._queue.ws.questions
        if self._ids is None or len(self._ids) != len(questions):
            self._ids = {q.id for q in questions}
        return qid in self._ids

    def __iter__(self) -> Iterator[str]:
        return (q.id for q in self._queue.ws.questions)

    def __len__(self) -> int:
        return len(self._queue.ws.questions)


class JudgingQueue:
    """The pooled top-k of every question, with judged status read live from the workspace."""

    def __init__(
        self,
        ws: Workspace,
        pool_depth: int | None = None,
        order: PoolOrder = "rank",
        seed: int = 0,
        retrievers: Iterable[str] | None = None,
    ) -> None:
        if order not in ("rank", "random"):
            raise ValueError(f"order must be 'rank' or 'random', got {order!r}")
        self.ws = ws
        self.pool_depth = pool_depth if pool_depth is not None else ws.settings.k
        if self.pool_depth < 1:
            raise ValueError("the pool depth must be at least 1")
        self.order: PoolOrder = order
        self.seed = seed
        self._requested = list(retrievers) if retrievers is not None else None
        #: The retrievers pooled: the requested ones (default: the workspace's shown ones) that have rankings.
        self.retrievers: list[str] = []
        #: Question id -> its pool, in queue order (rank order, or the seeded shuffle); each
        #: question is pooled when first asked for.
        self.pools: Pools = Pools(self)
        # The named annotators of the journal's lines (adjudications aside), read incrementally:
        # where the journal was read to, and the names.
        self._names: tuple[HistoryMark | None, set[str]] = (None, set())
        self.rebuild()

    def rebuild(self) -> None:
        """Pool again from the workspace's rankings (after vectors became ready or a question was added)."""
        ws = self.ws
        names = self._requested if self._requested is not None else ws.retrievers
        self.retrievers = [n for n in names if n in ws.ranked.rankings]
        self.pools = Pools(self)

    def pool(
        self, qid: str, rankings: Mapping[str, Mapping[str, list[tuple[str, float]]]] | None = None
    ) -> list[PoolEntry]:
        """One question's pool, in queue order (computed now; ``pools`` keeps it), from the
        workspace's rankings or from ``rankings`` (a walk's, as they were when it began)."""
        ws = self.ws
        pool = pool_question(
            qid,
            rankings if rankings is not None else ws.ranked.rankings,
            self.retrievers,
            self.pool_depth,
            ws.passages.order,
        )
        if self.order == "random":
            # Seeded per question, so one question's order does not depend on the others.
            random.Random(f"{self.seed}:{qid}").shuffle(pool)
        return pool

    def _tables(self) -> list[RankingTable] | None:
        """The pooled retrievers' rankings when their arrays can stand for the pools: every one a
        table of distinct chunks (a repeat takes no rank) over one list of chunks; else None."""
        tables = [self.ws.ranked.rankings.get(n) for n in self.retrievers]
        first = tables[0] if tables else None
        if not isinstance(first, RankingTable):
            return None
        out: list[RankingTable] = []
        for t in tables:
            if not isinstance(t, RankingTable) or not t.distinct:
                return None
            if t.ids is not first.ids and list(t.ids) != list(first.ids):
                return None
            out.append(t)
        return out

    def pooled_counts(self, qids: Sequence[str]) -> np.ndarray:
        """How many chunks each question's pool holds, read from the rankings' arrays where the
        rankings are tables (no pool is built); other questions are pooled one by one."""
        tables = self._tables()
        n = len(qids)
        if tables is None:
            return np.asarray([len(self.pools[q]) for q in qids], dtype=np.int64)
        columns: list[np.ndarray] = []
        slow = np.zeros(n, dtype=bool)
        # The rows of one list of questions, and whether they are every question in order.
        rows: tuple[Sequence[str], np.ndarray, bool] | None = None
        for table in tables:
            if rows is None or rows[0] is not table.qids:  # the tables share one most often
                found = source_rows(qids, table.qids, table.rows)
                rows = (table.qids, found, in_order(found, len(table.qids)))
            width = min(self.pool_depth, table.depth)
            if rows[2]:
                block = table.index[:, :width]  # every question, in the table's order: no copy
            else:
                present = rows[1] >= 0
                block = np.full((n, width), -1, dtype=np.int32)
                block[present] = table.index[rows[1][present], :width]
                slow |= ~present
            columns.extend(np.ascontiguousarray(block.T))
            changed = table.changed()
            if changed:
                slow |= np.fromiter((q in changed for q in qids), dtype=bool, count=n)
        # The distinct chunks of each row: a column counts where it is a chunk (not -1) that no
        # column before it holds (column against column, in C: no row is sorted).
        distinct = np.zeros(n, dtype=np.int64)
        for j, column in enumerate(columns):
            new = column >= 0
            for earlier in columns[:j]:
                new &= column != earlier
            distinct += new
        for i in np.flatnonzero(slow).tolist():
            distinct[i] = len(self.pools[qids[i]])
        return distinct

    def judged_counts(self, qids: Sequence[str]) -> np.ndarray:
        """``count(qid).judged`` of each question, without pooling it: each labelled chunk is
        looked for in the top of the rankings' arrays, and only those found are asked whether
        they are judged (pooling every labelled question took 3-4 s at the first screen of
        100,000 labelled questions). Questions the arrays cannot stand for (a ranking changed
        since, a question added, rankings that are no distinct tables) are counted one by one."""
        n = len(qids)
        pairs = self.ws.grades.labels.pairs
        tables = self._tables()
        if tables is None:
            return np.asarray(
                [self.count(q).judged if q in pairs else 0 for q in qids], dtype=np.int64
            )
        code_of = {cid: code for code, cid in enumerate(tables[0].ids)}
        changed: set[str] = set().union(*(t.changed() for t in tables))
        slow: list[int] = []
        at: list[int] = []
        codes: list[int] = []
        chunks: list[str] = []
        for i, qid in enumerate(qids):
            by_chunk = pairs.get(qid)
            if not by_chunk:
                continue
            if qid in changed:
                slow.append(i)
                continue
            for cid in by_chunk:
                code = code_of.get(cid)
                if code is not None:  # a chunk no table ranks is in no pool
                    at.append(i)
                    codes.append(code)
                    chunks.append(cid)
        where = np.asarray(at, dtype=np.int64)
        wanted = np.asarray(codes, dtype=np.int64)
        pooled = np.zeros(len(where), dtype=bool)
        unknown = np.zeros(len(where), dtype=bool)
        found: dict[int, np.ndarray] = {}  # each list of questions' rows (the tables share one)
        for t in tables:
            if id(t.qids) not in found:
                found[id(t.qids)] = (
                    source_rows(qids, t.qids, t.rows)[where] if len(where) else where
                )
            rows = found[id(t.qids)]
            unknown |= rows < 0
            width = min(self.pool_depth, t.depth)
            top = t.index[np.maximum(rows, 0), :width]
            pooled |= (rows >= 0) & (top == wanted[:, None]).any(axis=1)
        slow.extend(sorted(set(where[unknown].tolist())))
        counted = np.zeros(n, dtype=np.int64)
        for k in np.flatnonzero(pooled & ~unknown).tolist():
            if self.is_judged(qids[at[k]], chunks[k]):
                counted[at[k]] += 1
        for i in slow:
            counted[i] = self.count(qids[i]).judged
        return counted

    # ---- judged status -------------------------------------------------------------------------

    def annotators(self) -> set[str]:
        """The named people with a line in the journal (adjudicated lines, unnamed lines and model
        judges aside), read incrementally as the journal grows."""
        history = self.ws.grades.labels.history
        read, names = self._names
        since, mark = history_since(history, read)
        if since is None:
            since, names = history, set()
        for label in since:
            if label.annotator and not label.adjudicated and not label.is_model:
                names.add(label.annotator)
        self._names = (mark, names)
        return names

    @property
    def person(self) -> str | None:
        """Whose queue this is: the current annotator when several people grade (``--annotator``
        names one, or the journal holds grades by a named person other than the current one; a
        model judge's verdicts are no person's), else None: one person grades and any hand grade
        counts as judged."""
        labels = self.ws.grades.labels
        me = labels.annotator
        if self.ws.settings.annotator is not None or self.annotators() - {me}:
            return me
        return None

    def own_grade(self, qid: str, cid: str) -> int | None:
        """The current annotator's own grade of a pair, when it applies (else None)."""
        pair = self.ws.grades.labels.pair(qid, cid)
        label = pair.annotators.get(self.ws.grades.labels.annotator) if pair is not None else None
        if label is None or label.grade is None or self.ws.grades.label_status(label) is not None:
            return None
        return label.grade

    def is_judged(self, qid: str, cid: str) -> bool:
        """Whether the pair is judged: it has a hand grade that applies (stale labels and the
        evidence rule do not count); when several people grade (``person``), the current
        annotator's own grade that applies."""
        if self.person is not None:
            return self.own_grade(qid, cid) is not None
        pair = self.ws.grades.labels.pair(qid, cid)
        if pair is None:
            return False
        label = pair.effective(lambda lab: self.ws.grades.label_status(lab) is None)
        return label is not None and label.grade is not None

    def entries(self, qid: str) -> list[PoolEntry]:
        """A question's pool as a judge sees it: unjudged first, each part in queue order."""
        pool = self.pools.get(qid, [])
        return [e for e in pool if not self.is_judged(qid, e.chunk)] + [
            e for e in pool if self.is_judged(qid, e.chunk)
        ]

    def count(self, qid: str) -> JudgedCount:
        """Judged / pooled for one question."""
        pool = self.pools.get(qid, [])
        return JudgedCount(sum(1 for e in pool if self.is_judged(qid, e.chunk)), len(pool))

    def progress(self) -> QueueProgress:
        """Judged / pooled overall and per question."""
        per_question = {qid: self.count(qid) for qid in self.pools}
        overall = JudgedCount(
            sum(c.judged for c in per_question.values()),
            sum(c.pooled for c in per_question.values()),
        )
        return QueueProgress(overall, per_question)

    # ---- moving through the queue --------------------------------------------------------------

    def _flat(self) -> list[PoolEntry]:
        return [e for q in self.ws.questions for e in self.pools.get(q.id, ())]

    def next_unjudged(
        self, after: tuple[str, str] | None = None, wrap: bool = True
    ) -> PoolEntry | None:
        """The first unjudged pooled pair after ``after`` (question id, chunk id), across questions in golden-set order.

        Without ``after`` the search starts at the first question. If ``after`` names a question
        but a chunk outside its pool, the search starts at that question's first entry. With
        ``wrap`` the search continues from the start, so skipped pairs come round again; None
        means every pooled pair is judged (or, without ``wrap``, none is left after ``after``).
        """
        flat = self._flat()
        start = 0
        if after is not None:
            qid, cid = after
            keys = [e.key for e in flat]
            if (qid, cid) in keys:
                start = keys.index((qid, cid)) + 1
            else:
                firsts = [i for i, e in enumerate(flat) if e.question == qid]
                if firsts:
                    start = firsts[0]
                else:
                    order = [q.id for q in self.ws.questions]
                    if qid in order:  # an empty pool: continue with the next question
                        later = set(order[order.index(qid) + 1 :])
                        start = next(
                            (i for i, e in enumerate(flat) if e.question in later), len(flat)
                        )
        candidates = flat[start:] + (flat[:start] if wrap else [])
        for entry in candidates:
            if not self.is_judged(entry.question, entry.chunk):
                return entry
        return None


# ---- Judged@k ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JudgedSummary:
    """One retriever's Judged@k: the mean over the evaluated questions, each question's value, and the flag."""

    retriever: str
    k: int
    mean: float
    per_question: Mapping[str, float]
    thin: bool


def judged_summaries(
    ws: Workspace, k: int | None = None, threshold: float = THIN_JUDGED
) -> dict[str, JudgedSummary]:
    """Judged@k of every shown retriever (``ragtui.core.metrics.formulas.judged_at_k``), averaged like the metrics.

    The mean is over the questions the metric means use (at least one judgement), so the flag
    speaks about the same numbers; ``per_question`` holds every golden question. ``thin`` is
    ``mean < threshold``.
    """
    k = k if k is not None else ws.settings.k
    ev = ws.evaluation
    assert ev is not None
    out: dict[str, JudgedSummary] = {}
    if k == ev.k:
        # The evaluation keeps Judged@k per question and a running sum: no pass over the questions.
        for name in ws.retrievers:
            if name in ev.judged:
                mean = ev.judged_mean(name)
                out[name] = JudgedSummary(name, k, mean, ev.judged[name], mean < threshold)
        return out
    # The evaluation's rankings and grades: chunks, or documents at document level.
    for name in ws.retrievers:
        per_question = {
            q.id: judged_at_k(
                [cid for cid, _ in ev.rankings[name].get(q.id, ())], ev.gains_for(name, q.id), k
            )
            for q in ws.questions
        }
        averaged = [per_question[q.id] for q in ws.questions if q.id in ev.evaluated]
        mean = math.fsum(averaged) / len(averaged) if averaged else 0.0
        out[name] = JudgedSummary(name, k, mean, per_question, mean < threshold)
    return out
