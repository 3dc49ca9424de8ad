"""Per-slice reports, recall@k curves and hybrid attribution on the small corpus, core and CLI."""

from __future__ import annotations

import itertools
import json

import pytest

from ragtui.cli import main
from ragtui.core.analysis.attribution import explain_hybrid, pool_ceilings
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.slices import slice_names, slice_reports, slices_json
from ragtui.core.errors import InputError
from ragtui.core.metrics.formulas import recall_at_k, relevant_ids
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args

_args = mini_args


pytestmark = pytest.mark.usefixtures("cli_cache_env")


@pytest.fixture
def ws(mini_settings) -> Workspace:
    return Workspace.open(mini_settings)


# ---- slices ----------------------------------------------------------------------------------------


def test_slice_reports_count_questions_and_equal_subset_means(ws):
    assert slice_names(ws) == [
        "code",
        "lookup",
        "multi-chunk",
        "negation",
        "number",
        "paraphrase",
        "table",
    ]
    reports = {r.name: r for r in slice_reports(ws, include_all=True)}
    assert reports["all"].questions == ["m01", "m02", "m03", "m04", "m05", "m06"] and reports[
        "all"
    ].skipped == ["m07"]
    assert reports["number"].questions == ["m01", "m05"] and reports["lookup"].questions == [
        "m03",
        "m04",
    ]
    # m07 is the only negation question and has no relevant chunk: no question averaged, never a division by 0.
    assert reports["negation"].questions == [] and reports["negation"].skipped == ["m07"]
    assert reports["negation"].summaries["bm25"].questions == 0
    for name in ws.retrievers:
        s = reports["number"].summaries[name]
        per_q = ws.evaluation.per_question[name]
        assert s.questions == 2
        assert s.ndcg == pytest.approx((per_q["m01"].ndcg + per_q["m05"].ndcg) / 2)
        assert s.mrr == pytest.approx((per_q["m01"].rr + per_q["m05"].rr) / 2)
        assert reports["all"].summaries[name] == ws.evaluation.summary(name)
    body = slices_json(ws)
    assert set(body) == set(slice_names(ws))
    assert set(body["table"]["hybrid"]) == {
        "recall",
        "precision",
        "precision_ceiling",
        "mrr",
        "ndcg",
        "questions",
    }
    assert body["table"]["hybrid"]["questions"] == 1


