"""``ragtui check``: the long chunks summarised above the verdict (a count and the ten longest;
``--verbose`` for all), and labels made on ragtui's own chunking explained when ``--chunks`` names
the chunks otherwise (issue 22)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.analysis.diagnostics import (
    ChunkDiagnostics,
    HiddenEvidence,
    TruncatedChunk,
    WindowCoverage,
)
from ragtui.core.analysis.reports import diagnostics_report
from ragtui.core.data.tokenizer import ModelLimit
from ragtui.core.retrieval.windows import WindowPlan
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args

pytestmark = pytest.mark.usefixtures("cli_cache_env")

_LONG = "chunks longer than the 254 tokens the model reads (38)"


def _table_after(lines: list[str], heading: str) -> list[str]:
    """The rows of the table under the heading that starts with ``heading`` (its column line left out)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("  "):
            break
        rows.append(line)
    return rows


def test_check_lists_the_ten_longest_chunks_and_verbose_all(capsys):
    assert main(["check", "--no-project"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # The bundled set: 38 of its 39 chunks are longer than the model reads; ten are listed.
    (heading,) = [line for line in lines if line.startswith(_LONG)]
    assert heading.endswith("; the 10 longest shown (--verbose: all)")
    rows = _table_after(lines, _LONG)
    tokens = [int(row.split()[1]) for row in rows]
    assert len(rows) == 10 and tokens == sorted(tokens, reverse=True) and tokens[0] == 505
    tail = _table_after(lines, "evidence in a cut-off tail (37)")
    assert len(tail) == 10
    # The verdict is no longer 100 lines down.
    assert len(lines) < 60
    assert lines[-4] == "check: 0 problems"
    assert main(["check", "--no-project", "--verbose"]) == 0
    verbose = capsys.readouterr().out.splitlines()
    (heading,) = [line for line in verbose if line.startswith(_LONG)]
    assert "shown" not in heading
    assert len(_table_after(verbose, _LONG)) == 38
    assert len(_table_after(verbose, "evidence in a cut-off tail (37)")) == 37


def test_the_tail_list_keeps_every_evidence_string_no_window_reads_whole():
    """Of the cut-off tails, those no single window holds whole come first and are all shown."""
    hidden = [
        HiddenEvidence(f"q{i:02d}", i, f"evidence {i}", f"doc.md#{i}", True) for i in range(14)
    ]
    split = [hidden[12], hidden[13]]
    diag = ChunkDiagnostics(
        limit=ModelLimit(256, 2, "test"),
        token_counts={f"doc.md#{i}": 300 for i in range(14)},
        histogram=[],
        truncated=[TruncatedChunk(f"doc.md#{i}", "doc.md", 300 + i, 254, 0) for i in range(14)],
        hidden_evidence=hidden,
        multi_match=[],
        straddling=[],
        windows=WindowCoverage(WindowPlan("max", 254, 127), 14, 28, split),
    )
    report = diagnostics_report(
        diag, chunk_size=512, overlap=0, questions_file="questions.jsonl", longest=10
    )
    long, tail = [s for s in report.sections if s.has_table]
    assert long.heading.startswith("chunks longer than the 254 tokens the model reads (14)")
    assert [r.cells[0] for r in long.rows] == [f"doc.md#{i}" for i in range(13, 3, -1)]
    assert tail.heading == (
        "evidence in a cut-off tail (14): the vector retriever does not see it all; "
        "10 shown (--verbose: all)"
    )
    assert [r.cells[1] for r in tail.rows][:2] == ["q12", "q13"]
    assert [r.cells[4] for r in tail.rows] == ["split", "split"] + ["whole"] * 8
    everything = diagnostics_report(diag, chunk_size=512, overlap=0, questions_file="q.jsonl")
    assert [len(s.rows) for s in everything.sections if s.has_table] == [14, 14]


def test_check_chunks_explains_labels_made_on_ragtuis_own_chunking(
    mini: Path, mini_settings, tmp_path: Path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    first, second = ws.data.chunks[0], ws.data.chunks[1]
    ws.set_grade("m01", first.id, 2)
    ws.set_grade("m02", second.id, 1)
    assert re.fullmatch(r".+#\d+", first.id)
    chunks = tmp_path / "kb.jsonl"
    # The team's chunks: the same texts under ids of their own, but the second's text edited.
    rows = [
        {"id": f"kb-{i:04d}", "text": c.text + (" (edited)" if c is second else ""), "doc": c.doc}
        for i, c in enumerate(ws.data.chunks)
    ]
    chunks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(
        ["check", "--golden", str(mini / "golden"), "--chunks", str(chunks), "--no-project"]
    )
    out, err = capsys.readouterr()
    assert code == 1, err  # they still do not apply: problems, each explained
    lines = out.splitlines()
    (one,) = [line for line in lines if f"stale label for {first.id} " in line]
    assert one.endswith(
        "made on ragtui's own chunking (ids <document>#<n>), not on kb.jsonl; "
        "the same text is its chunk kb-0000"
    ), one
    (two,) = [line for line in lines if f"stale label for {second.id} " in line]
    assert two.endswith(f"not on kb.jsonl; it holds {second.doc} under other chunk ids"), two
    (hint,) = [line for line in lines if line.startswith("hint: ")]
    assert hint.startswith(
        f"hint: 2 labels name chunks of ragtui's own chunking (such as {first.id}), made without "
        "--chunks; kb.jsonl names its chunks otherwise (such as kb-0000, kb-0001)."
    )
    assert "chunk not in the chunked corpus" not in out
    # Without --chunks the labels apply: neither is a problem, and there is no hint.
    main(["check", *mini_args(mini), "--no-project"])
    plain = capsys.readouterr().out
    assert f"label for {first.id} " not in plain and f"label for {second.id} " not in plain
    assert "hint:" not in plain
