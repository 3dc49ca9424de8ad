"""Scale: 100,000 synthetic chunks and 1,000 questions through all three retrievers and the metrics.

Run as a child process (``python -m bench.scale``) so its peak memory is its own. Chunk texts are
drawn from a Zipf-distributed vocabulary; embeddings are random unit vectors (no model runs here:
this measures search and evaluation, not encoding). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from bench.common import peak_rss_mb
from ragtui.core.data.chunking import Chunk
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.vector import VectorRetriever


def synthetic(chunks: int, questions: int, seed: int = 0):
    """Chunks of ~80 Zipf-drawn words, and questions of 6 words taken from one target chunk each."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(50_000)])
    ranks = np.arange(1, len(vocab) + 1)
    p = 1 / ranks**1.1
    p /= p.sum()
    lengths = rng.integers(40, 120, size=chunks)
    words = rng.choice(len(vocab), size=int(lengths.sum()), p=p)
    out = []
    pos = 0
    for i, n in enumerate(lengths):
        text = " ".join(vocab[words[pos : pos + n]])
        pos += n
        out.append(
            Chunk(
                f"doc{i // 10}.md#{i % 10}",
                f"doc{i // 10}.md",
                i % 10,
                0,
                len(text),
                text,
                (),
                int(n),
            )
        )
    targets = rng.choice(chunks, size=questions, replace=False)
    qs = []
    for j, t in enumerate(targets):
        toks = out[t].text.split()
        qs.append((f"q{j}", " ".join(rng.choice(toks, size=6)), out[t].id))
    return out, qs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=1_000)
    parser.add_argument("--rank-bm25-sample", type=int, default=20)
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args()
    depth = args.depth
    figures: dict[str, float] = {}

    t0 = time.perf_counter()
    chunks, questions = synthetic(args.chunks, args.questions)
    figures["generate_s"] = time.perf_counter() - t0
    total_start = time.perf_counter()

    t0 = time.perf_counter()
    fast = BM25Retriever(chunks, backend="bm25s")
    figures["bm25s_index_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    bm25_runs = {qid: fast.search(text, depth) for qid, text, _ in questions}
    figures["bm25s_search_s"] = time.perf_counter() - t0
    figures["bm25s_qps"] = len(questions) / figures["bm25s_search_s"]

    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(len(chunks), 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    qmatrix = rng.normal(size=(len(questions), 384)).astype(np.float32)
    qmatrix /= np.linalg.norm(qmatrix, axis=1, keepdims=True)
    vector = VectorRetriever(chunks, matrix, lambda text: qmatrix[0])
    t0 = time.perf_counter()
    vec_list = vector.search_vectors(qmatrix, depth)
    figures["vector_search_s"] = time.perf_counter() - t0
    figures["vector_ms_per_question"] = 1000 * figures["vector_search_s"] / len(questions)
    t0 = time.perf_counter()
    one = [vector.search_vector(q, depth) for q in qmatrix[:100]]
    figures["vector_unbatched_ms_per_question"] = 1000 * (time.perf_counter() - t0) / 100
    # Batched (GEMM) and single (GEMV) products may differ in the last float32 bit.
    figures["vector_batched_max_score_diff"] = max(
        abs(a[1] - b[1])
        for x, y in zip(one, vec_list[: len(one)], strict=True)
        for a, b in zip(x, y, strict=True)
    )
    vector_runs = {qid: r for (qid, _, _), r in zip(questions, vec_list, strict=True)}

    order = {c.id: i for i, c in enumerate(chunks)}
    t0 = time.perf_counter()
    hybrid = HybridRetriever(fast, vector, order)
    hybrid_runs = {
        qid: hybrid.fuse(bm25_runs[qid], vector_runs[qid], depth) for qid, _, _ in questions
    }
    figures["hybrid_fuse_s"] = time.perf_counter() - t0

    grades = {qid: {target: 2} for qid, _, target in questions}
    t0 = time.perf_counter()
    ev = Evaluation(
        [q for q, _, _ in questions],
        grades.__getitem__,
        {"bm25": bm25_runs, "vector": vector_runs, "hybrid": hybrid_runs},
        k=3,
    )
    figures["evaluate_s"] = time.perf_counter() - t0
    figures["total_bm25s_s"] = time.perf_counter() - total_start
    figures["bm25s_recall_at_3"] = ev.summary("bm25").recall

    # The rank-bm25 baseline scores every chunk in Python: timed on a sample of the same questions.
    t0 = time.perf_counter()
    okapi = BM25Retriever(chunks, backend="rank-bm25")
    figures["rank_bm25_index_s"] = time.perf_counter() - t0
    sample = questions[: args.rank_bm25_sample]
    t0 = time.perf_counter()
    okapi_runs = {qid: okapi.search(text, depth) for qid, text, _ in sample}
    per_q = (time.perf_counter() - t0) / len(sample)
    figures["rank_bm25_s_per_question"] = per_q
    figures["rank_bm25_qps"] = 1 / per_q
    figures["rank_bm25_total_estimate_s"] = figures["rank_bm25_index_s"] + per_q * len(questions)
    agree = sum(
        okapi_runs[q][0][0] == bm25_runs[q][0][0]
        for q, _, _ in sample
        if okapi_runs[q] and bm25_runs[q]
    )
    figures["top1_agreement_on_sample"] = agree / len(sample)
    figures["peak_rss_mb"] = peak_rss_mb()
    figures["chunks"] = len(chunks)
    figures["questions"] = len(questions)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