def test_eval_by_slice_table_and_json(mini, capsys):
    assert main(["eval", "--by-slice", *_args(mini)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index(next(line for line in out if line.startswith("slice ")))
    assert out[start].split() == [
        "slice",
        "questions",
        "retriever",
        "recall@3",
        "precision@3",
        "(ceiling)",
        "MRR",
        "nDCG@3",
    ]
    assert (
        out[start + 1].split()[:3] == ["all", "6", "bm25"] and out[start + 2].split()[0] == "vector"
    )
    assert any(line.split()[:3] == ["number", "2", "bm25"] for line in out)
    assert out[-1] == "skipped (no judgement): negation 1"
    # The default table above is unchanged.
    assert out[1].split() == ["retriever", "recall@3", "precision@3", "(ceiling)", "MRR", "nDCG@3"]

    assert main(["eval", "--json", *_args(mini)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["slices"]["number"]["bm25"]["questions"] == 2
    assert set(report["slices"]["code"]) == {"bm25", "vector", "hybrid"}


# ---- recall@k curve --------------------------------------------------------------------------------


def test_recall_curve_equals_recall_at_every_k(ws):
    curves = recall_curves(ws)
    assert list(curves) == ["bm25", "vector", "hybrid"]
    evaluated = sorted(ws.evaluation.evaluated)
    # Down to --depth, or to the number of chunks when there are fewer (no ranking holds more).
    depth = min(ws.settings.depth, len(ws.data.chunks))
    for name, curve in curves.items():
        assert len(curve) == depth
        assert all(a <= b + 1e-12 for a, b in itertools.pairwise(curve))
        for k in range(1, depth + 1):
            expected = sum(
                recall_at_k(
                    [c for c, _ in ws.ranking(name, q)],
                    relevant_ids(ws.grades.effective_grades(q)),
                    k,
                )
                for q in evaluated
            ) / len(evaluated)
            assert curve[k - 1] == pytest.approx(expected, abs=1e-12)
        assert curve[ws.settings.k - 1] == pytest.approx(ws.evaluation.summary(name).recall)
    assert recall_curves(ws, depth=3, questions=["m01"])["bm25"] == [
        recall_at_k(
            [c for c, _ in ws.ranking("bm25", "m01")],
            relevant_ids(ws.grades.effective_grades("m01")),
            k,
        )
        for k in (1, 2, 3)
    ]


def test_eval_curve_cli(mini, capsys):
    assert main(["eval", "--curve", "--depth", "5", *_args(mini)]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("recall@k, k = 1..5")
    assert out[start + 1].split() == ["k", "bm25", "vector", "hybrid"]
    assert [line.split()[0] for line in out[start + 2 :]] == ["1", "2", "3", "4", "5"]
    assert main(["eval", "--json", "--curve", *_args(mini)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["recall_curve"]["hybrid"]) == 9  # the chunks, fewer than --depth 10
    assert report["recall_curve"]["hybrid"][2] == pytest.approx(
        report["retrievers"]["hybrid"]["recall"]
    )


# ---- hybrid attribution ----------------------------------------------------------------------------


def test_attribution_terms_add_up_to_the_hybrid_ranking(ws):
    for qid in ws.evaluation.question_ids:
        expl = explain_hybrid(ws, qid)
        assert [(r.chunk, r.score) for r in expl.results] == ws.ranking("hybrid", qid)
        bm25 = [c for c, _ in ws.ranking("bm25", qid)]
        vector = [c for c, _ in ws.ranking("vector", qid)]
        for r in expl.results:
            assert r.bm25_rank == (bm25.index(r.chunk) + 1 if r.chunk in bm25 else None)
            assert r.vector_rank == (vector.index(r.chunk) + 1 if r.chunk in vector else None)
            assert r.bm25_term == (1 / (60 + r.bm25_rank) if r.bm25_rank else 0.0)
            assert r.score == pytest.approx(r.bm25_term + r.vector_term, abs=1e-15)
        assert {s.chunk for s in expl.only_bm25} == set(bm25) - set(vector)
        assert {s.chunk for s in expl.only_vector} == set(vector) - set(bm25)
        relevant = relevant_ids(ws.grades.effective_grades(qid))
        if relevant:
            pool = set(bm25) | set(vector)
            assert expl.pool_ceiling == min(3, len(relevant & pool)) / len(relevant)
            assert (
                expl.hybrid_recall
                == ws.evaluation.per_question["hybrid"][qid].recall
                <= expl.pool_ceiling
            )
            assert set(expl.missed) == relevant - pool
    pool = pool_ceilings(ws)
    assert pool.questions == 6
    assert pool.hybrid_recall == pytest.approx(ws.evaluation.summary("hybrid").recall)
    assert pool.pool_ceiling >= pool.hybrid_recall


def test_attribution_marks_ties(ws):
    # Two lists that share nothing: ranks 1 of each tie at 1/61, ranks 2 at 1/62, ...
    ws.ranked.rankings["bm25"]["m01"] = [("ferry.md#0", 5.0), ("ferry.md#1", 4.0)]
    ws.ranked.rankings["vector"]["m01"] = [
        ("library.md#0", 0.9),
        ("market.txt#0", 0.8),
        ("library.md#1", 0.7),
    ]
    expl = explain_hybrid(ws, "m01")
    assert [(r.chunk, r.tied) for r in expl.results] == [
        ("ferry.md#0", True), ("library.md#0", True), ("ferry.md#1", True), ("market.txt#0", True), ("library.md#1", False),
    ]  # fmt: skip
    assert expl.results[0].score == expl.results[1].score == 1 / 61
    assert [s.chunk for s in expl.only_bm25] == ["ferry.md#0", "ferry.md#1"]


def test_attribution_needs_both_lists(mini_settings):
    from dataclasses import replace

    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    with pytest.raises(InputError, match="needs the bm25 and vector rankings"):
        explain_hybrid(ws, "m01")


def test_explain_cli(mini, capsys):
    assert main(["explain", "m06", *_args(mini)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "hybrid attribution · m06: Which events are cancelled?"
    assert out[3].split() == [
        "rank",
        "chunk",
        "score",
        "bm25",
        "term",
        "vector",
        "term",
        "tie",
        "grade",
    ]
    assert out[-2].startswith("pool ceiling recall@3 ") and out[-1].startswith(
        "mean over 6 questions: pool ceiling recall@3 "
    )
    assert main(["eval", "--explain", "m06", *_args(mini)]) == 0
    assert "hybrid attribution · m06: Which events are cancelled?" in capsys.readouterr().out
    assert main(["explain", "m06", "--json", *_args(mini)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["question"] == "m06" and body["rrf_k"] == 60 and len(body["results"]) == 9
    assert main(["explain", "zz", *_args(mini)]) == 2
    assert capsys.readouterr().err.strip() == "ragtui: error: unknown question 'zz'"
    assert main(["eval", "--json", *_args(mini)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (
        report["retrievers"]["hybrid"]["pool_ceiling"] >= report["retrievers"]["hybrid"]["recall"]
    )
