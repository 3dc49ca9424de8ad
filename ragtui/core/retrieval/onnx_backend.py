"""Embedding with ONNX Runtime instead of torch (``--embedding-backend``; docs/performance.md).

The model's transformer is exported to ONNX once, by ``python -m ragtui.core.retrieval.onnx_export``
(torch and sentence-transformers, in a process of its own, reading the model's own folder: nothing
is downloaded), into ragtui's cache folder: ``<cache>/onnx/<model>-<fingerprint>/`` holds
``model.onnx``, ``tokenizer.json`` (the model's tokenizer as sentence-transformers runs it) and
``encoder.json`` (what sentence-transformers does around the transformer: the token limit, the
pooling, lower-casing; and the SHA-256 of both files), written last. The export is compared with
sentence-transformers on probe texts before it is kept; one whose files do not match their hashes
is exported again, never trusted. An export that failed leaves ``failed.json`` with the reason,
and the model is then embedded with torch (delete the folder to try again).

Encoding needs onnxruntime, tokenizers and numpy only: the texts are tokenized, sorted by length,
batched by a token budget (a few long texts or many short ones a batch), run through the
transformer, then pooled and normalised as sentence-transformers does.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ragtui.core.data.paths import cache_dir
from ragtui.core.data.tokenizer import _model_file, model_fingerprint, resolve_model
from ragtui.core.errors import InputError
from ragtui.core.files import content_hash, folder_lock, read_regular, write_atomic
from ragtui.core.text import visible_line

#: ``--embedding-backend``: onnx where onnxruntime is installed and the model can run on it (auto),
#: or one of them.
BACKENDS = ("auto", "torch", "onnx")
#: The ``encoder.json`` format this code reads and the export writes.
EXPORT_FORMAT = 1
#: Tokens (padding included) in one batch: 8 texts at 256 tokens, 64 short ones. Smaller batches
#: of long texts were faster on a 2-core CPU (their attention fits the cache), larger ones no faster.
TOKEN_BUDGET = 2048
MAX_BATCH = 64
#: The largest difference from sentence-transformers' own vectors an export may show on the probe
#: texts (an export of all-MiniLM-L6-v2 shows about 2e-7).
EXPORT_TOLERANCE = 1e-4
#: Seconds an export may take (loading torch and the model, exporting, checking).
EXPORT_TIMEOUT = 900.0
#: The pooling modes this encoder computes.
POOLING = ("mean", "cls", "max")

#: Called as ``progress(done, total)`` while texts are encoded.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Backend:
    """The backend a model is embedded with, and why it is not the one asked for (None: it is)."""

    name: str
    note: str | None = None


def onnxruntime_installed() -> bool:
    """Whether onnxruntime can be imported (the onnx extra), without importing it."""
    return importlib.util.find_spec("onnxruntime") is not None


def _read_object(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        obj = json.loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError, InputError):
        return None
    return obj if isinstance(obj, dict) else None


def pooling_mode(config: dict[str, Any]) -> str | None:
    """The pooling a sentence-transformers ``Pooling`` config names (either format), or None."""
    mode = config.get("pooling_mode")
    if isinstance(mode, str):
        return mode
    flags = {
        "cls": "pooling_mode_cls_token",
        "mean": "pooling_mode_mean_tokens",
        "max": "pooling_mode_max_tokens",
        "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
        "weightedmean": "pooling_mode_weightedmean_tokens",
        "lasttoken": "pooling_mode_lasttoken",
    }
    chosen = [name for name, key in flags.items() if config.get(key) is True]
    return "+".join(chosen) if chosen else None


def onnx_unsupported(model: str | None) -> str | None:
    """Why ``model`` cannot be embedded with ONNX Runtime, read from its files, or None: it must be
    a sentence-transformers model made of a transformer, a pooling of its tokens (mean, cls or
    max) and at most a normalisation, with a fast tokenizer (``tokenizer.json``)."""
    name = model or "the model"
    try:
        modules_file = _model_file(resolve_model(model), "modules.json")
    except ValueError:  # neither a folder nor a Hugging Face model name
        modules_file = None
    if modules_file is None:
        return f"{name} has no modules.json (not a sentence-transformers model folder)"
    try:
        modules = json.loads(read_regular(modules_file).decode("utf-8"))
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        paths = [str(m.get("path", "")) for m in modules]
    except (OSError, ValueError, InputError, KeyError, TypeError, AttributeError):
        return f"{modules_file}: not a list of modules"
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return f"{name} is made of {', '.join(kinds) or 'nothing'} (ONNX: Transformer, Pooling, Normalize)"
    folder = modules_file.parent
    if not (folder / paths[0] / "tokenizer.json").is_file():
        return f"{name} has no tokenizer.json"
    pooling = _read_object(folder / paths[1] / "config.json")
    mode = pooling_mode(pooling) if pooling is not None else None
    if mode not in POOLING:
        return f"{name} pools its tokens by {mode or 'an unknown mode'} (ONNX: mean, cls or max)"
    return None


def model_slug(model: str, fingerprint: str = "") -> str:
    """A folder name for a model name or path, readable and collision-safe; the model files'
    fingerprint makes a model saved again under the same name a cache of its own."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model).name or model)[:60]
    key = content_hash(model, fingerprint) if fingerprint else content_hash(model)
    return f"{readable}-{key[:10]}"


