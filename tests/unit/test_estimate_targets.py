"""What the estimates' model side is: a judge's verdicts alone where the qrels are people's grades
(a pair the judge never graded is unjudged there, never filled from the qrels), and the pool
``ragtui judge`` grades by default is the estimates' own."""

from __future__ import annotations

import json

import pytest

from ragtui.cli import main
from ragtui.core.judges.estimate import Interval
from ragtui.core.judges.estimates import (
    Estimates,
    MetricEstimate,
    RetrieverEstimate,
    SampleUse,
    _Grades,
)
from ragtui.core.judges.estimates_report import estimates_json, estimates_report
from ragtui.core.judges.pairs import JudgeAsk
from ragtui.core.judges.run import judge_pool
from ragtui.core.labelling.labels import Label, judge_annotator, now_iso
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import pool_question
from tests.conftest import CRANFIELD, mini_args, settings_of


@pytest.fixture(scope="module")
def cran(tmp_path_factory) -> Workspace:
    golden = tmp_path_factory.mktemp("cran-golden")
    settings = Settings(
        beir=CRANFIELD, golden=golden, chunk_size=None, retrievers=("bm25",), k=5, depth=50
    )
    return Workspace.load(settings)


def test_the_model_side_holds_the_judges_verdicts_and_nothing_of_the_qrels(cran: Workspace) -> None:
    ws = cran
    qid = next(q.id for q in ws.questions if ws.data.qrels.get(q.id))
    relevant = [d for d, g in ws.data.qrels[qid].items() if g >= 1]
    judged = relevant[0]
    verdict = Label(
        qid, judged, 0, ws.passages.by_id[judged].sha1, now_iso(), judge_annotator("llm"), model="m"
    )
    ws.grades.labels.append_verdicts([verdict])
    grades = _Grades(ws, "llm")
    # The judge's one verdict, alone: the other qrels pairs are unjudged on its side.
    assert grades.model(qid) == {judged: 0}
    # People's side and the filled side still read the qrels.
    assert grades.human(qid) == ws.grades.evaluation_grades(qid, {})
    assert grades.filled(qid)[judged] == 0
    assert all(grades.filled(qid)[d] == ws.data.qrels[qid][d] for d in relevant[1:])


def test_ragtui_judge_grades_the_estimates_pool_by_default(cran: Workspace) -> None:
    ws = cran
    qids = tuple(q.id for q in ws.questions[:4])
    pool = judge_pool(ws, [], JudgeAsk(questions=qids)).pool
    expected = {
        (qid, e.chunk)
        for qid in qids
        for e in pool_question(qid, ws.ranked.rankings, ws.retrievers, 5, ws.passages.order)
    }
    assert pool.depth == 5 == ws.settings.k
    assert {(p.question_id, p.chunk_id) for p in pool.pairs} == expected
    deeper = judge_pool(ws, [], JudgeAsk(questions=qids, depth=20)).pool
    assert deeper.depth == 20 and len(deeper.pairs) > len(pool.pairs)
    capped = judge_pool(ws, [], JudgeAsk(questions=qids, depth=500)).pool
    assert capped.depth == ws.settings.depth == 50


def _metric(filled: float, ppi: float, ppi_half: float, people_half: float) -> MetricEstimate:
    def interval(estimate: float, half: float) -> Interval:
        return Interval(estimate, estimate - half, estimate + half, 20, 100, 19)

    return MetricEstimate(
        ppi, None, ppi, filled, interval(ppi, ppi_half), interval(ppi, people_half), 3, ""
    )


def test_a_judge_that_widens_the_interval_or_reverses_two_retrievers_is_flagged() -> None:
    use = SampleUse("sample.json", None, 100, (), None, "")
    est = Estimates(
        "llm",
        ("llm",),
        ("m",),
        (),
        use,
        3,
        {
            "bm25": RetrieverEstimate("bm25", {"ndcg": _metric(0.26, 0.31, 0.05, 0.04)}, False),
            "vector": RetrieverEstimate("vector", {"ndcg": _metric(0.52, 0.30, 0.03, 0.04)}, False),
        },
        "the target",
    )
    assert est.retrievers["bm25"].metrics["ndcg"].narrows is False
    assert est.retrievers["vector"].metrics["ndcg"].narrows is True
    assert est.reversals() == [("ndcg", "bm25", "vector")]
    body = estimates_json(est)
    assert body["reversals"] == [{"metric": "ndcg", "retrievers": ["bm25", "vector"]}]
    notes = [n.text for n in estimates_report(est).sections[0].notes]
    assert notes[0] == "target: the target"
    assert any("widens the interval" in n and "bm25 nDCG@3" in n for n in notes)
    assert any("puts bm25 and vector in the other order" in n for n in notes)


def test_ragtui_sample_draws_once_keeps_it_and_says_which_questions_are_judged(
    mini, capsys, cli_cache_env
) -> None:
    assert main(["sample", *mini_args(mini, "--retrievers", "bm25"), "--size", "3", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["drawn_now"] and first["current"] and len(first["questions"]) == 3
    assert first["judged_fully"] == [] and "judged fully" in first["reason"]
    recorded = json.loads((mini / "golden" / "sample.json").read_text())
    assert recorded["questions"] == first["questions"]
    # Grade every pair of one sampled question's pool: it is judged fully; the sample is kept.
    ws = Workspace.load(settings_of(mini, retrievers=("bm25",), annotator="ann"))
    qid = first["questions"][0]
    for entry in pool_question(qid, ws.ranked.rankings, ws.retrievers, 3, ws.passages.order):
        ws.set_grade(qid, entry.chunk, 1)
    args = [*mini_args(mini, "--retrievers", "bm25"), "--size", "9", "--seed", "7"]
    assert main(["sample", *args, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert not again["drawn_now"] and again["questions"] == first["questions"]
    assert again["judged_fully"] == [qid]
    assert main(["sample", *args]) == 0
    text = capsys.readouterr().out
    assert "kept" in text and f"{qid}  judged" in text
