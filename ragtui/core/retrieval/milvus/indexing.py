"""``ragtui index``: chunks written into a Milvus collection, resumably.

``index_collection`` writes each chunk's id, document, text and cached embedding, and Milvus computes
the BM25 sparse vector from the text itself (a BM25 function, Milvus's full-text search). It writes
in batches, asks which ids of a batch are already there before writing it (so a run that was stopped
resumes where it was), and stores the collection's record (``CollectionRecord``) in its properties:
a collection built from other chunks or another model is refused, not mixed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.errors import InputError
from ragtui.core.retrieval.milvus.connection import (
    MilvusTarget,
    check_target,
    close_client,
    connect,
    properties,
    reason,
)
from ragtui.core.retrieval.milvus.record import (
    PROP_COMPLETE,
    PROP_COUNT,
    PROP_DIM,
    PROP_MODEL,
    CollectionRecord,
)

__all__ = ["MAX_ID_BYTES", "MAX_TEXT_BYTES", "IndexResult", "Progress", "index_collection"]

#: Milvus's VARCHAR limit, in bytes of UTF-8.
MAX_TEXT_BYTES = 65535
MAX_ID_BYTES = 1024

#: Called as ``progress(done, total)``.
Progress = Callable[[int, int], None]


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
            props = properties(client, name)
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
            dim = int(properties(client, name).get(PROP_DIM, "0"))
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
            stored_dim = properties(client, name).get(PROP_DIM)
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
        raise InputError(source, f"Milvus collection {name!r}: {reason(exc)}") from None
    finally:
        close_client(client)
    return IndexResult(
        target.uri, name, len(chunks), written, already, created, time.perf_counter() - started, dim
    )
