"""The judging walk: the pooled pairs of the questions a screen shows, in its order, unjudged first.

The pool of a question is every shown retriever's top k (``ragtui.core.workspace.judging``); a
pair counts as judged when it has a hand grade that applies (when several people grade: the
current annotator's own grade, ``JudgingQueue.person``). The walk follows the question order the
main screen shows (its filter and its sort), so a person judges what they are looking at.

Also the one-row texts of the judging view: a chunk's heading path shortened to the width.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import overload

import numpy as np
from rich.cells import cell_len
from rich.text import Text

from ragtui.core.data.grades import GradeScale
from ragtui.core.judges.sample import HumanSample
from ragtui.core.judges.verify import (
    QueueOrder,
    RecordedSample,
    disagreeing_first,
    disagreement,
    judge_verdict,
    judged_chunks,
    person_graded,
)
from ragtui.core.labelling.journal import Label
from ragtui.core.labelling.labels import labelled_since
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import JudgedCount, JudgingQueue, PoolEntry, PoolOrder

#: A heading's attribute list (MkDocs / Python-Markdown ``attr_list``, Pandoc): ``{ #cors }``,
#: ``{: #id .class }``, ``{#id}``, at the end of the heading.
_ATTRIBUTES = re.compile(r"\s*\{:?\s*[#.][^{}]*\}\s*$")
#: Markdown marks kept in a heading's text: inline code ticks, emphasis, closing hashes.
_MARKS = re.compile(r"`+|\*\*|__|\s+#+\s*$")
#: Between the parts of a heading path.
PATH_SEPARATOR = " › "
#: Stands for what was left out.
ELLIPSIS = "…"


def clean_heading(heading: str) -> str:
    """A heading as a reader sees it: its attribute list (``{ #anchor }``), code ticks, bold marks
    and closing hashes dropped, white space collapsed, control characters shown as escapes."""
    text = _ATTRIBUTES.sub("", heading)
    text = _MARKS.sub("", text)
    return visible_line(" ".join(text.split()))


def fit_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells: whole when it fits, else its start and end with ``…``
    between them (the end, the most specific part, gets the larger share)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    room = width - 1
    head_room = room // 3
    head = ""
    for char in text:
        if cell_len(head + char) > head_room:
            break
        head += char
    tail = ""
    for char in reversed(text):
        if cell_len(head) + cell_len(char + tail) > room:
            break
        tail = char + tail
    return head + ELLIPSIS + tail


def heading_row(chunk_id: str, doc: str, headings: Sequence[str], width: int) -> tuple[str, str]:
    """The chunk id and where it sits (its document unless the id names it, then its headings),
    both in one row of ``width`` cells with two spaces between them: headings left out from the
    middle (``A › … › D``, then ``… › D``); when even that does not fit, the id is cut in the middle
    to half the row, and then the last heading."""
    cid = visible_line(chunk_id)
    parts = [h for h in (clean_heading(h) for h in headings) if h]
    if not chunk_id.startswith(doc + "#"):
        parts.insert(0, visible_line(doc))
    if not parts:
        return fit_middle(cid, width), ""
    candidates = [PATH_SEPARATOR.join(parts)]
    for kept in range(len(parts) - 2, 0, -1):
        candidates.append(PATH_SEPARATOR.join([parts[0], ELLIPSIS, *parts[-kept:]]))
    for kept in range(len(parts) - 1, 0, -1):
        candidates.append(PATH_SEPARATOR.join([ELLIPSIS, *parts[-kept:]]))

    def place(room: int) -> str | None:
        return next((c for c in candidates if cell_len(c) <= room), None)

    found = place(width - cell_len(cid) - 2)
    if found is not None:
        return cid, found
    cid = fit_middle(cid, max(width // 2, width - 2 - cell_len(candidates[-1])))
    room = width - cell_len(cid) - 2
    if room < 2:
        return cid, ""
    found = place(room)
    return cid, found if found is not None else fit_middle(parts[-1], room)


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
        self._positions: dict[str, int] | None = None
        # The pools' sizes, read from the rankings' arrays (no question is pooled for them), and
        # the rankings they were read from (read again when the workspace's are others).
        self._sizes: tuple[object, np.ndarray] | None = None
        #: Judged pairs per labelled question, counted again only for the questions labelled
        #: since (every move shows the totals: they cost the new labels, not all of them).
        self._judged: dict[str, int] = {}
        self._counted: tuple[Label | None, int, str | None] | None = None

    @property
    def _position(self) -> dict[str, int]:
        """Each walked question's place in the walk, built when first asked (a walk over 100,000
        questions is rebuilt whenever the list changes, most often without being walked)."""
        if self._positions is None:
            self._positions = {qid: i for i, qid in enumerate(self.qids)}
        return self._positions

    @cached_property
    def _walked(self) -> AbstractSet[str]:
        """The walked questions (whether a labelled question is walked: a set is built in less
        than half the time of the places, 7 against 18 ms at 100,000 questions)."""
        return self._positions.keys() if self._positions is not None else frozenset(self.qids)

    def row(self, qid: str) -> int | None:
        """A question's place in the walk (None: not walked)."""
        return self._position.get(qid)

    @property
    def pool_sizes(self) -> np.ndarray:
        """How many pairs each walked question pools, in the walk's order."""
        rankings = self.ws.ranked.rankings
        if self._sizes is None or self._sizes[0] is not rankings:
            self._sizes = (rankings, self.queue.pooled_counts(self.qids))
        return self._sizes[1]

    def count(self, qid: str) -> JudgedCount:
        """Judged / pooled of one question."""
        return self.queue.count(qid)

    def totals(self) -> JudgedCount:
        """Judged / pooled over the walk's questions: only questions with hand labels can have a
        judged pair, so only those are pooled."""
        pooled = int(self.pool_sizes.sum())
        labels = self.ws.grades.labels
        if not labels.pairs:  # nothing judged: no need to place 100,000 questions in the walk
            return JudgedCount(0, pooled)
        walked = self._walked
        person = self.queue.person  # whose grades count: another person's, counted again
        since, mark = labelled_since(
            labels.history, self._counted[:2] if self._counted is not None else None
        )
        if since is None or self._counted is None or self._counted[2] != person:
            qids = [q for q in labels.pairs if q in walked]
            self._judged = dict(zip(qids, self.queue.judged_counts(qids).tolist(), strict=True))
        else:
            self._judged.update({q: self.queue.count(q).judged for q in since if q in walked})
        self._counted = (*mark, person)
        return JudgedCount(sum(self._judged.values()), pooled)

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


class WalkPairs(Sequence[PoolEntry]):
    """The people's queue in the list's order: every pooled pair of the walk's questions, each
    question's unjudged pairs first. The pools' sizes are read from the rankings' arrays at once
    (``JudgingQueue.pooled_counts``); a question's pairs are pooled, and sorted by their judged
    state, when the walk first reaches them. Listing every pair first pooled every question:
    3.4 s to open the view at 100,000 questions."""

    def __init__(self, walk: JudgingWalk) -> None:
        self.walk = walk
        # The rankings the sizes are read from: a question reached later is pooled from them, so
        # its pairs fill the places counted now (rankings that arrive meanwhile change nothing).
        self.rankings = walk.ws.ranked.rankings
        self._ends = np.cumsum(walk.pool_sizes)
        self._listed: dict[int, list[PoolEntry]] = {}

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def start(self, row: int) -> int:
        """The position of the first pair of the walk's question ``row``."""
        return int(self._ends[row - 1]) if row else 0

    def question(self, row: int) -> list[PoolEntry]:
        """The pairs of the walk's question ``row``, unjudged first (sorted when first asked)."""
        listed = self._listed.get(row)
        if listed is None:
            qid = self.walk.qids[row]
            judged = self.walk.queue.is_judged
            pool = self.walk.queue.pool(qid, self.rankings)
            listed = sorted(pool, key=lambda e: judged(qid, e.chunk))
            self._listed[row] = listed
        return listed

    @overload
    def __getitem__(self, index: int) -> PoolEntry: ...
    @overload
    def __getitem__(self, index: slice) -> list[PoolEntry]: ...
    def __getitem__(self, index: int | slice) -> PoolEntry | list[PoolEntry]:
        at = range(len(self))[index]  # from the end when negative; IndexError past either end
        if isinstance(at, range):
            return [self[i] for i in at]
        row = int(np.searchsorted(self._ends, at, side="right"))
        return self.question(row)[at - self.start(row)]

    def __iter__(self) -> Iterator[PoolEntry]:
        return chain.from_iterable(self.question(row) for row in range(len(self._ends)))

    def first(self, qid: str) -> int | None:
        """The position of a question's first pair (None: not walked, or it pools nothing)."""
        row = self.walk.row(qid)
        if row is None or self.start(row) == int(self._ends[row]):
            return None
        return self.start(row)

    def find(self, key: tuple[str, str]) -> int | None:
        """The position of a pair (question, chunk), or None."""
        row = self.walk.row(key[0])
        if row is None:
            return None
        chunks = [e.chunk for e in self.question(row)]
        return self.start(row) + chunks.index(key[1]) if key[1] in chunks else None


@dataclass(frozen=True, slots=True)
class Queue:
    """What the judging view walks: the people's queue (the pooled pairs) or, with ``verify``, the
    pairs a judge graded; in one of the orders of ``ragtui.core.judges.verify``."""

    verify: bool = False
    #: The judge whose grades are verified (and who disagrees with the rule); None: every judge.
    judge: str | None = None
    order: QueueOrder = "shown"

    @property
    def suggests(self) -> bool:
        """Whether the judge's grade may be shown: verifying, outside the sample for the estimate
        (people judge the sample on their own: a grade copied from the judge would hide its
        errors from the estimate)."""
        return self.verify and self.order != "sample"

    def title(self) -> list[str]:
        """``verify llm``, ``disagree first``: what the view's title says of the queue (nothing for
        the people's queue in the shown order; the sample order says its own progress)."""
        parts = []
        if self.verify:
            parts.append("verify" + (f" {visible_line(self.judge)}" if self.judge else ""))
        if self.order == "disagree":
            parts.append("disagree first")
        return parts


class JudgingSession:
    """The judging view's walk: every pooled pair of the questions shown, in their order, each
    question's unjudged pairs first; the pair on screen, and the pairs graded in this session.

    A digit grades the pair on screen and moves to the next unjudged pair; left and right move one
    pair without grading; undo goes back to the pair graded last.

    With a ``Queue`` that verifies, the walk is the pairs a judge graded among the questions shown
    (pooled or not), each question's unverified pairs first; a pair is judged (verified) once a
    person's grade applies. In the ``disagree`` order the pairs where the judge and the evidence
    rule differ come first, the largest difference first; in the ``sample`` order the walk is every
    pooled pair of the sample's questions, in the sample's order, judged once a person graded it."""

    def __init__(
        self,
        walk: JudgingWalk,
        start: tuple[str, str | None] | None = None,
        adjudicate: bool = False,
        queue: Queue | None = None,
        sample: HumanSample | None = None,
    ) -> None:
        """The session over ``walk``; it opens on ``start`` (question, chunk) if pooled, on the
        question's first unjudged pair when the chunk is None, else on the first unjudged pair.

        With ``adjudicate`` the session is the adjudication pass: the disputed pairs of the walk's
        questions (pooled or not), and a pair counts as judged once it has an adjudicated grade.
        ``queue`` says what is walked and in which order (``sample``: the questions of ``sample``,
        none without one)."""
        self.walk = walk
        self.adjudicate = adjudicate
        self.queue = queue if queue is not None and not adjudicate else Queue()
        ws = walk.ws
        self._applies = lambda label: ws.grades.label_status(label) is None
        #: The sample's questions walked in the ``sample`` order (those still in the golden set).
        self.sample_qids: list[str] = []
        #: Every pair, in the order the view visits them (the people's queue in the list's order:
        #: listed as the walk reaches them).
        self.pairs: Sequence[PoolEntry]
        if adjudicate:
            self.pairs = [
                _entry(walk, qid, cid)
                for qid in walk.qids
                for _, cid in ws.grades.disputed_pairs(qid)
            ]
        elif self.queue.order == "sample":
            known = ws.questions.by_id
            self.sample_qids = [
                q
                for q in (sample.questions if sample is not None else ())
                if q in known and not known[q].retired
            ]
            self.pairs = [
                e for qid in self.sample_qids for e in sorted(walk.pairs(qid), key=self.is_judged)
            ]
        elif self.queue.verify:
            self.pairs = [
                e
                for qid in walk.qids
                for e in sorted(self._judged_by_model(qid), key=self.is_judged)
            ]
        elif self.queue.order == "disagree":  # every pair ordered at once
            self.pairs = [
                e
                for qid in walk.qids
                for e in sorted(walk.pairs(qid), key=lambda e: walk.queue.is_judged(qid, e.chunk))
            ]
        else:
            self.pairs = WalkPairs(walk)
        if self.queue.order == "disagree" and not adjudicate:
            self.pairs = disagreeing_first(self.pairs, self.difference)
        #: In the sample order: whether each of the sample's questions is judged fully.
        self.sample_full = {qid: self.fully_judged(qid) for qid in self.sample_qids}
        # Each listed pair's position (a walk's pairs find their own: see ``_find``).
        self._index: dict[tuple[str, str], int] | None = None
        #: The position of the pair on screen.
        self.position = 0
        #: The positions graded in this session, in order (undo walks back through them).
        self.graded: list[int] = []
        # The judged count: each pair's judged state, their total, and the journal it was counted
        # from (its first line, its length, whose queue); where each question's pairs are.
        self._judged: list[bool] = []
        self._judged_total = 0
        self._counted: tuple[Label | None, int, str | None] | None = None
        self._first_of: dict[str, int] | None = None
        self._next_of: list[int] = []
        first_of_question = self._first(start[0]) if start is not None else None
        found_start = self._find((start[0], start[1])) if start and start[1] is not None else None
        if found_start is not None:
            self.position = found_start
        elif first_of_question is not None:
            found = self._next_unjudged(first_of_question - 1, wrap=True)
            self.position = found if found is not None else first_of_question
        else:
            self.position = self._next_unjudged(-1, wrap=True) or 0

    def _find(self, key: tuple[str, str]) -> int | None:
        """The position of a pair (question, chunk), or None."""
        if isinstance(self.pairs, WalkPairs):
            return self.pairs.find(key)
        if self._index is None:
            self._index = {e.key: i for i, e in enumerate(self.pairs)}
        return self._index.get(key)

    def _first(self, qid: str) -> int | None:
        """The position of a question's first pair, or None."""
        if isinstance(self.pairs, WalkPairs):
            return self.pairs.first(qid)
        return next((i for i, e in enumerate(self.pairs) if e.question == qid), None)

    @property
    def current(self) -> PoolEntry | None:
        """The pair on screen (None when the questions shown pool nothing)."""
        return self.pairs[self.position] if self.pairs else None

    def is_judged(self, entry: PoolEntry) -> bool:
        """Whether a pair has a hand grade that applies (in the adjudication pass: an adjudicated
        one; verifying and in the sample: any person's, the one that counts over the judge's)."""
        if self.adjudicate:
            return self.walk.ws.grades.adjudicated_grade(entry.question, entry.chunk) is not None
        if self.queue.verify or self.queue.order == "sample":
            return person_graded(self.walk.ws.grades.labels.pair(*entry.key), self._applies)
        return self.walk.queue.is_judged(entry.question, entry.chunk)

    def _judged_by_model(self, qid: str) -> list[PoolEntry]:
        """The pairs of a question the queue's judge graded: the pooled ones in pool order, then
        the others (beyond the pool) in corpus order."""
        ws = self.walk.ws
        judged = set(judged_chunks(ws.grades.labels, qid, self.queue.judge, self._applies))
        if not judged:
            return []
        pool = self.walk.pairs(qid)
        pooled = [e for e in pool if e.chunk in judged]
        rest = sorted(judged - {e.chunk for e in pooled}, key=lambda c: ws.passages.order.get(c, 0))
        return pooled + [PoolEntry(qid, cid, 0, ()) for cid in rest]

    def verdict(self, entry: PoolEntry) -> Label | None:
        """The judge's verdict of a pair (the queue's judge, else the latest of any judge's)."""
        pair = self.walk.ws.grades.labels.pair(*entry.key)
        return judge_verdict(pair, self.queue.judge, self._applies)

    def difference(self, entry: PoolEntry) -> int:
        """How far the judge's grade of a pair lies from the evidence rule's (0: no verdict)."""
        verdict = self.verdict(entry)
        if verdict is None:
            return 0
        return disagreement(verdict.grade, rule_grade(self.walk.ws, *entry.key))

    def keep_graded(self, before: JudgingSession) -> None:
        """Carry the pairs graded in an earlier session of the view over (undo goes back to them
        when this walk holds them)."""
        found = (self._find(before.pairs[i].key) for i in before.graded)
        self.graded = [i for i in found if i is not None]

    def sample_changed(self, questions: frozenset[str] | None) -> None:
        """Grades of ``questions`` (None: of any) changed: count the sample's questions judged
        fully again (only those: a key costs the pools of the questions it touched)."""
        full = self.sample_full
        touched = full.keys() if questions is None else full.keys() & questions
        for qid in list(touched):
            full[qid] = self.fully_judged(qid)

    def sample_progress(self, recorded: RecordedSample | None) -> str:
        """``sample 12/40 judged fully``: the sample's questions people judged fully."""
        if recorded is None:  # refused (the status line says why)
            return "sample: none"
        done = sum(self.sample_full.values())
        return f"sample {done}/{len(self.sample_full)} judged fully"

    def fully_judged(self, qid: str) -> bool:
        """Whether a person's grade applies to every pooled pair of a question (the estimate's
        "judged fully")."""
        labels = self.walk.ws.grades.labels
        return all(
            person_graded(labels.pair(qid, e.chunk), self._applies) for e in self.walk.pairs(qid)
        )

    def _next_unjudged(self, after: int, wrap: bool) -> int | None:
        order = chain(range(after + 1, len(self.pairs)), range(after + 1) if wrap else ())
        for i in order:
            if not self.is_judged(self.pairs[i]):
                return i
        return None

    def graded_current(self) -> int | None:
        """The pair on screen was just graded: remember it and move to the next unjudged pair
        (skipping this one, which the app may not have saved yet); returns the new position, or
        None when every pair is judged (the view stays)."""
        if not self.pairs:
            return None
        self.graded.append(self.position)
        nxt = self._next_unjudged_after(self.position)
        if nxt is not None:
            self.position = nxt
        return nxt

    def ahead(self) -> PoolEntry | None:
        """The pair a grade of the one on screen moves to (None: none is left)."""
        nxt = self._next_unjudged_after(self.position)
        return self.pairs[nxt] if nxt is not None else None

    def _next_unjudged_after(self, position: int) -> int | None:
        """The next unjudged pair after ``position``, wrapping round, never ``position`` itself
        (walked lazily: the next pair is most often the one after)."""
        graded = set(self.graded)
        for i in chain(range(position + 1, len(self.pairs)), range(position)):
            if i not in graded and not self.is_judged(self.pairs[i]):
                return i
        return None

    def move(self, step: int) -> None:
        """One pair forward or back (judged or not), without grading."""
        if self.pairs:
            self.position = max(0, min(len(self.pairs) - 1, self.position + step))

    def back_to_last_graded(self) -> bool:
        """Undo: back to the pair graded last in this session (False when there is none)."""
        if not self.graded:
            return False
        self.position = self.graded.pop()
        return True

    def judged_count(self) -> int:
        """Pairs with a hand grade that applies. Counted once, then again only for the questions
        whose labels changed since (the journal lines added since the last count): a key costs
        its question's pairs, not every pair (500,000 at 100,000 questions). A journal read again
        from its start, or another person's queue, counts every pair again."""
        pairs = self.pairs
        if isinstance(pairs, WalkPairs) and self.walk.ws.ranked.rankings is pairs.rankings:
            return self.walk.totals().judged  # the walk's own count: of the same pairs
        person = self.walk.queue.person
        seen = self._counted
        since, mark = labelled_since(
            self.walk.ws.grades.labels.history, seen[:2] if seen is not None else None
        )
        if since is None or seen is None or seen[2] != person:
            self._judged = [self.is_judged(e) for e in self.pairs]
            self._judged_total = sum(self._judged)
        else:
            for qid in since:
                for i in self._positions(qid):
                    now = self.is_judged(self.pairs[i])
                    self._judged_total += now - self._judged[i]
                    self._judged[i] = now
        self._counted = (*mark, person)
        return self._judged_total

    def _positions(self, qid: str) -> list[int]:
        """The positions of a question's pairs. The index is built when first needed: each
        question's first position and each position's next of the same question, in a dict and
        a list of numbers (a list a question, 100,000 of them, would be walked by every full
        collection of the garbage collector)."""
        if self._first_of is None:
            first_of: dict[str, int] = {}
            next_of = [-1] * len(self.pairs)
            for i in range(len(self.pairs) - 1, -1, -1):
                question = self.pairs[i].question
                next_of[i] = first_of.get(question, -1)
                first_of[question] = i
            self._first_of, self._next_of = first_of, next_of
        out = []
        i = self._first_of.get(qid, -1)
        while i >= 0:
            out.append(i)
            i = self._next_of[i]
        return out


def rule_grade(ws: Workspace, qid: str, cid: str) -> int | None:
    """The evidence rule's (or the qrels') grade of a pair, hand grades aside; None: ungraded."""
    base = ws.grades.base.get(qid, {})
    if cid in base:
        return base[cid]
    return ws.passages.own_grades.get(qid, {}).get(cid)


def _entry(walk: JudgingWalk, qid: str, cid: str) -> PoolEntry:
    """The pool entry of a pair, or one made for a pair outside the pool (graded in the result
    lists beyond k)."""
    for entry in walk.pairs(qid):
        if entry.chunk == cid:
            return entry
    return PoolEntry(qid, cid, 0, ())


# ---- the rows of a judge's verdict -----------------------------------------------------------------

#: The rows of a judge's reason shown when verifying (the rest is cut with …).
REASON_ROWS = 2


def verdict_rows(
    session: JudgingSession, width: int, blind: bool, scale: GradeScale
) -> tuple[Text, int | None]:
    """The rows verifying shows under the pair, each at most ``width`` cells, and the judge's grade
    they show (None: none shown): ``llm: grade 2 (answers fully) · also sim 1  ⏎ accepts · 0-9
    overrides`` and two rows of its reason; or, blind or in the sample for the estimate, that the
    grade and reason are hidden."""
    out = Text(no_wrap=True, overflow="ellipsis")
    entry = session.current
    if entry is None:
        return out, None
    hidden = "give your own (0-9)"
    if not session.queue.suggests:
        out.append(
            cut_end(f"sample for the estimate: the judge's grade is hidden; {hidden}", width), "dim"
        )
        return out, None
    if blind:
        out.append(
            cut_end(f"blind: the judge's grade and reason are hidden; {hidden}", width), "dim"
        )
        return out, None
    verdict = session.verdict(entry)
    if verdict is None or verdict.grade is None:
        out.append("no judge's grade on this pair", "dim")
        return out, None
    words = dict(scale).get(verdict.grade, "off the scale")
    line = f"{visible_line(verdict.judge)}: grade {verdict.grade} ({visible_line(words)})"
    others = session.walk.ws.grades.judge_verdicts(*entry.key)
    also = " · ".join(
        f"{visible_line(name)} {label.grade}"
        for name, label in sorted(others.items())
        if name != verdict.judge
    )
    line += f" · also {also}" if also else ""
    keys = "  ⏎ accepts · 0-9 overrides"
    out.append(cut_end(line, max(width - cell_len(keys), 1)), "bold")
    out.append(keys, "dim")
    for row in wrap_rows(verdict.reason, width, REASON_ROWS):
        out.append("\n")
        out.append(row, "italic")
    return out, verdict.grade


def wrap_rows(text: str, width: int, rows: int) -> list[str]:
    """``text`` (a model's reason: data) on at most ``rows`` rows of ``width`` cells: white space
    collapsed, control characters shown as escapes (a verdict's escape sequences were removed
    whole where it was read: ``labels.parse_label``, ``parse.clean_reason``), words kept whole
    where they fit (a longer one cut), the last row ending in ``…`` when more is left."""
    # Only what can be shown is read (escapes widen a reason; a reason is short, but it is data).
    limit = (width + 1) * rows * 2
    words = visible_line(" ".join(text[:limit].split())).split()
    out: list[str] = []
    line = ""
    i = 0
    more = len(text) > limit
    while i < len(words):
        if len(out) == rows:
            more = True
            break
        word = words[i]
        joined = f"{line} {word}" if line else word
        if cell_len(joined) <= width:
            line, i = joined, i + 1
        elif line:
            out.append(line)
            line = ""
        else:  # a word wider than a row: its head fills one
            piece = head_of(word, width) or word[:1]
            out.append(piece)
            words[i] = word[len(piece) :]
            i += 0 if words[i] else 1
    if line:
        if len(out) == rows:
            more = True
        else:
            out.append(line)
    if more and out:
        out[-1] = head_of(out[-1], width - 1) + "…"
    return out


def head_of(text: str, width: int) -> str:
    """The longest start of ``text`` within ``width`` cells."""
    out = ""
    for char in text:
        if cell_len(out + char) > width:
            break
        out += char
    return out


def cut_end(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its end replaced by ``…`` when cut."""
    if cell_len(text) <= width:
        return text
    out = ""
    for char in text:
        if cell_len(out + char) > width - 1:
            break
        out += char
    return out + "…"
