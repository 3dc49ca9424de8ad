"""The workspace: everything loaded for one data set and setting, shared by the CLI and the app.

Loading is split so that a UI can show something at once: ``Workspace.load`` reads the corpus,
chunks it, reads the golden set and labels and builds BM25 (fast); ``prepare_vectors`` embeds the
chunks and questions (from the cache when possible, else with the model: slow) and adds the
vector and hybrid retrievers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunking import Chunk, chunk_documents
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
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Ranking
from ragtui.core.retrieval.bm25 import BM25Retriever
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache, Progress
from ragtui.core.retrieval.external import ExternalRun, load_external_run
from ragtui.core.retrieval.hybrid import HybridRetriever
from ragtui.core.retrieval.vector import VectorRetriever
from ragtui.core.settings import Settings

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

    # ---- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings) -> Workspace:
        """Read, chunk and index everything that needs no embedding model; BM25 is ready after this."""
        settings = settings.resolved()
        for name in settings.retrievers:
            if name not in RETRIEVER_NAMES:
                raise InputError(
                    None, f"--retrievers: unknown {name}; choose from {', '.join(RETRIEVER_NAMES)}"
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
        if settings.beir is not None:
            corpus, questions, qrels = load_beir(settings.beir)
            base_source = SOURCE_QRELS
        else:
            assert settings.corpus is not None and settings.golden is not None
            corpus = load_folder(settings.corpus, round(settings.max_file_mb * 1048576))
            questions = load_questions(Path(settings.golden) / "questions.jsonl")
            qrels = {}
            base_source = SOURCE_EVIDENCE
        chunks = chunk_documents(corpus.documents, counter, settings.chunk_size, settings.overlap)
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
        ws.base_grades = ws._base_grades(qrels)
        ws.warnings = list(corpus.warnings) + list(labels.warnings)
        if "bm25" in settings.retrievers or "hybrid" in settings.retrievers:
            ws.bm25 = BM25Retriever(chunks, backend=settings.bm25_backend)
            ws.rankings["bm25"] = {q.id: ws.bm25.search(q.text, settings.depth) for q in questions}
        for name, path in settings.runs:
            external = load_external_run(
                name, path, ws.chunk_by_id, [q.id for q in questions], settings.depth
            )
            ws.external[name] = external
            ws.rankings[name] = external.rankings
            ws.warnings.extend(external.warnings)
        ws.evaluate_all()
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
                self.evaluation.set_rankings(name, by_question)

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
    def open(cls, settings: Settings, progress: Progress | None = None) -> Workspace:
        """Load everything, embeddings included (the headless commands)."""
        ws = cls.load(settings)
        ws.prepare_vectors(progress)
        return ws

    # ---- grades --------------------------------------------------------------------------------

    @property
    def retrievers(self) -> list[str]:
        """The chosen retrievers that have rankings, in the standard order, then the external runs in the order given."""
        builtin = [
            n for n in RETRIEVER_NAMES if n in self.settings.retrievers and n in self.rankings
        ]
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
        self.evaluate_all()

    def evaluate_all(self) -> Evaluation:
        """Evaluate every shown retriever on every question from scratch (after loading, or when k or the
        question list changed: an Evaluation holds a fixed k and list of questions)."""
        shown = {n: self.rankings[n] for n in self.retrievers}
        self.evaluation = Evaluation(
            [q.id for q in self.questions],
            self.effective_grades,
            shown,
            self.settings.k,
            self.settings.threshold,
        )
        return self.evaluation

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking for a golden question."""
        return self.rankings.get(name, {}).get(qid, [])

    # ---- growing the golden set ------------------------------------------------------------------

    def _rank_text(self, text: str, depth: int) -> dict[str, Ranking]:
        """The ranking of a text by every retriever object built so far (shown or only fused)."""
        out: dict[str, Ranking] = {}
        if self.bm25 is not None:
            out["bm25"] = self.bm25.search(text, depth)
        if self.vector is not None:
            out["vector"] = self.vector.search(text, depth)
        if self.hybrid is not None and "bm25" in out and "vector" in out:
            out["hybrid"] = self.hybrid.fuse(out["bm25"], out["vector"], depth)
        return out

    def search_adhoc(self, text: str, depth: int | None = None) -> dict[str, Ranking]:
        """Every ready chosen retriever's ranking for any typed text (ad-hoc query mode); nothing is added or written.

        bm25 is ready at once, vector and hybrid once ``prepare_vectors`` (or the app's worker) has
        built them; the vector search embeds the text through the workspace's embedding cache.
        """
        if not text.strip():
            raise ValueError("the query is empty")
        found = self._rank_text(text, depth if depth is not None else self.settings.depth)
        return {
            name: found[name]
            for name in RETRIEVER_NAMES
            if name in self.settings.retrievers and name in found
        }

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
