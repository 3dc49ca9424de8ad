"""App-level messages: what the loading worker reports to the app (data goes up, never widgets)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from textual.message import Message

from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.workspace import Workspace


@dataclass
class WorkspaceLoaded(Message):
    """The corpus is chunked, the golden set and labels read and BM25 built: the app can show them."""

    workspace: Workspace
    """The loaded workspace (BM25 rankings and evaluation ready; vectors not yet)."""
    generation: int
    """The load this result belongs to; results of older loads are dropped."""
    vectors: VectorsReady | None = None
    """The vector and hybrid rankings too, when the embedding cache had every text (no wait)."""


@dataclass
class LoadFailed(Message):
    """Loading the corpus or golden set failed: a one-line message for the user."""

    message: str
    """What went wrong, naming the file and line where known."""
    generation: int
    """The load this result belongs to."""


@dataclass
class EmbeddingProgress(Message):
    """How far embedding has come; a newer update replaces a queued one."""

    generation: int
    """The load this progress belongs to."""
    done: int
    """Texts embedded so far."""
    total: int
    """Texts to embed (0 while the model is loading and nothing is known yet)."""

    def can_replace(self, message: Message) -> bool:
        """A newer progress report of the same load supersedes a queued one."""
        return isinstance(message, EmbeddingProgress) and message.generation == self.generation


@dataclass
class VectorsReady(Message):
    """Embeddings are done: the vector and hybrid rankings, computed off the UI thread."""

    generation: int
    """The load this result belongs to."""
    rankings: dict[str, dict[str, Ranking]]
    """``vector`` (and ``hybrid`` when chosen) rankings by question id."""
    vector: VectorRetriever | None
    """The vector retriever (for searches beyond the golden set)."""
    hybrid: HybridRetriever | None
    """The hybrid retriever, when chosen."""
    question_vectors: dict[str, np.ndarray]
    """Each golden question's embedding."""
    embedder: object | None = None
    """The embedder used, kept so a reload does not load the model again."""
    warnings: list[str] = field(default_factory=list)
    """Problems that did not stop embedding (an embedding cache that was rebuilt)."""


@dataclass
class VectorsFailed(Message):
    """Embedding failed (the model could not be loaded): vector and hybrid are unavailable, BM25 works."""

    generation: int
    """The load this result belongs to."""
    message: str
    """What went wrong, for the user."""
