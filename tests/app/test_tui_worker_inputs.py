"""Workers read what the UI thread captured for them, never the live workspace.

The app changes the workspace on the UI thread only (a grade, a chunk a live retriever brought, a
question added); a worker reading it meanwhile could see it half changed. The ad-hoc search and
the add-question worker rank with ``Rankers`` captured on the UI thread, map a live retriever's
passages onto ragtui's chunks from a copy (as its golden rankings are), and hand the passages it
brought to the app. Here every read of a ``Workspace`` attribute from another thread is recorded
while a real HTTP search API on 127.0.0.1 answers ad-hoc queries and a new question.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.core.retrieval.live import parse_retriever_spec
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.adhoc import AdhocScreen
from tests.app.test_tui import WIDE, FakeEmbedder, run_async, wait_ready
from tests.live_servers import SearchServer, serve


@pytest.fixture
def live_settings(mini_settings: Settings, tmp_path) -> Settings:
    """The small corpus with bm25 on the bm25s backend (what the test server runs)."""
    return replace(mini_settings, bm25_backend="bm25s", cache_dir=tmp_path / "cache")


@pytest.fixture
def server(live_settings: Settings) -> Iterator[SearchServer]:
    with serve(Workspace.load(live_settings).data.chunks) as running:
        yield running


class ReadsFromOtherThreads:
    """Records every attribute of a ``Workspace`` read from a thread other than the UI thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ui = threading.get_ident()
        self.on = False
        self.reads: list[tuple[str, str]] = []
        read = Workspace.__getattribute__

        def recording(ws: Workspace, name: str) -> object:
            if self.on and threading.get_ident() != self.ui:
                self.reads.append((threading.current_thread().name, name))
            return read(ws, name)

        monkeypatch.setattr(Workspace, "__getattribute__", recording)


@run_async
async def test_adhoc_and_add_question_workers_read_only_what_was_captured(
    live_settings: Settings, server: SearchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mapped`` returns ragtui's chunks under ids of its own (``ext:…``) with their text: in the
    ad-hoc list they are ragtui's chunks, as in its golden rankings (they were shown as ``ext:…``);
    ``own`` returns passages ragtui does not hold: the app keeps them, on the UI thread, for the
    ad-hoc list and for a question added. No worker reads the workspace meanwhile."""
    specs = (
        f"mapped={server.url}/foreign?q={{query}}&k={{depth}}",
        f"own={server.url}/passages?q={{query}}&k={{depth}}",
    )
    settings = replace(live_settings, live_retrievers=tuple(parse_retriever_spec(s) for s in specs))
    spy = ReadsFromOtherThreads(monkeypatch)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await app.workers.wait_for_complete()
        ws = app.workspace
        assert ws is not None and app.controller.retriever_status["own"] == "ready"
        spy.on = True
        await pilot.press("a")
        await pilot.pause()
        adhoc = app.screen
        assert isinstance(adhoc, AdhocScreen)
        adhoc.query_one("#adhoc-query").value = "ferry ticket price"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        bm25 = [cid for cid, _ in adhoc.list_for("bm25").ranking]
        assert bm25, "bm25 found nothing"
        assert [cid for cid, _ in adhoc.list_for("mapped").ranking] == bm25
        own = [cid for cid, _ in adhoc.list_for("own").ranking]
        assert own and all(cid.startswith("p:") for cid in own), own
        assert all(cid in ws.passages.foreign for cid in own), "the app keeps the passages brought"
        assert spy.reads == [], spy.reads[:10]

        # Add the query as a question: its evidence is words of bm25's first chunk.
        words = ws.passages.by_id[bm25[0]].text.split()
        adhoc.query_one("#adhoc-evidence").value = " ".join(words[:6])
        await pilot.press("f3")
        await app.workers.wait_for_complete()
        await pilot.pause()
        added = re.match(r"Added (\S+):", app.status.text)
        assert added, app.status.text
        qid = added.group(1)
        assert ws.ranked.rankings["mapped"][qid] == ws.ranked.rankings["bm25"][qid] != []
        assert ws.ranked.rankings["own"][qid] and all(
            cid in ws.passages.foreign for cid, _ in ws.ranked.rankings["own"][qid]
        )
        assert spy.reads == [], spy.reads[:10]

        # The palette's refresh asks the live retrievers again, from what was captured too.
        app.refresh_live()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "mapped, own answered." in app.status.text, app.status.text
        assert spy.reads == [], spy.reads[:10]


def test_computing_vectors_changes_nothing_in_the_workspace(
    mini_settings: Settings, tmp_path: Path
) -> None:
    """The load worker computes the vector and hybrid rankings after the workspace is shown: what
    the results cache warns goes into the result (applied on the UI thread), never straight into
    the workspace's warnings (it was appended there from the worker)."""
    settings = replace(mini_settings, cache_dir=tmp_path / "cache")
    embedder = FakeEmbedder()
    Workspace.load(settings).prepare_vectors(embedder=embedder)  # fills the results cache
    for folder in (tmp_path / "cache" / "results").glob("vector-*"):
        (folder / "manifest.json").write_bytes(b"{not json")
    ws = Workspace.load(settings)
    before = list(ws.warnings)
    result = ws.compute_vectors(embedder=embedder)
    assert result is not None
    assert ws.warnings == before
    assert any("results cache ignored and rebuilt" in w for w in result.warnings), result.warnings
    ws.apply_vectors(result)
    assert any("results cache ignored and rebuilt" in w for w in ws.warnings), ws.warnings
