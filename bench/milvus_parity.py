"""Milvus parity (issue 26): ``milvus-vector`` against ``vector`` and ``milvus-hybrid`` against
``hybrid``, on the bundled set and Cranfield, windows on (best window) and off, and how many
vectors ``ragtui index`` encodes after ``ragtui eval``.

python -m bench.milvus_parity            # prints a Markdown table, then one JSON line (bench.run reads it)
python -m bench.milvus_parity --no-cranfield

Each set is indexed into Milvus Lite as ``ragtui index`` does (the vectors from ragtui's embedding
cache) and opened as ``ragtui eval --milvus`` opens it; the metrics are ragtui's over the same
grades. ``hybrid`` uses ``--bm25-backend bm25s``: Milvus's BM25 is Lucene's, as bm25s's, not
rank-bm25's (docs/retriever-milvus.md), so that is the like-for-like fusion. "same lists" counts
the questions whose whole top-``depth`` list (ids, in order) is the counterpart's.

The reuse figure runs the real commands in child processes with an empty cache folder:
``ragtui eval`` (it encodes every window and question), then ``ragtui index``, whose printed count
of vectors encoded is read, and whether sentence-transformers was imported in it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import CRANFIELD, ROOT
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.retrieval.milvus import MilvusTarget, index_collection
from ragtui.core.retrieval.windows import chunk_windows
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace

PAIRS = (("bm25", "milvus-bm25"), ("vector", "milvus-vector"), ("hybrid", "milvus-hybrid"))


def parity(name: str, settings: Settings, uri: str, windows: str) -> dict[str, Any]:
    """Index one set with ``windows`` and compare each Milvus retriever with its counterpart."""
    settings = replace(settings, windows=windows, bm25_backend="bm25s")
    collection = f"{name}_{windows}"
    loaded = Workspace.load(replace(settings, retrievers=("vector",)))
    cut = chunk_windows(
        loaded.data.chunks, token_counter(settings.model), loaded.ranked.window_plan
    )
    started = time.perf_counter()
    result = index_collection(
        MilvusTarget(uri, collection),
        loaded.data.chunks,
        settings.model,
        windows=cut,
        cache_root=settings.cache_dir,
    )
    index_s = time.perf_counter() - started
    ws = Workspace.open(replace(settings, milvus=uri, collection=collection, refresh=True))
    ev = ws.evaluation
    assert ev is not None
    failed = {n: s.message for n, s in ws.live.status.items() if s.state != "ready"}
    if failed:
        raise RuntimeError(f"{name} windows {windows}: {failed}")
    out: dict[str, Any] = {
        "set": name,
        "windows": windows,
        "chunks": len(ws.data.chunks),
        "vectors": result.vectors,
        "encoded": result.encoded,
        "index_s": index_s,
        "questions": len(ev.evaluated),
        "k": settings.k,
        "depth": settings.depth,
        "retrievers": {},
    }
    for ours, theirs in PAIRS:
        same = sum(
            1
            for q in ev.evaluated
            if [c for c, _ in ws.ranking(ours, q)] == [c for c, _ in ws.ranking(theirs, q)]
        )
        per_question_equal = ev.per_question[ours] == ev.per_question[theirs]
        for run in (ours, theirs):
            s = ev.summary(run)
            out["retrievers"][run] = {"recall": s.recall, "mrr": s.mrr, "ndcg": s.ndcg}
        out["retrievers"][theirs] |= {
            "same_lists": same,
            "per_question_equal": per_question_equal,
        }
    return out


def reuse(golden: Path | None) -> dict[str, Any]:
    """``ragtui eval`` then ``ragtui index`` in child processes on an empty cache: what index encodes."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "RAGTUI_CACHE_DIR": str(Path(tmp) / "cache"), "PYTHONPATH": str(ROOT)}
        data = ["--golden", str(golden)] if golden is not None else []
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "ragtui", "eval", *data],
            check=True,
            capture_output=True,
            cwd=ROOT,
            env=env,
        )
        eval_s = time.perf_counter() - started
        code = (
            "import sys\n"
            "from ragtui.cli import main\n"
            "rc = main(sys.argv[1:])\n"
            "print('imported:', 'sentence_transformers' in sys.modules)\n"
            "raise SystemExit(rc)\n"
        )
        uri = str(Path(tmp) / "reuse.db")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code, "index", *data, "--milvus", uri, "--collection", "reuse"],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
        )
        index_s = time.perf_counter() - started
    found = re.search(r"encoded (\d+) of (\d+) (\w+)", done.stdout)
    if found is None:
        raise RuntimeError(f"ragtui index did not say what it encoded:\n{done.stdout}")
    return {
        "encoded": int(found.group(1)),
        "vectors": int(found.group(2)),
        "unit": found.group(3),
        "model_imported": done.stdout.strip().endswith("True"),
        "eval_cold_s": eval_s,
        "index_s": index_s,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| set | windows | retriever | recall@k | MRR | nDCG@k | same top-depth list as counterpart |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for ours, theirs in PAIRS:
            for run in (ours, theirs):
                m = row["retrievers"][run]
                same = (
                    f"{m['same_lists']} of {row['questions']}"
                    + ("" if m["per_question_equal"] else " (per-question metrics differ)")
                    if run == theirs
                    else ""
                )
                lines.append(
                    f"| {row['set']} (k={row['k']}, depth={row['depth']}) | {row['windows']} | {run} | "
                    f"{m['recall']:.3f} | {m['mrr']:.3f} | {m['ndcg']:.3f} | {same} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cranfield", action="store_true")
    parser.add_argument("--no-reuse", action="store_true")
    args = parser.parse_args()
    sets: list[tuple[str, Settings]] = [("bundled", Settings())]
    if not args.no_cranfield and CRANFIELD.is_dir():
        sets.append(("cranfield", Settings(beir=CRANFIELD, chunk_size=None, k=10, depth=100)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        uri = str(Path(tmp) / "parity.db")
        for name, settings in sets:
            for windows in ("max", "off"):
                print(f"milvus parity: {name}, windows {windows} ...", file=sys.stderr)
                rows.append(parity(name, settings, uri, windows))
    result: dict[str, Any] = {"sets": rows}
    if not args.no_reuse:
        print("milvus parity: ragtui eval then ragtui index, empty cache ...", file=sys.stderr)
        result["reuse"] = reuse(None)
    print(table(rows))
    if "reuse" in result:
        r = result["reuse"]
        print(
            f"\nragtui index after ragtui eval (bundled set, empty cache before eval): encoded "
            f"{r['encoded']} of {r['vectors']} {r['unit']}; sentence-transformers imported: "
            f"{r['model_imported']}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()


def add_parity_figures(report: Any, result: dict[str, Any]) -> None:
    """The parity rows of ``bench.run``: each Milvus retriever against its counterpart, per set and
    windows setting, and the index reuse count."""
    for row in result["sets"]:
        where = f"{row['set']}, windows {row['windows']}, {row['questions']} q"
        for ours, theirs in PAIRS[1:]:
            a, b = row["retrievers"][ours], row["retrievers"][theirs]
            equal = b["per_question_equal"] and all(a[m] == b[m] for m in ("recall", "mrr", "ndcg"))
            report.add(
                f"{theirs} = {ours}, {where}",
                f"recall@{row['k']} {b['recall']:.3f}, MRR {b['mrr']:.3f}, nDCG {b['ndcg']:.3f}; "
                f"top lists identical: {b['same_lists']} of {row['questions']} questions",
                "identical metrics; lists equal up to ties",
                f"{ours}: recall@{row['k']} {a['recall']:.3f}, MRR {a['mrr']:.3f}, "
                f"nDCG {a['ndcg']:.3f}",
                equal,
            )
    r = result.get("reuse")
    if r:
        report.add(
            "ragtui index after ragtui eval: vectors encoded",
            f"{r['encoded']} of {r['vectors']} {r['unit']}",
            "0 (all from the embedding cache)",
            f"sentence-transformers imported: {r['model_imported']}",
            r["encoded"] == 0 and not r["model_imported"],
        )
