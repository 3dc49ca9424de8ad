"""Embeddings: a content-addressed on-disk cache, and a lazily loaded sentence-transformers model.

The cache for one model is a folder holding ``vectors.npy`` (float32, one row per text, loaded with
``allow_pickle=False``) and ``manifest.json`` (orjson: model, backend, dimension, the SHA-1 of every
row's text and the SHA-256 of the ``.npy`` file). A cache whose shapes or hashes do not match is
rebuilt, never trusted. When every text is cached, sentence-transformers (and torch) are never
imported.

A model is embedded with torch (sentence-transformers) or with ONNX Runtime (``onnx_backend``:
onnx where onnxruntime is installed, by default). Their vectors differ in the last digits, so each
backend has a cache of its own (``<model>-<hash>`` for torch, ``<model>-<hash>-onnx``): the two
never mix in one cache, and a vector ranking is cached under the backend too.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import orjson

from ragtui.core.data.binary_cache import npy_header
from ragtui.core.data.paths import cache_dir
from ragtui.core.data.tokenizer import model_fingerprint, resolve_model
from ragtui.core.errors import InputError
from ragtui.core.files import content_hash, folder_lock, read_regular, write_atomic
from ragtui.core.retrieval.onnx_backend import Backend, model_slug, resolve_backend

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from ragtui.core.retrieval.onnx_backend import OnnxEncoder

__all__ = [
    "ENCODE_BATCH",
    "Backend",
    "Embedder",
    "EmbeddingCache",
    "Progress",
    "TextEncoder",
    "model_slug",
    "resolve_backend",
    "text_key",
]

#: Called as ``progress(done, total)`` while texts are encoded.
Progress = Callable[[int, int], None]

ENCODE_BATCH = 32

_SHA1 = re.compile(r"[0-9a-f]{40}")


def text_key(text: str) -> str:
    """The cache key of a text: its SHA-1."""
    return content_hash(text)


def _read_matrix(raw: bytes, shape: tuple[int, int]) -> np.ndarray:
    """The float32 matrix of a ``.npy`` file's bytes, its header checked against ``shape`` before any memory is taken.

    Read with ``np.frombuffer`` from the checked offset: a forged header (a shape of 1e11 rows, an
    object array that would be a pickle, another dtype) is refused, never allocated or unpickled.
    """
    header_shape, fortran, dtype, offset = npy_header(raw)
    if dtype != np.dtype("<f4") or fortran or len(header_shape) != 2:
        raise ValueError("vectors.npy is not a float32 matrix")
    if header_shape != shape:
        raise ValueError(f"shape {header_shape} does not match the manifest {shape}")
    expected = shape[0] * shape[1] * 4
    if len(raw) - offset != expected:
        raise ValueError(
            f"vectors.npy holds {len(raw) - offset} bytes of data, its header says {expected}"
        )
    return np.frombuffer(raw, dtype="<f4", offset=offset).reshape(shape)


def quiet_offline_hub() -> None:
    """Before loading a model: never download, and no progress bars or chatter from the libraries."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # The library's own progress bars would scribble over the CLI's and the app's.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TQDM_DISABLE", "1")
    # The variables are read when the libraries are imported: one imported earlier in this process
    # (a test session, a reranker loaded first) is told through its own switches as well.
    silence_loaded_libraries()


def silence_loaded_libraries() -> None:
    """Turn off the progress bars of transformers and huggingface_hub where they are imported (the
    "Loading weights" bar would write carriage returns into the CLI's output and the app's screen)."""
    for module, switch in (
        ("transformers.utils.logging", "disable_progress_bar"),
        ("huggingface_hub.utils", "disable_progress_bars"),
    ):
        if module.split(".")[0] not in sys.modules:
            continue
        try:
            getattr(importlib.import_module(module), switch)()
        except (
            ImportError,
            AttributeError,
        ):  # another release without the switch: its env var holds
            continue


