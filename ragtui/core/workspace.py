"""The workspace: everything loaded for one data set and setting, shared by the CLI and the app.

Loading is split so that a UI can show something at once: ``Workspace.load`` reads the corpus,
chunks it, reads the golden set and labels and builds BM25 (fast); ``prepare_vectors`` embeds the
chunks (as windows when they are longer than the model reads) and questions (from the cache when
possible, else with the model: slow) and adds the vector and hybrid retrievers; ``prepare_rerank``
adds ``<retriever>+rerank`` when a cross-encoder is set. Each slow step has a ``compute_*`` half
that only reads (for a worker thread) and an ``apply_*`` half that changes the workspace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunk_cache import cached_chunks, chunks_digest
from ragtui.core.data.chunking import Chunk
from ragtui.core.data.chunks_file import load_chunks_file
from ragtui.core.data.corpus import Corpus, load_folder
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question, normalize_ws
from ragtui.core.data.paths import is_bundled, writable_golden
from ragtui.core.data.questions_cache import cached_questions
from ragtui.core.data.tokenizer import model_fingerprint, model_limit, token_counter
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import (
    QUESTIONS_FILE,
    AddedQuestion,
    append_question,
    validate_new_question,
)
from ragtui.core.labelling.journal import Label, LabelJournal
from ragtui.core.metrics.evaluation import Evaluation, OwnPassages
from ragtui.core.metrics.formulas import QuestionMetrics, recall_at_k, relevant_ids
from ragtui.core.metrics.tables import GradeArrays, GradeRows, RankingTable
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit, Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.connectors import build_live_retrievers
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache, Progress, model_slug
from ragtui.core.retrieval.external import ExternalRun, load_external_run
from ragtui.core.retrieval.hybrid import RRF_K, HybridRetriever
from ragtui.core.retrieval.live import (
    LiveError,
    LiveProgress,
    LiveRetriever,
    LiveRun,
    LiveStatus,
    examples,
    run_live,
)
from ragtui.core.retrieval.milvus import check_collection
from ragtui.core.retrieval.rerank import (
    RERANK_SUFFIX,
    RERANKABLE,
    CrossEncoderModel,
    Reranker,
    RerankProgress,
    RerankResult,
)
from ragtui.core.retrieval.results_cache import EvidenceCache, RankingCache, TextKeys
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan, chunk_windows, window_plan
from ragtui.core.settings import Settings

#: Where an effective grade came from.
SOURCE_EVIDENCE = "evidence"
SOURCE_QRELS = "qrels"
SOURCE_HAND = "hand"
#: A hand grade that settles a dispute: it wins over every annotator's grade of the pair.
SOURCE_ADJUDICATED = "adjudicated"

#: The kinds of passage a live retriever returns, in ``PassageCounts`` order.
_PASSAGE_KINDS = ("chunk_ids", "mapped", "own", "unknown")

#: The levels a workspace evaluates at: chunks, or documents (a document ranks at its best chunk's rank).
LEVEL_CHUNK = "chunk"
LEVEL_DOCUMENT = "document"


@dataclass(frozen=True, slots=True)
class StaleLabel:
    """A hand label that no longer applies, with the reason; kept in the journal, never applied."""

    label: Label
    reason: str


@dataclass(frozen=True, slots=True)
class GradeChange:
    """What one label change did: the label written, each retriever's (old, new) values, and new journal warnings.

    ``warnings`` are the journal's warnings not reported before (another writer's bad line, met
    while our own line was saved and applied): a front end shows them.
    """

    question: str
    chunk: str
    label: Label
    changes: dict[str, tuple[QuestionMetrics, QuestionMetrics]]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PassageCounts:
    """What a live retriever returned for the golden questions, counted by distinct passage: ids that
    are ragtui's chunks, passages under other ids whose text is one of ragtui's chunks (white space
    collapsed: mapped onto it), passages ragtui does not hold (its own), and ids with neither."""

    chunk_ids: int = 0
    mapped: int = 0
    own: int = 0
    unknown: int = 0

    @property
    def returned(self) -> int:
        """Every distinct passage returned."""
        return self.chunk_ids + self.mapped + self.own + self.unknown

    def as_dict(self) -> dict[str, int]:
        """The counts as ``ragtui eval --json`` gives them (``passages``)."""
        return {
            "returned": self.returned,
            "chunk_ids": self.chunk_ids,
            "mapped": self.mapped,
            "own": self.own,
            "unknown": self.unknown,
        }

    def describe(self, name: str, k: int, evidence: bool) -> str:
        """One line: what was mapped, what is its own, and how it is scored."""
        parts = [f"{self.chunk_ids} by ragtui's chunk id"]
        parts.append(f"{self.mapped} mapped onto ragtui's chunks by their text")
        parts.append(f"{self.own} its own")
        if self.unknown:
            parts.append(
                f"{self.unknown} unknown id{'s' if self.unknown != 1 else ''} without text"
            )
        line = (
            f"{name}: {self.returned} passage{'s' if self.returned != 1 else ''} returned: "
            + ", ".join(parts)
        )
        if self.own:
            recall = (
                f"its recall@{k} is evidence recall (the share of evidence strings found in a relevant passage of its top {k})"
                if evidence
                else f"its recall@{k} is over ragtui's judgements and its own judged passages"
            )
            line += (
                f"; its own passages are judged for {name} alone and {recall}; to score it on "
                "ragtui's chunks, give ragtui the service's chunks with --chunks FILE.jsonl"
            )
        return line


@dataclass(frozen=True)
class VectorResult:
    """What ``compute_vectors`` found: the vector and hybrid retrievers and their rankings.

    ``cached_vectors`` gives one without retrievers (``vector`` None): every ranking came from the
    results cache, and the retrievers are built afterwards.
    """

    vector: VectorRetriever | None
    hybrid: HybridRetriever | None
    question_vectors: Mapping[str, np.ndarray]
    rankings: Mapping[str, Mapping[str, Ranking]]
    warnings: list[str]
    windows: ChunkWindows | None = None


class QuestionVectors(Mapping[str, np.ndarray]):
    """Question id -> its embedding, embedded (through the embedding cache) when first asked for."""

    def __init__(
        self, questions: Mapping[str, Question], embed: Callable[[str], np.ndarray]
    ) -> None:
        self._questions, self._embed = questions, embed
        self._done: dict[str, np.ndarray] = {}

    def __getitem__(self, qid: str) -> np.ndarray:
        found = self._done.get(qid)
        if found is None:
            found = self._done[qid] = self._embed(self._questions[qid].text)
        return found

    def __contains__(self, qid: object) -> bool:
        return qid in self._questions

    def __iter__(self) -> Iterator[str]:
        return iter(self._questions)

    def __len__(self) -> int:
        return len(self._questions)


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
class LiveResult:
    """What ``compute_live`` found: each live retriever's answers, failures and counts."""

    runs: dict[str, LiveRun]


