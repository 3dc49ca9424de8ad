"""Side by side: Milvus (Lite) BM25, dense and hybrid against rank-bm25, bm25s, the exact vector search and ragtui's RRF.

python -m bench.milvus_compare                          # the bundled set (corpus/ + golden/)
python -m bench.milvus_compare --beir tests/data/cranfield --k 10 --depth 100

Every retriever ranks every question; the metrics are ragtui's (trec_eval's definitions) over the
same grades. For each Milvus retriever the table also says how often its top ``depth`` is the very
same list as its ragtui counterpart's, and how often it holds the same chunks in another order
(only ties can do that: equal scores broken another way). Prints Markdown.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from ragtui.core.data.tokenizer import token_counter
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.hybrid import rrf_fuse
from ragtui.core.retrieval.milvus import MilvusRetriever, MilvusTarget, index_collection
from ragtui.core.retrieval.windows import chunk_windows
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace


def _milvus(
    retriever: MilvusRetriever, questions: list[tuple[str, str]], depth: int
) -> tuple[dict[str, Ranking], float]:
    started = time.perf_counter()
    out: dict[str, Ranking] = {}
    for i in range(0, len(questions), 32):
        part = questions[i : i + 32]
        for (qid, _), hits in zip(
            part, retriever.search_batch([t for _, t in part], depth), strict=True
        ):
            out[qid] = [(h.id, h.score) for h in hits]
    return out, time.perf_counter() - started


def _timed(fn, questions: list[tuple[str, str]], depth: int) -> tuple[dict[str, Ranking], float]:
    started = time.perf_counter()
    out = {qid: fn(text, depth) for qid, text in questions}
    return out, time.perf_counter() - started


def _agreement(a: dict[str, Ranking], b: dict[str, Ranking]) -> tuple[float, float, float]:
    """Share of questions with the same list, with the same ids in another order, and mean top-list overlap."""
    same = reordered = 0
    overlap = []
    for qid in a:
        ids_a, ids_b = [c for c, _ in a[qid]], [c for c, _ in b.get(qid, [])]
        if ids_a == ids_b:
            same += 1
        elif set(ids_a) == set(ids_b):
            reordered += 1
        union = set(ids_a) | set(ids_b)
        overlap.append(len(set(ids_a) & set(ids_b)) / len(union) if union else 1.0)
    n = len(a) or 1
    return same / n, reordered / n, float(np.mean(overlap)) if overlap else 1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--beir", type=Path, default=None)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--chunk-size", type=int, default=None)
    args = parser.parse_args()
    settings = Settings(beir=args.beir, k=args.k, depth=args.depth, bm25_backend="rank-bm25")
    # BEIR documents stay whole unless a chunk size is given; the bundled corpus is chunked at 512.
    if args.beir is not None or args.chunk_size is not None:
        settings = replace(settings, chunk_size=args.chunk_size)
    ws = Workspace.open(settings)
    # ragtui index stores the vectors as the vector retriever cuts them (windows on by default:
    # one row per window, searched grouped by chunk); the rows without windows show what they add.
    whole = Workspace.open(replace(settings, windows="off"))
    questions = [(q.id, q.text) for q in ws.questions]
    depth = args.depth
    rankings: dict[str, dict[str, Ranking]] = {}
    seconds: dict[str, float] = {}

    okapi = ws.ranked.bm25
    assert okapi is not None and ws.ranked.vector is not None and ws.ranked.hybrid is not None
    rankings["rank-bm25"], seconds["rank-bm25"] = _timed(okapi.search, questions, depth)
    fast = BM25Retriever(ws.data.chunks, backend="bm25s")
    rankings["bm25s"], seconds["bm25s"] = _timed(fast.search, questions, depth)
    rankings["vector (exact)"], seconds["vector (exact)"] = _timed(
        ws.ranked.vector.search, questions, depth
    )
    assert whole.ranked.vector is not None
    rankings["vector (exact, no windows)"], seconds["vector (exact, no windows)"] = _timed(
        whole.ranked.vector.search, questions, depth
    )
    rankings["hybrid (ragtui RRF)"] = ws.ranked.rankings["hybrid"]
    # Milvus's hybrid fuses its own BM25 (bm25s's formula) and the windowed vector search: this
    # is the like-for-like fusion.
    rankings["hybrid (RRF of bm25s + exact)"] = {
        qid: rrf_fuse(
            [rankings["bm25s"][qid], rankings["vector (exact)"][qid]],
            ws.passages.order,
            depth,
        )
        for qid, _ in questions
    }

    windows = chunk_windows(ws.data.chunks, token_counter(settings.model), ws.ranked.window_plan)
    vectors = ws.embedding_cache().get(windows.texts)
    with tempfile.TemporaryDirectory() as tmp:
        uri = str(Path(tmp) / "compare.db")
        index_seconds = {}
        for index_type in ("FLAT", "HNSW"):
            started = time.perf_counter()
            index_collection(
                MilvusTarget(uri, f"c_{index_type.lower()}"),
                ws.data.chunks,
                settings.model,
                windows=windows,
                vectors=vectors,
                index_type=index_type,
            )
            index_seconds[index_type] = time.perf_counter() - started
        flat = MilvusTarget(uri, "c_flat")
        hnsw = MilvusTarget(uri, "c_hnsw")
        runs = {
            "milvus-bm25": MilvusRetriever("milvus-bm25", "bm25", flat, settings.model),
            "milvus-vector (FLAT)": MilvusRetriever(
                "milvus-vector", "vector", flat, settings.model
            ),
            "milvus-vector (HNSW)": MilvusRetriever(
                "milvus-vector", "vector", hnsw, settings.model
            ),
            "milvus-hybrid": MilvusRetriever("milvus-hybrid", "hybrid", flat, settings.model),
        }
        for name, retriever in runs.items():
            retriever.chunk_order = ws.passages.order  # equal scores in chunk order, as ragtui's
            rankings[name], seconds[name] = _milvus(retriever, questions, depth)
            retriever.close()

    ev = Evaluation(
        [q for q, _ in questions],
        ws.evaluation_grades,
        {n: ws.grades.evaluated_rankings(r) for n, r in rankings.items()},
        args.k,
    )
    counterpart = {
        "bm25s": "rank-bm25",
        "milvus-bm25": "bm25s",
        "milvus-vector (FLAT)": "vector (exact)",
        "milvus-vector (HNSW)": "vector (exact)",
        "milvus-hybrid": "hybrid (RRF of bm25s + exact)",
    }
    name = args.beir.name if args.beir else "bundled set"
    print(
        f"### {name}: {len(ws.data.chunks)} chunks, {len(ev.evaluated)} questions evaluated, "
        f"k={args.k}, depth={depth}, {ws.data.level} level"
    )
    print()
    print(
        f"| retriever | recall@{args.k} | nDCG@{args.k} | MRR | same top-{depth} as | same list | same ids, other order | overlap | questions/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for run_name in rankings:
        s = ev.summary(run_name)
        other = counterpart.get(run_name)
        cells = ["", "", "", ""]
        if other:
            same, reordered, overlap = _agreement(rankings[run_name], rankings[other])
            cells = [other, f"{same:.3f}", f"{reordered:.3f}", f"{overlap:.3f}"]
        qps = f"{len(questions) / seconds[run_name]:.0f}" if run_name in seconds else ""
        row = [run_name, f"{s.recall:.3f}", f"{s.ndcg:.3f}", f"{s.mrr:.3f}", *cells, qps]
        print("| " + " | ".join(row) + " |")
    print()
    print(
        f"Milvus Lite index time (embeddings given): FLAT {index_seconds['FLAT']:.1f} s, "
        f"HNSW {index_seconds['HNSW']:.1f} s"
    )


if __name__ == "__main__":
    main()
