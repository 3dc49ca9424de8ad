"""The live answer cache: each live retriever's answers on disk, one small JSON file per question
text under ``<cache>/live/<name>-<identity hash>/``, and the size bound the whole folder is kept under.

The folder's name holds the hash of the retriever's identity (its settings), so answers of other
settings are never read; after a run that asked questions the oldest answers are deleted until the
folder fits its bound (``RAGTUI_LIVE_CACHE_MB``, 200 MB by default; 0 for none).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ragtui.core.data.paths import cache_dir, safe_filename
from ragtui.core.files import content_hash
from ragtui.core.retrieval.base import Hit, normalize_hit

__all__ = [
    "LIVE_CACHE_ENV",
    "LIVE_CACHE_MB",
    "LiveCache",
    "cache_limit_bytes",
    "identity_hash",
    "prune_cache",
]

#: The live answer cache's default size bound, in MB (``RAGTUI_LIVE_CACHE_MB`` sets another; 0: no bound).
LIVE_CACHE_MB = 200
#: The environment variable that sets the live answer cache's size bound, in MB.
LIVE_CACHE_ENV = "RAGTUI_LIVE_CACHE_MB"


def identity_hash(identity: Mapping[str, Any]) -> str:
    """The SHA-256 of a retriever identity (sorted-key JSON)."""
    return hashlib.sha256(orjson.dumps(identity, option=orjson.OPT_SORT_KEYS)).hexdigest()


class LiveCache:
    """One retriever's answers on disk: one small JSON file per question text, each written atomically.

    A file is written to a temporary name and renamed, so a reader sees a whole answer or none; a
    file that does not parse (a crash mid-write on a filesystem without rename ordering) is ignored
    and the question asked again.
    """

    def __init__(self, name: str, identity: Mapping[str, Any], root: Path | None = None) -> None:
        digest = identity_hash(identity)
        self.folder = (root or cache_dir()) / "live" / f"{safe_filename(name)}-{digest[:16]}"
        self._lock = threading.Lock()

    def _path(self, question: str) -> Path:
        return self.folder / (content_hash(question) + ".json")

    def get(self, question: str, depth: int) -> list[Hit] | None:
        """The cached answer cut to ``depth``, or None when there is none deep enough."""
        try:
            obj = orjson.loads(self._path(question).read_bytes())
            if obj["question"] != question:
                return None
            cached_depth = int(obj["depth"])
            # Checked as a fresh answer is: a file with a number for a text (edited, forged,
            # written by another version) is a miss, and the question is asked again.
            hits = [
                normalize_hit({"id": h[0], "score": h[1], "text": h[2], "doc": h[3]}, rank)
                for rank, h in enumerate(obj["hits"], start=1)
            ]
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None
        if cached_depth < depth and len(hits) >= cached_depth:
            return None  # asked less deep than now, and there may be more
        return hits[:depth]

    def put(self, question: str, depth: int, hits: Sequence[Hit]) -> None:
        """Keep an answer (temporary file, then rename)."""
        body = {
            "question": question,
            "depth": depth,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "hits": [[h.id, h.score, h.text, h.doc] for h in hits],
        }
        path = self._path(question)
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(orjson.dumps(body))
        os.replace(tmp, path)


def cache_limit_bytes() -> int | None:
    """The live answer cache's size bound in bytes (``RAGTUI_LIVE_CACHE_MB``, default 200; 0: none)."""
    raw = os.environ.get(LIVE_CACHE_ENV, "").strip()
    try:
        mb = float(raw) if raw else float(LIVE_CACHE_MB)
    except ValueError:
        mb = float(LIVE_CACHE_MB)
    if not mb > 0 or mb != mb:
        return None
    return int(mb * 1024 * 1024)


def prune_cache(live_root: Path, limit: int | None = None) -> int:
    """Keep the live answer cache (``<cache>/live``, every retriever's folder) under its size bound:
    the oldest answers (by when they were written) are deleted first, until the rest fit. Returns
    how many files were deleted; ``limit`` defaults to :func:`cache_limit_bytes`."""
    limit = cache_limit_bytes() if limit is None else limit
    if limit is None:
        return 0
    files: list[tuple[float, int, Path]] = []
    total = 0
    for folder in live_root.iterdir():
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in folder.iterdir():
            if path.suffix != ".json" or path.name.startswith("."):
                continue
            try:
                info = path.stat()
            except OSError:
                continue
            files.append((info.st_mtime, info.st_size, path))
            total += info.st_size
    if total <= limit:
        return 0
    removed = 0
    for _, size, path in sorted(files, key=lambda f: (f[0], str(f[2]))):
        if total <= limit:
            break
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
        removed += 1
    return removed
