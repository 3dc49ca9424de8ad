"""A cache folder for the 100,000-question golden set of the app figures (``bench.app``,
``bench.startup``, ``bench.keys``): the bundled corpus's embeddings copied from ragtui's cache, and
each synthetic question's vector made from its bundled question's vector plus a little noise.

Encoding 100,000 question texts takes hours on 2 cores, and the app's timings do not depend on the
values. The vectors are unit length, as the model's are; each question's nearest chunks stay close
to its bundled question's.

``python -m bench.large_cache DIR [--questions 100000]``, then ``RAGTUI_BENCH_LARGE_CACHE=DIR``.
The bundled set must have been embedded in ragtui's cache before (``ragtui eval`` once).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
import orjson

from bench.label_edit import synthetic_golden
from ragtui.core.data.paths import bundled_golden, cache_dir
from ragtui.core.retrieval.embeddings import EmbeddingCache
from ragtui.core.settings import Settings

#: The noise added to each bundled question's vector (before it is made unit length again).
NOISE = 0.05


def build(root: Path, questions: int) -> int:
    """Fill ``root`` for ``questions`` synthetic questions; how many vectors were added."""
    source = cache_dir() / "embeddings"
    if not source.is_dir():
        raise SystemExit(f"{source}: no embeddings yet (run ragtui eval on the bundled set once)")
    if not (root / "embeddings").exists():
        shutil.copytree(source, root / "embeddings")
    settings = Settings()
    cache = EmbeddingCache(settings.model, root, settings.embedding_backend)
    bundled = [
        orjson.loads(line)["question"]
        for line in (bundled_golden() / "questions.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    if cache.missing(bundled):
        raise SystemExit("the bundled questions are not in ragtui's cache: run ragtui eval once")
    base = cache.get(bundled)
    with tempfile.TemporaryDirectory() as tmp:
        golden = synthetic_golden(Path(tmp) / "golden", questions)
        texts = [
            orjson.loads(line)["question"]
            for line in (golden / "questions.jsonl").read_bytes().splitlines()
            if line.strip()
        ]
    missing = cache.missing(texts)
    if not missing:
        return 0
    row = {text: i for i, text in enumerate(texts)}
    rng = np.random.default_rng(0)
    vectors = base[[row[t] % len(bundled) for t in missing]]
    vectors = vectors + rng.normal(0, NOISE, vectors.shape).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cache.add(missing, vectors)
    return len(missing)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--questions", type=int, default=100_000)
    args = parser.parse_args()
    added = build(args.root, args.questions)
    print(f"{args.root}: {added} question vectors added")


if __name__ == "__main__":
    main()
