"""Cold embedding speed: ragtui's path against one plain ``SentenceTransformer.encode`` call.

The same texts (Cranfield documents as ragtui chunks them: whole, at most 512 tokens, so their
lengths vary as a real corpus's do), the same loaded model, the same process. ragtui's path is the
one a cold start takes: ``EmbeddingCache.embed`` on an empty cache folder (hash the texts, find them
missing, encode them longest first in batches with progress after each, write the cache). The
baseline is one ``model.encode(texts, batch_size=32, normalize_embeddings=True)`` call, which sorts
by length itself. The two alternate (plain, ragtui, ragtui, plain, twice by default) so that a
machine that warms up or slows down during the run favours neither; the medians are compared (on a
shared 2-core virtual machine one call's time varies by up to 10 % from run to run). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import CRANFIELD
from ragtui.core.retrieval.embeddings import ENCODE_BATCH, Embedder, EmbeddingCache


def cranfield_texts(count: int) -> list[str]:
    """``count`` Cranfield chunk texts spread over the whole collection (every n-th chunk)."""
    from ragtui.core.data.beir import load_beir
    from ragtui.core.data.chunking import chunk_documents
    from ragtui.core.data.tokenizer import token_counter

    corpus, _questions, _qrels = load_beir(CRANFIELD)
    chunks = chunk_documents(corpus.documents, token_counter(None), 512)
    step = max(1, len(chunks) // count)
    return [c.text for c in chunks[::step][:count]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=400, help="how many texts to embed each time")
    parser.add_argument(
        "--rounds", type=int, default=2, help="plain, ragtui, ragtui, plain: how many times"
    )
    args = parser.parse_args()
    texts = cranfield_texts(args.texts)
    embedder = Embedder()
    model = embedder._load()
    model.encode(texts[:32], batch_size=ENCODE_BATCH)  # the first call pays for warm-up

    def plain() -> float:
        start = time.perf_counter()
        model.encode(
            texts,
            batch_size=ENCODE_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return time.perf_counter() - start

    def ragtui() -> float:
        calls: list[int] = []
        with tempfile.TemporaryDirectory() as root:
            cache = EmbeddingCache(embedder.name, root=Path(root))
            start = time.perf_counter()
            cache.embed(texts, embedder, progress=lambda done, total: calls.append(done))
            seconds = time.perf_counter() - start
        assert calls and calls[-1] == len(texts), "progress must reach the end"
        return seconds

    timings: dict[str, list[float]] = {"plain": [], "ragtui": []}
    for kind in ("plain", "ragtui", "ragtui", "plain") * args.rounds:
        timings[kind].append(plain() if kind == "plain" else ragtui())
        print(f"  {kind}: {timings[kind][-1]:.1f} s", file=sys.stderr, flush=True)
    plain_s = statistics.median(timings["plain"])
    ragtui_s = statistics.median(timings["ragtui"])
    chars = sorted(len(t) for t in texts)
    print(
        json.dumps(
            {
                "texts": len(texts),
                "chars_median": chars[len(chars) // 2],
                "chars_max": chars[-1],
                "plain_s": plain_s,
                "ragtui_s": ragtui_s,
                "plain_texts_per_s": len(texts) / plain_s,
                "ragtui_texts_per_s": len(texts) / ragtui_s,
                "ratio": plain_s / ragtui_s,
            }
        )
    )


if __name__ == "__main__":
    main()
