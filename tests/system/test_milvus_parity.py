"""Milvus = ragtui (issue 26): on the bundled set, ``milvus-vector`` ranks as ``vector`` and
``milvus-hybrid`` as ``hybrid`` with windows on (best window or mean) and off, ``ragtui index``
takes every embedding from the cache ``eval`` filled, and a collection cut into other windows is
refused in one line. One Milvus Lite database for the module, indexed once per windows setting.

``hybrid`` is compared with ``--bm25-backend bm25s``: Milvus's BM25 is Lucene's (bm25s's) by design,
not rank-bm25's (docs/retriever-milvus.md), and ``milvus-bm25`` equals ``bm25`` there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ragtui.cli import main
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.paths import bundled_golden
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.errors import InputError
from ragtui.core.retrieval.embeddings import EmbeddingCache
from ragtui.core.retrieval.milvus import MilvusRetriever, MilvusTarget, index_collection
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan, chunk_windows
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

MODES = ("max", "mean", "off")


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundled golden set, so a developer's own labels never change the figures."""
    folder = tmp_path_factory.mktemp("golden")
    shutil.copy(bundled_golden() / "questions.jsonl", folder / "questions.jsonl")
    return folder


@pytest.fixture(scope="module")
def settings(golden: Path, cache_dir: Path) -> Settings:
    return Settings(golden=golden, cache_dir=cache_dir, bm25_backend="bm25s")


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> str:
    """The bundled set indexed three times (windows max, mean and off), as ``ragtui index`` does."""
    uri = str(tmp_path_factory.mktemp("parity") / "parity.db")
    for mode in MODES:
        ws = Workspace.load(replace(settings, retrievers=("vector",), windows=mode))
        windows = chunk_windows(
            ws.data.chunks, token_counter(settings.model), ws.ranked.window_plan
        )
        result = index_collection(
            MilvusTarget(uri, f"bundled_{mode}"),
            ws.data.chunks,
            settings.model,
            windows=windows,
            cache_root=settings.cache_dir,
        )
        assert result.chunks == len(ws.data.chunks) == 39
        assert result.windows == (0 if mode == "off" else len(windows.texts))
    return uri


@pytest.fixture(scope="module")
def opened(lite: str, settings: Settings) -> dict[str, Workspace]:
    return {
        mode: Workspace.open(
            replace(settings, windows=mode, milvus=lite, collection=f"bundled_{mode}", refresh=True)
        )
        for mode in MODES
    }


def _ids(ws: Workspace, name: str, qid: str) -> list[str]:
    return [cid for cid, _ in ws.ranking(name, qid)]


@pytest.mark.parametrize("mode", MODES)
def test_milvus_ranks_as_ragtui_on_the_bundled_set(opened, mode):
    ws = opened[mode]
    assert all(s.state == "ready" for s in ws.live.status.values()), ws.live.status
    ev = ws.evaluation
    assert ev is not None
    for ours, theirs in (
        ("bm25", "milvus-bm25"),
        ("vector", "milvus-vector"),
        ("hybrid", "milvus-hybrid"),
    ):
        assert ev.per_question[theirs] == ev.per_question[ours], (mode, theirs)
        assert ev.summary(theirs) == ev.summary(ours)
        # The whole top-depth list, not only the metrics (ties break by chunk order in both).
        for q in ws.questions:
            assert _ids(ws, theirs, q.id) == _ids(ws, ours, q.id), (mode, theirs, q.id)
    if mode != "off":
        # Windows matter here: the 512-token chunks are read as several windows each.
        assert ws.ranked.windows is not None and ws.ranked.windows.windowed > 0
        assert (
            ev.summary("milvus-vector").recall
            > opened["off"].evaluation.summary("milvus-vector").recall
        )


def test_the_windows_are_rows_grouped_by_chunk(lite, opened):
    from ragtui.core.retrieval.milvus import connect

    client = connect(lite)
    try:
        props = client.describe_collection("bundled_max")["properties"]
        assert props["ragtui.windows"] == "windows of 254 tokens, stride 127"
        assert props["ragtui.windows_collection"] == "bundled_max_windows"
        rows = client.query(
            "bundled_max_windows",
            filter='chunk == "permits.md#0"',
            output_fields=["chunk", "window", "windows"],
        )
        assert sorted(r["window"] for r in rows) == list(range(len(rows)))
        assert len(rows) > 1 and {r["windows"] for r in rows} == {len(rows)}
        names = {f["name"] for f in client.describe_collection("bundled_max")["fields"]}
        assert "vector" not in names and "sparse" in names  # one row per chunk: text and BM25
        off = client.describe_collection("bundled_off")
        assert off["properties"]["ragtui.windows"] == "off (one vector per chunk)"
        assert "vector" in {f["name"] for f in off["fields"]}
    finally:
        client.close()


def _fake_model(root: Path, name: str, texts: list[str], vectors: np.ndarray) -> None:
    """Questions "embedded" by a model that does not exist: their vectors put in its cache."""
    EmbeddingCache(name, root).add(texts, vectors.astype(np.float32))


