"""The headless commands end to end: eval, --json, export (checked by pytrec_eval), check, bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from tests.conftest import CRANFIELD, ROOT, mini_args, settings_of

_args = mini_args


pytestmark = pytest.mark.usefixtures("cli_cache_env")


def _run(*argv: str, cache_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-m", "ragtui", *argv], capture_output=True, text=True, env=env, cwd=ROOT
    )


def test_eval_prints_the_table(mini, capsys):
    assert main(["eval", *_args(mini)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("6 questions (1 skipped, no judgement: m07); 9 chunks; k=3, depth=10")
    assert out[1].split() == ["retriever", "recall@3", "precision@3", "(ceiling)", "MRR", "nDCG@3"]
    assert [line.split()[0] for line in out[2:]] == ["bm25", "vector", "hybrid"]


def test_json_numbers_equal_pytrec_eval_on_the_exported_files(mini, tmp_path, capsys):
    # A hand label that disagrees with the evidence rule, so the qrels are not just the rule.
    labels = mini / "golden" / "labels.jsonl"
    assert main(["eval", "--json", *_args(mini)]) == 0
    report = json.loads(capsys.readouterr().out)
    first = report["retrievers"]["bm25"]["per_question"]["m02"]["ranked"][0]
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(settings_of(mini, retrievers=("bm25",)))
    ws.set_grade("m02", first, 0)
    ws.set_grade("m03", ws.ranking("bm25", "m03")[1][0], 1)
    assert labels.read_text().count("\n") == 2

    for k in (1, 3, 5):
        assert main(["eval", "--json", "--k", str(k), *_args(mini)]) == 0
        report = json.loads(capsys.readouterr().out)
        out = tmp_path / f"export{k}"
        assert main(["export", str(out), "--k", str(k), *_args(mini)]) == 0
        capsys.readouterr()
        qrels = read_trec_qrels(out / "qrels.trec")
        measures = {f"recall_{k}", f"P_{k}", "recip_rank", f"ndcg_cut_{k}"}
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
        for name in ("bm25", "vector", "hybrid"):
            run_ranked = read_trec_run(out / f"{name}.trec")
            run = {
                q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in run_ranked.items()
            }
            reference = evaluator.evaluate(run)
            ours = report["retrievers"][name]
            assert set(ours["per_question"]) == set(report["retrievers"]["bm25"]["per_question"])
            for qid, values in ours["per_question"].items():
                ref = reference[qid]
                assert values["recall"] == pytest.approx(ref[f"recall_{k}"], abs=1e-12)
                assert values["precision"] == pytest.approx(ref[f"P_{k}"], abs=1e-12)
                assert values["rr"] == pytest.approx(ref["recip_rank"], abs=1e-12)
                assert values["ndcg"] == pytest.approx(ref[f"ndcg_cut_{k}"], abs=1e-12)
                assert run_ranked[qid] == values["ranked"], "trec_eval sees the order the app shows"
            mean = (
                sum(reference[q][f"ndcg_cut_{k}"] for q in ours["per_question"])
                / report["questions"]
            )
            assert ours["ndcg"] == pytest.approx(mean, abs=1e-12)
    # The hand 0 on m02's only relevant chunk leaves it judged with none relevant: it counts with
    # zeros, as pytrec_eval counts it (the means above agree); only m07, with no judgement, is skipped.
    assert report["skipped"] == ["m07"]
    assert report["retrievers"]["bm25"]["per_question"]["m02"]["recall"] == 0.0
    # The hand 1 gave m03 a second relevant chunk, at bm25 rank 2.
    assert report["retrievers"]["bm25"]["per_question"]["m03"]["precision"] == pytest.approx(2 / 5)


def test_json_is_the_only_thing_on_stdout(mini, cache_dir):
    done = _run("eval", "--json", *_args(mini), cache_dir=cache_dir)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # The original contract's six top-level keys, plus the keys added since (slices, level, retired,
    # skipped_causes, grades, unit, definitions, grades_not_applying); none removed or renamed.
    assert report["level"] == "chunk"
    assert report["grades"] == "human"
    assert report["unit"] == "chunks" and report["grades_not_applying"] == 0
    added = {"slices", "level", "retired", "skipped_causes", "grades", "unit", "definitions"}
    assert set(report) - added - {"grades_not_applying"} == {
        "k",
        "depth",
        "questions",
        "skipped",
        "chunks",
        "retrievers",
    }
    assert report["skipped"] == ["m07"] and report["chunks"] == 9
    assert set(report["retrievers"]["hybrid"]) >= {
        "recall",
        "precision",
        "precision_ceiling",
        "mrr",
        "ndcg",
        "per_question",
    }


def test_warm_cache_run_does_not_import_the_model(mini, cache_dir):
    code = (
        "import sys; from ragtui.cli import main;"
        f"rc = main(['eval', '--json', {', '.join(repr(a) for a in _args(mini))}]);"
        "print('IMPORTED' if 'sentence_transformers' in sys.modules or 'torch' in sys.modules else 'CLEAN', file=sys.stderr)"
    )
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir)}
    first = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert second.returncode == 0 and second.stderr.strip().endswith("CLEAN")
    assert json.loads(second.stdout) == json.loads(first.stdout)


def test_check_reports_problems_and_exits_1(mini, capsys):
    assert main(["check", *_args(mini)]) == 1
    out = capsys.readouterr().out
    assert (
        "questions.jsonl:7: m07: evidence 'the town swimming pool opens at dawn' is in no document"
        in out
    )
    (mini / "golden" / "questions.jsonl").write_text(
        "\n".join(
            line
            for line in (mini / "golden" / "questions.jsonl").read_text().splitlines()
            if '"m07"' not in line
        )
        + "\n"
    )
    assert main(["check", *_args(mini)]) == 0


def test_check_finds_evidence_straddling_a_boundary_and_stale_labels(mini, capsys):
    # With small chunks, the whole fares table no longer fits in one chunk.
    q = mini / "golden" / "questions.jsonl"
    q.write_text(
        q.read_text()
        + '{"id": "m08", "question": "x", "evidence": "| single adult | 3.20 EUR | | return adult | 5.80 EUR |"}\n'
    )
    (mini / "golden" / "labels.jsonl").write_text(
        '{"question": "m01", "chunk": "ferry.md#99", "grade": 2, "chunk_sha1": "x", "at": ""}\n'
        '{"question": "m01", "chunk": "ferry.md#0", "grade": 1, "chunk_sha1": "0000", "at": ""}\n'
    )
    assert main(["check", *_args(mini, "--chunk-size", "12")]) == 1
    out = capsys.readouterr().out
    assert "m08: evidence" in out and "straddles a chunk boundary: ferry.md#" in out
    assert (
        "labels.jsonl:1: m01: stale label for ferry.md#99 (grade 2): chunk not in the chunked corpus"
        in out
    )
    assert (
        "labels.jsonl:2: m01: stale label for ferry.md#0 (grade 1): chunk text changed since it was labelled"
        in out
    )


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda m: ["--corpus", str(m / "nope")], "nope: corpus folder not found"),
        (
            lambda m: (m / "empty").mkdir() or ["--corpus", str(m / "empty")],
            "holds no non-empty .md",
        ),
        (
            lambda m: (m / "corpus" / "bad.md").write_bytes(b"ok\nbad \xff byte\n") and [],
            "bad.md:2: not UTF-8 text",
        ),
        (
            lambda m: (
                (m / "golden" / "questions.jsonl").write_text(
                    '{"id": "a", "question": "b", "evidence": "c"}\n{oops\n'
                )
                and []
            ),
            "questions.jsonl:2: malformed JSON",
        ),
        (
            lambda m: (
                (m / "golden" / "questions.jsonl").write_text(
                    '{"id": "a", "question": "b", "evidence": "c"}\n{"id": "a", "question": "d", "evidence": "e"}\n'
                )
                and []
            ),
            "questions.jsonl:2: duplicate question id 'a'",
        ),
        (lambda m: ["--retrievers", "bm25,splade"], "--retrievers: unknown splade"),
    ],
)
def test_bad_input_exits_2_with_one_line(mini, cache_dir, setup, expected):
    extra = setup(mini) or []
    done = _run("eval", *_args(mini), *extra, cache_dir=cache_dir)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith("ragtui: error: ") and expected in lines[0]


def test_bundled_data_is_found_from_any_directory(tmp_path, cache_dir):
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "ragtui", "check", "--retrievers", "bm25"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 problems" in done.stdout


def test_cranfield_bm25_ndcg_matches_the_reference(capsys):
    assert (
        main(
            [
                "eval",
                "--json",
                "--beir",
                str(CRANFIELD),
                "--retrievers",
                "bm25",
                "--k",
                "10",
                "--depth",
                "100",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["questions"] == 225 and report["chunks"] == 1400
    bm25 = report["retrievers"]["bm25"]
    # The reference figures of tests/data/cranfield/SOURCE.md, printed to 4 decimals there.
    assert (round(bm25["ndcg"], 4), round(bm25["recall"], 4), round(bm25["mrr"], 4)) == (
        0.3373,
        0.3721,
        0.4962,
    )


def test_embedding_progress_in_a_log_is_two_lines(mini, capsys, tmp_path, monkeypatch):
    """stderr that is not a terminal (CI) gets no progress bar: a line when embedding starts and one
    with the rate when it is done, and nothing more (a line every RAGTUI_PROGRESS_SECONDS between:
    tests/system/test_progress_lines.py)."""
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(tmp_path / "cold"))
    monkeypatch.setenv("RAGTUI_PROGRESS_SECONDS", "3600")
    assert main(["eval", *_args(mini, "--retrievers", "vector")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert re.fullmatch(r"ragtui: embedding \d+ texts\.\.\.", err[0])
    assert re.fullmatch(r"ragtui: embedding: \d+ texts in [\d.]+ s \([\d.]+ texts/s\)", err[1])
    # Warm: nothing to embed, nothing said.
    assert main(["eval", *_args(mini, "--retrievers", "vector")]) == 0
    assert capsys.readouterr().err == ""
