"""One report model, two renderers: every report says the same words and numbers in the command line's
plain text and in the app's Rich view; report screens show a worker's failure instead of waiting."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App, ComposeResult
from textual.content import Content

from ragtui.cli import main
from ragtui.cli.output import render_report
from ragtui.core.analysis.attribution import explain_hybrid, pool_ceilings
from ragtui.core.analysis.check import check_workspace
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.diagnostics import diagnose
from ragtui.core.analysis.reports import (
    added_question_report,
    agreement_report,
    annotator_pairs,
    check_report,
    comparison_report,
    curve_report,
    diagnostics_report,
    diff_report,
    eval_table_report,
    explain_report,
    slices_report,
)
from ragtui.core.analysis.runs import diff_runs, resolve_saved, save_run
from ragtui.core.analysis.why import WhyIndex, why_question_report, why_report
from ragtui.core.labelling.agreement import annotators, kappa_text
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.metrics.measures import (
    System,
    default_measures,
    parse_measures,
    system_from_workspace,
)
from ragtui.core.metrics.significance import compare_systems
from ragtui.core.report_model import Note, Report, Row, table
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.screens.agreement import AgreementScreen
from ragtui.tui.screens.compare import CompareScreen
from ragtui.tui.screens.diagnostics import DiagnosticsInputs, DiagnosticsScreen
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.screens.reports import compare_screen, explain_screen
from ragtui.tui.widgets.report_view import ReportView, report_plain
from tests.app.test_tui import WIDE, make_app, run_async, wait_ready
from tests.conftest import mini_args

pytestmark = pytest.mark.usefixtures("cli_cache_env")


def _question_file(settings: Settings) -> Path:
    return Path(settings.golden or "") / "questions.jsonl"


@pytest.fixture
def every_report(mini_settings: Settings, tmp_path: Path) -> dict[str, Report]:
    """Each report the CLI prints and the app draws, from the small corpus with real embeddings,
    two annotators, a stale label, two saved runs and a question added."""
    ws = Workspace.open(mini_settings)
    runs = tmp_path / "runs"
    save_run(ws, "before", runs)
    evidence_chunk = next(iter(ws.grades.base["m01"]))
    other_chunk = next(c.id for c in ws.data.chunks if c.id not in ws.grades.base["m01"])
    ws.set_grade("m01", evidence_chunk, 0)
    ws.set_grade("m01", other_chunk, 2)
    second = LabelJournal(ws.grades.labels.path, annotator="zoe")
    second.set_grade("m01", evidence_chunk, 2, ws.passages.by_id[evidence_chunk].sha1)
    second.set_grade("m01", other_chunk, 2, ws.passages.by_id[other_chunk].sha1)
    second.set_grade("m03", "ferry.md#9", 1, "stale")  # no such chunk: a problem for check
    ws.refresh_labels()
    save_run(ws, "after", runs)
    run_a, _ = resolve_saved("before", runs)
    run_b, _ = resolve_saved("after", runs)
    texts = {q.id: q.text for q in ws.questions}
    diff = diff_runs(run_a.system("hybrid"), run_b.system("hybrid"), 3, texts=texts)
    measures = parse_measures("R@3,P@3,RR,nDCG@10,AP")
    expl = explain_hybrid(ws, "m06")
    small = Workspace.load(dataclasses.replace(mini_settings, chunk_size=12))
    comparison = compare_systems(
        *(System(n, *_system_parts(ws, n)) for n in ("bm25", "hybrid")),
        default_measures(3),
        n_permutations=500,
        n_resamples=500,
    )
    reports = {
        "eval": eval_table_report(ws),
        "eval --judged": eval_table_report(ws, judged=True),
        "eval --metrics": eval_table_report(ws, measures=measures),
        "eval --by-slice": slices_report(ws),
        "eval --by-slice --metrics": slices_report(ws, measures),
        "eval --curve": curve_report(recall_curves(ws), "every evaluated question"),
        "compare": comparison_report(comparison),
        "explain": explain_report(ws.questions.by_id["m06"].text, expl, pool_ceilings(ws)),
        "agreement": agreement_report(
            ws, annotator_pairs(list(annotators(ws.grades.labels.history)))
        ),
        "diagnostics": diagnostics_report(
            diagnose(small),
            chunk_size=12,
            overlap=0,
            questions_file=_question_file(small.settings),
        ),
        "check": check_report(small, check_workspace(small)),
        "diff": diff_report(diff),
        "diff --limit 1": diff_report(diff, limit=1),
    }
    why = WhyIndex(ws)
    reports["why --by-slice"] = why_report(why, by_slice=True)
    reports["why m06"] = why_question_report(why.question("m06"), 3, ws.settings.depth)
    reports["why m07"] = why_question_report(why.question("m07"), 3, ws.settings.depth)
    added = ws.add_question("Where do ferries leave from?", "ferry", ["lookup"])
    reports["add-question"] = added_question_report(added, _question_file(ws.settings), 3)
    return reports


def _system_parts(ws: Workspace, name: str):
    """Rankings, grades and question ids of one retriever (a System's fields after its label)."""
    ev = ws.evaluation
    rankings = {q: [c for c, _ in ws.ranking(name, q)] for q in ev.question_ids}
    return rankings, {q: ev.gains(q) for q in ev.question_ids}, ev.question_ids


def test_every_report_says_the_same_in_plain_text_and_in_rich(every_report):
    """The CLI's text and a Rich console's capture of the app's renderable: the same words in the same order."""
    for name, report in every_report.items():
        plain = render_report(report)
        drawn = report_plain(report)
        assert drawn.split() == plain.split(), name
        assert all(word in plain for word in report.words()), name
    # The reports hold what they were built for.
    assert "Cohen's kappa (binary): " in render_report(every_report["agreement"])
    assert "tester against zoe: 2 pairs graded by both" in render_report(every_report["agreement"])
    assert "stale label for ferry.md#9" in render_report(every_report["check"])
    assert "straddling a chunk boundary (" in render_report(every_report["diagnostics"])


class _Viewer(App[None]):
    """Every report in a ReportView, titles shown."""

    def __init__(self, reports: list[Report]) -> None:
        super().__init__()
        self.reports = reports

    def compose(self) -> ComposeResult:
        for report in self.reports:
            yield ReportView(report, show_title=True)


@run_async
async def test_the_widget_draws_every_report_as_the_command_line_prints_it(every_report):
    """The mounted widget's renderable (styled by the theme) holds the CLI's words and numbers."""
    reports = list(every_report.values())
    app = _Viewer(reports)
    async with app.run_test(size=WIDE):
        views = list(app.query(ReportView))
        for view, report in zip(views, reports, strict=True):
            console = Console(width=1000, file=io.StringIO(), color_system=None)
            with console.capture() as capture:
                console.print(view.render())
            assert capture.get().split() == render_report(report).split(), report.title
        # Tones are theme colours, not fixed ones: bad is the theme's error text colour.
        bad = views[0].get_component_rich_style("report-view--bad")
        dim = views[0].get_component_rich_style("report-view--dim")
        assert bad.color is not None and dim.color is not None and bad.color != dim.color


def test_text_from_files_is_shown_never_interpreted():
    """A chunk id or question holding an escape sequence or markup is drawn as visible text."""
    hostile = "doc.md#0\x1b]52;c;Zm9v\x07 [bold]raw[/bold]"
    report = Report(
        f"title {hostile}",
        (table(["chunk"], [Row((hostile,))], heading=hostile, notes=[Note(hostile, "bad")]),),
    )
    for text in (render_report(report), report_plain(report)):
        assert "\x1b" not in text and "\x07" not in text
        assert text.count("\\x1b]52;c;Zm9v\\x07 [bold]raw[/bold]") == 4


def test_an_undefined_kappa_reads_the_same_in_the_cli_and_the_app(mini, mini_settings, capsys):
    """Every hand grade agrees with the rule and all say relevant: kappa is undefined, worded once."""
    ws = Workspace.load(dataclasses.replace(mini_settings, retrievers=("bm25",)))
    for qid in ("m01", "m03"):
        ws.set_grade(qid, next(iter(ws.grades.base[qid])), 2)
    assert main(["agreement", *mini_args(mini)]) == 0
    line = f"Cohen's kappa (binary): {kappa_text(None)}; observed agreement 1.000"
    assert line in capsys.readouterr().out.splitlines()
    app_report = agreement_report(ws)
    assert line in report_plain(app_report).splitlines()
    assert kappa_text(None) == "undefined (a single category on every pair)"


@run_async
async def test_the_agreement_key_shows_the_kappa_wording_of_the_cli(tui_settings_reports):
    """g in the app: the undefined kappa reads as ``ragtui agreement`` prints it."""
    app = make_app(tui_settings_reports)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        for qid in ("m01", "m03"):
            ws.set_grade(qid, next(iter(ws.grades.base[qid])), 2)
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, AgreementScreen)
        assert f"Cohen's kappa (binary): {kappa_text(None)}" in app.screen.plain


