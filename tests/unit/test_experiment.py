"""``ragtui experiment``: variants read from the project file, evaluated on the small corpus, compared
with the baseline question by question, corrected for the number of comparisons, judged per variant,
saved as runs, and printed as text and JSON that say the same."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from statsmodels.stats.multitest import multipletests

from ragtui.cli import main
from ragtui.cli.output import render_report
from ragtui.core.analysis.experiment import run_experiment
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import Measure, system_from_workspace
from ragtui.core.metrics.significance import compare_systems
from ragtui.core.project import load_project
from ragtui.core.variants import baseline_of, variant_settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI_CHUNK_SIZE

PROJECT = """
corpus = "corpus"
golden = "golden"
chunk-size = 48

[variants]
baseline = "c48"

[variants.c48]

[variants.c24]
chunk-size = 24

[variants.c48-off]
windows = "off"
"""


@pytest.fixture
def project(mini: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> Path:
    """The small corpus with a project file of three variants, the working folder set to it."""
    (mini / "ragtui.toml").write_text(PROJECT)
    monkeypatch.chdir(mini)
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    return mini / "ragtui.toml"


def _settings(project: Path, cache_dir: Path):
    loaded = load_project(project)
    from ragtui.core.project import effective_settings

    return replace(effective_settings({}, loaded).settings, cache_dir=cache_dir)


# ---- the project file -------------------------------------------------------------------------------


def test_variants_are_read_in_order_with_their_baseline(project, cache_dir):
    settings = _settings(project, cache_dir)
    assert [v.name for v in settings.variants] == ["c48", "c24", "c48-off"]
    assert settings.variants[0].overrides == ()
    assert settings.variants[1].overrides == (("chunk_size", 24),)
    assert baseline_of(settings).name == "c48"
    assert variant_settings(settings, "c24").chunk_size == 24
    assert variant_settings(settings, "c48-off").windows == "off"
    assert variant_settings(settings, "c48-off").chunk_size == MINI_CHUNK_SIZE
    # Without a baseline key, the first variant is the baseline.
    project.write_text(PROJECT.replace('baseline = "c48"\n', ""))
    assert baseline_of(_settings(project, cache_dir)).name == "c48"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("[variants.a]\nchunk-sise = 4\n", "a: unknown key 'chunk-sise'"),
        ("[variants.a]\nk = 5\n", "a: k cannot change between variants"),
        ("[variants.a]\nchunk-size = 0\n", "a: chunk-size: 0 must be at least 1"),
        ('[variants.a]\nwindows = "half"\n', "a: windows: 'half' is not one of max, mean, off"),
        ('[variants]\nbaseline = "b"\n[variants.a]\n', "baseline 'b' is not a variant (a)"),
        ("[variants]\nx = 3\n", "x: expected a table [variants.x]"),
        ('[variants]\n"../up" = {}\n', "a variant name may hold only letters"),
        ("[variants]\n", "declare at least one variant"),
    ],
)
def test_bad_variants_are_one_line_errors_naming_the_file(
    tmp_path, monkeypatch, capsys, body, problem
):
    (tmp_path / "ragtui.toml").write_text(body)
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ragtui.toml" in err and "[variants]" in err
    assert problem in err


def test_no_variants_is_bad_input(mini, monkeypatch, capsys):
    monkeypatch.chdir(mini)
    assert main(["experiment", "--corpus", "corpus", "--golden", "golden", "--no-save"]) == 2
    assert "no variants: declare [variants.NAME]" in capsys.readouterr().err


# ---- the experiment ---------------------------------------------------------------------------------


def test_experiment_json_on_the_small_corpus(project, mini, capsys, cache_dir):
    ws = Workspace.load(replace(_settings(project, cache_dir), retrievers=("bm25",)))
    # Two hand grades on 48-token chunks: they apply in c48 and c48-off, and are stale at 24 tokens.
    ws.set_grade("m01", "ferry.md#0", 1)
    ws.set_grade("m03", "library.md#0", 0)

    assert main(["experiment", "--json", "--runs-dir", str(mini / "runs")]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["baseline"] == "c48" and body["correction"] == "holm"
    assert body["measures"] == ["R@3", "RR", "nDCG@3"]
    variants = body["variants"]
    assert list(variants) == ["c48", "c24", "c48-off"]
    assert variants["c24"]["settings"] == {"chunk-size": 24}
    assert (
        variants["c48"]["hand_grades"]["apply"] == 2
        and variants["c48"]["hand_grades"]["stale"] == 0
    )
    assert variants["c24"]["hand_grades"]["stale"] == 2
    assert variants["c24"]["judged_like_baseline"] is False
    assert variants["c48-off"]["judged_like_baseline"] is True
    assert variants["c48-off"]["windows"] == "off"

    rows = body["rows"]
    assert len(rows) == 3 * 3 * 3
    assert {(r["variant"], r["retriever"], r["measure"]) for r in rows} == {
        (v, r, m)
        for v in variants
        for r in ("bm25", "vector", "hybrid")
        for m in ("R@3", "RR", "nDCG@3")
    }
    baseline_rows = [r for r in rows if r["variant"] == "c48"]
    assert all(r["change"] is None and r["p_value"] is None for r in baseline_rows)
    # c48-off changes nothing on chunks that all fit the model: the same lists, no test.
    off = [r for r in rows if r["variant"] == "c48-off"]
    assert all(r["same_lists"] and r["change"] == 0.0 and r["p_value"] is None for r in off)

    # Each change is the paired comparison of the two variants' own systems, recomputed here.
    settings = _settings(project, cache_dir)
    base_ws = Workspace.open(variant_settings(settings, "c48"))
    c24_ws = Workspace.open(variant_settings(settings, "c24"))
    measures = [Measure("R", 3), Measure("RR"), Measure("nDCG", 3)]
    for retriever in ("bm25", "vector", "hybrid"):
        expected = compare_systems(
            system_from_workspace(base_ws, retriever),
            system_from_workspace(c24_ws, retriever),
            measures,
        )
        for m in expected.metrics:
            row = next(
                r
                for r in rows
                if (r["variant"], r["retriever"], r["measure"]) == ("c24", retriever, m.measure)
            )
            assert row["change"] == pytest.approx(m.mean_difference)
            assert row["p_value"] == pytest.approx(m.p_value)
            assert row["ci95"] == pytest.approx([m.ci_low, m.ci_high])
            assert row["compared"] == len(expected.questions)
    # The correction is Holm's over every tested row, as statsmodels computes it.
    tested = [r for r in rows if r["p_value"] is not None]
    _, reference, _, _ = multipletests([r["p_value"] for r in tested], method="holm")
    assert [r["p_adjusted"] for r in tested] == pytest.approx(list(reference))
    # Thin judgements are flagged where judged@3 is below 0.5.
    assert all(r["thinly_judged"] == (r["judged"] < 0.5) for r in rows)

    # Each variant was saved as a run, and diff reads two of them.
    assert all(Path(v["run"]).is_file() for v in variants.values())
    assert main(["diff", "c48", "c24", "--runs-dir", str(mini / "runs"), "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert ["chunk_size", 48, 24] in diff["settings_changed"]


def test_text_and_json_say_the_same(project, capsys, cache_dir):
    settings = _settings(project, cache_dir)
    result = run_experiment(settings, save=False, correction="bh")
    text = render_report(result.report())
    body = result.as_json()
    assert "p BH" in text and "Benjamini-Hochberg" in text
    for row in body["rows"]:
        if row["change"] is not None:
            assert f"{row['change']:+.3f}" in text
        assert f"{row['mean']:.3f}" in text
    assert result.variant("c24").settings.chunk_size == 24
    assert result.variant("c24").workspace.settings.chunk_size == 24
    with pytest.raises(KeyError):
        result.variant("nope")
    with pytest.raises(InputError, match="no variant 'nope'"):
        variant_settings(settings, "nope")
