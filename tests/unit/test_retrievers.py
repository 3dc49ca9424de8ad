"""Retrievers: BM25 against rank-bm25 itself, the real embedding model, RRF by hand, tie-breaks."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.tokenizer import default_model_path
from ragtui.core.retrieval.bm25 import BM25Retriever, bm25_tokens
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache
from ragtui.core.retrieval.hybrid import HybridRetriever, rrf_fuse
from ragtui.core.retrieval.vector import VectorRetriever

TEXTS = [
    "The pumping station lifts polder water into the canal.",
    "Dike inspectors walk the embankment every spring.",
    "Water levels are measured against NAP at each gauge.",
    "The pumping station PS-07 has a capacity of 42 cubic metres per minute.",
    "Permits for jetties cost 120 euros.",
]


def _chunks(texts=TEXTS) -> list[Chunk]:
    return [
        Chunk(f"d.md#{i}", "d.md", i, 0, len(t), t, (), len(t.split())) for i, t in enumerate(texts)
    ]


def test_bm25_scores_are_rank_bm25s_and_non_matching_chunks_are_left_out():
    bm25 = BM25Retriever(_chunks())
    ranking = bm25.search("pumping station capacity", 10)
    reference = BM25Okapi([bm25_tokens(t) for t in TEXTS]).get_scores(
        bm25_tokens("pumping station capacity")
    )
    assert [cid for cid, _ in ranking] == ["d.md#3", "d.md#0"]
    assert [s for _, s in ranking] == [reference[3], reference[0]]
    assert bm25.search("zebra", 10) == []


def test_bm25_ties_break_by_chunk_order():
    bm25 = BM25Retriever(_chunks(["alpha beta", "gamma", "alpha beta", "alpha beta"]))
    assert [cid for cid, _ in bm25.search("alpha", 2)] == ["d.md#0", "d.md#2"]


def test_bm25s_backend_ranks_the_same_chunks():
    chunks = _chunks()
    plain = BM25Retriever(chunks).search("pumping station water", 10)
    fast = BM25Retriever(chunks, backend="bm25s").search("pumping station water", 10)
    assert {c for c, _ in plain} == {c for c, _ in fast}
    assert fast[0][0] == plain[0][0]


def test_vector_ties_and_depth_are_exact():
    chunks = _chunks(["a", "b", "c", "d"])
    matrix = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    vector = VectorRetriever(chunks, matrix, lambda q: np.array([1.0, 0.0], dtype=np.float32))
    assert [cid for cid, _ in vector.search("q", 2)] == ["d.md#0", "d.md#2"]
    assert [cid for cid, _ in vector.search("q", 10)] == ["d.md#0", "d.md#2", "d.md#3", "d.md#1"]


def test_rrf_by_hand():
    order = {f"c{i}": i for i in range(5)}
    fused = rrf_fuse(
        [[("c1", 9.0), ("c2", 8.0)], [("c2", 0.9), ("c3", 0.8), ("c1", 0.7)]], order, 10
    )
    # c2: 1/62 + 1/61; c1: 1/61 + 1/63; c3: 1/62.
    assert [c for c, _ in fused] == ["c2", "c1", "c3"]
    assert abs(fused[0][1] - (1 / 62 + 1 / 61)) < 1e-15
    assert abs(fused[1][1] - (1 / 61 + 1 / 63)) < 1e-15
    # Equal fused scores fall back to chunk order.
    tied = rrf_fuse([[("c4", 1.0)], [("c0", 1.0)]], order, 10)
    assert [c for c, _ in tied] == ["c0", "c4"]


def test_real_model_embeds_and_ranks_by_meaning(cache_dir):
    chunks = _chunks()
    cache = EmbeddingCache("all-MiniLM-L6-v2", cache_dir)
    matrix = cache.embed([c.text for c in chunks], Embedder())
    assert matrix.shape == (5, 384) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    query = cache.embed(["Who checks the levees?"], Embedder())[0]
    vector = VectorRetriever(chunks, matrix, lambda q: query)
    # No word in common with the dike chunk, yet the model finds it first.
    assert vector.search("Who checks the levees?", 1)[0][0] == "d.md#1"
    # The cache now answers without encoding.
    again = EmbeddingCache("all-MiniLM-L6-v2", cache_dir)
    assert again.missing([c.text for c in chunks]) == []
    assert np.array_equal(again.get([c.text for c in chunks]), matrix)


def test_hybrid_fuses_the_top_depth_of_each():
    chunks = _chunks()
    order = {c.id: i for i, c in enumerate(chunks)}
    bm25 = BM25Retriever(chunks)
    matrix = np.eye(5, dtype=np.float32)
    vector = VectorRetriever(chunks, matrix, lambda q: np.array([0, 0, 0, 0, 1], dtype=np.float32))
    hybrid = HybridRetriever(bm25, vector, order)
    ranking = hybrid.search("pumping station", 2)
    b = bm25.search("pumping station", 2)
    v = vector.search("pumping station", 2)
    assert ranking == rrf_fuse([b, v], order, 2)
    assert len(ranking) == 2


def test_batched_vector_search_equals_one_by_one():
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(50, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.normal(size=(7, 8)).astype(np.float32)
    chunks = _chunks([f"t{i}" for i in range(50)])
    vector = VectorRetriever(chunks, matrix, lambda q: q)
    batched = vector.search_vectors(queries, 5, batch=3)
    single = [vector.search_vector(q, 5) for q in queries]
    assert [[c for c, _ in r] for r in batched] == [[c for c, _ in r] for r in single]
    for r, t in zip(batched, single, strict=True):
        assert [s for _, s in r] == pytest.approx([s for _, s in t], abs=1e-6)


def test_encoding_in_length_order_gives_each_text_its_own_row():
    texts = [c.text for c in _chunks()] + ["short", "a much longer question about the dike " * 8]
    calls: list[tuple[int, int]] = []
    together = Embedder().encode(texts, lambda done, total: calls.append((done, total)))
    alone = np.vstack([Embedder().encode([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)  # rows come back in the order given
    assert calls[-1] == (len(texts), len(texts))


def test_one_library_call_reports_progress_after_every_batch():
    """On torch, the whole list goes to the library at once (its own length sort), and progress
    is heard at the start (0) and after each of its batches of 32, never past the total."""
    texts = [
        f"question {i} about pumping station PS-{i:02d}" + " and more" * (i % 7) for i in range(70)
    ]
    calls: list[tuple[int, int]] = []
    embedder = Embedder(backend="torch")
    model = embedder._load()
    library_calls: list[int] = []
    encode = model.encode

    def counted(inputs, **kwargs):
        library_calls.append(len(inputs))
        return encode(inputs, **kwargs)

    model.encode = counted  # type: ignore[method-assign]
    rows = embedder.encode(texts, lambda done, total: calls.append((done, total)))
    assert library_calls == [70], "the whole list in one call: the library sorts it by length"
    assert rows.shape == (70, 384) and rows.dtype == np.float32
    assert [d for d, _ in calls] == [0, 32, 64, 70]
    assert all(t == 70 for _, t in calls)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


def test_a_model_saved_again_in_the_same_folder_gets_a_cache_of_its_own(tmp_path, cache_dir):
    model = tmp_path / "model"
    shutil.copytree(default_model_path(), model)
    first = EmbeddingCache(str(model), cache_dir).folder
    os.utime(model / "config.json", (1, 1))  # reinstalled: same bytes, new times
    assert EmbeddingCache(str(model), cache_dir).folder == first
    weights = next(p for p in model.iterdir() if p.suffix in {".safetensors", ".bin"})
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # fine-tuned and saved again: other weights under the same name
    weights.write_bytes(bytes(data))
    assert EmbeddingCache(str(model), cache_dir).folder != first
