"""Ad-hoc query mode: type any question, see every retriever's ranked list (BM25 at once, the others
as they arrive), choose evidence in a chunk, and ask the app to add the question to the golden set.

The screen only reads: the retrievers (their indexes and embeddings never change while it is open)
rank the text in a worker; adding goes to the app as ``AddQuestionRequested``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import DescendantFocus
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, TextArea
from textual.widgets.text_area import Selection

from ragtui.core.data.golden import find_span, normalize_ws
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.live import run_live
from ragtui.core.text import visible, visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.ids import widget_id
from ragtui.tui.messages import AddQuestionRequested, ForeignChunks, Notice
from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList, shorten_middle
from ragtui.tui.widgets.status_line import Status, StatusLine
from ragtui.tui.widgets.text import fmt_score, set_frame_text
from ragtui.tui.widgets.text_box import TextBox

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp


class AdhocList(RowList):
    """One retriever's ranking of the typed query: rank, chunk id, score, text."""

    def __init__(self, ws: Workspace, retriever: str) -> None:
        """The list of ``retriever``."""
        super().__init__(id=widget_id("adhoc-list", retriever))
        self.ws = ws
        self.retriever = retriever
        self.ranking: Ranking = []

    def show(self, ranking: Ranking) -> None:
        """Fill the list."""
        self.ranking = ranking
        width = self.scrollable_content_region.width or 40
        chunk_width = min(22, max(8, width // 3))
        self.set_columns(
            [
                ColumnSpec("#", 2, "right"),
                ColumnSpec("chunk", chunk_width),
                ColumnSpec("score", 6, "right"),
                ColumnSpec("text", max(4, width - chunk_width - 11)),
            ]
        )
        self.set_row_count(len(ranking), 0)

    def row_cells(self, index: int) -> list[Cell]:
        """The cells of one ranked chunk."""
        cid, score = self.ranking[index]
        chunk = self.ws.chunk_by_id.get(cid)
        text = visible_line(" ".join(chunk.text.split())[:200]) if chunk else ""
        return [
            Cell(str(index + 1)),
            Cell(shorten_middle(visible_line(cid), self.columns[1].width)),
            Cell(fmt_score(score)),
            Cell(text),
        ]

    @property
    def highlighted_chunk(self) -> str | None:
        """The chunk under the cursor."""
        return self.ranking[self.cursor][0] if self.ranking else None


class AdhocScreen(Screen[None]):
    """Type a question; every retriever's list; choose evidence; ask the app to add the question."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", tooltip="Back to the main screen.", id="adhoc.close"),
        Binding(
            "f2",
            "use_selection",
            "Selection → evidence",
            tooltip="Use the text selected in the chunk view (shift+arrows) as evidence.",
            id="adhoc.use_selection",
        ),
        Binding(
            "f3",
            "add_question",
            "Add question",
            tooltip="Append the query, evidence and slices to questions.jsonl and evaluate it.",
            id="adhoc.add",
        ),
    ]

    @dataclass
    class Ranked(Message):
        """One retriever's ranking of a query (or why it failed)."""

        generation: int
        retriever: str
        ranking: Ranking
        error: str = ""
        hits: list[Hit] = field(default_factory=list)
        """A live retriever's hits (chunks it brought with their text are added on the UI thread)."""

    def __init__(self, ws: Workspace, retrievers: list[str]) -> None:
        """Ad-hoc search over ``ws`` with the ``retrievers`` that are ready."""
        super().__init__(id="adhoc")
        self.ws = ws
        self.retrievers = retrievers
        self.generation = 0
        #: The query the lists show.
        self.query_text = ""
        self._active = retrievers[0] if retrievers else ""

    def compose(self) -> ComposeResult:
        """Query, the lists side by side, the chunk text, evidence and slices, status."""
        yield TextBox(
            placeholder="type any question, enter to search every retriever", id="adhoc-query"
        )
        with Horizontal(id="adhoc-lists"):
            for name in self.retrievers:
                with Vertical(classes="adhoc-pane") as pane:
                    set_frame_text(pane, name)
                    yield AdhocList(self.ws, name)
        yield TextArea(
            "", read_only=True, soft_wrap=True, id="adhoc-chunk", show_line_numbers=False
        )
        with Horizontal(id="adhoc-form"):
            yield TextBox(
                placeholder="evidence: type words of the chunk (a ... b for a span), or select and F2",
                id="adhoc-evidence",
            )
            yield TextBox(placeholder="slices, comma-separated", id="adhoc-slices")
        yield StatusLine(id="adhoc-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Focus the query and follow the app's status line."""
        self.set_focus(self.query_one("#adhoc-query", Input))
        self.query_one(
            "#adhoc-chunk"
        ).border_title = "chunk (select evidence: shift+arrows, then F2)"
        status = self.query_one(StatusLine)
        cast("RagtuiApp", self.app).status_changed.subscribe(self, status.show, immediate=True)
        status.show(Status("Type a question and press enter; tab to the lists."))

    def list_for(self, retriever: str) -> AdhocList:
        """The list that shows RETRIEVER's ranking."""
        return self.query_one("#" + widget_id("adhoc-list", retriever), AdhocList)

    def say(self, text: str, error: bool = False) -> None:
        """A line in the status line (through the app, which owns it)."""
        self.post_message(Notice(text, error))

    # ---- searching ---------------------------------------------------------------------------

    @on(Input.Submitted, "#adhoc-query")
    def _query_submitted(self, event: Input.Submitted) -> None:
        """Rank the text with every retriever in a worker: BM25 first, the others as they come."""
        event.stop()
        text = normalize_ws(event.value)
        if not text:
            self.say("Type a question first.", error=True)
            return
        self.generation += 1
        self.query_text = text
        for name in self.retrievers:
            self.list_for(name).show([])
            pane = self.list_for(name).parent
            if isinstance(pane, Vertical):
                pane.border_subtitle = "searching…"
        self.say(f"searching {', '.join(self.retrievers)}…")
        self._search(text, self.generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="adhoc")
    def _search(self, text: str, generation: int) -> None:
        """BM25 first (no model), then vector (embeds the text), then hybrid (fuses the two)."""
        ws = self.ws
        depth = ws.settings.depth
        found: dict[str, Ranking] = {}
        for name in self.retrievers:
            try:
                if name == "bm25" and ws.bm25 is not None:
                    found[name] = ws.bm25.search(text, depth)
                elif name == "vector" and ws.vector is not None:
                    found[name] = ws.vector.search(text, depth)
                elif name in ws.live:
                    run = run_live(ws.live[name], [("", text)], depth, root=ws.settings.cache_dir)
                    if "" in run.failed or run.error:
                        self.post_message(
                            self.Ranked(generation, name, [], run.failed.get("", run.error))
                        )
                        continue
                    hits = run.hits.get("", [])
                    found[name] = [(h.id, h.score) for h in hits]
                    self.post_message(self.Ranked(generation, name, found[name], hits=hits))
                    continue
                elif name == "hybrid" and ws.hybrid is not None:
                    bm25 = found.get("bm25") or (ws.bm25.search(text, depth) if ws.bm25 else [])
                    vector = found.get("vector") or (
                        ws.vector.search(text, depth) if ws.vector else []
                    )
                    found[name] = ws.hybrid.fuse(bm25, vector, depth)
                else:
                    self.post_message(
                        self.Ranked(generation, name, [], "not available for typed text")
                    )
                    continue
            except Exception as exc:
                self.post_message(self.Ranked(generation, name, [], f"{type(exc).__name__}: {exc}"))
                continue
            self.post_message(self.Ranked(generation, name, found[name]))

    def on_adhoc_screen_ranked(self, message: Ranked) -> None:
        """Show one list unless a newer query was typed."""
        if message.generation != self.generation:
            return
        if message.hits:
            # Chunks a live retriever brought with their text: the app keeps them (it owns the workspace).
            self.post_message(ForeignChunks(tuple(message.hits), message.retriever))
        table = self.list_for(message.retriever)
        table.show(message.ranking)
        pane = table.parent
        if isinstance(pane, Vertical):
            set_frame_text(pane, subtitle=message.error)
        if message.retriever == self._active:
            self._show_chunk()
        self.say(
            f"lists for: {self.query_text}. Tab to a list; choose evidence; F3 adds the question."
        )

    @on(RowList.CursorMoved)
    def _row_highlighted(self, event: RowList.CursorMoved) -> None:
        """The chunk text follows the active list's cursor."""
        table = event.row_list
        if isinstance(table, AdhocList) and (table.has_focus or table.retriever == self._active):
            self._active = table.retriever
            self._show_chunk()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """A list got the focus: the chunk text follows it."""
        if isinstance(event.widget, AdhocList):
            self._active = event.widget.retriever
            self._show_chunk()

    def _show_chunk(self) -> None:
        """Show the active list's highlighted chunk (plain text, control characters visible)."""
        if not self._active:
            return
        cid = self.list_for(self._active).highlighted_chunk
        area = self.query_one("#adhoc-chunk", TextArea)
        chunk = self.ws.chunk_by_id.get(cid) if cid else None
        area.load_text(visible(chunk.text) if chunk else "")
        set_frame_text(
            area, f"chunk {cid} (select evidence: shift+arrows, then F2)" if cid else "chunk"
        )

    # ---- choosing evidence ----------------------------------------------------------------------

    @on(Input.Changed, "#adhoc-evidence")
    def _evidence_typed(self, event: Input.Changed) -> None:
        """Typed words select the matching span in the chunk shown."""
        area = self.query_one("#adhoc-chunk", TextArea)
        span = find_span(area.text, event.value) if event.value.strip() else None
        if span is None:
            return
        area.selection = Selection(_location(area.text, span[0]), _location(area.text, span[1]))

    def action_use_selection(self) -> None:
        """Copy the chunk view's selection into the evidence field."""
        selected = self.query_one("#adhoc-chunk", TextArea).selected_text
        if not selected.strip():
            self.say(
                "Select text in the chunk view first (focus it, shift+arrows), then F2.", error=True
            )
            return
        evidence = self.query_one("#adhoc-evidence", Input)
        with evidence.prevent(Input.Changed):
            evidence.value = normalize_ws(selected)
        self.say("Evidence taken from the selection; F3 adds the question.")

    @on(Input.Submitted, "#adhoc-evidence,#adhoc-slices")
    def _form_submitted(self, event: Input.Submitted) -> None:
        """Enter in the evidence or slices field adds the question."""
        event.stop()
        self.action_add_question()

    def _evidence(self) -> str:
        """The evidence to add: the text the typed words select in the chunk shown (its exact
        words), else what was typed."""
        typed = self.query_one("#adhoc-evidence", Input).value.strip()
        area = self.query_one("#adhoc-chunk", TextArea)
        span = find_span(area.text, typed) if typed else None
        return normalize_ws(area.text[span[0] : span[1]]) if span else normalize_ws(typed)

    def action_add_question(self) -> None:
        """Ask the app to append the question (validated under the golden set's lock) and evaluate it."""
        query = self.query_text or normalize_ws(self.query_one("#adhoc-query", Input).value)
        evidence = self._evidence()
        slices = tuple(
            s.strip() for s in self.query_one("#adhoc-slices", Input).value.split(",") if s.strip()
        )
        if not query:
            self.say("Type the question first.", error=True)
            return
        if not evidence:
            self.say(
                "Give the evidence: words of a chunk (or select them and press F2).", error=True
            )
            return
        self.post_message(AddQuestionRequested(query, (evidence,), slices))

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss(None)


def _location(text: str, offset: int) -> tuple[int, int]:
    """The (row, column) of character ``offset`` in ``text``."""
    row = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    return row, column
