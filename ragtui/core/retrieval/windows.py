"""Windows for long chunks (multi-representation indexing): a chunk longer than the embedding model
reads is embedded as several overlapping token windows, and scored by its best window (or the mean).

A window holds at most the model's content tokens (``max_seq_length`` less its special tokens: 254
for the bundled all-MiniLM-L6-v2) and windows start every ``stride`` tokens (default: half a window,
so every token is read twice and any passage of up to half a window lies wholly inside one); the
last window ends at the chunk's end. Windows are cut at the tokenizer's token offsets, so each is an
exact character span of the chunk. A chunk that fits is its own single window, so its text (and its
cached embedding) is the same as without windows. Window texts are embedded and cached like any
text: the embedding cache is keyed by the text's content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.tokenizer import ModelLimit, TokenCounter
from ragtui.core.errors import InputError

#: ``--windows``: score a chunk by its best window (``max``), by the mean over its windows, or
#: embed only what the model reads of each chunk (``off``).
WINDOW_MODES = ("max", "mean", "off")
DEFAULT_WINDOWS = "max"
#: Tokens of room below the window length under which a chunk's stored count is trusted as fitting.
_MARGIN = 8


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """How long chunks are cut: windows of ``length`` content tokens starting every ``stride`` tokens, pooled by ``mode``."""

    mode: str
    length: int
    stride: int

    def describe(self) -> str:
        """``windows of 254 tokens, stride 127, best window``."""
        how = "best window" if self.mode == "max" else "mean over windows"
        return f"windows of {self.length} tokens, stride {self.stride}, {how}"


def window_plan(mode: str, stride: int | None, limit: ModelLimit | None) -> WindowPlan | None:
    """The windows for a model's limit; None when windows are off or the limit is unknown.

    A stride larger than the window would leave text between windows unread: InputError.
    """
    if mode not in WINDOW_MODES:
        raise InputError(None, f"--windows: {mode!r} is not one of {', '.join(WINDOW_MODES)}")
    if mode == "off" or limit is None or limit.content_tokens < 1:
        return None
    length = limit.content_tokens
    step = stride if stride is not None else max(1, length // 2)
    if step > length:
        raise InputError(
            None,
            f"--window-stride {step} is over the model's window of {length} tokens: "
            "text between windows would never be read",
        )
    return WindowPlan(mode, length, step)


def token_windows(
    text: str, counter: TokenCounter, length: int, stride: int
) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of ``text``'s windows: at most ``length`` tokens each,
    starting every ``stride`` tokens, the last one ending at the text's end; one span when it fits."""
    offsets = counter.offsets(text)
    if len(offsets) <= length:
        return [(0, len(text))]
    starts = list(range(0, len(offsets) - length + 1, stride))
    if starts[-1] + length < len(offsets):
        starts.append(len(offsets) - length)
    spans = []
    for first in starts:
        last = min(first + length, len(offsets)) - 1
        start = offsets[first][0]
        end = len(text) if last == len(offsets) - 1 else offsets[last][1]
        # A window cut inside a word re-tokenizes a little differently; shrink until the model reads it whole.
        while last > first and counter.count(text[start:end]) > length:
            last -= 1
            end = offsets[last][1]
        spans.append((start, end))
    return spans


@dataclass(frozen=True)
class ChunkWindows:
    """Every chunk's windows, in chunk order: the texts to embed and the first row of each chunk."""

    plan: WindowPlan | None
    spans: list[list[tuple[int, int]]]
    """Per chunk, its windows' character spans within the chunk text."""
    texts: list[str]
    """Every window's text, chunk after chunk."""
    first_rows: np.ndarray
    """The row of each chunk's first window (``texts`` from there to the next chunk's are its windows)."""

    @property
    def windowed(self) -> int:
        """Chunks read as more than one window."""
        return sum(1 for s in self.spans if len(s) > 1)


def needs_tokens(chunk: Chunk, plan: WindowPlan) -> bool:
    """Whether cutting the chunk's windows needs its tokens: not when its stored count fits with
    room to spare (its text re-tokenized may differ by a word piece at either end; BEIR documents
    and whole files, never counted, say -1)."""
    return not 0 <= chunk.token_count <= plan.length - _MARGIN


def chunk_windows(
    chunks: Sequence[Chunk],
    counter: TokenCounter,
    plan: WindowPlan | None,
    known: Mapping[int, list[tuple[int, int]]] | None = None,
) -> ChunkWindows:
    """The windows of every chunk under ``plan`` (one window, the chunk itself, for each when None);
    ``known``: the spans of some chunks by their position, already cut (the window cache's), so
    only the others are tokenized."""
    spans: list[list[tuple[int, int]]] = []
    texts: list[str] = []
    first_rows = np.zeros(len(chunks), dtype=np.int64)
    for i, chunk in enumerate(chunks):
        first_rows[i] = len(texts)
        if plan is None or not needs_tokens(chunk, plan):
            own = [(0, len(chunk.text))]
        elif known is not None and i in known:
            own = known[i]
        else:
            own = token_windows(chunk.text, counter, plan.length, plan.stride)
        spans.append(own)
        texts.extend(chunk.text[a:b] for a, b in own)
    return ChunkWindows(plan, spans, texts, first_rows)