@dataclass
class Workspace:
    """The loaded data set and its evaluation."""

    settings: Settings
    corpus: Corpus
    chunks: list[Chunk]
    questions: list[Question]
    labels: LabelJournal
    base_grades: MutableMapping[str, dict[str, int]]
    base_source: str
    bm25: BM25Retriever | None
    rankings: dict[str, MutableMapping[str, Ranking]] = field(default_factory=dict)
    evaluation: Evaluation | None = None
    vector: VectorRetriever | None = None
    hybrid: HybridRetriever | None = None
    chunk_by_id: dict[str, Chunk] = field(default_factory=dict)
    chunk_order: dict[str, int] = field(default_factory=dict)
    question_by_id: dict[str, Question] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    question_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    external: dict[str, ExternalRun] = field(default_factory=dict)
    #: Things the user should be told that are not problems (where the bundled golden set was
    #: copied to); a front end shows and clears them.
    notices: list[str] = field(default_factory=list)
    #: The live retrievers (plugins, HTTP APIs, Milvus), built but not asked yet, in display order.
    live: dict[str, LiveRetriever] = field(default_factory=dict)
    #: Each live retriever's state and error message, for its list header.
    live_status: dict[str, LiveStatus] = field(default_factory=dict)
    #: Chunks a live retriever returned with their text that the corpus does not hold (its own
    #: passages): shown, labelled and judged, but counted only for the retriever that returned them.
    foreign: dict[str, Chunk] = field(default_factory=dict)
    #: The evidence rule's (or the qrels') grades of the own passages: question -> passage -> grade.
    own_grades: dict[str, dict[str, int]] = field(default_factory=dict)
    #: What each live retriever returned for the golden questions (see ``PassageCounts``).
    passages: dict[str, PassageCounts] = field(default_factory=dict)
    #: ragtui's chunk ids by their white-space-collapsed text (built on the first live answer).
    _by_text: dict[str, str] | None = None
    _normalized: dict[str, str] = field(default_factory=dict)
    #: ``chunk`` or ``document``: what the metrics rank and judge (see ``evaluation_grades``).
    level: str = LEVEL_CHUNK
    #: The qrels as the data set gives them (BEIR: question -> document -> grade).
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    #: The documents of the corpus (the chunks' documents): qrels naming others stay relevant, unretrievable.
    corpus_docs: set[str] = field(default_factory=set)
    #: How chunks longer than the model reads are cut into windows (None: windows off, or the
    #: model's limit unknown); ``windows`` holds every chunk's windows once embedded.
    window_plan: WindowPlan | None = None
    windows: ChunkWindows | None = None
    #: The reranking stage (``--rerank``), and what its last run found (rankings, time per question).
    reranker: Reranker | None = None
    rerank: RerankResult | None = None
    #: Chunkings and models shared with other workspaces (None: this one's own).
    shared: Shared | None = None
    #: The chunks' content digest: what the BM25 index and the results caches are keyed by.
    chunks_key: str = ""
    #: The golden questions as loaded (ids and texts): the rows of the rankings tables.
    loaded_ids: list[str] = field(default_factory=list)
    loaded_texts: TextKeys = field(default_factory=lambda: TextKeys([]))
    loaded_rows: dict[str, int] = field(default_factory=dict)
    _retired: frozenset[str] | None = None
    #: The chunk ids in chunk order, as loaded (the code of a chunk in every rankings table).
    chunk_ids: list[str] = field(default_factory=list)

    # ---- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings, shared: Shared | None = None) -> Workspace:
        """Read, chunk and index everything that needs no embedding model; BM25 is ready after this.

        With ``shared``, a corpus already read and chunked the same way is reused, and so are
        loaded models.
        """
        settings = settings.resolved()
        for name in settings.retrievers:
            if name.endswith(RERANK_SUFFIX) and name != settings.rerank_name:
                raise InputError(
                    None,
                    f"--retrievers: {name} comes from --rerank MODEL"
                    + (
                        f" with --rerank-over {name.removesuffix(RERANK_SUFFIX)}"
                        if settings.rerank
                        else ""
                    ),
                )
        if settings.rerank and settings.rerank_over not in RERANKABLE:
            raise InputError(
                None,
                f"--rerank-over: {settings.rerank_over!r} cannot be reranked; choose from {', '.join(RERANKABLE)}",
            )
        if settings.k < 1 or settings.depth < 1:
            raise InputError(None, "--k and --depth must be at least 1")
        run_names = [name for name, _ in settings.runs]
        for name in run_names:
            if name in RETRIEVER_NAMES or run_names.count(name) > 1:
                raise InputError(
                    None, f"--run: the name {name!r} is taken; give each run its own name"
                )
        depth_note = []
        if settings.k > settings.depth:
            depth_note.append(
                f"--k {settings.k} is above --depth {settings.depth}: no retriever returns more than "
                f"{settings.depth} chunks, so recall@{settings.k} is recall@{settings.depth} "
                f"(precision@{settings.k} still divides by {settings.k}); raise --depth to see deeper"
            )
        if settings.chunk_size is not None and not 0 <= settings.overlap < settings.chunk_size:
            raise InputError(None, "--overlap must be at least 0 and smaller than --chunk-size")
        own = (
            load_chunks_file(settings.chunks, round(settings.max_file_mb * 1048576))
            if settings.chunks is not None
            else None
        )
        if own is not None and settings.corpus is not None:
            raise InputError(
                None, "--chunks replaces --corpus (the chunks are the corpus); give one of them"
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
            questions, chunks = list(read_questions), list(read_chunks)
        else:
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
                raise InputError(
                    corpus.source, "the corpus gave no chunks (every document is empty)"
                )
            if shared is not None:
                shared.chunkings[key] = (corpus, list(questions), qrels, list(chunks))
        assert settings.golden is not None
        labels = LabelJournal(Path(settings.golden) / "labels.jsonl", settings.annotator)
        needed = needed_retrievers(settings)
        plan = None
        if needed & {"vector", "hybrid"}:
            # Checked now (a bad stride is bad input), used when the chunks are embedded.
            plan = window_plan(
                settings.windows, settings.window_stride, model_limit(settings.model, counter)
            )
        reranker = None
        if settings.rerank:
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
        ws = cls(
            settings=settings,
            corpus=corpus,
            chunks=chunks,
            questions=questions,
            labels=labels,
            base_grades={},
            base_source=base_source,
            bm25=None,
            window_plan=plan,
            reranker=reranker,
            shared=shared,
        )
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
        ws.level = _level(settings, base_source, chunks)
        ws.base_grades = ws._base_grades(qrels)
        ws.warnings = (
            depth_note
            + list(corpus.warnings)
            + labels.take_warnings()
            + ws._absent_warnings()
            + cache_warnings
            + ws.warnings  # the evidence cache's
        )
        labels.take_touched()  # everything is evaluated below
        if reranker is not None:
            ws.warnings.extend(reranker.cache.warnings)
        ws.live = build_live_retrievers(
            settings.retrievers,
            settings.live_retrievers,
            milvus=settings.milvus,
            collection=settings.collection,
            milvus_fields=settings.milvus_fields,
            model=settings.model,
            cache_root=settings.cache_dir,
            taken=run_names,
        )
        ws.live_status = {name: LiveStatus(name, "waiting") for name in ws.live}
        # A Milvus collection indexed from other chunks, corpus or model is refused (its ids would
        # name other texts); one ragtui did not index is searched with a warning.
        ws.warnings.extend(
            check_collection(
                ws.live,
                chunks,
                settings.model,
                documents=corpus.documents,
                chunk_size=settings.chunk_size,
                overlap=settings.overlap,
                chunks_file=settings.chunks,
            )
        )
        if "bm25" in needed or "hybrid" in needed:
            ws.bm25 = BM25Retriever(
                chunks,
                backend=settings.bm25_backend,
                cache_root=settings.cache_dir,
                chunks_key=ws.chunks_key,
            )
            ws.warnings.extend(ws.bm25.warnings)
            bm25 = ws.bm25
            bm25_table = ws._ranking_table(
                ws._ranking_cache("bm25"),
                ws.loaded_texts,
                lambda rows: [bm25.search(ws.loaded_texts.texts[i], settings.depth) for i in rows],
            )
            ws.rankings["bm25"] = bm25_table
            empty = bm25_table.empty_rows()
            if empty:
                ws.warnings.append(
                    f"bm25: {len(empty)} question{'s share' if len(empty) != 1 else ' shares'} no word "
                    f"with any chunk (e.g. {examples(empty, 3)}): no results; "
                    f"{'they count' if len(empty) != 1 else 'it counts'} as an empty run"
                )
        known_ids: set[str] | dict[str, Chunk] = ws.chunk_by_id
        if ws.level == LEVEL_DOCUMENT:
            # Runs of document ids (the usual BEIR run) match documents as they are.
            known_ids = set(ws.chunk_by_id) | {c.doc for c in chunks}
        for name, path in settings.runs:
            external = load_external_run(
                name, path, known_ids, [q.id for q in questions], settings.depth
            )
            ws.external[name] = external
            ws.rankings[name] = external.rankings
            ws.warnings.extend(external.warnings)
        ws.evaluate_all()
        return ws

    def _absent_warnings(self) -> list[str]:
        """A warning when the qrels judge documents the corpus lacks (they count, as trec_eval counts them)."""
        if not self.qrels:
            return []
        asked = {q.id for q in self.questions}
        pairs = [
            (qid, doc)
            for qid, graded in self.qrels.items()
            if qid in asked
            for doc, grade in graded.items()
            if doc not in self.corpus_docs
        ]
        if not pairs:
            return []
        docs = sorted({doc for _, doc in pairs})
        relevant = sum(1 for qid, doc in pairs if self.qrels[qid][doc] >= self.settings.threshold)
        warning = (
            f"the qrels judge {len(docs)} document{'s' if len(docs) != 1 else ''} the corpus lacks "
            f"(e.g. {examples(docs, 3)}; {len(pairs)} judgement{'s' if len(pairs) != 1 else ''}, "
            f"{relevant} relevant): they stay in the grades and cannot be retrieved, as trec_eval "
            "counts them, so recall and nDCG are lower than over the corpus alone"
        )
        return [warning]

    def _base_grades(self, qrels: dict[str, dict[str, int]]) -> MutableMapping[str, dict[str, int]]:
        # At document level these chunk grades are what the app shows beside a chunk; the metrics
        # read the qrels themselves (``evaluation_grades``).
        """The grades before hand labels: the evidence rule, or the BEIR qrels (a chunked document's chunks share its grade)."""
        if self.base_source == SOURCE_EVIDENCE:
            return self._evidence_grades()
        by_doc: dict[str, list[str]] = {}
        for c in self.chunks:
            by_doc.setdefault(c.doc, []).append(c.id)
        grades: dict[str, dict[str, int]] = {}
        for q in self.questions:
            graded: dict[str, int] = {}
            for doc, grade in qrels.get(q.id, {}).items():
                for cid in by_doc.get(doc, ()):
                    graded[cid] = grade
            grades[q.id] = graded
        return grades

    def _evidence_grades(self) -> GradeRows:
        """The evidence rule's grades of every question, from the evidence cache (only the evidence
        strings it lacks are matched against the chunks)."""
        chunks = self.chunks
        index: list[EvidenceIndex] = []

        def match(needle: str) -> list[int]:
            if not index:
                index.append(EvidenceIndex([c.id for c in chunks], [c.text for c in chunks]))
            return index[0].matching_indices(needle)

        cache = EvidenceCache(self.chunks_key, len(chunks), self.settings.cache_dir)
        offsets, codes = cache.lookup([q.evidence for q in self.questions], match)
        self.warnings.extend(cache.warnings)
        arrays = GradeArrays(
            self.loaded_ids,
            self.chunk_ids,
            offsets,
            codes,
            np.full(len(codes), EVIDENCE_GRADE, dtype=np.int64),
            self.loaded_rows,
        )
        return GradeRows(arrays)

    # ---- the results cache ---------------------------------------------------------------------

    def _ranking_cache(self, kind: str, embedder: Embedder | None = None) -> RankingCache:
        """The results cache of one built-in retriever, keyed by everything that decides its rankings."""
        return RankingCache(
            kind,
            self._ranking_key(kind, embedder),
            len(self.chunks),
            self.settings.depth,
            self.settings.cache_dir,
        )

    def _ranking_key(self, kind: str, embedder: Embedder | None = None) -> dict[str, object]:
        s = self.settings
        if kind == "bm25":
            return {
                "chunks": self.chunks_key,
                "backend": s.bm25_backend,
                "k1": self.bm25.k1 if self.bm25 is not None else 1.5,
                "b": self.bm25.b if self.bm25 is not None else 0.75,
            }
        if kind == "vector":
            name = embedder.cache_name if embedder is not None else s.model
            plan = self.window_plan
            return {
                "chunks": self.chunks_key,
                "embedder": model_slug(name, model_fingerprint(name)),
                "tokenizer": model_slug(s.model, model_fingerprint(s.model)),
                "windows": [plan.mode, plan.length, plan.stride] if plan is not None else None,
            }
        return {
            "rrf": RRF_K,
            "bm25": self._ranking_key("bm25"),
            "vector": self._ranking_key("vector", embedder),
        }

    def _ranking_table(
        self,
        cache: RankingCache,
        texts: TextKeys,
        rank: Callable[[list[int]], list[Ranking]],
    ) -> RankingTable:
        """Every loaded question's ranking: read from ``cache``, the rows it lacks ranked by
        ``rank`` (row numbers of the loaded questions -> their rankings) and written back."""
        found = cache.lookup(texts)
        if found.missing:
            order = self.chunk_order
            ranked = rank(found.missing)
            for i, ranking in zip(found.missing, ranked, strict=True):
                found.index[i] = -1
                found.scores[i] = 0.0
                cut = ranking[: cache.depth]
                found.index[i, : len(cut)] = [order[cid] for cid, _ in cut]
                found.scores[i, : len(cut)] = [score for _, score in cut]
        if found.missing or not found.remembered:
            cache.save(texts, found.index, found.scores)
        self.warnings.extend(w for w in cache.warnings if w not in self.warnings)
        return RankingTable(
            self.loaded_ids,
            [c.id for c in self.chunks],
            found.index,
            found.scores,
            self.loaded_rows,
        )

    @property
    def vectors_needed(self) -> bool:
        """Whether the settings ask for the vector or hybrid retriever (shown, or reranked)."""
        return bool(needed_retrievers(self.settings) & {"vector", "hybrid"})

    def embedding_cache(self, embedder: Embedder | None = None) -> EmbeddingCache:
        """The embedding cache of the chosen model (or of the embedder given in its place)."""
        name = embedder.cache_name if embedder is not None else self.settings.model
        return EmbeddingCache(name, self.settings.cache_dir)

    def cached_vectors(self, embedder: Embedder | None = None) -> VectorResult | None:
        """Every loaded question's vector (and hybrid) ranking from the results cache, without building
        the retrievers (no embedding read, no model); None unless the cache holds them all.

        The app shows these at once and builds the retrievers afterwards (``compute_vectors``).
        """
        if not self.vectors_needed or self.vector is not None:
            return None
        texts = self.loaded_texts
        kinds = ["vector"]
        if "hybrid" in needed_retrievers(self.settings) and self.bm25 is not None:
            kinds.append("hybrid")
        rankings: dict[str, Mapping[str, Ranking]] = {}
        warnings: list[str] = []
        for kind in kinds:
            cache = self._ranking_cache(kind, embedder)
            found = cache.lookup(texts)
            warnings.extend(cache.warnings)
            if found.missing:
                return None
            rankings[kind] = RankingTable(
                self.loaded_ids,
                self.chunk_ids,
                found.index,
                found.scores,
                self.loaded_rows,
                distinct=True,
            )
        return VectorResult(None, None, {}, rankings, warnings)

    def compute_vectors(
        self,
        progress: Progress | None = None,
        embedder: Embedder | None = None,
        known: VectorResult | None = None,
    ) -> VectorResult | None:
        """Build the vector (and hybrid) retriever and rank every question with it: rankings the
        results cache holds are read (``known``: already read by ``cached_vectors``), the others
        computed, embedding only the texts the embedding cache lacks.

        Reads the workspace and never changes it, so it may run in a worker thread while the UI
        reads and grades; ``apply_vectors`` then adds the result (on the UI thread).
        """
        if not self.vectors_needed:
            return None
        # The questions as loaded: one added since is ranked by ``apply_vectors``.
        texts = self.loaded_texts
        bm25_rankings = self.rankings.get("bm25", {})
        model = embedder
        if model is None and self.shared is not None:
            model = self.shared.embedders.setdefault(
                self.settings.model, Embedder(self.settings.model)
            )
        model = model or Embedder(self.settings.model)
        depth = self.settings.depth
        want_hybrid = "hybrid" in needed_retrievers(self.settings) and self.bm25 is not None
        vector_cache = self._ranking_cache("vector", model)
        found = (
            None if known is not None and "vector" in known.rankings else vector_cache.lookup(texts)
        )
        missing = found.missing if found is not None else []
        cache = self.embedding_cache(model)
        windows = chunk_windows(self.chunks, token_counter(self.settings.model), self.window_plan)
        todo = [texts.texts[i] for i in missing]
        matrix = cache.embed(windows.texts + todo, model, progress)
        # Read after embedding: a cache it could not write says so then.
        warnings = list(cache.warnings)
        n = len(windows.texts)
        window_matrix, question_matrix = matrix[:n], matrix[n:]
        by_text: dict[str, np.ndarray] = {t: question_matrix[i] for i, t in enumerate(todo)}

        def embed_query(text: str) -> np.ndarray:
            row: np.ndarray = by_text[text] if text in by_text else cache.embed([text], model)[0]
            return row

        vector = VectorRetriever(
            self.chunks,
            window_matrix,
            embed_query,
            windows.first_rows,
            self.window_plan.mode if self.window_plan is not None else "max",
        )
        rankings: dict[str, Mapping[str, Ranking]] = {}
        if known is not None and "vector" in known.rankings:
            rankings["vector"] = known.rankings["vector"]
        else:
            computed = dict(zip(todo, vector.search_vectors(question_matrix, depth), strict=True))
            rankings["vector"] = self._ranking_table(
                vector_cache, texts, lambda rows: [computed[texts.texts[i]] for i in rows]
            )
            warnings.extend(vector_cache.warnings)
        hybrid = None
        if want_hybrid and self.bm25 is not None:
            hybrid = HybridRetriever(self.bm25, vector, self.chunk_order)
            if known is not None and "hybrid" in known.rankings:
                rankings["hybrid"] = known.rankings["hybrid"]
            else:
                vector_rankings = rankings["vector"]
                ids = self.loaded_ids
                fuse = hybrid.fuse
                hybrid_cache = self._ranking_cache("hybrid", model)
                rankings["hybrid"] = self._ranking_table(
                    hybrid_cache,
                    texts,
                    lambda rows: [
                        fuse(bm25_rankings.get(ids[i], []), vector_rankings[ids[i]], depth)
                        for i in rows
                    ],
                )
                warnings.extend(hybrid_cache.warnings)
        return VectorResult(
            vector,
            hybrid,
            QuestionVectors(self.question_by_id, embed_query),
            rankings,
            warnings,
            windows,
        )

    def apply_vectors(self, result: VectorResult) -> bool:
        """Add vector and hybrid rankings computed by ``compute_vectors`` (or read by
        ``cached_vectors``) and evaluate them; retrievers given with them are kept. Returns whether
        any ranking changed (False: the same lists were applied before)."""
        assert self.evaluation is not None
        if result.vector is not None:
            self.vector = result.vector
            self.hybrid = result.hybrid
            self.windows = result.windows
            self.question_vectors = result.question_vectors
        self.warnings.extend(w for w in result.warnings if w not in self.warnings)
        changed = False
        for name, given in result.rankings.items():
            current = self.rankings.get(name)
            if (
                isinstance(given, RankingTable)
                and isinstance(current, RankingTable)
                and given.index is current.index
                and given.scores is current.scores
            ):
                continue  # the same arrays, read earlier: shown and evaluated already
            by_question: MutableMapping[str, Ranking] = (
                given.copy() if isinstance(given, RankingTable) else dict(given)
            )
            # Questions added while the worker ran are ranked now, on this thread (a table holds
            # every loaded question: only those added after the load can be missing).
            added = self._added_since_load() if isinstance(given, RankingTable) else self.questions
            for q in added:
                if q.id not in by_question:
                    by_question[q.id] = self._rank_new(name, q.text)
            self.rankings[name] = by_question
            if name in self.settings.retrievers:
                self.evaluation.set_rankings(name, self.evaluated_rankings(by_question))
            changed = True
        return changed

    def _added_since_load(self) -> list[Question]:
        """The questions added after the load (the list is only ever appended to)."""
        return self.questions[len(self.loaded_ids) :]

    def _rank_new(self, name: str, text: str) -> Ranking:
        """One retriever's ranking of a text that was not embedded with the golden set."""
        depth = self.settings.depth
        if name == "vector" and self.vector is not None:
            return self.vector.search(text, depth)
        if name == "hybrid" and self.hybrid is not None:
            return self.hybrid.search(text, depth)
        if name == "bm25" and self.bm25 is not None:
            return self.bm25.search(text, depth)
        if self.reranker is not None and name == self.reranker.name:
            ranked = self.reranker.rerank(text, self._rank_new(self.reranker.over, text)).ranking
            self.reranker.cache.save()
            return ranked
        return []

    def prepare_vectors(
        self, progress: Progress | None = None, embedder: Embedder | None = None
    ) -> None:
        """``compute_vectors`` then ``apply_vectors``: the headless commands' one-step form."""
        result = self.compute_vectors(progress, embedder)
        if result is not None:
            self.apply_vectors(result)

    def compute_rerank(self, progress: RerankProgress | None = None) -> RerankResult | None:
        """Rerank every golden question's first-stage list with the cross-encoder (slow unless cached).

        Reads the workspace (the first stage must be ready: ``apply_vectors`` done for vector or
        hybrid) and changes only the score cache, so it may run in a worker thread;
        ``apply_rerank`` then adds the result.
        """
        reranker = self.reranker
        if reranker is None:
            return None
        first_stage = self.rankings.get(reranker.over)
        if first_stage is None:
            raise RuntimeError(f"{reranker.over} has no rankings yet: prepare the vectors first")
        questions = list(self.questions)
        rankings: dict[str, Ranking] = {}
        seconds: dict[str, float] = {}
        scored_now: set[str] = set()
        try:
            for i, q in enumerate(questions, start=1):
                done = reranker.rerank(q.text, first_stage.get(q.id, []))
                rankings[q.id] = done.ranking
                seconds[q.id] = done.seconds
                if not done.cached:
                    scored_now.add(q.id)
                if progress:
                    progress(i, len(questions))
        finally:
            reranker.cache.save()
        return RerankResult(reranker.name, rankings, seconds, scored_now)

    def apply_rerank(self, result: RerankResult) -> None:
        """Add the reranked rankings computed by ``compute_rerank`` and evaluate them."""
        assert self.evaluation is not None
        by_question = dict(result.rankings)
        for q in self.questions:
            if q.id not in by_question:
                by_question[q.id] = self._rank_new(result.name, q.text)
        self.rerank = result
        self.warnings.extend(result.warnings)
        self.rankings[result.name] = by_question
        self.evaluation.set_rankings(result.name, by_question)

    def prepare_rerank(self, progress: RerankProgress | None = None) -> None:
        """``compute_rerank`` then ``apply_rerank`` (nothing without a reranker)."""
        result = self.compute_rerank(progress)
        if result is not None:
            self.apply_rerank(result)

    @classmethod
    def open(
        cls,
        settings: Settings,
        progress: Progress | None = None,
        live_progress: LiveProgress | None = None,
        shared: Shared | None = None,
    ) -> Workspace:
        """Load everything, embeddings, reranking and live retrievers' answers included (the
        headless commands)."""
        ws = cls.load(settings, shared)
        ws.prepare_vectors(progress)
        ws.prepare_rerank()
        if ws.live:
            ws.apply_live(ws.compute_live(progress=live_progress, refresh=settings.refresh))
        return ws

    # ---- live retrievers (plugins, HTTP APIs, Milvus) -------------------------------------------

    def compute_live(
        self,
        names: Iterable[str] | None = None,
        *,
        refresh: bool = False,
        progress: LiveProgress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> LiveResult:
        """Every golden question's answer from each live retriever (``names``: some of them), cached ones read from disk.

        Reads the workspace and never changes it, so it may run in a worker thread (one per
        retriever, so a slow one does not hold up the others); ``apply_live`` then adds the result on
        the UI thread. ``refresh`` asks again instead of reading the cache.
        """
        chosen = list(self.live) if names is None else [n for n in names if n in self.live]
        questions = [(q.id, q.text) for q in list(self.questions)]
        runs = {}
        for name in chosen:
            runs[name] = run_live(
                self.live[name],
                questions,
                self.settings.depth,
                refresh=refresh,
                root=self.settings.cache_dir,
                progress=progress,
                cancelled=cancelled,
            )
        return LiveResult(runs)

    def refresh_live(
        self,
        names: Iterable[str] | None = None,
        progress: LiveProgress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> LiveResult:
        """``compute_live`` asking every question again (the palette's refresh); apply with ``apply_live``."""
        return self.compute_live(names, refresh=True, progress=progress, cancelled=cancelled)

    def apply_live(self, result: LiveResult) -> None:
        """Add live answers computed by ``compute_live``: rankings, statuses, the passages they brought, then the numbers.

        Each answer is read through ``map_hits``: an id that is a chunk is that chunk, a passage
        whose text is one of ragtui's chunks is that chunk, and any other passage with a text is
        the retriever's own, judged for it alone (``own_passages``). No other retriever's numbers
        change. A retriever that answered no question keeps whatever rankings it had (none on the
        first run) and shows its error; one that answered some shows how many it could not answer,
        and those count as empty runs.
        """
        assert self.evaluation is not None
        for name, run in result.runs.items():
            self.live_status[name] = run.status
            if not run.hits:
                continue
            counts: dict[str, set[str]] = {kind: set() for kind in _PASSAGE_KINDS}
            mapped = {qid: self.map_hits(name, hits, counts) for qid, hits in run.hits.items()}
            self._add_foreign([h for hits in mapped.values() for h in hits], origin=name)
            self.passages[name] = PassageCounts(*(len(counts[kind]) for kind in _PASSAGE_KINDS))
            previous = self.rankings.get(name, {})
            by_question: dict[str, Ranking] = {}
            for q in self.questions:
                if q.id in mapped:
                    by_question[q.id] = [(h.id, h.score) for h in mapped[q.id]]
                elif q.id in run.failed:
                    by_question[q.id] = []
                else:  # a question added while the worker ran keeps the ranking it was given
                    by_question[q.id] = previous.get(q.id, [])
            self.rankings[name] = by_question
            self._warn_unknown(name, counts["unknown"])
        for name, run in result.runs.items():
            if run.hits and name in self.rankings:
                self.evaluation.set_rankings(
                    name, self.evaluated_rankings(self.rankings[name]), self.own_passages(name)
                )

    def _warn_unknown(self, name: str, ids: Iterable[str]) -> None:
        unknown = sorted(set(ids) - {c.doc for c in self.chunks})
        if unknown:
            self.warnings.append(
                f"{name}: {len(unknown)} result id{'s' if len(unknown) != 1 else ''} neither among the "
                f"chunks nor returned with a text (e.g. {examples(unknown, 3)}); "
                "they count as not relevant and are shown by id"
            )

    def _chunk_of_text(self, text: str) -> str | None:
        """The ragtui chunk whose text is ``text`` with white space collapsed (the first in chunk order), or None."""
        by_text = self._by_text
        if by_text is None:
            by_text = {}
            for c in self.chunks:
                by_text.setdefault(normalize_ws(c.text), c.id)
            self._by_text = by_text
        return by_text.get(normalize_ws(text))

    def is_own(self, cid: str) -> bool:
        """Whether an id is a live retriever's own passage (one ragtui's chunks do not hold)."""
        return cid in self.foreign

    def map_hits(
        self, name: str, hits: Iterable[Hit], counts: dict[str, set[str]] | None = None
    ) -> list[Hit]:
        """A live retriever's answer as ragtui judges it, best first.

        An id that is one of ragtui's chunks stays as it is; a passage under another id whose text
        (white space collapsed) is one of ragtui's chunks becomes that chunk (so it scores exactly as
        the chunk's id would); any other passage with a text is the retriever's own, kept under its
        id (or ``id@name`` when another retriever returned that id with another text). A passage met
        twice keeps its first place. ``counts`` gathers the returned ids by kind. Reads the
        workspace only, so a worker may call it.
        """
        out: list[Hit] = []
        seen: set[str] = set()
        foreign = self.foreign
        for hit in hits:
            kind = "chunk_ids"
            if hit.id in self.chunk_by_id and hit.id not in foreign:
                mapped = Hit(hit.id, hit.score, None, hit.doc)
            elif hit.text is None:
                kind = "unknown" if hit.id not in foreign else "own"
                mapped = hit
            else:
                cid = self._chunk_of_text(hit.text)
                if cid is not None:
                    kind = "mapped"
                    mapped = Hit(cid, hit.score, None, None)
                else:
                    kind = "own"
                    own_id = hit.id
                    known = foreign.get(own_id)
                    if known is not None and known.text != hit.text:
                        # Another passage under this id (another retriever's, or an earlier text):
                        # the first text keeps the id.
                        own_id = f"{hit.id}@{name}"
                    mapped = Hit(own_id, hit.score, hit.text, hit.doc)
            if counts is not None:
                counts[kind].add(hit.id)
            if mapped.id in seen:
                continue
            seen.add(mapped.id)
            out.append(mapped)
        return out

    def add_foreign(self, hits: Iterable[Hit], origin: str) -> set[str]:
        """Keep the passages a live retriever brought with their text (an ad-hoc search done off the
        UI thread with ``run_live`` and ``map_hits``); returns the golden questions whose numbers
        changed: none, since a retriever's own passages count only for its golden rankings."""
        self._add_foreign(hits, origin)
        return set()

    def _add_foreign(self, hits: Iterable[Hit], origin: str) -> None:
        """Keep the passages of ``hits`` (already through ``map_hits``) that ragtui's chunks do not
        hold, and their evidence-rule (or qrels) grades, which only their retriever's numbers read."""
        new: list[Chunk] = []
        for hit in hits:
            if hit.text is None or hit.id in self.chunk_by_id:
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
            self.chunk_by_id[hit.id] = chunk
            self.chunk_order[hit.id] = len(self.chunk_order)
            new.append(chunk)
        if not new:
            return
        if self.base_source == SOURCE_EVIDENCE:
            index = EvidenceIndex([c.id for c in new], [c.text for c in new])
            for q in self.questions:
                found = index.matching_chunks(q.evidence)
                if found:
                    self.own_grades.setdefault(q.id, {}).update(
                        dict.fromkeys(found, EVIDENCE_GRADE)
                    )
        else:
            for q in self.questions:
                graded = self.qrels.get(q.id, {})
                for chunk in new:
                    if chunk.doc in graded:
                        self.own_grades.setdefault(q.id, {})[chunk.id] = graded[chunk.doc]

    def own_passages(self, name: str) -> OwnPassages | None:
        """How ``name`` is judged when its golden rankings hold passages of its own (None: like
        ragtui's retrievers, on ragtui's chunks alone): their grades count for it, and its recall is
        evidence recall (or, on qrels, over the judged passages)."""
        if self.level != LEVEL_CHUNK or name not in self.live:
            return None
        if not any(
            cid in self.foreign
            for ranking in self.rankings.get(name, {}).values()
            for cid, _ in ranking
        ):
            return None
        recall = self._evidence_recall if self.base_source == SOURCE_EVIDENCE else None
        return OwnPassages(self._own_gains, recall)

    def _own_gains(
        self, qid: str, ranked: Iterable[str], shared: Mapping[str, int]
    ) -> Mapping[str, int]:
        """The shared grades and those of the retriever's own passages in ``ranked`` (a hand grade wins)."""
        own = [cid for cid in ranked if cid in self.foreign]
        if not own:
            return shared
        grades = dict(shared)
        hand = self.hand_grades(qid, own=True)
        base = self.own_grades.get(qid, {})
        for cid in own:
            if cid in hand:
                grades[cid] = hand[cid]
            elif cid in base:
                grades[cid] = base[cid]
        return grades

    def _evidence_recall(self, qid: str, top: Iterable[str], gains: Mapping[str, int]) -> float:
        """The share of a question's evidence strings found in a relevant passage of ``top`` (the top k).

        A question without evidence strings (its grades all by hand) falls back to recall over its
        judged passages.
        """
        question = self.question_by_id.get(qid)
        needles = [] if question is None else [n for n in map(normalize_ws, question.evidence) if n]
        ranked = list(top)
        threshold = self.settings.threshold
        if not needles:
            return recall_at_k(ranked, relevant_ids(gains, threshold), max(len(ranked), 1))
        texts = []
        for cid in dict.fromkeys(ranked):
            if gains.get(cid, 0) < threshold:
                continue
            text = self._normalized.get(cid)
            if text is None:
                chunk = self.chunk_by_id.get(cid)
                text = self._normalized[cid] = normalize_ws(chunk.text) if chunk is not None else ""
            texts.append(text)
        found = sum(1 for needle in needles if any(needle in text for text in texts))
        return found / len(needles)

    def search_live(self, name: str, text: str, depth: int | None = None) -> Ranking:
        """One live retriever's ranking of any text (an ad-hoc query, a new question), through its cache.

        The passages it brings with their text are kept, so the chunk view can show them; an error
        is raised as LiveError with its one-line reason.
        """
        depth = depth if depth is not None else self.settings.depth
        run = run_live(self.live[name], [("", text)], depth, root=self.settings.cache_dir)
        if "" in run.failed:
            raise LiveError(run.failed[""])
        hits = self.map_hits(name, run.hits.get("", []))
        self._add_foreign(hits, origin=name)
        return [(h.id, h.score) for h in hits]

    def live_failures(self) -> dict[str, dict[str, str]]:
        """Each live retriever's unanswered questions (question id -> reason), for those that have any."""
        return {n: dict(s.failed) for n, s in self.live_status.items() if s.failed}

    # ---- the evaluation level ------------------------------------------------------------------

    def doc_of(self, cid: str) -> str:
        """The document of a chunk id (an id that is no chunk stands for itself: a document id)."""
        chunk = self.chunk_by_id.get(cid)
        return chunk.doc if chunk is not None else cid

    def evaluated_ranking(self, ranking: Ranking) -> Ranking:
        """A ranking as the metrics read it: chunks, or at document level each document at its best chunk's rank (MaxP)."""
        if self.level != LEVEL_DOCUMENT:
            return ranking
        out: Ranking = []
        seen: set[str] = set()
        for cid, score in ranking:
            doc = self.doc_of(cid)
            if doc not in seen:
                seen.add(doc)
                out.append((doc, score))
        return out

    def evaluated_rankings(
        self, by_question: MutableMapping[str, Ranking]
    ) -> MutableMapping[str, Ranking]:
        """``evaluated_ranking`` of every question's ranking (the same mapping at chunk level)."""
        if self.level != LEVEL_DOCUMENT:
            return by_question
        return {qid: self.evaluated_ranking(r) for qid, r in by_question.items()}

    def evaluation_grades(self, qid: str) -> dict[str, int]:
        """The grades the metrics use: chunk grades, or at document level the qrels with hand grades lifted to documents.

        At document level a document's hand grade is the highest hand grade of its chunks, and it
        overrides the qrels grade of that document.
        """
        if self.level != LEVEL_DOCUMENT:
            grades = self.effective_grades(qid)
            # A judged document the corpus lacks stays relevant and unretrievable (trec_eval's reading).
            for doc, grade in self.qrels.get(qid, {}).items():
                if doc not in self.corpus_docs:
                    grades.setdefault(doc, grade)
            return grades
        grades = dict(self.qrels.get(qid, {}))
        lifted: dict[str, int] = {}
        for cid, grade in self.hand_grades(qid).items():
            doc = self.doc_of(cid)
            lifted[doc] = max(lifted.get(doc, grade), grade)
        grades.update(lifted)
        return grades

    # ---- grades --------------------------------------------------------------------------------

    @property
    def retrievers(self) -> list[str]:
        """The chosen retrievers that have rankings, in the order ``--retrievers`` gives them; then
        those it does not name: the reranked one (``hybrid+rerank``), the external runs, the live ones."""
        chosen = [n for n in self.settings.retrievers if n in self.rankings]
        rest = []
        reranked = self.settings.rerank_name
        if reranked is not None and reranked in self.rankings:
            rest.append(reranked)
        rest += [n for n, _ in self.settings.runs if n in self.rankings]
        rest += [n for n in self.live if n in self.rankings]
        return list(dict.fromkeys(chosen + rest))

    def label_status(self, label: Label) -> str | None:
        """Why a hand label does not apply (unknown question, missing or edited chunk), or None if it applies."""
        if label.question not in self.question_by_id:
            return "unknown question"
        chunk = self.chunk_by_id.get(label.chunk)
        if chunk is None:
            return "chunk not in the chunked corpus"
        if label.chunk_sha1 and label.chunk_sha1 != chunk.sha1:
            return "chunk text changed since it was labelled"
        return None

    def _applies(self, label: Label) -> bool:
        return self.label_status(label) is None

    def hand_label(self, qid: str, cid: str) -> Label | None:
        """The hand label that counts for a pair, among those that apply: the adjudicated one, else the
        only annotator's, else the latest annotator's (see ``disputed``); None when none applies."""
        pair = self.labels.pair(qid, cid)
        return pair.effective(self._applies) if pair is not None else None

    def hand_labels(self, qid: str) -> dict[str, Label]:
        """``hand_label`` of every labelled chunk of a question that has one (chunk id -> label)."""
        out: dict[str, Label] = {}
        for cid, pair in self.labels.pairs.get(qid, {}).items():
            label = pair.effective(self._applies)
            if label is not None:
                out[cid] = label
        return out

    def hand_grades(self, qid: str, own: bool = False) -> dict[str, int]:
        """The hand grades of a question that apply (stale labels left out; one grade per pair, see
        ``hand_label``): of ragtui's chunks, and with ``own`` of live retrievers' own passages too."""
        foreign = self.foreign
        return {
            cid: label.grade
            for cid, label in self.hand_labels(qid).items()
            if label.grade is not None and (own or cid not in foreign)
        }

    def effective_grades(self, qid: str) -> dict[str, int]:
        """The grades ragtui's retrievers are judged by: the evidence rule (or qrels) over ragtui's
        chunks, overridden by hand grades (a live retriever's own passages are not among them)."""
        grades = dict(self.base_grades.get(qid, {}))
        grades.update(self.hand_grades(qid))
        return grades

    def shown_grades(self, qid: str) -> dict[str, int]:
        """Every grade a question's passages show: ``effective_grades`` and those of the live
        retrievers' own passages (what the judging queue counts as judged)."""
        grades = self.effective_grades(qid)
        if self.foreign:
            grades.update(self.own_grades.get(qid, {}))
            grades.update(
                {c: g for c, g in self.hand_grades(qid, own=True).items() if c in self.foreign}
            )
        return grades

    def grade_source(self, qid: str, cid: str) -> tuple[int | None, str | None]:
        """A chunk's effective grade for a question and where it came from (hand, adjudicated, evidence, qrels), or (None, None)."""
        label = self.hand_label(qid, cid)
        if label is not None and label.grade is not None:
            return label.grade, SOURCE_ADJUDICATED if label.adjudicated else SOURCE_HAND
        base = self.base_grades.get(qid, {})
        if cid in base:
            return base[cid], self.base_source
        own = self.own_grades.get(qid, {})
        if cid in own:
            return own[cid], self.base_source
        return None, None

    def annotator_grades(self, qid: str, cid: str) -> dict[str, int]:
        """Each annotator's current grade of a pair that applies, by name (the adjudicated grade aside)."""
        pair = self.labels.pair(qid, cid)
        return pair.grades(self._applies) if pair is not None else {}

    def adjudicated_grade(self, qid: str, cid: str) -> int | None:
        """The adjudicated grade of a pair when there is one that applies, else None."""
        pair = self.labels.pair(qid, cid)
        label = pair.adjudicated if pair is not None else None
        return label.grade if label is not None and self._applies(label) else None

    def disputed(self, qid: str, cid: str) -> bool:
        """Whether annotators gave a pair different grades (those that apply) and no adjudicated grade settles it."""
        pair = self.labels.pair(qid, cid)
        return pair is not None and pair.disputed(self._applies)

    def question_positions(self, qids: Iterable[str]) -> np.ndarray:
        """Each question's place in the golden set (``ws.questions``), ``-1`` for an unknown id;
        read from the rows kept at load, so no pass over every question."""
        loaded = self.loaded_rows
        tail: dict[str, int] | None = None
        out = []
        for qid in qids:
            row = loaded.get(qid)
            if row is None or row >= len(self.questions) or self.questions[row].id != qid:
                if tail is None:  # added since the load (or a list changed another way)
                    tail = {q.id: i for i, q in enumerate(self.questions)}
                row = tail.get(qid, -1)
            out.append(row)
        return np.asarray(out, dtype=np.int64)

    def _in_golden_order(self, qids: Iterable[str]) -> list[str]:
        """``qids`` in golden-set order."""
        chosen = list(qids)
        return [chosen[i] for i in np.argsort(self.question_positions(chosen), kind="stable")]

    def disputed_pairs(self, qid: str | None = None) -> list[tuple[str, str]]:
        """The disputed (question, chunk) pairs, of one question or of all, in golden-set then chunk order."""
        if qid is not None:
            qids = [qid]
        else:
            labelled = [q for q in self.labels.pairs if q in self.question_by_id]
            qids = self._in_golden_order(labelled)
        unknown = len(self.chunk_order)
        out: list[tuple[str, str]] = []
        for q in qids:
            chunks = [
                c
                for c, pair in self.labels.pairs.get(q, {}).items()
                if pair.disputed(self._applies)
            ]
            chunks.sort(key=lambda c: (self.chunk_order.get(c, unknown), c))
            out.extend((q, c) for c in chunks)
        return out

    def disputed_questions(self) -> list[str]:
        """The questions with at least one disputed pair, in golden-set order (only labelled
        questions are looked at)."""
        found = [
            qid
            for qid, pairs in self.labels.pairs.items()
            if qid in self.question_by_id
            and any(pair.disputed(self._applies) for pair in pairs.values())
        ]
        return self._in_golden_order(found)

    def stale_labels(self) -> list[StaleLabel]:
        """Current hand labels (every annotator's and the adjudicated ones) that do not apply, with reasons, in journal order."""
        out = []
        for _, _, pair in self.labels.iter_pairs():
            for label in pair.labels():
                reason = self.label_status(label)
                if reason:
                    out.append(StaleLabel(label, reason))
        out.sort(key=lambda stale: stale.label.line)
        return out

    def writable_golden(self) -> Path:
        """The golden-set folder to write into; for the bundled set, the user's copy (made now if needed).

        The bundled set is never written (it is the source tree or the installed package): the
        first write copies it to the user's data folder, the workspace and its label journal move
        there, and a notice says where.
        """
        if self.settings.beir is not None and self.settings.golden == self.settings.beir:
            return Path(self.settings.beir)
        assert self.settings.golden is not None
        current = Path(self.settings.golden)
        target, made = writable_golden(current)
        if target != current:
            self.settings = replace(self.settings, golden=target)
            self.labels.move_to(target / self.labels.path.name)
            if made:
                self.notices.append(
                    f"the bundled golden set is never written: copied it to {target}; "
                    "labels, added questions and saved runs are kept there"
                )
        return target

    def set_grade(
        self, qid: str, cid: str, grade: int | None, adjudicate: bool = False
    ) -> GradeChange:
        """Save this annotator's hand grade (None withdraws it), or with ``adjudicate`` the adjudicated
        grade that settles the pair (None withdraws it), to the journal, fsynced, then update the numbers.

        The numbers of every question whose labels changed are updated: another writer's lines
        read with ours count too.
        """
        chunk = self.chunk_by_id[cid]
        if qid not in self.question_by_id:
            raise KeyError(qid)
        self.writable_golden()
        label = self.labels.set_grade(qid, cid, grade, chunk.sha1, adjudicate=adjudicate)
        changes = self._regrade(qid)
        for other in self.labels.take_touched() - {qid}:
            self._regrade(other)
        return GradeChange(qid, cid, label, changes, tuple(self.labels.take_warnings()))

    def undo(self) -> GradeChange | None:
        """Undo the last label change (itself a journal line, of the same kind: an annotator's or adjudicated); None when there is nothing to undo."""
        if self.labels.can_undo:
            self.writable_golden()
        label = self.labels.undo()
        if label is None:
            return None
        changes = self._regrade(label.question)
        for other in self.labels.take_touched() - {label.question}:
            self._regrade(other)
        return GradeChange(
            label.question, label.chunk, label, changes, tuple(self.labels.take_warnings())
        )

    def _regrade(self, qid: str) -> dict[str, tuple[QuestionMetrics, QuestionMetrics]]:
        assert self.evaluation is not None
        if qid not in self.question_by_id or not self.evaluation.covers(qid):
            return {}  # unknown, or retired: in no mean (its label is saved all the same)
        return self.evaluation.update_question(qid)

    def take_label_warnings(self) -> list[str]:
        """The label journal's warnings not reported before (another writer's bad line): each once."""
        return self.labels.take_warnings()

    def refresh_labels(self) -> set[str]:
        """Apply labels another process wrote; returns the questions whose numbers or disputes changed.

        A line that cannot be read is skipped; ``take_label_warnings`` gives its warning once.
        """
        if self.labels.changed_on_disk():  # two stat calls: the app asks every second
            self.labels.refresh()
        touched = self.labels.take_touched()
        for qid in touched:
            self._regrade(qid)
        return {q for q in touched if q in self.question_by_id}

    def set_k(self, k: int) -> None:
        """Change k and recompute every value."""
        if k < 1:
            raise ValueError("k must be at least 1")
        self.settings = replace(self.settings, k=k)
        self.evaluate_all()

    def evaluate_all(self) -> Evaluation:
        """Evaluate every shown retriever on every question from scratch (after loading, or when k or
        the question list changed: an Evaluation holds a fixed k and list of questions)."""
        shown = {n: self.evaluated_rankings(self.rankings[n]) for n in self.retrievers}
        arrays: GradeArrays | None = None
        regraded: set[str] = set()
        if self.level == LEVEL_CHUNK and isinstance(self.base_grades, GradeRows) and not self.qrels:
            # The evidence rule's grades as they are, but for the questions with hand labels (or
            # whose base grades were changed): those are asked for one by one.
            arrays = self.base_grades.arrays
            regraded = self.base_grades.changed() | set(self.labels.pairs)
        self.evaluation = Evaluation(
            [q.id for q in self.questions if not q.retired],
            self.evaluation_grades,
            shown,
            self.settings.k,
            self.settings.threshold,
            grade_arrays=arrays,
            regraded=regraded,
            own={n: own for n in shown if (own := self.own_passages(n)) is not None},
        )
        return self.evaluation

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking for a golden question."""
        return self.rankings.get(name, {}).get(qid, [])

    # ---- growing the golden set ------------------------------------------------------------------

    def _rank_text(
        self, text: str, depth: int, errors: dict[str, str] | None = None
    ) -> dict[str, Ranking]:
        """The ranking of a text by every retriever object built so far (shown or only fused), live
        ones included once they have answered the golden set (a failure goes to ``errors``)."""
        from ragtui.core.retrieval.live import LiveError

        out: dict[str, Ranking] = {}
        if self.bm25 is not None:
            out["bm25"] = self.bm25.search(text, depth)
        if self.vector is not None:
            out["vector"] = self.vector.search(text, depth)
        if self.hybrid is not None and "bm25" in out and "vector" in out:
            out["hybrid"] = self.hybrid.fuse(out["bm25"], out["vector"], depth)
        for name in self.live:
            if name not in self.rankings:
                continue  # not ready, or failed on every question: not asked again here
            try:
                out[name] = self.search_live(name, text, depth)
            except LiveError as exc:
                if errors is not None:
                    errors[name] = str(exc)
        return out

    def search_adhoc(
        self, text: str, depth: int | None = None, errors: dict[str, str] | None = None
    ) -> dict[str, Ranking]:
        """Every ready chosen retriever's ranking for any typed text (ad-hoc query mode); nothing is added or written.

        bm25 is ready at once, vector and hybrid once ``prepare_vectors`` (or the app's worker) has
        built them; the vector search embeds the text through the workspace's embedding cache. Live
        retrievers are asked (through their cache) once they have answered the golden set; one that
        fails is left out and its one-line reason put in ``errors``.
        """
        if not text.strip():
            raise ValueError("the query is empty")
        found = self._rank_text(text, depth if depth is not None else self.settings.depth, errors)
        builtin = [n for n in RETRIEVER_NAMES if n in self.settings.retrievers and n in found]
        return {name: found[name] for name in builtin + [n for n in self.live if n in found]}

    def add_question(
        self,
        text: str,
        evidence: str | list[str],
        slices: Iterable[str] = (),
        qid: str | None = None,
    ) -> AddedQuestion:
        """Append a validated question to questions.jsonl (atomically) and evaluate it at once with every ready retriever."""
        if self.settings.beir is not None:
            raise InputError(
                self.settings.beir,
                "questions can only be added to a --golden folder, not to a BEIR dataset",
            )
        assert self.settings.golden is not None
        if is_bundled(self.settings.golden):
            # Checked before the bundled set is copied, so a refused question copies nothing.
            validate_new_question(
                text,
                evidence,
                list(slices),
                qid,
                [q.id for q in self.questions],
                self.chunks,
                self.corpus.documents,
                Path(self.settings.golden) / QUESTIONS_FILE,
            )
        question = append_question(
            self.writable_golden(),
            text,
            evidence,
            list(slices),
            qid,
            chunks=self.chunks,
            documents=self.corpus.documents,
        )
        return self.insert_question(question, self._rank_text(question.text, self.settings.depth))

    @property
    def retired(self) -> list[str]:
        """The ids of the retired questions (kept in the file, left out of every mean)."""
        return [q.id for q in self.questions if q.retired]

    @property
    def retired_ids(self) -> frozenset[str]:
        """The retired questions' ids, kept up to date (no pass over every question to ask)."""
        if self._retired is None:
            self._retired = frozenset(q.id for q in self.questions if q.retired)
        return self._retired

    def set_retired(self, qid: str, retired: bool) -> Question:
        """Retire a question (or bring it back): its line in questions.jsonl says so (rewritten
        atomically under the lock), and every mean is computed again without (or with) it."""
        from ragtui.core.labelling.authoring import set_retired

        if qid not in self.question_by_id:
            raise InputError(None, f"no question {qid!r}")
        if self.settings.beir is not None and self.settings.golden == self.settings.beir:
            raise InputError(
                self.settings.beir, "BEIR queries cannot be retired (no questions.jsonl)"
            )
        updated = set_retired(self.writable_golden(), qid, retired)
        position = int(self.question_positions([qid])[0])
        self.questions[position] = updated
        self.question_by_id[qid] = updated
        self._retired = None
        self.evaluate_all()
        return updated

    def insert_question(self, question: Question, rankings: dict[str, Ranking]) -> AddedQuestion:
        """Add a question already appended to questions.jsonl, with its rankings (computed off the UI
        thread by ``search_adhoc``), and evaluate it."""
        index = EvidenceIndex([c.id for c in self.chunks], [c.text for c in self.chunks])
        relevant = index.matching_chunks(question.evidence)
        self.questions.append(question)
        self.question_by_id[question.id] = question
        self.base_grades[question.id] = dict.fromkeys(relevant, EVIDENCE_GRADE)
        for name, by_question in self.rankings.items():
            if name in rankings:
                by_question[question.id] = rankings[name]
            else:
                by_question.setdefault(question.id, self._rank_new(name, question.text))
        evaluation = self.evaluate_all()
        ranked = {n: self.ranking(n, question.id) for n in self.retrievers}
        metrics = {n: evaluation.per_question[n][question.id] for n in self.retrievers}
        return AddedQuestion(question, relevant, ranked, metrics)


def _level(settings: Settings, base_source: str, chunks: list[Chunk]) -> str:
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


def needed_retrievers(settings: Settings) -> set[str]:
    """The built-in retrievers to compute: the ones shown, the one reranked, and what hybrid fuses."""
    needed = {n for n in settings.retrievers if n in RETRIEVER_NAMES}
    if settings.rerank:
        needed.add(settings.rerank_over)
    if "hybrid" in needed:
        needed |= {"bm25", "vector"}
    return needed
