"""Milvus: index chunks into a collection, and search it as ``milvus-bm25``, ``milvus-vector`` and ``milvus-hybrid``.

The same code talks to Milvus Lite (the URI is a local file, such as ``./ragtui.db``) and to a
Milvus cluster or Zilliz Cloud (``http(s)://host:19530``, the token read from ``RAGTUI_MILVUS_TOKEN``
or ``MILVUS_TOKEN``). pymilvus (and milvus-lite) are imported only here, inside the functions that
need them.

``index_collection`` writes each chunk's id, document, text and cached embedding, and Milvus computes
the BM25 sparse vector from the text itself (a BM25 function, Milvus's full-text search). It writes
in batches, asks which ids of a batch are already there before writing it (so a run that was stopped
resumes where it was), and stores a fingerprint of the chunks and the model in the collection's
properties: a collection built from other chunks or another model is refused, not mixed.

A team's own collection works too: the fields are found from the schema (the primary key, the one
float-vector field, the BM25 function's output and input) and any can be named explicitly with
``--milvus-field ROLE=FIELD`` (roles: id, text, doc, vector, sparse).

Before searching, ``check_collection`` holds the collection's record (``CollectionRecord``: the
chunking, the corpus's content digest, the model and its files' fingerprint, the chunks'
fingerprint) against the workspace's and refuses, naming what differs, a collection of other
chunks: its ids would name other texts, and the numbers would be wrong without a word.

Milvus Lite runs inside this process and logs its own failures (and pymilvus its RPC errors) with
tracebacks: ``connect`` sends both libraries' log records to ``milvus.log`` in the cache folder, and
the error ragtui prints is one line, naming Lite's own reason where it gave one. A Lite path is
looked at before Lite is given it: a file, a FIFO or a device where its folder should be, a
read-only folder, a missing database (when searching) or a collection name Milvus would refuse is
one line, and nothing is started.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.data.paths import cache_dir
from ragtui.core.data.tokenizer import model_fingerprint
from ragtui.core.errors import InputError
from ragtui.core.files import file_kind
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.retrieval.live import LiveError, one_line
from ragtui.core.text import mask_url

__all__ = [
    "FIELD_ROLES",
    "LOG_FILE",
    "TOKEN_ENV",
    "CollectionRecord",
    "IndexResult",
    "MilvusRetriever",
    "MilvusTarget",
    "check_collection",
    "check_target",
    "chunks_fingerprint",
    "connect",
    "index_collection",
    "require_milvus",
]

#: Environment variables read (in order) for a cluster's token.
TOKEN_ENV = ("RAGTUI_MILVUS_TOKEN", "MILVUS_TOKEN")

#: The field roles a mapping may name.
FIELD_ROLES = ("id", "text", "doc", "vector", "sparse")

#: The fields of a collection ``ragtui index`` builds.
DEFAULT_FIELDS = {"id": "id", "text": "text", "doc": "doc", "vector": "vector", "sparse": "sparse"}

#: The version of the collection layout ``ragtui index`` writes.
LAYOUT_VERSION = "2"

#: Milvus's VARCHAR limit, in bytes of UTF-8.
MAX_TEXT_BYTES = 65535
MAX_ID_BYTES = 1024

#: The collection property keys ``ragtui index`` writes.
PROP_LAYOUT = "ragtui.layout"
PROP_CHUNKS = "ragtui.chunks_sha256"
PROP_COUNT = "ragtui.chunk_count"
PROP_MODEL = "ragtui.model"
PROP_DIM = "ragtui.dim"
PROP_COMPLETE = "ragtui.complete"
# Since layout 2: what the chunks were made from, so a refusal can say what differs.
PROP_CHUNKING = "ragtui.chunking"
PROP_CORPUS = "ragtui.corpus_sha256"
PROP_MODEL_FILES = "ragtui.model_fingerprint"

#: Milvus's rule for a collection name (its documented limits), checked before Milvus is asked.
_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")

#: Milvus Lite's and pymilvus's log records go to this file in the cache folder, never to a terminal.
LOG_FILE = "milvus.log"
#: The log is started afresh (the old one kept as ``milvus.log.1``) past this size.
LOG_MAX_BYTES = 1 << 20
_LOGGERS = (
    "pymilvus",
    "pymilvus.milvus_client",
    "pymilvus.bulk_writer",
    "milvus_lite",
    "grpc._server",  # Lite's gRPC server, in this process: an RPC Lite lacks is logged there
)

#: Called as ``progress(done, total)``.
Progress = Callable[[int, int], None]


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


class _LogCapture(logging.Handler):
    """Where Milvus Lite's and pymilvus's log records go: appended to ``milvus.log`` in the cache
    folder (best effort: a folder that cannot be written loses them), never to the terminal; the
    last error Milvus Lite logged is kept, so the one-line message can name its reason."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
        self.path: Path | None = None
        self.lite_error = ""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR and record.name.startswith("milvus_lite"):
            exc = record.exc_info[1] if record.exc_info else None
            self.lite_error = (
                f"{type(exc).__name__}: {exc}" if exc is not None else record.getMessage()
            )
        if self.path is not None:
            with contextlib.suppress(Exception):  # a log that cannot be written is no error
                _append_log(self.path, self.format(record) + "\n")

    def handleError(self, record: logging.LogRecord) -> None:
        """Nothing: logging's own fallback would print a traceback on stderr."""

    def take_lite_error(self) -> str:
        """The last error Milvus Lite logged since the last call (empty when none)."""
        self.acquire()  # the lock ``emit`` runs under
        try:
            error, self.lite_error = self.lite_error, ""
        finally:
            self.release()
        return error


