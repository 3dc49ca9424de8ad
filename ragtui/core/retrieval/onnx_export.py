"""Export a sentence-transformers model's transformer to ONNX: ``python -m
ragtui.core.retrieval.onnx_export MODEL_FOLDER OUT_FOLDER``, run by ``onnx_backend.load_encoder``.

A process of its own, so torch is imported (and its warnings printed) here, never in ragtui's
process. The model is read from its folder (``HF_HUB_OFFLINE``: nothing is downloaded). Writes
``model.onnx`` (torch's TorchScript exporter, opset 17, batch and length dynamic, eager attention),
``tokenizer.json`` (the model's fast tokenizer as sentence-transformers loaded it) and
``encoder.json`` into OUT_FOLDER, then encodes probe texts both ways (ONNX Runtime and
sentence-transformers) and fails when the vectors differ by more than ``EXPORT_TOLERANCE``. The
last line on stdout is JSON: ``{"ok": {...}}`` or ``{"error": "why"}`` (exit status 3).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.core.retrieval.onnx_backend import (
    EXPORT_FORMAT,
    EXPORT_TOLERANCE,
    POOLING,
    OnnxEncoder,
)

#: Texts both encoders embed before an export is kept: short and long (beyond the model's limit,
#: so truncation is checked), cased, accented, with markup, digits and surrounding blanks.
PROBES = (
    "What is the capacity of pumping station PS-07?",
    "  Leading and trailing blanks  ",
    "Crème brûlée, naïve café: ÜBER straße — 東京 ✓",
    "| PS-01 | Jan Adriaanszoon | 310 | 4 | Diesel and electric | Yes |",
    "x",
    " ".join(f"word{i} of a very long text that runs past the model's limit" for i in range(120)),
)
#: The inputs a transformer may take, as the tokenizer names them.
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class ExportError(Exception):
    """Why the model cannot be exported (one line)."""


def _modules(model: Any) -> list[Any]:
    return [module for _, module in model.named_children()]


def _transformer(module: Any) -> Any:
    for attribute in ("auto_model", "model"):
        found = getattr(module, attribute, None)
        if found is not None:
            return found
    raise ExportError("the Transformer module holds no model")


def _pooling_mode(module: Any) -> str:
    if hasattr(module, "get_pooling_mode_str"):
        return str(module.get_pooling_mode_str())
    return str(getattr(module, "pooling_mode", ""))


def _eager(model: Any) -> None:
    """Plain attention (matrix products and a softmax) for the export: ONNX Runtime runs it at
    least as fast as the graph of torch's fused attention, and every release exports it."""
    setter = getattr(model, "set_attn_implementation", None)
    try:
        if setter is not None:
            setter("eager")
        elif getattr(model, "config", None) is not None:
            model.config._attn_implementation = "eager"
    except (ValueError, AttributeError, TypeError):
        pass  # the model's own attention is exported then


def export(model_path: str, out: Path) -> dict[str, Any]:
    """Export ``model_path`` into ``out`` and check it; the figures of the check."""
    start = time.perf_counter()
    import torch
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model_path, device="cpu")
    modules = _modules(st)
    kinds = [type(m).__name__ for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ExportError(f"the model is made of {', '.join(kinds)}")
    hf = _transformer(modules[0])
    mode = _pooling_mode(modules[1])
    if mode not in POOLING:
        raise ExportError(f"pooling {mode!r} (ONNX: mean, cls or max)")
    tokenizer = st.tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ExportError("the model has no fast tokenizer")
    max_length = st.max_seq_length
    if not isinstance(max_length, int) or max_length < 1:
        raise ExportError("the model does not say how many tokens it reads")
    names = [n for n in INPUTS if n in tuple(tokenizer.model_input_names)]
    if "input_ids" not in names or "attention_mask" not in names:
        raise ExportError(f"the tokenizer gives {', '.join(tokenizer.model_input_names)}")
    _eager(hf)
    hf.eval()

    class Wrapped(torch.nn.Module):
        """The transformer taking its inputs by position, giving the token embeddings."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *tensors: Any) -> Any:
            given = dict(zip(names, tensors, strict=True))
            return self.inner(**given, return_dict=True).last_hidden_state

    sample = tokenizer(list(PROBES[:2]), padding=True, return_tensors="pt")
    dynamic = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    options: dict[str, Any] = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False  # the TorchScript exporter: needs onnx only, not onnxscript
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Wrapped(hf),
            tuple(sample[n] for n in names),
            str(out / "model.onnx"),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=17,
            do_constant_folding=True,
            **options,
        )
    tokenizer_text = backend.to_str().encode("utf-8")
    (out / "tokenizer.json").write_bytes(tokenizer_text)
    transformer_module = modules[0]
    config = {
        "format": EXPORT_FORMAT,
        "max_seq_length": max_length,
        "dim": int(st.get_sentence_embedding_dimension() or 0),
        "pooling": mode,
        "do_lower_case": bool(getattr(transformer_module, "do_lower_case", False)),
        "inputs": names,
        "pad_id": int(tokenizer.pad_token_id or 0),
        "pad_type_id": int(getattr(tokenizer, "pad_token_type_id", 0) or 0),
        "pad_token": str(tokenizer.pad_token or ""),
        "model_sha256": hashlib.sha256((out / "model.onnx").read_bytes()).hexdigest(),
        "tokenizer_sha256": hashlib.sha256(tokenizer_text).hexdigest(),
        "torch": torch.__version__,
    }
    (out / "encoder.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    ours = OnnxEncoder(out).encode(list(PROBES))
    theirs = np.asarray(
        st.encode(
            list(PROBES),
            batch_size=len(PROBES),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ),
        dtype=np.float32,
    )
    difference = float(np.abs(ours - theirs).max())
    if not difference <= EXPORT_TOLERANCE:
        raise ExportError(
            f"the ONNX model's vectors differ from sentence-transformers' by {difference:.1e} "
            f"(at most {EXPORT_TOLERANCE:.0e} is kept)"
        )
    return {"max_difference": difference, "seconds": round(time.perf_counter() - start, 2)}


def main(argv: list[str]) -> int:
    """Export ``argv[0]`` (a model folder) into ``argv[1]``; prints one JSON line."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    if len(argv) != 2:
        print(json.dumps({"error": "usage: onnx_export MODEL_FOLDER OUT_FOLDER"}))
        return 2
    try:
        result = export(argv[0], Path(argv[1]))
    except ExportError as exc:
        print(json.dumps({"error": str(exc)}))
        return 3
    except (
        Exception
    ) as exc:  # any failure of the libraries is the export's failure, said in one line
        print(json.dumps({"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"}))
        return 3
    print(json.dumps({"ok": result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
