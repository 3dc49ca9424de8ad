"""The bundled corpus and golden set: check is clean, the set tells the retrievers apart, README table is current."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from ragtui.cli import main
from ragtui.cli.output import render_report
from ragtui.core.analysis.reports import eval_table_report
from ragtui.core.data.paths import bundled_golden
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def bundled(cache_dir, tmp_path_factory):
    # A copy of the golden set so a developer's own labels never change the figures.
    import shutil

    golden = tmp_path_factory.mktemp("golden")
    shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
    return Workspace.open(Settings(golden=golden, cache_dir=cache_dir))


def test_check_passes_on_the_bundled_set(capsys, monkeypatch, cache_dir):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    assert main(["check"]) == 0
    assert "0 problems" in capsys.readouterr().out


def test_bundled_shape(bundled):
    ws = bundled
    assert 10 <= len(ws.data.corpus.documents) <= 14
    tokens = sum(c.token_count for c in ws.data.chunks)
    assert 16_000 <= tokens <= 18_500
    assert 30 <= len(ws.data.chunks) <= 40
    assert len(ws.questions) >= 47
    relevant = Counter(
        sum(1 for g in ws.grades.effective_grades(q.id).values() if g >= 1) for q in ws.questions
    )
    assert relevant[0] == 0
    assert relevant[1] / len(ws.questions) >= 0.8
    assert sum(n for r, n in relevant.items() if r > 1) >= 1
    tables = [c for c in ws.data.chunks if re.search(r"^\|.*\|$", c.text, re.M)]
    assert len({c.doc for c in tables}) >= 3


def test_retrievers_disagree_on_several_questions(bundled):
    ev = bundled.evaluation
    ranks = {
        n: {q: ev.per_question[n][q].first_relevant_rank for q in ev.evaluated}
        for n in ("bm25", "vector")
    }
    differ = [q for q in ev.evaluated if ranks["bm25"][q] != ranks["vector"][q]]
    assert len(differ) >= 5
    bm25_only = [
        q
        for q in ev.evaluated
        if ranks["bm25"][q] == 1 and ranks["vector"][q] in (None, *tuple(range(4, 11)))
    ]
    vector_only = [
        q
        for q in ev.evaluated
        if ranks["vector"][q] == 1 and ranks["bm25"][q] in (None, *tuple(range(4, 11)))
    ]
    assert bm25_only and vector_only


def test_readme_table_is_what_eval_prints_today(bundled):
    readme = (ROOT / "README.md").read_text()
    assert render_report(eval_table_report(bundled)) in readme
