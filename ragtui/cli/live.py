"""``ragtui index``: the chunks, their embeddings and a BM25 function written into a Milvus collection."""

from __future__ import annotations

from ragtui.cli.output import load_workspace, out, rich_progress, warn_all
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.errors import InputError
from ragtui.core.retrieval.milvus import (
    CollectionRecord,
    MilvusTarget,
    index_collection,
    require_milvus,
)
from ragtui.core.retrieval.milvus.record import windows_label
from ragtui.core.retrieval.window_cache import cached_chunk_windows
from ragtui.core.settings import Settings
from ragtui.core.text import mask_url


def run_index(
    settings: Settings, *, batch: int = 512, replace: bool = False, vector_index: str = "FLAT"
) -> int:
    """Index the chunked corpus (or ``--chunks``) into ``--milvus URI --collection NAME``; resumable."""
    # Without the milvus extra nothing here can run: said first, before the corpus is read.
    require_milvus(settings.milvus is None or MilvusTarget(settings.milvus, "").is_lite)
    if settings.milvus is None or settings.collection is None:
        raise InputError(None, "index needs --milvus URI and --collection NAME")
    # Only the chunks are needed: no retriever is built or asked.
    ws = load_workspace(_chunks_only(settings))
    target = MilvusTarget(settings.milvus, settings.collection, settings.milvus_fields)
    bm25_k1, bm25_b = 1.5, 0.75
    # The vectors as the vector retriever embeds them: one per window (windows on), else per chunk.
    plan = ws.ranked.window_plan
    windows, window_warnings = cached_chunk_windows(
        ws.data.chunks, token_counter(settings.model), plan, settings.cache_dir
    )
    warn_all(window_warnings)
    # What the chunks were made from, kept in the collection: a search from other data is refused.
    record = CollectionRecord.of(
        ws.data.chunks,
        settings.model,
        documents=ws.data.corpus.documents,
        chunk_size=settings.chunk_size,
        overlap=settings.overlap,
        chunks_file=settings.chunks,
        windows=windows_label(plan),
    )
    result = index_collection(
        target,
        ws.data.chunks,
        settings.model,
        windows=windows,
        cache_root=settings.cache_dir,
        embed_progress=rich_progress("embedding"),
        write_progress=rich_progress("writing", "rows"),
        batch=batch,
        replace=replace,
        index_type=vector_index,
        k1=bm25_k1,
        b=bm25_b,
        record=record,
    )
    warn_all(result.warnings)
    unit = "windows" if plan is not None else "chunks"
    cut = plan.describe() if plan is not None else "one vector per chunk (--windows off)"
    if result.written == 0 and not result.created:
        out(
            f"{result.collection}: already holds these {result.chunks} chunks ({settings.model}, "
            f"{cut}); nothing encoded or written"
        )
    else:
        out(
            f"{result.collection}: encoded {result.encoded} of {result.vectors} {unit}; "
            f"{result.vectors - result.encoded} from the embedding cache"
        )
        resumed = f", {result.already} were already there" if result.already else ""
        rows = (
            f" and {result.windows_written} of {result.windows} windows into "
            f"{result.windows_collection}"
            if plan is not None
            else ""
        )
        out(
            f"{result.collection}: wrote {result.written} of {result.chunks} chunks{resumed}{rows} "
            f"({result.dim}-dim {settings.model} embeddings, {cut}; BM25 k1={bm25_k1} b={bm25_b}) "
            f"in {result.seconds:.1f} s to {mask_url(result.uri)}"
        )
    return 0


def _chunks_only(settings: Settings) -> Settings:
    """The settings with only BM25-free loading: no built-in or live retriever is built."""
    from dataclasses import replace

    return replace(settings, retrievers=("vector",), live_retrievers=(), milvus=None)
