"""Progress in a log (stderr not a terminal, as in CI): every long step says when it starts, every
``RAGTUI_PROGRESS_SECONDS`` while it runs, and when it ends with its rate (issue 22: the first
embedding of 644 texts was silent for 3 minutes in a CI log); and the rate is timed over the whole
encoding, its first and longest batch included (it started after that batch, overstating the rate
by 14-19 %)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.cli.output import rich_progress
from ragtui.core.retrieval.embeddings import Embedder
from tests.conftest import mini_args

#: A start line, a periodic line, an end line.
START = r"ragtui: {label} (\d+ of )?\d+ {unit}\.\.\."
EVERY = r"ragtui: {label}: \d+ of \d+ {unit}, [\d.]+ {unit}/s, about \d+ s left"
END = r"ragtui: {label}: \d+ {unit} in [\d.]+ s \([\d.]+ {unit}/s\)"


def _lines(err: str, label: str, unit: str) -> tuple[list[str], list[str], list[str]]:
    """The start, periodic and end lines of one step."""
    lines = err.splitlines()

    def like(pattern: str) -> list[str]:
        regex = pattern.format(label=re.escape(label), unit=unit)
        return [line for line in lines if re.fullmatch(regex, line)]

    return like(START), like(EVERY), like(END)


@pytest.fixture
def many_docs(tmp_path: Path) -> Path:
    """80 small documents and one question: more than two batches of 32 texts to embed."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(80):
        (corpus / f"d{i:02d}.md").write_text(
            f"# Note {i}\n\nPumping station PS-{i:02d} holds {i} m3.\n"
        )
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "questions.jsonl").write_text(
        '{"id": "q1", "question": "What does PS-07 hold?", "evidence": "PS-07 holds 7 m3."}\n'
    )
    return tmp_path


def test_embedding_says_start_every_period_and_end(many_docs, capsys, monkeypatch):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(many_docs / "cold"))
    monkeypatch.setenv("RAGTUI_PROGRESS_SECONDS", "0")  # a line after every batch
    argv = ["eval", "--corpus", str(many_docs / "corpus"), "--golden", str(many_docs / "golden")]
    # torch's batches of 32 (ONNX Runtime's are sized by tokens: tests/system/test_onnx_backend.py).
    argv += ["--embedding-backend", "torch"]
    assert main([*argv, "--retrievers", "vector", "--no-project"]) == 0
    err = capsys.readouterr().err
    start, every, end = _lines(err, "embedding", "texts")
    assert start == ["ragtui: embedding 81 texts..."], err
    assert [line.split(":")[2].split(",")[0] for line in every] == [
        " 32 of 81 texts",
        " 64 of 81 texts",
    ]
    assert len(end) == 1 and end[0].startswith("ragtui: embedding: 81 texts in ")
    assert err.splitlines() == [*start, *every, *end]


def test_the_default_period_keeps_a_short_step_to_two_lines(mini, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(tmp_path / "cold"))
    monkeypatch.delenv("RAGTUI_PROGRESS_SECONDS", raising=False)
    assert main(["eval", *mini_args(mini, "--retrievers", "vector"), "--no-project"]) == 0
    err = capsys.readouterr().err.splitlines()
    start, every, end = _lines("\n".join(err), "embedding", "texts")
    assert len(start) == len(end) == 1 and every == [] and len(err) == 2


def test_the_encoding_is_timed_from_before_its_first_batch(capsys):
    """Embedder.encode reports (0, total) before the library encodes anything, so the rate of a
    progress line is over the whole call: its first batch, the longest texts, included (torch:
    the library's call is watched; ONNX Runtime's batches are ragtui's own, and report alike)."""
    embedder = Embedder(backend="torch")
    model = embedder._load()
    # Long texts first in the library's own length sort: the first batch is the slowest.
    texts = [("dike " * 200) + str(i) for i in range(32)] + [f"short {i}" for i in range(32)]
    events: list[tuple[str, int]] = []
    encode = model.encode

    def library(inputs, **kwargs):
        events.append(("library", len(inputs)))
        return encode(inputs, **kwargs)

    model.encode = library  # type: ignore[method-assign]
    try:
        embedder.encode(texts, lambda done, total: events.append(("progress", done)))
        assert events[:2] == [("progress", 0), ("library", 64)]
        assert events[2:] == [("progress", 32), ("progress", 64)]
        # The line a log gets: its seconds cover the encoding as a clock around the call measures it.
        line = rich_progress()  # capsys: stderr is not a terminal
        started = time.monotonic()
        embedder.encode(texts, line)
        measured = time.monotonic() - started
    finally:
        model.encode = encode  # type: ignore[method-assign]
    (end,) = _lines(capsys.readouterr().err, "embedding", "texts")[2]
    seconds = float(re.search(r"in ([\d.]+) s", end).group(1))
    assert seconds >= 0.85 * measured - 0.1, (seconds, measured)


