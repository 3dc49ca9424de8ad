"""A judge that asks an OpenAI-compatible chat endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp's
server, LiteLLM): one ``POST …/chat/completions`` per pair.

The request is the model, one user message (the prompt filled with the question, the chunk and the
grade scale), ``temperature`` 0, ``max_tokens``, and two asks: a JSON object ``{"reason": …,
"grade": N}`` through ``response_format`` (a JSON schema whose grade is one of the scale's), and
``logprobs`` (the probability of each grade: the verdict's confidence). An endpoint that refuses
either (HTTP 400 naming it) is asked without it from then on (the judge is one endpoint and model:
remembered for the run), and the pair asked again; so is every pair in flight at that moment. The answer is
read as that JSON object where it is one (``Verdict.answer`` ``structured``), else by
``ragtui.core.judges.parse`` from free text (``text``). The URL is forgiving: ``http://host:11434/v1``, ``…/v1/`` and
``…/v1/chat/completions`` are the same endpoint, and a URL with no path gets ``/v1`` (any other
path is taken as the API's base and gets ``/chat/completions``; a query string is kept).

The API key is read once from the environment variable ``api_key_env`` names (never from the
project file; ``OPENAI_API_KEY`` for https://api.openai.com when it names none, and no key for any
other URL then) and sent only as ``Authorization: Bearer …``; it is never printed, a redirect to
another host, port or scheme drops it (``ragtui.core.retrieval.http``), and any message that would
quote it (a server echoing it back) shows ``***`` instead. Each try has its own deadline
(``timeout``, bounding connecting, sending and every read); no connection, HTTP 408, 429 and 5xx
are asked again (``retries`` more times) after an exponential back-off with jitter, or after the
server's ``Retry-After`` when it says one (up to ``MAX_RETRY_AFTER`` seconds: a server that asks
for longer fails the pair at once). A pair the judge cannot grade (an unreadable answer, a refusal,
an answer cut at ``max_tokens``, a server that kept failing) is a ``Verdict`` with the failure in
one line; a key that is refused (401, 403), an endpoint or model that does not exist (404) or a
spent quota stop the whole run (``JudgeError``).
"""

from __future__ import annotations

import email.utils
import http.client
import math
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import orjson

from ragtui import __version__
from ragtui.core.data.grades import GradeScale
from ragtui.core.errors import InputError
from ragtui.core.files import content_hash
from ragtui.core.judge_spec import JudgeSpec
from ragtui.core.judges.base import DOWN_FAILURES, JudgeError, JudgePair, Verdict
from ragtui.core.judges.parse import UNREADABLE, parse_grade
from ragtui.core.judges.prompt import (
    Prompt,
    default_prompt,
    fill_prompt,
    load_prompt,
    scale_text,
)
from ragtui.core.retrieval.http import Deadline, deadline_opener, endpoint
from ragtui.core.text import mask_secrets, mask_url, plain_http_refusal, visible_line

__all__ = [
    "DEFAULTS",
    "MAX_RESPONSE_BYTES",
    "MAX_RETRY_AFTER",
    "OPENAI_KEY_ENV",
    "OPTION_KEYS",
    "OpenAIJudge",
    "chat_url",
    "openai_judge",
]

#: The options an openai judge takes, with their defaults (``url`` has none; ``api_key_env`` and
#: ``prompt`` are optional).
DEFAULTS: dict[str, Any] = {"timeout": 60.0, "concurrency": 4, "retries": 3, "max_tokens": 1024}
OPTION_KEYS = frozenset({"url", "api_key_env", "prompt", *DEFAULTS})
#: The variable the key is read from for https://api.openai.com when ``api_key_env`` is not given
#: (as OpenAI's own clients do); to any other URL no key is sent unless ``api_key_env`` names one.
OPENAI_KEY_ENV = "OPENAI_API_KEY"
#: The largest response read, in bytes: a chat completion is a few KB; a bigger body is refused
#: rather than held in memory (once per request in flight).
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: The longest ``Retry-After`` waited for, in seconds.
MAX_RETRY_AFTER = 60.0
#: The longest back-off between two tries, in seconds.
MAX_BACKOFF = 30.0
#: The longest the check before the pool waits for the endpoint, in seconds.
CHECK_TIMEOUT = 15.0