def _synthetic(
    tmp_path: Path, per_chunk: list[int], vectors: np.ndarray, mode: str = "max"
) -> tuple[MilvusTarget, list[Chunk]]:
    """Chunks with the given window counts and window vectors, indexed as ragtui index does."""
    chunks = [Chunk(f"d#{i}", "d", i, 0, 7, f"chunk {i}", (), 300) for i in range(len(per_chunk))]
    spans = [[(0, 7)] * n for n in per_chunk]
    texts = [f"chunk {i} window {w}" for i, n in enumerate(per_chunk) for w in range(n)]
    first = np.cumsum([0, *per_chunk[:-1]]).astype(np.int64)
    windows = ChunkWindows(WindowPlan(mode, 10, 5), spans, texts, first)
    target = MilvusTarget(str(tmp_path / "synthetic.db"), "synthetic")
    index_collection(target, chunks, "fake-8", windows=windows, vectors=vectors)
    return target, chunks


def _exact(vectors: np.ndarray, per_chunk: list[int], query: np.ndarray, mode: str) -> list[float]:
    scores = vectors @ query
    out, row = [], 0
    for n in per_chunk:
        part = scores[row : row + n]
        out.append(float(part.max() if mode == "max" else part.mean()))
        row += n
    return out


@pytest.mark.parametrize("mode", ["max", "mean"])
def test_a_chunk_with_many_near_windows_does_not_crowd_out_the_others(tmp_path, mode):
    """Milvus Lite's grouping fetches a fixed 10 x limit windows: one chunk of 60 windows all near
    the question fills them, and Lite returns one chunk. ragtui then groups the windows itself."""
    rng = np.random.default_rng(7)
    per_chunk = [60, 1, 1, 1, 1, 1]
    query = np.zeros(8, np.float32)
    query[0] = 1.0
    vectors = rng.normal(size=(sum(per_chunk), 8)).astype(np.float32) * 0.1
    vectors[:60, 0] += 5.0  # every window of chunk 0 is nearer than anything else
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    target, _chunks = _synthetic(tmp_path, per_chunk, vectors, mode)
    _fake_model(tmp_path, "fake-8", ["the question"], query[None, :])
    retriever = MilvusRetriever("milvus-vector", "vector", target, "fake-8", tmp_path)
    retriever.pooling = mode
    try:
        hits = retriever.search("the question", 4)
    finally:
        retriever.close()
    exact = _exact(vectors, per_chunk, query, mode)
    expected = sorted(range(len(per_chunk)), key=lambda i: (-exact[i], i))[:4]
    assert [h.id for h in hits] == [f"d#{i}" for i in expected]
    assert np.allclose([h.score for h in hits], [exact[i] for i in expected], atol=1e-5)


def test_equal_scores_break_by_chunk_order_across_the_cut(tmp_path):
    """Chunks 1-5 score alike; at depth 3 the two kept are the first two in chunk order, whatever
    order Milvus returns them in (ragtui asks for more until the tie ends, then sorts)."""
    per_chunk = [1, 1, 1, 1, 1, 1]
    query = np.zeros(8, np.float32)
    query[0] = 1.0
    vectors = np.zeros((6, 8), np.float32)
    vectors[0, 0] = 1.0
    vectors[1:, 0] = 0.6
    vectors[1:, 1] = 0.8
    target, chunks = _synthetic(tmp_path, per_chunk, vectors)
    _fake_model(tmp_path, "fake-8", ["the question"], query[None, :])
    retriever = MilvusRetriever("milvus-vector", "vector", target, "fake-8", tmp_path)
    # The workspace's chunk order, reversed: the tie must follow it, not Milvus's own order.
    retriever.chunk_order = {c.id: len(chunks) - i for i, c in enumerate(chunks)}
    try:
        hits = retriever.search("the question", 3)
    finally:
        retriever.close()
    assert [h.id for h in hits] == ["d#0", "d#5", "d#4"]


