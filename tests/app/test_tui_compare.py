"""Pilot tests of the compare-and-explain views (issue 7): filtered metrics, saved-run baseline,
the compare view, hybrid attribution, the recall curve and external runs as extra lists."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ragtui.core.analysis.attribution import explain_hybrid
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.export import export_trec
from ragtui.core.analysis.runs import save_run
from ragtui.core.analysis.slices import slice_reports
from ragtui.core.metrics.measures import default_measures, system_from_workspace
from ragtui.core.metrics.significance import compare_systems
from ragtui.core.settings import Settings
from ragtui.tui.commands import RagtuiCommands
from ragtui.tui.screens.compare import CompareScreen
from ragtui.tui.screens.curve import CurveScreen
from ragtui.tui.screens.explain import ExplainScreen
from ragtui.tui.screens.slices import SlicesScreen
from tests.app.test_tui import WIDE, make_app, metric_rows, result_chunks, run_async, wait_ready


def _lines(text: str) -> list[str]:
    """The lines of a report with runs of spaces (column padding) folded to one."""
    return [" ".join(line.split()) for line in text.splitlines()]


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (as in tests/app/test_tui.py)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


@run_async
async def test_filtered_by_slice_shows_every_metric_with_its_count(tui_settings: Settings) -> None:
    """slice:number: the filter row equals the core's slice report, and the title counts its questions."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        screen.set_filter("slice:number")
        await pilot.pause()
        report = next(r for r in slice_reports(app.workspace) if r.name == "number")
        rows = metric_rows(app)
        for name, s in report.summaries.items():
            values = [
                f"{v:.3f}" for v in (s.recall, s.precision, s.precision_ceiling, s.mrr, s.ndcg)
            ]
            assert rows[(name, "filter")] == values
        assert f"filter {len(report.questions)}" in screen.metrics.border_title
        # The palette's per-slice report lists every slice with its count.
        screen.action_slices()
        await pilot.pause()
        assert isinstance(app.screen, SlicesScreen)
        assert f"number {len(report.questions)} bm25" in " ".join(_lines(app.screen.plain))


@run_async
async def test_baseline_run_shows_each_questions_change(tui_settings: Settings) -> None:
    """A saved run as baseline: Δ nDCG@k per question, updated when a grade moves it."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        save_run(ws, "before")
        titles = [t for t, _, _ in RagtuiCommands(app.screen).commands()]
        assert "baseline: before" in titles
        app.set_baseline("before")
        await app.workers.wait_for_complete()
        await pilot.pause()
        questions = app.main_screen.question_list
        assert questions.cell("m01", "delta") == "="
        # Grade hybrid's best unjudged chunk of m01 relevant (hand): hybrid's nDCG rises from the baseline's.
        baseline = app.controller.baseline
        assert baseline is not None and baseline.retriever == "hybrid"
        chunk = next(c for c, _ in ws.ranking("hybrid", "m01") if c not in ws.grades.base["m01"])
        await pilot.press("tab", "tab", "tab")
        table = app.main_screen.result_list("hybrid")
        assert app.focused is table
        assert table.select_chunk(chunk)
        await pilot.press("2")
        await pilot.pause()
        old = baseline.values_at[ws.settings.k]["m01"]
        now = ws.evaluation.per_question["hybrid"]["m01"].ndcg
        assert now > old
        assert questions.cell("m01", "delta") == f"{now - old:+.2f}"
        assert "Δ vs before" in str(app.main_screen.query_one("#questions").border_title)
        # Sorting keeps the baseline in the title (it used to vanish after s).
        await pilot.press("shift+tab", "shift+tab", "shift+tab", "s")
        await pilot.pause()
        assert "Δ vs before" in str(app.main_screen.query_one("#questions").border_title)
        app.clear_baseline()
        await pilot.pause()
        assert "delta" not in [c.name for c in questions.columns]


@run_async
async def test_compare_view_matches_the_core(tui_settings: Settings) -> None:
    """c: bm25 against hybrid, win/tie/loss, p-value and interval as compare_systems; b changes B."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        await pilot.press("c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        expected = compare_systems(
            system_from_workspace(ws, "bm25"),
            system_from_workspace(ws, "hybrid"),
            default_measures(ws.settings.k),
        )
        assert screen.comparison is not None
        text = screen.plain
        for m in expected.metrics:
            assert f"{m.wins}/{m.ties}/{m.losses}" in text
            assert f"{m.p_value:.4f}" in text
            assert f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]" in text
        await pilot.press("b")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (screen.a, screen.b) == ("bm25", "vector")
        assert screen.comparison is not None and screen.comparison.b == "vector"


@run_async
async def test_explain_view_shows_ranks_terms_and_ceiling(tui_settings: Settings) -> None:
    """e: each hybrid result's bm25 and vector ranks and RRF terms, sole finds, the pool ceiling."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExplainScreen)
        lines = _lines(screen.plain)
        explanation = explain_hybrid(ws, "m01")
        for r in explanation.results:
            bm25 = "- -" if r.bm25_rank is None else f"{r.bm25_rank} {r.bm25_term:.5f}"
            vector = "- -" if r.vector_rank is None else f"{r.vector_rank} {r.vector_term:.5f}"
            row = f"{r.rank} {r.chunk} {r.score:.5f} {bm25} {vector}"
            assert any(line.startswith(row) for line in lines), row
        assert (
            f"pool ceiling recall@3 {explanation.pool_ceiling:.3f} ({explanation.relevant_in_pool} "
            f"of {explanation.relevant} relevant in the pool), hybrid recall@3 "
            f"{explanation.hybrid_recall:.3f}" in lines
        )
        sole = explanation.only_bm25
        assert (f"only bm25 found ({len(sole)})" if sole else "only bm25 found: none") in lines


@run_async
async def test_recall_curve_plot(tui_settings: Settings) -> None:
    """r: a text plot and the values of recall@1..depth per retriever."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("r")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CurveScreen)
        curves = recall_curves(app.workspace)
        assert screen.curves == curves
        lines = _lines(screen.plain)
        assert " ".join(["k", *curves]) in lines
        for k in range(len(curves["bm25"])):
            assert " ".join([str(k + 1), *(f"{v[k]:.3f}" for v in curves.values())]) in lines


@run_async
async def test_external_run_is_a_fourth_list(tui_settings: Settings, tmp_path: Path) -> None:
    """--run ext=bm25.trec: a fourth result list and rank column with bm25's numbers; compare offers it."""
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(tui_settings)
    export_trec(ws, tmp_path / "trec")
    settings = dataclasses.replace(tui_settings, runs=(("ext", tmp_path / "trec" / "bm25.trec"),))
    app = make_app(settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        assert app.retrievers == ["bm25", "vector", "hybrid", "ext"]
        assert result_chunks(app, "ext") == result_chunks(app, "bm25")
        rows = metric_rows(app)
        assert rows[("ext", "all")] == rows[("bm25", "all")]
        assert "ext" in [c.name for c in app.main_screen.question_list.columns]
        titles = [t for t, _, _ in RagtuiCommands(app.screen).commands()]
        assert "compare: ext against bm25" in titles
        # The queue pools the external run too.
        walk = app.main_screen.walk()
        assert walk is not None and "ext" in walk.queue.retrievers