def _append_log(path: Path, text: str) -> None:
    """Append to the log (a regular file: a FIFO or a link planted there is left alone), starting a
    new one when it is over ``LOG_MAX_BYTES``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, text.encode("utf-8", "replace"))
    finally:
        os.close(fd)


_capture = _LogCapture()


def _capture_logs(log_root: Path | None) -> None:
    """Route Milvus Lite's and pymilvus's loggers to ``milvus.log`` under ``log_root`` (the cache
    folder); pymilvus installs its own stderr handlers when imported, so this runs after that."""
    _capture.path = (log_root or cache_dir()) / LOG_FILE
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if logger.handlers != [_capture]:
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.addHandler(_capture)
        logger.propagate = False


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
    _capture_logs(log_root)
    if target.is_lite:
        check_target(target, create=create)
        uri = str(Path(uri).expanduser())
    _capture.take_lite_error()
    try:
        return MilvusClient(uri=uri, token=_token())
    except Exception as exc:  # pymilvus raises its own errors, gRPC ones and OSErrors
        lite = _capture.take_lite_error()
        if "DataDirLockedError" in lite:
            raise InputError(
                target.uri,
                "is open in another process (Milvus Lite lets one process at a time use a database); "
                "close it there, or work on a copy",
            ) from None
        reason = one_line(lite, 200) if lite else _reason(exc)
        raise InputError(
            target.uri, f"cannot connect to Milvus: {reason} (details in {_capture.path})"
        ) from None


def _reason(exc: BaseException) -> str:
    """A pymilvus error as one short line (its message, without the class wrapper)."""
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return one_line(str(message), 200)


def chunks_fingerprint(chunks: Sequence[Chunk]) -> str:
    """SHA-256 over every chunk's id, document and text hash, in order."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(f"{chunk.id}\t{chunk.doc}\t{chunk.sha1}\n".encode())
    return digest.hexdigest()


def _properties(client: Any, collection: str) -> dict[str, str]:
    described = client.describe_collection(collection)
    props = described.get("properties") or {}
    return {str(k): str(v) for k, v in dict(props).items()}


def corpus_digest(documents: Sequence[Document]) -> str:
    """SHA-256 over every document's path and text hash, in order: the corpus's content digest."""
    digest = hashlib.sha256()
    for doc in documents:
        text_hash = hashlib.sha1(doc.text.encode("utf-8", "surrogatepass")).hexdigest()
        digest.update(f"{doc.path}\t{text_hash}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def chunking_label(
    chunk_size: int | None, overlap: int, chunks_file: str | Path | None = None
) -> str:
    """How the chunks were made, in words: ``chunk size 512, overlap 0``, ``whole documents``, or
    ``the chunks file NAME``."""
    if chunks_file is not None:
        return f"the chunks file {Path(chunks_file).name}"
    if chunk_size is None:
        return "whole documents"
    return f"chunk size {chunk_size}, overlap {overlap}"


