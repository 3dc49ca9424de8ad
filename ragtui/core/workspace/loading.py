"""The data part of a workspace and the steps of loading that need no embedding model: read and
chunk the data (``Data``, shared between the variants of ``ragtui experiment``), every passage by
id (``Passages``: ragtui's chunks and the live retrievers' own), the load's warnings and the
external runs.

The settings are checked before (``Settings.checked``). The other parts are built by
``question_set.QuestionSet.of``, ``grading.grades``, ``vectors.ranked`` and ``live_answers.live_part``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunk_cache import cached_chunks, chunks_digest
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.chunks_file import load_chunks_file
from ragtui.core.data.corpus import Corpus, load_folder
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question, normalize_ws
from ragtui.core.data.questions_cache import cached_questions
from ragtui.core.data.tokenizer import TokenCounter, model_limit, token_counter
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.embeddings import Embedder
from ragtui.core.retrieval.external import ExternalRun, load_external_run
from ragtui.core.retrieval.live import examples
from ragtui.core.retrieval.rerank import CrossEncoderModel, Reranker
from ragtui.core.retrieval.windows import WindowPlan, window_plan
from ragtui.core.settings import Settings


@dataclass
class Shared:
    """What several workspaces loaded one after another may share (``ragtui experiment``): the read
    and chunked corpus per data and chunking setting, and the loaded models."""

    chunkings: dict[
        tuple[object, ...],
        tuple[Corpus, Sequence[Question], dict[str, dict[str, int]], list[Chunk]],
    ] = field(default_factory=dict)
    embedders: dict[str, Embedder] = field(default_factory=dict)
    cross_encoders: dict[str, CrossEncoderModel] = field(default_factory=dict)


#: Where a base grade came from: the evidence rule, or the qrels (``--beir``); and the other
#: sources of an effective grade.
SOURCE_EVIDENCE = "evidence"
SOURCE_QRELS = "qrels"
SOURCE_HAND = "hand"
#: A hand grade that settles a dispute: it wins over every annotator's grade of the pair.
SOURCE_ADJUDICATED = "adjudicated"
#: A model judge's verdict, counted where no person graded the pair (``--grades human+model``).
SOURCE_MODEL = "model"

#: The levels a workspace evaluates at: chunks, or documents (a document ranks at its best chunk's rank).
LEVEL_CHUNK = "chunk"
LEVEL_DOCUMENT = "document"


@dataclass(frozen=True)
class Data:
    """What ``read_data`` read and chunked: the corpus and its chunks (never changed once loaded),
    the qrels, where the base grades come from and the level the metrics read."""

    corpus: Corpus
    chunks: list[Chunk]
    #: The chunk ids in chunk order (a chunk's code in every rankings table).
    chunk_ids: list[str]
    #: The chunks' content digest: what the BM25 index and the results caches are keyed by.
    chunks_key: str
    #: The documents of the corpus: qrels naming others stay relevant, unretrievable.
    corpus_docs: frozenset[str]
    #: The qrels as the data set gives them (BEIR: question -> document -> grade).
    qrels: dict[str, dict[str, int]]
    #: Where the base grades come from: the evidence rule, or the qrels (``--beir``).
    base_source: str
    #: ``chunk`` or ``document``: what the metrics rank and judge.
    level: str
    #: The token counter of the model (chunk sizes and the model's limit are counted with it).
    counter: TokenCounter
    #: The caches' warnings met while reading.
    warnings: list[str]


class ChunkTexts:
    """Texts with white space collapsed, each computed when first asked for: ragtui's chunk ids by
    their text (to map a passage onto the chunk it is), and any passage's text (for evidence recall)."""

    def __init__(self) -> None:
        self._by_text: dict[str, str] | None = None
        self._normalized: dict[str, str] = {}

    def chunk_of(self, text: str, chunks: Iterable[Chunk]) -> str | None:
        """The chunk of ``chunks`` whose text is ``text`` with white space collapsed (the first), or None."""
        by_text = self._by_text
        if by_text is None:
            by_text = {}
            for c in chunks:
                by_text.setdefault(normalize_ws(c.text), c.id)
            self._by_text = by_text
        return by_text.get(normalize_ws(text))

    def normalized(self, cid: str, chunk_by_id: Mapping[str, Chunk]) -> str:
        """The text of a passage with white space collapsed ("" for an id that is no passage)."""
        text = self._normalized.get(cid)
        if text is None:
            chunk = chunk_by_id.get(cid)
            text = self._normalized[cid] = normalize_ws(chunk.text) if chunk is not None else ""
        return text


