"""Cold embedding speed: ragtui's path, on each backend, against one plain ``SentenceTransformer.encode`` call.

The same texts (Cranfield documents as ragtui chunks them: whole, at most 512 tokens, so their
lengths vary as a real corpus's do), the models loaded once, the same process. ragtui's path is the
one a cold start takes: ``EmbeddingCache.embed`` on an empty cache folder (hash the texts, find them
missing, encode them with progress after each batch, write the cache), with the model run

- by torch (``--embedding-backend torch``: one library call, the library's length sort and batches);
- by ONNX Runtime (``onnx``, the default where the onnx extra is installed: ragtui's export of the
  model, texts sorted by token count and batched by a token budget);
- by ONNX Runtime on an int8 dynamic quantisation of that export (``int8``: measured here only; its
  rankings differ from torch's, see ``bench.embedding_quality``).

The baseline is one ``model.encode(texts, batch_size=32, normalize_embeddings=True)`` call on the
torch model (the library's defaults). The kinds alternate (each round runs all of them, every
other round in reverse order) so that a machine that warms up or slows down during the run
favours none; the medians are compared. Prints JSON: texts per second and the ratio to the plain
call of each kind.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import CRANFIELD
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache, TextEncoder
from ragtui.core.retrieval.onnx_backend import onnxruntime_installed

#: The plain call's batch size: sentence-transformers' default.
PLAIN_BATCH = 32


def cranfield_texts(count: int) -> list[str]:
    """``count`` Cranfield chunk texts spread over the whole collection (every n-th chunk)."""
    from ragtui.core.data.beir import load_beir
    from ragtui.core.data.chunking import chunk_documents
    from ragtui.core.data.tokenizer import token_counter

    corpus, _questions, _qrels = load_beir(CRANFIELD)
    chunks = chunk_documents(corpus.documents, token_counter(None), 512)
    step = max(1, len(chunks) // count)
    return [c.text for c in chunks[::step][:count]]


def ragtui_path(texts: list[str], encoder: TextEncoder, backend: str) -> Callable[[], float]:
    """Seconds of ``EmbeddingCache.embed`` on an empty cache folder with ``encoder``."""

    def run() -> float:
        calls: list[int] = []
        with tempfile.TemporaryDirectory() as root:
            cache = EmbeddingCache(encoder.cache_name, root=Path(root), backend=backend)
            start = time.perf_counter()
            cache.embed(texts, encoder, progress=lambda done, total: calls.append(done))
            seconds = time.perf_counter() - start
        assert calls and calls[-1] == len(texts), "progress must reach the end"
        return seconds

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=400, help="how many texts to embed each time")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every kind, alternating")
    parser.add_argument("--no-int8", action="store_true", help="leave the int8 export out")
    args = parser.parse_args()
    texts = cranfield_texts(args.texts)
    torch_embedder = Embedder(backend="torch")
    model = torch_embedder._load()

    def plain() -> float:
        start = time.perf_counter()
        model.encode(
            texts,
            batch_size=PLAIN_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return time.perf_counter() - start

    kinds: dict[str, Callable[[], float]] = {
        "plain": plain,
        "torch": ragtui_path(texts, torch_embedder, "torch"),
    }
    warm: list[TextEncoder] = [torch_embedder]
    tmp = tempfile.TemporaryDirectory(prefix="ragtui-bench-embedding-")
    if onnxruntime_installed():
        onnx_embedder = Embedder(backend="onnx")
        onnx_embedder.load()  # exported once into ragtui's cache folder, if it is not there
        kinds["onnx"] = ragtui_path(texts, onnx_embedder, "onnx")
        warm.append(onnx_embedder)
        if not args.no_int8:
            from bench.embedding_quality import Int8Encoder, quantise
            from ragtui.core.retrieval.onnx_backend import export_folder

            folder = export_folder(None)
            int8 = Int8Encoder(folder, quantise(folder, Path(tmp.name) / "model-int8.onnx"))
            kinds["int8"] = ragtui_path(texts, int8, "onnx")
            warm.append(int8)
    for encoder in warm:
        encoder.encode(texts[:32])  # the first call pays for warm-up
    timings: dict[str, list[float]] = {kind: [] for kind in kinds}
    order = list(kinds)
    for round_ in range(args.rounds):
        for kind in order if round_ % 2 == 0 else order[::-1]:
            timings[kind].append(kinds[kind]())
            print(f"  {kind}: {timings[kind][-1]:.1f} s", file=sys.stderr, flush=True)
    tmp.cleanup()
    medians = {kind: statistics.median(values) for kind, values in timings.items()}
    chars = sorted(len(t) for t in texts)
    out: dict[str, object] = {
        "texts": len(texts),
        "chars_median": chars[len(chars) // 2],
        "chars_max": chars[-1],
        "runs": timings,
        "default": "onnx" if "onnx" in kinds else "torch",
    }
    for kind, seconds in medians.items():
        out[f"{kind}_s"] = seconds
        out[f"{kind}_texts_per_s"] = len(texts) / seconds
        out[f"{kind}_ratio"] = medians["plain"] / seconds
        # Each round's own ratio (the plain call and this kind in the same round): "reliably"
        # ahead is every round ahead.
        out[f"{kind}_round_ratios"] = [
            p / t for p, t in zip(timings["plain"], timings[kind], strict=True)
        ]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
