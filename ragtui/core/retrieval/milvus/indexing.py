"""``ragtui index``: chunks written into a Milvus collection, resumably.

``index_collection`` writes each chunk's id, document and text, and Milvus computes the BM25
sparse vector from the text itself (a BM25 function, Milvus's full-text search). The vectors are
what the built-in vector retriever embeds: with windows off one per chunk, in the same rows; with
windows on one per window, as rows of a second collection (``NAME_windows``: the row number, the
chunk id, the window's number, the chunk's window count, its document and the vector), so that
``milvus-vector`` can search them grouped by chunk. The windows are not rows of the chunks
collection because Milvus's BM25 counts every row as a document: window rows would change N, the
document frequencies and the average length, and ``milvus-bm25`` would no longer rank as BM25 does.

The vectors come from ragtui's embedding cache (the one ``ragtui eval`` fills, keyed by model and
text): only what it lacks is encoded, and ``IndexResult.encoded`` says how many. It writes in
batches, asks which rows of a batch are already there before writing it (so a run that was stopped
resumes where it was), and stores the collection's record (``CollectionRecord``) in its
properties: a collection built from other chunks, another model or other windows is refused, not
mixed.
"""

from __future__ import annotations

import dataclasses
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
    LAYOUT_VERSION,
    PROP_CHUNKS,
    PROP_COMPLETE,
    PROP_COUNT,
    PROP_DIM,
    PROP_LAYOUT,
    PROP_MODEL,
    PROP_POOLING,
    PROP_ROLE,
    PROP_WINDOW_MAX,
    PROP_WINDOW_ROWS,
    PROP_WINDOWS,
    PROP_WINDOWS_COLLECTION,
    CollectionRecord,
    windows_collection_name,
    windows_label,
)
from ragtui.core.retrieval.windows import ChunkWindows

__all__ = [
    "MAX_ID_BYTES",
    "MAX_TEXT_BYTES",
    "IndexResult",
    "Progress",
    "index_collection",
]

#: Milvus's VARCHAR limit, in bytes of UTF-8.
MAX_TEXT_BYTES = 65535
MAX_ID_BYTES = 1024
#: Milvus's limit on a collection name's length.
MAX_NAME = 255

#: Called as ``progress(done, total)``.
Progress = Callable[[int, int], None]


def _quoted(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    escaped = escaped.replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


@dataclass(frozen=True)
class IndexResult:
    """What ``index_collection`` did: chunk rows written (and already there), window rows written
    (with windows on), and how many vectors were encoded rather than read from the embedding cache."""

    uri: str
    collection: str
    chunks: int
    written: int
    already: int
    created: bool
    seconds: float
    dim: int
    #: Vectors the collection holds: one per window with windows on, else one per chunk.
    vectors: int = 0
    #: Of ``vectors``, how many had no cached embedding and were encoded now.
    encoded: int = 0
    #: Window rows (0 with windows off) and how many of them this run wrote.
    windows: int = 0
    windows_written: int = 0
    #: The collection of the window rows ("" with windows off).
    windows_collection: str = ""
    #: Why the embedding cache could not be used or written, for the user to see.
    warnings: tuple[str, ...] = ()


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


def _vector_index(index: Any, index_type: str) -> None:
    # Unit-length embeddings: inner product is the cosine, as the built-in exact search computes.
    params: dict[str, Any] = {}
    if index_type == "HNSW":
        params = {"M": 16, "efConstruction": 200}
    index.add_index("vector", index_type=index_type, metric_type="IP", params=params)


def _create(
    client: Any,
    name: str,
    dim: int | None,
    props: dict[str, str],
    index_type: str,
    k1: float,
    b: float,
) -> None:
    """The chunks collection: id, doc, text and its BM25, and (``dim``: windows off) the vector."""
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES)
    schema.add_field("doc", DataType.VARCHAR, max_length=MAX_ID_BYTES)
    schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    if dim is not None:
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
    if dim is not None:
        _vector_index(index, index_type)
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


