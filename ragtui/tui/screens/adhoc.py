"""Ad-hoc query mode: type any question, see every retriever's ranked list (BM25 at once, the others
as they arrive), choose evidence in a chunk, and ask the app to add the question to the golden set.

The screen only reads: the retrievers (their indexes and embeddings never change while it is open)
rank the text in workers (one for bm25, vector and hybrid, one per live retriever) that read what
the screen captured for them on the UI thread (``Rankers``), never the live workspace; the chunks a
live retriever brings go to the app (``ForeignChunks``), and adding goes to the app as
``AddQuestionRequested``. The first query that needs the embedding model loads it in
that worker: the vector and hybrid lists say so in their frames (``loading model… 4 s``, then
``embedding…``) and the status line in words, while bm25's list is already shown and every key
keeps working.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar, Protocol, cast, runtime_checkable

from rich.cells import cell_len
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
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.embeddings import TextEncoder
from ragtui.core.retrieval.encoder_process import BackgroundEmbedder, helper_on_use
from ragtui.core.text import visible, visible_line
from ragtui.core.workspace import Workspace
from ragtui.tui.ids import widget_id
from ragtui.tui.messages import AddQuestionRequested, ForeignChunks, Notice
from ragtui.tui.rankers import Rankers
from ragtui.tui.screens.host import Host
from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList, shorten_middle
from ragtui.tui.widgets.status_line import Status, StatusLine
from ragtui.tui.widgets.text import fmt_score, set_frame_text
from ragtui.tui.widgets.text_box import TextBox

#: The widest chunk column (cells): a longer id is shortened (``docs/…/cors.md#1``).
MAX_CHUNK_WIDTH = 48
#: The score column's width, and the narrowest text column worth drawing.
SCORE_WIDTH = 6
MIN_TEXT_WIDTH = 6
#: Seconds between two updates of a slow step's elapsed time (``loading model… 4 s``).
TICK_S = 0.5


class AdhocHost(Host, Protocol):
    """What the ad-hoc screen reads of the app: what any screen does, and the embedding models."""

    @property
    def embedder(self) -> TextEncoder | None:
        """The embedder tests inject (used for every model), else None."""
        ...

    @property
    def models(self) -> dict[str, TextEncoder]:
        """The models the app has loaded, by name."""
        ...


@runtime_checkable
class Loadable(Protocol):
    """A model read on first use (``Embedder``): whether it is in memory yet, and reading it now."""

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        ...

    def load(self) -> None:
        """Read the model now (seconds; a no-op once loaded)."""
        ...


def short_chunk_id(cid: str, width: int) -> str:
    """``cid`` in at most ``width`` cells, keeping its file name and ``#n``: the folders go first
    (``docs/…/cors.md#1``, then ``…/cors.md#1``), then the middle of the file name."""
    if cell_len(cid) <= width:
        return cid
    path, hash_mark, number = cid.rpartition("#")
    if not hash_mark:
        path, number = cid, ""
    end = path.rpartition("/")[2] + (hash_mark + number)
    folders = path.rpartition("/")[0]
    if folders:
        candidates = [f"…/{end}"]
        if "/" in folders:
            candidates.insert(0, f"{folders.split('/', 1)[0]}/…/{end}")
        for candidate in candidates:
            if cell_len(candidate) <= width:
                return candidate
    return shorten_middle(end, width)


class AdhocList(RowList):
    """One retriever's ranking of the typed query: rank, chunk id, score, text.

    The chunk column is as wide as the longest id shown (up to ``MAX_CHUNK_WIDTH``); the score is
    shown when the whole id fits beside it, the text when some room is left."""

    def __init__(self, ws: Workspace, retriever: str) -> None:
        """The list of ``retriever``."""
        super().__init__(id=widget_id("adhoc-list", retriever))
        self.ws = ws
        self.retriever = retriever
        self.ranking: Ranking = []

    def show(self, ranking: Ranking) -> None:
        """Fill the list."""
        self.ranking = ranking
        self._configure()
        self.set_row_count(len(ranking), 0)

    def watch_show_vertical_scrollbar(self) -> None:
        """A scrollbar came or went (the rows arrived): fit the columns to the width left."""
        self._configure()

    def _configure(self) -> None:
        """The columns for the width and the ids shown."""
        width = self.scrollable_content_region.width or 40
        rank = max(2, len(str(len(self.ranking))))
        longest = max((cell_len(visible_line(cid)) for cid, _ in self.ranking), default=0)
        need = min(max(longest, len("chunk")), MAX_CHUNK_WIDTH)
        room = width - rank - 1
        columns = [ColumnSpec("#", rank, "right")]
        if room - SCORE_WIDTH - 1 >= need:
            columns += [ColumnSpec("chunk", need), ColumnSpec("score", SCORE_WIDTH, "right")]
            rest = room - need - SCORE_WIDTH - 2
            if rest >= MIN_TEXT_WIDTH:
                columns.append(ColumnSpec("text", rest))
        else:
            # The id first: without the score, shortened only if it still does not fit.
            columns.append(ColumnSpec("chunk", max(4, min(need, room))))
        self.set_columns(columns)

    def row_cells(self, index: int) -> list[Cell]:
        """The cells of one ranked chunk."""
        cid, score = self.ranking[index]
        cells = []
        for column in self.columns:
            if column.name == "#":
                cells.append(Cell(str(index + 1)))
            elif column.name == "chunk":
                cells.append(Cell(short_chunk_id(visible_line(cid), column.width)))
            elif column.name == "score":
                cells.append(Cell(fmt_score(score)))
            else:
                chunk = self.ws.passages.by_id.get(cid)
                cells.append(
                    Cell(visible_line(" ".join(chunk.text.split())[:200]) if chunk else "")
                )
        return cells

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

    @dataclass
    class Step(Message):
        """The slow step some lists wait for: ``what`` in their frames (short: a list may be 22
        cells wide), ``says`` in the status line."""

        generation: int
        retrievers: tuple[str, ...]
        what: str
        says: str

    def __init__(self, ws: Workspace, retrievers: list[str]) -> None:
        """Ad-hoc search over ``ws`` with the ``retrievers`` that are ready."""
        super().__init__(id="adhoc")
        self.ws = ws
        self.retrievers = retrievers
        self.generation = 0
        #: The query the lists show.
        self.query_text = ""
        self._active = retrievers[0] if retrievers else ""
        #: Each waiting list's step and when it started (its frame shows the seconds since).
        self._steps: dict[str, tuple[str, float]] = {}
        #: The lists of the current query still to come.
        self._pending: set[str] = set()
        #: The chunks' texts indexed for mapping a live retriever's passages (the workers build it
        #: on first need; it depends on the chunks only, which never change).

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
        """Focus the query, follow the app's status line, and start reading the embedding model
        in its helper process (the first time the screen opens: a query will likely need it)."""
        self._start_helper()
        self.set_focus(self.query_one("#adhoc-query", Input))
        self.query_one(
            "#adhoc-chunk"
        ).border_title = "chunk (select evidence: shift+arrows, then F2)"
        status = self.query_one(StatusLine)
        self._host.status_changed.subscribe(self, status.show, immediate=True)
        status.show(Status("Type a question and press enter; tab to the lists."))
        self.set_interval(TICK_S, self._tick)

    @property
    def _host(self) -> AdhocHost:
        """The app, as this screen reads it."""
        return cast(AdhocHost, self.app)

    def list_for(self, retriever: str) -> AdhocList:
        """The list that shows RETRIEVER's ranking."""
        return self.query_one("#" + widget_id("adhoc-list", retriever), AdhocList)

    def say(self, text: str, error: bool = False) -> None:
        """A line in the status line (through the app, which owns it)."""
        self.post_message(Notice(text, error))

    # ---- searching ---------------------------------------------------------------------------

    def _pane(self, retriever: str) -> Vertical | None:
        """The frame around ``retriever``'s list."""
        pane = self.list_for(retriever).parent
        return pane if isinstance(pane, Vertical) else None

    def _set_step(self, retriever: str, what: str) -> None:
        """Show what ``retriever``'s list waits for in its frame ("" when it waits for nothing)."""
        if what:
            self._steps[retriever] = (what, time.monotonic())
        else:
            self._steps.pop(retriever, None)
        pane = self._pane(retriever)
        if pane is not None:
            set_frame_text(pane, subtitle=what)

    def _tick(self) -> None:
        """The seconds a slow step has taken so far, in its lists' frames."""
        now = time.monotonic()
        for name, (what, since) in self._steps.items():
            pane = self._pane(name)
            if pane is not None and now - since >= 1.0:
                set_frame_text(pane, subtitle=f"{what} {now - since:.0f} s")

    def _model(self) -> TextEncoder | None:
        """The embedding model behind the vector list (the one tests inject, else the app's loaded
        model of this name); None when the app does not know it."""
        host = self._host
        if host.embedder is not None:
            return host.embedder
        return host.models.get(self.ws.settings.model or "")

    def _start_helper(self) -> None:
        """Start the helper process that reads the embedding model, unless it runs, the model is
        read, or ``RAGTUI_PRELOAD_MODEL`` says otherwise (``encoder_process.helper_on_use``)."""
        model = self._model()
        if isinstance(model, BackgroundEmbedder) and helper_on_use(self.app.is_headless):
            model.start()

    @on(Input.Submitted, "#adhoc-query")
    def _query_submitted(self, event: Input.Submitted) -> None:
        """Rank the text in workers: BM25 first, the others as they come (a live retriever in a
        worker of its own, so it never waits for the model)."""
        event.stop()
        text = normalize_ws(event.value)
        if not text:
            self.say("Type a question first.", error=True)
            return
        self.generation += 1
        self.query_text = text
        self._pending = set(self.retrievers)
        for name in self.retrievers:
            self.list_for(name).show([])
            self._set_step(name, "searching…")
        self.say(f"searching {', '.join(self.retrievers)}…")
        live = [n for n in self.retrievers if n in self.ws.live.retrievers]
        rankers = Rankers.capture(self.ws, live)
        names = [n for n in self.retrievers if n not in live]
        self._start_helper()  # the model may have come after the screen opened
        self._search(text, self.generation, names, self._model(), rankers)
        for name in live:
            self.run_worker(
                partial(self._ask_live, rankers, name, text, self.generation),
                thread=True,
                exclusive=True,
                exit_on_error=False,
                group=f"adhoc-live-{name}",
            )

    @work(thread=True, exclusive=True, exit_on_error=False, group="adhoc")
    def _search(
        self,
        text: str,
        generation: int,
        names: list[str],
        model: TextEncoder | None,
        rankers: Rankers,
    ) -> None:
        """BM25 first (no model), then vector (loads the model the first time, embeds the text),
        then hybrid (fuses the two); anything else cannot rank typed text."""
        depth = rankers.depth
        found: dict[str, Ranking] = {}
        answered: set[str] = set()
        bm25, vector, hybrid = rankers.bm25, rankers.vector, rankers.hybrid
        if "bm25" in names and bm25 is not None:
            self._rank(generation, "bm25", lambda: bm25.search(text, depth), found, answered)
        embedded = tuple(n for n in names if n in ("vector", "hybrid"))
        if embedded and vector is not None:
            if isinstance(model, Loadable) and not model.loaded:
                # The first query that needs the model: import and read it (seconds), said so.
                self.post_message(
                    self.Step(
                        generation,
                        embedded,
                        "loading model…",
                        "loading the embedding model (the first query that needs it)",
                    )
                )
                try:
                    model.load()
                except Exception as exc:
                    message = (
                        exc.message
                        if isinstance(exc, InputError)
                        else f"{type(exc).__name__}: {exc}"
                    )
                    for name in embedded:
                        self.post_message(self.Ranked(generation, name, [], visible_line(message)))
                    return
            says = "embedding the query"
            if model is None:  # the app does not know whether the model is loaded yet
                says += " (the first query loads the model too)"
            self.post_message(self.Step(generation, embedded, "embedding…", says))
            self._rank(generation, "vector", lambda: vector.search(text, depth), found, answered)
        if "hybrid" in embedded and hybrid is not None and "vector" in found:
            lexical = found.get("bm25") or (bm25.search(text, depth) if bm25 else [])
            semantic = found["vector"]
            self._rank(
                generation, "hybrid", lambda: hybrid.fuse(lexical, semantic, depth), found, answered
            )
        for name in names:
            if name not in answered:
                why = "not available for typed text"
                if name == "hybrid" and "vector" in answered and "vector" not in found:
                    why = "needs the vector list, which failed"
                self.post_message(self.Ranked(generation, name, [], why))

    def _rank(
        self,
        generation: int,
        name: str,
        rank: Callable[[], Ranking],
        found: dict[str, Ranking],
        answered: set[str],
    ) -> None:
        """Run one ranking (in the worker) and post it, or why it failed."""
        answered.add(name)
        try:
            found[name] = rank()
        except Exception as exc:
            self.post_message(
                self.Ranked(generation, name, [], visible_line(f"{type(exc).__name__}: {exc}"))
            )
            return
        self.post_message(self.Ranked(generation, name, found[name]))

    def _ask_live(self, rankers: Rankers, name: str, text: str, generation: int) -> None:
        """One live retriever's ranking of the text (in a worker of its own), through its cache:
        its passages as ragtui judges them (an id or a text that is one of ragtui's chunks is that
        chunk), as in its golden rankings."""
        try:
            run = rankers.ask(name, text)
            if "" in run.failed or run.error:
                self.post_message(self.Ranked(generation, name, [], run.failed.get("", run.error)))
                return
            hits = rankers.passages_of(name, run)
        except Exception as exc:
            self.post_message(self.Ranked(generation, name, [], f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Ranked(generation, name, [(h.id, h.score) for h in hits], hits=hits))

    def on_adhoc_screen_step(self, message: Step) -> None:
        """Lists of the current query wait for a slow step: their frames say which."""
        if message.generation != self.generation:
            return
        for name in message.retrievers:
            if name in self._pending:
                self._set_step(name, message.what)
        shown = ", ".join(n for n in self.retrievers if n not in self._pending)
        self.say(
            f"{message.says} for {', '.join(message.retrievers)}…"
            + (f" {shown} shown; tab to a list." if shown else "")
        )

    def on_adhoc_screen_ranked(self, message: Ranked) -> None:
        """Show one list unless a newer query was typed."""
        if message.generation != self.generation:
            return
        if message.hits:
            # Chunks a live retriever brought with their text: the app keeps them (it owns the workspace).
            self.post_message(ForeignChunks(tuple(message.hits), message.retriever))
        table = self.list_for(message.retriever)
        table.show(message.ranking)
        self._pending.discard(message.retriever)
        self._set_step(message.retriever, "")
        pane = self._pane(message.retriever)
        if pane is not None:
            set_frame_text(pane, subtitle=message.error)
        if message.retriever == self._active:
            self._show_chunk()
        if self._pending:
            waiting = ", ".join(
                f"{n} ({self._steps[n][0].rstrip('…')})" if n in self._steps else n
                for n in self.retrievers
                if n in self._pending
            )
            self.say(f"lists for: {self.query_text}. Still to come: {waiting}…")
        else:
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
        chunk = self.ws.passages.by_id.get(cid) if cid else None
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