def export_folder(model: str | None, root: Path | None = None) -> Path:
    """Where ``model``'s ONNX export lives: a folder of ragtui's cache, named by the model and its
    files' fingerprint (as its embedding cache is)."""
    name = model or "all-MiniLM-L6-v2"
    return (root or cache_dir()) / "onnx" / model_slug(name, model_fingerprint(name))


def failed_export(model: str | None, root: Path | None = None) -> str | None:
    """Why an earlier export of ``model`` failed (its ``failed.json``), or None."""
    found = _read_object(export_folder(model, root) / "failed.json")
    if found is None:
        return None
    return str(found.get("reason") or "the export failed")


def resolve_backend(requested: str | None, model: str | None, root: Path | None = None) -> Backend:
    """The backend ``model`` is embedded with when ``requested`` (None: ``auto``) is asked for.

    ``auto`` is onnx where onnxruntime is installed and the model can run on it, else torch
    (without a word: the lean install has no onnxruntime). ``onnx`` asked for and not possible is
    torch with a note saying why; an export that failed before is torch with its reason.
    """
    requested = requested or "auto"
    if requested not in BACKENDS:
        raise InputError(
            None, f"--embedding-backend: {requested!r} is not one of {', '.join(BACKENDS)}"
        )
    if requested == "torch":
        return Backend("torch")
    if not onnxruntime_installed():
        why = 'onnxruntime is not installed (pip install "ragtui[onnx]")'
        return Backend("torch", f"embedding with torch: {why}" if requested == "onnx" else None)
    unsupported = onnx_unsupported(model)
    if unsupported is not None:
        return Backend(
            "torch", f"embedding with torch: {unsupported}" if requested == "onnx" else None
        )
    failed = failed_export(model, root)
    if failed is not None:
        folder = export_folder(model, root)
        return Backend(
            "torch",
            f"embedding with torch: exporting {model or 'the model'} to ONNX failed ({failed}; "
            f"delete {folder} to try again)",
        )
    return Backend("onnx")


# ---- the encoder ------------------------------------------------------------------------------


