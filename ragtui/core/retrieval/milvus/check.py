"""The check that a Milvus collection holds the workspace's chunks (and vectors cut as its windows)
before the Milvus retrievers search it (``check_collection``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.errors import InputError
from ragtui.core.retrieval.live_base import LiveError
from ragtui.core.retrieval.milvus.connection import close_client, connect, properties
from ragtui.core.retrieval.milvus.record import (
    CollectionRecord,
    mismatch,
    windows_label,
)
from ragtui.core.retrieval.milvus.search import MilvusRetriever, resolve_fields
from ragtui.core.retrieval.windows import DEFAULT_WINDOWS, window_plan

__all__ = ["check_collection"]


def check_collection(
    live: Mapping[str, object],
    chunks: Sequence[Chunk],
    model: str,
    *,
    documents: Sequence[Document],
    chunk_size: int | None,
    overlap: int,
    chunks_file: str | Path | None,
    windows: str = DEFAULT_WINDOWS,
    window_stride: int | None = None,
) -> list[str]:
    """Refuse (InputError, one line naming what differs) the collection the Milvus retrievers in
    ``live`` would search when ``ragtui index`` built it from other chunks than the workspace's
    (``chunks``, made from ``documents`` with this chunking) or, for ``milvus-vector`` and
    ``milvus-hybrid``, with another model or other windows (``windows``, ``window_stride``: the
    workspace's ``--windows`` and ``--window-stride``); or when that index was stopped before it
    finished. Nothing is done (or computed) without a Milvus retriever.

    Each retriever is given the workspace's chunk order (ties) and pooling (``max`` or ``mean``).

    Returns the warnings to show: a collection ragtui did not build has no record, so it cannot be
    checked (a team's own collection is searched all the same). Each Milvus retriever keeps the
    record and checks again when it first connects, so a Milvus that cannot be reached now is left
    to the retrievers to report (each fails with the reason, as any live retriever).
    """
    retrievers = [r for r in live.values() if isinstance(r, MilvusRetriever)]
    if not retrievers:
        return []
    searcher = next((r for r in retrievers if r.kind != "bm25"), None)  # reads the vectors
    label = ""
    pooling = windows if windows != "off" else None
    if searcher is not None:
        plan = _workspace_plan(windows, window_stride, model)
        label = windows_label(plan) if plan is not False else ""
    wanted = CollectionRecord.of(
        chunks,
        model,
        documents=documents,
        chunk_size=chunk_size,
        overlap=overlap,
        chunks_file=chunks_file,
        windows=label,
    )
    order = {c.id: i for i, c in enumerate(chunks)}
    for retriever in retrievers:
        retriever.expected = wanted
        retriever.chunk_order = order
        retriever.pooling = pooling
    first = retrievers[0]
    target = first.target
    name = target.collection
    try:
        client = connect(target.uri, log_root=first.cache_root)
    except InputError:
        if target.is_lite:
            raise  # a local file (locked by another process, unreadable): bad input, said once
        return []  # a server that cannot be reached: each retriever says so, as any live one
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


def _workspace_plan(windows: str, stride: int | None, model: str) -> Any:
    """The workspace's windows for ``model`` (None: off), or False when the model's limit cannot
    be read here (its tokenizer not found: loading the model says why)."""
    from ragtui.core.data.tokenizer import model_limit

    if windows == "off":
        return None
    try:
        limit = model_limit(model)
    except InputError:
        return False
    return window_plan(windows, stride, limit)