def test_live_retrievers_say_start_every_period_and_end(mini, capsys, monkeypatch, tmp_path):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "slow_plugin.py").write_text(
        "import time\n\n"
        "def make():\n"
        "    def search(question, depth):\n"
        "        time.sleep(0.01)\n"
        "        return []\n"
        "    return search\n"
    )
    monkeypatch.syspath_prepend(str(plugin))
    monkeypatch.setenv("RAGTUI_PROGRESS_SECONDS", "0")
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(tmp_path / "cold"))
    argv = [
        "eval",
        *mini_args(mini, "--retrievers", "bm25"),
        "--retriever",
        "slow=slow_plugin:make",
        "--no-project",
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    start, every, end = _lines(err, "asking slow", "questions")
    questions = int(re.search(r"(\d+) questions", start[0]).group(1))
    assert start == [f"ragtui: asking slow {questions} questions..."]
    assert len(every) == questions - 1
    assert len(end) == 1 and end[0].startswith(f"ragtui: asking slow: {questions} questions in ")
    # Asked again, every answer comes from the cache: nothing to wait for, nothing said.
    assert main(argv) == 0
    assert "asking slow" not in capsys.readouterr().err


def test_reranking_says_start_every_period_and_end(mini, capsys, monkeypatch, tiny_cross_encoder):
    monkeypatch.setenv("RAGTUI_PROGRESS_SECONDS", "0")
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(mini / "cold"))
    argv = [
        "eval",
        *mini_args(mini, "--retrievers", "bm25"),
        "--rerank",
        str(tiny_cross_encoder),
        "--rerank-over",
        "bm25",
        "--no-project",
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    start, every, end = _lines(err, "reranking", "questions")
    questions = int(re.search(r"(\d+) questions", start[0]).group(1))
    # The start is said before the first question is scored (not "7 of 8" after it).
    assert start == [f"ragtui: reranking {questions} questions..."], err
    assert len(every) == questions - 1
    assert len(end) == 1


def test_index_building_says_start_every_period_and_end(mini, capsys, monkeypatch, tmp_path):
    pytest.importorskip("milvus_lite")
    monkeypatch.setenv("RAGTUI_PROGRESS_SECONDS", "0")
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(tmp_path / "cold"))
    argv = [
        "index",
        *mini_args(mini),
        "--milvus",
        str(tmp_path / "m.db"),
        "--collection",
        "c",
        "--batch",
        "4",
        "--no-project",
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    for label, unit in (("embedding", "texts"), ("writing", "rows")):
        start, _, end = _lines(err, label, unit)
        assert len(start) == 1 and len(end) == 1, err
    # The rows are the chunks' and (windows on) their windows', written in batches of 4: a line
    # after every batch but the last, each at most 4 rows on.
    rows = int(re.search(r"writing (\d+) rows", err).group(1))
    done = [
        int(re.search(r"writing: (\d+) of", line).group(1))
        for line in _lines(err, "writing", "rows")[1]
    ]
    assert done and all(0 < b - a <= 4 for a, b in zip([0, *done], [*done, rows], strict=True)), err
    assert len(done) >= (rows - 1) // 4


def test_no_library_progress_bar_when_the_libraries_were_imported_first(mini, tmp_path):
    """The libraries read their quiet switches from the environment when imported: a process that
    imported transformers before ragtui loads the model (a test session, a reranker) still gets no
    "Loading weights" bar and no carriage return on stderr."""
    import subprocess
    import sys

    from tests.conftest import mini_args

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY")
    }
    env["RAGTUI_CACHE_DIR"] = str(tmp_path / "cold")
    code = (
        "import sys, transformers, tqdm, huggingface_hub\n"
        "from ragtui.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "eval", *mini_args(mini, "--retrievers", "vector")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "Loading weights" not in done.stderr, done.stderr