@dataclass(frozen=True)
class CollectionRecord:
    """What a collection ``ragtui index`` built holds (its properties), or what a workspace would
    need it to hold: the chunks' fingerprint and count, the chunking, the corpus's content digest,
    the model and its files' fingerprint. An empty field is unknown (a collection of layout 1, or
    chunks indexed without their corpus) and is not compared."""

    chunks: str
    count: int
    model: str
    chunking: str = ""
    corpus: str = ""
    model_files: str = ""

    @classmethod
    def of(
        cls,
        chunks: Sequence[Chunk],
        model: str,
        *,
        documents: Sequence[Document] | None = None,
        chunk_size: int | None = None,
        overlap: int = 0,
        chunks_file: str | Path | None = None,
    ) -> CollectionRecord:
        """The record of ``chunks`` made from ``documents`` with these settings (the chunking and the
        corpus are unknown without ``documents``)."""
        known = documents is not None
        return cls(
            chunks=chunks_fingerprint(chunks),
            count=len(chunks),
            model=model,
            chunking=chunking_label(chunk_size, overlap, chunks_file) if known else "",
            corpus=corpus_digest(documents) if documents is not None else "",
            model_files=model_fingerprint(model),
        )

    @classmethod
    def read(cls, props: Mapping[str, str]) -> CollectionRecord | None:
        """The record in a collection's properties; None for a collection ``ragtui index`` did not build."""
        if props.get(PROP_LAYOUT) is None:
            return None
        try:
            count = int(props.get(PROP_COUNT, "0"))
        except ValueError:
            count = 0
        return cls(
            chunks=props.get(PROP_CHUNKS, ""),
            count=count,
            model=props.get(PROP_MODEL, ""),
            chunking=props.get(PROP_CHUNKING, ""),
            corpus=props.get(PROP_CORPUS, ""),
            model_files=props.get(PROP_MODEL_FILES, ""),
        )

    def properties(self, dim: int) -> dict[str, str]:
        """The collection properties ``ragtui index`` writes (``complete`` is set when done)."""
        props = {
            PROP_LAYOUT: LAYOUT_VERSION,
            PROP_CHUNKS: self.chunks,
            PROP_COUNT: str(self.count),
            PROP_MODEL: self.model,
            PROP_DIM: str(dim),
            PROP_COMPLETE: "false",
        }
        for key, value in (
            (PROP_CHUNKING, self.chunking),
            (PROP_CORPUS, self.corpus),
            (PROP_MODEL_FILES, self.model_files),
        ):
            if value:
                props[key] = value
        return props

    def chunk_differences(self, wanted: CollectionRecord) -> list[str]:
        """What differs between the chunks this record holds and ``wanted``'s: the chunking, the
        corpus, or (neither known to differ) the chunks themselves; empty when the chunks are the same."""
        if self.chunks == wanted.chunks:
            return []
        found = []
        if self.chunking and wanted.chunking and self.chunking != wanted.chunking:
            found.append(f"chunking: {self.chunking}, not {wanted.chunking}")
        if self.corpus and wanted.corpus and self.corpus != wanted.corpus:
            found.append(
                f"corpus: content digest {self.corpus[:12]}, not {wanted.corpus[:12]} "
                "(documents were added, removed or changed)"
            )
        if not found:
            found.append(
                f"chunks: {self.count} chunks with fingerprint {self.chunks[:12]}, "
                f"not these {wanted.count} with {wanted.chunks[:12]}"
            )
        return found

    def model_differences(self, model: str, files: str) -> list[str]:
        """What differs between the model this record names and ``model`` (files: its fingerprint)."""
        if self.model_files and files:
            if self.model_files == files:
                return []  # the same files, whatever the name they were given by
            if self.model == model:
                old, new = self.model_files[:12], files[:12]
                return [f"model: {self.model} with other files (fingerprint {old}, not {new})"]
        if self.model and self.model != model:
            return [f"model: {self.model}, not {model}"]
        return []


