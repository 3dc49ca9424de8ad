"""External runs (``--run NAME=path.trec``), saved runs (``eval --save``) and ``ragtui diff`` on the small corpus."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import orjson
import pytest

from ragtui.cli import main
from ragtui.core.analysis.runs import diff_runs, load_run, save_run
from ragtui.core.errors import InputError
from ragtui.core.metrics.formulas import ndcg_at_k, question_metrics
from ragtui.core.retrieval.external import parse_run_spec
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI_CHUNK_SIZE, mini_args

_args = mini_args


pytestmark = pytest.mark.usefixtures("cli_cache_env")


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


# ---- external runs ---------------------------------------------------------------------------------


def test_exported_runs_read_back_give_the_same_numbers(mini, tmp_path, capsys):
    exported = tmp_path / "export"
    assert main(["export", str(exported), *_args(mini)]) == 0
    capsys.readouterr()
    assert (
        main(
            [
                "eval",
                "--json",
                *_args(
                    mini,
                    "--run",
                    f"x={exported / 'bm25.trec'}",
                    "--run",
                    f"h={exported / 'hybrid.trec'}",
                ),
            ]
        )
        == 0
    )
    report = _json(capsys)
    assert list(report["retrievers"]) == ["bm25", "vector", "hybrid", "x", "h"]
    for ours, theirs in (("x", "bm25"), ("h", "hybrid")):
        got, want = report["retrievers"][ours], report["retrievers"][theirs]
        for key in ("recall", "precision", "precision_ceiling", "mrr", "ndcg"):
            assert got[key] == want[key], (ours, key)
        for qid, values in want["per_question"].items():
            assert got["per_question"][qid]["ranked"] == values["ranked"]
            assert got["per_question"][qid]["first_relevant_rank"] == values["first_relevant_rank"]
        for name, body in report["slices"].items():
            assert body[ours] == body[theirs], name
    # An external run is exported like a built-in one.
    again = tmp_path / "again"
    assert (
        main(
            [
                "export",
                str(again),
                "--retrievers",
                "bm25",
                *_args(mini, "--run", f"x={exported / 'bm25.trec'}"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (again / "x.trec").read_text().replace("ragtui-x", "ragtui-bm25") == (
        exported / "bm25.trec"
    ).read_text()


def test_unknown_ids_are_reported_and_still_ranked(mini_settings, tmp_path, capsys):
    run = tmp_path / "engine.trec"
    run.write_text(
        "m01 Q0 ferry.md#1 1 9.5 es\n"
        "m01 Q0 s3://bucket/elsewhere.pdf 2 8.0 es\n"
        "m01 Q0 ferry.md%230 3 7.0 es\n"  # percent-encoded, as ragtui export writes ids
        "m99 Q0 ferry.md#0 1 1.0 es\n"
        "zz1 Q0 ferry.md#0 1 1.0 es\n"
    )
    settings = Settings(
        **{**mini_settings.__dict__, "retrievers": ("bm25",), "runs": (("es", run),)}
    )
    ws = Workspace.load(settings)
    assert ws.retrievers == ["bm25", "es"]
    assert ws.ranking("es", "m01") == [
        ("ferry.md#1", 9.5),
        ("s3://bucket/elsewhere.pdf", 8.0),
        ("ferry.md#0", 7.0),
    ]
    assert ws.ranking("es", "m02") == []
    external = ws.ranked.external["es"]
    assert external.unknown_chunks == ["s3://bucket/elsewhere.pdf"]
    assert external.unknown_questions == ["m99", "zz1"]
    assert external.missing_questions == ["m02", "m03", "m04", "m05", "m06", "m07"]
    joined = "\n".join(ws.warnings)
    assert "1 id not among the corpus chunks (e.g. 's3://bucket/elsewhere.pdf')" in joined
    assert "2 question ids not in the golden set (e.g. 'm99', 'zz1')" in joined
    # The unknown id keeps its rank and counts as not relevant.
    ids = [cid for cid, _ in ws.ranking("es", "m01")]
    assert ws.evaluation.per_question["es"]["m01"] == question_metrics(
        ids, ws.grades.effective_grades("m01"), 3
    )
    # On the command line: warnings on stderr, exit 0, the id shown in the ranked list.
    assert (
        main(
            [
                "eval",
                "--json",
                "--retrievers",
                "bm25",
                *_args(ws.settings.corpus.parent, "--run", f"es={run}"),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert (
        "s3://bucket/elsewhere.pdf"
        in json.loads(captured.out)["retrievers"]["es"]["per_question"]["m01"]["ranked"]
    )
    assert captured.err.count("ragtui: warning: run 'es'") == 3


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("m01 Q0 ferry.md#0 1 2.0\n", "engine.trec:1: expected 6 columns"),
        (
            "m01 Q0 ferry.md#0 1 2.0 t\nm01 Q0 ferry.md#1 2 high t\n",
            "engine.trec:2: score 'high' is not a number",
        ),
        (
            "m01 Q0 ferry.md#0 1 2.0 t\n\nm01 Q0 ferry.md#0 2 1.0 t\n",
            "engine.trec:3: docid 'ferry.md#0' appears twice",
        ),
        ("m01 Q0 ferry.md#0 x 2.0 t\n", "engine.trec:1: rank 'x' is not an integer"),
        ("# only a comment\n", "engine.trec: the run file holds no results"),
        (b"m01 Q0 ferry.md#0 1 2.0 t\nm01 Q0 \xff 2 1.0 t\n", "engine.trec:2: not UTF-8"),
        (None, "engine.trec: run file not found"),
    ],
)
def test_bad_run_files_exit_2_with_one_line(mini, tmp_path, capsys, content, expected):
    run = tmp_path / "engine.trec"
    if isinstance(content, bytes):
        run.write_bytes(content)
    elif content is not None:
        run.write_text(content)
    assert main(["eval", "--retrievers", "bm25", *_args(mini, "--run", f"e={run}")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragtui: error: ") and expected in lines[0], (
        lines
    )
    assert captured.out == ""


def test_run_specs():
    assert parse_run_spec("es=runs/es.trec") == ("es", Path("runs/es.trec"))
    assert parse_run_spec("runs/bm25-tuned.trec") == ("bm25-tuned", Path("runs/bm25-tuned.trec"))
    assert parse_run_spec("a=b=c.trec") == ("a", Path("b=c.trec"))
    for bad, problem in (
        ("bm25=x.trec", "built-in retriever"),
        ("../x=y.trec", "letters, digits"),
        ("a b=x", "letters, digits"),
        ("x=", "expected NAME=path"),
    ):
        with pytest.raises(InputError) as caught:
            parse_run_spec(bad)
        assert problem in caught.value.message, bad


def test_duplicate_run_names_are_refused(mini, tmp_path, capsys):
    run = tmp_path / "r.trec"
    run.write_text("m01 Q0 ferry.md#0 1 1.0 t\n")
    assert (
        main(
            ["eval", "--retrievers", "bm25", *_args(mini, "--run", f"r={run}", "--run", f"r={run}")]
        )
        == 2
    )
    assert "the name 'r' is taken" in capsys.readouterr().err


# ---- saved runs and diffs --------------------------------------------------------------------------


def test_save_writes_ranks_values_and_manifest(mini, tmp_path, capsys):
    labels = mini / "golden" / "labels.jsonl"
    assert main(["eval", "--save", "base line", *_args(mini)]) == 0
    captured = capsys.readouterr()
    path = mini / "golden" / "runs" / "base_line.json"
    assert f"saved run 'base line' to {path}" in captured.err
    saved = orjson.loads(path.read_bytes())
    manifest = saved["manifest"]
    assert manifest["chunk_size"] == MINI_CHUNK_SIZE and manifest["overlap"] == 0
    assert manifest["model"] == manifest["tokenizer"] == "all-MiniLM-L6-v2"
    assert manifest["bm25"] == "BM25Okapi (rank-bm25) k1=1.5 b=0.75"
    assert (manifest["rrf_k"], manifest["k"], manifest["depth"], manifest["threshold"]) == (
        60,
        3,
        10,
        1,
    )
    assert manifest["ragtui_version"] and manifest["created"][:2] == "20"
    assert manifest["labels_sha256"] == hashlib.sha256(labels.read_bytes()).hexdigest()
    assert manifest["retrievers"] == ["bm25", "vector", "hybrid"]
    hybrid = saved["retrievers"]["hybrid"]
    assert (
        hybrid["per_question"]["m01"]["first_relevant_rank"] >= 1
        and len(hybrid["per_question"]["m01"]["ranked"]) == 9
    )
    assert set(hybrid["per_question"]["m01"]) >= {
        "first_relevant_rank",
        "recall",
        "precision",
        "rr",
        "ndcg",
        "ranked",
    }
    assert saved["questions"]["m01"]["grades"] and saved["questions"]["m07"]["evaluated"] is False
    # A name cannot leave the runs folder.
    assert main(["eval", "--save", "../../escape", "--retrievers", "bm25", *_args(mini)]) == 0
    capsys.readouterr()
    assert (mini / "golden" / "runs" / "_.._escape.json").is_file()
    assert not (mini / "escape.json").exists() and not (tmp_path.parent / "escape.json").exists()
    loaded = load_run(path)
    assert loaded.retrievers == ["bm25", "vector", "hybrid"] and loaded.k == 3


def test_diff_of_a_known_change(mini_settings, tmp_path, capsys):
    """Two saved runs that differ only in one question's external ranking: exactly that question moves."""
    ws = Workspace.load(Settings(**{**mini_settings.__dict__, "retrievers": ("bm25",)}))
    lines = [
        f"{q} Q0 {cid} {r} {100 - r} t"
        for q in ("m01", "m03", "m05")
        for r, (cid, _) in enumerate(ws.ranking("bm25", q), start=1)
    ]
    before, after = tmp_path / "before.trec", tmp_path / "after.trec"
    before.write_text("\n".join(lines) + "\n")
    # Reverse m03's list: its relevant chunk at rank r moves to rank n - r + 1.
    m03 = [cid for cid, _ in ws.ranking("bm25", "m03")]
    changed = [line for line in lines if not line.startswith("m03 ")] + [
        f"m03 Q0 {cid} {r} {100 - r} t" for r, cid in enumerate(reversed(m03), start=1)
    ]
    after.write_text("\n".join(changed) + "\n")
    runs = tmp_path / "runs"
    for name, path in (("before", before), ("after", after)):
        assert (
            main(
                [
                    "eval",
                    "--retrievers",
                    "bm25",
                    "--save",
                    name,
                    "--runs-dir",
                    str(runs),
                    *_args(mini_settings.corpus.parent, "--run", f"ext={path}"),
                ]
            )
            == 0
        )
    capsys.readouterr()

    rank_before = ws.evaluation.per_question["bm25"]["m03"].first_relevant_rank
    rank_after = len(m03) - rank_before + 1
    assert main(["diff", "before", "after", "--retriever", "ext", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "diff before:ext -> after:ext: k=3, 6 questions in both"
    assert (
        out[1].startswith("settings changed: external") is False
    )  # file paths of external runs are not settings
    row = next(line for line in out if line.startswith("m03 "))
    gains = ws.grades.effective_grades("m03")
    ndcg_before, ndcg_after = ndcg_at_k(m03, gains, 3), ndcg_at_k(list(reversed(m03)), gains, 3)
    assert f"{rank_before} -> {rank_after}" in row and f"{ndcg_after - ndcg_before:+.3f}" in row
    assert sum(1 for line in out if line.startswith("m0")) == 1
    assert "1 worse, 0 better, 5 unchanged" in out
    mean_line = next(line for line in out if line.startswith("mean: "))
    assert f"({(ndcg_after - ndcg_before) / 6:+.3f})" in mean_line

    assert (
        main(
            [
                "diff",
                "before",
                "after",
                "--retriever",
                "ext",
                "--k",
                "10",
                "--json",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    body = _json(capsys)
    assert body["k"] == 10 and body["retrievers"] == ["ext", "ext"]
    worst = body["changes"][0]
    assert (
        worst["question"] == "m03"
        and worst["direction"] == "worse"
        and worst["rank_a"] == rank_before
    )

    # The same diff through the core, against bm25 of the current workspace.
    saved = load_run(runs / "after.json")
    direct = diff_runs(saved.system("ext"), saved.system("bm25"), 3)
    # ext holds m01, m03 and m05 only: bm25 is better on m03 (reversed) and on the questions ext left empty.
    assert {c.question for c in direct.better} == {
        "m02",
        "m03",
        "m04",
        "m06",
    } and direct.worse == []


def test_diff_lists_settings_that_changed_and_bad_names_exit_2(mini, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert (
        main(
            [
                "eval",
                "--retrievers",
                "bm25",
                "--save",
                "small",
                "--runs-dir",
                str(runs),
                *_args(mini),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "eval",
                "--retrievers",
                "bm25",
                "--save",
                "large",
                "--runs-dir",
                str(runs),
                *_args(mini, "--chunk-size", "96"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["diff", "small", "large", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("diff small:bm25 -> large:bm25: k=3")
    assert out[1].startswith("settings changed: chunk_size 48 -> 96; chunks 9 -> ")
    assert main(["diff", "small", "missing", "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "missing: no such saved run or file; saved runs in" in err[0]
        and "large, small" in err[0]
    )
    (runs / "broken.json").write_text("{not json")
    assert main(["diff", "small", "broken", "--runs-dir", str(runs)]) == 2
    assert "broken.json: malformed JSON" in capsys.readouterr().err
    assert main(["diff", "small", "large", "--retriever", "hybrid", "--runs-dir", str(runs)]) == 2
    assert "has no retriever 'hybrid'; it has bm25" in capsys.readouterr().err


def test_save_run_core_api(mini_settings, tmp_path):
    ws = Workspace.load(Settings(**{**mini_settings.__dict__, "retrievers": ("bm25",)}))
    path = save_run(ws, "api", tmp_path)
    run = load_run(path)
    system = run.system("bm25")
    assert system.evaluated() == sorted(ws.evaluation.evaluated)
    assert run.summaries["bm25"]["ndcg"] == ws.evaluation.summary("bm25").ndcg
    with pytest.raises(InputError):
        save_run(ws, "...", tmp_path)


def test_a_run_named_like_a_builtin_retriever_is_one_line(capsys):
    """--run's own check raises while the options are parsed: one line and exit 2, no traceback."""
    from ragtui.cli import main

    assert main(["eval", "--run", "bm25=whatever.trec"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "ragtui: error: --run 'bm25=whatever.trec': 'bm25' is a built-in retriever; choose another name"
    ]
