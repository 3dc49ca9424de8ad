"""A folder of numpy arrays and an orjson manifest: the on-disk form of ragtui's derived-data caches.

The chunk cache, the BM25 index cache and the results cache (rankings and evidence matches) each
keep their data as one such folder under ``cache_dir()``: one ``NAME.npy`` file per array, read
with ``allow_pickle=False`` from its checked header, and ``manifest.json`` naming every array's
dtype, shape and SHA-256 and the metadata that says what the arrays were computed from. A reader
takes the folder's lock shared and checks all of it; anything that does not match (a torn or
edited file, a forged header, an unknown dtype, other metadata) raises :class:`CacheMismatch`,
and the caller computes the data again and writes it, never trusting it. A writer takes the lock
exclusively, writes each array atomically and the manifest last, so a reader sees a whole old set
or a whole new one (a crash between two renames leaves a hash that does not match).

As with the embedding cache, the hashes catch corruption, not a forger: whoever can write the
cache folder can also write matching hashes.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ragtui.core.errors import InputError
from ragtui.core.files import folder_lock, read_regular, write_atomic

__all__ = ["ALLOWED_DTYPES", "ArrayStore", "CacheMismatch", "digest", "npy_header", "read_npy"]

#: The manifest layout this code writes and reads.
STORE_FORMAT = 1

#: The only array types a cache may hold (never an object array: that would be a pickle).
ALLOWED_DTYPES = frozenset({"|b1", "|u1", "<i4", "<i8", "<f4", "<f8", "|S20"})


class CacheMismatch(ValueError):
    """A cache on disk that cannot be used as it is; the message says why."""


def digest(*parts: object) -> str:
    """The SHA-256 of ``parts`` as one orjson document (a cache key; lists, strings and numbers)."""
    return hashlib.sha256(orjson.dumps(list(parts))).hexdigest()


def list_digest(items: Sequence[object]) -> str:
    """The SHA-256 of a list of texts (or of lists of texts), in order."""
    try:
        raw = orjson.dumps(list(items))
    except TypeError:  # orjson refuses a lone surrogate: spell every text as hex for the digest
        raw = orjson.dumps(
            [
                [t.encode("utf-8", "surrogatepass").hex() for t in item]
                if isinstance(item, list | tuple)
                else str(item).encode("utf-8", "surrogatepass").hex()
                for item in items
            ]
        )
    return hashlib.sha256(raw).hexdigest()


def npy_header(raw: bytes) -> tuple[tuple[int, ...], bool, np.dtype[Any], int]:
    """The shape, Fortran order and dtype a ``.npy`` file's header declares, and where its data
    starts; ``CacheMismatch`` for an unknown format version, ValueError or EOFError for no header."""
    from numpy.lib import format as npy

    stream = io.BytesIO(raw)
    version = npy.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = npy.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, fortran, dtype = npy.read_array_header_2_0(stream)
    else:
        raise CacheMismatch(f"unknown .npy format version {version}")
    return tuple(shape), bool(fortran), dtype, stream.tell()


def read_npy(raw: bytes, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """The array in the bytes of a ``.npy`` file, its header checked against ``dtype`` and ``shape``
    before any memory is taken; read-only, sharing ``raw``."""
    try:
        header_shape, fortran, header_dtype, offset = npy_header(raw)
    except (ValueError, EOFError) as exc:
        if isinstance(exc, CacheMismatch):
            raise
        raise CacheMismatch(f"not a .npy file ({' '.join(str(exc).split())})") from None
    if header_dtype.str != dtype or fortran or header_shape != shape:
        raise CacheMismatch(
            f"array header says {header_dtype.str} {header_shape}, the manifest {dtype} {shape}"
        )
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    if len(raw) - offset != expected:
        raise CacheMismatch(f"array holds {len(raw) - offset} bytes, its header says {expected}")
    return np.frombuffer(raw, dtype=dtype, offset=offset).reshape(shape)


class ArrayStore:
    """Named arrays and their metadata in one folder (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def manifest(self) -> Path:
        """The manifest file."""
        return self.folder / "manifest.json"

    def _lock(self, shared: bool) -> contextlib.AbstractContextManager[None]:
        """The folder's lock (shared to read, exclusive to write)."""
        return folder_lock(self.folder, shared)

    def read(
        self, expect: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """The metadata and arrays on disk, or None when there are none yet.

        ``expect``: metadata entries that must be equal to these. Raises ``CacheMismatch`` when the
        folder holds something that cannot be trusted.
        """
        if not self.manifest.exists():
            return None
        with self._lock(shared=True):
            try:
                return self._read(expect or {})
            except CacheMismatch:
                raise
            except (ValueError, KeyError, TypeError, OSError, EOFError, InputError) as exc:
                reason = exc.message if isinstance(exc, InputError) else " ".join(str(exc).split())
                raise CacheMismatch(reason or type(exc).__name__) from None

    def _read(
        self, expect: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        if not self.manifest.exists():
            return None
        manifest = orjson.loads(read_regular(self.manifest))
        if not isinstance(manifest, dict) or manifest.get("format") != STORE_FORMAT:
            raise CacheMismatch("manifest.json is not a cache manifest of this version")
        meta, specs = manifest.get("meta"), manifest.get("arrays")
        if not isinstance(meta, dict) or not isinstance(specs, dict):
            raise CacheMismatch("manifest.json lacks 'meta' or 'arrays'")
        for key, value in expect.items():
            if meta.get(key) != value:
                raise CacheMismatch(f"the manifest's {key!r} is not this cache's")
        arrays: dict[str, np.ndarray] = {}
        for name, spec in specs.items():
            if not isinstance(name, str) or not name.isidentifier() or not isinstance(spec, dict):
                raise CacheMismatch(f"manifest names a bad array {name!r}")
            dtype, shape, sha = spec.get("dtype"), spec.get("shape"), spec.get("sha256")
            if dtype not in ALLOWED_DTYPES:
                raise CacheMismatch(f"array {name} has a type a cache may not hold: {dtype!r}")
            if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
            ):
                raise CacheMismatch(f"array {name} has a bad shape in the manifest")
            raw = read_regular(self.folder / f"{name}.npy")
            if hashlib.sha256(raw).hexdigest() != sha:
                raise CacheMismatch(f"{name}.npy does not match its recorded hash")
            arrays[name] = read_npy(raw, dtype, tuple(shape))
        return meta, arrays

    def write(self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the folder's arrays and metadata (under the lock; the manifest goes last)."""
        specs: dict[str, dict[str, Any]] = {}
        blobs: dict[str, bytes] = {}
        for name, array in arrays.items():
            data = np.ascontiguousarray(array)
            if data.dtype.str not in ALLOWED_DTYPES:
                raise TypeError(f"a cache may not hold {data.dtype.str} arrays ({name})")
            buffer = io.BytesIO()
            np.save(buffer, data, allow_pickle=False)
            raw = buffer.getvalue()
            blobs[name] = raw
            specs[name] = {
                "dtype": data.dtype.str,
                "shape": list(data.shape),
                "sha256": hashlib.sha256(raw).hexdigest(),
            }
        manifest = {"format": STORE_FORMAT, "meta": dict(meta), "arrays": specs}
        with self._lock(shared=False):
            for name, raw in blobs.items():
                write_atomic(self.folder / f"{name}.npy", raw)
            write_atomic(self.manifest, orjson.dumps(manifest))