def _mismatch(
    name: str, props: Mapping[str, str], wanted: CollectionRecord | None, model: str | None
) -> str | None:
    """Why a collection cannot be searched for this workspace (one line), or None: other chunks
    than ``wanted``'s, another model than ``model`` (given when its vectors are searched), or an
    index that was stopped before it finished. A collection ragtui did not build is not judged here."""
    stored = CollectionRecord.read(props)
    if stored is None:
        return None
    differences = stored.chunk_differences(wanted) if wanted is not None else []
    if model is not None:
        differences += stored.model_differences(model, model_fingerprint(model))
    if differences:
        harm = []
        if not differences[-1].startswith("model:") or len(differences) > 1:
            harm.append("its ids would name other texts")
        if differences[-1].startswith("model:"):
            harm.append("its vectors are another model's")
        return (
            f"collection {name!r} was indexed from other data than this workspace's "
            f"({'; '.join(differences)}): {' and '.join(harm)}; use the settings it was indexed "
            "with, or index it again (ragtui index --replace)"
        )
    if props.get(PROP_COMPLETE) != "true":
        return (
            f"collection {name!r} is incomplete (ragtui index was stopped before it finished); "
            "run ragtui index again to finish it"
        )
    return None


def check_collection(
    live: Mapping[str, object],
    chunks: Sequence[Chunk],
    model: str,
    *,
    documents: Sequence[Document],
    chunk_size: int | None,
    overlap: int,
    chunks_file: str | Path | None,
) -> list[str]:
    """Refuse (InputError, one line naming what differs) the collection the Milvus retrievers in
    ``live`` would search when ``ragtui index`` built it from other chunks than the workspace's
    (``chunks``, made from ``documents`` with this chunking) or, for ``milvus-vector`` and
    ``milvus-hybrid``, with another model; or when that index was stopped before it finished.
    Nothing is done (or computed) without a Milvus retriever.

    Returns the warnings to show: a collection ragtui did not build has no record, so it cannot be
    checked (a team's own collection is searched all the same). Each Milvus retriever keeps the
    record and checks again when it first connects, so a Milvus that cannot be reached now is left
    to the retrievers to report (each fails with the reason, as any live retriever).
    """
    retrievers = [r for r in live.values() if isinstance(r, MilvusRetriever)]
    if not retrievers:
        return []
    wanted = CollectionRecord.of(
        chunks,
        model,
        documents=documents,
        chunk_size=chunk_size,
        overlap=overlap,
        chunks_file=chunks_file,
    )
    for retriever in retrievers:
        retriever.expected = wanted
    first = retrievers[0]
    target = first.target
    name = target.collection
    try:
        client = connect(target.uri, log_root=first.cache_root)
    except InputError:
        if target.is_lite:
            raise  # a local file (locked by another process, unreadable): bad input, said once
        return []  # a server that cannot be reached: each retriever says so, as any live one
    searcher = next((r for r in retrievers if r.kind != "bm25"), None)  # reads the vectors
    try:
        if not client.has_collection(name):
            return []  # the retrievers say so, naming the ragtui index command
        props = _properties(client, name)
        fields = resolve_fields(client, name, target.overrides) if searcher else None
    except Exception:
        return []  # as above: a failure to read it is each retriever's to report
    finally:
        _close(client)
    problem = _mismatch(name, props, wanted, searcher.model if searcher else None)
    if problem:
        raise InputError(target.uri, problem)
    if CollectionRecord.read(props) is not None:
        return []
    if searcher is not None and fields is not None:
        try:
            searcher._check_dim(name, fields.vector_dim)
        except LiveError as exc:
            raise InputError(None, str(exc)) from None
    return [
        f"{target.uri}: collection {name!r} was not built by ragtui index, so whether it holds "
        "this workspace's chunks cannot be checked (docs/retriever-milvus.md)"
        + (f"; its vectors must come from {searcher.model} (--model)" if searcher else "")
    ]


