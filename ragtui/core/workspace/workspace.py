"""``Workspace``: one loaded data set, its retrievers, grades and evaluation; the one object the
command line and the app hold, and the one owner of its parts.

A workspace is a few parts, each built by one function and replaced whole by the methods here:
the data (``loading.Data``: corpus, chunks, qrels; never changed), the golden questions
(``question_set.QuestionSet``), every passage by id (``loading.Passages``: ragtui's chunks, then
the live retrievers' own, appended), the grades (``grading.Grades``: label journal, base grades),
the rankings (``vectors.Ranked``), the live retrievers (``live_answers.Live``) and the
``Evaluation`` of the shown retrievers. The methods are the changes: each slow step has a
``compute_*`` half that only reads (a worker thread may run it) and an ``apply_*`` half.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question
from ragtui.core.data.paths import is_bundled, writable_golden
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import (
    QUESTIONS_FILE,
    AddedQuestion,
    append_question,
    validate_new_question,
)
from ragtui.core.labelling.authoring import set_retired as write_retired
from ragtui.core.metrics.evaluation import Evaluation, OwnPassages
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.metrics.tables import GradeArrays, GradeRows, RankingTable
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Hit, Ranking
from ragtui.core.retrieval.embeddings import EmbeddingCache, Progress, TextEncoder
from ragtui.core.retrieval.live import LiveError, LiveProgress, run_live
from ragtui.core.retrieval.rerank import RerankProgress, RerankResult
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.core.workspace import grading, live_answers, loading, vectors
from ragtui.core.workspace.grading import GradeChange, Grades
from ragtui.core.workspace.live_answers import PASSAGE_KINDS, Live, LiveResult, PassageCounts
from ragtui.core.workspace.loading import LEVEL_CHUNK, Data, Passages, Shared
from ragtui.core.workspace.question_set import QuestionSet
from ragtui.core.workspace.vectors import Ranked, VectorResult


def not_applying_notes(ws: Workspace) -> list[str]:
    """Lines for what counts nowhere or differently than it seems: hand grades that do not apply
    to the chunking in use, and Milvus's BM25 beside ragtui's of another formula."""
    out = []
    stale = ws.grades.count_stale()
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
    shown = set(ws.settings.retrievers) | set(ws.live.retrievers)
    if ws.settings.bm25_backend != "bm25s" and shown & {"milvus-bm25", "milvus-hybrid"}:
        out.append(
            "milvus-bm25 ranks with Milvus's BM25 (Lucene's formula, as bm25s), not rank-bm25's: "
            "its numbers (and milvus-hybrid's) differ from bm25's (and hybrid's); "
            "--bm25-backend bm25s makes them equal (docs/retriever-milvus.md)"
        )
    return out


@dataclass
class Workspace:
    """The loaded data set and its evaluation: its parts, and the changes to them."""

    settings: Settings
    data: Data
    questions: QuestionSet
    passages: Passages
    grades: Grades
    ranked: Ranked
    live: Live
    evaluation: Evaluation | None = None
    warnings: list[str] = field(default_factory=list)
    #: Things the user should be told that are not problems (where the bundled golden set was
    #: copied to); a front end shows and clears them.
    notices: list[str] = field(default_factory=list)
    #: Chunkings and models shared with other workspaces (None: this one's own).
    shared: Shared | None = None

    # ---- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, settings: Settings, shared: Shared | None = None) -> Workspace:
        """Read, chunk and index everything that needs no embedding model; BM25 is ready after this.

        With ``shared``, a corpus already read and chunked the same way is reused, and so are
        loaded models.
        """
        settings = settings.checked()
        data, read = loading.read_data(settings, shared)
        questions = QuestionSet.of(read)
        passages = Passages.of(data.chunks)
        cache_warnings: list[str] = []
        grades = grading.grades(settings, data, questions, passages, cache_warnings)
        ranked_warnings: list[str] = []
        live_warnings: list[str] = []
        live = live_answers.live_part(settings, data, live_warnings)
        ranked = vectors.ranked(settings, data, questions, shared, ranked_warnings)
        warnings = loading.load_warnings(settings, data, questions, grades.labels, ranked.reranker)
        ws = cls(settings, data, questions, passages, grades, ranked, live, shared=shared)
        grades.labels.take_touched()  # everything is evaluated below
        ws.warnings = [*warnings, *cache_warnings, *live_warnings]
        ws.warnings += not_applying_notes(ws)
        ws.warnings += [w for w in ranked_warnings if w not in ws.warnings]
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
        if ws.live.retrievers:
            ws.apply_live(ws.compute_live(progress=live_progress, refresh=settings.refresh))
        return ws

    def _set_questions(self, questions: QuestionSet) -> None:
        """Replace the questions part (and the grades, which read it), then evaluate again."""
        self.questions = questions
        self.grades = replace(self.grades, questions=questions)
        self.evaluate_all()

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
        return vectors.cached_vectors(
            self.settings, self.data, self.questions, self.ranked, embedder
        )

    def compute_vectors(
        self,
        progress: Progress | None = None,
        embedder: TextEncoder | None = None,
        known: VectorResult | None = None,
    ) -> VectorResult | None:
        """Build the vector and hybrid retrievers and rank with them; only reads (a worker may call it)."""
        return vectors.compute_vectors(
            self.settings,
            self.data,
            self.questions,
            self.ranked,
            self.shared,
            progress,
            embedder,
            known,
        )

    def apply_vectors(self, result: VectorResult) -> bool:
        """Add vector and hybrid rankings computed by ``compute_vectors`` (or read by
        ``cached_vectors``) and evaluate them; retrievers given with them are kept. Returns whether
        any ranking changed (False: the same lists were applied before)."""
        assert self.evaluation is not None
        if result.vector is not None:
            self.ranked = replace(
                self.ranked,
                vector=result.vector,
                hybrid=result.hybrid,
                windows=result.windows,
                question_vectors=result.question_vectors,
            )
        elif result.windows is not None and self.ranked.windows is None:
            self.ranked = replace(self.ranked, windows=result.windows)
        self.warnings.extend(w for w in result.warnings if w not in self.warnings)
        changed = False
        for name, given in result.rankings.items():
            current = self.ranked.rankings.get(name)
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
            loaded = len(self.questions.loaded_ids)
            added = self.questions[loaded:] if isinstance(given, RankingTable) else self.questions
            for q in added:
                if q.id not in by_question:
                    by_question[q.id] = self.ranked.rank_new(name, q.text, self.settings.depth)
            self.ranked = self.ranked.with_rankings(name, by_question)
            if name in self.settings.retrievers:
                self.evaluation.set_rankings(name, self.grades.evaluated_rankings(by_question))
            changed = True
        return changed

    def prepare_vectors(
        self, progress: Progress | None = None, embedder: TextEncoder | None = None
    ) -> None:
        """``compute_vectors`` then ``apply_vectors``: the headless commands' one-step form."""
        result = self.compute_vectors(progress, embedder)
        if result is not None:
            self.apply_vectors(result)

    def compute_rerank(self, progress: RerankProgress | None = None) -> RerankResult | None:
        """Rerank every question's first stage with the cross-encoder; only reads (and caches scores)."""
        reranker = self.ranked.reranker
        first = self.ranked.rankings.get(reranker.over) if reranker is not None else None
        return vectors.compute_rerank(reranker, first, self.questions, progress)

    def apply_rerank(self, result: RerankResult) -> None:
        """Add the reranked rankings computed by ``compute_rerank`` and evaluate them."""
        assert self.evaluation is not None
        by_question = dict(result.rankings)
        for q in self.questions:
            if q.id not in by_question:
                by_question[q.id] = self.ranked.rank_new(result.name, q.text, self.settings.depth)
        self.ranked = replace(self.ranked.with_rankings(result.name, by_question), rerank=result)
        self.warnings.extend(result.warnings)
        self.evaluation.set_rankings(result.name, by_question)

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
        live = self.live.retrievers
        chosen = {n: live[n] for n in (live if names is None else names) if n in live}
        return live_answers.compute_live(
            self.settings,
            chosen,
            self.questions,
            refresh=refresh,
            progress=progress,
            cancelled=cancelled,
        )

    def apply_live(self, result: LiveResult) -> None:
        """Add live answers computed by ``compute_live``: rankings, statuses, the passages they
        brought, then the numbers.

        Each answer is read through ``map_hits``. No other retriever's numbers change. A retriever
        that answered no question keeps whatever rankings it had (none on the first run) and shows
        its error; one that answered some shows how many it could not answer, and those count as
        empty runs.
        """
        evaluation = self.evaluation
        assert evaluation is not None
        status, counted = dict(self.live.status), dict(self.live.counts)
        for name, run in result.runs.items():
            status[name] = run.status
            if not run.hits:
                continue
            counts: dict[str, set[str]] = {kind: set() for kind in PASSAGE_KINDS}
            mapped = {
                qid: live_answers.map_hits(self.passages, name, hits, counts)
                for qid, hits in run.hits.items()
            }
            self.add_foreign([h for hits in mapped.values() for h in hits], origin=name)
            counted[name] = PassageCounts(*(len(counts[kind]) for kind in PASSAGE_KINDS))
            previous = self.ranked.rankings.get(name, {})
            by_question: dict[str, Ranking] = {}
            for q in self.questions:
                if q.id in mapped:
                    by_question[q.id] = [(h.id, h.score) for h in mapped[q.id]]
                elif q.id in run.failed:
                    by_question[q.id] = []
                else:  # a question added while the worker ran keeps the ranking it was given
                    by_question[q.id] = previous.get(q.id, [])
            self.ranked = self.ranked.with_rankings(name, by_question)
            self.warnings += live_answers.unknown_warning(name, counts["unknown"], self.data)
        self.live = replace(self.live, status=status, counts=counted)
        changed = [n for n, run in result.runs.items() if run.hits and n in self.ranked.rankings]
        own = {name: self.own_passages(name) for name in changed}
        if evaluation.units is None and any(own.values()):
            # Rows of different units: every row becomes evidence-level (docs/metrics.md#units).
            for name in changed:
                evaluation.own.pop(name, None)
            evaluation.set_units(
                live_answers.evidence_units(self.settings, self.grades, True, self.warnings)
            )
        for name in changed:
            rankings = self.grades.evaluated_rankings(self.ranked.rankings[name])
            evaluation.set_rankings(name, rankings, own[name])

    def add_foreign(self, hits: Iterable[Hit], origin: str) -> set[str]:
        """Keep the passages a live retriever brought with their text (an ad-hoc search done off the
        UI thread with ``run_live`` and ``map_hits``); returns the golden questions whose numbers
        changed: none, since a retriever's own passages count only for its golden rankings."""
        self.passages.add(hits, origin, self.questions, self.data)
        return set()

    def search_live(self, name: str, text: str, depth: int | None = None) -> Ranking:
        """One live retriever's ranking of any text (an ad-hoc query, a new question), through its
        cache; the passages it brings with their text are kept, so the chunk view can show them.
        An error is raised as LiveError with its one-line reason."""
        depth = depth if depth is not None else self.settings.depth
        run = run_live(
            self.live.retrievers[name], [("", text)], depth, root=self.settings.cache_dir
        )
        if "" in run.failed:
            raise LiveError(run.failed[""])
        hits = live_answers.map_hits(self.passages, name, run.hits.get("", []))
        self.add_foreign(hits, origin=name)
        return [(h.id, h.score) for h in hits]

    def own_passages(self, name: str) -> OwnPassages | None:
        """How ``name`` is judged when it returned passages of its own (None: on ragtui's chunks)."""
        rankings = self.ranked.rankings.get(name)
        return live_answers.own_passages(self.grades, self.live, rankings, name)

    # ---- the evaluation ------------------------------------------------------------------------

    @property
    def retrievers(self) -> list[str]:
        """The chosen retrievers that have rankings, in the order ``--retrievers`` gives them; then
        those it does not name: the reranked one (``hybrid+rerank``), the external runs, the live ones."""
        rankings = self.ranked.rankings
        chosen = [n for n in self.settings.retrievers if n in rankings]
        rest = []
        reranked = self.settings.rerank_name
        if reranked is not None and reranked in rankings:
            rest.append(reranked)
        rest += [n for n, _ in self.settings.runs if n in rankings]
        rest += [n for n in self.live.retrievers if n in rankings]
        return list(dict.fromkeys(chosen + rest))

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking for a golden question."""
        return self.ranked.rankings.get(name, {}).get(qid, [])

    def evaluate_all(self) -> Evaluation:
        """Evaluate every shown retriever on every question from scratch (after loading, or when k or
        the question list changed: an Evaluation holds a fixed k and list of questions)."""
        grades = self.grades
        shown = {n: grades.evaluated_rankings(self.ranked.rankings[n]) for n in self.retrievers}
        arrays: GradeArrays | None = None
        regraded: set[str] = set()
        base = grades.base
        if self.data.level == LEVEL_CHUNK and isinstance(base, GradeRows) and not self.data.qrels:
            # The evidence rule's grades as they are, but for the questions with hand labels (or
            # whose base grades were changed): those are asked for one by one.
            arrays = base.arrays
            regraded = base.changed() | set(grades.labels.pairs)
        questions = self.questions
        retired = questions.retired_ids
        ids = [qid for qid in questions.ids if qid not in retired] if retired else questions.ids
        owned = {n: own for n in shown if (own := self.own_passages(n)) is not None}
        rows = None
        if ids == questions.loaded_ids:
            # The questions as loaded: the rankings tables' own rows (no lookup per question).
            ids, rows = questions.loaded_ids, questions.loaded_rows
        self.evaluation = Evaluation(
            ids,
            grades.evaluation_grades,
            shown,
            self.settings.k,
            self.settings.threshold,
            grade_arrays=arrays,
            regraded=regraded,
            own=owned,
            rows=rows,
            units=live_answers.evidence_units(self.settings, grades, bool(owned), self.warnings),
        )
        return self.evaluation

    def set_k(self, k: int) -> None:
        """Change k and recompute every value."""
        if k < 1:
            raise ValueError("k must be at least 1")
        self.settings = replace(self.settings, k=k)
        self.evaluate_all()

    # ---- saving a grade ------------------------------------------------------------------------

    def set_grade(
        self,
        qid: str,
        cid: str,
        grade: int | None,
        adjudicate: bool = False,
        independent: bool | None = None,
    ) -> GradeChange:
        """Save this annotator's hand grade (None withdraws it), or with ``adjudicate`` the
        adjudicated grade that settles the pair (None withdraws it), to the journal, fsynced, then
        update the numbers of every question whose labels changed (another writer's lines read
        with ours count too)."""
        chunk = self.passages.by_id[cid]
        if qid not in self.questions.by_id:
            raise KeyError(qid)
        self.writable_golden()
        labels = self.grades.labels
        label = labels.set_grade(
            qid, cid, grade, chunk.sha1, adjudicate=adjudicate, independent=independent
        )
        changes = self._regrade(qid)
        for other in labels.take_touched() - {qid}:
            self._regrade(other)
        return GradeChange(qid, cid, label, changes, tuple(labels.take_warnings()))

    def undo(self) -> GradeChange | None:
        """Undo the last label change (itself a journal line, of the same kind: an annotator's or
        adjudicated); None when there is nothing to undo."""
        labels = self.grades.labels
        if labels.can_undo:
            self.writable_golden()
        label = labels.undo()
        if label is None:
            return None
        changes = self._regrade(label.question)
        for other in labels.take_touched() - {label.question}:
            self._regrade(other)
        return GradeChange(
            label.question, label.chunk, label, changes, tuple(labels.take_warnings())
        )

    def refresh_labels(self) -> set[str]:
        """Apply labels another process wrote; the questions whose numbers or disputes changed.

        A line that cannot be read is skipped; the journal's ``take_warnings`` gives its warning once.
        """
        labels = self.grades.labels
        if labels.changed_on_disk():  # two stat calls: the app asks every second
            labels.refresh()
        touched = labels.take_touched()
        for qid in touched:
            self._regrade(qid)
        return {q for q in touched if q in self.questions.by_id}

    def _regrade(self, qid: str) -> dict[str, tuple[QuestionMetrics, QuestionMetrics]]:
        assert self.evaluation is not None
        if qid not in self.questions.by_id or not self.evaluation.covers(qid):
            return {}  # unknown, or retired: in no mean (its label is saved all the same)
        return self.evaluation.update_question(qid)

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
            labels = self.grades.labels
            labels.move_to(target / labels.path.name)
            if made:
                self.notices.append(
                    f"the bundled golden set is never written: copied it to {target}; "
                    "labels, added questions and saved runs are kept there"
                )
        return target

    # ---- the golden questions ------------------------------------------------------------------

    def rank_text(
        self, text: str, depth: int, errors: dict[str, str] | None = None
    ) -> dict[str, Ranking]:
        """The ranking of a text by every retriever object built so far (shown or only fused), live
        ones included once they have answered the golden set (a failure goes to ``errors``)."""
        ranked = self.ranked
        out: dict[str, Ranking] = {}
        if ranked.bm25 is not None:
            out["bm25"] = ranked.bm25.search(text, depth)
        if ranked.vector is not None:
            out["vector"] = ranked.vector.search(text, depth)
        if ranked.hybrid is not None and "bm25" in out and "vector" in out:
            out["hybrid"] = ranked.hybrid.fuse(out["bm25"], out["vector"], depth)
        for name in self.live.retrievers:
            if name not in ranked.rankings:
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
        """Every ready chosen retriever's ranking for any typed text (ad-hoc query mode); nothing
        is added or written.

        bm25 is ready at once, vector and hybrid once ``prepare_vectors`` (or the app's worker) has
        built them; the vector search embeds the text through the workspace's embedding cache.
        Live retrievers are asked (through their cache) once they have answered the golden set;
        one that fails is left out and its one-line reason put in ``errors``.
        """
        if not text.strip():
            raise ValueError("the query is empty")
        found = self.rank_text(text, depth if depth is not None else self.settings.depth, errors)
        builtin = [n for n in RETRIEVER_NAMES if n in self.settings.retrievers and n in found]
        return {
            name: found[name] for name in builtin + [n for n in self.live.retrievers if n in found]
        }

    def add_question(
        self,
        text: str,
        evidence: str | list[str],
        slices: Iterable[str] = (),
        qid: str | None = None,
    ) -> AddedQuestion:
        """Append a validated question to questions.jsonl (atomically) and evaluate it at once
        with every ready retriever."""
        settings, data = self.settings, self.data
        if settings.beir is not None:
            raise InputError(
                settings.beir,
                "questions can only be added to a --golden folder, not to a BEIR dataset",
            )
        assert settings.golden is not None
        if is_bundled(settings.golden):
            # Checked before the bundled set is copied, so a refused question copies nothing.
            validate_new_question(
                text,
                evidence,
                list(slices),
                qid,
                self.questions.ids,
                data.chunks,
                data.corpus.documents,
                Path(settings.golden) / QUESTIONS_FILE,
            )
        question = append_question(
            self.writable_golden(),
            text,
            evidence,
            list(slices),
            qid,
            chunks=data.chunks,
            documents=data.corpus.documents,
        )
        return self.insert_question(question, self.rank_text(question.text, settings.depth))

    def insert_question(self, question: Question, rankings: dict[str, Ranking]) -> AddedQuestion:
        """Add a question already appended to questions.jsonl, with its rankings (computed off the
        UI thread by ``search_adhoc``), and evaluate it."""
        chunks = self.data.chunks
        relevant = EvidenceIndex([c.id for c in chunks], [c.text for c in chunks]).matching_chunks(
            question.evidence
        )
        self.grades.base[question.id] = dict.fromkeys(relevant, EVIDENCE_GRADE)
        for name, by_question in self.ranked.rankings.items():
            if name in rankings:
                by_question[question.id] = rankings[name]
            else:
                ranking = self.ranked.rank_new(name, question.text, self.settings.depth)
                by_question.setdefault(question.id, ranking)
        self._set_questions(self.questions.with_question(question))
        assert self.evaluation is not None
        ranked = {n: self.ranking(n, question.id) for n in self.retrievers}
        metrics = {n: self.evaluation.per_question[n][question.id] for n in self.retrievers}
        return AddedQuestion(question, relevant, ranked, metrics)

    def set_retired(self, qid: str, retired: bool) -> Question:
        """Retire a question (or bring it back): its line in questions.jsonl says so (rewritten
        atomically under the lock), and every mean is computed again without (or with) it."""
        if qid not in self.questions.by_id:
            raise InputError(None, f"no question {qid!r}")
        settings = self.settings
        if settings.beir is not None and settings.golden == settings.beir:
            raise InputError(settings.beir, "BEIR queries cannot be retired (no questions.jsonl)")
        updated = write_retired(self.writable_golden(), qid, retired)
        self._set_questions(self.questions.with_question(updated))
        return updated