@dataclass(frozen=True)
class Passages:
    """Every passage by id: ragtui's chunks, then the passages live retrievers returned with a text
    that ragtui's chunks do not hold (their own: appended by ``add``, never changed), with their
    evidence-rule (or qrels) grades, which only their retriever's numbers read."""

    chunks: Sequence[Chunk]
    by_id: dict[str, Chunk]
    order: dict[str, int]
    foreign: dict[str, Chunk] = field(default_factory=dict)
    #: question -> own passage -> grade.
    own_grades: dict[str, dict[str, int]] = field(default_factory=dict)
    #: ragtui's chunk ids by their white-space-collapsed text (built on the first live answer).
    texts: ChunkTexts = field(default_factory=ChunkTexts)

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> Passages:
        """ragtui's chunks, no own passage yet."""
        return cls(chunks, {c.id: c for c in chunks}, {c.id: i for i, c in enumerate(chunks)})

    def snapshot(self) -> Passages:
        """A copy a worker thread may read while this one grows."""
        return replace(self, by_id=dict(self.by_id), foreign=dict(self.foreign))

    def doc_of(self, cid: str) -> str:
        """The document of a passage id (an id that is no passage stands for itself: a document id)."""
        chunk = self.by_id.get(cid)
        return chunk.doc if chunk is not None else cid

    def add(
        self, hits: Iterable[Hit], origin: str, questions: Iterable[Question], data: Data
    ) -> None:
        """Keep the passages of ``hits`` (already through ``map_hits``) that are no passage yet,
        graded by the evidence rule (or the qrels) for every question."""
        new: list[Chunk] = []
        for hit in hits:
            if hit.text is None or hit.id in self.by_id:
                continue
            chunk = Chunk(
                id=hit.id,
                doc=hit.doc or hit.id,
                index=0,
                start=0,
                end=len(hit.text),
                text=hit.text,
                heading_path=(),
                token_count=-1,
                meta={"retriever": origin},
            )
            self.foreign[hit.id] = chunk
            self.by_id[hit.id] = chunk
            self.order[hit.id] = len(self.order)
            new.append(chunk)
        if not new:
            return
        if data.base_source == SOURCE_EVIDENCE:
            index = EvidenceIndex([c.id for c in new], [c.text for c in new])
            for q in questions:
                found = index.matching_chunks(q.evidence)
                if found:
                    self.own_grades.setdefault(q.id, {}).update(
                        dict.fromkeys(found, EVIDENCE_GRADE)
                    )
        else:
            for q in questions:
                graded = data.qrels.get(q.id, {})
                for chunk in new:
                    if chunk.doc in graded:
                        self.own_grades.setdefault(q.id, {})[chunk.id] = graded[chunk.doc]


# ---- reading and chunking --------------------------------------------------------------------


def read_data(settings: Settings, shared: Shared | None) -> tuple[Data, Sequence[Question]]:
    """The data part (the corpus or the team's chunks, chunked as the settings say, and the qrels)
    and the golden questions as read; with ``shared``, a corpus already read and chunked the same
    way is reused."""
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
        return _data(settings, corpus, read_chunks, qrels, base_source, counter, []), read_questions
    questions: Sequence[Question]
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
        shared.chunkings[key] = (corpus, questions, qrels, list(chunks))
    return _data(settings, corpus, chunks, qrels, base_source, counter, cache_warnings), questions


def _data(
    settings: Settings,
    corpus: Corpus,
    chunks: list[Chunk],
    qrels: dict[str, dict[str, int]],
    base_source: str,
    counter: TokenCounter,
    warnings: list[str],
) -> Data:
    return Data(
        corpus,
        chunks,
        [c.id for c in chunks],
        chunks_digest(chunks),
        frozenset(c.doc for c in chunks),
        qrels,
        base_source,
        evaluation_level(settings, base_source, chunks),
        counter,
        warnings,
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


# ---- the evaluation level and the load's warnings ---------------------------------------------


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


def load_warnings(
    settings: Settings,
    data: Data,
    questions: Iterable[Question],
    labels: LabelJournal,
    reranker: Reranker | None,
) -> list[str]:
    """Every warning of reading the data, in the order shown: k above depth, the corpus, the label
    journal, documents the qrels judge but the corpus lacks, the caches, the reranker's cache."""
    warnings = [
        *settings.notes(),
        *data.corpus.warnings,
        *labels.take_warnings(),
        *_absent_warnings(settings, data, questions),
        *data.warnings,
    ]
    if reranker is not None:
        warnings.extend(reranker.cache.warnings)
    return warnings


def _absent_warnings(settings: Settings, data: Data, questions: Iterable[Question]) -> list[str]:
    """A warning when the qrels judge documents the corpus lacks (they count, as trec_eval counts them)."""
    if not data.qrels:
        return []
    asked = {q.id for q in questions}
    pairs = [
        (qid, doc)
        for qid, graded in data.qrels.items()
        if qid in asked
        for doc, grade in graded.items()
        if doc not in data.corpus_docs
    ]
    if not pairs:
        return []
    docs = sorted({doc for _, doc in pairs})
    relevant = sum(1 for qid, doc in pairs if data.qrels[qid][doc] >= settings.threshold)
    warning = (
        f"the qrels judge {len(docs)} document{'s' if len(docs) != 1 else ''} the corpus lacks "
        f"(e.g. {examples(docs, 3)}; {len(pairs)} judgement{'s' if len(pairs) != 1 else ''}, "
        f"{relevant} relevant): they stay in the grades and cannot be retrieved, as trec_eval "
        "counts them, so recall and nDCG are lower than over the corpus alone"
    )
    return [warning]


def read_runs(settings: Settings, data: Data, ids: list[str]) -> dict[str, ExternalRun]:
    """The external runs (``--run NAME=path``), read as rankings of the loaded questions (``ids``)."""
    known_ids = set(data.chunk_ids)
    if data.level == LEVEL_DOCUMENT:
        known_ids |= data.corpus_docs  # runs of document ids (the usual BEIR run) match as they are
    return {
        name: load_external_run(name, path, known_ids, ids, settings.depth)
        for name, path in settings.runs
    }
