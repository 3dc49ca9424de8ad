"""What the vector retriever reads of each chunk, for the ``cut-off`` cause.

Whether the vector retriever read a span of a chunk is asked of a :class:`ReadSpans`: a vector
retriever that reads long chunks through windows provides ``read_spans`` itself; long-chunk
windows the workspace embedded are read through :class:`WindowSpans`; otherwise
:class:`FirstTokens` applies today's rule, the first ``max_seq_length`` less special tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragtui.core.data.tokenizer import model_limit, token_counter
from ragtui.core.workspace import Workspace

__all__ = ["FirstTokens", "ReadSpans", "WindowSpans", "chunk_index", "vector_coverage"]


def chunk_index(ws: Workspace, cid: str) -> int | None:
    """The row of one of ragtui's chunks in the chunk arrays (BM25 scores, embeddings, windows), or
    None for any other id: a live retriever's own passage (kept in the chunk order after ragtui's
    chunks), a document id, an id ragtui does not know."""
    index = ws.passages.order.get(cid)
    if index is None or index >= len(ws.data.chunks) or ws.data.chunks[index].id != cid:
        return None
    return index


@runtime_checkable
class ReadSpans(Protocol):
    """What a vector retriever reads of each chunk: (start, end) offsets in the chunk's text."""

    def read_spans(self, chunk_id: str) -> Sequence[tuple[int, int]] | None:
        """The spans of the chunk's text the embedding covers; None when that is unknown."""
        ...


class FirstTokens:
    """Today's rule: the model reads the first ``max_seq_length`` tokens less its special tokens."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._counter = token_counter(ws.settings.model)
        limit = model_limit(ws.settings.model, self._counter)
        #: Tokens of text the model reads; None when the model's limit is unknown.
        self.tokens = limit.content_tokens if limit is not None else None
        self._spans: dict[str, tuple[tuple[int, int], ...] | None] = {}

    def read_spans(self, chunk_id: str) -> Sequence[tuple[int, int]] | None:
        """``[(0, offset of the first unread token)]``, or the whole text when it fits."""
        if chunk_id not in self._spans:
            index = chunk_index(self._ws, chunk_id)
            if index is None or self.tokens is None:
                # Not one of ragtui's chunks: the vector retriever never read it.
                self._spans[chunk_id] = None
            else:
                chunk = self._ws.data.chunks[index]
                offsets = self._counter.offsets(chunk.text)
                end = offsets[self.tokens][0] if self.tokens < len(offsets) else len(chunk.text)
                self._spans[chunk_id] = ((0, end),)
        return self._spans[chunk_id]


class WindowSpans:
    """Long-chunk windows: the model reads each window whole, so a chunk is read where its windows lie."""

    def __init__(self, ws: Workspace) -> None:
        assert ws.ranked.windows is not None
        self._spans = ws.ranked.windows.spans
        self._ws = ws

    def read_spans(self, chunk_id: str) -> Sequence[tuple[int, int]] | None:
        """The chunk's windows' character spans (None for an id that is not one of ragtui's chunks)."""
        index = chunk_index(self._ws, chunk_id)
        return None if index is None or index >= len(self._spans) else self._spans[index]


def vector_coverage(ws: Workspace) -> ReadSpans:
    """What the workspace's vector retriever reads: its own ``read_spans`` if it has one, the
    long-chunk windows it embedded if any, else the first tokens the model reads."""
    if isinstance(ws.ranked.vector, ReadSpans):
        return ws.ranked.vector
    if ws.ranked.windows is not None and ws.ranked.windows.plan is not None:
        return WindowSpans(ws)
    return FirstTokens(ws)