@pytest.fixture
def tui_settings_reports(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test cache (the app tests use a fake embedder)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


class _Host(App[None]):
    """An app that shows one report screen."""

    def __init__(self, screen: ReportScreen) -> None:
        super().__init__()
        self.report_screen = screen

    def on_mount(self) -> None:
        self.push_screen(self.report_screen)


class _BrokenSystem(System):
    """A system whose values cannot be computed (a failure inside the compare worker)."""

    def values(self, measure, questions):
        raise RuntimeError("the disk went away")


def _systems() -> dict[str, System]:
    """Two small hand-made systems over three questions."""
    grades = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}}
    qids = ("q1", "q2", "q3")
    return {
        "first": System("first", {"q1": ["a"], "q2": ["x", "b"], "q3": ["x"]}, grades, qids),
        "second": System("second", {"q1": ["x", "a"], "q2": ["b"], "q3": ["c"]}, grades, qids),
    }


@run_async
async def test_the_compare_screen_shows_a_failure_instead_of_comparing_forever():
    systems = _systems()
    broken = {
        **systems,
        "third": _BrokenSystem("third", *dataclasses.astuple(systems["second"])[1:]),
    }
    screen = CompareScreen(broken, "first", "third", default_measures(1))
    app = _Host(screen)
    async with app.run_test(size=WIDE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "comparison failed: RuntimeError: the disk went away" in screen.plain
        assert "comparing" not in screen.plain and screen.comparison is None
        # Cycling B to a system that works shows its numbers.
        await pilot.press("b")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (screen.a, screen.b) == ("first", "second")
        expected = compare_systems(systems["first"], systems["second"], default_measures(1))
        assert screen.comparison is not None and "failed" not in screen.plain
        for m in expected.metrics:
            assert (
                f"{m.p_value:.4f}" in screen.plain
                and f"{m.wins}/{m.ties}/{m.losses}" in screen.plain
            )


@run_async
async def test_the_diagnostics_screen_shows_a_failure_too(tmp_path):
    inputs = DiagnosticsInputs(
        model=str(tmp_path / "no-such-model"),
        chunk_size=48,
        overlap=0,
        questions_file=tmp_path / "questions.jsonl",
        chunks=(),
        questions=(),
        documents=(),
    )
    screen = DiagnosticsScreen(inputs)
    app = _Host(screen)
    async with app.run_test(size=WIDE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.plain.startswith("diagnostics failed: ") and screen.result is None


@run_async
async def test_a_question_with_markup_titles_the_explain_screen_as_written(mini_settings):
    ws = Workspace.open(mini_settings)
    added = ws.add_question("Is [bold]this[/bold] a ferry?", "ferry", [])
    screen = explain_screen(ws, added.question.id)
    app = _Host(screen)
    async with app.run_test(size=WIDE) as pilot:
        await pilot.pause()
        title = screen.query_one(".report-box").border_title
        assert Content.from_markup(title).plain.endswith("Is [bold]this[/bold] a ferry?")


@run_async
async def test_the_compare_worker_reads_what_the_factory_captured(mini_settings):
    """A grade given after the screen was made (the app's label poll does that) does not reach the worker."""
    ws = Workspace.open(mini_settings)
    before = compare_systems(
        system_from_workspace(ws, "bm25"), system_from_workspace(ws, "hybrid"), default_measures(3)
    )
    screen = compare_screen(ws, "bm25", "hybrid")
    top = ws.ranking("hybrid", "m01")[0][0]
    ws.set_grade("m01", top, 0 if ws.grades.effective_grades("m01").get(top, 0) else 2)
    after = compare_systems(
        system_from_workspace(ws, "bm25"), system_from_workspace(ws, "hybrid"), default_measures(3)
    )
    assert after.metrics != before.metrics, "the grade must change the comparison"
    app = _Host(screen)
    async with app.run_test(size=WIDE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.comparison is not None and screen.comparison.metrics == before.metrics
