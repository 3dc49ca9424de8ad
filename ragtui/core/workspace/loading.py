"""The steps of ``Workspace.load`` that need no embedding model: read and chunk the data (shared
between the variants of ``ragtui experiment``), index the chunks and questions, grade them by the
evidence rule or the qrels, build the live retrievers and read the external runs.

The settings are checked before (``Settings.checked``); BM25 is built by ``vectors.add_bm25``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunk_cache import cached_chunks, chunks_digest
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.chunks_file import load_chunks_file
from ragtui.core.data.corpus import Corpus, load_folder
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question
from ragtui.core.data.questions_cache import cached_questions
from ragtui.core.data.tokenizer import TokenCounter, model_limit, token_counter
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.labelling.labels import GRADES_HUMAN_MODEL
from ragtui.core.metrics.tables import GradeArrays, GradeRows
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.connectors import build_live_retrievers
from ragtui.core.retrieval.embeddings import Embedder
from ragtui.core.retrieval.external import ExternalRun, load_external_run
from ragtui.core.retrieval.live import LiveRetriever, LiveStatus, examples
from ragtui.core.retrieval.rerank import CrossEncoderModel, Reranker
from ragtui.core.retrieval.results_cache import EvidenceCache, TextKeys
from ragtui.core.retrieval.windows import WindowPlan, window_plan
from ragtui.core.settings import Settings
from ragtui.core.workspace.grading import (
    LEVEL_CHUNK,
    LEVEL_DOCUMENT,
    SOURCE_EVIDENCE,
    SOURCE_QRELS,
)


@dataclass
class Shared:
    """What several workspaces loaded one after another may share (``ragtui experiment``): the read
    and chunked corpus per data and chunking setting, and the loaded models."""

    chunkings: dict[
        tuple[object, ...], tuple[Corpus, list[Question], dict[str, dict[str, int]], list[Chunk]]
    ] = field(default_factory=dict)
    embedders: dict[str, Embedder] = field(default_factory=dict)
    cross_encoders: dict[str, CrossEncoderModel] = field(default_factory=dict)


@dataclass(frozen=True)
class ReadData:
    """What ``read_data`` read: the corpus, questions, qrels and chunks, and the caches' warnings."""

    corpus: Corpus
    questions: list[Question]
    qrels: dict[str, dict[str, int]]
    chunks: list[Chunk]
    #: Where the base grades come from: the evidence rule, or the qrels (``--beir``).
    base_source: str
    #: The token counter of the model (chunk sizes and the model's limit are counted with it).
    counter: TokenCounter
    warnings: list[str]


class Loading(Protocol):
    """What the loading steps read and fill in of a workspace (``Workspace`` is one)."""

    settings: Settings
    corpus: Corpus
    chunks: list[Chunk]
    questions: list[Question]
    labels: LabelJournal
    base_grades: MutableMapping[str, dict[str, int]]
    base_source: str
    rankings: dict[str, MutableMapping[str, Ranking]]
    chunk_by_id: dict[str, Chunk]
    chunk_order: dict[str, int]
    question_by_id: dict[str, Question]
    warnings: list[str]
    external: dict[str, ExternalRun]
    live: dict[str, LiveRetriever]
    live_status: dict[str, LiveStatus]
    level: str
    qrels: dict[str, dict[str, int]]
    corpus_docs: set[str]
    reranker: Reranker | None
    chunks_key: str
    loaded_ids: list[str]
    loaded_texts: TextKeys
    loaded_rows: dict[str, int]
    chunk_ids: list[str]


# ---- reading and chunking --------------------------------------------------------------------


def read_data(settings: Settings, shared: Shared | None) -> ReadData:
    """The corpus (or the team's chunks), the questions and qrels, chunked as the settings say;
    with ``shared``, a corpus already read and chunked the same way is reused."""
    own = (
        load_chunks_file(settings.chunks, round(settings.max_file_mb * 1048576))
        if settings.chunks is not None
        else None
    )
    counter = token_counter(settings.model)
    cache_warnings: list[str] = []
    base_source = SOURCE_QRELS if settings.beir is not None else SOURCE_EVIDENCE
    key = (
        settings.beir,
        settings.corpus,
        settings.chunks,
        settings.golden,
        settings.max_file_mb,
        settings.chunk_size,
        settings.overlap,
        settings.model,
    )
    if shared is not None and key in shared.chunkings:
        corpus, read_questions, qrels, read_chunks = shared.chunkings[key]
        # Copies: a workspace appends added questions to its own list.
        return ReadData(
            corpus, list(read_questions), qrels, list(read_chunks), base_source, counter, []
        )
    if settings.beir is not None:
        corpus, questions, qrels = load_beir(settings.beir, with_corpus=own is None)
    else:
        assert settings.golden is not None
        if own is None:
            assert settings.corpus is not None
            corpus = load_folder(settings.corpus, round(settings.max_file_mb * 1048576))
        questions, question_warnings = cached_questions(
            Path(settings.golden) / "questions.jsonl", settings.cache_dir
        )
        cache_warnings.extend(question_warnings)
        qrels = {}
    if own is not None:
        corpus, chunks = own.corpus, own.chunks
    else:
        chunks, chunk_warnings = cached_chunks(
            corpus.documents,
            counter,
            settings.chunk_size,
            settings.overlap,
            settings.cache_dir,
        )
        cache_warnings.extend(chunk_warnings)
    if not chunks:
        raise InputError(corpus.source, "the corpus gave no chunks (every document is empty)")
    if shared is not None:
        shared.chunkings[key] = (corpus, list(questions), qrels, list(chunks))
    return ReadData(corpus, questions, qrels, chunks, base_source, counter, cache_warnings)


