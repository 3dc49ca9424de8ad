"""The workspace: everything loaded for one data set and setting, shared by the CLI and the app.

Loading is split so that a UI can show something at once: ``Workspace.load`` reads the corpus,
chunks it, reads the golden set and labels and builds BM25 (fast); ``prepare_vectors`` embeds the
chunks and questions (from the cache when possible, else with the model: slow) and adds the
vector and hybrid retrievers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunking import Chunk, chunk_documents
from ragtui.core.data.chunks_file import load_chunks_file
from ragtui.core.data.corpus import Corpus, load_folder
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question, load_questions
from ragtui.core.data.paths import is_bundled, writable_golden
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import (
    QUESTIONS_FILE,
    AddedQuestion,
    append_question,
    validate_new_question,
)
from ragtui.core.labelling.journal import Label, LabelJournal
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit, Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.connectors import build_live_retrievers
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache, Progress
from ragtui.core.retrieval.external import ExternalRun, load_external_run
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.live import (
    LiveError,
    LiveProgress,
    LiveRetriever,
    LiveRun,
    LiveStatus,
    examples,
    run_live,
)
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.settings import Settings

#: Where an effective grade came from.
SOURCE_EVIDENCE = "evidence"
SOURCE_QRELS = "qrels"
SOURCE_HAND = "hand"

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
    #: The live retrievers (plugins, HTTP APIs, Milvus), built but not asked yet, in display order.
    live: dict[str, LiveRetriever] = field(default_factory=dict)
    #: Each live retriever's state and error message, for its list header.
    live_status: dict[str, LiveStatus] = field(default_factory=dict)
    #: Chunks a live retriever returned with their text that the corpus does not hold.
    foreign: dict[str, Chunk] = field(default_factory=dict)
    #: ``chunk`` or ``document``: what the metrics rank and judge (see ``evaluation_grades``).
    level: str = LEVEL_CHUNK
    #: The qrels as the data set gives them (BEIR: question -> document -> grade).
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)

    # ---- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings) -> Workspace:
        """Read, chunk and index everything that needs no embedding model; BM25 is ready after this."""
        settings = settings.resolved()
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
        own = load_chunks_file(settings.chunks) if settings.chunks is not None else None
        if own is not None and settings.corpus is not None:
            raise InputError(
                None, "--chunks replaces --corpus (the chunks are the corpus); give one of them"
            )
        if settings.beir is not None:
            corpus, questions, qrels = load_beir(settings.beir, with_corpus=own is None)
            base_source = SOURCE_QRELS
        else:
            assert settings.golden is not None
            if own is None:
                assert settings.corpus is not None
                corpus = load_folder(settings.corpus, round(settings.max_file_mb * 1048576))
            questions = load_questions(Path(settings.golden) / "questions.jsonl")
            qrels = {}
            base_source = SOURCE_EVIDENCE
        if own is not None:
            corpus, chunks = own.corpus, own.chunks
        else:
            counter = token_counter(settings.model)
            chunks = chunk_documents(
                corpus.documents, counter, settings.chunk_size, settings.overlap
            )
        if not chunks:
            raise InputError(corpus.source, "the corpus gave no chunks (every document is empty)")
        assert settings.golden is not None
        labels = LabelJournal(Path(settings.golden) / "labels.jsonl", settings.annotator)
        ws = cls(
            settings=settings,
            corpus=corpus,
            chunks=chunks,
            questions=questions,
            labels=labels,
            base_grades={},
            base_source=base_source,
            bm25=None,
        )
        ws.chunk_by_id = {c.id: c for c in chunks}
        ws.chunk_order = {c.id: i for i, c in enumerate(chunks)}
        ws.question_by_id = {q.id: q for q in questions}
        ws.qrels = qrels
        ws.level = _level(settings, base_source, chunks)
        ws.base_grades = ws._base_grades(qrels)
        ws.warnings = list(corpus.warnings) + list(labels.warnings)
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
        if "bm25" in settings.retrievers or "hybrid" in settings.retrievers:
            ws.bm25 = BM25Retriever(chunks, backend=settings.bm25_backend)
            ws.rankings["bm25"] = {q.id: ws.bm25.search(q.text, settings.depth) for q in questions}
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

    def _base_grades(self, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        # At document level these chunk grades are what the app shows beside a chunk; the metrics
        # read the qrels themselves (``evaluation_grades``).
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
        """Whether the settings ask for the vector or hybrid retriever."""
        return any(n in self.settings.retrievers for n in ("vector", "hybrid"))

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
        model = embedder or Embedder(self.settings.model)
        matrix = cache.embed(
            [c.text for c in self.chunks] + [q.text for q in questions], model, progress
        )
        n = len(self.chunks)
        chunk_matrix, question_matrix = matrix[:n], matrix[n:]
        question_vectors = {q.id: question_matrix[i] for i, q in enumerate(questions)}
        by_text = {q.text: question_matrix[i] for i, q in enumerate(questions)}

        def embed_query(text: str) -> np.ndarray:
            row: np.ndarray = by_text[text] if text in by_text else cache.embed([text], model)[0]
            return row

        vector = VectorRetriever(self.chunks, chunk_matrix, embed_query)
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
        if "hybrid" in self.settings.retrievers and self.bm25 is not None:
            hybrid = HybridRetriever(self.bm25, vector, self.chunk_order)
            rankings["hybrid"] = {
                q.id: hybrid.fuse(bm25_rankings.get(q.id, []), rankings["vector"][q.id], depth)
                for q in questions
            }
        return VectorResult(vector, hybrid, question_vectors, rankings, warnings)

    def apply_vectors(self, result: VectorResult) -> None:
        """Add vector and hybrid rankings computed by ``compute_vectors`` and evaluate them."""
        assert self.evaluation is not None
        self.vector = result.vector
        self.hybrid = result.hybrid
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
                self.evaluation.set_rankings(name, self.evaluated_rankings(by_question))

    def _rank_new(self, name: str, text: str) -> Ranking:
        """One retriever's ranking of a text that was not embedded with the golden set."""
        depth = self.settings.depth
        if name == "vector" and self.vector is not None:
            return self.vector.search(text, depth)
        if name == "hybrid" and self.hybrid is not None:
            return self.hybrid.search(text, depth)
        return []

    def prepare_vectors(
        self, progress: Progress | None = None, embedder: Embedder | None = None
    ) -> None:
        """``compute_vectors`` then ``apply_vectors``: the headless commands' one-step form."""
        result = self.compute_vectors(progress, embedder)
        if result is not None:
            self.apply_vectors(result)

    @classmethod
    def open(
        cls,
        settings: Settings,
        progress: Progress | None = None,
        live_progress: LiveProgress | None = None,
    ) -> Workspace:
        """Load everything, embeddings and live retrievers' answers included (the headless commands)."""
        ws = cls.load(settings)
        ws.prepare_vectors(progress)
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
        """Add live answers computed by ``compute_live``: rankings, statuses, the chunks they brought, then the numbers.

        A retriever that answered no question keeps whatever rankings it had (none on the first
        run) and shows its error; one that answered some shows how many it could not answer, and
        those count as empty runs.
        """
        assert self.evaluation is not None
        touched: set[str] = set()
        for name, run in result.runs.items():
            self.live_status[name] = run.status
            if not run.hits:
                continue
            touched |= self._add_foreign(
                [h for hits in run.hits.values() for h in hits], origin=name
            )
            previous = self.rankings.get(name, {})
            by_question: dict[str, Ranking] = {}
            for q in self.questions:
                if q.id in run.hits:
                    by_question[q.id] = [(h.id, h.score) for h in run.hits[q.id]]
                elif q.id in run.failed:
                    by_question[q.id] = []
                else:  # a question added while the worker ran keeps the ranking it was given
                    by_question[q.id] = previous.get(q.id, [])
            self.rankings[name] = by_question
            self._warn_unknown(name, run)
        for qid in touched:
            if qid in self.question_by_id:
                self.evaluation.update_question(qid)
        for name, run in result.runs.items():
            if run.hits and name in self.rankings:
                self.evaluation.set_rankings(name, self.evaluated_rankings(self.rankings[name]))

    def _warn_unknown(self, name: str, run: LiveRun) -> None:
        unknown = sorted(
            {h.id for hits in run.hits.values() for h in hits if h.id not in self.chunk_by_id}
            - {c.doc for c in self.chunks}
        )
        if unknown:
            self.warnings.append(
                f"{name}: {len(unknown)} result id{'s' if len(unknown) != 1 else ''} neither among the "
                f"chunks nor returned with a text (e.g. {examples(unknown, 3)}); "
                "they count as not relevant and are shown by id"
            )

    def add_foreign(self, hits: Iterable[Hit], origin: str) -> set[str]:
        """Keep the chunks a live retriever brought with their text (an ad-hoc search done off the
        UI thread with ``run_live``); returns the questions whose grades changed."""
        touched = self._add_foreign(hits, origin)
        if touched and self.evaluation is not None:
            for qid in touched:
                self.evaluation.update_question(qid)
        return touched

    def _add_foreign(self, hits: Iterable[Hit], origin: str) -> set[str]:
        """Keep the chunks of ``hits`` that the corpus lacks and that came with their text; returns the questions whose grades changed."""
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
            return set()
        touched: set[str] = set()
        if self.base_source == SOURCE_EVIDENCE:
            index = EvidenceIndex([c.id for c in new], [c.text for c in new])
            for q in self.questions:
                found = index.matching_chunks(q.evidence)
                if found:
                    self.base_grades.setdefault(q.id, {}).update(
                        dict.fromkeys(found, EVIDENCE_GRADE)
                    )
                    touched.add(q.id)
        else:
            for q in self.questions:
                graded = self.qrels.get(q.id, {})
                for chunk in new:
                    if chunk.doc in graded:
                        self.base_grades.setdefault(q.id, {})[chunk.id] = graded[chunk.doc]
                        touched.add(q.id)
        return touched

    def search_live(self, name: str, text: str, depth: int | None = None) -> Ranking:
        """One live retriever's ranking of any text (an ad-hoc query, a new question), through its cache.

        The chunks it brings with their text are kept, so the chunk view can show them; an error
        is raised as LiveError with its one-line reason.
        """
        depth = depth if depth is not None else self.settings.depth
        run = run_live(self.live[name], [("", text)], depth, root=self.settings.cache_dir)
        if "" in run.failed:
            raise LiveError(run.failed[""])
        hits = run.hits.get("", [])
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

    def evaluated_rankings(self, by_question: dict[str, Ranking]) -> dict[str, Ranking]:
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
            return self.effective_grades(qid)
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
        """The chosen retrievers that have rankings: the built-in ones in the standard order, the external runs, then the live ones."""
        builtin = [
            n for n in RETRIEVER_NAMES if n in self.settings.retrievers and n in self.rankings
        ]
        runs = [n for n, _ in self.settings.runs if n in self.rankings]
        return builtin + runs + [n for n in self.live if n in self.rankings]

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
        self.evaluate_all()

    def evaluate_all(self) -> Evaluation:
        """Evaluate every shown retriever on every question from scratch (after loading, or when k or
        the question list changed: an Evaluation holds a fixed k and list of questions)."""
        shown = {n: self.evaluated_rankings(self.rankings[n]) for n in self.retrievers}
        self.evaluation = Evaluation(
            [q.id for q in self.questions if not q.retired],
            self.evaluation_grades,
            shown,
            self.settings.k,
            self.settings.threshold,
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
        position = next(i for i, q in enumerate(self.questions) if q.id == qid)
        self.questions[position] = updated
        self.question_by_id[qid] = updated
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