def _quoted(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    escaped = escaped.replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


@dataclass(frozen=True)
class IndexResult:
    """What ``index_collection`` did."""

    uri: str
    collection: str
    chunks: int
    written: int
    already: int
    created: bool
    seconds: float
    dim: int


def _check_sizes(chunks: Sequence[Chunk], source: str) -> None:
    for chunk in chunks:
        if len(chunk.id.encode("utf-8")) > MAX_ID_BYTES:
            raise InputError(
                source, f"chunk id {chunk.id[:60]!r}... is over Milvus's {MAX_ID_BYTES}-byte limit"
            )
        if len(chunk.doc.encode("utf-8")) > MAX_ID_BYTES:
            raise InputError(
                source, f"document id of chunk {chunk.id!r} is over {MAX_ID_BYTES} bytes"
            )
        size = len(chunk.text.encode("utf-8"))
        if size > MAX_TEXT_BYTES:
            raise InputError(
                source,
                f"chunk {chunk.id!r} is {size} bytes, over Milvus's VARCHAR limit of {MAX_TEXT_BYTES}; chunk smaller (--chunk-size)",
            )


def _create(
    client: Any,
    name: str,
    dim: int,
    props: dict[str, str],
    index_type: str,
    k1: float,
    b: float,
) -> None:
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES)
    schema.add_field("doc", DataType.VARCHAR, max_length=MAX_ID_BYTES)
    schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_function(
        Function(
            name="text_bm25",
            function_type=FunctionType.BM25,
            input_field_names=["text"],
            output_field_names=["sparse"],
        )
    )
    index = client.prepare_index_params()
    # Unit-length embeddings: inner product is the cosine, as the built-in exact search computes.
    params: dict[str, Any] = {}
    if index_type == "HNSW":
        params = {"M": 16, "efConstruction": 200}
    index.add_index("vector", index_type=index_type, metric_type="IP", params=params)
    # k1 and b as ragtui's BM25 (rank-bm25's defaults), so the side-by-side compares like with like.
    index.add_index(
        "sparse",
        index_type="SPARSE_INVERTED_INDEX",
        metric_type="BM25",
        params={"bm25_k1": k1, "bm25_b": b},
    )
    client.create_collection(
        name,
        schema=schema,
        index_params=index,
        properties=props,
        description=f"ragtui index: {props[PROP_COUNT]} chunks, model {props[PROP_MODEL]}",
    )


