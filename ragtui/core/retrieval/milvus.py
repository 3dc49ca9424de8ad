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
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.retrieval.live import LiveError, one_line

__all__ = [
    "FIELD_ROLES",
    "TOKEN_ENV",
    "IndexResult",
    "MilvusRetriever",
    "MilvusTarget",
    "chunks_fingerprint",
    "connect",
    "index_collection",
]

#: Environment variables read (in order) for a cluster's token.
TOKEN_ENV = ("RAGTUI_MILVUS_TOKEN", "MILVUS_TOKEN")

#: The field roles a mapping may name.
FIELD_ROLES = ("id", "text", "doc", "vector", "sparse")

#: The fields of a collection ``ragtui index`` builds.
DEFAULT_FIELDS = {"id": "id", "text": "text", "doc": "doc", "vector": "vector", "sparse": "sparse"}

#: The version of the collection layout ``ragtui index`` writes.
LAYOUT_VERSION = "1"

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


def connect(uri: str) -> Any:
    """A pymilvus ``MilvusClient`` for a Lite file or a cluster URL; InputError when it cannot be reached."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise InputError(
            None, "Milvus needs pymilvus and milvus-lite: pip install pymilvus milvus-lite"
        ) from None
    target = MilvusTarget(uri, "")
    if target.is_lite:
        if not uri.endswith(".db"):
            raise InputError(
                uri, "a Milvus Lite file name ends in .db (a server is http(s)://host:19530)"
            )
        parent = Path(uri).expanduser().resolve().parent
        if not parent.is_dir():
            raise InputError(uri, f"folder {parent} does not exist")
        uri = str(Path(uri).expanduser())
    try:
        return MilvusClient(uri=uri, token=_token())
    except Exception as exc:  # pymilvus raises its own errors, gRPC ones and OSErrors
        raise InputError(uri, f"cannot connect to Milvus: {_reason(exc)}") from None


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
) -> IndexResult:
    """Write ``chunks`` (ids, documents, texts, embeddings; BM25 computed by Milvus) into a collection, resumably.

    ``vectors`` are the chunk embeddings when the caller has them (a benchmark); otherwise they come
    from the embedding cache of ``model`` (texts not cached are embedded once and cached).
    """
    started = time.perf_counter()
    if not chunks:
        raise InputError(None, "no chunks to index")
    source = target.uri
    _check_sizes(chunks, source)
    fingerprint = chunks_fingerprint(chunks)
    client = connect(target.uri)
    name = target.collection
    try:
        exists = client.has_collection(name)
        if exists and replace:
            client.drop_collection(name)
            exists = False
        complete = False
        if exists:
            props = _properties(client, name)
            if props.get(PROP_LAYOUT) is None:
                raise InputError(
                    source,
                    f"collection {name!r} was not built by ragtui index; choose another --collection (or --replace to drop it and index again)",
                )
            if props.get(PROP_MODEL) != model:
                raise InputError(
                    source,
                    f"collection {name!r} was built with model {props.get(PROP_MODEL)!r}, not {model!r}; choose another --collection, or --replace",
                )
            if props.get(PROP_CHUNKS) != fingerprint:
                raise InputError(
                    source,
                    f"collection {name!r} was built from other chunks ({props.get(PROP_COUNT)} chunks, fingerprint "
                    f"{str(props.get(PROP_CHUNKS))[:12]}, these {len(chunks)} chunks have {fingerprint[:12]}); "
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
            props = {
                PROP_LAYOUT: LAYOUT_VERSION,
                PROP_CHUNKS: fingerprint,
                PROP_COUNT: str(len(chunks)),
                PROP_MODEL: model,
                PROP_DIM: str(dim),
                PROP_COMPLETE: "false",
            }
            _create(client, name, dim, props, index_type, k1, b)
            created = True
        else:
            stored = _properties(client, name).get(PROP_DIM)
            if stored is not None and int(stored) != dim:
                raise InputError(
                    source, f"collection {name!r} holds {stored}-dim vectors, not {dim}"
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
    return _Fields(id_field, text, doc, vector, sparse, metric)


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
        self._client: Any = None
        self._fields: _Fields | None = None
        self._embedder: Any = None
        self._cache: Any = None

    def _ready(self) -> tuple[Any, _Fields]:
        """Connect, load the collection and find its fields (once)."""
        if self._client is None or self._fields is None:
            try:
                client = connect(self.target.uri)
            except InputError as exc:
                raise LiveError(exc.problem) from None
            name = self.target.collection
            try:
                if not client.has_collection(name):
                    raise LiveError(
                        f"{self.target.uri}: no collection {name!r} (build it with ragtui index --milvus {self.target.uri} --collection {name})"
                    )
                client.load_collection(name)
                fields = resolve_fields(client, name, self.target.overrides)
            except LiveError:
                _close(client)
                raise
            except Exception as exc:
                _close(client)
                raise LiveError(f"{self.target.uri}: {_reason(exc)}") from None
            need = {"bm25": ("sparse",), "vector": ("vector",), "hybrid": ("sparse", "vector")}
            for role in need[self.kind]:
                if getattr(fields, role) is None:
                    _close(client)
                    raise LiveError(
                        f"collection {name!r}: no {role} field found for {self.name}; name it with --milvus-field {role}=FIELD"
                    )
            self._client, self._fields = client, fields
        return self._client, self._fields

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
        """What a saved run's manifest records."""
        return {
            "kind": "milvus",
            "uri": self.target.uri,
            "collection": self.target.collection,
            "search": self.kind,
            "model": self.model if self.kind != "bm25" else None,
        }

    def _embed(self, questions: Sequence[str]) -> list[list[float]]:
        from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache

        if self._embedder is None:
            # Read once: questions embedded before (the vector retriever did) are not encoded again.
            self._embedder = Embedder(self.model)
            self._cache = EmbeddingCache(self.model, self.cache_root)
        vectors = self._cache.embed(list(questions), self._embedder)
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