class ExportInvalid(Exception):
    """An export folder that is missing, incomplete or does not match its hashes."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class OnnxEncoder:
    """An exported model, read from its folder (``ExportInvalid`` when it is not a whole export)."""

    def __init__(self, folder: Path, model_file: Path | None = None) -> None:
        config = _read_object(folder / "encoder.json")
        if config is None or config.get("format") != EXPORT_FORMAT:
            raise ExportInvalid(f"{folder}: no encoder.json of format {EXPORT_FORMAT}")
        try:
            model_bytes = read_regular(model_file or folder / "model.onnx")
            tokenizer_text = read_regular(folder / "tokenizer.json")
        except (OSError, InputError) as exc:
            raise ExportInvalid(f"{folder}: {exc}") from None
        if model_file is None and _sha256(model_bytes) != config.get("model_sha256"):
            raise ExportInvalid(f"{folder}: model.onnx does not match its recorded hash")
        if _sha256(tokenizer_text) != config.get("tokenizer_sha256"):
            raise ExportInvalid(f"{folder}: tokenizer.json does not match its recorded hash")
        try:
            self.max_seq_length = int(config["max_seq_length"])
            self.dim = int(config["dim"])
            self.pooling = str(config["pooling"])
            self.lower = bool(config["do_lower_case"])
            self.inputs = [str(n) for n in config["inputs"]]
            pad_id, pad_type = int(config["pad_id"]), int(config["pad_type_id"])
            pad_token = str(config["pad_token"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ExportInvalid(f"{folder}: encoder.json lacks {exc}") from None
        if self.pooling not in POOLING or self.max_seq_length < 1 or self.dim < 1:
            raise ExportInvalid(f"{folder}: encoder.json holds values this version cannot use")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: ONNX Runtime writes to the terminal itself
        self._session = ort.InferenceSession(
            model_bytes, options, providers=["CPUExecutionProvider"]
        )
        self._output = self._session.get_outputs()[0].name
        self._tokenizer = Tokenizer.from_str(tokenizer_text.decode("utf-8"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        self._pad = (pad_id, pad_type, pad_token)

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts``, one row each, in the order given;
        ``progress`` hears ``(0, total)`` first, then the count done after every batch."""
        total = len(texts)
        out = np.zeros((total, self.dim), dtype=np.float32)
        if not total:
            return out
        prepared = [t.lower() for t in texts] if self.lower else list(texts)
        encodings = self._tokenizer.encode_batch(prepared)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=total)
        order = np.argsort(-lengths, kind="stable")
        if progress is not None:
            progress(0, total)
        start = 0
        while start < total:
            longest = max(1, int(lengths[order[start]]))
            rows = order[start : start + max(1, min(MAX_BATCH, TOKEN_BUDGET // longest))]
            out[rows] = self._batch([encodings[i] for i in rows], longest)
            start += len(rows)
            if progress is not None:
                progress(start, total)
        return out

    def _batch(self, encodings: list[Any], width: int) -> np.ndarray:
        pad_id, pad_type, _ = self._pad
        count = len(encodings)
        ids = np.full((count, width), pad_id, dtype=np.int64)
        types = np.full((count, width), pad_type, dtype=np.int64)
        mask = np.zeros((count, width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            types[row, :n] = encoding.type_ids
            mask[row, :n] = encoding.attention_mask
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run([self._output], {n: given[n] for n in self.inputs})[0]
        hidden = np.asarray(hidden, dtype=np.float32)
        weights = mask.astype(np.float32)
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        elif self.pooling == "max":
            pooled = np.where(weights[..., None] > 0, hidden, np.float32(-1e9)).max(axis=1)
        else:
            summed = np.einsum("btd,bt->bd", hidden, weights)
            pooled = summed / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)


# ---- the export ---------------------------------------------------------------------------------

#: One export at a time in this process (two threads asking at once export once).
_EXPORTING = threading.Lock()


def load_encoder(model: str | None, root: Path | None = None) -> OnnxEncoder:
    """``model``'s ONNX encoder, exported first if its export is not there (or not whole).

    Under the export folder's lock, so two processes export once. A failed export is recorded
    (``failed.json``; later runs embed with torch) and raised as an InputError naming the reason.
    """
    folder = export_folder(model, root)
    name = model or "all-MiniLM-L6-v2"
    with _EXPORTING, folder_lock(folder, shared=False):
        with contextlib.suppress(ExportInvalid):
            return OnnxEncoder(folder)
        reason = _export(resolve_model(model), folder)
        if reason is None:
            try:
                return OnnxEncoder(folder)
            except ExportInvalid as exc:
                reason = str(exc)
        with contextlib.suppress(OSError):
            write_atomic(folder / "failed.json", orjson.dumps({"model": name, "reason": reason}))
        raise InputError(
            name,
            f"cannot export the embedding model to ONNX ({reason}); later runs embed with torch "
            f"(delete {folder} to try again)",
        )


def _export(model_path: str, folder: Path) -> str | None:
    """Export into ``folder`` through the export process; None on success, else why not."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_VERBOSITY": "error",
        "TQDM_DISABLE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }
    with tempfile.TemporaryDirectory(prefix="export-", dir=folder) as tmp:
        command = [sys.executable, "-m", "ragtui.core.retrieval.onnx_export", model_path, tmp]
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=env,
                timeout=EXPORT_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"the export took over {EXPORT_TIMEOUT:.0f} s"
        except OSError as exc:
            return f"cannot start the export: {exc.strerror or exc}"
        said = _last_json(done.stdout)
        if done.returncode != 0 or "error" in said or "ok" not in said:
            why = said.get("error") or _tail(done.stderr) or f"exit status {done.returncode}"
            return visible_line(str(why))[:300]
        # encoder.json last: its presence (with the hashes) makes the folder a whole export.
        for name in ("model.onnx", "tokenizer.json", "encoder.json"):
            os.replace(Path(tmp) / name, folder / name)
        with contextlib.suppress(FileNotFoundError):
            (folder / "failed.json").unlink()
    return None


def _last_json(stdout: bytes) -> dict[str, Any]:
    for line in reversed(stdout.decode("utf-8", "replace").splitlines()):
        with contextlib.suppress(ValueError):
            found = json.loads(line)
            if isinstance(found, dict):
                return found
    return {}


def _tail(stderr: bytes) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""
