"""Slow work never freezes a key (issue 23): the first ad-hoc query that needs the embedding model
loads it in a worker and says so, BM25's list shown at once; compare computes in a worker; ad-hoc
chunk ids stay readable in narrow lists."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from textual.app import App
from textual.screen import Screen

from ragtui.core.metrics.measures import Measure, System, default_measures, system_from_workspace
from ragtui.core.metrics.significance import compare_systems
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.adhoc import AdhocList, AdhocScreen, short_chunk_id
from ragtui.tui.screens.compare import CompareScreen
from ragtui.tui.screens.reports import compare_screen
from tests.app.test_tui import COMPACT, WIDE, FakeEmbedder, make_app, run_async, wait_ready
from tests.conftest import ROOT

#: Seconds the slow model takes to load, and to encode a text once loaded.
LOAD_S = 1.5
ENCODE_S = 0.5


class SlowModel(FakeEmbedder):
    """The fake embedder with the real model's cost: it must be loaded (``LOAD_S``) before it
    encodes, and each encoding of new texts takes ``ENCODE_S``. Its vectors are the fake
    embedder's, cached under the same name."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded = False
        self.loads = 0
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if not self.loaded:
                time.sleep(LOAD_S)
                self.loads += 1
                self.loaded = True

    def encode(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        self.load()
        time.sleep(ENCODE_S)
        return super().encode(texts, progress)


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The small corpus with an embedding cache of the test's own."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


def _subtitle(screen: AdhocScreen, name: str) -> str:
    pane = screen.list_for(name).parent
    assert pane is not None
    return str(pane.border_subtitle or "")


@run_async
async def test_first_adhoc_query_loads_the_model_with_progress_and_bm25_at_once(
    tui_settings: Settings,
) -> None:
    # A first run fills the embedding and results caches: the next start needs no model.
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
    model = SlowModel()
    app = make_app(tui_settings, model)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        assert not model.loaded, "the first screen came from the caches"
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AdhocScreen)
        screen.query_one("#adhoc-query").value = "ferry ticket price"
        started = time.monotonic()
        await pilot.press("enter")
        seen: list[str] = []
        bm25_at = None
        while time.monotonic() - started < 30:
            await pilot.pause(0.05)
            if bm25_at is None and screen.list_for("bm25").ranking:
                bm25_at = time.monotonic() - started
            text = _subtitle(screen, "vector")
            if not seen or seen[-1] != text:
                seen.append(text)
            if screen.list_for("hybrid").ranking:
                break
        # BM25 came at once, long before the model was loaded.
        assert bm25_at is not None and bm25_at < LOAD_S, bm25_at
        # The vector list said what it waited for: the model, then the embedding, then nothing.
        steps = [s for s in seen if s and not s.startswith("searching")]
        assert steps[0].startswith("loading model…"), seen
        assert any(s.startswith("embedding…") for s in steps), seen
        assert _subtitle(screen, "vector") == _subtitle(screen, "hybrid") == ""
        expected = app.workspace.search_adhoc("ferry ticket price")
        for name in ("bm25", "vector", "hybrid"):
            assert screen.list_for(name).ranking == expected[name], name
        assert model.loads == 1
        assert "Tab to a list" in app.status.text


@run_async
async def test_keys_work_while_the_model_loads(tui_settings: Settings) -> None:
    """Tab reaches the bm25 list and its chunk shows while vector and hybrid wait for the model;
    a second query typed meanwhile loads the model once and shows its own lists."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
    model = SlowModel()
    app = make_app(tui_settings, model)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AdhocScreen)
        query = screen.query_one("#adhoc-query")
        query.value = "ferry ticket price"
        await pilot.press("enter")
        while not screen.list_for("bm25").ranking:
            await pilot.pause(0.02)
        assert "loading model" in _subtitle(screen, "vector")
        assert "loading the embedding model" in app.status.text and "bm25 shown" in app.status.text
        started = time.monotonic()
        await pilot.press("tab")
        await pilot.pause()
        assert time.monotonic() - started < LOAD_S / 2, "the key waited for the model"
        assert isinstance(app.focused, AdhocList) and app.focused.retriever == "bm25"
        first = screen.list_for("bm25").ranking[0][0]
        assert screen.query_one("#adhoc-chunk").text == app.workspace.passages.by_id[first].text
        assert not model.loaded
        # Another query before the model is in: its lists replace the first one's.
        query.value = "sandbags per metre"
        query.focus()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.query_text == "sandbags per metre"
        expected = app.workspace.search_adhoc("sandbags per metre")
        for name in ("bm25", "vector", "hybrid"):
            assert screen.list_for(name).ranking == expected[name], name
        assert model.loads == 1


def test_short_chunk_ids_keep_the_file_name_and_number() -> None:
    assert short_chunk_id("pumping-stations.md#3", 21) == "pumping-stations.md#3"
    assert short_chunk_id("docs/en/docs/tutorial/cors.md#1", 16) == "docs/…/cors.md#1"
    assert short_chunk_id("docs/en/docs/tutorial/cors.md#1", 12) == "…/cors.md#1"
    assert short_chunk_id("tutorial/cors.md#12", 12) == "…/cors.md#12"
    shortened = short_chunk_id("history-and-governance.md#0", 14)
    assert len(shortened) == 14 and shortened.endswith(".md#0") and shortened.startswith("histor")


@pytest.mark.parametrize("size", [COMPACT, WIDE])
@run_async
async def test_adhoc_chunk_ids_readable(tmp_path: Path, size: tuple[int, int]) -> None:
    """The bundled corpus's ids (up to 27 characters) in three lists side by side: at 120x40 each
    whole; at 80x24 the id takes the list's width (the score gives way), whole when it fits, else
    its first 8 characters or more, its extension and #n (it read ``p…s.md#1``)."""
    settings = Settings(
        corpus=ROOT / "corpus", golden=ROOT / "golden", cache_dir=tmp_path / "cache"
    )
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AdhocScreen)
        screen.query_one("#adhoc-query").value = "pumping station capacity test runs"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        for name in ("bm25", "vector", "hybrid"):
            table = screen.list_for(name)
            ids = [cid for cid, _ in table.ranking]
            assert any(len(cid) > 20 for cid in ids), ids
            chunk = next(c for c in table.columns if c.name == "chunk")
            if size == WIDE:
                assert chunk.width == max(len(cid) for cid in ids), (name, chunk.width)
                assert "score" in [c.name for c in table.columns]
            else:
                assert chunk.width >= 18, (name, chunk.width)
            lines = [
                "".join(s.text for s in table.render_line(y))
                for y in range(1, min(table.size.height, len(ids) + 1))
            ]
            for line, cid in zip(lines, ids, strict=False):
                if len(cid) <= chunk.width:
                    assert f" {cid} " in f"{line} ", (name, line)
                else:
                    doc, number = cid.rsplit("#", 1)
                    shown = line.split()[1]
                    assert shown.startswith(doc[:8]) and shown.endswith(f".md#{number}"), shown


