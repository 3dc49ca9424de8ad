"""``ragtui why`` with a live retriever that returns a passage ragtui does not hold as a chunk.

Issue 22: a three-line plugin returning ``("extra-1", 1.0, "| PS-07 | ... |")`` for every question
made ``ragtui why`` die with ``IndexError: index 39 is out of bounds for axis 0 with size 39``: the
passage is kept under an id whose chunk order lies past the BM25 scores, the embeddings and the
windows. Such a passage has no place in ragtui's chunk arrays; every lookup in the analysis treats it
as not one of ragtui's chunks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.core.analysis.attribution import explain_hybrid, pool_ceilings
from ragtui.core.analysis.diagnostics import diagnose
from ragtui.core.analysis.why import (
    FirstTokens,
    NotRetrieved,
    WhyIndex,
    WindowSpans,
    cause_summary,
    chunk_index,
    question_why_json,
    why_json,
    why_report,
)
from ragtui.core.retrieval.live import parse_retriever_spec
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT

#: The issue's plugin: one passage, the evidence of the bundled q01, for every question.
PLUGIN = (
    "def make():\n"
    '    return lambda q, d: [("extra-1", 1.0, "| PS-07 | Kromme Vaart | PV-12 Kerkpolder | 42 |")]\n'
)
#: The same on the small corpus: the evidence of m01 under an id ragtui does not hold.
MINI_PLUGIN = (
    "def make():\n"
    '    return lambda q, d: [("extra-1", 1.0, "Fares: | return adult | 5.80 EUR | (2024)")]\n'
)


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("extra-plugin")
    (folder / "extra_plugin.py").write_text(PLUGIN)
    (folder / "extra_mini_plugin.py").write_text(MINI_PLUGIN)
    return folder


def _ragtui(
    plugin_path: Path, cache_dir: Path, cwd: Path, *args: str
) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_path), str(ROOT)]),
        "RAGTUI_CACHE_DIR": str(cache_dir),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "ragtui", *args, "--retriever", "extra=extra_plugin:make"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def test_why_runs_with_a_plugin_returning_its_own_passage(plugin_path, cache_dir, tmp_path):
    """The issue's reproduction on the bundled data: every form of ``ragtui why`` exits 0."""
    done = _ragtui(plugin_path, cache_dir, tmp_path, "why")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert "extra" in done.stdout.splitlines()[2]  # a column of the cause table
    # Its own passage is judged for it alone: the table says whose relevant set it is read by, and
    # what a miss is at evidence level; the note names extra only, not the built-in retrievers.
    said = " ".join(done.stdout.split())
    assert (
        "extra returns passages of its own, judged for it alone: its own relevant passages in "
        "the top k count as hits"
    ) in said
    assert "evidence level (as in ragtui eval): a miss is a relevant chunk of ragtui's" in said
    assert "bm25 returns passages of its own" not in said
    one = _ragtui(plugin_path, cache_dir, tmp_path, "why", "q01")
    assert "Traceback" not in one.stderr, one.stderr
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("why q01: What is the capacity of PS-07?")
    as_json = _ragtui(plugin_path, cache_dir, tmp_path, "why", "--json")
    assert "Traceback" not in as_json.stderr, as_json.stderr
    assert as_json.returncode == 0, as_json.stderr
    body = json.loads(as_json.stdout)
    assert list(body["retrievers"]) == ["bm25", "vector", "hybrid", "extra"]


@pytest.fixture
def foreign_ws(plugin_path, mini_settings, monkeypatch) -> Workspace:
    """The small corpus with bm25, vector, hybrid and the plugin, and ``extra-1`` graded relevant to
    m01 by hand: a relevant id that no chunk array holds."""
    monkeypatch.syspath_prepend(str(plugin_path))
    settings = replace(
        mini_settings,
        live_retrievers=(parse_retriever_spec("extra=extra_mini_plugin:make"),),
    )
    ws = Workspace.open(settings)
    assert "extra-1" in ws.passages.by_id and chunk_index(ws, "extra-1") is None
    ws.set_grade("m01", "extra-1", 2)
    yield ws
    sys.modules.pop("extra_mini_plugin", None)


def test_every_lookup_treats_an_own_passage_as_none_of_ragtuis_chunks(foreign_ws):
    ws = foreign_ws
    assert [chunk_index(ws, c.id) for c in ws.data.chunks] == list(range(len(ws.data.chunks)))
    assert chunk_index(ws, "not-an-id") is None
    # What the vector retriever reads of it: nothing known (it never embedded it).
    assert FirstTokens(ws).read_spans("extra-1") is None
    assert ws.ranked.windows is not None and WindowSpans(ws).read_spans("extra-1") is None
    index = WhyIndex(ws)
    why = index.question("m01")
    for name in ("bm25", "vector", "hybrid"):
        for miss in why.retrievers[name].misses:
            if miss.chunk != "extra-1":
                continue
            # No cause that speaks of ragtui's reading of a chunk: only where it ranked.
            assert "cut-off" not in miss.causes and "lexical-gap" not in miss.causes
            last = miss.findings[-1]
            assert isinstance(last, NotRetrieved) and last.score is None
    # Every report and JSON object of the analysis is built without an error.
    assert cause_summary(index)["bm25"].questions > 0
    why_report(index, by_slice=True)
    json.dumps(why_json(index))
    json.dumps(question_why_json(why, ws.settings.k, ws.settings.depth))
    explain_hybrid(ws, "m01")
    pool_ceilings(ws)
    assert len(diagnose(ws).token_counts) == len(ws.data.chunks)
