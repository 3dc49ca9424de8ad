"""Milvus: index chunks into a collection, and search it as ``milvus-bm25``, ``milvus-vector`` and ``milvus-hybrid``.

The same code talks to Milvus Lite (the URI is a local file, such as ``./ragtui.db``) and to a
Milvus cluster or Zilliz Cloud (``http(s)://host:19530``, the token read from ``RAGTUI_MILVUS_TOKEN``
or ``MILVUS_TOKEN``). pymilvus (and milvus-lite) are imported only in this package, inside the functions that
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

The package: ``connection`` (the target, its checks, the ``milvus`` extra, connecting),
``lite_logs`` (Milvus's log records kept off the terminal), ``record`` (what a collection holds),
``indexing`` (``ragtui index``), ``search`` (the retrievers) and ``check`` (``check_collection``).
"""

from ragtui.core.retrieval.milvus.check import check_collection
from ragtui.core.retrieval.milvus.connection import (
    FIELD_ROLES,
    MILVUS_EXTRA,
    TOKEN_ENV,
    MilvusTarget,
    check_target,
    connect,
    parse_field,
    require_milvus,
)
from ragtui.core.retrieval.milvus.indexing import IndexResult, index_collection
from ragtui.core.retrieval.milvus.lite_logs import LOG_FILE
from ragtui.core.retrieval.milvus.record import PROP_CHUNKS, CollectionRecord, chunks_fingerprint
from ragtui.core.retrieval.milvus.search import MilvusRetriever

__all__ = [
    "FIELD_ROLES",
    "LOG_FILE",
    "MILVUS_EXTRA",
    "PROP_CHUNKS",
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
    "parse_field",
    "require_milvus",
]
