"""The workspace: everything loaded for one data set and setting, shared by the CLI and the app.

Loading is split so that a UI can show something at once: ``Workspace.load`` reads the corpus,
chunks it, reads the golden set and labels and builds BM25 (fast); ``prepare_vectors`` embeds the
chunks (as windows when they are longer than the model reads) and questions (from the cache when
possible, else with the model: slow) and adds the vector and hybrid retrievers; ``prepare_rerank``
adds ``<retriever>+rerank`` when a cross-encoder is set. Each slow step has a ``compute_*`` half
that only reads (for a worker thread) and an ``apply_*`` half that changes the workspace.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunking import Chunk, chunk_documents
from ragtui.core.data.corpus import Corpus, load_folder
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question, load_questions
from ragtui.core.data.paths import writable_golden
from ragtui.core.data.tokenizer import model_limit, token_counter
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import Label, LabelJournal
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache, Progress
from ragtui.core.retrieval.external import ExternalRun, load_external_run
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.rerank import (
    RERANK_SUFFIX,
    RERANKABLE,
    CrossEncoderModel,
    Reranker,
    RerankProgress,
    RerankResult,
)
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.retrieval.windows import ChunkWindows, WindowPlan, chunk_windows, window_plan
from ragtui.core.settings import Settings

if TYPE_CHECKING:
    from ragtui.core.labelling.authoring import AddedQuestion

#: Where an effective grade came from.
SOURCE_EVIDENCE = "evidence"
SOURCE_QRELS = "qrels"
SOURCE_HAND = "hand"


@dataclass(frozen=True, slots=True)
class StaleLabel:
    """A hand label that no longer applies, with the reason; kept in the journal, never applied."""

    label: Label
    reason: str


@dataclass(frozen=True, slots=True)
class GradeChange:
    """What one label change did: the label written and each retriever's (old, new) values."""

    question: str
    chunk: str
    label: Label
    changes: dict[str, tuple[QuestionMetrics, QuestionMetrics]]


@dataclass(frozen=True)
class VectorResult:
    """What ``compute_vectors`` found: the vector and hybrid retrievers and their rankings."""

    vector: VectorRetriever
    hybrid: HybridRetriever | None
    question_vectors: dict[str, np.ndarray]
    rankings: dict[str, dict[str, Ranking]]
    warnings: list[str]
    windows: ChunkWindows | None = None


@dataclass
class Shared:
    """What several workspaces loaded one after another may share (``ragtui experiment``): the read
    and chunked corpus per data and chunking setting, and the loaded models."""

    chunkings: dict[
        tuple[object, ...], tuple[Corpus, list[Question], dict[str, dict[str, int]], list[Chunk]]
    ] = field(default_factory=dict)
    embedders: dict[str, Embedder] = field(default_factory=dict)
    cross_encoders: dict[str, CrossEncoderModel] = field(default_factory=dict)


