"""Evaluation: running means equal a full recomputation after every grade change; the bundled set."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.metrics.formulas import question_metrics
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT


def _full_means(ev: Evaluation, name: str) -> dict[str, float]:
    fresh = Evaluation(ev.question_ids, ev.grades, {name: ev.rankings[name]}, ev.k, ev.threshold)
    return fresh.summary(name).as_dict()


def test_incremental_updates_equal_full_recomputation():
    rng = random.Random(7)
    chunks = [f"c{i}" for i in range(30)]
    questions = [f"q{i}" for i in range(40)]
    grades: dict[str, dict[str, int]] = {q: {rng.choice(chunks): 2} for q in questions[:-3]}
    grades.update({q: {} for q in questions[-3:]})
    rankings = {
        name: {q: [(c, 1.0) for c in rng.sample(chunks, rng.randint(0, 10))] for q in questions}
        for name in ("bm25", "vector")
    }
    ev = Evaluation(questions, lambda q: dict(grades[q]), rankings, k=3)
    assert ev.skipped == questions[-3:]
    for _ in range(300):
        q = rng.choice(questions)
        c = rng.choice(chunks)
        if rng.random() < 0.3:
            grades[q].pop(c, None)
        else:
            grades[q][c] = rng.randint(0, 3)
        changes = ev.update_question(q)
        for name in ("bm25", "vector"):
            ranked = [cid for cid, _ in rankings[name][q]]
            assert changes[name][1] == question_metrics(ranked, grades[q], 3)
            incremental = ev.summary(name).as_dict()
            for key, value in _full_means(ev, name).items():
                assert incremental[key] == pytest.approx(value, abs=1e-12)


def test_subset_summary_is_the_mean_over_that_subset():
    grades = {"a": {"x": 2}, "b": {"y": 1}, "c": {}}
    rankings = {"r": {"a": [("x", 1.0)], "b": [("z", 1.0), ("y", 0.5)], "c": [("x", 1.0)]}}
    ev = Evaluation(["a", "b", "c"], grades.__getitem__, rankings, k=1)
    assert ev.summary("r").recall == 0.5 and ev.summary("r").questions == 2
    assert ev.summary("r", ["b", "c"]).recall == 0.0 and ev.summary("r", ["b", "c"]).questions == 1
    assert ev.summary("r", ["b"]).mrr == 0.5


def test_grading_the_only_relevant_chunk_zero_then_undo(mini_settings):
    ws = Workspace.open(mini_settings)
    qid = "m03"
    relevant = [c for c, g in ws.grades.effective_grades(qid).items() if g >= 1]
    assert len(relevant) == 1
    before = {n: ws.evaluation.per_question[n][qid] for n in ws.retrievers}
    means_before = {n: ws.evaluation.summary(n) for n in ws.retrievers}
    change = ws.set_grade(qid, relevant[0], 0)
    assert ws.grades.labels.path.read_text().count('"grade":0') == 1
    for name in ws.retrievers:
        old, new = change.changes[name]
        assert old == before[name] and new.ndcg == 0.0 and new.recall == 0.0
        # Judged but nothing relevant: it counts with zeros, as trec_eval counts it (issue 12).
        assert ws.evaluation.summary(name).questions == means_before[name].questions
        n = means_before[name].questions
        assert ws.evaluation.summary(name).recall == pytest.approx(
            means_before[name].recall - old.recall / n, abs=1e-12
        )
    assert qid not in ws.evaluation.skipped
    assert ws.grades.grade_source(qid, relevant[0]) == (0, "hand")
    ws.undo()
    assert ws.grades.grade_source(qid, relevant[0]) == (2, "evidence")
    for name in ws.retrievers:
        assert ws.evaluation.per_question[name][qid] == before[name]
        assert ws.evaluation.summary(name).as_dict() == pytest.approx(
            means_before[name].as_dict(), abs=1e-12
        )
    lines = ws.grades.labels.path.read_text().splitlines()
    assert len(lines) == 2 and '"grade":null' in lines[1], "undo is itself a journal line"


def test_set_k_recomputes_everything(mini_settings):
    ws = Workspace.load(mini_settings)
    at3 = ws.evaluation.summary("bm25")
    ws.set_k(1)
    at1 = ws.evaluation.summary("bm25")
    assert at1.precision_ceiling == 1.0 and at3.precision_ceiling < 1.0
    assert at1.mrr == at3.mrr


def test_core_imports_no_ui_library():
    code = (
        "import sys, pkgutil, importlib, ragtui.core as core\n"
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'ragtui.core.')]\n"
        "assert len(names) > 30, names\n"
        "for name in names: importlib.import_module(name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('textual', 'rich', 'torch', 'sentence_transformers'))\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_judged_at_k_is_kept_incrementally():
    from ragtui.core.metrics.formulas import judged_at_k

    grades = {"a": {"x": 2, "y": 0}, "b": {"y": 1}}
    rankings = {"r": {"a": [("x", 1.0), ("z", 0.9)], "b": [("z", 1.0), ("w", 0.5)]}}
    ev = Evaluation(["a", "b"], lambda q: dict(grades[q]), rankings, k=2)
    assert ev.judged["r"] == {"a": 0.5, "b": 0.0}
    assert ev.judged_mean("r") == 0.25
    grades["b"]["z"] = 0  # a hand 0: judged, not relevant
    ev.update_question("b")
    assert ev.judged["r"]["b"] == judged_at_k(["z", "w"], grades["b"], 2) == 0.5
    assert ev.judged_mean("r") == pytest.approx(0.5)
    assert ev.judged_mean("r", ["a"]) == 0.5
