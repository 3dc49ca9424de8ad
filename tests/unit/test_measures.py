"""ir_measures names: parsing, values equal to pytrec_eval on exported files, and ``eval --metrics``."""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.analysis.export import export_trec
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from ragtui.core.errors import InputError
from ragtui.core.metrics.formulas import judged_at_k, ndcg_at_k
from ragtui.core.metrics.measures import (
    Measure,
    parse_measure,
    parse_measures,
    system_from_workspace,
)
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args

_args = mini_args


pytestmark = pytest.mark.usefixtures("cli_cache_env")


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("R@3", "R@3"),
        ("P@3", "P@3"),
        ("RR", "RR"),
        ("RR@10", "RR@10"),
        ("nDCG@10", "nDCG@10"),
        ("nDCG", "nDCG"),
        ("Success@3", "Success@3"),
        ("Judged@10", "Judged@10"),
        ("nDCG_exp@10", "nDCG_exp@10"),
        ("nDCG(dcg='exp-log2')@10", "nDCG_exp@10"),
        ("nDCG(dcg=log2)@5", "nDCG@5"),
        ("P(rel=2)@5", "P(rel=2)@5"),
        ("AP", "AP"),
        ("AP@10", "AP@10"),
        # trec_eval and ranx spellings are aliases.
        ("recall_5", "R@5"),
        ("P_5", "P@5"),
        ("ndcg_cut_10", "nDCG@10"),
        ("recip_rank", "RR"),
        ("MRR", "RR"),
        ("success_1", "Success@1"),
        ("map_cut_10", "AP@10"),
        ("ndcg@3", "nDCG@3"),
        (" precision@3 ", "P@3"),
    ],
)
def test_names_parse_to_canonical_measures(text, name):
    assert parse_measure(text).name == name


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("X@3", "unknown measure 'X'"),
        ("R", "R needs a cut-off"),
        ("Success", "Success needs a cut-off"),
        ("nDCG@0", "at least 1"),
        ("P(foo=1)@3", "takes no parameter 'foo'"),
        ("nDCG(dcg=exp)@3", "dcg must be"),
        ("P(rel=x)@3", "rel must be a whole number"),
        ("R@", "malformed"),
        ("R@3@4", "malformed"),
    ],
)
def test_bad_names_raise_input_error(text, problem):
    with pytest.raises(InputError) as caught:
        parse_measure(text)
    assert problem in caught.value.message and "known measures" in caught.value.message


def test_parse_measures_keeps_order_and_drops_duplicates():
    assert [m.name for m in parse_measures("nDCG@10, R@3,recall_3,RR")] == ["nDCG@10", "R@3", "RR"]
    with pytest.raises(InputError):
        parse_measures(" , ")


def test_values_equal_pytrec_eval_on_graded_labels(mini_settings, tmp_path):
    ws = Workspace.open(mini_settings)
    # Grades 1 and 3 beside the evidence rule's 2, and a judged 0, so gains and levels differ.
    ws.set_grade("m01", ws.ranking("bm25", "m01")[1][0], 1)
    ws.set_grade("m03", ws.ranking("vector", "m03")[2][0], 3)
    ws.set_grade("m05", ws.ranking("hybrid", "m05")[0][0], 0)
    export_trec(ws, tmp_path)
    qrels = read_trec_qrels(tmp_path / "qrels.trec")
    pairs = {
        "R@3": "recall_3", "P@3": "P_3", "RR": "recip_rank", "nDCG@3": "ndcg_cut_3", "nDCG": "ndcg",
        "Success@1": "success_1", "Success@3": "success_3", "AP": "map", "AP@5": "map_cut_5", "nDCG@10": "ndcg_cut_10",
    }  # fmt: skip
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(pairs.values()))
    strict = pytrec_eval.RelevanceEvaluator(qrels, {"P_3", "recip_rank"}, relevance_level=2)
    evaluated = sorted(ws.evaluation.evaluated)
    for name in ws.retrievers:
        ranked = read_trec_run(tmp_path / f"{name}.trec")
        run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()}
        reference = evaluator.evaluate(run)
        reference_strict = strict.evaluate(run)
        system = system_from_workspace(ws, name)
        for ours, theirs in pairs.items():
            values = system.values(parse_measure(ours), evaluated)
            for qid, value in zip(evaluated, values, strict=True):
                assert value == pytest.approx(reference[qid][theirs], abs=1e-12), (name, ours, qid)
        for ours, theirs in (("P(rel=2)@3", "P_3"), ("RR(rel=2)", "recip_rank")):
            values = system.values(parse_measure(ours), evaluated)
            for qid, value in zip(evaluated, values, strict=True):
                assert value == pytest.approx(reference_strict[qid][theirs], abs=1e-12)
        # Exponential gain and Judged@k, which trec_eval lacks, against the metric functions.
        for qid in evaluated:
            ids = [cid for cid, _ in ws.ranking(name, qid)]
            gains = ws.grades.effective_grades(qid)
            assert Measure("nDCG_exp", 3).value(ids, gains) == ndcg_at_k(
                ids, gains, 3, gain="exponential"
            )
            assert Measure("Judged", 5).value(ids, gains) == judged_at_k(ids, gains.keys(), 5)
    # With grade 3 next to grade 2, exponential gain gives another number than the default.
    ids = [cid for cid, _ in ws.ranking("vector", "m03")]
    gains = ws.grades.effective_grades("m03")
    assert Measure("nDCG_exp", 3).value(ids, gains) != Measure("nDCG", 3).value(ids, gains)


def test_eval_metrics_table_and_json(mini, capsys):
    assert (
        main(["eval", "--metrics", "R@3,nDCG@10,nDCG_exp@10,Success@1,Judged@10", *_args(mini)])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == [
        "retriever",
        "R@3",
        "nDCG@10",
        "nDCG_exp@10",
        "Success@1",
        "Judged@10",
    ]
    assert [line.split()[0] for line in out[2:5]] == ["bm25", "vector", "hybrid"]

    assert main(["eval", "--json", *_args(mini)]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "metrics" not in plain and "measures" not in plain["retrievers"]["bm25"]
    assert main(["eval", "--json", "--metrics", "R@3,RR,nDCG@3,P@3", *_args(mini)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metrics"] == ["R@3", "RR", "nDCG@3", "P@3"]
    for name, body in report["retrievers"].items():
        # The same numbers as the default keys, under the ir_measures names.
        assert body["measures"] == pytest.approx(
            {
                "R@3": body["recall"],
                "RR": body["mrr"],
                "nDCG@3": body["ndcg"],
                "P@3": body["precision"],
            },
            abs=1e-12,
        )
        assert (
            body["per_question"]["m01"]["measures"]["R@3"] == body["per_question"]["m01"]["recall"]
        )
        assert report["slices"]["number"][name]["measures"]["RR"] == pytest.approx(
            report["slices"]["number"][name]["mrr"]
        )
        # Existing keys are unchanged.
        assert {"recall", "precision", "precision_ceiling", "mrr", "ndcg", "per_question"} <= set(
            body
        )


def test_default_table_unchanged_without_metrics(mini, capsys):
    assert main(["eval", *_args(mini)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["retriever", "recall@3", "precision@3", "(ceiling)", "MRR", "nDCG@3"]
    assert len(out) == 5


@pytest.mark.parametrize("bad", ["X@3", "R", "nDCG@x", "P(rel=x)@3"])
def test_bad_metric_names_exit_2_with_one_line(mini, capsys, bad):
    assert main(["eval", "--metrics", bad, "--retrievers", "bm25", *_args(mini)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith("ragtui: error: --metrics: ") and captured.out == ""
    )