@dataclass
class Workspace:
    """The loaded data set and its evaluation."""

    settings: Settings
    corpus: Corpus
    chunks: list[Chunk]
    questions: list[Question]
    labels: LabelJournal
    base_grades: dict[str, dict[str, int]]
    base_source: str
    bm25: BM25Retriever | None
    rankings: dict[str, dict[str, Ranking]] = field(default_factory=dict)
    evaluation: Evaluation | None = None
    vector: VectorRetriever | None = None
    hybrid: HybridRetriever | None = None
    chunk_by_id: dict[str, Chunk] = field(default_factory=dict)
    chunk_order: dict[str, int] = field(default_factory=dict)
    question_by_id: dict[str, Question] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    question_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    external: dict[str, ExternalRun] = field(default_factory=dict)
    #: Things the user should be told that are not problems (where the bundled golden set was
    #: copied to); a front end shows and clears them.
    notices: list[str] = field(default_factory=list)
    #: How chunks longer than the model reads are cut into windows (None: windows off, or the
    #: model's limit unknown); ``windows`` holds every chunk's windows once embedded.
    window_plan: WindowPlan | None = None
    windows: ChunkWindows | None = None
    #: The reranking stage (``--rerank``), and what its last run found (rankings, time per question).
    reranker: Reranker | None = None
    rerank: RerankResult | None = None
    #: Chunkings and models shared with other workspaces (None: this one's own).
    shared: Shared | None = None

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
            if name not in RETRIEVER_NAMES and name != settings.rerank_name:
                raise InputError(
                    None, f"--retrievers: unknown {name}; choose from {', '.join(RETRIEVER_NAMES)}"
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
        if settings.chunk_size is not None and not 0 <= settings.overlap < settings.chunk_size:
            raise InputError(None, "--overlap must be at least 0 and smaller than --chunk-size")
        counter = token_counter(settings.model)
        base_source = SOURCE_QRELS if settings.beir is not None else SOURCE_EVIDENCE
        key = (
            settings.beir,
            settings.corpus,
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
                corpus, questions, qrels = load_beir(settings.beir)
            else:
                assert settings.corpus is not None and settings.golden is not None
                corpus = load_folder(settings.corpus, round(settings.max_file_mb * 1048576))
                questions = load_questions(Path(settings.golden) / "questions.jsonl")
                qrels = {}
            chunks = chunk_documents(
                corpus.documents, counter, settings.chunk_size, settings.overlap
            )
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
        ws.base_grades = ws._base_grades(qrels)
        ws.warnings = list(corpus.warnings) + list(labels.warnings)
        if reranker is not None:
            ws.warnings.extend(reranker.cache.warnings)
        if "bm25" in needed or "hybrid" in needed:
            ws.bm25 = BM25Retriever(chunks, backend=settings.bm25_backend)
            ws.rankings["bm25"] = {q.id: ws.bm25.search(q.text, settings.depth) for q in questions}
        for name, path in settings.runs:
            external = load_external_run(
                name, path, ws.chunk_by_id, [q.id for q in questions], settings.depth
            )
            ws.external[name] = external
            ws.rankings[name] = external.rankings
            ws.warnings.extend(external.warnings)
        shown = {n: ws.rankings[n] for n in ws.retrievers}
        ws.evaluation = Evaluation(
            [q.id for q in questions], ws.effective_grades, shown, settings.k, settings.threshold
        )
        return ws

    def _base_grades(self, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        """The grades before hand labels: the evidence rule, or the BEIR qrels (a chunked document's chunks share its grade)."""
        if self.base_source == SOURCE_EVIDENCE:
            index = EvidenceIndex([c.id for c in self.chunks], [c.text for c in self.chunks])
            return {
                q.id: dict.fromkeys(index.matching_chunks(q.evidence), EVIDENCE_GRADE)
                for q in self.questions
            }
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

    @property
    def vectors_needed(self) -> bool:
        """Whether the settings ask for the vector or hybrid retriever (shown, or reranked)."""
        return bool(needed_retrievers(self.settings) & {"vector", "hybrid"})

    def embedding_cache(self) -> EmbeddingCache:
        """The embedding cache of the chosen model."""
        return EmbeddingCache(self.settings.model, self.settings.cache_dir)

    def compute_vectors(
        self, progress: Progress | None = None, embedder: Embedder | None = None
    ) -> VectorResult | None:
        """Embed chunks and questions (cached ones are read, not encoded) and rank with vector and hybrid.

        Reads the workspace and never changes it, so it may run in a worker thread while the UI
        reads and grades; ``apply_vectors`` then adds the result (on the UI thread).
        """
        if not self.vectors_needed:
            return None
        questions = list(self.questions)
        bm25_rankings = dict(self.rankings.get("bm25", {}))
        cache = self.embedding_cache()
        warnings = list(cache.warnings)
        model = embedder
        if model is None and self.shared is not None:
            model = self.shared.embedders.setdefault(
                self.settings.model, Embedder(self.settings.model)
            )
        model = model or Embedder(self.settings.model)
        windows = chunk_windows(self.chunks, token_counter(self.settings.model), self.window_plan)
        matrix = cache.embed(windows.texts + [q.text for q in questions], model, progress)
        n = len(windows.texts)
        window_matrix, question_matrix = matrix[:n], matrix[n:]
        question_vectors = {q.id: question_matrix[i] for i, q in enumerate(questions)}
        by_text: dict[str, np.ndarray] = {
            q.text: question_matrix[i] for i, q in enumerate(questions)
        }

        def embed_query(text: str) -> np.ndarray:
            if text in by_text:
                return by_text[text]
            embedded: np.ndarray = cache.embed([text], model)[0]
            return embedded

        vector = VectorRetriever(
            self.chunks,
            window_matrix,
            embed_query,
            windows.first_rows,
            self.window_plan.mode if self.window_plan is not None else "max",
        )
        depth = self.settings.depth
        rankings = {
            "vector": dict(
                zip(
                    (q.id for q in questions),
                    vector.search_vectors(question_matrix, depth),
                    strict=True,
                )
            )
        }
        hybrid = None
        if "hybrid" in needed_retrievers(self.settings) and self.bm25 is not None:
            hybrid = HybridRetriever(self.bm25, vector, self.chunk_order)
            rankings["hybrid"] = {
                q.id: hybrid.fuse(bm25_rankings.get(q.id, []), rankings["vector"][q.id], depth)
                for q in questions
            }
        return VectorResult(vector, hybrid, question_vectors, rankings, warnings, windows)

    def apply_vectors(self, result: VectorResult) -> None:
        """Add vector and hybrid rankings computed by ``compute_vectors`` and evaluate them."""
        assert self.evaluation is not None
        self.vector = result.vector
        self.hybrid = result.hybrid
        self.windows = result.windows
        self.question_vectors = dict(result.question_vectors)
        self.warnings.extend(result.warnings)
        for name, by_question in result.rankings.items():
            by_question = dict(by_question)
            # Questions added while the worker ran are ranked now, on this thread.
            for q in self.questions:
                if q.id not in by_question:
                    by_question[q.id] = self._rank_new(name, q.text)
            self.rankings[name] = by_question
            if name in self.settings.retrievers:
                self.evaluation.set_rankings(name, by_question)

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
        cls, settings: Settings, progress: Progress | None = None, shared: Shared | None = None
    ) -> Workspace:
        """Load everything, embeddings and reranking included (the headless commands)."""
        ws = cls.load(settings, shared)
        ws.prepare_vectors(progress)
        ws.prepare_rerank()
        return ws

    # ---- grades --------------------------------------------------------------------------------

    @property
    def retrievers(self) -> list[str]:
        """The chosen retrievers that have rankings, in the standard order, then the reranked one
        (``hybrid+rerank``), then the external runs in the order given."""
        builtin = [
            n for n in RETRIEVER_NAMES if n in self.settings.retrievers and n in self.rankings
        ]
        reranked = self.settings.rerank_name
        if reranked is not None and reranked in self.rankings:
            builtin.append(reranked)
        return builtin + [n for n, _ in self.settings.runs if n in self.rankings]

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

    def hand_grades(self, qid: str) -> dict[str, int]:
        """The hand grades of a question that apply (stale labels left out)."""
        return {
            cid: label.grade
            for cid, label in self.labels.by_question.get(qid, {}).items()
            if label.grade is not None and self.label_status(label) is None
        }

    def effective_grades(self, qid: str) -> dict[str, int]:
        """The grades metrics use: the evidence rule (or qrels), overridden by hand grades."""
        grades = dict(self.base_grades.get(qid, {}))
        grades.update(self.hand_grades(qid))
        return grades

    def grade_source(self, qid: str, cid: str) -> tuple[int | None, str | None]:
        """A chunk's effective grade for a question and where it came from (hand, evidence, qrels), or (None, None)."""
        hand = self.hand_grades(qid)
        if cid in hand:
            return hand[cid], SOURCE_HAND
        base = self.base_grades.get(qid, {})
        if cid in base:
            return base[cid], self.base_source
        return None, None

    def stale_labels(self) -> list[StaleLabel]:
        """Current hand labels that do not apply, with reasons."""
        out = []
        for label in self.labels.current.values():
            reason = self.label_status(label)
            if reason:
                out.append(StaleLabel(label, reason))
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

    def set_grade(self, qid: str, cid: str, grade: int | None) -> GradeChange:
        """Save a hand grade (None removes it) to the journal, fsynced, then update the numbers."""
        chunk = self.chunk_by_id[cid]
        if qid not in self.question_by_id:
            raise KeyError(qid)
        self.writable_golden()
        label = self.labels.set_grade(qid, cid, grade, chunk.sha1)
        return GradeChange(qid, cid, label, self._regrade(qid))

    def undo(self) -> GradeChange | None:
        """Undo the last label change (itself a journal line); None when there is nothing to undo."""
        if self.labels.can_undo:
            self.writable_golden()
        label = self.labels.undo()
        if label is None:
            return None
        return GradeChange(label.question, label.chunk, label, self._regrade(label.question))

    def _regrade(self, qid: str) -> dict[str, tuple[QuestionMetrics, QuestionMetrics]]:
        assert self.evaluation is not None
        if qid not in self.question_by_id:
            return {}
        return self.evaluation.update_question(qid)

    def refresh_labels(self) -> set[str]:
        """Apply labels another process wrote; returns the questions whose numbers changed."""
        # Compared by grade and chunk hash: a compaction renumbers lines without changing any number.
        before = {key: (lab.grade, lab.chunk_sha1) for key, lab in self.labels.current.items()}
        self.labels.refresh()
        after = {key: (lab.grade, lab.chunk_sha1) for key, lab in self.labels.current.items()}
        touched = {q for (q, c), value in after.items() if before.get((q, c)) != value} | {
            q for (q, c) in before if (q, c) not in after
        }
        for qid in touched:
            self._regrade(qid)
        return {q for q in touched if q in self.question_by_id}

    def set_k(self, k: int) -> None:
        """Change k and recompute every value."""
        if k < 1:
            raise ValueError("k must be at least 1")
        self.settings = replace(self.settings, k=k)
        shown = {n: self.rankings[n] for n in self.retrievers}
        self.evaluation = Evaluation(
            [q.id for q in self.questions], self.effective_grades, shown, k, self.settings.threshold
        )

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking for a golden question."""
        return self.rankings.get(name, {}).get(qid, [])

    def questions_in(self, ids: Iterable[str]) -> list[Question]:
        """The questions with these ids, in golden-set order."""
        wanted = set(ids)
        return [q for q in self.questions if q.id in wanted]

    # ---- growing the golden set (ragtui.core.labelling.authoring) ---------------------------------------------

    def search_adhoc(self, text: str, depth: int | None = None) -> dict[str, Ranking]:
        """Every ready chosen retriever's ranking for any typed text, without adding it to the golden set."""
        from ragtui.core.labelling.authoring import search_adhoc

        return search_adhoc(self, text, depth)

    def add_question(
        self,
        text: str,
        evidence: str | list[str],
        slices: Iterable[str] = (),
        qid: str | None = None,
    ) -> AddedQuestion:
        """Append a validated question to questions.jsonl (atomically) and evaluate it at once with every ready retriever."""
        from ragtui.core.labelling.authoring import add_question

        return add_question(self, text, evidence, list(slices), qid)

    def insert_question(self, question: Question, rankings: dict[str, Ranking]) -> AddedQuestion:
        """Add a question already appended to questions.jsonl, with its rankings (computed off the UI
        thread by ``search_adhoc``), and evaluate it."""
        from ragtui.core.labelling.authoring import AddedQuestion

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
        # Rebuilt as set_k does: an Evaluation holds a fixed list of questions.
        shown = {n: self.rankings[n] for n in self.retrievers}
        self.evaluation = Evaluation(
            [q.id for q in self.questions],
            self.effective_grades,
            shown,
            self.settings.k,
            self.settings.threshold,
        )
        ranked = {n: self.ranking(n, question.id) for n in self.retrievers}
        metrics = {n: self.evaluation.per_question[n][question.id] for n in self.retrievers}
        return AddedQuestion(question, relevant, ranked, metrics)


def needed_retrievers(settings: Settings) -> set[str]:
    """The built-in retrievers to compute: the ones shown, the one reranked, and what hybrid fuses."""
    needed = {n for n in settings.retrievers if n in RETRIEVER_NAMES}
    if settings.rerank:
        needed.add(settings.rerank_over)
    if "hybrid" in needed:
        needed |= {"bm25", "vector"}
    return needed
