"""Compare and explain on Cranfield (1,400 documents, 225 queries, graded qrels): bm25 plus external runs
generated from its export, so nothing is embedded."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.export import export_trec
from ragtui.core.analysis.runs import save_run
from ragtui.core.analysis.slices import slices_json
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from ragtui.core.metrics.measures import parse_measures, system_from_workspace
from ragtui.core.metrics.significance import compare_systems, paired_randomization_test
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD

#: Every third query has its top 10 reversed in the "worse" run.
CHANGED_EVERY = 3


@pytest.fixture(scope="module")
def cran(tmp_path_factory) -> tuple[Workspace, Path]:
    """bm25 on Cranfield with two external runs: ``x`` (bm25's own export) and ``worse`` (some top 10s reversed)."""
    folder = tmp_path_factory.mktemp("cranfield-runs")
    settings = Settings(beir=CRANFIELD, chunk_size=None, retrievers=("bm25",), k=10, depth=100)
    export_trec(Workspace.load(settings), folder)
    ranked = read_trec_run(folder / "bm25.trec")
    lines = []
    for i, (qid, docs) in enumerate(ranked.items()):
        order = docs[:10][::-1] + docs[10:] if i % CHANGED_EVERY == 0 else docs
        lines += [f"{qid} Q0 {doc} {r} {1000 - r} worse" for r, doc in enumerate(order, start=1)]
    lines.append("1 Q0 not-a-doc 0 999.5 worse")  # an id the corpus does not have, ranked first
    lines.append("9999 Q0 184 1 7.0 worse")  # a query the golden set does not have
    (folder / "worse.trec").write_text("\n".join(lines) + "\n")
    runs = (("x", folder / "bm25.trec"), ("worse", folder / "worse.trec"))
    return Workspace.load(replace(settings, runs=runs)), folder


def test_external_export_of_bm25_gives_bm25s_numbers(cran):
    ws, _ = cran
    assert ws.retrievers == ["bm25", "x", "worse"]
    ev = ws.evaluation
    assert ev.summary("x") == ev.summary("bm25")
    assert ev.per_question["x"] == ev.per_question["bm25"]
    # The reference figures of tests/data/cranfield/SOURCE.md.
    means = {
        m.name: system_from_workspace(ws, "x").values(m, sorted(ev.evaluated)).mean()
        for m in parse_measures("R@10,RR,nDCG@10")
    }
    assert (round(means["R@10"], 4), round(means["RR"], 4), round(means["nDCG@10"], 4)) == (
        0.3721,
        0.4962,
        0.3373,
    )
    warnings = "\n".join(ws.warnings)
    assert (
        "run 'worse'" in warnings
        and "1 id not among the corpus chunks (e.g. 'not-a-doc')" in warnings
    )
    assert "1 question id not in the golden set (e.g. '9999')" in warnings
    assert (
        ws.ranking("worse", "1")[0] == ("not-a-doc", 999.5) and len(ws.ranking("worse", "1")) == 100
    )


def test_measures_equal_pytrec_eval_on_graded_qrels(cran, tmp_path):
    ws, _ = cran
    export_trec(ws, tmp_path)
    qrels = read_trec_qrels(tmp_path / "qrels.trec")
    names = {
        "R@10": "recall_10",
        "P@5": "P_5",
        "RR": "recip_rank",
        "nDCG@10": "ndcg_cut_10",
        "Success@1": "success_1",
        "AP@100": "map_cut_100",
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(names.values()))
    ranked = read_trec_run(tmp_path / "worse.trec")
    reference = evaluator.evaluate(
        {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()}
    )
    system = system_from_workspace(ws, "worse")
    evaluated = sorted(ws.evaluation.evaluated)
    for measure in parse_measures(list(names)):
        ours = system.values(measure, evaluated)
        theirs = np.array([reference[q][names[measure.name]] for q in evaluated])
        assert np.allclose(ours, theirs, atol=1e-12), measure.name
    # Grades 1..4: exponential gain is another measure, never the default.
    linear, exponential = (
        system.values(m, evaluated).mean() for m in parse_measures("nDCG@10,nDCG_exp@10")
    )
    assert linear == pytest.approx(
        ws.evaluation.summary("worse").ndcg
    ) and exponential != pytest.approx(linear)


def test_compare_finds_the_reversed_top_10s(cran):
    ws, _ = cran
    bm25, worse, same = (system_from_workspace(ws, n) for n in ("bm25", "worse", "x"))
    measures = parse_measures("nDCG@10,RR,R@10")
    result = compare_systems(bm25, worse, measures)
    assert len(result.questions) == 225
    by_name = {m.measure: m for m in result.metrics}
    ndcg, rr, recall = by_name["nDCG@10"], by_name["RR"], by_name["R@10"]
    assert ndcg.mean_difference < 0 and ndcg.p_value < 0.001 and ndcg.ci_high < 0
    assert ndcg.wins + ndcg.ties + ndcg.losses == 225 and ndcg.losses > ndcg.wins
    assert rr.p_value < 0.001
    # Reversing a top 10 keeps its set: recall@10 changes only where not-a-doc pushed a document out (query 1).
    assert recall.wins == 0 and recall.ties >= 224 and recall.p_value == 1.0
    # Untouched queries are ties: at least two thirds of them.
    assert ndcg.ties >= 225 - 225 // CHANGED_EVERY - 1
    identical = compare_systems(bm25, same, measures)
    assert all(m.p_value == 1.0 and m.ties == 225 for m in identical.metrics)
    # scipy's paired permutation test on the same per-question nDCG@10 values.
    from scipy.stats import permutation_test

    q = result.questions
    a, b = bm25.values(measures[0], q), worse.values(measures[0], q)
    theirs = permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                              n_resamples=10_000, vectorized=True, random_state=1).pvalue  # fmt: skip
    assert abs(paired_randomization_test(a, b) - theirs) < 0.005


