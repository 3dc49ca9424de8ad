"""``ragtui judge``: model judges grade the pool, and their verdicts go into the label journal.

What is graded: the pool (the union of every shown retriever's top ``depth`` for each question,
ragtui's chunks and the live retrievers' own passages alike), narrowed by ``JudgeAsk``: named
questions, a random sample of questions (``random.Random(seed)``, as ``labelling.sample`` draws),
the pairs no person graded (``unjudged``), at most ``limit`` pairs per judge. A pair the judge
already has a current verdict for (same judge, model, chunk text and prompt) is skipped unless
asked ``again``.

Resuming: every verdict a judge gives is appended to the verdict cache first (one file per judge
setting and prompt under ``<cache>/judges/``, keyed by the question text's hash and the chunk text's
hash, fsynced), then to the journal in small batches (every ``JOURNAL_BATCH`` verdicts or
``JOURNAL_SECONDS``), as annotator ``model:NAME`` with the model, the prompt hash and the reason.
A run killed at any point leaves verdicts in the cache that the journal may lack; the next run
writes those from the cache without asking the judge again. A failure (no grade) is never cached
nor written: the pair is asked again on the next run.

Grading runs ``judge.concurrency`` calls of ``judge.grade`` (``judge.batch_size`` pairs each) at
once in daemon threads, so Ctrl-C stops without waiting for them: the batches that came are cached
and written whole, the run says it was interrupted. A ``JudgeError`` (a judge that cannot work at
all) stops the run the same way, with its one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.errors import InputError
from ragtui.core.judges.base import DOWN_FAILURES, Judge, JudgeError, JudgePair, Verdict
from ragtui.core.judges.cache import VerdictCache
from ragtui.core.judges.pairs import (
    JudgeAsk,
    JudgePool,
    choose_questions,
    people_graded,
    plan_judge,
    pool_pairs,
)
from ragtui.core.labelling.labels import (
    ANSWER_PATHS,
    MAX_REASON,
    Label,
    judge_annotator,
    now_iso,
)
from ragtui.core.workspace import Workspace

__all__ = [
    "JOURNAL_BATCH",
    "JOURNAL_SECONDS",
    "JudgeAsk",
    "JudgeRun",
    "JudgeSummary",
    "failure_kind",
    "judge_pool",
]

#: Verdicts are written to the journal every this many, or every ``JOURNAL_SECONDS``, whichever first.
JOURNAL_BATCH = 20
JOURNAL_SECONDS = 1.0

#: ``progress(done, total, cached, tokens)``: pairs done (graded, from the cache or failed) of all
#: judges, how many of them came from the cache (no request: not counted in a rate), tokens used.
JudgeProgress = Callable[[int, int, int, int], None]


@dataclass
class JudgeSummary:
    """What one judge did in a run."""

    judge: str
    model: str
    prompt_sha1: str
    note: str = ""
    #: Pairs to grade this run (after skipping, within ``limit``).
    pairs: int = 0
    #: Pairs handed to the judge (the others came from the cache).
    asked: int = 0
    #: Grades written: the judge's and the cache's.
    graded: int = 0
    from_cache: int = 0
    failed: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    skipped_judged: int = 0
    skipped_person: int = 0
    left: int = 0
    tokens: int = 0
    seconds: float = 0.0
    #: The ``JudgeError`` that stopped the run, or ``""``.
    stopped: str = ""
    interrupted: bool = False
    #: Why verdicts could not be cached (the run went on without the cache), or ``""``.
    cache_problem: str = ""

    @property
    def answered(self) -> int:
        """Pairs the judge answered this run (a grade or a failure; the cache's aside)."""
        return self.graded - self.from_cache + self.failed

    @property
    def pairs_per_s(self) -> float:
        """Pairs the judge answered per second of the run."""
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Tokens the judge reported per second of the run."""
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        """The judge's part of ``ragtui judge --json``."""
        return {
            "model": self.model,
            "prompt_sha1": self.prompt_sha1,
            "note": self.note,
            "pairs": self.pairs,
            "asked": self.asked,
            "graded": self.graded,
            "from_cache": self.from_cache,
            "failed": self.failed,
            "failures": dict(self.failures.most_common()),
            "skipped": {"judged": self.skipped_judged, "person": self.skipped_person},
            "left": self.left,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "pairs_per_s": self.pairs_per_s,
            "tokens_per_s": self.tokens_per_s,
            "stopped": self.stopped or None,
        }


@dataclass
class JudgeRun:
    """A whole run: the pool, each judge's summary (in the order given), the journal written."""

    pool: JudgePool
    judges: list[JudgeSummary]
    journal: Path

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the run."""
        return any(s.interrupted for s in self.judges)

    @property
    def stopped(self) -> str:
        """The ``JudgeError`` that stopped the run, or ``""``."""
        return next((s.stopped for s in self.judges if s.stopped), "")

    def to_json(self) -> dict[str, Any]:
        """``ragtui judge --json`` (every key: docs/json.md)."""
        pool = self.pool
        return {
            "pool": {
                "questions": len(pool.questions),
                "pairs": len(pool.pairs),
                "depth": pool.depth,
                "retrievers": list(pool.retrievers),
                "without_text": pool.without_text,
            },
            "journal": str(self.journal),
            "judges": {s.judge: s.to_json() for s in self.judges},
            "interrupted": self.interrupted,
        }


def _valid(text: object) -> str:
    """A text as valid UTF-8 (a lone surrogate replaced); anything but a string is empty."""
    if not isinstance(text, str):
        return ""
    return text.encode("utf-8", "replace").decode("utf-8")


#: Pairs in a row that found the endpoint down (no connection, or no answer in time) before the
#: run stops with what it wrote.
STOP_AFTER_DOWN = 8


def failure_kind(failure: str) -> str:
    """What a failure line is counted as: its words before the first colon (``unreadable answer``)."""
    kind = failure.split(":", 1)[0].strip()
    return (kind or "failure")[:80]


# ---- grading -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _ctrl_c_as_flag() -> Iterator[threading.Event]:
    """While grading, Ctrl-C sets a flag that the loop reads between batches, so a batch's
    verdicts are cached and written whole before the run stops; a second Ctrl-C raises
    ``KeyboardInterrupt`` as usual. Outside the main thread (no signal handler can be set) the flag
    is never set."""
    flag = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handler(signum: int, frame: object) -> None:
        if flag.is_set():
            raise KeyboardInterrupt
        flag.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


class _JournalBatches:
    """Verdicts waiting to be written to the journal: written every ``JOURNAL_BATCH`` or ``JOURNAL_SECONDS``."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.waiting: list[Label] = []
        self.since = time.monotonic()

    def add(self, label: Label) -> None:
        self.waiting.append(label)
        if len(self.waiting) >= JOURNAL_BATCH:
            self.flush()

    def tick(self) -> None:
        if self.waiting and time.monotonic() - self.since >= JOURNAL_SECONDS:
            self.flush()

    def flush(self) -> None:
        waiting, self.waiting = self.waiting, []
        self.since = time.monotonic()
        if waiting:
            self.ws.grades.labels.append_verdicts(waiting)


class _Workers:
    """``concurrency`` daemon threads calling ``judge.grade`` on the batches; results in a queue."""

    def __init__(self, judge: Judge, batches: list[tuple[JudgePair, ...]]) -> None:
        self.judge = judge
        self.batches = list(reversed(batches))
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.results: queue.Queue[tuple[tuple[JudgePair, ...], list[Verdict]] | str | None] = (
            queue.Queue()
        )
        count = max(1, min(int(judge.concurrency), len(batches)))
        self.running = count
        for _ in range(count):
            threading.Thread(target=self._work, daemon=True, name="ragtui-judge").start()

    def _work(self) -> None:
        try:
            while not self.stop.is_set():
                with self.lock:
                    if not self.batches:
                        break
                    batch = self.batches.pop()
                try:
                    verdicts = list(self.judge.grade(batch))
                except JudgeError as exc:
                    self.results.put(str(exc) or type(exc).__name__)
                    break
                except (
                    BaseException
                ) as exc:  # a plugin's bug, SystemExit too: one line, the run stops
                    self.results.put(f"{type(exc).__name__}: {exc}")
                    break
                if len(verdicts) != len(batch):
                    self.results.put(
                        f"gave {len(verdicts)} verdicts for {len(batch)} pairs (one per pair expected)"
                    )
                    break
                self.results.put((batch, verdicts))
        finally:
            self.results.put(None)

    def next(self, timeout: float) -> tuple[tuple[JudgePair, ...], list[Verdict]] | str | None:
        """A batch's verdicts, a JudgeError's line, or None (all done, or nothing within ``timeout``)."""
        while self.running:
            try:
                item = self.results.get(timeout=timeout)
            except queue.Empty:
                return None
            if item is None:
                self.running -= 1
                continue
            return item
        return None


class _Grading:
    """One judge's run over its plan: the cache, the workers, the journal, the summary."""

    def __init__(
        self,
        ws: Workspace,
        judge: Judge,
        scale: GradeScale,
        summary: JudgeSummary,
        progress: Callable[[int, int, bool], None],
        warn: Callable[[str], None],
    ) -> None:
        self.ws, self.judge, self.summary = ws, judge, summary
        self.scale = scale
        self.grades = {g for g, _ in scale}
        self.progress = progress
        self.warn = warn
        self.journal = _JournalBatches(ws)
        #: Pairs in a row whose failure says the endpoint is down.
        self.down = 0
        self.cache: VerdictCache | None = VerdictCache(
            judge.settings_key, judge.prompt_sha1, scale, ws.settings.cache_dir
        )

    def _label(self, pair: JudgePair, verdict: Verdict) -> Label:
        judge = self.judge
        return Label(
            pair.question_id,
            pair.chunk_id,
            verdict.grade,
            pair.chunk_sha1,
            now_iso(),
            judge_annotator(judge.name),
            model=judge.model_id,
            prompt_sha1=judge.prompt_sha1,
            reason=verdict.reason[:MAX_REASON],
            answer=verdict.answer,
            probabilities=verdict.probabilities,
        )

    def _checked(self, verdict: object) -> Verdict:
        """The verdict as the journal and the cache can hold it: a grade is a whole number on the
        scale (else the judge's failure, never a grade), the reason and failure text that is
        valid UTF-8 (a lone surrogate replaced), the tokens a count (else 0)."""
        if not isinstance(verdict, Verdict):
            return Verdict(None, failure=f"not a verdict: {type(verdict).__name__}")
        grade, tokens = verdict.grade, verdict.tokens
        tokens = tokens if type(tokens) is int and tokens > 0 else 0
        reason = _valid(verdict.reason)
        if grade is None:
            return Verdict(None, reason, _valid(verdict.failure) or "failure", tokens)
        if type(grade) is not int or grade not in self.grades:
            top = max(self.grades)
            failure = f"grade outside the scale: {grade!r:.40} (the scale is 0-{top})"
            return Verdict(None, reason, failure, tokens)
        answer = verdict.answer if verdict.answer in ANSWER_PATHS else ""
        probabilities = _probabilities(verdict.probabilities, self.grades)
        return Verdict(grade, reason, "", tokens, answer, probabilities)

    def _cache_put(self, answered: Sequence[tuple[JudgePair, Verdict]]) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put(answered)
        except OSError as exc:
            self.cache = None
            where = f"{exc.filename}: " if exc.filename else ""
            self.summary.cache_problem = f"{where}{exc.strerror or exc}"
            self.warn(
                f"warning: {self.judge.name}: cannot write the verdict cache ({self.summary.cache_problem}); "
                "going on without it (an interrupted run asks these pairs again)"
            )

    def run(self, todo: Sequence[JudgePair], again: bool) -> None:
        summary = self.summary
        started = time.monotonic()
        try:
            with _ctrl_c_as_flag() as ctrl_c:
                self._run(todo, again, ctrl_c)
            summary.interrupted = ctrl_c.is_set()
        except KeyboardInterrupt:  # a second Ctrl-C, or grading outside the main thread
            summary.interrupted = True
        finally:
            summary.seconds = time.monotonic() - started
            self.journal.flush()

    def _run(self, todo: Sequence[JudgePair], again: bool, ctrl_c: threading.Event) -> None:
        summary, judge = self.summary, self.judge
        asked: list[JudgePair] = []
        for pair in todo:
            if ctrl_c.is_set():
                return
            hit = None if again or self.cache is None else self.cache.get(pair)
            if hit is None:
                asked.append(pair)
                continue
            self.journal.add(self._label(pair, hit))
            summary.graded += 1
            summary.from_cache += 1
            self.progress(1, 0, True)
        summary.asked = len(asked)
        size = max(1, int(judge.batch_size))
        batches = [tuple(asked[i : i + size]) for i in range(0, len(asked), size)]
        workers = _Workers(judge, batches) if batches else None
        try:
            while workers is not None and workers.running and not ctrl_c.is_set():
                item = workers.next(timeout=0.2)
                if isinstance(item, str):
                    summary.stopped = f"{judge.name}: {item}"
                    return
                if item is not None:
                    self._take(*item)
                self.journal.tick()
                if summary.stopped:
                    return
        finally:
            if workers is not None:
                workers.stop.set()

    def _take(self, batch: Sequence[JudgePair], verdicts: Sequence[object]) -> None:
        summary = self.summary
        checked = [self._checked(v) for v in verdicts]
        self._cache_put(list(zip(batch, checked, strict=True)))
        tokens = 0
        for pair, verdict in zip(batch, checked, strict=True):
            tokens += verdict.tokens
            if verdict.grade is None:
                summary.failed += 1
                summary.failures[failure_kind(verdict.failure)] += 1
                self.down = self.down + 1 if verdict.failure.startswith(DOWN_FAILURES) else 0
                if self.down >= STOP_AFTER_DOWN and not summary.stopped:
                    summary.stopped = (
                        f"{self.judge.name}: stopped after {self.down} pairs in a row found the "
                        f"endpoint down ({verdict.failure})"
                    )
            else:
                self.down = 0
                summary.graded += 1
                self.journal.add(self._label(pair, verdict))
        summary.tokens += tokens
        self.progress(len(batch), tokens, False)


@contextlib.contextmanager
def sole_judge_run(journal: Path) -> Iterator[None]:
    """Hold the journal's judge lock (``labels.jsonl.judge-lock`` beside it) for a run; a second
    ``ragtui judge`` on the same journal meanwhile is refused with one line (InputError)."""
    lock = journal.with_name(journal.name + ".judge-lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                journal,
                "another ragtui judge is writing verdicts to this journal: wait for it to end "
                "(or stop it), then run again",
            ) from None
        yield
    finally:
        os.close(fd)


def judge_pool(
    ws: Workspace,
    judges: Sequence[Judge],
    ask: JudgeAsk,
    *,
    progress: JudgeProgress | None = None,
    notify: Callable[[str], None] | None = None,
) -> JudgeRun:
    """Grade the chosen pairs with each judge in turn (see the module's notes); returns what each did.

    ``notify`` is told, one line each, where the bundled golden set was copied to, each judge's note
    (what ``prepare`` did) and any warning.
    Stops after a judge that was interrupted (Ctrl-C) or stopped by a ``JudgeError``; what came
    before is in the journal either way.
    """
    say = notify or (lambda _line: None)
    # The estimates' pool by default: the top k of each retriever ranked at the evaluation's depth.
    depth = min(ask.depth if ask.depth is not None else ws.settings.k, ws.settings.depth)
    pool = pool_pairs(ws, choose_questions(ws, ask), depth)
    plans = [plan_judge(ws, judge, pool, ask) for judge in judges]
    total = sum(len(plan.todo) for plan in plans)
    sole = contextlib.ExitStack()
    if total:
        ws.writable_golden()  # the bundled golden set is never written: its user copy is
        for notice in ws.notices:  # said now, before the judges' notes and the progress
            say(notice)
        ws.notices.clear()
        reason = ws.grades.labels.read_only_reason
        if reason is not None:
            raise InputError(None, f"{reason}; nothing was graded")
        # One judge run writes a journal at a time; what an earlier one wrote is read first.
        sole.enter_context(sole_judge_run(ws.grades.labels.path))
        if ws.refresh_labels():
            plans = [plan_judge(ws, judge, pool, ask) for judge in judges]
            total = sum(len(plan.todo) for plan in plans)
    with sole:
        scale = ws.settings.grade_scale or DEFAULT_GRADE_SCALE
        graded = people_graded(ws) if total else []
        done = cached = tokens = 0
        report = progress or (lambda _done, _total, _cached, _tokens: None)
        started = False

        def step(pairs: int, used: int, from_cache: bool) -> None:
            nonlocal done, cached, tokens
            done += pairs
            cached += pairs if from_cache else 0
            tokens += used
            report(done, total, cached, tokens)

        summaries: list[JudgeSummary] = []
        for judge, plan in zip(judges, plans, strict=True):
            summary = JudgeSummary(
                judge.name,
                judge.model_id,
                judge.prompt_sha1,
                pairs=len(plan.todo),
                skipped_judged=plan.skipped_judged,
                skipped_person=plan.skipped_person,
                left=plan.left,
            )
            summaries.append(summary)
            if not plan.todo:
                continue
            try:
                summary.note = judge.prepare(scale, graded).strip()
            except JudgeError as exc:
                summary.stopped = f"{judge.name}: {exc}"
                break
            if summary.note:
                say(f"{judge.name}: {summary.note}")
            if not started:  # the clock starts once the first judge is ready
                started = True
                report(0, total, 0, 0)
            _Grading(ws, judge, scale, summary, step, say).run(plan.todo, ask.again)
            if summary.interrupted or summary.stopped:
                break
        return JudgeRun(pool, summaries, ws.grades.labels.path)


def _probabilities(given: object, grades: set[int]) -> tuple[tuple[int, float], ...]:
    """A verdict's grade probabilities as the journal holds them: (grade, p) pairs of the scale's
    grades with finite p from 0 to 1 (a judge's anything else: none)."""
    try:
        pairs = tuple((g, float(p)) for g, p in given)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return ()
    if not all(type(g) is int and g in grades and 0 <= p <= 1 for g, p in pairs):
        return ()
    return tuple(sorted(pairs))
