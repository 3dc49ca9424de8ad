"""The OpenAI-compatible chat judge against a real chat server on 127.0.0.1 (tests/judge_server.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import JudgeSpec
from ragtui.core.judges.base import JudgeError, JudgePair
from ragtui.core.judges.openai import MAX_RETRY_AFTER, OpenAIJudge, chat_url, openai_judge
from ragtui.core.judges.prompt import DEFAULT_PROMPT
from tests.judge_server import SHAPES, JudgeServer, Reply, serve_judge

S = DEFAULT_GRADE_SCALE
KEY = "sk-test-7f3a9c2e1b8d4f60a5e7c3b9d1f2e4a6"
REASON = "The passage states the default chunk size."


@pytest.fixture(scope="module")
def server() -> Iterator[JudgeServer]:
    with serve_judge() as running:
        yield running


@pytest.fixture
def srv(server: JudgeServer) -> Iterator[JudgeServer]:
    server.clear()
    yield server
    server.clear()


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("RAGTUI_TEST_KEY", KEY)
    return "RAGTUI_TEST_KEY"


def make(
    server: JudgeServer, scale: GradeScale = S, fast: bool = True, **options: object
) -> OpenAIJudge:
    spec = JudgeSpec("llm", "openai", "qwen2.5:7b-instruct", options={"url": server.url, **options})
    judge = openai_judge(spec, scale)
    if fast:
        judge.backoff = 0.01
    return judge


def pair(marker: str, question: str = "What is the default chunk size?") -> JudgePair:
    return JudgePair("q01", question, f"doc.md#{marker}", f"Chunks are 512 tokens. {marker}", "sha")


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("grade", [0, 1, 2])
def test_each_answer_shape_gives_its_grade_and_reason(
    srv: JudgeServer, shape: str, grade: int
) -> None:
    srv.script("<m>", Reply(SHAPES[shape](grade, REASON), tokens=77))
    (verdict,) = make(srv).grade([pair("<m>")])
    assert verdict.grade == grade and verdict.failure == "" and verdict.tokens == 77
    assert verdict.reason == ("" if shape in ("bare", "umbrela") else REASON)


def test_request_is_the_prompt_at_temperature_zero(srv: JudgeServer) -> None:
    judge = make(srv, max_tokens=300)
    (verdict,) = judge.grade([pair("<m> [grade=1]", "How big is a chunk?")])
    assert verdict.grade == 1
    (request,) = srv.requests
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    body = request.body
    assert set(body) == {
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "response_format",
        "logprobs",
        "top_logprobs",
    }
    assert body["model"] == "qwen2.5:7b-instruct"
    assert body["temperature"] == 0 and body["max_tokens"] == 300
    (message,) = body["messages"]
    assert message["role"] == "user"
    text = message["content"]
    assert "Question: How big is a chunk?" in text
    assert "Chunks are 512 tokens. <m> [grade=1]" in text
    assert "0 = not relevant\n1 = partly\n2 = answers fully" in text
    assert judge.prompt_sha1 == hashlib.sha1(DEFAULT_PROMPT.encode()).hexdigest()
    assert judge.model_id == "qwen2.5:7b-instruct"
    assert "Authorization" not in request.headers  # no api_key_env: no key sent


def test_custom_prompt_file_is_sent(srv: JudgeServer, tmp_path) -> None:
    path = tmp_path / "judge-prompt.txt"
    path.write_text("Q={question}\nP={passage}\nGrades:\n{scale}\nAnswer JSON.", encoding="utf-8")
    judge = make(srv, prompt=path)
    srv.script("<m>", Reply('{"grade": 0, "reason": "No."}'))
    (verdict,) = judge.grade([pair("<m>", "Why?")])
    assert (verdict.grade, verdict.reason) == (0, "No.")
    sent = srv.requests[0].body["messages"][0]["content"]
    assert (
        sent
        == "Q=Why?\nP=Chunks are 512 tokens. <m>\nGrades:\n0 = not relevant\n1 = partly\n2 = answers fully\nAnswer JSON."
    )
    assert judge.prompt_sha1 == hashlib.sha1(path.read_bytes()).hexdigest()
    assert judge.settings_key != make(srv).settings_key
    assert "judge-prompt.txt" in judge.prepare(S, [])


def test_other_scale(srv: JudgeServer) -> None:
    four = ((0, "irrelevant"), (1, "related"), (2, "highly relevant"), (3, "perfectly relevant"))
    srv.script("<m>", Reply("Grade: 3"))
    assert make(srv, four).grade([pair("<m>")])[0].grade == 3
    judge = make(srv)
    assert judge.grade([pair("<m>")])[0].failure == "grade outside the scale: 3 (the scale is 0–2)"
    before = judge.settings_key
    judge.prepare(four, [])
    assert judge.settings_key != before and judge.grade([pair("<m>")])[0].grade == 3
    assert "3 = perfectly relevant" in srv.requests[-1].body["messages"][0]["content"]


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply("I'm sorry, but I can't help with that."), "refused: I'm sorry"),
        (Reply(None, finish_reason="content_filter"), "refused: the content filter"),
        (Reply("", refusal="I cannot assist with this request."), "refused: I cannot assist"),
        (
            Reply("Grade: 2", finish_reason="length"),
            "cut off: the answer reached max_tokens (1024)",
        ),
        (Reply("The passage seems fine to me."), "unreadable answer: no grade in"),
        (Reply(""), "unreadable answer: the answer is empty"),
        (Reply(None), "unreadable answer: the answer is empty"),
        (Reply("Grade: 1\nGrade: 2"), "conflicting grades: 1 and 2"),
        (Reply("Grade: 5"), "grade outside the scale: 5"),
        (
            Reply(raw=b"<html><body>Bad gateway</body></html>"),
            "bad response: not JSON (it starts '<html>",
        ),
        (Reply(raw=b"[1, 2]"), "bad response: not a chat completion"),
        (Reply(raw=b'{"choices": []}'), "bad response: no choices"),
        (Reply(raw=b'{"error": {"message": "overloaded"}}'), "bad response: an error (overloaded)"),
        (Reply("too long", status=400), "request failed: HTTP 400 Bad Request (too long)"),
    ],
)
def test_failures_are_verdicts_without_a_grade(srv: JudgeServer, reply: Reply, kind: str) -> None:
    srv.script("<m>", reply)
    (verdict,) = make(srv).grade([pair("<m>")])
    assert verdict.grade is None and verdict.failure.startswith(kind), verdict.failure
    assert "\n" not in verdict.failure
    assert len(srv.requests) == 1  # not asked again: it would answer the same


def test_429_then_success_is_retried(srv: JudgeServer) -> None:
    srv.script("<m>", Reply("slow down", status=429), Reply(status=503), Reply("Grade: 2"))
    (verdict,) = make(srv).grade([pair("<m>")])
    assert verdict.grade == 2 and len(srv.requests) == 3


def test_a_reasoning_model_is_asked_its_way(srv: JudgeServer) -> None:
    # OpenAI's reasoning models refuse max_tokens, then a temperature other than their default: the
    # judge sends max_completion_tokens and no temperature from then on, without spending a retry.
    srv.script(
        "<reasoning>",
        Reply(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            status=400,
        ),
        Reply(
            "Unsupported value: 'temperature' does not support 0 with this model. "
            "Only the default (1) value is supported.",
            status=400,
        ),
        Reply("Grade: 1"),
    )
    judge = make(srv, retries=0)
    verdicts = judge.grade([pair("<reasoning>"), pair("<reasoning> again")])
    assert [v.grade for v in verdicts] == [1, 1]
    bodies = [r.body for r in srv.requests]
    assert "max_tokens" in bodies[0] and "temperature" in bodies[0]
    assert "max_completion_tokens" in bodies[1] and "max_tokens" not in bodies[1]
    assert "temperature" not in bodies[2] and "temperature" not in bodies[3]
    assert len(bodies) == 4  # the second pair was sent the new way at once
    # Any other 400 fails only that pair, as before.
    srv.script("<bad>", Reply("Invalid value for 'messages'.", status=400))
    (verdict,) = judge.grade([pair("<bad>")])
    assert verdict.grade is None and verdict.failure.startswith("request failed: HTTP 400")


def test_retry_after_is_honoured(srv: JudgeServer) -> None:
    srv.script("<m>", Reply(status=429, headers=(("Retry-After", "1"),)), Reply("Grade: 1"))
    (verdict,) = make(srv).grade([pair("<m>")])
    first, second = srv.requests
    assert verdict.grade == 1 and second.at - first.at >= 0.95


def test_retry_after_too_long_fails_at_once(srv: JudgeServer) -> None:
    wait = str(int(MAX_RETRY_AFTER * 10))
    srv.script("<m>", Reply(status=429, headers=(("Retry-After", wait),)), Reply("Grade: 1"))
    started = time.monotonic()
    (verdict,) = make(srv).grade([pair("<m>")])
    assert time.monotonic() - started < 2 and len(srv.requests) == 1
    assert (
        verdict.failure.startswith("rate limited: HTTP 429") and f"wait {wait} s" in verdict.failure
    )


def test_500s_are_retried_then_fail(srv: JudgeServer) -> None:
    srv.script("<m>", Reply("database is down", status=500))
    (verdict,) = make(srv, retries=2).grade([pair("<m>")])
    assert verdict.grade is None and len(srv.requests) == 3
    assert (
        verdict.failure
        == "server error: HTTP 500 Internal Server Error (database is down) (3 tries)"
    )


def test_backoff_grows_with_jitter(srv: JudgeServer) -> None:
    srv.script("<m>", Reply(status=502))
    judge = make(srv, retries=3)
    judge.backoff = 0.1
    judge.grade([pair("<m>")])
    gaps = [b.at - a.at for a, b in zip(srv.requests, srv.requests[1:], strict=False)]
    # 0.1, 0.2, 0.4 s, each times a jitter in [0.5, 1]
    for gap, base in zip(gaps, (0.1, 0.2, 0.4), strict=True):
        assert base * 0.5 - 0.01 <= gap <= base + 0.15


def test_slow_answer_times_out(srv: JudgeServer) -> None:
    srv.script("<m>", Reply("Grade: 2", delay=3))
    started = time.monotonic()
    (verdict,) = make(srv, timeout=0.3, retries=1).grade([pair("<m>")])
    elapsed = time.monotonic() - started
    assert verdict.failure == "timed out: no answer within 0.3 s (2 tries)"
    assert 0.6 <= elapsed < 1.5


def test_server_down_is_a_failure(srv: JudgeServer) -> None:
    spec = JudgeSpec("llm", "openai", "m", options={"url": "http://127.0.0.1:9/v1", "retries": 1})
    judge = openai_judge(spec, S)
    judge.backoff = 0.01
    (verdict,) = judge.grade([pair("<m>")])
    assert verdict.failure.startswith("cannot connect: ") and verdict.failure.endswith("(2 tries)")


def test_the_key_is_sent_only_as_authorization_and_never_shown(
    srv: JudgeServer, key_env: str, capfd: pytest.CaptureFixture[str]
) -> None:
    judge = make(srv, api_key_env=key_env)
    srv.script("<ok>", Reply("Reason: fine.\nGrade: 2"))
    srv.script("<echo>", Reply("Reason: your key is {authorization} ok.\nGrade: 1"))
    srv.script("<bad>", Reply("Grade: 7 {authorization}"))
    srv.script("<err>", Reply("boom {authorization}", status=503))
    srv.script("<400>", Reply("no {authorization}", status=400))
    verdicts = judge.grade([pair(m) for m in ("<ok>", "<echo>", "<bad>", "<err>", "<400>")])
    assert [v.grade for v in verdicts] == [2, 1, None, None, None]
    assert verdicts[1].reason == "your key is Bearer *** ok."
    srv.script("<401>", Reply("Incorrect API key provided: {authorization}", status=401))
    with pytest.raises(JudgeError) as info:
        judge.grade([pair("<401>")])
    shown = [repr(v) for v in verdicts] + [str(info.value), repr(judge), judge.prepare(S, [])]
    shown.append(json.dumps(vars(judge), default=str).replace(f'"_key": "{KEY}"', ""))
    out, err = capfd.readouterr()
    assert KEY not in "\n".join([*shown, out, err])
    assert "***" in str(info.value) and f"${key_env}" in str(info.value)
    for request in srv.requests:
        assert request.headers["Authorization"] == f"Bearer {KEY}"
        others = {k: v for k, v in request.headers.items() if k != "Authorization"}
        assert KEY not in json.dumps(others) and KEY.encode() not in request.raw
        assert KEY not in request.path


def test_no_key_on_a_redirect_to_another_host(srv: JudgeServer, key_env: str) -> None:
    with serve_judge() as other:
        target = other.url.replace("127.0.0.1", "localhost") + "/chat/completions"
        srv.script("<m>", Reply(status=302, headers=(("Location", target),)))
        (verdict,) = make(srv, api_key_env=key_env).grade([pair("<m>")])
        assert verdict.grade is None
        (followed,) = other.requests
        assert "Authorization" not in followed.headers
        assert KEY not in json.dumps(followed.headers)


def test_key_setting_problems(srv: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGTUI_UNSET_KEY", raising=False)
    with pytest.raises(JudgeError, match=re.escape("RAGTUI_UNSET_KEY (api_key_env) is not set")):
        make(srv, api_key_env="RAGTUI_UNSET_KEY")
    monkeypatch.setenv("RAGTUI_EMPTY_KEY", "  ")
    with pytest.raises(JudgeError, match="is empty"):
        make(srv, api_key_env="RAGTUI_EMPTY_KEY")
    monkeypatch.setenv("RAGTUI_NL_KEY", "sk-abc\r\nX-Injected: 1")
    with pytest.raises(JudgeError, match="control character") as info:
        make(srv, api_key_env="RAGTUI_NL_KEY")
    assert "sk-abc" not in str(info.value)


def test_settings_key(srv: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K1", "sk-one-aaaaaaaaaaaaaaaa")
    monkeypatch.setenv("K2", "sk-two-bbbbbbbbbbbbbbbb")
    base = make(srv).settings_key
    assert (
        make(srv, api_key_env="K1").settings_key == make(srv, api_key_env="K2").settings_key == base
    )
    spec = JudgeSpec("llm", "openai", "other-model", options={"url": srv.url})
    assert openai_judge(spec, S).settings_key != base
    assert make(srv, ((0, "no"), (1, "yes"))).settings_key != base
    assert make(srv, timeout=5, concurrency=8, retries=0).settings_key == base
    slash = JudgeSpec("llm", "openai", "qwen2.5:7b-instruct", options={"url": srv.url + "/"})
    assert openai_judge(slash, S).settings_key == base


def test_forgiving_urls(srv: JudgeServer) -> None:
    root = srv.url.removesuffix("/v1")
    for url in (root, root + "/", srv.url, srv.url + "/", srv.url + "/chat/completions"):
        spec = JudgeSpec("llm", "openai", "m", options={"url": url})
        assert openai_judge(spec, S).grade([pair("[grade=2]")])[0].grade == 2, url
    assert {r.path for r in srv.requests} == {"/v1/chat/completions"}
    assert chat_url("https://x.openai.azure.com/openai/v1?api-version=preview") == (
        "https://x.openai.azure.com/openai/v1/chat/completions?api-version=preview"
    )


def test_wrong_url_or_model_stops_the_run(srv: JudgeServer) -> None:
    spec = JudgeSpec("llm", "openai", "m", options={"url": srv.url.removesuffix("/v1") + "/api"})
    with pytest.raises(JudgeError, match=r"HTTP 404 .*check the URL"):
        openai_judge(spec, S).grade([pair("x")])
    srv.script("<m>", Reply('model "m" not found, try pulling it first', status=404))
    with pytest.raises(JudgeError, match="not found, try pulling it first"):
        make(srv).grade([pair("<m>")])
    quota = json.dumps(
        {"error": {"message": "You exceeded your current quota.", "code": "insufficient_quota"}}
    )
    srv.script("<q>", Reply(status=429, raw=quota.encode()))
    with pytest.raises(JudgeError, match="exceeded your current quota"):
        make(srv).grade([pair("<q>")])
    assert len(srv.received("<q>")) == 1


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"url": "ftp://x/v1"}, "url must be an http:// or https:// URL"),
        ({}, "url must be an http:// or https:// URL"),
        ({"url": "http://user:pw@127.0.0.1/v1"}, "the URL holds a user name or password"),
        ({"url": "http://h/v1", "timeout": 0}, "timeout must be from 0.001 to 3600"),
        ({"url": "http://h/v1", "concurrency": 2.5}, "concurrency must be a whole number"),
        ({"url": "http://h/v1", "retries": 11}, "retries must be from 0 to 10"),
        ({"url": "http://h/v1", "max_tokens": True}, "max_tokens must be a whole number"),
        (
            {"url": "http://h/v1", "api_key_env": "sk-123"},
            "api_key_env must be the name of an environment variable",
        ),
        (
            {"url": "http://h/v1", "api_key": "sk-123"},
            "api_key is not an option of an openai judge",
        ),
    ],
)
def test_bad_options_are_one_line(options: dict[str, object], problem: str) -> None:
    spec = JudgeSpec("llm", "openai", "m", options=options, source="ragtui.toml [judges.llm]")
    with pytest.raises(InputError) as info:
        openai_judge(spec, S)
    message = str(info.value)
    assert message.startswith("ragtui.toml [judges.llm]: judge llm: ") and problem in message
    assert "pw" not in message and "sk-123" not in message


def test_options_are_used(srv: JudgeServer) -> None:
    judge = make(srv, timeout=7, concurrency=8, retries=1, max_tokens=64)
    assert (judge.timeout, judge.concurrency, judge.retries, judge.max_tokens) == (7, 8, 1, 64)
    assert judge.batch_size == 1
    default = make(srv)
    assert (default.timeout, default.concurrency, default.retries, default.max_tokens) == (
        60,
        4,
        3,
        1024,
    )


def test_concurrent_calls(srv: JudgeServer) -> None:
    srv.delay = 0.2
    judge = make(srv)
    results: dict[int, int | None] = {}

    def work(i: int) -> None:
        results[i] = judge.grade([pair(f"<c{i}> [grade={i % 3}]")])[0].grade

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: i % 3 for i in range(8)}
    assert time.monotonic() - started < 1.0  # eight at once, not one after another (1.6 s)


def test_close_ends_a_backoff_at_once(srv: JudgeServer) -> None:
    srv.script("<m>", Reply(status=500))
    judge = make(srv, fast=False, retries=5)
    judge.backoff = 10
    threading.Timer(0.3, judge.close).start()
    started = time.monotonic()
    (verdict,) = judge.grade([pair("<m>")])
    assert time.monotonic() - started < 2 and verdict.grade is None
    assert judge.grade([pair("<m>")])[0].failure.startswith("stopped")


def test_ctrl_c_stops_a_request_in_flight(srv: JudgeServer) -> None:
    srv.script("<m>", Reply("Grade: 2", delay=5))
    judge = make(srv, timeout=30)
    # As the terminal's Ctrl-C does: SIGINT to the process (Linux hands it to the main thread).
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        judge.grade([pair("<m>")])
    assert time.monotonic() - started < 2


def test_openai_key_goes_to_openai_only(srv: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    make(srv).grade([pair("[grade=1]")])
    assert "Authorization" not in srv.requests[0].headers
    spec = JudgeSpec("llm", "openai", "gpt-4o-mini", {"url": "https://api.openai.com/v1"})
    assert openai_judge(spec, S).api_key_env == "OPENAI_API_KEY"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):
        openai_judge(spec, S)


def test_hostile_bodies_are_failures(srv: JudgeServer) -> None:
    # Before: a nested answer raised RecursionError out of grade() (the run stopped); a 60 MB body
    # was read whole, once per request in flight.
    srv.script("<deep>", Reply("[" * 100_000))
    srv.script("<big>", Reply(raw=b'{"choices": "' + b"a" * (5 * 1024 * 1024) + b'"}'))
    srv.script("<esc>", Reply("\x1b]52;c;aGVsbG8=\x07 \x1b[2J no grade here"))
    deep, big, esc = make(srv).grade([pair("<deep>"), pair("<big>"), pair("<esc>")])
    assert deep.failure.startswith("unreadable answer: no grade in '[[[")
    assert big.failure == "bad response: over 4 MB"
    assert esc.failure.startswith("unreadable answer") and "\x1b" not in esc.failure
    assert "\\x1b]52" in esc.failure


# ---- structured answers and grade probabilities -------------------------------------------------


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("grade", [0, 1, 2])
def test_a_structured_answer_gives_the_grade_the_parser_reads_from_the_text(
    srv: JudgeServer, shape: str, grade: int
) -> None:
    # The same model answering with structure (supported) and without (ignored): the same grade.
    text = SHAPES[shape](grade, REASON)
    srv.script("<m>", Reply(text, structured=json.dumps({"reason": REASON, "grade": grade})))
    (free,) = make(srv).grade([pair("<m>")])
    srv.structured = "supported"
    (asked,) = make(srv).grade([pair("<m>")])
    assert free.grade == asked.grade == grade
    # Read as the object asked for whenever the answer is that object, asked or not.
    assert free.answer == ("structured" if shape == "json" else "text")
    assert asked.answer == "structured"
    assert asked.reason == REASON


def test_the_request_asks_for_the_scale_as_a_json_schema_and_for_logprobs(srv: JudgeServer) -> None:
    scale = ((0, "no"), (1, "some"), (2, "most"), (3, "all"))
    make(srv, scale=scale).grade([pair("<m> [grade=3]")])
    (request,) = srv.requests
    form = request.body["response_format"]
    assert form["type"] == "json_schema" and form["json_schema"]["strict"] is True
    schema = form["json_schema"]["schema"]
    assert schema["required"] == ["reason", "grade"] and schema["additionalProperties"] is False
    assert schema["properties"]["grade"] == {"type": "integer", "enum": [0, 1, 2, 3]}
    assert request.body["logprobs"] is True and request.body["top_logprobs"] == 5


def test_an_endpoint_that_refuses_structure_is_asked_without_it_and_no_pair_is_lost(
    srv: JudgeServer,
) -> None:
    srv.structured = "refused"
    judge = make(srv, concurrency=4)
    pairs = [pair(f"<m{i}> [grade={i % 3}]") for i in range(12)]
    # Four at once, as ragtui judge asks: every pair in flight when the endpoint refused is asked
    # again without the structure.
    with ThreadPoolExecutor(4) as pool:
        verdicts = list(pool.map(lambda p: judge.grade([p])[0], pairs))
    assert [v.grade for v in verdicts] == [i % 3 for i in range(12)]
    assert all(v.answer == "text" and v.failure == "" for v in verdicts)
    refused = [r for r in srv.requests if "response_format" in r.body]
    assert 1 <= len(refused) <= 4  # at most the pairs in flight before the first refusal came back
    assert all("response_format" not in r.body for r in srv.requests[len(refused) + 4 :])


def test_grade_probabilities_come_from_logprobs_and_are_kept_with_the_verdict(
    srv: JudgeServer,
) -> None:
    srv.structured = "supported"
    srv.logprobs = {2: 0.7, 1: 0.2, 0: 0.1}
    (verdict,) = make(srv).grade([pair("<m> [grade=2]")])
    assert verdict.grade == 2 and verdict.answer == "structured"
    assert [g for g, _ in verdict.probabilities] == [0, 1, 2]
    assert [round(p, 6) for _, p in verdict.probabilities] == [0.1, 0.2, 0.7]
    # A server without logprobs: no probabilities, the same grade.
    srv.logprobs = None
    (plain,) = make(srv).grade([pair("<m> [grade=2]")])
    assert plain.grade == 2 and plain.probabilities == ()


def test_an_endpoint_that_refuses_logprobs_is_asked_without_them(srv: JudgeServer) -> None:
    srv.logprobs = "refused"
    judge = make(srv)
    first, second = judge.grade([pair("<a> [grade=1]"), pair("<b> [grade=2]")])
    assert (first.grade, second.grade) == (1, 2) and first.probabilities == ()
    bodies = [r.body for r in srv.requests]
    assert bodies[0].get("logprobs") is True
    assert all("logprobs" not in b for b in bodies[1:]) and len(bodies) == 3


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://judge.example:8000/v1", True),
        ("https://judge.example/v1", False),
        ("http://127.0.0.1:11434/v1", False),
        ("http://localhost:11434/v1", False),
    ],
)
def test_a_key_goes_over_plain_http_only_to_this_machine_or_when_allowed(
    key_env: str, url: str, refused: bool
) -> None:
    spec = JudgeSpec("llm", "openai", "m", options={"url": url, "api_key_env": key_env})
    assert openai_judge(spec, S, allow_http=True).url.startswith(url)
    if refused:
        with pytest.raises(InputError, match=r"plain http:// to judge\.example.*--allow-http"):
            openai_judge(spec, S)
    else:
        openai_judge(spec, S)
    # Without a key nothing secret is sent: any URL is taken.
    openai_judge(JudgeSpec("llm", "openai", "m", options={"url": url}), S)
