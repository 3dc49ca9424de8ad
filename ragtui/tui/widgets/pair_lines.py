"""The judging view's origin rows of a pair, each one row of the view's width: where the chunk is
from; which retrievers ranked it and the grade that counts; who graded it.

What a person may see is decided here: in a person's own queue other people's grades (and a
judge's) are hidden until that person graded the pair (``show_others`` shows them), never when
adjudicating; blind hides the ranks and every grade but a person's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

from ragtui.core.text import visible_line
from ragtui.core.workspace import SOURCE_ADJUDICATED, SOURCE_HAND, Workspace
from ragtui.tui.judging_session import JudgingSession, cut_end, heading_row
from ragtui.tui.widgets.text import DISPUTED_MARK


@dataclass(frozen=True, slots=True)
class PairLines:
    """The origin rows of the session's pairs, as seen with ``blind`` and ``show_others``."""

    session: JudgingSession
    retrievers: list[str]
    blind: bool
    show_others: bool

    @property
    def ws(self) -> Workspace:
        """The workspace the pairs are from."""
        return self.session.walk.ws

    @property
    def adjudicate(self) -> bool:
        """The adjudication pass: every grade shown."""
        return self.session.adjudicate

    @property
    def person(self) -> str | None:
        """Whose queue this is when several people grade (None: one person, any hand grade counts)."""
        return self.session.walk.queue.person

    def others_hidden(self, qid: str, cid: str) -> bool:
        """Whether other people's grades of the pair (and the judges', unless verifying) are hidden:
        in a person's own queue until that person graded it, unless ``show_others``; never when
        adjudicating."""
        if self.adjudicate or self.person is None or self.show_others:
            return False
        return self.session.walk.queue.own_grade(qid, cid) is None

    def independent(self, qid: str, cid: str) -> bool | None:
        """What a grade given now records as ``independent``: in a person's own queue, whether no
        other person's grade (nor a judge's, when verifying) is on screen; None outside one."""
        if self.adjudicate or self.person is None:
            return None
        queue = self.session.queue
        shown = queue.verify and queue.suggests and not self.blind
        if shown and self.ws.grades.judge_verdicts(qid, cid):
            return False  # the judge's grade is on screen
        others = set(self.ws.grades.annotator_grades(qid, cid)) - {self.person}
        return not others or self.others_hidden(qid, cid) or self.blind

    def text(self, qid: str, cid: str, width: int) -> Text:
        """The origin lines, each one row of the view's width:

        ``pumping-stations.md#3  Pumping Stations › Test runs``
        ``bm25 #2 · vector – · hybrid #3  ·  grade 2 (hand)`` (blind: no ranks, no rule's grade)
        ``! annotators: alice 2 · bob 0  disputed: a digit settles it`` (when several graded)."""
        ws = self.ws
        chunk = ws.passages.by_id[cid]
        shown_id, place = heading_row(cid, chunk.doc, chunk.heading_path, width)
        out = Text(no_wrap=True, overflow="ellipsis")
        out.append(shown_id, "bold")
        if place:
            out.append("  " + place, "dim")
        grade, grade_style = self._grade_text(qid, cid)
        room = width - cell_len(grade) - 5
        out.append("\n")
        if self.blind:
            out.append("blind: the retrievers are hidden" if room >= 32 else "blind", "dim")
        else:
            out.append(self._ranks(qid, cid, room))
        out.append("  ·  ")
        out.append(grade, grade_style)
        annotators = self._annotators_line(qid, cid, width)
        if annotators is not None:
            out.append("\n")
            out.append_text(annotators)
        return out

    def _ranks(self, qid: str, cid: str, room: int) -> str:
        """``bm25 #2 · vector – · hybrid #3`` in ``room`` cells: when too long, only the retrievers
        that ranked the chunk (and ``5 others –``), then cut with ``…``."""
        ws = self.ws
        ranks: list[tuple[str, int | None]] = []
        for name in self.retrievers:
            ranked = [c for c, _ in ws.ranking(name, qid)]
            ranks.append((visible_line(name), ranked.index(cid) + 1 if cid in ranked else None))
        full = " · ".join(f"{n} #{r}" if r is not None else f"{n} –" for n, r in ranks)
        if cell_len(full) <= room:
            return full
        found = [f"{n} #{r}" for n, r in ranks if r is not None]
        others = len(ranks) - len(found)
        return cut_end(" · ".join(found + ([f"{others} others –"] if others else [])), max(room, 1))

    def _grade_text(self, qid: str, cid: str) -> tuple[str, str]:
        """The pair's grade, where it comes from, and its style: the grade that counts; blind,
        without the evidence rule's (or the qrels') grade; in a person's own queue, whether they
        graded it (blind: only their own grade)."""
        grade, source = self.ws.grades.grade_source(qid, cid)
        # A person's grade; a model's (``--grades human+model``) is hidden when blind, as the rule's.
        by_hand = source in (SOURCE_HAND, SOURCE_ADJUDICATED)
        style = (
            "bold" if grade is not None and source not in (None, self.ws.data.base_source) else ""
        )
        person = None if self.adjudicate else self.person
        if person is not None:
            own = self.session.walk.queue.own_grade(qid, cid)
            if self.blind:
                if own is None:
                    return f"unjudged by {visible_line(person)}", ""
                return f"grade {own} (yours)", "bold"
            if (
                own is None
                and self.others_hidden(qid, cid)
                and source
                not in (
                    None,
                    self.ws.data.base_source,
                )
            ):
                # Someone else's grade (or a judge's) counts: hidden until this person grades.
                grade, source = self.ws.grades.base_grade(qid, cid)
                style = ""
            text = "not graded" if grade is None else f"grade {grade} ({source})"
            if own is None and grade is not None:  # "not graded" says it already
                text += f" · unjudged by {visible_line(person)}"
            return text, style
        if grade is None or (self.blind and not by_hand):
            return ("no hand grade" if self.blind else "not graded"), ""
        return f"grade {grade} ({source})", style

    def _annotators_line(self, qid: str, cid: str, width: int) -> Text | None:
        """``! annotators: alice 2 · bob 0`` when several people graded the pair (in a person's
        queue: when someone else did), unless blind outside the adjudication pass; ``disputed`` when
        they differ, and in the adjudication pass ``disputed: a digit settles it``."""
        if self.blind and not self.adjudicate:
            return None
        ws = self.ws
        by_annotator = ws.grades.annotator_grades(qid, cid)
        person = None if self.adjudicate else self.person
        others = set(by_annotator) - ({person} if person is not None else set())
        if not (len(by_annotator) > 1 or (person is not None and others)):
            return None
        if self.others_hidden(qid, cid):
            count = len(others)
            hidden = Text(no_wrap=True, overflow="ellipsis")
            hidden.append(
                f"  {count} other grade{'s' if count > 1 else ''}: shown once you grade",
                "dim",
            )
            return hidden
        disputed = ws.grades.disputed(qid, cid)
        grades = " · ".join(
            f"{visible_line(a) or '(unnamed)'} {g}" for a, g in sorted(by_annotator.items())
        )
        tail = ""
        if disputed:
            tail = "  disputed: a digit settles it" if self.adjudicate else "  disputed"
        head = f"{DISPUTED_MARK if disputed else ' '} annotators: "
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(head + cut_end(grades, max(width - cell_len(head) - cell_len(tail), 1)))
        if tail:
            line.append(tail, "bold")
        return line
