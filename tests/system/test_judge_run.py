"""``ragtui judge``: the pool graded by model judges, verdicts in the journal as ``model:NAME``,
resuming from the verdict cache, failures retried, kill-safety, the key kept out of every output.

The core runner is tested with judges defined here (the Judge Protocol, no server); the command
with a plugin judge of this module and with the OpenAI-compatible test server (tests/judge_server.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from ragtui.cli import main
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.judge_spec import JudgeSpec
from ragtui.core.judges.base import JudgeError, JudgePair, Verdict
from ragtui.core.judges.build import build_judge
from ragtui.core.judges.cache import VerdictCache
from ragtui.core.judges.openai import openai_judge
from ragtui.core.judges.pairs import JudgeAsk
from ragtui.core.judges.prompt import default_prompt
from ragtui.core.judges.run import JOURNAL_BATCH, STOP_AFTER_DOWN, failure_kind, judge_pool
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.retrieval.live import parse_retriever_spec
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT, mini_args, settings_of
from tests.judge_server import CHECK_TEXT, Reply, serve_judge
from tests.live_servers import serve
from tests.unit.test_docs import assert_documented, documented, examples, key_paths, matches

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
    lines = verdict_lines(ws.grades.labels.path)
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
    fresh = LabelJournal(ws.grades.labels.path, "tester")
    assert fresh.current == {}


def test_a_second_run_asks_nothing_and_writes_nothing(settings):
    judge_pool(_ws(settings), [ScriptedJudge()], JudgeAsk(depth=3))
    ws = _ws(settings)
    size = ws.grades.labels.path.stat().st_size
    again = ScriptedJudge()
    summary = judge_pool(ws, [again], JudgeAsk(depth=3)).judges[0]
    assert summary.pairs == 0 and summary.skipped_judged > 0 and not again.asked
    assert again.prepared == []  # nothing to grade: no model loaded, no thresholds fitted
    assert ws.grades.labels.path.stat().st_size == size


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
    written = {(o["question"], o["chunk"]) for o in verdict_lines(ws.grades.labels.path)}
    assert written.isdisjoint(failed_pairs)  # a failure is never a grade
    # The next run asks the failed pairs, and only they, once each.
    second = ScriptedJudge()
    summary = judge_pool(_ws(settings), [second], JudgeAsk(depth=3)).judges[0]
    assert set(second.asked) == failed_pairs and set(second.asked.values()) == {1}
    assert summary.graded == len(failed_pairs) and summary.from_cache == 0
    lines = verdict_lines(ws.grades.labels.path)
    assert len(lines) == len({(o["question"], o["chunk"]) for o in lines})  # one line per pair


def test_verdicts_in_the_cache_are_written_without_asking_again(settings):
    """The journal lost what a killed run wrote last: the cache has it, no request is sent."""
    ws = _ws(settings)
    first = ScriptedJudge()
    run = judge_pool(ws, [first], JudgeAsk(depth=3))
    ws.grades.labels.path.write_bytes(b"")  # as if the process died before its journal batches
    second = ScriptedJudge()
    summary = judge_pool(_ws(settings), [second], JudgeAsk(depth=3)).judges[0]
    assert not second.asked
    assert summary.from_cache == summary.graded == len(run.pool.pairs)
    lines = verdict_lines(ws.grades.labels.path)
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
    pair = ws.grades.labels.pair("m01", next(iter(again.asked))[1])
    assert pair is not None and pair.verdicts()["t"].reason == "changed its mind"
    # The cache now holds the new grade: a lost journal is rebuilt from it.
    ws.grades.labels.path.write_bytes(b"")
    third = ScriptedJudge()
    judge_pool(_ws(settings), [third], JudgeAsk(depth=3, questions=("m01",)))
    assert not third.asked
    assert {o["reason"] for o in verdict_lines(ws.grades.labels.path)} == {"changed its mind"}


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
    assert run.judges[0].graded == 4 and len(verdict_lines(ws.grades.labels.path)) == 4
    assert not later.asked and len(run.judges) == 1  # the run stopped there


def test_a_grade_outside_the_scale_is_a_failure(settings):
    ws = _ws(settings)
    judge = ScriptedJudge(answer=lambda p: Verdict(7, "seven"))
    summary = judge_pool(ws, [judge], JudgeAsk(depth=3, questions=("m01",))).judges[0]
    assert summary.graded == 0 and summary.failed == summary.pairs
    assert dict(summary.failures) == {"grade outside the scale": summary.pairs}
    assert verdict_lines(ws.grades.labels.path) == []


def test_verdicts_are_written_in_batches_as_they_come(settings):
    ws = _ws(settings)
    sizes: list[int] = []
    append = ws.grades.labels.append_verdicts

    def spy(labels):
        sizes.append(len(labels))
        append(labels)

    ws.grades.labels.append_verdicts = spy  # type: ignore[method-assign]
    judge = ScriptedJudge(batch_size=1, concurrency=1)
    summary = judge_pool(ws, [judge], JudgeAsk(depth=10)).judges[0]
    assert summary.graded > JOURNAL_BATCH
    assert sum(sizes) == summary.graded and max(sizes) <= JOURNAL_BATCH and len(sizes) >= 2


def test_the_cache_ignores_a_torn_line_and_repairs_it(tmp_path):
    pair = JudgePair("q", "question?", "c", "chunk", "s" * 40)
    other = JudgePair("q", "question?", "d", "chunk two", "t" * 40)
    cache = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    cache.put([(pair, Verdict(2, "yes")), (other, Verdict(None, failure="refusal: no"))])
    assert (
        cache.get(pair) == Verdict(2, "yes") and cache.get(other) is None
    )  # a failure is not cached
    with open(cache.path, "ab") as f:
        f.write(b'{"q": "torn')
    again = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    assert again.get(pair) == Verdict(2, "yes") and len(again) == 1
    again.put([(other, Verdict(1, "partly"))])
    third = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    assert third.get(other) == Verdict(1, "partly") and len(third) == 2
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
    assert verdict_lines(ws.grades.labels.path) == [] and not run.interrupted


# ---- the command, against the OpenAI-compatible test server --------------------------------------

KEY_ENV = "RAGTUI_TEST_JUDGE_KEY"
KEY = "sk-test-" + "S3CRETk3y" * 4


@pytest.fixture(scope="module")
def server():
    with serve_judge() as running:
        yield running


def grade_of(text: str) -> int:
    """What the server grades a request's text: a function of the whole prompt (question and chunk)."""
    return int(hashlib.sha1(text.encode()).hexdigest(), 16) % 3


