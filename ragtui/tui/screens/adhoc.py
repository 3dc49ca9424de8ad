"""Ad-hoc query mode: type any question, see every retriever's ranked list at once, and add it to the
golden set with evidence selected in the chunk text (or typed) and slices (issue 8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import DescendantFocus
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static, TextArea

from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import AddedQuestion
from ragtui.core.retrieval.base import Ranking
from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.text import cell, fmt, fmt_score, one_line

if TYPE_CHECKING:
    from ragtui.tui.app import RagtuiApp


class AdhocList(DataTable[Text]):
    """One retriever's ranking of the typed query: rank, chunk id, score, snippet."""

    def __init__(self, retriever: str) -> None:
        """The list of ``retriever``."""
        super().__init__(id=f"adhoc-{retriever}", cursor_type="row", zebra_stripes=False)
        self.retriever = retriever

    def on_mount(self) -> None:
        """The columns."""
        self.add_column(Text("#", justify="right"), width=2, key="rank")
        self.add_column(Text("chunk"), width=22, key="chunk")
        self.add_column(Text("score", justify="right"), width=6, key="score")
        self.add_column(Text("text"), width=80, key="snippet")

    def show(self, ws: Workspace, ranking: Ranking) -> None:
        """Fill the list."""
        self.clear()
        for rank, (cid, score) in enumerate(ranking, start=1):
            chunk = ws.chunk_by_id.get(cid)
            self.add_row(
                cell(str(rank), justify="right"),
                cell(cid),
                cell(fmt_score(self.retriever, score), justify="right"),
                cell(one_line(chunk.text) if chunk else ""),
                key=cid,
            )

    @property
    def highlighted_chunk(self) -> str | None:
        """The chunk under the cursor."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value


class AdhocScreen(Screen[None]):
    """Type a question; every retriever's list; select evidence in the chunk text; add to the golden set."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", tooltip="Back to the main screen.", id="adhoc.close"),
        Binding(
            "f2",
            "use_selection",
            "Selection → evidence",
            tooltip="Use the text selected in the chunk view (shift+arrows, F6 line, F7 all) as evidence.",
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
    class Results(Message):
        """Every retriever's ranking of a query (or why it failed)."""

        generation: int
        query: str
        rankings: dict[str, Ranking]
        error: str = ""

    def __init__(self, ws: Workspace, retrievers: list[str]) -> None:
        """Ad-hoc search over ``ws`` with the shown ``retrievers``."""
        super().__init__(id="adhoc")
        self.ws = ws
        self.retrievers = retrievers
        self.generation = 0
        #: The query the lists show.
        self.query_text = ""
        #: The rankings shown, by retriever.
        self.rankings: dict[str, Ranking] = {}
        #: The last question added from this screen.
        self.added: AddedQuestion | None = None
        self._active = retrievers[0] if retrievers else ""

    @property
    def ragtui(self) -> RagtuiApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        """Query, the lists side by side, the chunk text, evidence and slices, a message line."""
        yield Input(
            placeholder="type any question, enter to search every retriever", id="adhoc-query"
        )
        with Horizontal(id="adhoc-lists"):
            for name in self.retrievers:
                with Vertical(classes="adhoc-pane") as pane:
                    pane.border_title = name
                    yield AdhocList(name)
        yield TextArea(
            "", read_only=True, soft_wrap=True, id="adhoc-chunk", show_line_numbers=False
        )
        with Horizontal(id="adhoc-form"):
            yield Input(
                placeholder="evidence: exact text of a chunk (or select above, F2)",
                id="adhoc-evidence",
            )
            yield Input(placeholder="slices, comma-separated", id="adhoc-slices")
        yield Static("", id="adhoc-message", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Focus the query."""
        self.set_focus(self.query_one("#adhoc-query", Input))
        self.query_one(
            "#adhoc-chunk"
        ).border_title = "chunk (select evidence: shift+arrows, then F2)"

    def say(self, text: str, error: bool = False) -> None:
        """Show a one-line message (errors also as a notification)."""
        message = self.query_one("#adhoc-message", Static)
        message.update(Text(text))
        message.set_class(error, "-error")
        if error:
            self.notify(text, severity="error", timeout=8, markup=False)

    # ---- searching ---------------------------------------------------------------------------

    @on(Input.Submitted, "#adhoc-query")
    def _query_submitted(self, event: Input.Submitted) -> None:
        """Search every retriever in a worker (vector search embeds the query)."""
        event.stop()
        text = " ".join(event.value.split())
        if not text:
            self.say("Type a question first.", error=True)
            return
        self.generation += 1
        self.say(f"searching {', '.join(self.retrievers)}…")
        self._search(text, self.generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="adhoc")
    def _search(self, text: str, generation: int) -> None:
        """Rank the text with every ready retriever (the workspace is only read)."""
        try:
            rankings = self.ws.search_adhoc(text)
        except Exception as exc:
            self.post_message(self.Results(generation, text, {}, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Results(generation, text, rankings))

    def on_adhoc_screen_results(self, message: Results) -> None:
        """Show the lists unless a newer query was typed."""
        if message.generation != self.generation:
            return
        if message.error:
            self.say(f"search failed: {message.error}", error=True)
            return
        self.query_text = message.query
        self.rankings = message.rankings
        for name in self.retrievers:
            table = self.query_one(f"#adhoc-{name}", AdhocList)
            table.show(self.ws, message.rankings.get(name, []))
            table.parent.border_subtitle = (
                "" if name in message.rankings else "not available for typed text"
            )  # type: ignore[union-attr]
        self.say(
            f"{len(message.rankings)} lists for: {message.query}. Tab to a list; F3 adds it to the golden set."
        )
        self._show_chunk()

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The chunk text follows the list's cursor."""
        table = event.data_table
        if isinstance(table, AdhocList) and (table.has_focus or table.retriever == self._active):
            self._active = table.retriever
            self._show_chunk()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """A list got the focus: the chunk text follows it."""
        if isinstance(event.widget, AdhocList):
            self._active = event.widget.retriever
            self._show_chunk()

    def _show_chunk(self) -> None:
        """Show the active list's highlighted chunk (plain text: never markup)."""
        if not self._active:
            return
        table = self.query_one(f"#adhoc-{self._active}", AdhocList)
        cid = table.highlighted_chunk
        area = self.query_one("#adhoc-chunk", TextArea)
        chunk = self.ws.chunk_by_id.get(cid) if cid else None
        area.load_text(chunk.text if chunk else "")
        area.border_title = (
            f"chunk {cid} (select evidence: shift+arrows, then F2)" if cid else "chunk"
        )

    # ---- adding ------------------------------------------------------------------------------

    def action_use_selection(self) -> None:
        """Copy the chunk view's selection into the evidence field."""
        selected = self.query_one("#adhoc-chunk", TextArea).selected_text
        if not selected.strip():
            self.say(
                "Select text in the chunk view first (focus it, shift+arrows), then F2.", error=True
            )
            return
        evidence = self.query_one("#adhoc-evidence", Input)
        evidence.value = " ".join(selected.split())
        self.say("Evidence taken from the selection; F3 adds the question.")

    @on(Input.Submitted, "#adhoc-evidence,#adhoc-slices")
    def _form_submitted(self, event: Input.Submitted) -> None:
        """Enter in the evidence or slices field adds the question."""
        event.stop()
        self.action_add_question()

    def action_add_question(self) -> None:
        """Validate and append the question (atomic), evaluate it, and show it in the main list."""
        query = self.query_text or " ".join(self.query_one("#adhoc-query", Input).value.split())
        evidence = self.query_one("#adhoc-evidence", Input).value.strip()
        slices = [
            s.strip() for s in self.query_one("#adhoc-slices", Input).value.split(",") if s.strip()
        ]
        if not query:
            self.say("Type the question first.", error=True)
            return
        if not evidence:
            self.say(
                "Give the evidence: exact text of a chunk (select it and press F2, or type it).",
                error=True,
            )
            return
        try:
            added = self.ragtui.add_question(query, evidence, slices)
        except InputError as exc:
            self.say(f"Not added: {exc.message}", error=True)
            return
        except OSError as exc:
            self.say(f"Not added: {exc}", error=True)
            return
        self.added = added
        values = " · ".join(f"{n} nDCG {fmt(m.ndcg)}" for n, m in added.metrics.items())
        self.say(
            f"Added {added.question.id} ({len(added.relevant_chunks)} relevant chunk(s)): {values}"
        )

    def action_close(self) -> None:
        """Back to the main screen."""
        self.dismiss(None)
