"""Do ONNX Runtime's vectors (and an int8-quantised export's) rank as torch's do?

For the bundled set and Cranfield, the workspace is opened three times: embedded with torch, with
ONNX Runtime (ragtui's export, ``--embedding-backend onnx``) and with an int8 dynamic quantisation
of that export (``onnxruntime.quantization.quantize_dynamic``, per-channel signed int8 weights:
sentence-transformers' ``avx512_vnni`` configuration; measured here only, ragtui does not offer it).
torch and onnx use ragtui's own cache folder (each backend has its cache), int8 a temporary one.
For each backend against torch: the largest difference between two vectors of the same text, the
lowest cosine, how many questions' vector and hybrid top-``depth`` lists are identical (ids and
order), and each metric's largest difference. Needs onnxruntime (the onnx extra). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import CRANFIELD
from ragtui.core.retrieval.embeddings import EmbeddingCache, Progress
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace


class Int8Encoder:
    """ragtui's ONNX encoder on an int8-quantised copy of the export (a temporary cache holds its
    vectors, so they meet no other backend's)."""

    backend = "onnx"

    def __init__(self, folder: Path, quantised: Path) -> None:
        from ragtui.core.retrieval.onnx_backend import OnnxEncoder

        self.cache_name = "all-MiniLM-L6-v2"
        self.encoder = OnnxEncoder(folder, model_file=quantised)

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        return self.encoder.encode(texts, progress)


def quantise(folder: Path, target: Path) -> Path:
    """``folder``'s model.onnx quantised to int8 weights (dynamic: activations at run time)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        folder / "model.onnx",
        target,
        per_channel=True,
        reduce_range=False,
        weight_type=QuantType.QInt8,
    )
    return target


def _lists(ws: Workspace, name: str) -> dict[str, list[str]]:
    return {q.id: [cid for cid, _ in ws.ranking(name, q.id)] for q in ws.questions}


def _metrics(ws: Workspace) -> dict[str, dict[str, float]]:
    assert ws.evaluation is not None
    return {n: ws.evaluation.summary(n).as_dict() for n in ("vector", "hybrid")}


def _vectors(model: str, root: Path | None, backend: str) -> dict[str, np.ndarray]:
    cache = EmbeddingCache(model, root, backend)
    if cache.vectors is None:
        return {}
    return {h: cache.vectors[i] for h, i in cache.rows.items()}


def compare(settings: Settings, int8: Int8Encoder, int8_root: Path) -> dict[str, Any]:
    """The three workspaces of ``settings`` and how onnx and int8 differ from torch."""
    opened = {
        "torch": Workspace.open(Settings(**{**settings.__dict__, "embedding_backend": "torch"})),
        "onnx": Workspace.open(Settings(**{**settings.__dict__, "embedding_backend": "onnx"})),
    }
    int8_settings = Settings(
        **{**settings.__dict__, "embedding_backend": "onnx", "cache_dir": int8_root}
    )
    ws = Workspace.load(int8_settings)
    ws.prepare_vectors(None, int8)
    opened["int8"] = ws
    base = opened["torch"]
    base_vectors = _vectors(settings.model, settings.cache_dir, "torch")
    out: dict[str, Any] = {"questions": len(base.questions), "metrics_torch": _metrics(base)}
    for backend in ("onnx", "int8"):
        ws = opened[backend]
        root = int8_root if backend == "int8" else settings.cache_dir
        other = _vectors(settings.model, root, "onnx")
        common = sorted(set(base_vectors) & set(other))
        a = np.stack([base_vectors[h] for h in common])
        b = np.stack([other[h] for h in common])
        lists = {}
        for name in ("vector", "hybrid"):
            mine, theirs = _lists(ws, name), _lists(base, name)
            lists[name] = sum(1 for q in theirs if mine.get(q) == theirs[q])
        metrics = _metrics(ws)
        out[backend] = {
            "texts_compared": len(common),
            "max_abs_difference": float(np.abs(a - b).max()),
            "min_cosine": float((a * b).sum(axis=1).min()),
            "identical_top_lists": lists,
            "metrics": metrics,
            "metric_max_difference": max(
                abs(metrics[n][m] - base_metric)
                for n, values in _metrics(base).items()
                for m, base_metric in values.items()
            ),
        }
        print(f"  {backend}: {out[backend]}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-cranfield", action="store_true")
    args = parser.parse_args()
    from ragtui.core.retrieval.onnx_backend import export_folder, load_encoder

    load_encoder(None)  # the export, made once
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-int8-") as tmp:
        quantised = quantise(export_folder(None), Path(tmp) / "model-int8.onnx")
        int8 = Int8Encoder(export_folder(None), quantised)
        sets = {"bundled": Settings()}
        if not args.skip_cranfield and CRANFIELD.is_dir():
            sets["cranfield"] = Settings(beir=CRANFIELD)
        for name, settings in sets.items():
            root = Path(tmp) / name
            root.mkdir()
            print(f"{name} ...", file=sys.stderr, flush=True)
            results[name] = compare(settings, int8, root)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