# ---- compare ------------------------------------------------------------------------------------


class SlowSystem(System):
    """A system whose values take ``SLOW_VALUES_S`` a measure (a large golden set), counting how
    many are computed at once."""

    running = 0
    most = 0
    lock = threading.Lock()

    def values(self, measure: Measure, questions: Sequence[str]) -> np.ndarray:
        cls = SlowSystem
        with cls.lock:
            cls.running += 1
            cls.most = max(cls.most, cls.running)
        try:
            time.sleep(SLOW_VALUES_S)
            return super().values(measure, questions)
        finally:
            with cls.lock:
                cls.running -= 1


SLOW_VALUES_S = 0.03


class _Host(App[None]):
    """An app that shows one screen."""

    def __init__(self, screen: Screen[None]) -> None:
        super().__init__()
        self.shown = screen

    def on_mount(self) -> None:
        self.push_screen(self.shown)


@run_async
async def test_compare_keys_act_at_once_and_one_worker_computes_at_a_time() -> None:
    """While a comparison computes, ``b`` changes the pair at once (``comparing…`` for the new
    pair); the keys never start a worker each (they competed for the interpreter with the screen):
    the pair asked for last is computed when the running one ends, and shown."""
    grades = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}}
    qids = ("q1", "q2", "q3")
    rankings = {
        "first": {"q1": ["a"], "q2": ["x", "b"], "q3": ["x"]},
        "second": {"q1": ["x", "a"], "q2": ["b"], "q3": ["c"]},
        "third": {"q1": ["a"], "q2": ["b"], "q3": ["x", "y", "c"]},
    }
    systems = {name: SlowSystem(name, r, grades, qids) for name, r in rankings.items()}
    SlowSystem.most = 0
    screen = CompareScreen(systems, "first", "second", default_measures(1))
    app = _Host(screen)
    async with app.run_test(size=WIDE) as pilot:
        await pilot.pause()
        assert screen.plain == "comparing second against first…"
        for expected in ("third", "second", "third"):
            started = time.monotonic()
            await pilot.press("b")
            assert time.monotonic() - started < 0.5
            assert screen.b == expected
            assert screen.plain == f"comparing {expected} against first…"
        for _ in range(400):
            await pilot.pause(0.02)
            if screen.comparison is not None:
                break
        assert screen.comparison is not None
        assert (screen.comparison.a, screen.comparison.b) == ("first", "third")
        expected_numbers = compare_systems(systems["first"], systems["third"], default_measures(1))
        assert screen.comparison.metrics == expected_numbers.metrics
        assert SlowSystem.most == 1, "several workers computed at once"


@run_async
async def test_compare_captures_only_the_two_systems_shown(mini_settings: Settings) -> None:
    """``c`` reads two retrievers' rankings and grades on the UI thread, not every retriever's; the
    one a key cycles to is read then."""
    ws_full = Workspace.open(mini_settings)
    screen = compare_screen(ws_full, "bm25", "hybrid")
    assert set(screen.systems) == {"bm25", "hybrid"}
    assert screen.names == ["bm25", "vector", "hybrid"]
    app = _Host(screen)
    async with app.run_test(size=WIDE) as pilot:
        await pilot.press("b")
        await app.workers.wait_for_complete()
        for _ in range(200):
            await pilot.pause(0.02)
            if screen.comparison is not None:
                break
        assert (screen.a, screen.b) == ("bm25", "vector")
        assert set(screen.systems) == {"bm25", "hybrid", "vector"}
        expected = compare_systems(
            system_from_workspace(ws_full, "bm25"),
            system_from_workspace(ws_full, "vector"),
            default_measures(ws_full.settings.k),
        )
        assert screen.comparison is not None and screen.comparison.metrics == expected.metrics