def test_index_after_eval_encodes_nothing_and_never_loads_the_model(
    settings, golden, tmp_path, lite
):
    """``ragtui eval`` fills the embedding cache (every window and question); ``ragtui index``
    then takes every vector from it: 0 encoded, sentence-transformers never imported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGTUI_CACHE_DIR": str(settings.cache_dir)}
    data = ["--golden", str(golden)]
    done = subprocess.run(
        [sys.executable, "-m", "ragtui", "eval", "--retrievers", "vector", *data],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    uri = str(tmp_path / "reuse.db")
    code = (
        "import sys\n"
        "from ragtui.cli import main\n"
        "rc = main(sys.argv[1:])\n"
        "print('loaded:', sorted(m for m in ('sentence_transformers', 'torch') if m in sys.modules))\n"
        "raise SystemExit(rc)\n"
    )
    args = ["index", *data, "--milvus", uri, "--collection", "reuse"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "reuse: encoded 0 of 109 windows; 109 from the embedding cache" in lines, done.stdout
    assert any(
        line.startswith("reuse: wrote 39 of 39 chunks and 109 of 109 windows into reuse_windows")
        for line in lines
    )
    assert lines[-1] == "loaded: []", done.stdout


def test_a_collection_cut_into_other_windows_is_refused_in_one_line(
    lite, golden, capsys, cli_cache_env
):
    args = ["--golden", str(golden), "--bm25-backend", "bm25s", "--milvus", lite]
    tail = "use the settings it was indexed with, or index it again (ragtui index --replace)"
    harm = "its vectors are cut into other windows (--windows, --window-stride)"
    cases = (
        (
            ["--collection", "bundled_max", "--windows", "off"],
            (
                "'bundled_max' was indexed from other data than this workspace's (windows: windows of 254 "
                "tokens, stride 127, not off (one vector per chunk))"
            ),
        ),
        (
            ["--collection", "bundled_max", "--window-stride", "100"],
            (
                "'bundled_max' was indexed from other data than this workspace's (windows: windows of 254 "
                "tokens, stride 127, not windows of 254 tokens, stride 100)"
            ),
        ),
        (
            ["--collection", "bundled_off"],
            (
                "'bundled_off' was indexed from other data than this workspace's (windows: off (one vector "
                "per chunk), not windows of 254 tokens, stride 127)"
            ),
        ),
    )
    for extra, what in cases:
        assert main(["eval", *args, *extra]) == 2, extra
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
        assert lines[0] == f"ragtui: error: {lite}: collection {what}: {harm}; {tail}", extra
    # BM25 reads no vectors: the windows do not matter to it.
    assert (
        main(
            [
                "eval",
                *args,
                "--collection",
                "bundled_max",
                "--windows",
                "off",
                "--retrievers",
                "bm25,milvus-bm25",
            ]
        )
        == 0
    )
    capsys.readouterr()
    # ragtui index refuses to mix windows into a collection cut otherwise.
    assert main(["index", *args, "--collection", "bundled_off"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"ragtui: error: {lite}: collection 'bundled_off' was built from other data (windows: off "
        "(one vector per chunk), not windows of 254 tokens, stride 127); choose another "
        "--collection, or --replace"
    )


def test_max_and_mean_read_the_same_window_rows(lite, settings):
    """Pooling is how the windows' scores combine, not how the vectors are cut: a collection
    indexed with --windows max is searched with mean pooling as one indexed with mean."""
    ws = Workspace.open(
        replace(settings, windows="mean", milvus=lite, collection="bundled_max", refresh=True)
    )
    ev = ws.evaluation
    assert ev is not None
    assert ev.per_question["milvus-vector"] == ev.per_question["vector"]
    for q in ws.questions:
        assert _ids(ws, "milvus-vector", q.id) == _ids(ws, "vector", q.id)


def test_a_synthetic_index_needs_its_windows_vectors(tmp_path):
    per_chunk = [2, 1]
    with pytest.raises(ValueError, match="one embedding per window"):
        _synthetic(tmp_path, per_chunk, np.ones((2, 8), np.float32))
    with pytest.raises(InputError, match="no chunks to index"):
        index_collection(MilvusTarget(str(tmp_path / "e.db"), "e"), [], "fake-8")


def test_an_interrupted_index_resumes_its_window_rows(tmp_path):
    """Stopped while writing the window rows: run again, only the rows that are not there are written."""
    per_chunk = [3, 1, 4, 2]
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(sum(per_chunk), 8)).astype(np.float32)
    chunks = [Chunk(f"d#{i}", "d", i, 0, 7, f"chunk {i}", (), 300) for i in range(len(per_chunk))]
    spans = [[(0, 7)] * n for n in per_chunk]
    texts = [f"chunk {i} window {w}" for i, n in enumerate(per_chunk) for w in range(n)]
    windows = ChunkWindows(WindowPlan("max", 10, 5), spans, texts, np.array([0, 3, 4, 8]))
    target = MilvusTarget(str(tmp_path / "resume.db"), "resume")

    def stop_in_the_windows(done: int, total: int) -> None:
        if done > len(chunks):  # the chunk rows and the first batch of windows are written
            raise KeyboardInterrupt

    common = {"windows": windows, "vectors": vectors, "batch": 4}
    with pytest.raises(KeyboardInterrupt):
        index_collection(target, chunks, "fake-8", write_progress=stop_in_the_windows, **common)
    result = index_collection(target, chunks, "fake-8", **common)
    assert (result.created, result.written, result.already) == (False, 0, 4)
    assert (result.windows, result.windows_written) == (10, 6)
    from ragtui.core.retrieval.milvus import connect

    client = connect(target.uri)
    try:
        rows = client.query(
            "resume_windows", filter="id >= 0", output_fields=["id", "chunk", "window"]
        )
    finally:
        client.close()
    assert sorted((r["id"], r["chunk"], r["window"]) for r in rows) == [
        (r, f"d#{i}", w)
        for r, (i, w) in enumerate((i, w) for i, n in enumerate(per_chunk) for w in range(n))
    ]
