"""What keeps the app fast: the question list never measures cells (10,000 rows), the readiness signal
the start-up benchmark waits on, and the embedding progress line (rate and time left)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from rich.color import Color
from textual.scrollbar import ScrollBar

from ragtui.core.settings import Settings
from ragtui.tui import app as app_module
from ragtui.tui.app import RagtuiApp
from ragtui.tui.widgets.formatting import format_seconds
from ragtui.tui.widgets.question_list import QuestionList
from tests.app.test_tui import (
    WIDE,
    FakeEmbedder,
    labels,
    main_screen,
    make_app,
    metric_rows,
    run_async,
    wait_ready,
)

#: Questions in the large golden set (the mini questions repeated under new ids).
MANY = 2000


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (fake vectors never reach the shared one)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


@pytest.fixture
def many_settings(tui_settings: Settings) -> Settings:
    """The mini corpus with MANY questions."""
    golden = Path(tui_settings.golden)
    source = [
        json.loads(x) for x in (golden / "questions.jsonl").read_text().splitlines() if x.strip()
    ]
    lines = (json.dumps({**source[i % len(source)], "id": f"s{i:04d}"}) + "\n" for i in range(MANY))
    (golden / "questions.jsonl").write_text("".join(lines))
    return dataclasses.replace(tui_settings)


@run_async
async def test_question_list_draws_only_visible_rows(
    many_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 rows: only the visible rows are ever asked for their cells, a grade redraws one row, and
    End still reaches the last row."""
    asked: list[int] = []
    original = QuestionList.row_cells

    def counting(self: QuestionList, index: int) -> object:
        asked.append(index)
        return original(self, index)

    monkeypatch.setattr(QuestionList, "row_cells", counting)
    app = make_app(many_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        questions = main_screen(app).question_list
        assert questions.row_count == MANY
        assert questions.virtual_size.height == MANY + 1  # the header row
        visible = questions.size.height
        assert set(asked) <= set(range(visible)), "only the first screenful was drawn"
        asked.clear()
        await pilot.press("tab", "0")  # m01's copy s0000: its only relevant chunk graded 0
        await pilot.pause()
        assert labels(many_settings)[-1]["question"] == "s0000"
        assert metric_rows(app)[("bm25", "s0000")][4] == "0.000"
        assert set(asked) == {0}, "the grade redrew s0000's row only"
        asked.clear()
        await pilot.press("shift+tab", "end")
        await pilot.pause()
        assert main_screen(app).current_qid == f"s{MANY - 1:04d}"
        assert questions.scroll_offset.y > MANY - 50
        assert set(asked) <= set(range(MANY - visible, MANY)), "End drew the last screenful only"


class GatedEmbedder(FakeEmbedder):
    """The fake embedder, held back until the test opens its gate (as a slow first embedding is)."""

    def __init__(self) -> None:
        """A closed gate."""
        super().__init__()
        self.gate = threading.Event()

    def encode(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Wait for the gate, then embed as the fake embedder does."""
        assert self.gate.wait(60), "the test never opened the gate"
        return super().encode(texts, progress)


@run_async
async def test_full_screen_signal_waits_for_every_list_painted(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``full_screen_after`` (what the start-up benchmark waits on) stays unset while BM25 alone is
    shown; it is set once, after every retriever is ready and a paint has followed, with every result
    list and every retriever's metric row filled in."""
    paints = [0]
    display = RagtuiApp._display

    def counting_display(app: RagtuiApp, screen: object, renderable: object) -> None:
        # Textual hands every screen update to App._display (it writes nothing when headless).
        if renderable is not None:
            paints[0] += 1
        display(app, screen, renderable)  # type: ignore[arg-type]

    at_ready: list[int] = []
    at_signal: list[tuple[int, bool, dict[str, int], set[tuple[str, str]]]] = []

    def recorder(name: str) -> property:
        """A property storing the attribute ``name`` that records the screen when it is first set."""

        def get(app: RagtuiApp) -> float | None:
            return app.__dict__.get(name)

        def record(app: RagtuiApp, value: float | None) -> None:
            # What the screen holds at the moment the value is set, not when the test next looks.
            if value is not None and name == "ready_after":
                at_ready.append(paints[0])
            elif value is not None:
                screen = main_screen(app)
                rows = {r: screen.result_list(r).row_count for r in app.retrievers}
                at_signal.append((paints[0], app.is_ready, rows, set(metric_rows(app))))
            app.__dict__[name] = value

        return property(get, record)

    monkeypatch.setattr(RagtuiApp, "_display", counting_display)
    monkeypatch.setattr(RagtuiApp, "ready_after", recorder("ready_after"), raising=False)
    monkeypatch.setattr(
        RagtuiApp, "full_screen_after", recorder("full_screen_after"), raising=False
    )
    embedder = GatedEmbedder()
    app = make_app(tui_settings, embedder)
    async with app.run_test(size=WIDE) as pilot:
        try:
            for _ in range(200):
                await pilot.pause()
                if app.workspace is not None and main_screen(app).result_list("bm25").row_count:
                    break
            else:
                raise AssertionError("BM25's list was never shown")
            # BM25 is on screen, the vector retriever is still embedding: no full screen yet.
            assert main_screen(app).result_list("vector").row_count == 0
            assert app.ready_after is None and app.full_screen_after is None and at_signal == []
            released = time.monotonic() - app.started
        finally:
            embedder.gate.set()
        await wait_ready(pilot)
        for _ in range(50):
            if app.full_screen_after is not None:
                break
            await pilot.pause()
        assert app.full_screen_after is not None and app.full_screen_after > released
        assert len(at_ready) == 1 and len(at_signal) == 1
        painted, ready, rows, metric_keys = at_signal[0]
        assert painted > at_ready[0], "the signal came before the screen was painted again"
        assert ready
        assert set(rows) == {"bm25", "vector", "hybrid"} and all(rows.values()), rows
        assert {(r, "all") for r in rows} <= metric_keys, metric_keys


@run_async
async def test_embedding_progress_shows_rate_and_time_left(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The progress line: texts done of all, texts per second from the first batch on, and time left."""
    clock = [100.0]
    monkeypatch.setattr(app_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        label = screen.query_one("#progress-label")

        def report(done: int, total: int) -> None:
            screen.progress_row.show(done, total, app._rate(done, total))

        report(0, 1000)
        assert "loading the embedding model (1000 texts to embed)" in str(label.content)
        report(100, 1000)
        assert str(label.content) == "embedding 100/1000 texts"
        clock[0] += 2.0
        report(200, 1000)
        assert str(label.content) == "embedding 200/1000 texts · 50 texts/s · 16 s left"
        clock[0] += 8.0
        report(300, 1000)
        assert str(label.content) == "embedding 300/1000 texts · 20 texts/s · 35 s left"
        report(300, 100_000)
        assert "1 min" not in str(label.content) and "left" in str(label.content)
        screen.progress_row.hide()
        await pilot.pause()
        assert not screen.query_one("#progress-row").display
    assert format_seconds(185) == "3 min 05 s"


@run_async
async def test_lower_k_restyles_ranks(tui_settings: Settings) -> None:
    """k 3 -> 1: a rank of 2 or 3 keeps its digits but turns from 'hit' to 'late'."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        questions = main_screen(app).question_list
        names = [c.name for c in questions.columns]
        retrievers = [n for n in ("bm25", "vector", "hybrid") if n in names]
        assert retrievers, names

        def ranks() -> dict[tuple[int, str], tuple[str, str]]:
            """(row, retriever) -> (text, style) of the rank cells holding 2 or 3."""
            out = {}
            for index in range(questions.row_count):
                cells = questions.row_cells(index)
                for name in retrievers:
                    cell = cells[names.index(name)]
                    if cell.text in ("2", "3"):
                        out[(index, name)] = (cell.text, cell.style)
            return out

        before = ranks()
        assert before, "the mini set has no rank 2 or 3"
        assert all(style == "hit" for _, style in before.values())
        await pilot.press("minus", "minus")
        await pilot.pause()
        after = ranks()
        assert after.keys() == before.keys()
        assert all(after[key] == (before[key][0], "late") for key in after)


@run_async
async def test_row_list_redraws_only_the_changed_row():
    """refresh_row(i) asks for row i's cells again and no other row's; the other lines stay."""
    from textual.app import App, ComposeResult

    from ragtui.tui.widgets.row_list import Cell, ColumnSpec, RowList

    values = ["-"] * 4
    asked: list[int] = []

    class Rows(RowList):
        def row_cells(self, index: int) -> list[Cell]:
            asked.append(index)
            return [Cell(f"r{index}"), Cell(values[index])]

    class TableApp(App[None]):
        def compose(self) -> ComposeResult:
            yield Rows()

    app = TableApp()
    async with app.run_test(size=(40, 8)) as pilot:
        table = app.query_one(Rows)
        table.set_columns([ColumnSpec("id", 4), ColumnSpec("grade", 5)])
        table.set_row_count(4)
        await pilot.pause()

        def line(y: int) -> str:
            return table.render_line(y).text

        before = [line(y) for y in range(1, 5)]
        asked.clear()
        values[2] = "2"
        table.refresh_row(2)
        after = [line(y) for y in range(1, 5)]
        assert "2" in after[2].split()[1]
        assert after[:2] == before[:2] and after[3] == before[3]
        assert set(asked) == {2}, "only the changed row is rendered again"


@run_async
async def test_down_lays_nothing_out_once_the_tallest_question_was_shown(
    tui_settings: Settings, monkeypatch
) -> None:
    """Issue 34: the question bar keeps the height of the tallest question shown at this width, so
    moving through the list lays the screen out again only when a question needs more rows than any
    before (a layout cost about 12 ms at 120x40, on 4 Downs in 10 when the bar followed each
    question's height); the second pass over the list lays out nothing, and every question's text
    is whole in the bar."""
    from textual.screen import Screen

    layouts = []
    original = Screen._refresh_layout

    def counted(self, *args, **kwargs):
        layouts.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    app = make_app(tui_settings)
    async with app.run_test(size=(70, 40)) as pilot:  # the questions wrap to 1 to 3 rows
        await wait_ready(pilot)
        screen = app.main_screen
        count = len(screen.visible_ids)
        bar = screen.query_one("#question-bar")
        heights = []
        for _ in range(count - 1):
            await pilot.press("down")
            await pilot.pause()
            heights.append(bar.size.height)
        assert heights == sorted(heights), "the bar never shrank while moving"
        await pilot.press("home")
        await pilot.pause()
        layouts.clear()
        for _ in range(count - 1):
            await pilot.press("down")
            await pilot.pause()
            text = str(bar.content)
            needed = -(-len(text) // max(1, bar.content_region.width))  # at least, wrapped
            cap = int(bar.styles.max_height.value) if bar.styles.max_height else needed
            assert bar.size.height >= min(needed, cap)
        assert layouts == [], f"{len(layouts)} layouts on the second pass"


@run_async
async def test_a_move_in_the_wide_layout_redraws_no_hidden_widget(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: the compact layout's tabs are hidden in the wide layout. Given new text on every
    Down, they made the compositor place every widget on the screen again at the next paint (29
    Downs in 40). Their text now waits until they show, and then says the current question's.
    (The test fails with the tabs given their text while hidden.)"""
    from textual._compositor import Compositor

    hidden: list[str] = []
    original = Compositor.update_widgets

    def counted(self, widgets):  # type: ignore[no-untyped-def]
        hidden.extend(type(w).__name__ for w in widgets - self.visible_widgets.keys())
        return original(self, widgets)

    monkeypatch.setattr(Compositor, "update_widgets", counted)
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        await pilot.pause()
        hidden.clear()
        for _ in range(len(screen.visible_ids) - 1):
            await pilot.press("down")
            await pilot.pause()
        # (A list whose rows all fit has its scrollbars off screen: Textual refreshes them when
        # the rows change, which this test leaves out.)
        assert [name for name in hidden if "ScrollBar" not in name] == []
        # The compact layout: the tabs show, with the ranks of the question on screen.
        qid, status = screen.current_qid, app.controller.retriever_status
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert screen.results.compact
        for name in app.retrievers:
            rank = screen.results.first_rank_text(app.workspace, qid, status, name)
            assert f"{name} {rank}" in str(screen.results.tab(name).content)


async def laid_out_ahead(pilot, view, cid: str):  # type: ignore[no-untyped-def]
    """The chunk view's text of chunk ``cid``, once laid out ahead at the view's width."""
    for _ in range(200):
        kept = [body for key, body in view._kept.items() if key[0] == cid]  # the latest last
        if kept and view._laid[0] in kept[-1]._starts:
            return kept[-1]
        await pilot.pause(0.01)
    raise AssertionError(f"chunk {cid} was never laid out ahead")


def count_wraps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The paragraphs measured (wrapped) from now on, by identity."""
    from ragtui.tui.widgets import paragraphs

    wrapped: list[int] = []
    original = paragraphs.paragraph_height

    def counted(widget, paragraph, width):  # type: ignore[no-untyped-def]
        wrapped.append(id(paragraph))
        return original(widget, paragraph, width)

    monkeypatch.setattr(paragraphs, "paragraph_height", counted)
    return wrapped


async def judging_screen(pilot):  # type: ignore[no-untyped-def]
    """Once the app is ready, the judging view ``j`` opens."""
    await wait_ready(pilot)
    await pilot.press("j")
    await pilot.pause()
    return pilot.app.screen


def count_draws(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The paragraphs drawn (rendered to lines) from now on, by identity."""
    from ragtui.tui.widgets import paragraphs

    drawn: list[int] = []
    original = paragraphs._render

    def counted(widget, paragraph, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append(id(paragraph))
        return original(widget, paragraph, *args, **kwargs)

    monkeypatch.setattr(paragraphs, "_render", counted)
    return drawn


def under_the_scrollbar(view) -> list[str]:  # type: ignore[no-untyped-def]
    """The text a chunk view draws past the width it shows (hidden under its scrollbar)."""
    visible = view.scrollable_content_region.width
    lines = (view.render_line(y) for y in range(view.scrollable_content_region.height))
    return [cut for line in lines if (cut := line.crop(visible).text.strip())]


@run_async
async def test_a_move_lays_out_the_question_the_next_key_reaches(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: once Down (or PageDown) is drawn, the question the same key reaches next is laid
    out ahead: the active list's first chunk is wrapped at the view's width (and its first lines
    drawn) and the rows' passages are found. The next key shows that very text and wraps none of
    its paragraphs again; a move up prepares the question above."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        ws, questions, view = app.workspace, screen.question_list, screen.chunk_view
        assert ws is not None
        wrapped = count_wraps(monkeypatch)
        for key, step in (("down", 1), ("down", 1), ("up", -1)):
            await pilot.press(key)
            qid = questions.qid_at(questions.cursor + step)
            assert qid is not None
            ahead = await laid_out_ahead(
                pilot, view, ws.ranking(screen.active_retriever, qid)[0][0]
            )
            wrapped.clear()
            await pilot.press(key)
            await pilot.pause()
            assert view._body is ahead, f"{key}: the text laid out ahead is the one shown"
            body = {id(p) for p in ahead.paragraphs}
            assert not body & set(wrapped), f"{key}: a paragraph of the text was wrapped again"


@run_async
async def test_judging_digits_lay_out_only_a_taller_question(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: in the judging view the chunk's scrollbar stays (a chunk that fits after one
    that did not made it go, and the screen was laid out again: 17 digits in 30), drawn as its
    track alone while the chunk fits; the question bar keeps the height of the tallest question
    shown. Every layout request while grading through the pairs is the question bar growing."""
    from textual.widget import Widget

    from ragtui.tui.widgets.chunk_view import ChunkView, _TrackRender
    from ragtui.tui.widgets.results_pane import QuestionBar

    requests: list[str] = []
    original = Widget.refresh

    def counted(self, *regions, layout=False, **kwargs):  # type: ignore[no-untyped-def]
        if (layout and isinstance(self, ChunkView | QuestionBar)) or (
            layout and self.name == "vertical"
        ):
            requests.append(type(self).__name__)
        return original(self, *regions, layout=layout, **kwargs)

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        view = await judging_screen(pilot)
        bar, chunk = view.query_one(QuestionBar), view.query_one(ChunkView)
        chunk.styles.height = 4  # 3 rows: some chunks fit in it, some do not
        await pilot.pause()
        monkeypatch.setattr(Widget, "refresh", counted)
        fits = set()
        for i in range(20):
            tallest = bar._tallest
            requests.clear()
            await pilot.press(str(i % 3))
            await pilot.pause()
            grew = bar._tallest != tallest
            assert set(requests) == ({"QuestionBar"} if grew else set()), f"digit {i}: {requests}"
            fits.add(chunk.virtual_size.height <= chunk.scrollable_content_region.height)
            # A chunk that fits is laid beside the scrollbar's track too, not under it.
            assert under_the_scrollbar(chunk) == [], f"digit {i}"
        assert fits == {True, False}, "the walk met chunks that fit and chunks that do not"
    # No thumb while everything is in view; a thumb when there is more.
    colours = {"back_color": Color.parse("#111111"), "bar_color": Color.parse("#ff0000")}
    fit = _TrackRender.render_bar(size=10, virtual_size=3, window_size=10, **colours)
    more = _TrackRender.render_bar(size=10, virtual_size=30, window_size=10, **colours)
    assert not any(s.style and s.style.reverse for s in fit.segments)
    assert any(s.style and s.style.reverse for s in more.segments)


@run_async
async def test_main_chunk_view_keeps_its_scrollbar(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: the main screen's chunk view keeps its scrollbar too (drawn as its track alone
    while the chunk fits): moving between questions whose chunks fit and whose chunks do not asks
    for no layout from the view or its scrollbar, and the first screen is not laid out once more
    when the first chunk turns out longer than the view."""
    from textual.widget import Widget

    from ragtui.tui.widgets.chunk_view import ChunkView

    requests: list[str] = []
    original = Widget.refresh

    def counted(self, *regions, layout=False, **kwargs):  # type: ignore[no-untyped-def]
        if layout and (isinstance(self, ChunkView) or isinstance(self.parent, ChunkView)):
            requests.append(type(self).__name__)
        return original(self, *regions, layout=layout, **kwargs)

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        chunk = screen.chunk_view
        assert chunk.show_vertical_scrollbar, "the scrollbar is there from the first screen"
        chunk.styles.height = 8  # 6 rows: some chunks fit in it, some do not
        await pilot.pause()
        monkeypatch.setattr(Widget, "refresh", counted)
        fits = set()
        for _ in range(len(screen.visible_ids) - 1):
            await pilot.press("down")
            await pilot.pause()
            fits.add(chunk.virtual_size.height <= chunk.scrollable_content_region.height)
            assert chunk.show_vertical_scrollbar
            assert under_the_scrollbar(chunk) == []
        assert requests == [], f"layouts asked for: {requests}"
        assert fits == {True, False}, "the walk met chunks that fit and chunks that do not"


@run_async
async def test_the_first_paint_shows_the_lists_at_their_width_and_the_chunk(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: with the workspace loaded before the screen is laid out (as ``ragtui`` loads it
    while the app is imported), the first paint shows every list's columns for its width and the
    chunk's text. The lists chose their columns and the chunk view laid its text out on the Resize
    event, which comes after the paint: the first screen showed the columns of a 40-cell list and
    no chunk for a frame (40 ms at 120x40), then the screen as it is."""
    from textual.app import App

    from ragtui.core.workspace import Workspace
    from ragtui.tui.screens.main import MainScreen

    painted: list[tuple[bool, bool]] = []  # (every list's columns were its width's, chunk shown)
    original = App._display

    def display(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        screen = self.screen
        if isinstance(screen, MainScreen) and screen.question_list.size.width and not painted:
            lists = [screen.question_list, *(screen.result_list(n) for n in screen.retrievers)]
            drawn = [rows._columns for rows in lists]
            for rows in lists:
                rows._configure()  # the columns for the width it has
            columns = [rows._columns for rows in lists] == drawn
            painted.append((columns, screen.chunk_view._laid[0] > 0))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(App, "_display", display)
    workspace = Workspace.load(tui_settings)
    vectors = workspace.compute_vectors(embedder=FakeEmbedder())
    assert vectors is not None
    workspace.apply_vectors(vectors)  # every retriever ready, as the first load makes it
    app = RagtuiApp(tui_settings, embedder=FakeEmbedder(), workspace=workspace)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
    assert painted == [(True, True)]


@run_async
async def test_a_resize_to_the_same_size_lays_nothing_out(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: Textual laid the whole main screen out again at every Resize, also one of the
    size it had (three came before the first full screen); only a new size lays it out now, and
    a new size still switches the layout (compact below 110 columns)."""
    from textual.events import Resize
    from textual.geometry import Size
    from textual.screen import Screen

    layouts: list[Size] = []
    original = Screen._refresh_layout

    def counted(self, size=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        layouts.append(size)
        return original(self, size, *args, **kwargs)

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        same = Size(*WIDE)
        screen.post_message(Resize(same, same))
        await pilot.pause()
        assert layouts == [], "a Resize of the same size laid the screen out"
        assert not screen.has_class("-compact")
        await pilot.resize_terminal(90, 30)
        await pilot.pause()
        assert Size(90, 30) in layouts
        assert screen.has_class("-compact")


@run_async
async def test_textual_notices_go_to_the_status_line(tui_settings: Settings) -> None:
    """Issue 34: the app composes no toast rack (hiding the hidden rack laid the first screen out
    once more); Textual's own notices (ctrl+c: press ctrl+q to quit) are said in the status
    line, their markup read (or kept as typed when it is not markup), control characters made
    visible."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        assert not screen.query("ToastRack")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.status.text.startswith("Do you want to quit? Press ctrl+q to quit")
        assert "[b]" not in app.status.text
        app.notify("x[/b]y\x1b[31m", title="odd")
        await pilot.pause()
        assert app.status.text.startswith("odd: x[/b]y")
        assert "\x1b" not in app.status.text
        assert not app.status.error
        app.notify("the [b]screenshot[/b] failed", severity="error")
        await pilot.pause()
        assert (app.status.text, app.status.error) == ("the screenshot failed", True)


@run_async
async def test_no_text_of_a_chunk_that_fits_is_under_the_scrollbar(tui_settings: Settings) -> None:
    """Issue 34: the chunk's scrollbar stays while a chunk fits (its track alone), so the text is
    laid beside it then too: laid under it, a chunk that fit lost the last two characters of its
    longest lines (in the judging view and on the main screen). Checked at several widths, on
    every line of the pairs walked."""
    from ragtui.tui.widgets.chunk_view import ChunkView

    app = make_app(tui_settings)
    async with app.run_test(size=(80, 40)) as pilot:
        view = (await judging_screen(pilot)).query_one(ChunkView)
        full = fitting = 0  # lines that reach the last column shown; chunks that fit
        for width in (60, 64, 72, 80):
            await pilot.resize_terminal(width, 40)
            await pilot.pause()
            for digit in "2011":
                visible = view.scrollable_content_region.width
                fitting += view.virtual_size.height <= view.scrollable_content_region.height
                assert under_the_scrollbar(view) == [], f"width {width}, digit {digit}"
                lines = (view.render_line(y).text.rstrip() for y in range(view.size.height))
                full += sum(len(line) >= visible - 1 for line in lines)
                await pilot.press(digit)
                await pilot.pause()
        assert full and fitting, "the walk met chunks that fit, with lines as wide as the view"


@run_async
async def test_a_judging_digit_draws_the_next_pairs_lines_once(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: a digit shows the next pair's lines, and the grade it saved (of the pair it
    left) draws them no second time; a grade of the pair on screen (the view stays on the last
    pair) redraws them, with the grade."""
    from ragtui.tui.widgets.pair_lines import PairLines

    drawn: list[tuple[str, str]] = []
    original = PairLines.text

    def counted(self, qid, cid, width):  # type: ignore[no-untyped-def]
        drawn.append((qid, cid))
        return original(self, qid, cid, width)

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        judging = await judging_screen(pilot)
        monkeypatch.setattr(PairLines, "text", counted)
        for digit in "2012":
            drawn.clear()
            await pilot.press(digit)
            await pilot.pause()
            entry = judging.session.current
            assert entry is not None
            assert drawn == [(entry.question, entry.chunk)], f"digit {digit}: {drawn}"
        # On the pair it shows, a grade redraws its lines (the grade shown changes).
        entry = judging.session.current
        assert entry is not None
        drawn.clear()
        app.publish(app.controller.grade(entry.question, entry.chunk, 1))
        await pilot.pause()
        assert (entry.question, entry.chunk) in drawn


@run_async
async def test_a_judging_digit_shows_the_chunk_laid_out_ahead(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: once a pair is drawn in the judging view, the chunk a grade of it moves to (the
    next unjudged pair) is laid out ahead, with the view's context and blindness: the digit shows
    that very text and wraps none of its paragraphs again (the chunk's lines were a third of the
    digit's CPU time), nor draws them again: a chunk that fits and one that does not are laid at
    the same width, the scrollbar's track being there for both."""
    from ragtui.tui.widgets.chunk_view import ChunkView

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        judging = await judging_screen(pilot)
        view = judging.query_one(ChunkView)
        view.styles.height = 4  # 3 rows: some chunks fit in it, some do not
        await pilot.pause()
        wrapped, drawn = count_wraps(monkeypatch), count_draws(monkeypatch)
        shown, fits = set(), set()
        for digit in ("2", "0", "1", "1", "2", "0", "1", "2"):
            ahead = judging.session.ahead()
            assert ahead is not None
            body = await laid_out_ahead(pilot, view, ahead.chunk)
            wrapped.clear()
            drawn.clear()
            await pilot.press(digit)
            await pilot.pause()
            assert judging.session.current == ahead
            assert view._body is body, "the text laid out ahead is the one shown"
            paragraphs = {id(p) for p in body.paragraphs}
            assert not paragraphs & set(wrapped), "a paragraph wrapped again"
            assert not paragraphs & set(drawn), f"{digit}: a paragraph drawn again"
            shown.add(ahead.chunk)
            fits.add(view.virtual_size.height <= view.scrollable_content_region.height)
        assert len(shown) > 1
        assert fits == {True, False}, "the walk met chunks that fit and chunks that do not"


@run_async
async def test_a_move_shows_the_rows_drawn_ahead_unless_a_change_came(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: the result lists draw ahead the rows of the question the next Down shows; the
    Down shows those very lines and draws none of them again. A grade given meanwhile (here to
    the next question's first chunk, as another session's label or a judge could) drops them:
    the row then shows the new grade."""
    from ragtui.tui.messages import GradeRequested
    from ragtui.tui.widgets.result_list import ResultList

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        questions = screen.question_list
        lists = list(screen.query(ResultList))
        drawn: list[int] = []
        original = ResultList.row_cells

        def counted(self, index):  # type: ignore[no-untyped-def]
            drawn.append(index)
            return original(self, index)

        monkeypatch.setattr(ResultList, "row_cells", counted)

        async def prepared(qid: str) -> list[dict]:
            for _ in range(200):
                ahead = [rl._prepared for rl in lists]
                if all(p is not None and p[0] == qid for p in ahead):
                    return [p[4] for p in ahead]
                await pilot.pause(0.01)
            raise AssertionError(f"the rows of {qid} were never drawn ahead")

        await pilot.press("down")
        ahead_qid = questions.qid_at(questions.cursor + 1)
        rows = await prepared(ahead_qid)
        drawn.clear()
        await pilot.press("down")
        await pilot.pause()
        assert screen.current_qid == ahead_qid
        for result_list, ahead in zip(lists, rows, strict=True):
            assert ahead and all(result_list._cache.get(i) is s for i, s in ahead.items())
        assert drawn == [], "a row drawn ahead was drawn again"
        # A change between the look-ahead and the key.
        ahead_qid = questions.qid_at(questions.cursor + 1)
        await prepared(ahead_qid)
        bm25 = screen.result_list("bm25")
        cid = app.workspace.ranking("bm25", ahead_qid)[0][0]
        app.post_message(GradeRequested(ahead_qid, cid, 1))
        await pilot.pause()
        assert bm25._prepared is None
        await pilot.press("down")
        await pilot.pause()
        assert screen.current_qid == ahead_qid
        assert " 1 hand" in bm25.cell(cid, "grade")
        # A theme change between the look-ahead and the key drops the rows drawn ahead too.
        ahead_qid = questions.qid_at(questions.cursor + 1)
        await prepared(ahead_qid)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        assert all(rl._prepared is None for rl in lists)
        line = bm25.render_line(
            bm25.header_height
            + bm25.view.ranking.index(next(r for r in bm25.view.ranking if r[0] == cid))
        )
        assert " 1 hand" in line.text, "the row on screen shows the new grade"


@run_async
async def test_a_judging_digit_is_drawn_in_one_paint(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: a digit's next pair and the status line's "saved" are drawn in one paint, and
    the look-ahead after it draws nothing (scheduled while the key was handled, it made the
    screen paint before the app had applied the grade: the status followed 30 ms later)."""
    from textual.screen import Screen

    from ragtui.tui.widgets.chunk_view import ChunkView

    painted: list[set[str]] = []
    original = Screen._on_timer_update

    def counted(self):  # type: ignore[no-untyped-def]
        if self._dirty_widgets:
            painted.append({type(w).__name__ for w in self._dirty_widgets})
        return original(self)

    monkeypatch.setattr(Screen, "_on_timer_update", counted)  # before the screens' timers
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("j")
        await pilot.pause(0.2)
        judging = app.screen
        for digit in "2011":
            ahead = judging.session.ahead()
            painted.clear()
            await pilot.press(digit)
            for _ in range(100):  # the look-ahead has run
                if any(key[0] == ahead.chunk for key in judging.query_one(ChunkView)._kept):
                    break
                await pilot.pause(0.01)
            await pilot.pause(0.1)
            assert len(painted) == 1 and "StatusLine" in painted[0], f"{digit}: {painted}"


def _painted_as_whole(bar: ScrollBar) -> bool:
    """Whether the scrollbar's lines as painted (its rows not asked for again kept from before)
    are what a repaint of all of its rows gives."""
    from textual.widget import Widget

    def lines() -> list[list[tuple[str, object]]]:
        return [[(seg.text, seg.style) for seg in s] for s in bar.render_lines(bar.size.region)]

    painted = lines()
    Widget.refresh(bar)
    return painted == lines()


@run_async
async def test_a_scrollbar_repaints_only_the_rows_a_new_range_changes() -> None:
    """Issue 34: a chunk or a ranking of another length changes its view's scroll range at each
    key, and Textual repainted all of the scrollbar's rows (1.7 ms of the judging digit's 12 ms
    at 120x40); it repaints the rows that changed, and what is painted is what a whole repaint
    gives."""
    from textual.app import App, ComposeResult
    from textual.geometry import Region
    from textual.widget import Widget

    from ragtui.tui.widgets.row_list import Cell, ColumnSpec, ListScrollBar, RowList

    class Rows(RowList):
        DEFAULT_CSS = "Rows { height: 12; }"

        def row_cells(self, index: int) -> list[Cell]:
            return [Cell(f"r{index}")]

    class TableApp(App[None]):
        def compose(self) -> ComposeResult:
            yield Rows()

    asked: list[int] = []  # the rows each repaint of the scrollbar asks for
    refresh = Widget.refresh

    def counted(self, *regions: Region, **kwargs: bool):  # type: ignore[no-untyped-def]
        if isinstance(self, ListScrollBar) and self.display:
            asked.append(Region.from_union(list(regions)).height if regions else self.size.height)
        return refresh(self, *regions, **kwargs)

    app = TableApp()
    async with app.run_test(size=(40, 16)) as pilot:
        table = app.query_one(Rows)
        table.set_columns([ColumnSpec("id", 8)])
        table.set_row_count(30)
        await pilot.pause()
        bar = table.vertical_scrollbar
        assert isinstance(bar, ListScrollBar) and bar.display
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Widget, "refresh", counted)
            for count, cursor in [(31, 0), (33, 0), (60, 0), (59, 40), (200, 40), (14, 3), (15, 3)]:
                table.set_row_count(count)
                table.move_cursor(cursor)
                await pilot.pause()
                assert _painted_as_whole(bar), f"{count} rows: a row painted stale"
        assert asked and min(asked) < bar.size.height, "every repaint was of the whole bar"


@run_async
async def test_the_scrollbars_paint_as_whole_through_moves_and_judging_digits(
    tui_settings: Settings,
) -> None:
    """Issue 34: the lists' and the chunk's scrollbars, repainted in the rows that changed, paint
    what a whole repaint gives: after each move of the main screen and each judging digit, the
    chunk view three rows high (some chunks fit, some do not: the thumb comes, goes and moves)."""
    from ragtui.tui.widgets.chunk_view import ChunkView
    from ragtui.tui.widgets.row_list import ListScrollBar, RowList

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        for _ in range(8):
            await pilot.press("down")
            await pilot.pause()
            bars = [
                w.vertical_scrollbar
                for w in (*screen.query(RowList), *screen.query(ChunkView))
                if w.show_vertical_scrollbar and isinstance(w.vertical_scrollbar, ListScrollBar)
            ]
            assert bars and all(_painted_as_whole(bar) for bar in bars)
        judging = await judging_screen(pilot)
        view = judging.query_one(ChunkView)
        view.styles.height = 4
        await pilot.pause()
        bar = view.vertical_scrollbar
        ranges = set()
        for digit in "2011202101":
            await pilot.press(digit)
            await pilot.pause()
            ranges.add(bar.window_virtual_size)
            assert _painted_as_whole(bar), f"digit {digit}: a row painted stale"
        assert len(ranges) > 2