class TextEncoder(Protocol):
    """What embedding asks of a model (``Embedder`` is one; the app wraps one to see encoding
    start, tests give small fakes): the name its vectors are cached under, and ``encode``."""

    @property
    def cache_name(self) -> str:
        """The name the model's embeddings are cached under."""
        ...

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts``, one row each, in the order given."""
        ...


class Embedder:
    """A sentence-transformers model, imported and loaded on first use only: run by torch, or by
    ONNX Runtime from its export (``backend``: ``auto``, the default, ``torch`` or ``onnx``;
    ``cache_root``: where the export lives, ragtui's cache folder by default)."""

    def __init__(
        self,
        model: str | None = None,
        backend: str | None = None,
        cache_root: Path | None = None,
    ) -> None:
        self.name = model or "all-MiniLM-L6-v2"
        #: The name its embeddings are cached under (the model files' fingerprint is added).
        self.cache_name = self.name
        self.path = resolve_model(model)
        chosen = resolve_backend(backend, self.name, cache_root)
        #: ``torch`` or ``onnx``: what encodes, and which embedding cache its vectors go to.
        self.backend = chosen.name
        #: Why the backend is not the one asked for (onnxruntime not installed...), or None.
        self.note = chosen.note
        self.cache_root = cache_root
        self._model: SentenceTransformer | None = None
        self._onnx: OnnxEncoder | None = None
        #: Two threads needing the model at once (an ad-hoc query, a new question) load it once.
        self._loading = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (the first ``encode`` or ``load`` imports and reads it)."""
        return self._model is not None or self._onnx is not None

    def load(self) -> None:
        """Read the model now (seconds; the first time on ONNX Runtime exports it, which loads
        torch in a process of its own; a no-op once loaded)."""
        if self.backend == "onnx":
            self._load_onnx()
        else:
            self._load()

    def _load_onnx(self) -> OnnxEncoder:
        if self._onnx is not None:
            return self._onnx
        with self._loading:
            if self._onnx is None:
                quiet_offline_hub()
                from ragtui.core.retrieval.onnx_backend import load_encoder

                self._onnx = load_encoder(self.name, self.cache_root)
            return self._onnx

    def _load(self) -> SentenceTransformer:
        if self._model is not None:
            return self._model
        with self._loading:
            if self._model is None:
                quiet_offline_hub()
                try:
                    from sentence_transformers import SentenceTransformer

                    silence_loaded_libraries()
                    self._model = SentenceTransformer(self.path, device="cpu")
                except Exception as exc:  # any failure to find or read the model is bad input
                    raise InputError(self.name, f"cannot load embedding model: {exc}") from None
            return self._model

    @property
    def max_seq_length(self) -> int:
        """The longest input, in tokens, that the model reads (the rest is cut off)."""
        if self.backend == "onnx":
            return self._load_onnx().max_seq_length
        length = self._load().max_seq_length
        if length is None:
            raise InputError(self.name, "the embedding model does not say how many tokens it reads")
        return int(length)

    def encode(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Unit-length float32 embeddings of ``texts``, one row each, in the order given.

        The whole list goes to the library in one call, which sorts it by length and encodes it in
        batches of ``ENCODE_BATCH`` (so little padding is computed); ``progress`` hears ``(0, total)``
        once the model is loaded, just before the first batch (so a rate timed from its first call
        covers the whole encoding, the first and longest batch included), then after every batch,
        from a forward hook on the model that counts the batch's rows (only this thread's: another
        thread may be encoding a question at the same time). On ONNX Runtime, ragtui batches
        the texts itself (``onnx_backend``) and reports after every batch the same way."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        if self.backend == "onnx":
            return self._load_onnx().encode(texts, progress)
        model = self._load()
        total = len(texts)
        done = 0
        caller = threading.get_ident()

        def batch_done(_module: object, args: tuple[object, ...], _output: object) -> None:
            nonlocal done
            # The batch's features: a mapping (the tokenizer's BatchEncoding, or a dict).
            if threading.get_ident() != caller or not args or not isinstance(args[0], Mapping):
                return
            ids = args[0].get("input_ids")
            shape = getattr(ids, "shape", None)
            if progress is not None and shape:
                done = min(total, done + int(shape[0]))
                progress(done, total)

        handle = None
        if progress is not None:
            progress(0, total)
            handle = model.register_forward_hook(batch_done)
        try:
            rows = model.encode(
                list(texts),
                batch_size=ENCODE_BATCH,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        finally:
            if handle is not None:
                handle.remove()
        if progress is not None and done < total:
            progress(total, total)
        return np.ascontiguousarray(rows, dtype=np.float32)


class EmbeddingCache:
    """The embeddings of one model on disk, looked up by text hash.

    Safe to share between threads and processes: a writer holds an exclusive lock on the folder's
    ``.lock`` file while it re-reads the cache, merges its new rows in and replaces both files; a
    reader holds a shared lock while it reads both, so it never sees the array of one write with the
    manifest of another. The hashes catch corruption (a torn or edited file), not a forger: whoever
    can write the cache folder can also write a matching hash.
    """

    def __init__(
        self, model: str | None = None, root: Path | None = None, backend: str | None = None
    ) -> None:
        self.model = model or "all-MiniLM-L6-v2"
        #: ``torch`` or ``onnx``: whose vectors this cache holds (``backend`` resolved as
        #: ``Embedder`` resolves it, so an embedder and a cache made alike agree).
        self.backend = resolve_backend(backend, self.model, root).name
        slug = model_slug(self.model, model_fingerprint(self.model))
        if self.backend != "torch":
            slug += f"-{self.backend}"
        self.folder = (root or cache_dir()) / "embeddings" / slug
        self._root = root
        self.vectors: np.ndarray | None = None
        self.rows: dict[str, int] = {}
        #: Why a cache on disk was not used (tampered, truncated), for the user to see.
        self.warnings: list[str] = []
        # Threads of one process share this object (the app's ad-hoc searches): ``vectors`` and
        # ``rows`` change together under this lock.
        self._mutex = threading.Lock()
        # The manifest as last read (inode, size, mtime): unchanged means the disk holds what we hold.
        self._seen: tuple[int, int, int] | None = None
        with self._mutex, self._disk_lock(shared=True):
            self._load()

    @property
    def _npy(self) -> Path:
        return self.folder / "vectors.npy"

    @property
    def _manifest(self) -> Path:
        return self.folder / "manifest.json"

    def _disk_lock(self, shared: bool) -> contextlib.AbstractContextManager[None]:
        """The folder's lock (shared to read, exclusive to write)."""
        return folder_lock(self.folder, shared)

    def _manifest_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self._manifest)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _load(self) -> None:
        """Read the cache from disk (under the folder's lock), or note why it cannot be trusted."""
        self._seen = self._manifest_stamp()
        if not self._manifest.exists() or not self._npy.exists():
            return
        try:
            manifest = orjson.loads(read_regular(self._manifest))
            if not isinstance(manifest, dict):
                raise TypeError("manifest.json is not a JSON object")
            # Hash and parse the same bytes: the file cannot change between the check and the load.
            raw = read_regular(self._npy)
            if hashlib.sha256(raw).hexdigest() != manifest["npy_sha256"]:
                raise ValueError("vectors.npy does not match its recorded hash")
            if manifest.get("model") != self.model:
                raise ValueError("manifest names another model")
            if manifest.get("backend", "torch") != self.backend:
                raise ValueError("manifest names another backend")
            hashes = manifest["hashes"]
            if not isinstance(hashes, list) or not all(
                isinstance(h, str) and _SHA1.fullmatch(h) for h in hashes
            ):
                raise ValueError("manifest 'hashes' is not a list of SHA-1 digests")
            if len(set(hashes)) != len(hashes):
                raise ValueError("manifest 'hashes' has duplicates")
            dim = manifest["dim"]
            if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
                raise ValueError("manifest 'dim' is not a positive whole number")
            vectors = _read_matrix(raw, (len(hashes), dim))
            if not np.isfinite(vectors).all():
                raise ValueError("vectors.npy holds NaN or infinite values")
        except (ValueError, KeyError, TypeError, OSError, EOFError, InputError) as exc:
            # orjson.JSONDecodeError is a ValueError; a FIFO or a device is a NotRegularFileError.
            reason = exc.message if isinstance(exc, InputError) else " ".join(str(exc).split())
            self.warnings.append(f"{self.folder}: embedding cache ignored and rebuilt ({reason})")
            return
        self.vectors = vectors
        self.rows = {h: i for i, h in enumerate(hashes)}

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The distinct texts that have no cached embedding, in first-seen order."""
        seen: set[str] = set()
        out = []
        for text in texts:
            key = text_key(text)
            if key not in self.rows and key not in seen:
                seen.add(key)
                out.append(text)
        return out

    def get(self, texts: Sequence[str]) -> np.ndarray:
        """Cached embeddings of ``texts`` (all must be cached), one row each."""
        with self._mutex:
            assert self.vectors is not None
            index = [self.rows[text_key(t)] for t in texts]
            return self.vectors[index]

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Add new rows and write the cache: under the folder's lock, merged with what other writers added.

        The array goes first and the manifest (with the array's hash) second, each written to a
        temporary file of its own and renamed; readers hold the shared lock, so they see both old
        files or both new ones. A crash between the two renames leaves a manifest whose hash does not
        match, and the cache is rebuilt instead of trusted.

        A cache that cannot be written (a read-only or full disk, a file where its folder should be)
        costs an embedding next time, nothing else: the rows are kept in memory for this run and a
        warning says the cache was not written, as the other caches do.
        """
        if not texts:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._mutex:
            held = (self.vectors, self.rows, self._seen)
            try:
                self._write(texts, vectors)
            except OSError as exc:
                # What this object held before the write began, plus the new rows.
                self.vectors, self.rows, self._seen = held[0], dict(held[1]), held[2]
                self._keep(texts, vectors)
                warning = f"{self.folder}: embedding cache not written ({exc.strerror or exc})"
                if warning not in self.warnings:
                    self.warnings.append(warning)

    def _keep(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Add new rows in memory only (the cache could not be written)."""
        base = self.vectors
        if base is not None and base.shape[1] != vectors.shape[1]:
            base, self.rows = None, {}
        fresh: list[int] = []
        for i, text in enumerate(texts):
            key = text_key(text)
            if key not in self.rows:
                self.rows[key] = (len(base) if base is not None else 0) + len(fresh)
                fresh.append(i)
        if fresh:
            rows = vectors[fresh]
            self.vectors = rows if base is None else np.vstack([base, rows])

    def _write(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Merge new rows with what the disk holds and write both files, under the folder's lock."""
        with self._disk_lock(shared=False):
            ours = (self.vectors, dict(self.rows))
            if self._manifest_stamp() != self._seen:
                # Another process (or another cache object) wrote since we read: start from its rows.
                self.vectors, self.rows = None, {}
                self._load()
            base, known = self.vectors, dict(self.rows)
            if base is not None and base.shape[1] != vectors.shape[1]:
                base, known = None, {}  # another dimension on disk: it cannot be merged
            parts: list[np.ndarray] = [base] if base is not None and known else []
            hashes = list(known) if parts else []
            kept = set(hashes)
            old_vectors, old_rows = ours
            if old_vectors is not None and old_vectors.shape[1] == vectors.shape[1]:
                # Rows this object holds that the disk lost (a writer that rebuilt it) are kept.
                lost = [h for h in old_rows if h not in kept]
                if lost:
                    parts.append(old_vectors[[old_rows[h] for h in lost]])
                    hashes.extend(lost)
                    kept.update(lost)
            fresh = []
            for i, text in enumerate(texts):
                key = text_key(text)
                if key not in kept:
                    kept.add(key)
                    fresh.append(i)
            if fresh:
                parts.append(vectors[fresh])
                hashes.extend(text_key(texts[i]) for i in fresh)
            merged = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
            buffer = io.BytesIO()
            np.save(buffer, merged, allow_pickle=False)
            raw = buffer.getvalue()
            manifest = {
                "model": self.model,
                "backend": self.backend,
                "dim": int(merged.shape[1]),
                "hashes": hashes,
                "npy_sha256": hashlib.sha256(raw).hexdigest(),
            }
            write_atomic(self._npy, raw)
            write_atomic(self._manifest, orjson.dumps(manifest))
            self._seen = self._manifest_stamp()
            self.vectors = merged
            self.rows = {h: i for i, h in enumerate(hashes)}

    def embed(
        self,
        texts: Sequence[str],
        embedder: TextEncoder | None = None,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """Embeddings of ``texts``, encoding (and caching) only the ones not cached yet."""
        todo = self.missing(texts)
        if todo:
            embedder = embedder or Embedder(self.model, self.backend, self._root)
            self.add(todo, embedder.encode(todo, progress))
        if not texts:
            return np.zeros(
                (0, self.vectors.shape[1] if self.vectors is not None else 0), np.float32
            )
        return self.get(texts)