@pytest.fixture
def chat(server):
    """The server, cleared, grading every prompt by ``grade_of``."""
    server.clear()
    server.grader = grade_of
    return server


def _project(folder: Path, url: str, *extra: str) -> Path:
    """A project file defining the judge ``llm`` on the test server."""
    path = folder / "ragtui.toml"
    lines = [
        "[judges.llm]",
        f'url = "{url}"',
        'model = "judge-model"',
        f'api_key_env = "{KEY_ENV}"',
        "retries = 0",
        "timeout = 20",
        *extra,
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


class Texts:
    """The small corpus's pairs as the judge sees them: prompt text <-> (question, chunk)."""

    def __init__(self, mini: Path, url: str) -> None:
        ws = Workspace.load(settings_of(mini, retrievers=("bm25",)))
        self.ws = ws
        self.judge = openai_judge(
            JudgeSpec("llm", "openai", "judge-model", {"url": url}), DEFAULT_GRADE_SCALE
        )

    def pair(self, qid: str, cid: str) -> JudgePair:
        chunk = self.ws.passages.by_id[cid]
        return JudgePair(qid, self.ws.questions.by_id[qid].text, cid, chunk.text, chunk.sha1)

    def prompt(self, qid: str, cid: str) -> str:
        return self.judge.messages(self.pair(qid, cid))[-1]["content"]

    def key(self, text: str) -> tuple[str, str]:
        """The (question, chunk) a request's prompt asked about."""
        found = [
            (q.id, c.id)
            for q in self.ws.questions
            for c in self.ws.data.chunks
            if self.prompt(q.id, c.id) == text
        ]
        assert len(found) == 1, text[:200]
        return found[0]


def _judge_argv(mini: Path, project: Path, *extra: str) -> list[str]:
    return [
        "judge",
        "--project",
        str(project),
        *mini_args(mini, "--retrievers", "bm25", "--depth", "3"),
        *extra,
    ]


@pytest.fixture
def cli_env(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv("RAGTUI_PROGRESS_SECONDS", raising=False)
    return tmp_path / "cache"


def _json_run(argv: list[str], capsys, exit_code: int = 0) -> dict:
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == exit_code, captured.err
    return json.loads(captured.out)


def test_the_command_writes_the_servers_grades_as_model_verdicts(
    mini, chat, cli_env, capsys, tmp_path
):
    project = _project(tmp_path, chat.url)
    code = main(_judge_argv(mini, project, "--judge", "llm"))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    texts = Texts(mini, chat.url)
    lines = verdict_lines(mini / "golden" / "labels.jsonl", "llm")
    assert lines and len(lines) == len(chat.requests)
    assert len({(o["question"], o["chunk"]) for o in lines}) == len(lines)
    for obj in lines:
        grade = grade_of(texts.prompt(obj["question"], obj["chunk"]))
        assert obj["grade"] == grade
        assert obj["model"] == "judge-model"
        assert obj["prompt_sha1"] == default_prompt().sha1
        assert obj["reason"] == f"The passage was graded {grade}."
    # The summary on stdout, the progress (not a terminal: lines) on stderr.
    out = captured.out.splitlines()
    assert out[0] == f"pool: 7 questions, {len(lines)} pairs (the top 3 of bm25)"
    assert out[1] == f"judge llm (model judge-model, prompt {default_prompt().sha1[:12]})"
    assert out[2] == f"  pairs    {len(lines)} to grade"
    assert out[3] == f"  graded   {len(lines)} (0 from the cache, {len(lines)} by the judge)"
    assert out[4] == "  failed   0"
    assert re.fullmatch(
        rf"  speed    {len(lines)} pairs and {30 * len(lines):,} tokens in [\d.]+ s: "
        r"[\d.]+ pairs/s, [\d,]+ tokens/s",
        out[5],
    )
    assert (
        out[6] == f"verdicts: {mini / 'golden' / 'labels.jsonl'} ({len(lines)} lines as model:llm)"
    )
    err = captured.err.splitlines()
    assert f"ragtui: judging {len(lines)} pairs..." in err
    assert re.fullmatch(
        rf"ragtui: judging: {len(lines)} of {len(lines)} pairs in [\d.]+ s "
        r"\([\d.]+ pairs/s, [\d,]+ tokens/s\)",
        err[-1],
    )
    # Run again: nothing is asked, nothing written.
    chat.clear()
    summary = _json_run(_judge_argv(mini, project), capsys)["judges"]["llm"]
    assert summary["pairs"] == 0 and summary["skipped"]["judged"] == len(lines)
    assert chat.requests == []


def test_failures_are_counted_and_asked_again_on_the_next_run_only(
    mini, chat, cli_env, capsys, tmp_path
):
    project = _project(tmp_path, chat.url, "concurrency = 3")
    texts = Texts(mini, chat.url)
    # Two chunks' pairs fail: one with an answer that holds no grade, one with HTTP 500.
    unreadable = texts.ws.passages.by_id["ferry.md#0"].text[-40:]
    broken = texts.ws.passages.by_id["library.md#0"].text[-40:]
    chat.script(unreadable, Reply("I would rather not say."))
    chat.script(broken, Reply("overloaded", status=500))
    # Exit 1: the run went through, and some pairs failed (asked again next time).
    first = _json_run(_judge_argv(mini, project), capsys, exit_code=1)
    summary = first["judges"]["llm"]
    failed = {
        texts.key(r.body["messages"][-1]["content"])
        for r in chat.requests
        if (
            unreadable in r.body["messages"][-1]["content"]
            or broken in r.body["messages"][-1]["content"]
        )
    }
    assert failed and summary["failed"] == len(failed)
    assert summary["graded"] == summary["pairs"] - len(failed)
    assert set(summary["failures"]) == {"unreadable answer", "server error"}
    assert sum(summary["failures"].values()) == len(failed)
    written = {
        (o["question"], o["chunk"]) for o in verdict_lines(mini / "golden" / "labels.jsonl", "llm")
    }
    assert written.isdisjoint(failed)
    # Every key printed is in docs/json.md, and every key there is printed.
    doc = documented("ragtui judge --json")
    assert_documented(set(key_paths(first)), doc, "ragtui judge --json")
    # The next run asks the failed pairs again, and only they.
    chat.clear()
    chat.grader = grade_of
    second = _json_run(_judge_argv(mini, project), capsys)["judges"]["llm"]
    asked = [texts.key(r.body["messages"][-1]["content"]) for r in chat.requests]
    assert sorted(asked) == sorted(failed)
    assert second["graded"] == len(failed) and second["failed"] == 0
    lines = verdict_lines(mini / "golden" / "labels.jsonl", "llm")
    assert len(lines) == len({(o["question"], o["chunk"]) for o in lines}) == first["pool"]["pairs"]


def test_the_key_never_appears_in_any_output_or_file(mini, chat, cli_env, capsys, tmp_path):
    project = _project(tmp_path, chat.url)
    texts = Texts(mini, chat.url)
    echo = texts.ws.passages.by_id["ferry.md#0"].text[-40:]
    error = texts.ws.passages.by_id["library.md#0"].text[-40:]
    garbled = texts.ws.passages.by_id["market.txt#0"].text[-40:]
    chat.script(echo, Reply("Reason: my key is {authorization}\nGrade: 1"))
    chat.script(error, Reply("bad request from {authorization}", status=400))
    chat.script(garbled, Reply("{authorization}"))
    code = main(_judge_argv(mini, project))
    first = capsys.readouterr()
    assert code == 1, first.err  # two pairs failed: the run went through
    code = main(_judge_argv(mini, project, "--json", "--again"))
    second = capsys.readouterr()
    assert code == 1, second.err
    assert all(r.headers.get("Authorization") == f"Bearer {KEY}" for r in chat.requests)
    failed = first.out.splitlines()[4]
    assert "request failed" in failed and "unreadable answer" in failed, first.out
    reasons = {o["reason"] for o in verdict_lines(mini / "golden" / "labels.jsonl", "llm")}
    assert any("my key is" in r for r in reasons)  # the echo came back, masked
    files = [mini / "golden" / "labels.jsonl", *sorted((cli_env / "judges").glob("*"))]
    assert len(files) >= 2
    for text in (first.out, first.err, second.out, second.err, *(f.read_text() for f in files)):
        assert KEY not in text and KEY[8:] not in text


def test_sample_with_a_seed_is_reproducible(mini, chat, cli_env, capsys, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(mini / "corpus", other / "corpus")
    shutil.copytree(mini / "golden", other / "golden")
    project = _project(tmp_path, chat.url)

    def judged(folder: Path, seed: str) -> set[str]:
        run = _json_run(_judge_argv(folder, project, "--sample", "3", "--seed", seed), capsys)
        assert run["pool"]["questions"] == 3
        return {o["question"] for o in verdict_lines(folder / "golden" / "labels.jsonl", "llm")}

    first = judged(mini, "4")
    assert len(first) == 3
    assert judged(other, "4") == first
    (other / "golden" / "labels.jsonl").write_text("")
    assert judged(other, "5") != first


def test_unjudged_leaves_the_peoples_pairs_to_them(mini, chat, cli_env, capsys, tmp_path):
    project = _project(tmp_path, chat.url)
    texts = Texts(mini, chat.url)
    ws = Workspace.open(settings_of(mini, retrievers=("bm25",), annotator="ana"))
    people = [
        ("m01", p.chunk_id)
        for p in judge_pool(ws, [], JudgeAsk(depth=3, questions=("m01",))).pool.pairs
    ]
    for qid, cid in people:
        ws.set_grade(qid, cid, 2)
    summary = _json_run(_judge_argv(mini, project, "--unjudged"), capsys)["judges"]["llm"]
    asked = {texts.key(r.body["messages"][-1]["content"]) for r in chat.requests}
    assert asked and asked.isdisjoint(people)
    assert summary["skipped"]["person"] == len(people)


def test_bad_input_exits_2_with_one_line(mini, chat, cli_env, capsys, tmp_path):
    project = _project(tmp_path, chat.url)
    cases = [
        (["--seed", "3"], "ragtui: error: --seed: it seeds --sample; give --sample N too"),
        (["--questions", "m01,zz"], "ragtui: error: --questions: no question 'zz'"),
        (["--judge", "nope"], "ragtui: error: --judge nope: "),
    ]
    for extra, line in cases:
        assert main(_judge_argv(mini, project, *extra)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(line), err
    assert main(["judge", "--no-project", *mini_args(mini, "--retrievers", "bm25")]) == 2
    assert "ragtui judge needs a judge" in capsys.readouterr().err
    assert chat.requests == []


def test_a_refused_key_stops_the_run_with_one_line_and_exit_2(
    mini, chat, cli_env, capsys, tmp_path
):
    project = _project(tmp_path, chat.url)
    chat.grader = lambda text: Reply("invalid api key", status=401)
    code = main(_judge_argv(mini, project))
    captured = capsys.readouterr()
    assert code == 2
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("ragtui: error: llm: ") and "HTTP 401" in last
    assert last.endswith("(the verdicts that came are written)")
    assert "graded   0" in captured.out
    assert verdict_lines(mini / "golden" / "labels.jsonl", "llm") == []


def test_the_bundled_golden_set_is_never_written(chat, cli_env, capsys, tmp_path, user_data_home):
    project = _project(tmp_path, chat.url)
    bundled = ROOT / "golden"
    before = {p: p.read_bytes() for p in sorted(bundled.rglob("*")) if p.is_file()}
    argv = ["judge", "--project", str(project), "--retrievers", "bm25", "--depth", "2"]
    run = _json_run([*argv, "--questions", "q01,q02"], capsys)
    after = {p: p.read_bytes() for p in sorted(bundled.rglob("*")) if p.is_file()}
    assert after == before
    journal = Path(run["journal"])
    assert journal.is_relative_to(user_data_home) and journal.name == "labels.jsonl"
    lines = verdict_lines(journal, "llm")
    assert {o["question"] for o in lines} == {"q01", "q02"}
    assert run["judges"]["llm"]["graded"] == run["pool"]["pairs"] > 0


# ---- kill-safety: SIGKILL and Ctrl-C mid-run ------------------------------------------------------


def _cached(cache: Path) -> list[tuple[str, str]]:
    """The (question hash, chunk hash) keys of every whole line of the verdict cache."""
    out = []
    for path in sorted((cache / "judges").glob("*.jsonl")):
        for raw in path.read_bytes().split(b"\n"):
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            out.append((obj["q"], obj["c"]))
    return out


def _start_slow_run(mini: Path, project: Path, chat, cache: Path, tmp_path: Path):
    """``ragtui judge`` in a process of its own, the server slow; returns once 4 verdicts are cached."""
    chat.delay = 0.15
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache), KEY_ENV: KEY}
    child = subprocess.Popen(
        [sys.executable, "-m", "ragtui", *_judge_argv(mini, project, "--depth", "5")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 120
    while len(_cached(cache)) < 4:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return child


def _rerun(mini: Path, project: Path, chat, texts: Texts, capsys) -> tuple[dict, list[JudgePair]]:
    chat.clear()
    chat.grader = grade_of
    code = main([*_judge_argv(mini, project, "--depth", "5"), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    run = json.loads(captured.out)
    cached = run["judges"]["llm"]["from_cache"]
    end = captured.err.splitlines()[-1]
    assert (f"pairs ({cached} from the cache) in " in end) == (cached > 0), end
    asked = [texts.pair(*texts.key(r.body["messages"][-1]["content"])) for r in chat.requests]
    return run, asked


def _one_right_line_per_pair(mini: Path, texts: Texts, pairs: int) -> list[dict]:
    lines = verdict_lines(mini / "golden" / "labels.jsonl", "llm")
    assert len(lines) == len({(o["question"], o["chunk"]) for o in lines}) == pairs
    for obj in lines:
        assert obj["grade"] == grade_of(texts.prompt(obj["question"], obj["chunk"]))
    return lines


def test_a_run_killed_mid_way_then_run_again_counts_nothing_twice(
    mini, chat, cli_env, capsys, tmp_path
):
    project = _project(tmp_path, chat.url, "concurrency = 2")
    texts = Texts(mini, chat.url)
    child = _start_slow_run(mini, project, chat, cli_env, tmp_path)
    child.kill()
    child.communicate()
    assert child.returncode == -signal.SIGKILL
    cached = set(_cached(cli_env))
    journal = {
        VerdictCache.key(texts.pair(o["question"], o["chunk"]))
        for o in verdict_lines(mini / "golden" / "labels.jsonl", "llm")
    }
    assert journal <= cached  # the cache is written first
    run, asked = _rerun(mini, project, chat, texts, capsys)
    summary = run["judges"]["llm"]
    # No request for a pair the killed run had an answer for; those come from the cache.
    assert not {VerdictCache.key(p) for p in asked} & cached
    assert summary["from_cache"] == len(cached - journal)
    assert summary["skipped"]["judged"] == len(journal)
    _one_right_line_per_pair(mini, texts, run["pool"]["pairs"])


def test_ctrl_c_stops_writes_what_came_and_exits_130(mini, chat, cli_env, capsys, tmp_path):
    project = _project(tmp_path, chat.url, "concurrency = 2")
    texts = Texts(mini, chat.url)
    child = _start_slow_run(mini, project, chat, cli_env, tmp_path)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert err.decode().splitlines()[-1] == (
        "ragtui: interrupted (the verdicts that came are written)"
    )
    assert "judge llm (model judge-model" in out.decode()
    cached = set(_cached(cli_env))
    lines = verdict_lines(mini / "golden" / "labels.jsonl", "llm")
    assert {VerdictCache.key(texts.pair(o["question"], o["chunk"])) for o in lines} == cached
    run, asked = _rerun(mini, project, chat, texts, capsys)
    assert not {VerdictCache.key(p) for p in asked} & cached
    assert run["judges"]["llm"]["from_cache"] == 0
    _one_right_line_per_pair(mini, texts, run["pool"]["pairs"])


# ---- the page's example --------------------------------------------------------------------------

#: The session docs/judges.md shows (stderr then stdout, as a log shows them).
SESSION = (
    "docs/judges.md",
    "ragtui judge --judge sim=similarity --retrievers bm25 --depth 3 --questions q01,q02,q03",
)


def test_the_session_in_judges_md_prints_what_the_page_shows(
    monkeypatch, tmp_path, capsys, cache_dir
):
    """Run in a fresh data folder, with the tests' cache (its embeddings) but not this judge's
    verdicts; timings (numbers with a decimal point) may differ."""
    example = next(e for e in examples() if e.key == SESSION)
    share = tmp_path / "share"
    monkeypatch.setenv("XDG_DATA_HOME", str(share))
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    settings = Settings(retrievers=("bm25",), depth=3).checked()
    sim = build_judge(JudgeSpec("sim", "similarity"), settings)
    sim.prepare(DEFAULT_GRADE_SCALE, [])  # the default thresholds: the key the page's run uses
    VerdictCache(sim.settings_key, sim.prompt_sha1, DEFAULT_GRADE_SCALE).path.unlink(
        missing_ok=True
    )
    monkeypatch.delenv("RAGTUI_PROGRESS_SECONDS", raising=False)
    monkeypatch.chdir(tmp_path)
    timing = re.compile(r"\d+\.\d+")
    for step in example.steps:
        argv = shlex.split(step.command)
        assert argv[0] == "ragtui"
        code = main([*argv[1:], "--no-project"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        printed = (captured.err + captured.out).replace(str(share), "/home/ana/.local/share")
        expected = [timing.sub("N", line) for line in step.expected]
        shown = [timing.sub("N", line) for line in printed.splitlines()]
        assert matches(expected, shown), "\n".join(printed.splitlines())


# ---- what a judge or the disk may throw at the runner --------------------------------------------


def test_odd_verdicts_are_failures_or_cleaned_never_a_crash(settings):
    odd = [
        Verdict(2.0, "a float"),  # type: ignore[arg-type]
        Verdict(True, "a bool"),  # type: ignore[arg-type]
        Verdict(1, None),  # type: ignore[arg-type]
        Verdict(1, "tokens", tokens="x"),  # type: ignore[arg-type]
        ("not", "a verdict"),
        Verdict(2, "a lone \ud800 surrogate"),
    ]
    ws = _ws(settings)

    class Odd(ScriptedJudge):
        def grade(self, pairs):
            return odd[: len(pairs)]

    summary = judge_pool(ws, [Odd(batch_size=6, concurrency=1)], JudgeAsk(depth=3, limit=6)).judges[
        0
    ]
    assert (summary.pairs, summary.graded, summary.failed, summary.tokens) == (6, 3, 3, 0)
    assert dict(summary.failures) == {"grade outside the scale": 2, "not a verdict": 1}
    lines = {o.get("reason", ""): o["grade"] for o in verdict_lines(ws.grades.labels.path)}
    # 2.0, True and the tuple failed; None became "", the odd tokens 0, the surrogate replaced.
    assert lines == {"": 1, "tokens": 1, "a lone ? surrogate": 2}
    cache = VerdictCache("scripted-settings", "ab" * 20, DEFAULT_GRADE_SCALE, settings.cache_dir)
    assert len(cache) == 3


def test_a_cache_that_is_a_fifo_or_cannot_be_written_is_gone_without(settings, capsys):
    ws = _ws(settings)
    judge = ScriptedJudge()
    path = VerdictCache(
        judge.settings_key, judge.prompt_sha1, DEFAULT_GRADE_SCALE, settings.cache_dir
    ).path
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    said: list[str] = []
    summary = judge_pool(ws, [judge], JudgeAsk(depth=3), notify=said.append).judges[0]
    assert summary.graded == summary.pairs > 0
    assert len(verdict_lines(ws.grades.labels.path)) == summary.pairs
    assert said[-1] == (
        f"warning: t: cannot write the verdict cache ({path}: not a regular file); going on "
        "without it (an interrupted run asks these pairs again)"
    )
    # A folder that cannot be made (a file in its place): the same, once.
    other = ScriptedJudge("o", settings_key="other")
    path.unlink()
    path.parent.rmdir()
    path.parent.write_text("not a folder")
    said.clear()
    summary = judge_pool(_ws(settings), [other], JudgeAsk(depth=3), notify=said.append).judges[0]
    assert summary.graded == summary.pairs > 0
    assert [line for line in said if "verdict cache" in line] == [said[-1]]
    assert "cannot write the verdict cache" in said[-1] and summary.cache_problem


def test_a_read_only_journal_is_refused_before_the_judge_is_asked(settings):
    ws = _ws(settings)
    ws.grades.labels.path.chmod(0o444)
    judge = ScriptedJudge()
    with pytest.raises(Exception, match="nothing was graded"):
        judge_pool(ws, [judge], JudgeAsk(depth=3))
    assert not judge.asked and not judge.prepared


def test_ctrl_c_lets_the_batch_that_came_be_cached_and_written_whole(settings, monkeypatch):
    """Ctrl-C right after a batch was cached: its verdicts reach the journal too, then the run stops."""
    ws = _ws(settings)
    put = VerdictCache.put
    calls = 0

    def put_then_ctrl_c(self, graded):
        nonlocal calls
        put(self, graded)
        calls += 1
        if calls == 2:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(VerdictCache, "put", put_then_ctrl_c)
    judge = ScriptedJudge(batch_size=3, concurrency=1)
    run = judge_pool(ws, [judge], JudgeAsk(depth=3))
    summary = run.judges[0]
    assert run.interrupted and summary.graded == 6 < summary.pairs
    cache = VerdictCache(
        judge.settings_key, judge.prompt_sha1, DEFAULT_GRADE_SCALE, settings.cache_dir
    )
    lines = verdict_lines(ws.grades.labels.path)
    assert len(cache) == len(lines) == 6
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_live_retrievers_own_passages_are_pooled_and_judged(settings):
    """A service over another chunking of the corpus: its passages are graded like ragtui's chunks."""
    plain = replace(settings, bm25_backend="bm25s")
    with serve(Workspace.load(plain).data.chunks) as server:
        spec = parse_retriever_spec(f"svc={server.url}/passages?q={{query}}&k={{depth}}")
        ws = Workspace.open(replace(plain, live_retrievers=(spec,)))
    assert ws.passages.foreign
    judge = ScriptedJudge()
    run = judge_pool(ws, [judge], JudgeAsk(depth=3))
    own = [p for p in run.pool.pairs if p.chunk_id in ws.passages.foreign]
    assert own and run.pool.retrievers == ("bm25", "svc")
    for pair in own:
        assert pair.chunk == ws.passages.foreign[pair.chunk_id].text
        assert judge.asked[(pair.question_id, pair.chunk_id)] == 1
        verdict = ws.grades.judge_verdicts(pair.question_id, pair.chunk_id)["t"]  # it applies
        assert verdict.grade == expected_grade(pair) and verdict.chunk_sha1 == pair.chunk_sha1


def test_a_judge_that_cannot_exist_is_refused_before_anything_loads(
    mini, cli_env, capsys, tmp_path
):
    missing = tmp_path / "no-such-model"
    argv = ["judge", "--no-project", *mini_args(mini), "--judge", f"ce=cross-encoder:{missing}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ragtui: error: ") and str(missing) in err[0]
    assert not cli_env.exists()  # nothing was chunked, indexed or embedded


def test_a_forged_cache_line_is_cleaned_as_a_fresh_verdict_is(tmp_path):
    pair = JudgePair("q", "question?", "c", "chunk", "s" * 40)
    cache = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path)
    cache.put([(pair, Verdict(2, "yes", answer="structured", probabilities=((0, 0.5), (2, 0.5))))])
    q, c = VerdictCache.key(pair)
    forged = {"q": q, "c": c, "grade": 1, "reason": "\x1b[31mRED\x1b[0m \x1b]0;pwned\x07 ok."}
    with open(cache.path, "ab") as f:
        f.write(json.dumps(forged).encode() + b"\n")
    again = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path).get(pair)
    assert again is not None and again.grade == 1 and again.answer == ""
    assert not any(ord(ch) < 32 or ord(ch) == 127 for ch in again.reason)
    # A verdict written after it is read back whole: how it was read and its probabilities.
    cache.put([(pair, Verdict(2, "yes", answer="structured", probabilities=((0, 0.5), (2, 0.5))))])
    kept = VerdictCache("key", "prompt", DEFAULT_GRADE_SCALE, tmp_path).get(pair)
    assert kept == Verdict(2, "yes", answer="structured", probabilities=((0, 0.5), (2, 0.5)))


# ---- failing fast ------------------------------------------------------------------------------


def _judge_argv_flag(mini: Path, judge: str) -> list[str]:
    """``ragtui judge`` with one ``--judge NAME=SPEC`` and no project file."""
    return [
        "judge",
        "--no-project",
        *mini_args(mini, "--retrievers", "bm25", "--depth", "3"),
        "--judge",
        judge,
    ]


def _free_port() -> int:
    """A port nothing listens on (bound, then let go): connecting to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:{free}/v1", "http://127.0.0.1:99999/v1", "http://127.0.0.1:0/v1"]
)
def test_a_dead_endpoint_is_one_line_and_exit_2_before_the_pool(mini, cli_env, capsys, url):
    url = url.format(free=_free_port())
    started = time.monotonic()
    code = main(_judge_argv_flag(mini, f"dead=openai:m@{url}"))
    captured = capsys.readouterr()
    assert code == 2 and time.monotonic() - started < 15
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("ragtui: error: ") and "Traceback" not in captured.err
    assert verdict_lines(mini / "golden" / "labels.jsonl", "dead") == []


def test_a_key_refused_before_the_pool_names_the_judge(mini, chat, cli_env, capsys, tmp_path):
    # A real server refuses the check too: one line naming the judge, nothing asked of the pool.
    project = _project(tmp_path, chat.url)
    chat.script(CHECK_TEXT, Reply("invalid api key", status=401))
    code = main(_judge_argv(mini, project))
    captured = capsys.readouterr()
    assert code == 2 and chat.requests == []
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("ragtui: error: llm: ") and "HTTP 401" in line


def test_an_endpoint_that_goes_down_mid_run_stops_it_with_what_it_wrote(
    mini, chat, cli_env, capsys, tmp_path
):
    project = _project(tmp_path, chat.url, "concurrency = 1")
    project.write_text(project.read_text().replace("timeout = 20", "timeout = 1"))
    answered = []

    def grade(text: str) -> Reply:
        answered.append(text)
        return Reply("Grade: 1") if len(answered) <= 3 else Reply("Grade: 1", delay=3.0)

    chat.grader = grade
    started = time.monotonic()
    code = main(_judge_argv(mini, project))
    captured = capsys.readouterr()
    assert code == 2 and time.monotonic() - started < 30
    assert "pairs in a row found the endpoint down (timed out" in captured.err
    assert len(verdict_lines(mini / "golden" / "labels.jsonl", "llm")) == 3
    # The pair the worker had already sent when the run stopped may be one more.
    assert 3 + STOP_AFTER_DOWN <= len(chat.requests) <= 3 + STOP_AFTER_DOWN + 1


def test_a_judge_is_never_fitted_to_the_grades_of_the_estimates_sample(settings):
    from ragtui.core.judges.sample import draw_sample, save_sample
    from ragtui.core.judges.verify import sample_population

    ws = _ws(settings)
    population = sample_population(ws.questions)
    sample = draw_sample(population, 2, 0)
    save_sample(ws.grades.labels.path.parent, sample)
    inside, outside = sample.questions[0], next(q for q in population if q not in sample.questions)
    for qid in (inside, outside):
        ws.set_grade(qid, ws.ranking("bm25", qid)[0][0], 2)
    judge = ScriptedJudge()
    judge_pool(_ws(settings), [judge], JudgeAsk(questions=(outside,)))
    ((_, graded),) = judge.prepared
    assert [pair.question_id for pair, _ in graded] == [outside]
