"""``ragtui report`` (Markdown and self-contained HTML) and the CI gate ``--fail-under``: the numbers are the
evaluation's, text from files cannot inject markup or control characters, shortfalls exit 1 by name."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.cli.report_formats import PALETTE, curve_svg, md_escape, to_html, to_markdown
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.full_report import full_report
from ragtui.core.analysis.gate import GateResult, Threshold, check_thresholds, parse_threshold
from ragtui.core.analysis.runs import load_run
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import (
    Measure,
    default_measures,
    measure_means,
    system_from_workspace,
)
from ragtui.core.metrics.significance import compare_systems
from ragtui.core.report_model import fmt
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args

#: A slice name that would inject markup, break a table row and retitle a terminal.
HOSTILE = "<script>alert(1)</script> | *x* \x1b]0;pwned\x07 &amp;"


_args = mini_args


pytestmark = pytest.mark.usefixtures("cli_cache_env")


@pytest.fixture
def hostile_mini(mini: Path) -> Path:
    """The small set with a hostile slice name on m01."""
    path = mini / "golden" / "questions.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["slices"] = [*first["slices"], HOSTILE]
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return mini


# ---- the gate -----------------------------------------------------------------------------------


def test_thresholds_parse_as_ir_measures_names():
    assert parse_threshold("recall@3=0.8") == Threshold(Measure("R", 3), 0.8)
    assert parse_threshold(" hybrid : nDCG@3 = 0.7 ") == Threshold(
        Measure("nDCG", 3), 0.7, "hybrid"
    )
    assert parse_threshold("P(rel=2)@5=0.5") == Threshold(Measure("P", 5, rel=2), 0.5)
    assert parse_threshold("MRR=0.5").measure == Measure("RR")
    assert parse_threshold("bm25:R@3=1").spec == "bm25:R@3=1"
    for bad, problem in [
        ("recall@3", "expected METRIC=VALUE"),
        ("recall@3=", "expected METRIC=VALUE"),
        ("recall@3=high", "'high' is not a number"),
        ("recall@3=nan", "not a finite number"),
        ("bogus@3=0.5", "unknown measure 'bogus'"),
        ("hybrid:=0.5", "expected RETRIEVER:METRIC=VALUE"),
        ("recall=0.5", "R needs a cut-off"),
    ]:
        with pytest.raises(InputError, match=re.escape(problem)):
            parse_threshold(bad)


def test_a_shortfall_hidden_by_rounding_is_shown_with_more_digits():
    result = GateResult(Threshold(Measure("R", 3), 0.8), "hybrid", 0.7996)
    assert not result.passed
    assert result.describe() == "hybrid R@3 = 0.7996, below 0.8000"
    assert GateResult(Threshold(Measure("R", 3), 0.8), "bm25", 0.8).passed


def test_fail_under_exits_1_and_names_every_shortfall(mini, mini_settings, capsys):
    ws = Workspace.open(mini_settings)
    means = measure_means(ws, [Measure("R", 1), Measure("nDCG", 3)])
    bar = max(m["R@1"] for m in means.values()) + 0.01  # every retriever falls short
    best = max(ws.retrievers, key=lambda n: means[n]["nDCG@3"])
    argv = [
        "eval",
        *_args(mini),
        "--fail-under",
        f"recall@1={bar}",
        "--fail-under",
        f"{best}:nDCG@3={means[best]['nDCG@3']}",  # exactly the mean: passes
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    named = [line for line in err if line.startswith("ragtui: fell short: ")]
    assert [line.split()[3] for line in named] == ws.retrievers
    for line, name in zip(named, ws.retrievers, strict=True):
        assert f"{name} R@1 = {fmt(means[name]['R@1'])}, below {fmt(bar)}" in line
    # The same with --json: stdout is the JSON object alone, with the checks in it.
    assert main([*argv, "--json"]) == 1
    checks = json.loads(capsys.readouterr().out)["fail_under"]
    assert [(c["retriever"], c["measure"], c["passed"]) for c in checks] == [
        *((n, "R@1", False) for n in ws.retrievers),
        (best, "nDCG@3", True),
    ]
    assert all(c["value"] == pytest.approx(means[c["retriever"]][c["measure"]]) for c in checks)
    # A threshold for one retriever names only that one.
    assert main(["eval", *_args(mini), "--fail-under", f"vector:R@1={bar}"]) == 1
    named = [x for x in capsys.readouterr().err.splitlines() if "fell short" in x]
    assert len(named) == 1 and named[0].startswith("ragtui: fell short: vector R@1 = ")
    # Bars every retriever reaches: exit 0.
    lowest = min(m["R@1"] for m in means.values())
    assert main(["eval", *_args(mini), "--fail-under", f"R@1={lowest}"]) == 0
    assert f"all {len(ws.retrievers)} checks passed" in capsys.readouterr().err


def test_fail_under_bad_input_is_exit_2_before_anything_loads(mini, capsys):
    with pytest.raises(SystemExit) as usage:
        main(["eval", *_args(mini), "--fail-under", "recal@3=0.8"])
    assert usage.value.code == 2
    assert "argument --fail-under: unknown measure 'recal'" in capsys.readouterr().err
    assert (
        main(["eval", *_args(mini), "--retrievers", "bm25", "--fail-under", "vector:R@3=0.8"]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert err == (
        "ragtui: error: --fail-under vector:R@3=0.8: no retriever 'vector' is shown (shown: bm25)"
    )


# ---- the report ---------------------------------------------------------------------------------


def _md_tables(markdown: str) -> dict[str, list[list[str]]]:
    """Each ``## heading``'s table as rows of cells (split on unescaped pipes, escapes undone)."""
    tables: dict[str, list[list[str]]] = {}
    heading = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            tables[heading] = []
        elif line.startswith("|") and not line.startswith("|---"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            tables[heading].append(
                [html.unescape(re.sub(r"\\(.)", r"\1", c.strip())).strip("*") for c in cells]
            )
    return tables


def test_markdown_and_html_show_the_evaluations_numbers(hostile_mini, mini_settings):
    settings = dataclasses.replace(mini_settings, golden=hostile_mini / "golden")
    ws = Workspace.open(settings)
    full = full_report(ws)
    markdown = to_markdown(full)
    tables = _md_tables(markdown)
    ev = ws.evaluation
    assert ev is not None
    metrics = tables["Metrics"]
    assert metrics[0] == [
        "retriever",
        "recall@3",
        "precision@3",
        "precision ceiling",
        "MRR",
        "nDCG@3",
    ]
    for row, name in zip(metrics[1:], ws.retrievers, strict=True):
        s = ev.summary(name)
        assert row == [
            name,
            *(fmt(v) for v in (s.recall, s.precision, s.precision_ceiling, s.mrr, s.ndcg)),
        ]
    # Every row of every table has as many cells as its header: the hostile pipe did not split one.
    assert len(tables) >= 4
    for heading, rows in tables.items():
        assert not rows or {len(r) for r in rows} == {len(rows[0])}, heading
    slices = tables["Per slice"]
    shown = next(r[0] for r in slices if "script" in r[0])
    assert shown == "<script>alert(1)</script> | *x* \\x1b]0;pwned\\x07 &amp;"
    curve = tables["Recall@k curve"]
    curves = recall_curves(ws)
    depth = min(ws.settings.depth, len(ws.data.chunks))  # no ranking holds more than every chunk
    assert [r[0] for r in curve[1:]] == [str(k) for k in range(1, depth + 1)]
    for j, name in enumerate(ws.retrievers, start=1):
        assert [r[j] for r in curve[1:]] == [fmt(v) for v in curves[name]]
    # No control character and no live markup reaches either format.
    page = to_html(full)
    for text in (markdown, page):
        assert "\x1b" not in text and "\x07" not in text
    assert "<script>" not in markdown and "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; | *x* \\x1b]0;pwned\\x07 &amp;amp;" in page
    # Compute once, draw twice: every word of the report is in both renderings.
    plain_page = html.unescape(re.sub(r"<[^>]+>", " ", page))
    plain_markdown = "\n".join(
        " ".join(r) for rows in tables.values() for r in rows
    ) + html.unescape(re.sub(r"\\(.)", r"\1", markdown))
    for word in full.report.words():
        shown_word = word.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
        assert shown_word in plain_page, word
        assert shown_word in plain_markdown, word


def test_the_html_page_is_self_contained_and_plots_the_curves(mini_settings):
    ws = Workspace.open(mini_settings)
    page = to_html(full_report(ws))
    assert page.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # Nothing is loaded from anywhere: the only URL is the SVG namespace.
    assert re.findall(r"(?:https?:)?//[\w.-]+", page) == ["http://www.w3.org"]
    assert not re.search(r"<(script|link|img|iframe)\b", page) and "src=" not in page
    svg = page[page.index("<svg") : page.index("</svg>")]
    lines = re.findall(r'<polyline fill="none" stroke="(#\w+)"[^>]*points="([^"]+)"', svg)
    assert [colour for colour, _ in lines] == list(PALETTE[: len(ws.retrievers)])
    # Each point sits where its value says: y maps recall 0..1 onto the plot's height.
    curves = recall_curves(ws)
    top, plot_h = 20, 360 - 20 - 44
    for (_, points), name in zip(lines, ws.retrievers, strict=True):
        ys = [float(p.split(",")[1]) for p in points.split()]
        assert [1 - (y - top) / plot_h for y in ys] == pytest.approx(curves[name], abs=1e-3)
    for name in ws.retrievers:
        assert f"<title>{name}: recall@1 = {fmt(curves[name][0])}</title>" in svg


def test_curve_svg_draws_the_baseline_dashed():
    svg = curve_svg({"bm25": [0.5, 1.0]}, {"bm25": [0.25, 0.5]}, "base", k=1)
    assert svg.count("<polyline") == 2 and svg.count('stroke-dasharray="6 4"') == 2  # line + legend
    assert "bm25 (base)" in svg and ">k=1<" in svg


def test_md_escape_keeps_numbers_and_escapes_markup():
    assert (
        md_escape("0.745") == "0.745"
        and md_escape("-1.40") == "-1.40"
        and md_escape("+0.012") == "+0.012"
    )
    assert md_escape("- item") == "\\- item" and md_escape("1. item") == "\\1. item"
    assert (
        md_escape("a|b") == "a\\|b"
        and md_escape("<b>") == "\\<b\\>"
        and md_escape("x\ny") == "x\\\\x0ay"  # renders as x\\x0ay
    )


def test_report_against_a_baseline_run(mini, mini_settings, capsys, tmp_path):
    assert main(["eval", *_args(mini), "--save", "base"]) == 0
    base = load_run(mini / "golden" / "runs" / "base.json")
    # A hand grade that makes a chunk in bm25's top 3 for m03 relevant raises its precision@3.
    ws = Workspace.open(mini_settings)
    grades = ws.grades.effective_grades("m03")
    chunk = next(cid for cid, _ in ws.ranking("bm25", "m03")[:3] if grades.get(cid, 0) < 1)
    ws.set_grade("m03", chunk, 2)
    out_file = tmp_path / "report.md"
    capsys.readouterr()
    assert (
        main(
            [
                "report",
                *_args(mini),
                "--baseline",
                "base",
                "--output",
                str(out_file),
                "--fail-under",
                "R@1=1",  # one question has two relevant chunks: R@1 < 1 for all
            ]
        )
        == 1
    )
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"wrote the markdown report to {out_file}" in captured.err
    assert captured.err.count("fell short") == len(ws.retrievers)
    tables = _md_tables(out_file.read_text())
    rows = tables["Against the baseline run base"]
    assert rows[0][:5] == ["retriever", "measure", "base", "now", "change"]
    ws = Workspace.open(mini_settings)
    expected = []
    for name in ws.retrievers:
        comparison = compare_systems(
            base.system(name), system_from_workspace(ws, name), default_measures(3)
        )
        for m in comparison.metrics:
            expected.append(
                [name, m.measure, fmt(m.mean_a), fmt(m.mean_b), f"{m.mean_difference:+.3f}"]
            )
    assert [r[:5] for r in rows[1:]] == expected
    assert [r[4] for r in rows[1:] if r[:2] == ["bm25", "P@3"]] != ["+0.000"]
    assert tables["Gate (--fail-under)"][1][-1] == "FAIL"


def test_report_refuses_an_unknown_baseline_at_once(mini, capsys):
    assert main(["report", *_args(mini), "--baseline", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope: no such saved run or file" in err and len(err.strip().splitlines()) == 1


def test_report_html_to_stdout(mini, capsys):
    assert main(["report", *_args(mini), "--format", "html", "--retrievers", "bm25"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<polyline") == 1


def test_gate_results_follow_the_order_given(mini_settings):
    ws = Workspace.load(dataclasses.replace(mini_settings, retrievers=("bm25",)))
    results = check_thresholds(ws, [parse_threshold("nDCG@3=0"), parse_threshold("bm25:R@1=1")])
    assert [(r.retriever, r.threshold.measure.name, r.passed) for r in results] == [
        ("bm25", "nDCG@3", True),
        ("bm25", "R@1", False),
    ]
