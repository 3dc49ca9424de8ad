"""Chunking diagnostics: what the chunk size does to the golden set and to the vector retriever.

* evidence that straddles a chunk boundary (in a document, in no single chunk: the evidence rule
  cannot find it; a problem, reported by ``ragtui check`` since before);
* evidence that matches several chunks (allowed: each is relevant; information);
* chunks longer than the embedding model reads: the model keeps ``max_seq_length`` tokens
  including its special tokens ([CLS] and [SEP] for BERT models), so the tail after
  ``max_seq_length - specials`` content tokens is invisible to the vector retriever (information),
  and evidence that sits in such a tail (information, but worth a look);
* a histogram of chunk token counts.

The model's limit is read from its folder's ``sentence_bert_config.json`` without importing torch.
Nothing here prints; ``ragtui.core.analysis.reports.diagnostics_report`` makes the report of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.data.golden import (
    EvidenceIndex,
    Question,
    evidence_spans,
    normalize_ws,
    straddling_pairs,
)
from ragtui.core.data.tokenizer import TokenCounter, resolve_model, token_counter

if TYPE_CHECKING:
    from ragtui.core.workspace import Workspace

#: The histogram has at most this many bins (their width is a power of two).
MAX_BINS = 10


@dataclass(frozen=True, slots=True)
class ModelLimit:
    """How many tokens the embedding model reads: ``max_seq_length`` including ``special_tokens``."""

    max_seq_length: int
    special_tokens: int
    source: str

    @property
    def content_tokens(self) -> int:
        """Tokens of text the model sees: max_seq_length minus its special tokens."""
        return max(0, self.max_seq_length - self.special_tokens)


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
class ChunkDiagnostics:
    """Every chunking diagnostic of one workspace."""

    limit: ModelLimit | None
    token_counts: dict[str, int]
    histogram: list[HistogramBin]
    truncated: list[TruncatedChunk]
    hidden_evidence: list[HiddenEvidence]
    multi_match: list[MultiMatch]
    straddling: list[Straddle]


# ---- the model's limit ---------------------------------------------------------------------------


def _model_file(model: str, name: str) -> Path | None:
    """A file of a model folder, or of a model in the local Hugging Face cache; None if absent."""
    folder = Path(resolve_model(model))
    if folder.is_dir():
        found = folder / name
        return found if found.is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - comes with sentence-transformers
        return None
    cached = try_to_load_from_cache(model, name)
    return Path(cached) if isinstance(cached, str) else None


def _read_json(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def special_token_count(counter: TokenCounter) -> int:
    """Special tokens the tokenizer adds to one text ([CLS] and [SEP] for BERT: 2)."""
    from tokenizers import Tokenizer

    processor = Tokenizer.from_file(str(counter.file)).post_processor
    return int(processor.num_special_tokens_to_add(False)) if processor is not None else 0


def model_limit(model: str, counter: TokenCounter | None = None) -> ModelLimit | None:
    """The model's input limit: ``max_seq_length`` of ``sentence_bert_config.json`` (as sentence-transformers uses it).

    Without that file, the smaller of ``config.json``'s ``max_position_embeddings`` and
    ``tokenizer_config.json``'s ``model_max_length`` (sentence-transformers' own fallback); None
    when neither says.
    """
    counter = counter or token_counter(model)
    specials = special_token_count(counter)
    st_file = _model_file(model, "sentence_bert_config.json")
    value = _read_json(st_file).get("max_seq_length")
    if isinstance(value, int) and value > 0:
        return ModelLimit(value, specials, str(st_file))
    candidates = []
    for name, key in (
        ("config.json", "max_position_embeddings"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        found = _model_file(model, name)
        number = _read_json(found).get(key)
        if isinstance(number, int) and 0 < number < 1_000_000:  # tokenizers say 1e30 for "no limit"
            candidates.append((number, str(found)))
    if not candidates:
        return None
    number, source = min(candidates)
    return ModelLimit(number, specials, source)


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
    return diagnose_chunks(ws.settings.model, ws.chunks, ws.questions, ws.corpus.documents)


def diagnose_chunks(
    model: str,
    chunks: Sequence[Chunk],
    questions: Sequence[Question],
    documents: Sequence[Document],
) -> ChunkDiagnostics:
    """Every chunking diagnostic of these chunks, questions and documents for embedding model ``model``.

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

    truncated: list[TruncatedChunk] = []
    cut_at: dict[str, int] = {}  # chunk id -> offset in the chunk text where the hidden tail starts
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
                truncated.append(
                    TruncatedChunk(c.id, c.doc, counts[c.id], limit.content_tokens, c.start + tail)
                )

    text_of = {c.id: c.text for c in chunks}
    index = EvidenceIndex(list(text_of), list(text_of.values()))
    multi: list[MultiMatch] = []
    straddling: list[Straddle] = []
    hidden: list[HiddenEvidence] = []
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
                    hidden.append(HiddenEvidence(q.id, q.line, evidence, cid, wholly))
    return ChunkDiagnostics(
        limit=limit,
        token_counts=counts,
        histogram=token_histogram(list(counts.values()), limit.content_tokens if limit else None),
        truncated=truncated,
        hidden_evidence=hidden,
        multi_match=multi,
        straddling=straddling,
    )
