"""``Workspace``: one loaded data set, its retrievers, grades and evaluation; the one object the
command line and the app hold.

It keeps the state; the work is done by the functions of the package's modules (``loading``,
``vectors``, ``live_answers``, ``grading``, ``question_set``), which its methods call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Corpus
from ragtui.core.data.golden import Question
from ragtui.core.data.paths import writable_golden
from ragtui.core.labelling.authoring import AddedQuestion
from ragtui.core.labelling.journal import Label, LabelJournal
from ragtui.core.metrics.evaluation import Evaluation, OwnPassages
from ragtui.core.metrics.tables import GradeArrays, GradeRows
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.embeddings import EmbeddingCache, Progress, TextEncoder
from ragtui.core.retrieval.external import ExternalRun
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.live import LiveProgress, LiveRetriever, LiveStatus
from ragtui.core.retrieval.rerank import Reranker, RerankProgress, RerankResult
from ragtui.core.retrieval.results_cache import TextKeys
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.core.workspace import grading, live_answers, loading, question_set, vectors
from ragtui.core.workspace.grading import LEVEL_CHUNK, GradeChange, StaleLabel
from ragtui.core.workspace.live_answers import ChunkTexts, LiveResult, PassageCounts
from ragtui.core.workspace.loading import Shared
from ragtui.core.workspace.vectors import VectorResult


def not_applying_notes(ws: Workspace) -> list[str]:
    """Lines for what counts nowhere or differently than it seems: hand grades that do not apply
    to the chunking in use, and Milvus's BM25 beside ragtui's of another formula."""
    out = []
    stale = grading.count_stale(ws)
    if stale:
        chunks = ws.settings.chunks
        why = (
            f" (--chunks {visible_line(str(chunks))} names chunks otherwise)"
            if chunks is not None
            else ""
        )
        many = stale != 1
        out.append(
            f"{stale} hand grade{'s' if many else ''} do{'' if many else 'es'} not apply to "
            f"the chunking in use{why} and count{'' if many else 's'} nowhere: ragtui check lists "
            f"{'them' if many else 'it'}"
        )
    shown = set(ws.settings.retrievers) | set(ws.live)
    if ws.settings.bm25_backend != "bm25s" and shown & {"milvus-bm25", "milvus-hybrid"}:
        out.append(
            "milvus-bm25 ranks with Milvus's BM25 (Lucene's formula, as bm25s), not rank-bm25's: "
            "its numbers (and milvus-hybrid's) differ from bm25's (and hybrid's); "
            "--bm25-backend bm25s makes them equal (docs/retriever-milvus.md)"
        )
    return out


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
    chunk_texts: ChunkTexts = field(default_factory=ChunkTexts)
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

    # ---- loading (``loading``) -------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings, shared: Shared | None = None) -> Workspace:
        """Read, chunk and index everything that needs no embedding model; BM25 is ready after this.

        With ``shared``, a corpus already read and chunked the same way is reused, and so are
        loaded models.
        """
        settings = settings.checked()
        data = loading.read_data(settings, shared)
        ws = cls(
            settings=settings,
            corpus=data.corpus,
            chunks=data.chunks,
            questions=data.questions,
            labels=loading.label_journal(settings),
            base_grades={},
            base_source=data.base_source,
            bm25=None,
            window_plan=loading.windows_for(settings, data.counter),
            reranker=loading.reranker_for(settings, data.chunks, shared),
            shared=shared,
        )
        loading.index(ws, data.qrels)
        loading.grade(ws)
        ws.warnings = loading.load_warnings(ws, data)
        ws.labels.take_touched()  # everything is evaluated below
        loading.add_live_retrievers(ws)
        ws.warnings += not_applying_notes(ws)
        vectors.add_bm25(ws)
        loading.add_runs(ws)
        ws.evaluate_all()
        return ws

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

    # ---- vectors and reranking (``vectors``) ---------------------------------------------------

    @property
    def vectors_needed(self) -> bool:
        """Whether the settings ask for the vector or hybrid retriever (shown, or reranked)."""
        return vectors.vectors_needed(self.settings)

    def embedding_cache(self, embedder: TextEncoder | None = None) -> EmbeddingCache:
        """The embedding cache of the chosen model (or of the embedder given in its place)."""
        return vectors.embedding_cache(self.settings, embedder)

    def cached_vectors(self, embedder: TextEncoder | None = None) -> VectorResult | None:
        """The vector and hybrid rankings of the results cache, or None (``vectors.cached_vectors``)."""
        return vectors.cached_vectors(self, embedder)

    def compute_vectors(
        self,
        progress: Progress | None = None,
        embedder: TextEncoder | None = None,
        known: VectorResult | None = None,
    ) -> VectorResult | None:
        """Build the vector and hybrid retrievers and rank with them; only reads (a worker may call it)."""
        return vectors.compute_vectors(self, progress, embedder, known)

    def apply_vectors(self, result: VectorResult) -> bool:
        """Add what ``compute_vectors`` or ``cached_vectors`` found; whether any ranking changed."""
        return vectors.apply_vectors(self, result)

    def prepare_vectors(
        self, progress: Progress | None = None, embedder: TextEncoder | None = None
    ) -> None:
        """``compute_vectors`` then ``apply_vectors``: the headless commands' one-step form."""
        result = self.compute_vectors(progress, embedder)
        if result is not None:
            self.apply_vectors(result)

    def compute_rerank(self, progress: RerankProgress | None = None) -> RerankResult | None:
        """Rerank every question's first stage with the cross-encoder; only reads (and caches scores)."""
        return vectors.compute_rerank(self, progress)

    def apply_rerank(self, result: RerankResult) -> None:
        """Add the reranked rankings computed by ``compute_rerank`` and evaluate them."""
        vectors.apply_rerank(self, result)

    def prepare_rerank(self, progress: RerankProgress | None = None) -> None:
        """``compute_rerank`` then ``apply_rerank`` (nothing without a reranker)."""
        result = self.compute_rerank(progress)
        if result is not None:
            self.apply_rerank(result)

    # ---- live retrievers (``live_answers``) ----------------------------------------------------

    def compute_live(
        self,
        names: Iterable[str] | None = None,
        *,
        refresh: bool = False,
        progress: LiveProgress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> LiveResult:
        """Each live retriever's answers to every golden question (cached ones read); only reads."""
        return live_answers.compute_live(
            self, names, refresh=refresh, progress=progress, cancelled=cancelled
        )

    def refresh_live(
        self,
        names: Iterable[str] | None = None,
        progress: LiveProgress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> LiveResult:
        """``compute_live`` asking every question again (the palette's refresh); apply with ``apply_live``."""
        return self.compute_live(names, refresh=True, progress=progress, cancelled=cancelled)

    def apply_live(self, result: LiveResult) -> None:
        """Add the live answers of ``compute_live`` (through ``map_hits``), then their numbers."""
        live_answers.apply_live(self, result)

    def map_hits(
        self, name: str, hits: Iterable[Hit], counts: dict[str, set[str]] | None = None
    ) -> list[Hit]:
        """A live retriever's answer as ragtui judges it (``live_answers.map_hits``); only reads."""
        return live_answers.map_hits(self, name, hits, counts)

    def add_foreign(self, hits: Iterable[Hit], origin: str) -> set[str]:
        """Keep the passages a live retriever brought with their text (an ad-hoc search done off the
        UI thread with ``run_live`` and ``map_hits``); returns the golden questions whose numbers
        changed: none, since a retriever's own passages count only for its golden rankings."""
        live_answers.add_foreign(self, hits, origin)
        return set()

    def search_live(self, name: str, text: str, depth: int | None = None) -> Ranking:
        """One live retriever's ranking of any text, through its cache (LiveError when it fails)."""
        return live_answers.search_live(self, name, text, depth)

    def own_passages(self, name: str) -> OwnPassages | None:
        """How ``name`` is judged when it returned passages of its own (None: on ragtui's chunks)."""
        return live_answers.own_passages(self, name)

    # ---- the evaluation ------------------------------------------------------------------------

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

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking for a golden question."""
        return self.rankings.get(name, {}).get(qid, [])

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
        ids = [q.id for q in self.questions if not q.retired]
        owned = {n: own for n in shown if (own := self.own_passages(n)) is not None}
        rows = None
        if ids == self.loaded_ids:
            # The questions as loaded: the rankings tables' own rows (no lookup per question).
            ids, rows = self.loaded_ids, self.loaded_rows
        self.evaluation = Evaluation(
            ids,
            self.evaluation_grades,
            shown,
            self.settings.k,
            self.settings.threshold,
            grade_arrays=arrays,
            regraded=regraded,
            own=owned,
            rows=rows,
            units=live_answers.evidence_units(self, own=bool(owned)),
        )
        return self.evaluation

    def set_k(self, k: int) -> None:
        """Change k and recompute every value."""
        if k < 1:
            raise ValueError("k must be at least 1")
        self.settings = replace(self.settings, k=k)
        self.evaluate_all()

    def doc_of(self, cid: str) -> str:
        """The document of a chunk id (an id that is no chunk stands for itself: a document id)."""
        return grading.doc_of(self, cid)

    def evaluated_ranking(self, ranking: Ranking) -> Ranking:
        """A ranking as the metrics read it: chunks, or documents at their best chunk's rank."""
        return grading.evaluated_ranking(self, ranking)

    def evaluated_rankings(
        self, by_question: MutableMapping[str, Ranking]
    ) -> MutableMapping[str, Ranking]:
        """``evaluated_ranking`` of every question's ranking (the same mapping at chunk level)."""
        return grading.evaluated_rankings(self, by_question)

    def evaluation_grades(self, qid: str) -> dict[str, int]:
        """The grades the metrics use: chunk grades, or at document level the qrels with hand grades lifted."""
        return grading.evaluation_grades(self, qid)

    # ---- grades (``grading``) ------------------------------------------------------------------

    def label_status(self, label: Label) -> str | None:
        """Why a hand label does not apply (unknown question, missing or edited chunk), or None if it applies."""
        return grading.label_status(self, label)

    def hand_label(self, qid: str, cid: str) -> Label | None:
        """The hand label that counts for a pair (adjudicated, else an annotator's), or None."""
        return grading.hand_label(self, qid, cid)

    def hand_labels(self, qid: str) -> dict[str, Label]:
        """``hand_label`` of every labelled chunk of a question that has one (chunk id -> label)."""
        return grading.hand_labels(self, qid)

    def hand_grades(self, qid: str, own: bool = False) -> dict[str, int]:
        """The hand grades of a question that apply (``own``: of live retrievers' own passages too)."""
        return grading.hand_grades(self, qid, own)

    def effective_grades(self, qid: str) -> dict[str, int]:
        """The grades ragtui's retrievers are judged by: the evidence rule (or qrels), hand grades over them."""
        return grading.effective_grades(self, qid)

    def grade_source(self, qid: str, cid: str) -> tuple[int | None, str | None]:
        """A chunk's effective grade for a question and where it came from, or (None, None)."""
        return grading.grade_source(self, qid, cid)

    def annotator_grades(self, qid: str, cid: str) -> dict[str, int]:
        """Each annotator's current grade of a pair that applies, by name (the adjudicated grade aside)."""
        return grading.annotator_grades(self, qid, cid)

    def judge_verdicts(self, qid: str, cid: str) -> dict[str, Label]:
        """Each model judge's current verdict of a pair that applies, by judge name (counted or not)."""
        return grading.judge_verdicts(self, qid, cid)

    def adjudicated_grade(self, qid: str, cid: str) -> int | None:
        """The adjudicated grade of a pair when there is one that applies, else None."""
        return grading.adjudicated_grade(self, qid, cid)

    def disputed(self, qid: str, cid: str) -> bool:
        """Whether annotators gave a pair different grades and no adjudicated grade settles it."""
        return grading.disputed(self, qid, cid)

    def disputed_pairs(self, qid: str | None = None) -> list[tuple[str, str]]:
        """The disputed (question, chunk) pairs, of one question or of all, in golden-set then chunk order."""
        return grading.disputed_pairs(self, qid)

    def disputed_questions(self) -> list[str]:
        """The questions with at least one disputed pair, in golden-set order."""
        return grading.disputed_questions(self)

    def stale_labels(self) -> list[StaleLabel]:
        """Current hand labels that do not apply, with reasons, in journal order."""
        return grading.stale_labels(self)

    def question_positions(self, qids: Iterable[str]) -> np.ndarray:
        """Each question's place in the golden set (``ws.questions``), ``-1`` for an unknown id."""
        return grading.question_positions(self, qids)

    def set_grade(
        self, qid: str, cid: str, grade: int | None, adjudicate: bool = False
    ) -> GradeChange:
        """Save a hand grade (None withdraws it; ``adjudicate``: the grade that settles the pair) to
        the journal, fsynced, then update the numbers of every question whose labels changed."""
        return grading.set_grade(self, qid, cid, grade, adjudicate)

    def undo(self) -> GradeChange | None:
        """Undo the last label change (itself a journal line); None when there is nothing to undo."""
        return grading.undo(self)

    def refresh_labels(self) -> set[str]:
        """Apply labels another process wrote; the questions whose numbers or disputes changed."""
        return grading.refresh_labels(self)

    def take_label_warnings(self) -> list[str]:
        """The label journal's warnings not reported before (another writer's bad line): each once."""
        return self.labels.take_warnings()

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

    # ---- the golden questions (``question_set``) -----------------------------------------------

    def search_adhoc(
        self, text: str, depth: int | None = None, errors: dict[str, str] | None = None
    ) -> dict[str, Ranking]:
        """Every ready chosen retriever's ranking for any typed text; nothing is added or written."""
        return question_set.search_adhoc(self, text, depth, errors)

    def add_question(
        self,
        text: str,
        evidence: str | list[str],
        slices: Iterable[str] = (),
        qid: str | None = None,
    ) -> AddedQuestion:
        """Append a validated question to questions.jsonl (atomically) and evaluate it at once with every ready retriever."""
        return question_set.add_question(self, text, evidence, slices, qid)

    def insert_question(self, question: Question, rankings: dict[str, Ranking]) -> AddedQuestion:
        """Add a question already appended to questions.jsonl, with its rankings (computed off the UI
        thread by ``search_adhoc``), and evaluate it."""
        return question_set.insert_question(self, question, rankings)

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
        updated = question_set.retire(self, qid, retired)
        self._retired = None
        self.evaluate_all()
        return updated
