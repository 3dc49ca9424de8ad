"""``ragtui export`` leaves retired questions out of every file, as ``ragtui eval`` leaves them out of
every mean: trec_eval (here pytrec_eval) then averages over the same questions as ``eval``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

from ragtui.cli import main
from ragtui.core.data.trec import read_trec_qrels, read_trec_run
from tests.conftest import mini_args

pytestmark = pytest.mark.usefixtures("cli_cache_env")

RETRIEVERS = ("bm25", "vector", "hybrid")


def test_export_leaves_retired_questions_out_and_trec_eval_averages_as_eval(
    mini: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = mini_args(mini)
    # m03 has a judgement (its evidence is in a chunk): retired, it is still in questions.jsonl.
    assert main(["retire", "m03", *args]) == 0
    assert '"retired": true' in (mini / "golden" / "questions.jsonl").read_text()
    capsys.readouterr()
    assert main(["eval", "--json", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["retired"] == ["m03"] and report["skipped"] == ["m07"]
    averaged = set(report["retrievers"]["bm25"]["per_question"])
    assert len(averaged) == report["questions"] == 5 and "m03" not in averaged

    out = tmp_path / "trec"
    assert main(["export", str(out), *args]) == 0
    capsys.readouterr()
    qrels = read_trec_qrels(out / "qrels.trec")
    # Every question but the retired one and the one with no judgement: eval's questions exactly.
    assert set(qrels) == averaged
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_3", "recall_3", "recip_rank"})
    for name in RETRIEVERS:
        ranked = read_trec_run(out / f"{name}.trec")
        assert "m03" not in ranked, f"{name}.trec holds the retired question"
        run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()}
        per_question = evaluator.evaluate(run)
        # trec_eval averages over the questions of the qrels that the run ranks: eval's 5.
        assert set(per_question) == averaged
        ours = report["retrievers"][name]
        for measure, key in (("ndcg_cut_3", "ndcg"), ("recall_3", "recall"), ("recip_rank", "mrr")):
            mean = sum(v[measure] for v in per_question.values()) / len(per_question)
            assert ours[key] == pytest.approx(mean, abs=1e-12), (name, measure)

    # Brought back, it is exported again.
    assert main(["retire", "m03", "--restore", *args]) == 0
    assert main(["export", str(out), *args]) == 0
    capsys.readouterr()
    assert "m03" in read_trec_qrels(out / "qrels.trec")
    assert all("m03" in read_trec_run(out / f"{name}.trec") for name in RETRIEVERS)
