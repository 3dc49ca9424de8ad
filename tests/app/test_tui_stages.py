"""The app and the later stages: the reranked list (a tiny local cross-encoder), the experiment table
and switching to a variant, and the causes of misses (column, filter, chunk view, attribution)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from ragtui.core.analysis.why import CAUSE_MARKS, WhyIndex
from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.screens.report import ReportScreen
from tests.app.test_tui import WIDE, FakeEmbedder, metric_rows, result_chunks, run_async, wait_ready
from tests.unit.test_experiment import PROJECT, _settings


@run_async
async def test_the_reranked_list_is_a_list_like_the_others(
    mini_settings: Settings, tiny_cross_encoder: Path, tmp_path: Path
) -> None:
    settings = replace(mini_settings, rerank=str(tiny_cross_encoder), cache_dir=tmp_path / "cache")
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        for _ in range(1200):  # the cross-encoder runs in a worker after the vectors
            if app.controller.retriever_status.get("hybrid+rerank") == "ready":
                break
            await pilot.pause(0.05)
        assert app.controller.retriever_status.get("hybrid+rerank") == "ready"
        for _ in range(200):  # the lists and the panel show what the controller holds
            if result_chunks(app, "hybrid+rerank") and ("hybrid+rerank", "all") in metric_rows(app):
                break
            await pilot.pause(0.05)
        assert app.retrievers == ["bm25", "vector", "hybrid", "hybrid+rerank"]
        reranked = result_chunks(app, "hybrid+rerank")
        assert sorted(reranked) == sorted(result_chunks(app, "hybrid"))
        assert [c for c, _ in app.workspace.ranking("hybrid+rerank", "m01")] == reranked
        assert ("hybrid+rerank", "all") in metric_rows(app), list(app.status_log)


@run_async
async def test_experiment_table_and_switching_to_a_variant(
    mini: Path, cache_dir: Path, monkeypatch
) -> None:
    (mini / "ragtui.toml").write_text(PROJECT)
    monkeypatch.chdir(mini)
    settings = _settings(mini / "ragtui.toml", cache_dir)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        titles = [t for t, _, _ in RagtuiCommands(app.screen).commands()]
        assert "experiment: run the variants" in titles
        assert "experiment: show variant c24" in titles
        app.run_experiment()
        for _ in range(2400):  # the variants load the real model: allow a loaded machine 2 minutes
            await pilot.pause(0.05)
            if isinstance(app.screen, ReportScreen) or any(s.error for s in app.status_log):
                break
        screen = app.screen
        assert isinstance(screen, ReportScreen), list(app.status_log)[-3:]
        words = " ".join(screen.report.words())
        assert "c24" in words and "c48-off" in words
        await pilot.press("escape")
        await pilot.pause()
        app.show_variant("c24")
        await asyncio.sleep(0)
        await wait_ready(pilot)
        assert app.workspace.settings.chunk_size == 24
        assert len(app.workspace.data.chunks) > 9  # smaller chunks: more of them


@run_async
async def test_causes_in_the_list_the_filter_the_chunk_view_and_attribution(
    mini_settings: Settings, tmp_path: Path
) -> None:
    settings = replace(mini_settings, cache_dir=tmp_path / "cache")
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        reference = WhyIndex(app.workspace)
        missed = [q.id for q in app.workspace.questions if reference.cause(q.id, "hybrid")]
        assert missed, "the fake vectors make hybrid miss some question"
        qid = missed[0]
        cause = reference.cause(qid, "hybrid")
        assert cause is not None
        assert screen.question_list.cell(qid, "why") == CAUSE_MARKS.get(cause, cause)
        screen.set_filter(f"why:{cause}")
        await pilot.pause()
        assert screen.visible_ids == reference.matching(cause)
        # The chunk view names the causes of a missed relevant chunk of the active list.
        screen.question_list.select_qid(qid)
        await pilot.pause()
        relevant = [c for c, g in app.workspace.grades.effective_grades(qid).items() if g >= 1]
        screen.focus_retriever("hybrid")
        results = screen.result_list("hybrid")
        shown = [c for c in relevant if results.select_chunk(c)]
        await pilot.pause()
        if shown and reference.chunk_causes(qid, "hybrid", shown[0]):
            header = screen.chunk_view._header_text.plain
            assert "why hybrid misses it" in header
        # The attribution view ends with the causes.
        await pilot.press("e")
        await pilot.pause()
        words = " ".join(app.screen.report.words())  # type: ignore[attr-defined]
        assert "why it missed" in words and cause in words


def test_every_retriever_gets_its_own_short_heading():
    import random

    from ragtui.tui.widgets.text import short_names

    assert short_names(["bm25", "vector", "hybrid", "hybrid+rerank"], 3) == {
        "bm25": "bm",
        "vector": "vec",
        "hybrid": "hyb",
        "hybrid+rerank": "h+r",
    }
    rng = random.Random(3)
    for _ in range(200):
        names = list(
            dict.fromkeys(
                rng.choice(["bm25", "vector", "hybrid", "milvus", "web", "es\x1b[2J"])
                + rng.choice(["", "-a", "-b", "+rerank", "2"])
                for _ in range(rng.randint(1, 8))
            )
        )
        for width in (1, 3):
            short = short_names(names, width)
            assert list(short) == names
            assert len(set(short.values())) == len(names)
            assert all(0 < len(h) <= width and "\x1b" not in h for h in short.values())


@run_async
async def test_recent_messages_from_the_palette(mini_settings: Settings, tmp_path: Path) -> None:
    settings = replace(mini_settings, cache_dir=tmp_path / "cache")
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        titles = [t for t, _, _ in RagtuiCommands(app.screen).commands()]
        assert "messages: recent" in titles
        app.say("first thing")
        app.say("a \x1b[2Jbad thing", error=True)
        app.show_messages()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        rows = [r.cells for s in screen.report.sections for r in s.rows]
        assert rows[0][1:] == ("error", "a \\x1b[2Jbad thing")  # newest first, escaped
        assert rows[1][1:] == ("", "first thing")
        assert all(len(r[0]) == 8 for r in rows)  # HH:MM:SS
