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
import textual.widgets._data_table as data_table_module

from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens import main as main_module
from tests.test_tui import (
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
async def test_question_list_never_measures_cells(
    many_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 rows and a grade: DataTable's per-cell measuring (1 s at 10,000 rows) never runs, and the
    list still scrolls to its last row."""
    calls = [0]
    measure = data_table_module.measure

    def counting(*args: object, **kwargs: object) -> int:
        calls[0] += 1
        return measure(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(data_table_module, "measure", counting)
    app = make_app(many_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        questions = main_screen(app).question_list
        assert questions.row_count == MANY
        assert questions.virtual_size.height == MANY + 1  # the header row
        assert calls[0] < 1000, calls[
            0
        ]  # the result lists (3 x 10 rows), never the 14,000 question cells
        await pilot.press("tab", "0")  # m01's copy s0000: its only relevant chunk graded 0
        await pilot.pause()
        assert labels(many_settings)[-1]["question"] == "s0000"
        assert metric_rows(app)[("bm25", "s0000")][4] == "0.000"
        assert calls[0] < 1500, calls[0]
        await pilot.press("shift+tab", "ctrl+end")
        await pilot.pause()
        assert main_screen(app).current_qid == f"s{MANY - 1:04d}"
        assert questions.scroll_offset.y > MANY - 50


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
    monkeypatch.setattr(main_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        label = screen.query_one("#progress-label")
        screen.show_progress(0, 1000)
        assert "loading the embedding model (1000 texts to embed)" in str(label.content)
        screen.show_progress(100, 1000)
        assert str(label.content) == "embedding 100/1000 texts"
        clock[0] += 2.0
        screen.show_progress(200, 1000)
        assert str(label.content) == "embedding 200/1000 texts · 50 texts/s · 16 s left"
        clock[0] += 8.0
        screen.show_progress(300, 1000)
        assert str(label.content) == "embedding 300/1000 texts · 20 texts/s · 35 s left"
        screen.show_progress(300, 100_000)
        assert "1 min" not in str(label.content) and "left" in str(label.content)
        screen.hide_progress()
        await pilot.pause()
        assert not screen.query_one("#progress-row").display
    assert main_module.format_seconds(185) == "3 min 05 s"


@run_async
async def test_lower_k_restyles_ranks_in_place(tui_settings: Settings) -> None:
    """k 3 -> 1: a rank of 2 or 3 keeps its digits but turns from 'hit' to 'late' (cells updated in
    place by row key also when only the style changes)."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        questions = main_screen(app).question_list
        retrievers = questions.retrievers

        def ranks() -> dict[tuple[str, str], object]:
            """(question, retriever) -> the rank cell, for ranks 2 and 3."""
            return {
                (str(key.value), name): questions.get_cell(key, name)
                for key in questions.rows
                for name in retrievers
                if questions.get_cell(key, name).plain in ("2", "3")
            }

        before = ranks()
        assert before, "the mini set has no rank 2 or 3"
        await pilot.press("minus", "minus")
        await pilot.pause()
        after = ranks()
        assert after.keys() == before.keys()
        for key, cell in after.items():
            assert cell.style != before[key].style, key
            assert cell.style == questions._style("late"), key


@run_async
async def test_row_cached_table_redraws_only_the_changed_row():
    from textual.app import App, ComposeResult

    from ragtui.tui.widgets.table import RowCachedTable

    class TableApp(App[None]):
        def compose(self) -> ComposeResult:
            yield RowCachedTable()

    app = TableApp()
    async with app.run_test(size=(40, 8)) as pilot:
        table = app.query_one(RowCachedTable)
        table.add_columns("id", "grade")
        for i in range(4):
            table.add_row(f"r{i}", "-", key=f"r{i}")
        await pilot.pause()

        def line(y: int) -> str:
            return table.render_line(y).text

        before = [line(y) for y in range(1, 5)]
        rendered = []
        original = table._render_cell

        def counting(row_index, *args, **kwargs):
            rendered.append(row_index)
            return original(row_index, *args, **kwargs)

        table._render_cell = counting  # type: ignore[method-assign]
        table.update_cell("r2", table.ordered_columns[1].key, "2")
        after = [line(y) for y in range(1, 5)]
        assert "2" in after[2] and "-" not in after[2]
        assert after[:2] == before[:2] and after[3] == before[3]
        assert set(rendered) == {2}, "only the changed row is rendered again"