#: The temperature every request is sent with: the same pair, the same grade (as far as a server allows).
TEMPERATURE = 0

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_REFUSE_WORDS = {
    "structured": ("response_format", "json_schema", "structured output", "guided_json"),
    "logprobs": ("logprobs", "logprob"),
}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def chat_url(url: str) -> str:
    """The chat-completions URL of an API base: ``…/v1`` gets ``/chat/completions``, a URL without a
    path ``/v1/chat/completions``, one that already ends so is kept (query string kept, fragment
    dropped)."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path = (path if path else "/v1") + "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class _Retry(Exception):
    """A failure that may pass: its one-line reason and the wait the server asked for (seconds)."""

    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.wait = wait


class _Reshape(Exception):
    """The server refused the body's shape in a way ``_reshape`` fixed: ask again at once."""


class _PairFailure(Exception):
    """This pair cannot be graded (the server refused the request as it is): its one-line reason."""


def answer_schema(scale: GradeScale) -> dict[str, Any]:
    """The JSON schema of the answer asked for: a reason, then a grade of the scale (docs/judges.md)."""
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "grade": {"type": "integer", "enum": [grade for grade, _ in scale]},
        },
        "required": ["reason", "grade"],
        "additionalProperties": False,
    }


def _structured(answer: str) -> bool:
    """Whether an answer is the JSON object asked for (an object holding ``grade``)."""
    try:
        obj = orjson.loads(answer.strip())
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and "grade" in obj


_GRADE_KEY = re.compile(r'"grade"\s*:\s*"?\s*$')


def grade_probabilities(
    logprobs: Any, grade: int, scale: GradeScale
) -> tuple[tuple[int, float], ...]:
    """The probability of each grade at the token where the answer states ``grade`` (after
    ``"grade":`` in a JSON answer, else its last token that is that grade alone), from the token's
    ``top_logprobs``: (grade, p) pairs over the scale, summing to 1; empty when the response holds
    no such token."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return ()
    grades = {str(g): g for g, _ in scale}
    text, found, keyed = "", None, False
    for item in content:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            return ()
        token = item["token"]
        if token.strip(' "') == str(grade) and not keyed:
            found, keyed = item, bool(_GRADE_KEY.search(text))
        text += token
    if found is None:
        return ()
    mass = dict.fromkeys(grades.values(), 0.0)
    alternatives = found.get("top_logprobs")
    for alt in [found, *(alternatives if isinstance(alternatives, list) else [])]:
        if not isinstance(alt, dict):
            continue
        token, value = alt.get("token"), alt.get("logprob")
        g = grades.get(token.strip(' "')) if isinstance(token, str) else None
        if g is None or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if alt is found and alternatives:
            continue  # the chosen token is among its own alternatives: counted there
        mass[g] = max(mass[g], math.exp(min(0.0, float(value))))
    total = sum(mass.values())
    if not total or not math.isfinite(total):
        return ()
    return tuple((g, p / total) for g, p in sorted(mass.items()))


def _retry_after(headers: Any) -> float | None:
    """The seconds a response asks to wait (``Retry-After``: seconds or an HTTP date;
    ``retry-after-ms``), or None."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000
            if math.isfinite(value):
                return max(0.0, value)
        except ValueError:
            pass
    raw = headers.get("Retry-After")
    if not raw:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
        return max(0.0, value) if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_detail(raw: bytes) -> str:
    """What an error response says: OpenAI's ``error.message`` (or ``message``, ``detail``), else its start."""
    text = raw.decode("utf-8", "replace")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return " ".join(text.split())[:120]
    if isinstance(obj, dict):
        error = obj.get("error")
        for candidate in (
            error.get("message") if isinstance(error, dict) else error,
            obj.get("message"),
            obj.get("detail"),
        ):
            if isinstance(candidate, str) and candidate.strip():
                return " ".join(candidate.split())[:200]
    return " ".join(text.split())[:120]