def label_journal(settings: Settings) -> LabelJournal:
    """The golden set's label journal, read."""
    assert settings.golden is not None
    return LabelJournal(
        Path(settings.golden) / "labels.jsonl",
        settings.annotator,
        models=settings.counted_grades == GRADES_HUMAN_MODEL,
    )


def windows_for(settings: Settings, counter: TokenCounter) -> WindowPlan | None:
    """How long chunks are cut into windows when the vector retriever is needed (None otherwise);
    checked now (a bad stride is bad input), used when the chunks are embedded."""
    if not settings.needed_retrievers() & {"vector", "hybrid"}:
        return None
    return window_plan(
        settings.windows, settings.window_stride, model_limit(settings.model, counter)
    )


def reranker_for(settings: Settings, chunks: list[Chunk], shared: Shared | None) -> Reranker | None:
    """The reranking stage of ``--rerank`` (its model shared through ``shared``), or None."""
    if not settings.rerank:
        return None
    model = shared.cross_encoders.get(settings.rerank) if shared is not None else None
    reranker = Reranker(
        settings.rerank,
        settings.rerank_over,
        {c.id: c.text for c in chunks},
        {c.id: i for i, c in enumerate(chunks)},
        settings.cache_dir,
        model,
    )
    if shared is not None:
        shared.cross_encoders.setdefault(settings.rerank, reranker.model)
    return reranker


# ---- indexing and grading --------------------------------------------------------------------


def index(ws: Loading, qrels: dict[str, dict[str, int]]) -> None:
    """The look-ups by chunk and question id, the chunks' digest and the rows of the loaded
    questions, the qrels and the documents of the corpus."""
    chunks, questions = ws.chunks, ws.questions
    ws.chunk_by_id = {c.id: c for c in chunks}
    ws.chunk_order = {c.id: i for i, c in enumerate(chunks)}
    ws.question_by_id = {q.id: q for q in questions}
    ws.chunks_key = chunks_digest(chunks)
    ws.chunk_ids = [c.id for c in chunks]
    ws.loaded_ids = [q.id for q in questions]
    ws.loaded_rows = {q: i for i, q in enumerate(ws.loaded_ids)}
    ws.loaded_texts = TextKeys([q.text for q in questions])
    ws.qrels = qrels
    ws.corpus_docs = {c.doc for c in chunks}


def grade(ws: Loading) -> None:
    """The evaluation level, and the grades before hand labels (``base_grades``)."""
    ws.level = evaluation_level(ws.settings, ws.base_source, ws.chunks)
    ws.base_grades = (
        _evidence_grades(ws) if ws.base_source == SOURCE_EVIDENCE else _qrels_grades(ws)
    )


def evaluation_level(settings: Settings, base_source: str, chunks: list[Chunk]) -> str:
    """The evaluation level: as asked, else document when document-level qrels meet a chunked corpus."""
    if settings.level == LEVEL_DOCUMENT:
        if base_source != SOURCE_QRELS:
            raise InputError(
                None,
                "--level document needs document-level qrels (--beir); the evidence rule grades chunks",
            )
        return LEVEL_DOCUMENT
    if settings.level == LEVEL_CHUNK:
        return LEVEL_CHUNK
    if base_source == SOURCE_QRELS and any(c.id != c.doc for c in chunks):
        return LEVEL_DOCUMENT
    return LEVEL_CHUNK


def _qrels_grades(ws: Loading) -> dict[str, dict[str, int]]:
    """The BEIR qrels as chunk grades (a chunked document's chunks share its grade).

    At document level these chunk grades are what the app shows beside a chunk; the metrics read
    the qrels themselves (``grading.evaluation_grades``).
    """
    by_doc: dict[str, list[str]] = {}
    for c in ws.chunks:
        by_doc.setdefault(c.doc, []).append(c.id)
    grades: dict[str, dict[str, int]] = {}
    for q in ws.questions:
        graded: dict[str, int] = {}
        for doc, grade in ws.qrels.get(q.id, {}).items():
            for cid in by_doc.get(doc, ()):
                graded[cid] = grade
        grades[q.id] = graded
    return grades


