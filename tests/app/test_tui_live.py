"""Live retrievers in the app: a real HTTP search API on 127.0.0.1 gets its own list, metric rows
and rank column like bm25; one that answers garbage shows its error in its own list while the
others keep working; ad-hoc queries ask it too."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragtui.core.retrieval.live import parse_retriever_spec
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.adhoc import AdhocScreen
from tests.app.test_tui import WIDE, FakeEmbedder, metric_rows, result_chunks, run_async, wait_ready
from tests.live_servers import serve


@pytest.fixture
def live_settings(mini_settings: Settings, tmp_path) -> Settings:
    """The small corpus with bm25 on the bm25s backend (what the test server runs)."""
    return replace(mini_settings, bm25_backend="bm25s", cache_dir=tmp_path / "cache")


@pytest.fixture
def server(live_settings: Settings):
    with serve(Workspace.load(live_settings).data.chunks) as running:
        yield running


@run_async
async def test_a_live_retriever_is_a_list_like_bm25_and_a_broken_one_says_why(
    live_settings: Settings, server
) -> None:
    specs = (
        f"web={server.url}/search?q={{query}}&k={{depth}}",
        f"junk={server.url}/garbage?q={{query}}",
    )
    settings = replace(live_settings, live_retrievers=tuple(parse_retriever_spec(s) for s in specs))
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        assert app.retrievers == ["bm25", "vector", "hybrid", "web", "junk"]
        assert result_chunks(app, "web") == result_chunks(app, "bm25")
        rows = metric_rows(app)
        assert rows[("web", "all")] == rows[("bm25", "all")]
        assert app.controller.retriever_status["junk"] == "failed"
        note = str(screen.pane("junk").query_one(".pane-note").content)
        print(note)
        assert note.startswith("junk unavailable: ") and "/garbage" in note
        assert result_chunks(app, "bm25"), "the others keep working"
        # Grading in the live list works as in any other.
        screen.focus_retriever("web")
        await pilot.press("0")
        await pilot.pause()
        assert app.workspace.grades.labels.history[-1].chunk == result_chunks(app, "web")[0]
        # An ad-hoc query asks the live retriever too.
        await pilot.press("a")
        await pilot.pause()
        adhoc = app.screen
        assert isinstance(adhoc, AdhocScreen)
        adhoc.query_one("#adhoc-query").value = "ferry ticket price"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        web = adhoc.list_for("web")
        bm25 = adhoc.list_for("bm25")
        assert [c for c, _ in web.ranking] == [c for c, _ in bm25.ranking] != []
