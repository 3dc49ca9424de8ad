"""Searching a Milvus collection as ``milvus-bm25``, ``milvus-vector`` and ``milvus-hybrid`` (Milvus's
RRF ranker over both), and the check that it holds the workspace's chunks before it is searched.

A team's own collection works too: the fields are found from the schema (the primary key, the one
float-vector field, the BM25 function's output and input) and any can be named explicitly with
``--milvus-field ROLE=FIELD`` (roles: id, text, doc, vector, sparse).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.retrieval.live_base import LiveError
from ragtui.core.retrieval.milvus.connection import (
    MilvusTarget,
    check_target,
    close_client,
    connect,
    properties,
    reason,
    require_milvus,
)
from ragtui.core.retrieval.milvus.record import PROP_CHUNKS, CollectionRecord, mismatch
from ragtui.core.text import mask_url

__all__ = ["MilvusRetriever", "check_collection", "resolve_fields"]


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
                props = properties(client, name)
                model = self.model if self.kind != "bm25" else None
                problem = mismatch(name, props, self.expected, model)
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
                close_client(client)
                raise
            except InputError as exc:
                close_client(client)
                raise LiveError(exc.message) from None
            except Exception as exc:
                close_client(client)
                raise LiveError(f"{self.target.uri}: {reason(exc)}") from None
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
        props = properties(client, name)
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
            raise LiveError(f"{self.target.uri} {name}: {reason(exc)}") from None
        return [self._hits(list(rows), fields, self.kind) for rows in found]

    def search(self, question: str, depth: int) -> list[Hit]:
        """One question."""
        return self.search_batch([question], depth)[0]

    def close(self) -> None:
        """Close the connection (Lite's server stops at exit)."""
        if self._client is not None:
            close_client(self._client)
            self._client = None


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
        props = properties(client, name)
        fields = resolve_fields(client, name, target.overrides) if searcher else None
    except Exception:
        return []  # as above: a failure to read it is each retriever's to report
    finally:
        close_client(client)
    problem = mismatch(name, props, wanted, searcher.model if searcher else None)
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
