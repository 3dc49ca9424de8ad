"""An OpenAI-compatible chat server for the judge tests, started on 127.0.0.1 by the tests themselves.

Start it once per module (a fixture around ``serve_judge()``) and point a judge at ``server.url``
(``http://127.0.0.1:PORT/v1``)::

    with serve_judge() as server:
        server.script("ferry timetable", Reply(status=429), Reply("Grade: 2"))
        judge = openai_judge(JudgeSpec("llm", "openai", "m", {"url": server.url}), scale)

``POST /v1/chat/completions`` answers with a chat completion; the reply to a request is chosen by
its last message's text (the filled prompt):

1. ``server.script(marker, *replies)``: a request whose text holds ``marker`` gets the replies in
   turn, the last one repeated (the first marker scripted wins when several match);
2. else ``server.grader(text)``, which returns a ``Reply``, an answer text or an int grade (answered
   ``Reason: …\\nGrade: N``); the default reads ``[grade=N]`` in the text, else grades 0.

A ``Reply`` is the answer's text (``content``) and, to script failures: an HTTP ``status`` (the
body is then OpenAI's ``{"error": {"message": content}}``), ``headers`` (``Retry-After``,
``Location``), a ``delay`` before answering (a slow model), ``finish_reason`` (``length``,
``content_filter``), ``refusal``, ``raw`` (a body sent as it is: garbled) and ``tokens``. In
``content``, ``{authorization}`` is replaced by the Authorization header received (a server
echoing the key, for the tests that it is never shown). ``SHAPES`` builds an answer in each shape
models really give. ``server.delay`` delays every answer (the benchmark's stand-in for a model).

What the server does with a request's ``response_format`` and ``logprobs`` is set per server:
``server.structured`` is ``ignored`` (the default: answers as scripted, as servers that do not know
the field do), ``supported`` (a request asking for it gets ``Reply.structured``, else, for an int
grade, ``{"reason": …, "grade": N}``) or ``refused`` (HTTP 400 naming ``response_format``, as
vLLM and OpenAI answer a model without it); ``server.logprobs`` is None (ignored), ``"refused"``
(HTTP 400 naming ``logprobs``) or a grade -> probability map, sent as each answer's ``logprobs``
(every token certain but a grade's digit, whose ``top_logprobs`` are that map).

The request ``ragtui judge`` sends before the pool (``OpenAIJudge.check``, its passage
``CHECK_TEXT``) is recorded in ``server.checks`` and answered with grade 0 (or by a script
whose marker is ``CHECK_TEXT``), never by the grader. Every other request (any method and path) is recorded in ``server.requests`` (``Recorded``: method, path,
headers, JSON body), so a test can check what was sent and that the key went only where it should.

``python -m tests.judge_server [--delay S]`` serves in a process of its own (the benchmark): it
prints ``{"url": …}`` and serves until its standard input closes; every request gets ``[grade=N]``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "CHECK_TEXT",
    "SHAPES",
    "JudgeServer",
    "Recorded",
    "Reply",
    "default_grader",
    "serve_judge",
]


@dataclass(frozen=True)
class Reply:
    """One scripted answer (see the module's docstring)."""

    content: str | None = "Reason: The passage answers the question.\nGrade: 2"
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    headers: tuple[tuple[str, str], ...] = ()
    raw: bytes | None = None
    refusal: str | None = None
    tokens: int = 30
    model: str | None = None
    #: The answer sent instead of ``content`` to a request asking for structure, when supported.
    structured: str | None = None


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    at: float


#: An answer with grade ``g`` and reason ``r`` in each shape models give.
SHAPES: dict[str, Callable[[int, str], str]] = {
    "bare": lambda g, r: f"{g}",
    "grade-line": lambda g, r: f"Reason: {r}\nGrade: {g}",
    "grade-first": lambda g, r: f"Grade: {g}\nReason: {r}",
    "bold": lambda g, r: f"**Reason:** {r}\n\n**Grade:** {g}",
    "umbrela": lambda g, r: f"M = {g}\nT = 1\nO = {g}",
    "final-score": lambda g, r: f"{r}\n##final score: {g}",
    "json": lambda g, r: json.dumps({"grade": g, "reason": r}),
    "json-score": lambda g, r: json.dumps({"score": g, "explanation": r}),
    "json-relevance": lambda g, r: json.dumps({"relevance": str(g), "reason": r}),
    "json-fence": lambda g, r: (
        f"Here is my judgement:\n```json\n{json.dumps({'grade': g, 'reason': r})}\n```"
    ),
    "reasoning": lambda g, r: (
        "Step 1: read the question; it has 2 parts.\nStep 2: read the passage.\n"
        f"Step 3: a grade of {9 - g} would be wrong here.\n{r}\n\nFinal grade: {g}"
    ),
    "think": lambda g, r: (
        f"<think>Step 1: maybe 1. Step 2: check.</think>\nReason: {r}\nGrade: {g}"
    ),
}


def default_grader(text: str) -> Reply | str | int:
    """The grade written in the text as ``[grade=N]``, else 0."""
    start = text.find("[grade=")
    if start >= 0 and text[start + 7 : start + 8].isdigit():
        return int(text[start + 7])
    return 0


#: The passage of the check ``ragtui judge`` sends before the pool.
CHECK_TEXT = "ragtui checks its judge."


class JudgeServer:
    """A running server: its URL (``…/v1``), the requests it received and how it answers."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[Recorded] = []
        #: The checks sent before a pool (see the module's docstring).
        self.checks: list[Recorded] = []
        self.grader: Callable[[str], Reply | str | int] = default_grader
        #: Seconds every answer waits before it is sent.
        self.delay = 0.0
        #: ``ignored``, ``supported`` or ``refused``: what a request's response_format gets.
        self.structured = "ignored"
        #: None (ignored), ``refused``, or the grade probabilities every answer's logprobs give.
        self.logprobs: str | dict[int, float] | None = None
        self._scripts: dict[str, list[Reply]] = {}
        self._lock = threading.Lock()

    def script(self, marker: str, *replies: Reply) -> None:
        """Requests whose text holds ``marker`` get ``replies`` in turn, the last one repeated."""
        with self._lock:
            self._scripts[marker] = list(replies)

    def clear(self) -> None:
        """Forget the scripts and the recorded requests; the default grader and no delay again."""
        with self._lock:
            self._scripts.clear()
            self.requests.clear()
            self.checks.clear()
        self.grader = default_grader
        self.delay = 0.0
        self.structured = "ignored"
        self.logprobs = None

    def received(self, marker: str) -> list[Recorded]:
        """The chat requests whose text held ``marker``."""
        with self._lock:
            return [r for r in self.requests if marker in _text(r.body)]

    def _record(self, request: Recorded) -> None:
        with self._lock:
            checks = CHECK_TEXT in _text(request.body)
            (self.checks if checks else self.requests).append(request)

    def _reply(self, text: str) -> Reply:
        with self._lock:
            for marker, replies in self._scripts.items():
                if marker in text:
                    return replies.pop(0) if len(replies) > 1 else replies[0]
        if CHECK_TEXT in text:
            return Reply("Grade: 0")  # the grader is for the pool's pairs
        answer = self.grader(text)
        if isinstance(answer, Reply):
            return answer
        if isinstance(answer, int):
            reason = f"The passage was graded {answer}."
            structured = json.dumps({"reason": reason, "grade": answer})
            return Reply(f"Reason: {reason}\nGrade: {answer}", structured=structured)
        return Reply(answer)


def _logprobs(content: str, chances: dict[int, float]) -> dict[str, Any]:
    """A chat completion's ``logprobs`` for ``content``: each token certain, but a digit of the
    scale, whose alternatives are ``chances``."""
    out = []
    for token in re.findall(r"\w+|\s+|[^\w\s]", content):
        item: dict[str, Any] = {"token": token, "logprob": 0.0, "top_logprobs": []}
        if token.isdigit() and int(token) in chances:
            top = sorted(chances.items(), key=lambda gp: -gp[1])
            item["logprob"] = math.log(chances[int(token)])
            item["top_logprobs"] = [{"token": str(g), "logprob": math.log(p)} for g, p in top]
        else:
            item["top_logprobs"] = [{"token": token, "logprob": 0.0}]
        out.append(item)
    return {"content": out}


def _text(body: Any) -> str:
    """The text of a chat request's last message ("" for anything else)."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return ""
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""


def _handler(server: JudgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            return

        def _send(self, status: int, raw: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def _receive(self) -> Recorded:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            recorded = Recorded(
                self.command, self.path, dict(self.headers.items()), body, raw, time.monotonic()
            )
            server._record(recorded)
            return recorded

        def do_GET(self) -> None:
            self._receive()
            self._send(405, b'{"error": {"message": "use POST"}}')

        def do_POST(self) -> None:
            request = self._receive()
            if not request.path.rstrip("/").endswith("/v1/chat/completions"):
                self._send(404, b'{"error": {"message": "no such endpoint"}}')
                return
            asked = request.body if isinstance(request.body, dict) else {}
            if "response_format" in asked and server.structured == "refused":
                message = "response_format is not supported for this model"
                self._send(400, json.dumps({"error": {"message": message}}).encode())
                return
            if asked.get("logprobs") and server.logprobs == "refused":
                message = "logprobs are not supported"
                self._send(400, json.dumps({"error": {"message": message}}).encode())
                return
            text = _text(request.body)
            reply = server._reply(text)
            supported = server.structured == "supported" and reply.structured is not None
            if "response_format" in asked and supported:
                reply = replace(reply, content=reply.structured)
            wait = server.delay + reply.delay
            if wait:
                time.sleep(wait)
            content = reply.content
            if content is not None:
                content = content.replace("{authorization}", self.headers.get("Authorization", ""))
            if reply.raw is not None:
                self._send(reply.status, reply.raw, reply.headers)
                return
            if reply.status != 200:
                error = {"message": content or "error", "type": "server_error"}
                self._send(reply.status, json.dumps({"error": error}).encode(), reply.headers)
                return
            model = request.body.get("model") if isinstance(request.body, dict) else None
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if reply.refusal is not None:
                message["refusal"] = reply.refusal
            choice: dict[str, Any] = {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason,
            }
            if asked.get("logprobs") and isinstance(server.logprobs, dict) and content:
                choice["logprobs"] = _logprobs(content, server.logprobs)
            body = {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": reply.model or model or "test-model",
                "choices": [choice],
                "usage": {
                    "prompt_tokens": reply.tokens - 5,
                    "completion_tokens": 5,
                    "total_tokens": reply.tokens,
                },
            }
            self._send(200, json.dumps(body).encode(), reply.headers)

    return Handler


class _Server(ThreadingHTTPServer):
    """A threading server that does not print the client's hang-ups (a timed-out client leaves)."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        return


@contextmanager
def serve_judge() -> Iterator[JudgeServer]:
    """Start a chat server on 127.0.0.1 (a free port) for the duration of the block."""
    state = JudgeServer()
    httpd = _Server(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds every answer waits")
    args = parser.parse_args()
    with serve_judge() as server:
        server.delay = args.delay
        print(json.dumps({"url": server.url}), flush=True)
        sys.stdin.read()  # serve until the parent closes our standard input
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