def test_curve_and_slices(cran):
    ws, _ = cran
    curves = recall_curves(ws)
    assert len(curves["bm25"]) == 100 and curves["x"] == curves["bm25"]
    assert curves["bm25"][9] == pytest.approx(ws.evaluation.summary("bm25").recall)
    # Reversal inside the top 10 changes recall@k below 10 (and not-a-doc one query's recall@10 at most).
    assert (
        abs(curves["worse"][9] - curves["bm25"][9]) <= 1 / 225
        and curves["worse"][0] < curves["bm25"][0]
    )
    assert slices_json(ws) == {}  # BEIR queries have no slices


def test_saved_run_diff_on_cranfield(cran, capsys):
    ws, folder = cran
    path = save_run(ws, "cran", folder / "saved")
    assert path == folder / "saved" / "cran.json"
    assert (
        main(["diff", "cran:bm25", "cran:worse", "--runs-dir", str(folder / "saved"), "--json"])
        == 0
    )
    body = json.loads(capsys.readouterr().out)
    assert body["k"] == 10
    changed = [c for c in body["changes"] if c["direction"] != "same"]
    reversed_queries = {
        q for i, q in enumerate(ws.evaluation.question_ids) if i % CHANGED_EVERY == 0
    }
    assert changed and {c["question"] for c in changed} <= reversed_queries
    assert [c["ndcg_change"] for c in body["changes"]] == sorted(
        c["ndcg_change"] for c in body["changes"]
    )
    expected = ws.evaluation.summary("worse").ndcg - ws.evaluation.summary("bm25").ndcg
    assert body["mean_change"]["nDCG@10"] == pytest.approx(expected, abs=1e-12)


def test_cli_on_cranfield_with_an_external_run(cran, capsys):
    _, folder = cran
    argv = ["eval", "--json", "--beir", str(CRANFIELD), "--retrievers", "bm25", "--k", "10", "--depth", "100",
            "--run", f"worse={folder / 'worse.trec'}", "--compare", "bm25", "worse", "--metrics", "nDCG@10,P@5"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert list(report["retrievers"]) == ["bm25", "worse"] and report["slices"] == {}
    assert report["comparison"]["metrics"]["nDCG@10"]["p_value"] < 0.001
    assert report["retrievers"]["worse"]["measures"]["nDCG@10"] == pytest.approx(
        report["retrievers"]["worse"]["ndcg"]
    )
    assert "ragtui: warning: run 'worse'" in captured.err