def index_collection(
    target: MilvusTarget,
    chunks: Sequence[Chunk],
    model: str,
    *,
    vectors: np.ndarray | None = None,
    cache_root: Path | None = None,
    embed_progress: Progress | None = None,
    write_progress: Progress | None = None,
    batch: int = 512,
    replace: bool = False,
    index_type: str = "FLAT",
    k1: float = 1.5,
    b: float = 0.75,
    record: CollectionRecord | None = None,
) -> IndexResult:
    """Write ``chunks`` (ids, documents, texts, embeddings; BM25 computed by Milvus) into a collection, resumably.

    ``vectors`` are the chunk embeddings when the caller has them (a benchmark); otherwise they come
    from the embedding cache of ``model`` (texts not cached are embedded once and cached).
    ``record`` says what the chunks were made from (``CollectionRecord.of`` with the documents and
    the chunking); it is kept in the collection's properties, so that a search from other chunks is
    refused naming what differs. Without it only the chunks and the model are recorded.
    """
    started = time.perf_counter()
    if not chunks:
        raise InputError(None, "no chunks to index")
    source = target.uri
    check_target(target, create=True)
    _check_sizes(chunks, source)
    if record is None:
        record = CollectionRecord.of(chunks, model)
    client = connect(target.uri, create=True, log_root=cache_root)
    name = target.collection
    try:
        exists = client.has_collection(name)
        if exists and replace:
            client.drop_collection(name)
            exists = False
        complete = False
        if exists:
            props = _properties(client, name)
            stored = CollectionRecord.read(props)
            if stored is None:
                raise InputError(
                    source,
                    f"collection {name!r} was not built by ragtui index; choose another --collection (or --replace to drop it and index again)",
                )
            differences = stored.chunk_differences(record) + stored.model_differences(
                model, record.model_files
            )
            if differences:
                raise InputError(
                    source,
                    f"collection {name!r} was built from other data ({'; '.join(differences)}); "
                    "choose another --collection, or --replace",
                )
            complete = props.get(PROP_COMPLETE) == "true"
        if complete:
            dim = int(_properties(client, name).get(PROP_DIM, "0"))
            return IndexResult(
                target.uri,
                name,
                len(chunks),
                0,
                len(chunks),
                False,
                time.perf_counter() - started,
                dim,
            )
        if vectors is None:
            from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache

            cache = EmbeddingCache(model, cache_root)
            vectors = cache.embed([c.text for c in chunks], Embedder(model), embed_progress)
        if vectors.shape[0] != len(chunks):
            raise ValueError("one embedding per chunk is needed")
        dim = int(vectors.shape[1])
        created = False
        if not exists:
            _create(client, name, dim, record.properties(dim), index_type, k1, b)
            created = True
        else:
            stored_dim = _properties(client, name).get(PROP_DIM)
            if stored_dim is not None and int(stored_dim) != dim:
                raise InputError(
                    source, f"collection {name!r} holds {stored_dim}-dim vectors, not {dim}"
                )
        client.load_collection(name)
        written = already = 0
        if write_progress:
            write_progress(0, len(chunks))
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            present: set[str] = set()
            if not created:
                ids = ", ".join(_quoted(c.id) for c in part)
                rows = client.query(name, filter=f"id in [{ids}]", output_fields=["id"])
                present = {str(r["id"]) for r in rows}
            rows_out = [
                {
                    "id": c.id,
                    "doc": c.doc,
                    "text": c.text,
                    "vector": vectors[start + i].astype(np.float32).tolist(),
                }
                for i, c in enumerate(part)
                if c.id not in present
            ]
            if rows_out:
                client.insert(name, rows_out)
            written += len(rows_out)
            already += len(part) - len(rows_out)
            if write_progress:
                write_progress(start + len(part), len(chunks))
        client.flush(name)
        client.alter_collection_properties(name, properties={PROP_COMPLETE: "true"})
    except InputError:
        raise
    except Exception as exc:
        raise InputError(source, f"Milvus collection {name!r}: {_reason(exc)}") from None
    finally:
        _close(client)
    return IndexResult(
        target.uri, name, len(chunks), written, already, created, time.perf_counter() - started, dim
    )


def _close(client: Any) -> None:
    # Closing is best effort; Lite's server is stopped at exit.
    with contextlib.suppress(Exception):
        client.close()


# ---- searching -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fields:
    id: str
    text: str | None
    doc: str | None
    vector: str | None
    sparse: str | None
    vector_metric: str | None
    vector_dim: int | None = None


def resolve_fields(client: Any, collection: str, overrides: Mapping[str, str]) -> _Fields:
    """The collection's id, text, doc, vector and sparse fields: named ones as given, the rest found from the schema."""
    described = client.describe_collection(collection)
    fields = described.get("fields", [])
    names = {f["name"] for f in fields}
    for role, field_name in overrides.items():
        if field_name not in names:
            raise LiveError(
                f"collection {collection!r} has no field {field_name!r} (for {role}); it has {', '.join(sorted(names))}"
            )

    def type_name(f: dict[str, Any]) -> str:
        return getattr(f.get("type"), "name", str(f.get("type")))

    primary = next((f["name"] for f in fields if f.get("is_primary")), None)
    dense = [f["name"] for f in fields if type_name(f) == "FLOAT_VECTOR"]
    bm25_out: dict[str, str] = {}
    for fn in described.get("functions", []):
        if getattr(fn.get("type"), "name", str(fn.get("type"))) == "BM25":
            for out_name in fn.get("output_field_names", []):
                inputs = fn.get("input_field_names", [])
                bm25_out[out_name] = inputs[0] if inputs else ""
    sparse = overrides.get("sparse") or (next(iter(bm25_out)) if len(bm25_out) == 1 else None)
    text = overrides.get("text") or (bm25_out.get(sparse or "") or None)
    if text is None and "text" in names:
        text = "text"
    doc = overrides.get("doc") or ("doc" if "doc" in names else None)
    vector = overrides.get("vector") or (dense[0] if len(dense) == 1 else None)
    metric = None
    if vector is not None:
        try:
            metric = str(client.describe_index(collection, index_name=vector).get("metric_type"))
        except Exception:
            metric = None
    id_field = overrides.get("id") or primary
    if id_field is None:
        raise LiveError(f"collection {collection!r} has no primary key")
    dim: int | None = None
    for f in fields:
        if f["name"] == vector:
            with contextlib.suppress(TypeError, ValueError):
                dim = int((f.get("params") or {}).get("dim", ""))
    return _Fields(id_field, text, doc, vector, sparse, metric, dim)