def _create_windows(
    client: Any, name: str, chunks_collection: str, dim: int, props: dict[str, str], index_type: str
) -> None:
    """The windows collection: one row per window (its row number the key), the chunk id a field."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("chunk", DataType.VARCHAR, max_length=MAX_ID_BYTES)
    schema.add_field("window", DataType.INT32)
    schema.add_field("windows", DataType.INT32)
    schema.add_field("doc", DataType.VARCHAR, max_length=MAX_ID_BYTES)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    index = client.prepare_index_params()
    _vector_index(index, index_type)
    client.create_collection(
        name,
        schema=schema,
        index_params=index,
        properties=props,
        description=f"ragtui index: the window vectors of {chunks_collection}",
    )


def _present(client: Any, name: str, filter_expr: str) -> set[Any]:
    return {r["id"] for r in client.query(name, filter=filter_expr, output_fields=["id"])}


def _window_rows(windows: ChunkWindows, chunks: Sequence[Chunk]) -> list[tuple[int, int, int]]:
    """Per window row: its chunk's index, its number within the chunk, the chunk's window count."""
    rows: list[tuple[int, int, int]] = []
    for i, spans in enumerate(windows.spans):
        rows.extend((i, w, len(spans)) for w in range(len(spans)))
    if len(rows) != len(windows.texts) or len(windows.spans) != len(chunks):
        raise ValueError("the windows are not these chunks'")
    return rows


def _embed(
    texts: list[str], model: str, cache_root: Path | None, progress: Progress | None
) -> tuple[np.ndarray, int, list[str]]:
    """The embeddings of ``texts`` from the embedding cache, encoding only what it lacks (the
    model, and sentence-transformers, are loaded only then); how many were encoded; its warnings."""
    from ragtui.core.retrieval.embeddings import EmbeddingCache, text_key

    cache = EmbeddingCache(model, cache_root)
    lacking = {text_key(t) for t in cache.missing(texts)}
    encoded = sum(1 for t in texts if text_key(t) in lacking) if lacking else 0
    vectors = cache.embed(texts, None, progress if lacking else None)
    return vectors, encoded, list(cache.warnings)


def _ours(props: dict[str, str], role: str) -> bool:
    return props.get(PROP_LAYOUT) is not None and props.get(PROP_ROLE, "chunks") == role


def index_collection(
    target: MilvusTarget,
    chunks: Sequence[Chunk],
    model: str,
    *,
    windows: ChunkWindows | None = None,
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
    """Write ``chunks`` (ids, documents, texts; BM25 computed by Milvus) and their vectors into a
    collection, resumably.

    ``windows`` are the chunks' windows as the vector retriever cuts them (``chunk_windows``): with
    a plan, one vector per window goes into the collection ``NAME_windows``; without (None, or
    windows off) one vector per chunk goes into the chunks' own rows. ``vectors`` are those
    embeddings when the caller has them (a benchmark); otherwise they come from the embedding
    cache of ``model``, and only texts it lacks are encoded (and cached). ``record`` says what the
    chunks were made from (``CollectionRecord.of`` with the documents and the chunking); it is kept
    in the collection's properties, so that a search from other chunks, another model or other
    windows is refused naming what differs. Without it only the chunks, the model and the windows
    are recorded.
    """
    started = time.perf_counter()
    if not chunks:
        raise InputError(None, "no chunks to index")
    source = target.uri
    check_target(target, create=True)
    _check_sizes(chunks, source)
    plan = windows.plan if windows is not None else None
    texts = list(windows.texts) if windows is not None else [c.text for c in chunks]
    rows = _window_rows(windows, chunks) if windows is not None and plan is not None else []
    label = windows_label(plan)
    if vectors is not None and vectors.shape[0] != len(texts):
        raise ValueError(f"one embedding per {'window' if rows else 'chunk'} is needed")
    if record is None:
        record = CollectionRecord.of(chunks, model, windows=label)
    elif not record.windows:
        record = dataclasses.replace(record, windows=label)
    elif record.windows != label:
        raise ValueError("the record names other windows than these")
    name = target.collection
    wname = windows_collection_name(name) if plan is not None else ""
    if len(wname) > MAX_NAME:
        raise InputError(
            None,
            f"--collection: {name[:40]!r}... is too long to name its windows collection "
            f"({wname[:20]}..._windows is over {MAX_NAME} characters); choose a shorter name",
        )
    client = connect(target.uri, create=True, log_root=cache_root)
    try:
        exists = client.has_collection(name)
        props = properties(client, name) if exists else {}
        windows_exists = bool(wname) and client.has_collection(wname)
        wprops = properties(client, wname) if windows_exists else {}
        if windows_exists and not _ours(wprops, "windows"):
            raise InputError(
                source,
                f"collection {wname!r} (where the windows of {name!r} go) was not built by ragtui "
                "index; choose another --collection",
            )
        if exists and replace:
            if _ours(props, "chunks"):
                old = props.get(PROP_WINDOWS_COLLECTION)
                if old and old != wname and client.has_collection(old):
                    client.drop_collection(old)
            client.drop_collection(name)
            exists, props = False, {}
        if windows_exists and (replace or not exists):
            client.drop_collection(wname)  # ours, left by a run stopped before the chunks were made
            windows_exists, wprops = False, {}
        complete = False
        if exists:
            stored = CollectionRecord.read(props)
            if stored is None:
                raise InputError(
                    source,
                    f"collection {name!r} was not built by ragtui index; choose another --collection (or --replace to drop it and index again)",
                )
            differences = (
                stored.chunk_differences(record)
                + stored.model_differences(model, record.model_files)
                + stored.window_differences(record)
            )
            if differences:
                raise InputError(
                    source,
                    f"collection {name!r} was built from other data ({'; '.join(differences)}); "
                    "choose another --collection, or --replace",
                )
            complete = props.get(PROP_COMPLETE) == "true"
        if complete:
            return IndexResult(
                target.uri,
                name,
                len(chunks),
                0,
                len(chunks),
                False,
                time.perf_counter() - started,
                int(props.get(PROP_DIM, "0")),
                vectors=len(texts),
                windows=len(rows),
                windows_collection=wname,
            )
        warnings: list[str] = []
        encoded = 0
        if vectors is None:
            vectors, encoded, warnings = _embed(texts, model, cache_root, embed_progress)
        dim = int(vectors.shape[1])
        stored_dim = props.get(PROP_DIM)
        if stored_dim is not None and int(stored_dim) != dim:
            raise InputError(
                source, f"collection {name!r} holds {stored_dim}-dim vectors, not {dim}"
            )
        created = False
        if not exists:
            chunk_props = record.properties(dim)
            if plan is not None:
                chunk_props.update(
                    {
                        PROP_WINDOWS_COLLECTION: wname,
                        PROP_WINDOW_ROWS: str(len(rows)),
                        PROP_WINDOW_MAX: str(max(n for _, _, n in rows)),
                        PROP_POOLING: plan.mode,
                    }
                )
            _create(
                client,
                name,
                None if plan is not None else dim,
                chunk_props,
                index_type,
                k1,
                b,
            )
            created = True
        if plan is not None and not windows_exists:
            _create_windows(
                client,
                wname,
                name,
                dim,
                {
                    PROP_LAYOUT: LAYOUT_VERSION,
                    PROP_ROLE: "windows",
                    PROP_CHUNKS: record.chunks,
                    PROP_COUNT: str(len(chunks)),
                    PROP_MODEL: model,
                    PROP_DIM: str(dim),
                    PROP_WINDOWS: label,
                    PROP_WINDOW_ROWS: str(len(rows)),
                },
                index_type,
            )
            created_windows = True
        else:
            created_windows = False
        client.load_collection(name)
        total = len(chunks) + len(rows)
        written = already = 0
        if write_progress:
            write_progress(0, total)
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            present: set[Any] = set()
            if not created:
                ids = ", ".join(_quoted(c.id) for c in part)
                present = {str(i) for i in _present(client, name, f"id in [{ids}]")}
            chunk_rows: list[dict[str, Any]] = []
            for i, c in enumerate(part):
                if c.id in present:
                    continue
                row: dict[str, Any] = {"id": c.id, "doc": c.doc, "text": c.text}
                if plan is None:
                    row["vector"] = vectors[start + i].astype(np.float32).tolist()
                chunk_rows.append(row)
            if chunk_rows:
                client.insert(name, chunk_rows)
            written += len(chunk_rows)
            already += len(part) - len(chunk_rows)
            if write_progress:
                write_progress(start + len(part), total)
        windows_written = 0
        if rows:
            client.load_collection(wname)
            for start in range(0, len(rows), batch):
                stop = min(start + batch, len(rows))
                done: set[Any] = set()
                if not created_windows:
                    done = {
                        int(i) for i in _present(client, wname, f"id >= {start} and id < {stop}")
                    }
                window_rows = [
                    {
                        "id": r,
                        "chunk": chunks[rows[r][0]].id,
                        "window": rows[r][1],
                        "windows": rows[r][2],
                        "doc": chunks[rows[r][0]].doc,
                        "vector": vectors[r].astype(np.float32).tolist(),
                    }
                    for r in range(start, stop)
                    if r not in done
                ]
                if window_rows:
                    client.insert(wname, window_rows)
                windows_written += len(window_rows)
                if write_progress:
                    write_progress(len(chunks) + stop, total)
            client.flush(wname)
        client.flush(name)
        client.alter_collection_properties(name, properties={PROP_COMPLETE: "true"})
    except InputError:
        raise
    except Exception as exc:
        raise InputError(source, f"Milvus collection {name!r}: {reason(exc)}") from None
    finally:
        close_client(client)
    return IndexResult(
        target.uri,
        name,
        len(chunks),
        written,
        already,
        created,
        time.perf_counter() - started,
        dim,
        vectors=len(texts),
        encoded=encoded,
        windows=len(rows),
        windows_written=windows_written,
        windows_collection=wname,
        warnings=tuple(warnings),
    )