def _evidence_grades(ws: Loading) -> GradeRows:
    """The evidence rule's grades of every question, from the evidence cache (only the evidence
    strings it lacks are matched against the chunks)."""
    chunks = ws.chunks
    index: list[EvidenceIndex] = []

    def match(needle: str) -> list[int]:
        if not index:
            index.append(EvidenceIndex([c.id for c in chunks], [c.text for c in chunks]))
        return index[0].matching_indices(needle)

    cache = EvidenceCache(ws.chunks_key, len(chunks), ws.settings.cache_dir)
    offsets, codes = cache.lookup([q.evidence for q in ws.questions], match)
    ws.warnings.extend(cache.warnings)
    arrays = GradeArrays(
        ws.loaded_ids,
        ws.chunk_ids,
        offsets,
        codes,
        np.full(len(codes), EVIDENCE_GRADE, dtype=np.int64),
        ws.loaded_rows,
    )
    return GradeRows(arrays)


def load_warnings(ws: Loading, data: ReadData) -> list[str]:
    """Every warning of the load so far, in the order shown: k above depth, the corpus, the label
    journal, documents the qrels judge but the corpus lacks, the caches, the reranker's cache."""
    warnings = [
        *ws.settings.notes(),
        *ws.corpus.warnings,
        *ws.labels.take_warnings(),
        *_absent_warnings(ws),
        *data.warnings,
        *ws.warnings,  # the evidence cache's
    ]
    if ws.reranker is not None:
        warnings.extend(ws.reranker.cache.warnings)
    return warnings


def _absent_warnings(ws: Loading) -> list[str]:
    """A warning when the qrels judge documents the corpus lacks (they count, as trec_eval counts them)."""
    if not ws.qrels:
        return []
    asked = {q.id for q in ws.questions}
    pairs = [
        (qid, doc)
        for qid, graded in ws.qrels.items()
        if qid in asked
        for doc, grade in graded.items()
        if doc not in ws.corpus_docs
    ]
    if not pairs:
        return []
    docs = sorted({doc for _, doc in pairs})
    relevant = sum(1 for qid, doc in pairs if ws.qrels[qid][doc] >= ws.settings.threshold)
    warning = (
        f"the qrels judge {len(docs)} document{'s' if len(docs) != 1 else ''} the corpus lacks "
        f"(e.g. {examples(docs, 3)}; {len(pairs)} judgement{'s' if len(pairs) != 1 else ''}, "
        f"{relevant} relevant): they stay in the grades and cannot be retrieved, as trec_eval "
        "counts them, so recall and nDCG are lower than over the corpus alone"
    )
    return [warning]


# ---- live retrievers and external runs -------------------------------------------------------


def add_live_retrievers(ws: Loading) -> None:
    """The live retrievers (plugins, HTTP APIs, Milvus), built but not asked yet, each waiting.

    A Milvus collection indexed from other chunks, corpus or model is refused (its ids would name
    other texts); one ragtui did not index is searched with a warning.
    """
    s = ws.settings
    ws.live = build_live_retrievers(
        s.retrievers,
        s.live_retrievers,
        milvus=s.milvus,
        collection=s.collection,
        milvus_fields=s.milvus_fields,
        model=s.model,
        cache_root=s.cache_dir,
        taken=[name for name, _ in s.runs],
    )
    ws.live_status = {name: LiveStatus(name, "waiting") for name in ws.live}
    if not ws.live:
        return  # nothing to check: the Milvus modules (and logging) are not even imported
    from ragtui.core.retrieval.milvus import check_collection

    ws.warnings.extend(
        check_collection(
            ws.live,
            ws.chunks,
            s.model,
            documents=ws.corpus.documents,
            chunk_size=s.chunk_size,
            overlap=s.overlap,
            chunks_file=s.chunks,
            windows=s.windows,
            window_stride=s.window_stride,
        )
    )


def add_runs(ws: Loading) -> None:
    """The external runs (``--run NAME=path``), read as rankings of the loaded questions."""
    known_ids: set[str] | dict[str, Chunk] = ws.chunk_by_id
    if ws.level == LEVEL_DOCUMENT:
        # Runs of document ids (the usual BEIR run) match documents as they are.
        known_ids = set(ws.chunk_by_id) | {c.doc for c in ws.chunks}
    for name, path in ws.settings.runs:
        external = load_external_run(
            name, path, known_ids, [q.id for q in ws.questions], ws.settings.depth
        )
        ws.external[name] = external
        ws.rankings[name] = external.rankings
        ws.warnings.extend(external.warnings)
