"""The judging walk: the pooled pairs of the questions a screen shows, in its order, unjudged first.

The pool of a question is every shown retriever's top k (``ragtui.core.labelling.judging``); a
pair counts as judged when it has a hand grade that applies (when several people grade: the
current annotator's own grade, ``JudgingQueue.person``). The walk follows the question order the
main screen shows (its filter and its sort), so a person judges what they are looking at.

Also the one-row texts of the judging view: a chunk's heading path shortened to the width.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.cells import cell_len

from ragtui.core.labelling.judging import JudgedCount, JudgingQueue, PoolEntry, PoolOrder
from ragtui.core.text import visible_line
from ragtui.core.workspace import Workspace

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
        # Pools follow the rankings, which a walk outlives only unchanged: counted once, from the
        # rankings' arrays (no question is pooled for it).
        self._pooled: int | None = None

    @property
    def _position(self) -> dict[str, int]:
        """Each walked question's place in the walk, built when first asked (a walk over 100,000
        questions is rebuilt whenever the list changes, most often without being walked)."""
        if self._positions is None:
            self._positions = {qid: i for i, qid in enumerate(self.qids)}
        return self._positions

    def count(self, qid: str) -> JudgedCount:
        """Judged / pooled of one question."""
        return self.queue.count(qid)

    def totals(self) -> JudgedCount:
        """Judged / pooled over the walk's questions: only questions with hand labels can have a
        judged pair, so only those are pooled."""
        if self._pooled is None:
            self._pooled = int(self.queue.pooled_counts(self.qids).sum())
        position = self._position
        judged = sum(self.queue.count(q).judged for q in self.ws.labels.pairs if q in position)
        return JudgedCount(judged, self._pooled)

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


class JudgingSession:
    """The judging view's walk: every pooled pair of the questions shown, in their order, each
    question's unjudged pairs first; the pair on screen, and the pairs graded in this session.

    A digit grades the pair on screen and moves to the next unjudged pair; left and right move one
    pair without grading; undo goes back to the pair graded last."""

    def __init__(
        self,
        walk: JudgingWalk,
        start: tuple[str, str | None] | None = None,
        adjudicate: bool = False,
    ) -> None:
        """The session over ``walk``; it opens on ``start`` (question, chunk) if pooled, on the
        question's first unjudged pair when the chunk is None, else on the first unjudged pair.

        With ``adjudicate`` the session is the adjudication pass: the disputed pairs of the walk's
        questions (pooled or not), and a pair counts as judged once it has an adjudicated grade."""
        self.walk = walk
        self.adjudicate = adjudicate
        ws = walk.ws
        #: Every pair, in the order the view visits them.
        self.pairs: list[PoolEntry]
        if adjudicate:
            self.pairs = [
                _entry(walk, qid, cid) for qid in walk.qids for _, cid in ws.disputed_pairs(qid)
            ]
        else:
            self.pairs = [
                e
                for qid in walk.qids
                for e in sorted(walk.pairs(qid), key=lambda e: walk.queue.is_judged(qid, e.chunk))
            ]
        self._index = {e.key: i for i, e in enumerate(self.pairs)}
        #: The position of the pair on screen.
        self.position = 0
        #: The positions graded in this session, in order (undo walks back through them).
        self.graded: list[int] = []
        first_of_question = (
            next((i for i, e in enumerate(self.pairs) if e.question == start[0]), None)
            if start is not None
            else None
        )
        if start is not None and start[1] is not None and (start[0], start[1]) in self._index:
            self.position = self._index[(start[0], start[1])]
        elif first_of_question is not None:
            found = self._next_unjudged(first_of_question - 1, wrap=True)
            self.position = found if found is not None else first_of_question
        else:
            self.position = self._next_unjudged(-1, wrap=True) or 0

    @property
    def current(self) -> PoolEntry | None:
        """The pair on screen (None when the questions shown pool nothing)."""
        return self.pairs[self.position] if self.pairs else None

    def is_judged(self, entry: PoolEntry) -> bool:
        """Whether a pair has a hand grade that applies (in the adjudication pass: an adjudicated one)."""
        if self.adjudicate:
            return self.walk.ws.adjudicated_grade(entry.question, entry.chunk) is not None
        return self.walk.queue.is_judged(entry.question, entry.chunk)

    def _next_unjudged(self, after: int, wrap: bool) -> int | None:
        order = list(range(after + 1, len(self.pairs)))
        if wrap:
            order += list(range(after + 1))
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

    def _next_unjudged_after(self, position: int) -> int | None:
        """The next unjudged pair after ``position``, wrapping round, never ``position`` itself."""
        graded = set(self.graded)
        order: list[int] = [*range(position + 1, len(self.pairs)), *range(position)]
        for i in order:
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
        """Pairs with a hand grade that applies."""
        return sum(1 for e in self.pairs if self.is_judged(e))


def _entry(walk: JudgingWalk, qid: str, cid: str) -> PoolEntry:
    """The pool entry of a pair, or one made for a pair outside the pool (graded in the result
    lists beyond k)."""
    for entry in walk.pairs(qid):
        if entry.chunk == cid:
            return entry
    return PoolEntry(qid, cid, 0, ())
