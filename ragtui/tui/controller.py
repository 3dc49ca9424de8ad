"""The one owner of every change: the app's controller holds the workspace and applies changes to it,
to the label journal and to the golden set, and says what changed.

It runs on the UI thread only (the app's message handlers call it); workers never touch it. It
imports no Textual, so its rules are tested without an app. Every method that changes something
returns a ``Changed`` for the screens, or raises ``Refused`` with a one-line reason for the status
line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from ragtui.core.data.golden import Question
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.errors import InputError
from ragtui.core.judges.verify import RecordedSample, recorded_or_drawn, sample_population
from ragtui.core.labelling.journal import ReadOnlyError
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.rerank import RerankResult
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.core.workspace import (
    SOURCE_ADJUDICATED,
    GradeChange,
    LiveResult,
    VectorResult,
    Workspace,
)
from ragtui.tui.messages import Changed
from ragtui.tui.widgets.formatting import ndcg_moves

if TYPE_CHECKING:
    from ragtui.core.analysis.runs import Baseline  # read by the palette's baseline only

#: The retrievers that need embeddings.
VECTOR_RETRIEVERS = ("vector", "hybrid")


class Refused(Exception):
    """A change that was not made, with a one-line reason for the person who asked."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = visible_line(message)


def _moves(change: GradeChange) -> dict[str, tuple[float, float]]:
    """nDCG before and after, per retriever."""
    return {name: (old.ndcg, new.ndcg) for name, (old, new) in change.changes.items()}


@dataclass(frozen=True)
class UndoEntry:
    """A change ``u`` can undo."""

    serial: int
    """Its number: every change gets the next one, so an undo names the change it undoes."""
    kind: Literal["label", "retire"]
    """A label change (the journal keeps what the pair had before) or a retirement."""
    question: str
    """The question whose label changed, or that was retired or brought back."""
    chunk: str = ""
    """The chunk of a label change."""
    retired_before: bool = False
    """Whether the question was retired before a retirement change."""

    def describe(self) -> str:
        """``q01 ferry.md#1`` or ``q01 retired``, for a message."""
        if self.kind == "label":
            return visible_line(f"{self.question} {self.chunk}")
        return visible_line(
            f"{self.question} {'brought back' if self.retired_before else 'retired'}"
        )


