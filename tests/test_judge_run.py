"""``ragtui judge``: the pool graded by model judges, verdicts in the journal as ``model:NAME``,
resuming from the verdict cache, failures retried, kill-safety, the key kept out of every output.

The core runner is tested with judges defined here (the Judge Protocol, no server); the command
with a plugin judge of this module and with the OpenAI-compatible test server (tests/judge_server.py).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
import pytest

from ragtui.core.analysis.judge_run import (
    JOURNAL_BATCH,
    JudgeAsk,
    VerdictCache,
    failure_kind,
    judge_pool,
)
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.judges.base import JudgeError, JudgePair, Verdict
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.workspace import Workspace
from tests.conftest import settings_of

# ---- judges of the test --------------------------------------------------------------------------


class ScriptedJudge:
    """A judge whose answer for each pair is a function of it; counts every pair it is asked."""

    def __init__(
        self,
        name: str = "t",
        answer: Callable[[JudgePair], Verdict] | None = None,
        *,
        model_id: str = "scripted-1",
        prompt_sha1: str = "ab" * 20,
        settings_key: str = "scripted-settings",
        batch_size: int = 2,
        concurrency: int = 3,
    ) -> None:
        self.name = name
        self.model_id = model_id
        self.prompt_sha1 = prompt_sha1
        self.settings_key = settings_key
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.answer = answer or expected_verdict
        self.asked: Counter[tuple[str, str]] = Counter()
        self.prepared: list[tuple[GradeScale, list[tuple[JudgePair, int]]]] = []
        self.lock = threading.Lock()

    def prepare(self, scale: GradeScale, graded: Sequence[tuple[JudgePair, int]]) -> str:
        self.prepared.append((scale, list(graded)))
        return f"prepared on {len(graded)} graded pairs"

    def grade(self, pairs: Sequence[JudgePair]) -> list[Verdict]:
        with self.lock:
            for pair in pairs:
                self.asked[(pair.question_id, pair.chunk_id)] += 1
        return [self.answer(pair) for pair in pairs]

    def close(self) -> None:
        pass


def expected_grade(pair: JudgePair) -> int:
    """A grade that depends on both texts: what the right journal line must hold."""
    return int(hashlib.sha1((pair.question + pair.chunk).encode()).hexdigest(), 16) % 3


def expected_verdict(pair: JudgePair) -> Verdict:
    return Verdict(expected_grade(pair), f"reason for {pair.chunk_id}", tokens=7)


def verdict_lines(journal: Path, judge: str = "t") -> list[dict[str, object]]:
    lines = [orjson.loads(raw) for raw in journal.read_bytes().splitlines() if raw.strip()]
    return [obj for obj in lines if obj.get("annotator") == f"model:{judge}"]


@pytest.fixture
def settings(mini, cache_dir, tmp_path):
    """The small corpus, BM25 only (no embedding), its own verdict cache."""
    return settings_of(mini, cache_dir=tmp_path / "cache", annotator="tester", retrievers=("bm25",))


def _ws(settings) -> Workspace:
    return Workspace.open(settings)


# ---- the core runner ----------------------------------------------------------------------------


def test_grades_land_in_the_journal_as_model_verdicts_once_each(settings):
    ws = _ws(settings)
    judge = ScriptedJudge()
    run = judge_pool(ws, [judge], JudgeAsk(depth=3))
    pool = run.pool
    assert len(pool.questions) == 7 and len(pool.pairs) >= 7
    summary = run.judges[0]
    assert (summary.pairs, summary.asked, summary.graded, summary.failed) == (
        len(pool.pairs),
        len(pool.pairs),
        len(pool.pairs),
        0,
    )
    assert summary.tokens == 7 * len(pool.pairs) and summary.from_cache == 0
    assert summary.note == "prepared on 0 graded pairs"
    lines = verdict_lines(ws.labels.path)
    assert len(lines) == len(pool.pairs)
    by_pair = {(p.question_id, p.chunk_id): p for p in pool.pairs}
    assert {(o["question"], o["chunk"]) for o in lines} == set(by_pair)
    for obj in lines:
        pair = by_pair[(obj["question"], obj["chunk"])]
        assert obj["grade"] == expected_grade(pair)
        assert obj["model"] == "scripted-1" and obj["prompt_sha1"] == "ab" * 20
        assert obj["reason"] == f"reason for {pair.chunk_id}"
        assert obj["chunk_sha1"] == pair.chunk_sha1
    assert set(judge.asked.values()) == {1}
    # A person's grade still counts alone: the verdicts are there, not counted (--grades human).
    fresh = LabelJournal(ws.labels.path, "tester")
    assert fresh.current == {}


def test_a_second_run_asks_nothing_and_writes_nothing(settings):
    judge_pool(_ws(settings), [ScriptedJudge()], JudgeAsk(depth=3))
    ws = _ws(settings)
    size = ws.labels.path.stat().st_size
    again = ScriptedJudge()
    summary = judge_pool(ws, [again], JudgeAsk(depth=3)).judges[0]
    assert summary.pairs == 0 and summary.skipped_judged > 0 and not again.asked
    assert again.prepared == []  # nothing to grade: no model loaded, no thresholds fitted
    assert ws.labels.path.stat().st_size == size


def test_failures_are_counted_by_kind_and_only_they_are_asked_again(settings):
    ws = _ws(settings)
    failing = {
        p.chunk_id for p in judge_pool(ws, [], JudgeAsk(depth=3)).pool.pairs if "#1" in p.chunk_id
    }
    assert failing

    def flaky(pair: JudgePair) -> Verdict:
        if pair.chunk_id in failing:
            kind = "unreadable answer" if pair.question_id < "m04" else "HTTP 500"
            return Verdict(None, failure=f"{kind}: the model said something else", tokens=3)
        return expected_verdict(pair)

    first = ScriptedJudge(answer=flaky)
    summary = judge_pool(ws, [first], JudgeAsk(depth=3)).judges[0]
    failed_pairs = {k for k in first.asked if k[1] in failing}
    assert summary.failed == len(failed_pairs) > 0
    assert sum(summary.failures.values()) == summary.failed
    assert set(summary.failures) <= {"unreadable answer", "HTTP 500"}
    assert summary.graded == summary.pairs - summary.failed
    written = {(o["question"], o["chunk"]) for o in verdict_lines(ws.labels.path)}
    assert written.isdisjoint(failed_pairs)  # a failure is never a grade
    # The next run asks the failed pairs, and only they, once each.
    second = ScriptedJudge()
    summary = judge_pool(_ws(settings), [second], JudgeAsk(depth=3)).judges[0]
    assert set(second.asked) == failed_pairs and set(second.asked.values()) == {1}
    assert summary.graded == len(failed_pairs) and summary.from_cache == 0
    lines = verdict_lines(ws.labels.path)
    assert len(lines) == len({(o["question"], o["chunk"]) for o in lines})  # one line per pair


def test_verdicts_in_the_cache_are_written_without_asking_again(settings):
    """The journal lost what a killed run wrote last: the cache has it, no request is sent."""
    ws = _ws(settings)
    first = ScriptedJudge()
    run = judge_pool(ws, [first], JudgeAsk(depth=3))
    ws.labels.path.write_bytes(b"")  # as if the process died before its journal batches
    second = ScriptedJudge()
    summary = judge_pool(_ws(settings), [second], JudgeAsk(depth=3)).judges[0]
    assert not second.asked
    assert summary.from_cache == summary.graded == len(run.pool.pairs)
    lines = verdict_lines(ws.labels.path)
    assert len(lines) == len(run.pool.pairs)
    assert all(o["reason"].startswith("reason for ") for o in lines)
    assert summary.tokens == 0  # no token was spent this time


def test_another_prompt_or_model_asks_again(settings):
    ws = _ws(settings)
    judge_pool(ws, [ScriptedJudge()], JudgeAsk(depth=3))
    new_prompt = ScriptedJudge(prompt_sha1="cd" * 20)
    summary = judge_pool(_ws(settings), [new_prompt], JudgeAsk(depth=3)).judges[0]
    assert summary.asked == summary.pairs > 0 and summary.from_cache == 0
    new_model = ScriptedJudge(model_id="scripted-2", settings_key="other")
    summary = judge_pool(_ws(settings), [new_model], JudgeAsk(depth=3)).judges[0]
    assert summary.asked == summary.pairs > 0


def test_again_asks_the_judge_anew_and_replaces_the_cached_grade(settings):
    ws = _ws(settings)
    judge_pool(ws, [ScriptedJudge()], JudgeAsk(depth=3, questions=("m01",)))
    again = ScriptedJudge(answer=lambda p: Verdict(0, "changed its mind"))
    summary = judge_pool(
        _ws(settings), [again], JudgeAsk(depth=3, questions=("m01",), again=True)
    ).judges[0]
    assert summary.asked == summary.pairs == len(again.asked) > 0
    ws = _ws(settings)
    pair = ws.labels.pair("m01", next(iter(again.asked))[1])
    assert pair is not None and pair.verdicts()["t"].reason == "changed its mind"
    # The cache now holds the new grade: a lost journal is rebuilt from it.
    ws.labels.path.write_bytes(b"")
    third = ScriptedJudge()
    judge_pool(_ws(settings), [third], JudgeAsk(depth=3, questions=("m01",)))
    assert not third.asked
    assert {o["reason"] for o in verdict_lines(ws.labels.path)} == {"changed its mind"}


def test_unjudged_leaves_out_the_pairs_people_graded(settings):
    ws = _ws(settings)
    pool = judge_pool(ws, [], JudgeAsk(depth=3, questions=("m01",))).pool
    graded = pool.pairs[0]
    ws.set_grade("m01", graded.chunk_id, 1)
    judge = ScriptedJudge()
    summary = judge_pool(_ws(settings), [judge], JudgeAsk(depth=3, unjudged=True)).judges[0]
    assert ("m01", graded.chunk_id) not in judge.asked
    assert summary.skipped_person == 1
    # prepare saw the person's grade with both texts.
    [(scale, people)] = judge.prepared
    assert scale == DEFAULT_GRADE_SCALE
    assert [(p.question_id, p.chunk_id, p.chunk, g) for p, g in people] == [
        ("m01", graded.chunk_id, graded.chunk, 1)
    ]
    # Without --unjudged the judge grades it too (its verdict is compared, never counted over it).
    other = ScriptedJudge("u")
    judge_pool(_ws(settings), [other], JudgeAsk(depth=3, questions=("m01",)))
    assert ("m01", graded.chunk_id) in other.asked


def test_unjudged_keeps_an_older_prompts_verdict_without_again(settings):
    ws = _ws(settings)
    judge_pool(ws, [ScriptedJudge()], JudgeAsk(depth=3, questions=("m02",)))
    newer = ScriptedJudge(prompt_sha1="ee" * 20)
    summary = judge_pool(_ws(settings), [newer], JudgeAsk(depth=3, unjudged=True)).judges[0]
    assert all(q != "m02" for q, _ in newer.asked) and summary.skipped_judged > 0


def test_questions_limit_and_the_seeded_sample(settings):
    ws = _ws(settings)
    run = judge_pool(ws, [], JudgeAsk(depth=3, questions=("m03", "m01")))
    assert run.pool.questions == ("m01", "m03")
    with pytest.raises(Exception, match="--questions: no question 'zz'"):
        judge_pool(ws, [], JudgeAsk(questions=("m01", "zz")))
    a = judge_pool(ws, [], JudgeAsk(depth=3, sample=3, seed=5)).pool
    b = judge_pool(ws, [], JudgeAsk(depth=3, sample=3, seed=5)).pool
    c = judge_pool(ws, [], JudgeAsk(depth=3, sample=3, seed=6)).pool
    assert a.questions == b.questions and len(a.questions) == 3 and a.pairs == b.pairs
    assert c.questions != a.questions
    judge = ScriptedJudge()
    summary = judge_pool(ws, [judge], JudgeAsk(depth=3, limit=4)).judges[0]
    assert summary.pairs == 4 == sum(judge.asked.values()) and summary.left > 0
    # The next run goes on with the next four.
    nxt = ScriptedJudge()
    judge_pool(_ws(settings), [nxt], JudgeAsk(depth=3, limit=4))
    assert len(nxt.asked) == 4 and set(nxt.asked).isdisjoint(judge.asked)


def test_a_judge_error_stops_the_run_and_keeps_what_was_written(settings):
    ws = _ws(settings)
    calls = 0
    lock = threading.Lock()

    def dies(pair: JudgePair) -> Verdict:
        nonlocal calls
        with lock:
            calls += 1
            if calls > 4:
                raise JudgeError("401 Unauthorized: check the key in OPENAI_API_KEY")
        return expected_verdict(pair)

    judge = ScriptedJudge(answer=dies, batch_size=1, concurrency=1)
    later = ScriptedJudge("later")
    run = judge_pool(ws, [judge, later], JudgeAsk(depth=3))
    assert run.stopped == "t: 401 Unauthorized: check the key in OPENAI_API_KEY"
    assert run.judges[0].graded == 4 and len(verdict_lines(ws.labels.path)) == 4
    assert not later.asked and len(run.judges) == 1  # the run stopped there


def test_a_grade_outside_the_scale_is_a_failure(settings):
    ws = _ws(settings)
    judge = ScriptedJudge(answer=lambda p: Verdict(7, "seven"))
    summary = judge_pool(ws, [judge], JudgeAsk(depth=3, questions=("m01",))).judges[0]
    assert summary.graded == 0 and summary.failed == summary.pairs
    assert dict(summary.failures) == {"grade outside the scale": summary.pairs}
    assert verdict_lines(ws.labels.path) == []


def test_verdicts_are_written_in_batches_as_they_come(settings):
    ws = _ws(settings)
    sizes: list[int] = []
    append = ws.labels.append_verdicts

    def spy(labels):
        sizes.append(len(labels))
        append(labels)

    ws.labels.append_verdicts = spy  # type: ignore[method-assign]
    judge = ScriptedJudge(batch_size=1, concurrency=1)
    summary = judge_pool(ws, [judge], JudgeAsk(depth=10)).judges[0]
    assert summary.graded > JOURNAL_BATCH
    assert sum(sizes) == summary.graded and max(sizes) <= JOURNAL_BATCH and len(sizes) >= 2


def test_the_cache_ignores_a_torn_line_and_repairs_it(tmp_path):
    pair = JudgePair("q", "question?", "c", "chunk", "s" * 40)
    other = JudgePair("q", "question?", "d", "chunk two", "t" * 40)
    cache = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    cache.put([(pair, Verdict(2, "yes")), (other, Verdict(None, failure="refusal: no"))])
    assert cache.get(pair) == (2, "yes") and cache.get(other) is None  # a failure is not cached
    with open(cache.path, "ab") as f:
        f.write(b'{"q": "torn')
    again = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    assert again.get(pair) == (2, "yes") and len(again) == 1
    again.put([(other, Verdict(1, "partly"))])
    third = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    assert third.get(other) == (1, "partly") and len(third) == 2
    assert cache.path.read_bytes().count(b"\n") == 2 and b"torn" not in cache.path.read_bytes()
    # Another setting or prompt reads another file; a grade off the scale is not read.
    assert VerdictCache("key", "other prompt", DEFAULT_GRADE_SCALE, tmp_path).get(pair) is None
    two_grades = ((0, "no"), (1, "yes"))
    assert VerdictCache("key", "prompt", two_grades, tmp_path).get(pair) is None


def test_failure_kind():
    assert failure_kind("unreadable answer: 'maybe'") == "unreadable answer"
    assert failure_kind("") == "failure"
    assert failure_kind("timed out after 30 s") == "timed out after 30 s"


@pytest.mark.parametrize("error", [ValueError("boom"), SystemExit(3)])
def test_a_judge_that_raises_stops_the_run_with_one_line(settings, error):
    def raises(pair: JudgePair) -> Verdict:
        raise error

    ws = _ws(settings)
    run = judge_pool(ws, [ScriptedJudge(answer=raises)], JudgeAsk(depth=3))
    assert run.stopped == f"t: {type(error).__name__}: {error}"
    assert verdict_lines(ws.labels.path) == [] and not run.interrupted
