"""Where a Milvus collection is and how it is reached: the target (a Lite file or a server URL),
its checks before anything is started, the ``milvus`` extra, and the connection.

A Lite path is looked at before Lite is given it: a file, a FIFO or a device where its folder
should be, a read-only folder, a missing database (when searching) or a collection name Milvus
would refuse is one line, and nothing is started. A cluster's token is read from
``RAGTUI_MILVUS_TOKEN`` or ``MILVUS_TOKEN``. pymilvus is imported only inside ``connect``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.core.errors import InputError
from ragtui.core.files import file_kind
from ragtui.core.retrieval.live_base import one_line
from ragtui.core.retrieval.milvus.lite_logs import capture, capture_logs

__all__ = [
    "FIELD_ROLES",
    "MILVUS_EXTRA",
    "TOKEN_ENV",
    "MilvusTarget",
    "check_target",
    "close_client",
    "connect",
    "parse_field",
    "properties",
    "reason",
    "require_milvus",
]

#: Environment variables read (in order) for a cluster's token.
TOKEN_ENV = ("RAGTUI_MILVUS_TOKEN", "MILVUS_TOKEN")

#: The field roles a mapping may name.
FIELD_ROLES = ("id", "text", "doc", "vector", "sparse")

#: Milvus's rule for a collection name (its documented limits), checked before Milvus is asked.
_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")


@dataclass(frozen=True)
class MilvusTarget:
    """A collection: where Milvus is (a Lite file or a cluster URL), its name, and any field names given."""

    uri: str
    collection: str
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def is_lite(self) -> bool:
        """Whether the URI is a local Milvus Lite file rather than a server."""
        return not self.uri.lower().startswith(
            ("http://", "https://", "tcp://", "grpc://", "unix:")
        )

    @property
    def overrides(self) -> dict[str, str]:
        """The fields named explicitly, by role."""
        return dict(self.fields)


def parse_field(text: str) -> tuple[str, str]:
    """``ROLE=FIELD`` for ``--milvus-field``; ValueError when the role is unknown."""
    role, sep, name = text.partition("=")
    role, name = role.strip(), name.strip()
    if not sep or role not in FIELD_ROLES or not name:
        raise ValueError(f"expected ROLE=FIELD with ROLE one of {', '.join(FIELD_ROLES)}")
    return role, name


def _token() -> str:
    for name in TOKEN_ENV:
        value = os.environ.get(name)
        if value:
            return value
    return ""


def check_target(target: MilvusTarget, *, create: bool = False) -> None:
    """One line (InputError) for a collection name Milvus refuses, and, for Milvus Lite, a path it
    cannot use: looked at here, before Lite is given it (a FIFO would make it fail with a
    traceback, a read-only folder too). ``create``: the database may be made (``ragtui index``);
    otherwise a missing one is refused instead of being made empty."""
    name = target.collection
    if name and not _COLLECTION_NAME.fullmatch(name):
        raise InputError(
            None,
            f"--collection: {name!r} is not a Milvus collection name (letters, digits and '_', "
            "starting with a letter or '_', at most 255)",
        )
    if not target.is_lite:
        return
    uri = target.uri
    if not uri.endswith(".db"):
        raise InputError(
            uri, "a Milvus Lite file name ends in .db (a server is http(s)://host:19530)"
        )
    path = Path(uri).expanduser()
    parent = path.absolute().parent
    if not parent.is_dir():
        raise InputError(uri, f"folder {parent} does not exist")
    try:
        mode: int | None = os.stat(path).st_mode  # follows links; never opens (a FIFO cannot block)
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(uri, f"cannot be looked at ({exc.strerror})") from None
    if mode is None:
        if not create:
            raise InputError(
                uri,
                f"no Milvus Lite database here (build one with ragtui index --milvus {uri} --collection {name or 'NAME'})",
            )
        if not _writable(parent):
            raise InputError(
                uri, f"folder {parent} is read-only: Milvus Lite cannot make its database there"
            )
        return
    if stat.S_ISREG(mode):
        raise InputError(
            uri,
            "is a file, not a Milvus Lite database (Milvus Lite 3 keeps a database in a folder of that name)",
        )
    if not stat.S_ISDIR(mode):
        raise InputError(uri, f"is {file_kind(mode)}, not a Milvus Lite database (a folder)")
    try:
        entries = {p.name for p in path.iterdir()}
    except OSError as exc:
        raise InputError(uri, f"cannot be read ({exc.strerror})") from None
    if entries and not entries & {"LOCK", "collections"}:
        raise InputError(
            uri, "is a folder that is not a Milvus Lite database (no LOCK or collections in it)"
        )
    if not _writable(path):
        raise InputError(
            uri,
            "the Milvus Lite database folder is read-only (Milvus Lite locks and writes it, even to "
            "search); copy it to a folder you can write",
        )


def _writable(folder: Path) -> bool:
    """Whether files may be made in ``folder``: its permissions and its mode bits (a folder made
    read-only with ``chmod`` counts for root too, as ``ragtui.core.files.check_writable`` reads it)."""
    try:
        mode = folder.stat().st_mode
    except OSError:
        return False
    return os.access(folder, os.W_OK) and bool(mode & 0o222)


#: What a run that needs Milvus says when pymilvus or milvus-lite is not installed.
MILVUS_EXTRA = (
    'Milvus needs the milvus extra (pymilvus and milvus-lite): pip install "ragtui[milvus]"'
)


def require_milvus(lite: bool = True) -> None:
    """InputError naming the ``milvus`` extra when pymilvus (or, for a Lite file, milvus-lite) is
    not installed. Imports nothing: a missing extra is said before any work is done."""
    needed = ("pymilvus", "milvus_lite") if lite else ("pymilvus",)
    if any(importlib.util.find_spec(name) is None for name in needed):
        raise InputError(None, MILVUS_EXTRA)


def connect(uri: str, *, create: bool = False, log_root: Path | None = None) -> Any:
    """A pymilvus ``MilvusClient`` for a Lite file or a cluster URL; InputError when it cannot be reached.

    A Lite path is checked first (``check_target``; ``create`` as there). Milvus's own log records
    go to ``milvus.log`` under ``log_root`` (the cache folder by default).
    """
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # gRPC's C core writes to fd 2 otherwise
    target = MilvusTarget(uri, "")
    require_milvus(target.is_lite)
    try:
        from pymilvus import MilvusClient
    except ImportError:  # installed but broken (a dependency of its own missing)
        raise InputError(None, MILVUS_EXTRA) from None
    capture_logs(log_root)
    if target.is_lite:
        check_target(target, create=create)
        uri = str(Path(uri).expanduser())
    capture.take_lite_error()
    try:
        return MilvusClient(uri=uri, token=_token())
    except Exception as exc:  # pymilvus raises its own errors, gRPC ones and OSErrors
        lite = capture.take_lite_error()
        if "DataDirLockedError" in lite:
            raise InputError(
                target.uri,
                "is open in another process (Milvus Lite lets one process at a time use a database); "
                "close it there, or work on a copy",
            ) from None
        why = one_line(lite, 200) if lite else reason(exc)
        raise InputError(
            target.uri, f"cannot connect to Milvus: {why} (details in {capture.path})"
        ) from None


def reason(exc: BaseException) -> str:
    """A pymilvus error as one short line (its message, without the class wrapper)."""
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return one_line(str(message), 200)


def properties(client: Any, collection: str) -> dict[str, str]:
    """A collection's properties (where ``ragtui index`` keeps its record), as strings."""
    described = client.describe_collection(collection)
    props = described.get("properties") or {}
    return {str(k): str(v) for k, v in dict(props).items()}


def close_client(client: Any) -> None:
    """Close a client, best effort (Lite's server is stopped at exit)."""
    with contextlib.suppress(Exception):
        client.close()