class MilvusRetriever:
    """``milvus-bm25``, ``milvus-vector`` or ``milvus-hybrid`` (Milvus's RRF ranker over both) on one collection."""

    concurrency = 1
    batch_size = 32
    cacheable = True

    def __init__(
        self,
        name: str,
        search: str,
        target: MilvusTarget,
        model: str,
        cache_root: Path | None = None,
        rrf_k: int = RRF_K,
    ) -> None:
        if search not in ("bm25", "vector", "hybrid"):
            raise ValueError(f"unknown Milvus search {search!r}")
        self.name = name
        self.kind = search
        self.target = target
        self.model = model
        self.cache_root = cache_root
        self.rrf_k = rrf_k
        #: What the collection must hold (the workspace's chunks), set by ``check_collection``.
        self.expected: CollectionRecord | None = None
        self._client: Any = None
        self._fields: _Fields | None = None
        self._embedder: Any = None
        self._cache: Any = None
        # A missing milvus extra, a bad collection name or Lite path is one line now (nothing is
        # imported, contacted or started).
        require_milvus(target.is_lite)
        check_target(target)

    def _ready(self) -> tuple[Any, _Fields]:
        """Connect, load the collection, find its fields and check it (once)."""
        if self._client is None or self._fields is None:
            try:
                client = connect(self.target.uri, log_root=self.cache_root)
            except InputError as exc:
                raise LiveError(exc.message) from None
            name = self.target.collection
            try:
                if not client.has_collection(name):
                    raise LiveError(
                        f"{self.target.uri}: no collection {name!r} (build it with ragtui index --milvus {self.target.uri} --collection {name})"
                    )
                props = _properties(client, name)
                model = self.model if self.kind != "bm25" else None
                problem = _mismatch(name, props, self.expected, model)
                if problem:
                    raise LiveError(f"{self.target.uri}: {problem}")
                client.load_collection(name)
                fields = resolve_fields(client, name, self.target.overrides)
                need = {"bm25": ("sparse",), "vector": ("vector",), "hybrid": ("sparse", "vector")}
                for role in need[self.kind]:
                    if getattr(fields, role) is None:
                        raise LiveError(
                            f"collection {name!r}: no {role} field found for {self.name}; name it with --milvus-field {role}=FIELD"
                        )
                if self.kind != "bm25" and CollectionRecord.read(props) is None:
                    self._check_dim(name, fields.vector_dim)  # ragtui's own: the model is checked
            except LiveError:
                _close(client)
                raise
            except InputError as exc:
                _close(client)
                raise LiveError(exc.message) from None
            except Exception as exc:
                _close(client)
                raise LiveError(f"{self.target.uri}: {_reason(exc)}") from None
            self._client, self._fields = client, fields
        return self._client, self._fields

    def _check_dim(self, collection: str, dim: int | None) -> None:
        """The vector field's dimension against the model's, before a question is sent (Milvus
        would fail every search, each with a traceback in its log)."""
        if dim is None:
            return
        cache = self._embedding_cache()
        vectors = cache.vectors
        if vectors is not None and vectors.size:
            model_dim = int(vectors.shape[1])
        else:
            model_dim = int(self._embedder.encode(["dimension"]).shape[1])
        if model_dim != dim:
            raise LiveError(
                f"{self.target.uri}: collection {collection!r} holds {dim}-dim vectors, but "
                f"{self.model} makes {model_dim}-dim ones; give --model the model its vectors were made with"
            )

    def identity(self) -> dict[str, Any]:
        """The collection, its fingerprint (or row count for one ragtui did not build), the fields, the model and the search."""
        client, fields = self._ready()
        name = self.target.collection
        props = _properties(client, name)
        content = props.get(PROP_CHUNKS)
        if content is None:
            stats = client.get_collection_stats(name)
            content = f"rows={stats.get('row_count')}"
        return {
            "kind": "milvus",
            "search": self.kind,
            "uri": self.target.uri
            if self.target.is_lite is False
            else str(Path(self.target.uri).expanduser().resolve()),
            "collection": name,
            "content": content,
            "fields": [fields.id, fields.text, fields.doc, fields.vector, fields.sparse],
            "model": self.model if self.kind != "bm25" else None,
            "rrf_k": self.rrf_k if self.kind == "hybrid" else None,
        }

    def describe(self) -> dict[str, Any]:
        """What a saved run's manifest records (a cluster URI's user info masked)."""
        return {
            "kind": "milvus",
            "uri": mask_url(self.target.uri),
            "collection": self.target.collection,
            "search": self.kind,
            "model": self.model if self.kind != "bm25" else None,
        }

    def _embedding_cache(self) -> Any:
        """The model's embedding cache (read once: questions embedded before, by the vector
        retriever, are not encoded again) and its embedder (loaded on first use)."""
        from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache

        if self._embedder is None:
            self._embedder = Embedder(self.model)
            self._cache = EmbeddingCache(self.model, self.cache_root)
        return self._cache

    def _embed(self, questions: Sequence[str]) -> list[list[float]]:
        vectors = self._embedding_cache().embed(list(questions), self._embedder)
        return [list(map(float, v)) for v in vectors]

    def _hits(self, rows: Sequence[Any], fields: _Fields, kind: str) -> list[Hit]:
        hits = []
        for row in rows:
            entity = row.get("entity", {}) or {}
            hit_id = entity.get(fields.id, row.get("id"))
            distance = float(row.get("distance", 0.0))
            if kind == "bm25":
                score = abs(distance)  # BM25 is never negative; Lite reports it negated
            elif kind == "vector" and fields.vector_metric == "L2":
                score = (
                    -distance
                )  # smaller is nearer: negated so that higher is better, as elsewhere
            else:
                score = distance
            text = entity.get(fields.text) if fields.text else None
            doc = entity.get(fields.doc) if fields.doc else None
            hits.append(
                Hit(
                    str(hit_id),
                    score,
                    text if isinstance(text, str) else None,
                    None if doc is None else str(doc),
                )
            )
        return hits

    def search_batch(self, questions: Sequence[str], depth: int) -> list[list[Hit]]:
        """One Milvus request for several questions (its ``nq``)."""
        client, fields = self._ready()
        name = self.target.collection
        output = [f for f in (fields.id, fields.text, fields.doc) if f]
        try:
            if self.kind == "bm25":
                found = client.search(
                    name,
                    data=list(questions),
                    anns_field=fields.sparse,
                    limit=depth,
                    output_fields=output,
                )
            elif self.kind == "vector":
                found = client.search(
                    name,
                    data=self._embed(questions),
                    anns_field=fields.vector,
                    limit=depth,
                    output_fields=output,
                )
            else:
                from pymilvus import AnnSearchRequest, RRFRanker

                requests = [
                    AnnSearchRequest(
                        data=list(questions), anns_field=fields.sparse, param={}, limit=depth
                    ),
                    AnnSearchRequest(
                        data=self._embed(questions), anns_field=fields.vector, param={}, limit=depth
                    ),
                ]
                found = client.hybrid_search(
                    name, requests, RRFRanker(self.rrf_k), limit=depth, output_fields=output
                )
        except InputError as exc:
            raise LiveError(exc.problem) from None
        except Exception as exc:
            raise LiveError(f"{self.target.uri} {name}: {_reason(exc)}") from None
        return [self._hits(list(rows), fields, self.kind) for rows in found]

    def search(self, question: str, depth: int) -> list[Hit]:
        """One question."""
        return self.search_batch([question], depth)[0]

    def close(self) -> None:
        """Close the connection (Lite's server stops at exit)."""
        if self._client is not None:
            _close(self._client)
            self._client = None


def bm25_parameters(bm25: BM25Retriever | None) -> tuple[float, float]:
    """The k1 and b to give Milvus's BM25: ragtui's own, so the two compare like with like."""
    if bm25 is None:
        return 1.5, 0.75
    return bm25.k1, bm25.b