def _content(message: Mapping[str, Any]) -> str | None:
    """A message's text: a string, or the text parts of a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part.get("text")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "".join(str(p) for p in parts)
    return None


def _tokens(usage: Any) -> int:
    """The tokens a response says it used: ``total_tokens``, else prompt plus completion, else 0."""
    if not isinstance(usage, dict):
        return 0

    def whole(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    total = whole(usage.get("total_tokens"))
    return total or whole(usage.get("prompt_tokens")) + whole(usage.get("completion_tokens"))


class OpenAIJudge:
    """Grades each pair by asking an OpenAI-compatible chat endpoint (see the module's docstring)."""

    batch_size = 1

    def __init__(
        self,
        name: str,
        model: str,
        url: str,
        scale: GradeScale,
        *,
        api_key_env: str | None = None,
        prompt: Prompt | None = None,
        timeout: float = DEFAULTS["timeout"],
        concurrency: int = DEFAULTS["concurrency"],
        retries: int = DEFAULTS["retries"],
        max_tokens: int = DEFAULTS["max_tokens"],
    ) -> None:
        self.name = name
        self.model = model
        #: The model the journal records: the name asked for (stable from run to run).
        self.model_id = model
        self.url = chat_url(url)
        #: The endpoint as messages show it (no user info, no query string).
        self.where = endpoint(self.url)
        self.prompt = prompt or default_prompt()
        self.prompt_sha1 = self.prompt.sha1
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.concurrency = int(concurrency)
        self.retries = int(retries)
        self.max_tokens = int(max_tokens)
        #: How the body names its limit, and whether it sends a temperature: a reasoning model
        #: refuses max_tokens and any temperature but its default (see ``_reshape``).
        self._tokens_field = "max_tokens"
        self._send_temperature = True
        #: Whether the structured answer and the grade probabilities are asked for (until the
        #: endpoint refuses them: see ``_reshape``).
        self._asks = {"structured": True, "logprobs": True}
        #: Seconds of the first back-off (doubled each try, with jitter); a test may shorten it.
        self.backoff = 0.5
        self._key = self._read_key(name, api_key_env)
        self._closed = threading.Event()
        self.scale: GradeScale = ()
        self.settings_key = ""
        self._use_scale(scale)

    def __repr__(self) -> str:
        return f"OpenAIJudge({self.name!r}, model={self.model!r}, url={self.where!r})"

    @staticmethod
    def _read_key(name: str, variable: str | None) -> str:
        """The key in ``variable`` (stripped), "" without one; JudgeError naming the variable (never
        its value) when it is not set, empty or holds a control character."""
        if not variable:
            return ""
        where = f"judge {visible_line(name)}: the environment variable {variable} (api_key_env)"
        value = os.environ.get(variable)
        if value is None:
            raise JudgeError(f"{where} is not set: export {variable}=… before ragtui judge")
        value = value.strip()
        if not value:
            raise JudgeError(f"{where} is empty")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise JudgeError(f"{where} holds a control character")
        return value

    def _use_scale(self, scale: GradeScale) -> None:
        self.scale = tuple(scale)
        self._scale_text = scale_text(self.scale)
        identity = ["openai", self.model, mask_url(self.url), self.prompt_sha1, TEMPERATURE]
        identity.append([[grade, label] for grade, label in self.scale])
        self.settings_key = content_hash(orjson.dumps(identity))

    def _scrub(self, text: str) -> str:
        """A message on one line, safe to show: the key (if a server echoed it) masked, controls escaped."""
        return visible_line(mask_secrets(" ".join(str(text).split()), [self._key]))

    # ---- the Judge interface ---------------------------------------------------------------------

    def prepare(self, scale: GradeScale, graded: Sequence[tuple[JudgePair, int]]) -> str:
        """Grade on ``scale`` (a chat judge fits nothing to the people's grades)."""
        if tuple(scale) != self.scale:
            self._use_scale(scale)
        source = (
            "ragtui's default prompt" if self.prompt.source == "default" else self.prompt.source
        )
        return f"{self.model} at {self.where}, {source}"

    def check(self) -> None:
        """One request before the pool (within ``CHECK_TIMEOUT`` s): ``JudgeError`` in one line when
        the endpoint cannot be reached, refuses the key, or lacks the model; what it refuses of the
        request (the structured answer, logprobs, max_tokens) is learnt here, once."""
        probe = JudgePair(
            "check", "Is this passage about ragtui?", "check", "ragtui checks its judge.", "0" * 40
        )
        timeout = min(self.timeout, CHECK_TIMEOUT)
        for _ in range(5):  # each change of the request is made once
            try:
                self._post(self._body(probe), timeout)
            except _Reshape:
                continue
            except _Retry as exc:
                if str(exc).startswith(DOWN_FAILURES):
                    raise JudgeError(self._scrub(f"{self.where}: {exc}")) from None
            except _PairFailure:
                pass  # the server answered: the pairs say the rest
            return

    def grade(self, pairs: Sequence[JudgePair]) -> list[Verdict]:
        """One request per pair, in order (``JudgeError`` when the endpoint cannot work at all)."""
        return [self._grade_one(pair) for pair in pairs]

    def close(self) -> None:
        """Stop: back-offs end at once and no new request is sent (one in flight ends by its deadline)."""
        self._closed.set()

    # ---- one pair --------------------------------------------------------------------------------

    def messages(self, pair: JudgePair) -> list[dict[str, str]]:
        """What is sent for a pair: one user message, the prompt filled in."""
        text = fill_prompt(self.prompt.template, pair.question, pair.chunk, self._scale_text)
        return [{"role": "user", "content": text}]

    def _body(self, pair: JudgePair) -> bytes:
        body: dict[str, Any] = {"model": self.model, "messages": self.messages(pair)}
        if self._send_temperature:
            body["temperature"] = TEMPERATURE
        body[self._tokens_field] = self.max_tokens
        if self._asks["structured"]:
            schema = {
                "name": "relevance_grade",
                "strict": True,
                "schema": answer_schema(self.scale),
            }
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        if self._asks["logprobs"]:
            body["logprobs"] = True
            body["top_logprobs"] = min(20, max(5, len(self.scale)))
        return orjson.dumps(body)

    def _request(self, body: bytes) -> urllib.request.Request:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"ragtui/{__version__}",
        }
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def _grade_one(self, pair: JudgePair) -> Verdict:
        if self._closed.is_set():
            return Verdict(None, failure="stopped: not asked (the judge was closed)")
        body = self._body(pair)
        tries = 0
        last = ""
        wait: float | None = None
        attempt = 0
        while attempt <= self.retries:
            if attempt:
                pause = min(MAX_BACKOFF, self.backoff * 2 ** (attempt - 1))
                pause *= random.uniform(0.5, 1.0)
                if wait is not None:
                    pause = max(pause, wait)
                if self._closed.wait(pause):
                    break
            try:
                raw = self._post(body)
            except _Reshape:
                # A reasoning model (OpenAI's o-series, gpt-5) refuses max_tokens or a temperature
                # other than its own: said once, the body is built its way from now on and the
                # pair asked again at once (at most twice: each change is made once).
                body = self._body(pair)
                continue
            except _Retry as exc:
                tries += 1
                attempt += 1
                last = str(exc)
                wait = exc.wait
                if wait is not None and wait > MAX_RETRY_AFTER:
                    return self._failed(f"{last}; the server asks to wait {wait:.0f} s")
                continue
            except _PairFailure as exc:
                now = self._body(pair)
                if now != body:
                    # Refused while another pair changed how the endpoint is asked: ask again
                    # its new way (each change is made once, so this ends).
                    body = now
                    continue
                return self._failed(str(exc))
            return self._read(raw, asked_structured=b'"response_format"' in body)
        plural = "try" if tries == 1 else "tries"
        return self._failed(f"{last} ({tries} {plural})")

    def _failed(self, problem: str, tokens: int = 0) -> Verdict:
        return Verdict(None, failure=self._scrub(problem), tokens=tokens)

    def _post(self, body: bytes, timeout: float | None = None) -> bytes:
        """One try within its deadline: the response body; _Retry for a failure that may pass,
        _PairFailure for one that will not, JudgeError for one that stops every pair."""
        timeout = self.timeout if timeout is None else timeout
        deadline = Deadline(timeout)
        opener = deadline_opener(deadline, frozenset({"authorization"}))
        try:
            with opener.open(self._request(body)) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            self._http_error(exc)
        except TimeoutError:
            raise _Retry(f"timed out: no answer within {timeout:g} s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise _Retry(f"timed out: no answer within {timeout:g} s") from None
            what = getattr(reason, "strerror", None) or reason
            raise _Retry(f"cannot connect: {what}") from None
        except (OSError, http.client.HTTPException) as exc:
            what = getattr(exc, "strerror", None) or type(exc).__name__
            raise _Retry(f"connection failed: {what}") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise _PairFailure(f"bad response: over {MAX_RESPONSE_BYTES // 1048576} MB")
        return bytes(raw)

    def _http_error(self, exc: urllib.error.HTTPError) -> NoReturn:
        """Raise what an HTTP error status means for the run."""
        raw = b""
        try:
            if exc.fp:
                raw = exc.read(4096)
        except (OSError, ValueError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        detail = _error_detail(raw) if raw else ""
        code = exc.code
        status = f"HTTP {code} {exc.reason}".rstrip() + (f" ({detail})" if detail else "")
        if code in (401, 403):
            hint = (
                f"check the key in ${self.api_key_env}"
                if self.api_key_env
                else "no key was sent: name its environment variable with api_key_env"
            )
            raise JudgeError(self._scrub(f"{self.where}: {status}: {hint}"))
        if code == 404:
            raise JudgeError(
                self._scrub(
                    f"{self.where}: {status}: check the URL (the API's base, such as "
                    f"http://127.0.0.1:11434/v1) and the model name {self.model!r}"
                )
            )
        if code == 429 and b"insufficient_quota" in raw:  # OpenAI's: spent, not rate limited
            raise JudgeError(self._scrub(f"{self.where}: {status}"))
        if code in (400, 422) and self._reshape(raw):
            raise _Reshape
        if code in _RETRY_STATUS:
            kind = "rate limited" if code == 429 else "server error"
            raise _Retry(f"{kind}: {status}", _retry_after(exc.headers))
        if 300 <= code < 400:
            status += ": a redirect that was not followed; give the URL it points to"
        raise _PairFailure(f"request failed: {status}")

    def _reshape(self, raw: bytes) -> bool:
        """After a 400 naming what a reasoning model refuses: send it its way (``max_completion_tokens``
        instead of ``max_tokens``; no temperature: it takes only its default). True when something
        changed, so the pair is asked again; each change is made once."""
        text = raw.decode("utf-8", "replace").lower()
        for ask, words in _REFUSE_WORDS.items():
            if self._asks[ask] and any(word in text for word in words):
                self._asks[ask] = False
                return True
        changed = False
        if "max_completion_tokens" in text and self._tokens_field == "max_tokens":
            self._tokens_field = "max_completion_tokens"
            changed = True
        elif "temperature" in text and "unsupported" in text and self._send_temperature:
            self._send_temperature = False
            changed = True
        return changed

    def _read(self, raw: bytes, asked_structured: bool = False) -> Verdict:
        """A response's verdict: the grade and reason of its answer, or why there is none."""
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            start = " ".join(raw[:40].decode("utf-8", "replace").split())
            return self._failed(f"bad response: not JSON (it starts {start!r})")
        if not isinstance(obj, dict):
            return self._failed("bad response: not a chat completion (not an object)")
        tokens = _tokens(obj.get("usage"))
        if isinstance(obj.get("error"), dict | str):
            return self._failed(f"bad response: an error ({_error_detail(raw)})", tokens)
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return self._failed("bad response: no choices", tokens)
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            return self._failed("bad response: its choice has no message", tokens)
        finish = choice.get("finish_reason")
        refusal = message.get("refusal")
        answer = _content(message)
        if finish == "content_filter":
            return self._failed("refused: the content filter stopped the answer", tokens)
        if isinstance(refusal, str) and refusal.strip():
            return self._failed(f"refused: {refusal[:80]}", tokens)
        if finish == "length":
            return self._failed(
                f"cut off: the answer reached max_tokens ({self.max_tokens}) before it ended",
                tokens,
            )
        if answer is None or not answer.strip():
            return self._failed(f"{UNREADABLE}: the answer is empty", tokens)
        verdict = parse_grade(answer, self.scale)
        if verdict.grade is None:
            return self._failed(verdict.failure, tokens)
        reason = mask_secrets(verdict.reason, [self._key])
        return Verdict(
            verdict.grade,
            reason,
            tokens=tokens,
            answer="structured" if asked_structured and _structured(answer) else "text",
            probabilities=grade_probabilities(choice.get("logprobs"), verdict.grade, self.scale),
        )


def _is_openai(url: str) -> bool:
    """Whether a URL is OpenAI's own API (https://api.openai.com)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() == "https" and (parts.hostname or "") == "api.openai.com"


def _number(spec: JudgeSpec, key: str, low: float, high: float, whole: bool) -> float | int | None:
    value = spec.options.get(key)
    if value is None:
        return None
    kind = "a whole number" if whole else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(None, f"{spec.source}: judge {spec.name}: {key} must be {kind}")
    if whole and not float(value).is_integer():
        raise InputError(None, f"{spec.source}: judge {spec.name}: {key} must be {kind}")
    if not (math.isfinite(value) and low <= value <= high):
        raise InputError(
            None, f"{spec.source}: judge {spec.name}: {key} must be from {low:g} to {high:g}"
        )
    return int(value) if whole else float(value)


def openai_judge(spec: JudgeSpec, scale: GradeScale, allow_http: bool = False) -> OpenAIJudge:
    """The judge an ``openai`` spec describes (``spec.target`` is the model; options: ``url``,
    ``api_key_env``, ``prompt`` (a path), ``timeout``, ``concurrency``, ``retries``, ``max_tokens``).

    Without ``api_key_env``, the key of https://api.openai.com is read from ``OPENAI_API_KEY`` and
    no key is sent anywhere else. A bad option or prompt file is an ``InputError`` (one line naming
    it); a key variable that is not set is a ``JudgeError``.
    """
    where = f"{spec.source}: judge {spec.name}"
    unknown = sorted(set(spec.options) - OPTION_KEYS)
    if unknown:
        raise InputError(
            None,
            f"{where}: {unknown[0]} is not an option of an openai judge "
            f"(its options: {', '.join(sorted(OPTION_KEYS))})",
        )
    if not spec.target.strip():
        raise InputError(None, f"{where}: an openai judge needs a model name")
    url = spec.options.get("url")
    if not isinstance(url, str) or not re.match(r"https?://[^/?#\s]", url.strip(), re.I):
        raise InputError(None, f"{where}: url must be an http:// or https:// URL")
    try:
        parts = urlsplit(url.strip())
        userinfo = "@" in (parts.netloc or "")
        parts.port  # noqa: B018 (raises ValueError for a port outside 0-65535)
    except ValueError:
        raise InputError(None, f"{where}: url is not a URL ({mask_url(url)})") from None
    if userinfo:
        raise InputError(
            None,
            f"{where}: the URL holds a user name or password; put the key in an environment "
            "variable and name it with api_key_env",
        )
    api_key_env = spec.options.get("api_key_env")
    if api_key_env is None and _is_openai(url):
        api_key_env = OPENAI_KEY_ENV
    if api_key_env is not None and (
        not isinstance(api_key_env, str) or not _ENV_NAME.fullmatch(api_key_env)
    ):
        raise InputError(None, f"{where}: api_key_env must be the name of an environment variable")
    if api_key_env is not None:
        refusal = plain_http_refusal(url, f"the key in ${api_key_env}", allow_http)
        if refusal is not None:
            raise InputError(None, f"{where}: {refusal}")
    prompt_path = spec.options.get("prompt")
    if prompt_path is not None and not isinstance(prompt_path, str | Path):
        raise InputError(None, f"{where}: prompt must be the path of a prompt file")
    prompt = load_prompt(prompt_path) if prompt_path is not None else None
    timeout = _number(spec, "timeout", 0.001, 3600, whole=False)
    concurrency = _number(spec, "concurrency", 1, 64, whole=True)
    retries = _number(spec, "retries", 0, 10, whole=True)
    max_tokens = _number(spec, "max_tokens", 1, 1_000_000, whole=True)
    return OpenAIJudge(
        spec.name,
        spec.target.strip(),
        url.strip(),
        scale,
        api_key_env=api_key_env,
        prompt=prompt,
        timeout=DEFAULTS["timeout"] if timeout is None else float(timeout),
        concurrency=DEFAULTS["concurrency"] if concurrency is None else int(concurrency),
        retries=DEFAULTS["retries"] if retries is None else int(retries),
        max_tokens=DEFAULTS["max_tokens"] if max_tokens is None else int(max_tokens),
    )
