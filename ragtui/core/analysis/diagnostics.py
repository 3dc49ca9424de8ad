"""Chunking diagnostics: what the chunk size does to the golden set and to the vector retriever.

* evidence that straddles a chunk boundary (in a document, in no single chunk: the evidence rule
  cannot find it; a problem, reported by ``ragtui check`` since before);
* evidence that matches several chunks (allowed: each is relevant; information);
* chunks longer than the embedding model reads: the model keeps ``max_seq_length`` tokens
  including its special tokens ([CLS] and [SEP] for BERT models), so the tail after
  ``max_seq_length - specials`` content tokens is invisible to the vector retriever (information),
  and evidence that sits in such a tail (information, but worth a look);
* a histogram of chunk token counts;
* with windows (``--windows``, on by default), what they change: how many long chunks are read as
  several windows, and which evidence strings of a cut-off tail no single window holds whole
  (longer than what one window and its overlap cover); every token of a windowed chunk is read.

The model's limit is read from its folder's ``sentence_bert_config.json`` without importing torch.
Nothing here prints; ``ragtui.core.analysis.reports.diagnostics_report`` makes the report of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.data.golden import (
    EvidenceIndex,
    Question,
    evidence_spans,
    normalize_ws,
    straddling_pairs,
)
from ragtui.core.data.tokenizer import ModelLimit, model_limit, token_counter
from ragtui.core.retrieval.windows import WindowPlan, token_windows, window_plan

__all__ = [
    "ModelLimit",
    "model_limit",
]  # re-exported: the model's limit moved to the tokenizer module

if TYPE_CHECKING:
    from ragtui.core.workspace import Workspace

#: The histogram has at most this many bins (their width is a power of two).
MAX_BINS = 10


@dataclass(frozen=True, slots=True)
class TruncatedChunk:
    """A chunk longer than the model reads; text from ``visible_end`` (a document offset) on is cut off."""

    chunk: str
    doc: str
    token_count: int
    content_tokens: int
    visible_end: int

    @property
    def hidden_tokens(self) -> int:
        """Tokens the vector retriever never sees."""
        return self.token_count - self.content_tokens


@dataclass(frozen=True, slots=True)
class HiddenEvidence:
    """Evidence of a question that lies (partly or wholly) in the cut-off tail of a truncated chunk."""

    question: str
    line: int
    evidence: str
    chunk: str
    wholly_hidden: bool


@dataclass(frozen=True, slots=True)
class MultiMatch:
    """An evidence string found in several chunks (allowed: every one of them is relevant)."""

    question: str
    line: int
    evidence: str
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Straddle:
    """An evidence string found in a document but in no single chunk, and the neighbouring chunk pairs it spans.

    ``pairs`` is empty when it spans more than two chunks.
    """

    question: str
    line: int
    evidence: str
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class HistogramBin:
    """Chunks with ``low <= token count <= high``; ``over`` of them exceed the mark (the model's limit)."""

    low: int
    high: int
    count: int
    over: int = 0


@dataclass(frozen=True, slots=True)
class WindowCoverage:
    """What windows do to the long chunks: how many are read as several windows, and the evidence of
    a cut-off tail that no single window holds whole."""

    plan: WindowPlan
    windowed: int
    """Chunks read as more than one window."""
    windows: int
    """The windows of those chunks."""
    split: list[HiddenEvidence]
    """Evidence strings (of ``hidden_evidence``) not wholly inside any one window."""


@dataclass(frozen=True, slots=True)
class ChunkDiagnostics:
    """Every chunking diagnostic of one workspace."""

    limit: ModelLimit | None
    token_counts: dict[str, int]
    histogram: list[HistogramBin]
    truncated: list[TruncatedChunk]
    hidden_evidence: list[HiddenEvidence]
    multi_match: list[MultiMatch]
    straddling: list[Straddle]
    windows: WindowCoverage | None = None
    """None when windows are off (or the model's limit is unknown)."""


# ---- the diagnostics -----------------------------------------------------------------------------


def token_histogram(
    counts: Sequence[int], mark: int | None = None, max_bins: int = MAX_BINS
) -> list[HistogramBin]:
    """Counts in equal bins from 0, the bin width the smallest power of two giving at most ``max_bins`` bins.

    Each bin also counts its values above ``mark`` (the model's limit), if given.
    """
    if not counts:
        return []
    top = max(counts)
    width = 1
    while (top // width) + 1 > max_bins:
        width *= 2
    bins = [0] * (top // width + 1)
    over = [0] * len(bins)
    for n in counts:
        bins[n // width] += 1
        if mark is not None and n > mark:
            over[n // width] += 1
    return [HistogramBin(i * width, (i + 1) * width - 1, c, over[i]) for i, c in enumerate(bins)]


def histogram_bars(bins: Sequence[HistogramBin], bar_width: int = 40) -> list[str]:
    """A text bar per bin (``#`` repeated in proportion to its count, the fullest bin ``bar_width`` long)."""
    most = max((b.count for b in bins), default=0) or 1
    bars = []
    for b in bins:
        bar = "#" * (round(b.count / most * bar_width) if b.count else 0)
        bars.append(bar or ("#" if b.count else ""))
    return bars


def diagnose(ws: Workspace) -> ChunkDiagnostics:
    """Every chunking diagnostic of a loaded workspace (no embedding needed)."""
    return diagnose_chunks(
        ws.settings.model,
        ws.data.chunks,
        ws.questions,
        ws.data.corpus.documents,
        ws.settings.windows,
        ws.settings.window_stride,
        ws.ranked.window_plan,
    )


def diagnose_chunks(
    model: str,
    chunks: Sequence[Chunk],
    questions: Sequence[Question],
    documents: Sequence[Document],
    windows: str = "off",
    window_stride: int | None = None,
    plan: WindowPlan | None = None,
) -> ChunkDiagnostics:
    """Every chunking diagnostic of these chunks, questions and documents for embedding model ``model``
    (with ``windows``: what long-chunk windows of that stride, or ``plan``, change).

    Reads only its arguments (frozen chunks, questions and documents), so it may run in a worker
    thread on tuples captured from a workspace that changes meanwhile.
    """
    counter = token_counter(model)
    whole = [c for c in chunks if c.token_count < 0]  # documents as chunks (BEIR without a size)
    measured = (
        dict(zip([c.id for c in whole], counter.count_batch([c.text for c in whole]), strict=True))
        if whole
        else {}
    )
    counts = {c.id: measured.get(c.id, c.token_count) for c in chunks}
    limit = model_limit(model, counter)

    plan = plan or window_plan(windows, window_stride, limit)
    truncated: list[TruncatedChunk] = []
    cut_at: dict[str, int] = {}  # chunk id -> offset in the chunk text where the hidden tail starts
    window_spans: dict[str, list[tuple[int, int]]] = {}
    if limit is not None:
        for c in chunks:
            if counts[c.id] > limit.content_tokens:
                offsets = counter.offsets(c.text)
                tail = (
                    offsets[limit.content_tokens][0]
                    if limit.content_tokens < len(offsets)
                    else len(c.text)
                )
                cut_at[c.id] = tail
                if plan is not None:
                    window_spans[c.id] = token_windows(c.text, counter, plan.length, plan.stride)
                truncated.append(
                    TruncatedChunk(c.id, c.doc, counts[c.id], limit.content_tokens, c.start + tail)
                )

    text_of = {c.id: c.text for c in chunks}
    index = EvidenceIndex(list(text_of), list(text_of.values()))
    multi: list[MultiMatch] = []
    straddling: list[Straddle] = []
    hidden: list[HiddenEvidence] = []
    split: list[HiddenEvidence] = []
    for q in questions:
        for evidence in q.evidence:
            matches = index.matching_chunks([evidence])
            if len(matches) > 1:
                multi.append(MultiMatch(q.id, q.line, evidence, tuple(matches)))
            if not matches and any(
                normalize_ws(evidence) in normalize_ws(d.text) for d in documents
            ):
                pairs = straddling_pairs(documents, chunks, evidence)
                straddling.append(Straddle(q.id, q.line, evidence, tuple(pairs)))
            for cid in matches:
                if cid not in cut_at:
                    continue
                spans = evidence_spans(text_of[cid], [evidence])
                if spans and all(end > cut_at[cid] for _, end in spans):
                    wholly = all(start >= cut_at[cid] for start, _ in spans)
                    found = HiddenEvidence(q.id, q.line, evidence, cid, wholly)
                    hidden.append(found)
                    if plan is not None and not any(
                        a <= start and end <= b
                        for start, end in spans
                        for a, b in window_spans[cid]
                    ):
                        split.append(found)
    return ChunkDiagnostics(
        limit=limit,
        token_counts=counts,
        histogram=token_histogram(list(counts.values()), limit.content_tokens if limit else None),
        truncated=truncated,
        hidden_evidence=hidden,
        multi_match=multi,
        straddling=straddling,
        windows=WindowCoverage(
            plan,
            sum(1 for w in window_spans.values() if len(w) > 1),
            sum(len(w) for w in window_spans.values() if len(w) > 1),
            split,
        )
        if plan is not None and limit is not None
        else None,
    )