@dataclass
class Controller:
    """The app's state and the rules for changing it."""

    settings: Settings
    """What is loaded (a reload replaces it)."""
    workspace: Workspace | None = None
    """The loaded workspace; None while the first load runs."""
    retriever_status: dict[str, str] = field(default_factory=dict)
    """Each shown retriever: ``ready``, ``pending`` (embedding) or ``failed``."""
    retriever_errors: dict[str, str] = field(default_factory=dict)
    """Why a failed retriever is unavailable."""
    baseline: Baseline | None = None
    """The saved run the question list compares against, or None."""
    embedding_progress: tuple[int, int] | None = None
    """(done, total) while embedding runs."""
    judging_blind: bool | None = None
    """The judging view's blind mode as toggled with ``b`` this session (None: the blind setting)."""
    undo_stack: list[UndoEntry] = field(default_factory=list)
    """What ``u`` undoes, newest last (label changes and retirements of this session)."""
    estimate_sample: RecordedSample | None = None
    """The random sample of questions for the estimate, once the judging view asked for it."""
    _serial: int = field(default=0, init=False, repr=False)

    @property
    def ws(self) -> Workspace:
        """The workspace; Refused while it is loading."""
        if self.workspace is None or self.workspace.evaluation is None:
            raise Refused("The data is still loading.")
        return self.workspace

    @property
    def retrievers(self) -> list[str]:
        """The retrievers shown: the chosen built-in ones in the standard order, the external runs,
        then the live ones (plugins, HTTP APIs, Milvus)."""
        from ragtui.core.retrieval.base import RETRIEVER_NAMES
        from ragtui.core.retrieval.connectors import live_names

        s = self.settings
        builtin = [n for n in RETRIEVER_NAMES if n in s.retrievers]
        if s.rerank_name is not None:
            builtin.append(s.rerank_name)  # the reranking stage's list, after the built-in ones
        runs = [n for n, _ in s.runs if n not in builtin]
        live = live_names(s.retrievers, s.live_retrievers, s.milvus)
        return builtin + runs + [n for n in live if n not in builtin and n not in runs]

    # ---- loading -----------------------------------------------------------------------------------

    def loaded(self, ws: Workspace, vectors: VectorResult | None) -> Changed:
        """A (re)load finished: show it; BM25 works now, vector and hybrid follow unless given."""
        reloaded = self.workspace is not None
        self.workspace = ws
        self.settings = ws.settings
        if reloaded:
            ws.refresh_labels()  # labels saved while the reload ran
            # The new journal has nothing to undo: only retirements (in the golden set) still can be.
            self.undo_stack = [e for e in self.undo_stack if e.kind == "retire"]
            self.estimate_sample = None  # another golden set, perhaps: read again when asked
        if vectors is not None:
            ws.apply_vectors(vectors)
        self.retriever_status = {
            n: (
                "pending"
                if n in VECTOR_RETRIEVERS and n not in ws.ranked.rankings and ws.vectors_needed
                else "ready"
            )
            for n in self.retrievers
        }
        self.retriever_errors = {}
        self.embedding_progress = None
        if self.baseline is not None:
            self.baseline = self.baseline.with_k(ws.settings.k)
        return Changed("loaded")

    def vectors_ready(self, result: VectorResult) -> Changed | None:
        """Vector and hybrid rankings arrived: evaluate them. None when nothing on screen changes
        (the lists were shown from the results cache; only the retrievers were built)."""
        ws = self.ws
        windows_before = ws.ranked.windows is not None and ws.ranked.windows.plan is not None
        changed = ws.apply_vectors(result)
        # Windows built now change what the vector retriever reads, so the causes of misses the
        # question list shows (a chunk cut off by the model is read whole through its windows).
        changed |= windows_before != (
            ws.ranked.windows is not None and ws.ranked.windows.plan is not None
        )
        self.embedding_progress = None
        for name in VECTOR_RETRIEVERS:
            if name in self.retriever_status and self.retriever_status[name] != "ready":
                self.retriever_status[name] = "ready"
                changed = True
        return Changed("retrievers") if changed else None

    def vectors_failed(self, message: str) -> Changed:
        """Embedding failed: vector and hybrid are unavailable (and what reranks them), BM25 keeps working."""
        self.embedding_progress = None
        rerank = self.settings.rerank_name
        for name in (*VECTOR_RETRIEVERS, *((rerank,) if rerank else ())):
            if name in self.retriever_status:
                self.retriever_status[name] = "failed"
                self.retriever_errors[name] = message
        return Changed("retrievers")

    def rerank_ready(self, result: RerankResult) -> Changed:
        """The reranking stage's lists arrived: evaluate them."""
        self.ws.apply_rerank(result)
        self.retriever_status[result.name] = "ready"
        self.retriever_errors.pop(result.name, None)
        return Changed("retrievers")

    def rerank_failed(self, name: str, message: str) -> Changed:
        """The cross-encoder could not run: its list is unavailable, the others keep working."""
        self.retriever_status[name] = "failed"
        self.retriever_errors[name] = message
        return Changed("retrievers")

    def live_ready(self, result: LiveResult) -> Changed:
        """Live retrievers answered (or failed): their lists and numbers; a failed one says why."""
        ws = self.ws
        ws.apply_live(result)
        for name in result.runs:
            status = ws.live.status.get(name)
            if status is None:
                continue
            if status.state == "failed":
                self.retriever_status[name] = "failed"
                self.retriever_errors[name] = status.message
            else:
                self.retriever_status[name] = "ready"
                self.retriever_errors.pop(name, None)
        return Changed("retrievers")

    def live_pending(self) -> Changed:
        """The live retrievers are asked again (the palette's refresh): each waits for its answer."""
        for name in self.workspace.live.retrievers if self.workspace is not None else ():
            self.retriever_status[name] = "pending"
        return Changed("retrievers")

    def embedding(self, done: int, total: int) -> Changed:
        """Embedding has come this far (``done`` of ``total`` texts)."""
        self.embedding_progress = (done, total)
        return Changed("progress")

    def keep_foreign(self, hits: tuple[Hit, ...], origin: str) -> Changed | None:
        """Keep chunks a live retriever brought (an ad-hoc search); None when nothing changed."""
        touched = self.ws.add_foreign(hits, origin)
        return Changed("labels-reloaded", frozenset(touched)) if touched else None

    @property
    def is_ready(self) -> bool:
        """True when the workspace is shown and every retriever is ready or failed."""
        return self.workspace is not None and all(
            s != "pending" for s in self.retriever_status.values()
        )

    def set_judging_blind(self, blind: bool) -> None:
        """Judge blind or not for the rest of the session (the judging view's ``b``)."""
        self.judging_blind = blind

    # ---- labels ------------------------------------------------------------------------------------

    @property
    def grade_scale(self) -> GradeScale:
        """The grades a person may give here, with their words."""
        return self.settings.grade_scale or DEFAULT_GRADE_SCALE

    def take_notices(self) -> list[str]:
        """What the workspace noticed while changing (the bundled golden set copied), once."""
        ws = self.workspace
        if ws is None or not ws.notices:
            return []
        notices = list(ws.notices)
        ws.notices.clear()
        return notices

    def _check_writable(self, what: str) -> None:
        labels = self.ws.grades.labels
        if labels.read_only:
            reason = labels.read_only_reason or f"{labels.path} is read-only"
            raise Refused(f"{reason}: {what}")

    def grade(
        self,
        qid: str,
        cid: str,
        grade: int | None,
        adjudicate: bool = False,
        independent: bool | None = None,
    ) -> Changed:
        """Save a hand grade (None removes it) for the pair, fsynced, and update every number; with
        ``adjudicate`` the adjudicated grade that settles a disputed pair. Removing a grade that is
        not there is refused (nothing to write). ``independent``: see ``Label.independent``."""
        ws = self.ws
        if qid not in ws.questions.by_id:
            raise Refused(f"{qid} is not a question of this golden set: nothing saved.")
        if cid not in ws.passages.by_id:
            raise Refused(f"{cid} is not a chunk of this corpus: nothing saved.")
        scale = self.grade_scale
        if grade is not None and grade not in dict(scale):
            words = " · ".join(f"{g} {label}" for g, label in scale)
            raise Refused(f"{grade} is not on the grade scale ({words}): nothing saved.")
        if grade is None:
            pair = ws.grades.labels.pair(qid, cid)
            mine = None
            if pair is not None:
                mine = (
                    pair.adjudicated
                    if adjudicate
                    else pair.annotators.get(ws.grades.labels.annotator)
                )
            if mine is None or mine.grade is None:
                whose = "no adjudicated grade" if adjudicate else "no grade of yours"
                raise Refused(
                    f"Nothing to clear: {visible_line(qid)} {visible_line(cid)} has {whose}; "
                    "nothing saved."
                )
        self._check_writable("the grade was not saved.")
        try:
            change = ws.set_grade(qid, cid, grade, adjudicate=adjudicate, independent=independent)
        except ReadOnlyError as exc:
            raise Refused(str(exc)) from None
        except InputError as exc:
            raise Refused(exc.message) from None
        except OSError as exc:
            raise Refused(f"Could not save the label: {exc.strerror or exc}") from None
        self._record("label", qid, cid)
        moves = _moves(change)
        return Changed(
            "grades",
            frozenset({qid}),
            cid,
            moves=moves,
            warnings=change.warnings,
            said=self._said(qid, cid, moves, (grade, adjudicate)),
        )

    def _said(
        self,
        qid: str,
        cid: str,
        moves: dict[str, tuple[float, float]],
        given: tuple[int | None, bool] | None,
    ) -> str:
        """What was saved, named by its pair, and what counts now: ``saved: q01 ferry.md#1 → your
        2 (u undoes) · nDCG@3 bm25 0.500→1.000``; ``→ your 1; the adjudicated 2 counts`` where
        another grade counts; ``undone: q01 ferry.md#1 → grade 1 (evidence)`` (``given`` is None:
        an undo)."""
        ws = self.ws
        grade, source = ws.grades.grade_source(qid, cid)
        now = f"grade {grade} ({source})" if grade is not None else "not graded"
        pair = f"{visible_line(qid)} {visible_line(cid)}"
        moved = ndcg_moves(moves, ws.settings.k)
        if given is None:
            return f"undone: {pair} → {now} · {moved}"
        mine, adjudicate = given
        if adjudicate:
            said = (
                f"adjudicated {mine}" if mine is not None else f"adjudication removed; {now} counts"
            )
        elif mine is None:
            said = f"your grade removed; {now} counts"
        elif source == SOURCE_ADJUDICATED:
            said = f"your {mine}; the adjudicated {grade} counts"
        else:
            said = f"your {mine}" + (f"; {now} counts" if grade != mine else "")
        return f"saved: {pair} → {said} (u undoes) · {moved}"

    def _record(
        self, kind: Literal["label", "retire"], qid: str, cid: str = "", before: bool = False
    ) -> None:
        """Remember a change for ``u``, with the next serial number."""
        self._serial += 1
        self.undo_stack.append(UndoEntry(self._serial, kind, qid, cid, before))

    @property
    def latest_change(self) -> int:
        """The serial number of the change ``u`` would undo now (0: none). A key's undo request
        carries it, so it undoes the change that was the latest when the key was pressed."""
        return self.undo_stack[-1].serial if self.undo_stack else 0

    def undo(self, target: int | None = None) -> Changed:
        """Undo the latest change: a label change (a new journal line) or a retirement. ``target``
        (the serial number of the change the person saw as the latest) must be that change: an
        undo never reaches past it to another one."""
        ws = self.ws
        if not self.undo_stack or target == 0:
            raise Refused("Nothing to undo.")
        entry = self.undo_stack[-1]
        if target is not None and entry.serial != target:
            raise Refused(
                f"Not undone: the latest change is now {entry.describe()}, "
                "not the one shown when u was pressed."
            )
        if entry.kind == "retire":
            restored = self.retire(entry.question, entry.retired_before, record=False)
            self.undo_stack.pop()
            return replace(restored, undo=True)
        if not ws.grades.labels.can_undo:
            self.undo_stack.pop()  # the journal forgot it (read again): nothing to restore
            raise Refused("Nothing to undo.")
        self._check_writable("cannot undo.")
        try:
            change = ws.undo()
        except ReadOnlyError as exc:
            raise Refused(str(exc)) from None
        except OSError as exc:
            raise Refused(f"Could not save the undo: {exc.strerror or exc}") from None
        if change is None:
            raise Refused("Nothing to undo.")
        self.undo_stack.pop()
        moves = _moves(change)
        return Changed(
            "grades",
            frozenset({change.question}),
            change.chunk,
            undo=True,
            moves=moves,
            warnings=change.warnings,
            said=self._said(change.question, change.chunk, moves, None),
        )

    def refresh_labels(self) -> Changed | None:
        """Apply labels another session appended; None when nothing changed."""
        ws = self.workspace
        if ws is None or ws.evaluation is None:
            return None
        changed = ws.refresh_labels()
        warnings = tuple(ws.grades.labels.take_warnings())
        if not changed and not warnings:
            return None
        return Changed("labels-reloaded", frozenset(changed), warnings=warnings)

    def draw_sample(self, size: int, seed: int) -> Changed:
        """The random sample of questions for the estimate: the one recorded in ``sample.json``
        beside the label journal, else ``size`` questions drawn with ``seed`` and recorded there
        (for the bundled set in the user's copy, never in the bundled folder)."""
        ws = self.ws
        try:
            golden = ws.writable_golden()
            sample = recorded_or_drawn(golden, sample_population(ws.questions), size, seed)
        except InputError as exc:
            raise Refused(f"{exc.message}: no sample for the estimate.") from None
        except ValueError as exc:
            raise Refused(f"No sample for the estimate: {exc}.") from None
        except OSError as exc:
            raise Refused(
                f"Could not record the sample for the estimate: {exc.strerror or exc}"
            ) from None
        self.estimate_sample = sample
        return Changed("sample")

    # ---- questions -------------------------------------------------------------------------------

    def question_added(self, question: Question, rankings: dict[str, Ranking]) -> Changed:
        """A worker appended a question to the golden set: evaluate it with its rankings."""
        self.ws.insert_question(question, rankings)
        return Changed("questions", frozenset({question.id}))

    def retire(self, qid: str, retired: bool, record: bool = True) -> Changed:
        """Retire a question (left out of every mean, kept in the file with a flag) or bring it
        back; undoable."""
        ws = self.ws
        question = ws.questions.by_id.get(qid)
        if question is None:
            raise Refused(f"{qid} is not a question of this golden set.")
        if question.retired == retired:
            raise Refused(f"{qid} is {'already' if retired else 'not'} retired.")
        self._check_writable("the golden set is read-only.")
        try:
            ws.set_retired(qid, retired)
        except InputError as exc:
            raise Refused(exc.message) from None
        except OSError as exc:
            raise Refused(f"Could not write the golden set: {exc.strerror or exc}") from None
        if record:
            self._record("retire", qid, before=not retired)
        return Changed("retired", frozenset({qid}))

    # ---- settings ------------------------------------------------------------------------------

    def set_k(self, k: int) -> Changed:
        """Change k and recompute every number."""
        if k < 1:
            raise Refused("k is at least 1.")
        self.ws.set_k(k)
        self.settings = self.ws.settings
        if self.baseline is not None:
            self.baseline = self.baseline.with_k(k)
        return Changed("k")

    def set_baseline(self, baseline: Baseline | None) -> Changed:
        """Compare every question against a saved run (None: stop comparing)."""
        if baseline is not None and baseline.retriever not in self.ws.retrievers:
            raise Refused(f"{baseline.retriever} is not shown: no baseline.")
        self.baseline = baseline.with_k(self.ws.settings.k) if baseline is not None else None
        return Changed("baseline")

    def baseline_deltas(self) -> dict[str, float] | None:
        """Each evaluated question's nDCG@k now minus in the baseline, or None without a baseline."""
        if self.baseline is None or self.workspace is None:
            return None
        return self.baseline.deltas(self.workspace)
