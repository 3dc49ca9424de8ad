"""Scale through Milvus Lite: 100,000 synthetic chunks indexed, then questions asked by BM25, vector and hybrid.

python -m bench.milvus_scale                      # 100,000 chunks, 200 questions
python -m bench.milvus_scale --chunks 20000       # a quicker look

The chunks and questions are bench/scale.py's (Zipf-drawn words, each question six words of one
target chunk); embeddings are random unit vectors (no model runs: this measures Milvus, not
encoding). Run as a child process so its peak memory is its own: Milvus Lite runs inside this
process, so the peak RSS is ragtui's and Milvus Lite's together. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import peak_rss_mb
from bench.scale import synthetic
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.milvus import MilvusRetriever, MilvusTarget, index_collection


def _folder_mb(path: Path) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += (Path(root) / name).stat().st_size
    return total / 1048576


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--index", default="FLAT", choices=("FLAT", "HNSW"))
    args = parser.parse_args()
    figures: dict[str, float | str] = {"chunks": args.chunks, "questions": args.questions}
    chunks, questions = synthetic(args.chunks, args.questions)
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(len(chunks), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    qvectors = rng.normal(size=(len(questions), 384)).astype(np.float32)
    qvectors /= np.linalg.norm(qvectors, axis=1, keepdims=True)
    by_text = {text: qvectors[i] for i, (_, text, _) in enumerate(questions)}
    figures["index_type"] = args.index
    with tempfile.TemporaryDirectory() as tmp:
        uri = str(Path(tmp) / "scale.db")
        target = MilvusTarget(uri, "scale")
        started = time.perf_counter()
        index_collection(
            target, chunks, "random-384", vectors=vectors, batch=args.batch, index_type=args.index
        )
        figures["index_s"] = time.perf_counter() - started
        figures["index_chunks_per_s"] = len(chunks) / figures["index_s"]
        figures["db_mb"] = _folder_mb(Path(uri))
        # Milvus Lite keeps BM25 statistics per segment (one data file each): more than one
        # segment and its IDF is no longer the collection's.
        figures["lite_segments"] = len(
            list(Path(uri).glob("collections/*/partitions/*/data/*.parquet"))
        )
        runs: dict[str, dict[str, list[tuple[str, float]]]] = {}
        for kind in ("bm25", "vector", "hybrid"):
            retriever = MilvusRetriever(f"milvus-{kind}", kind, target, "random-384")
            # Random question vectors stand in for the model (see the module docstring).
            retriever._embed = lambda texts: [by_text[t].tolist() for t in texts]  # type: ignore[method-assign]
            retriever.search(
                questions[0][1], args.depth
            )  # connect, load, build the segment indexes
            started = time.perf_counter()
            found: dict[str, list[tuple[str, float]]] = {}
            for i in range(0, len(questions), 32):
                part = questions[i : i + 32]
                answers = retriever.search_batch([t for _, t, _ in part], args.depth)
                for (qid, _, _), hits in zip(part, answers, strict=True):
                    found[qid] = [(h.id, h.score) for h in hits]
            seconds = time.perf_counter() - started
            figures[f"{kind}_qps"] = len(questions) / seconds
            runs[f"milvus-{kind}"] = found
            retriever.close()
    # The same questions through ragtui's bm25s, to show the rankings agree at this scale too.
    fast = BM25Retriever(chunks, backend="bm25s")
    runs["bm25s"] = {qid: fast.search(text, args.depth) for qid, text, _ in questions}
    same = sum(
        [c for c, _ in runs["bm25s"][q]] == [c for c, _ in runs["milvus-bm25"][q]]
        for q, _, _ in questions
    )
    figures["milvus_bm25_same_list_as_bm25s"] = same / len(questions)
    grades = {qid: {target_id: 2} for qid, _, target_id in questions}
    ev = Evaluation([q for q, _, _ in questions], grades.__getitem__, runs, k=3)
    for name in runs:
        figures[f"{name}_recall_at_3"] = ev.summary(name).recall
    figures["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
