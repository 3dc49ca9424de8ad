"""Any HTTP search API as a live retriever: a URL template, and a mapping for the response's shape.

``--retriever NAME=http://host:port/search?q={query}&k={depth}`` sends a GET with the question
URL-encoded into ``{query}`` and the depth into ``{depth}``, and reads the default response
``{"results": [{"id": …, "score": …}, …]}`` (each result may add ``text`` and ``doc``). A project
file's ``[retrievers.NAME]`` table can describe any other shape: a POST with a JSON body template,
headers (``${VAR}`` is read from the environment), and where the list of results, each id, score,
text and document are (dotted paths; ``preset = "elasticsearch"`` or ``"opensearch"`` fills in a
``_search`` response's paths). The order of the response is the ranking. Reading those settings is
``http_config``'s; asking is this module's.

Requests use the standard library (``urllib.request``): one deadline per question (``timeout``)
that bounds connecting, sending, every read and the retries (a server trickling one byte at a
time is cut at the deadline, not after each read), retries with exponential back-off for the
failures that may pass (no connection, HTTP 429 and 5xx) while the deadline allows, and one line
per failure that names the endpoint without its query string (which may hold a key). A redirect to
another host, scheme or port is followed without the configured headers and without any header
that looks like a credential (as curl and requests do).
"""

from __future__ import annotations

import functools
import http.client
import io
import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import IO, Any, Protocol
from urllib.parse import SplitResult, urlsplit

import orjson

from ragtui import __version__
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.http_config import (
    PRESETS,
    HttpConfig,
    endpoint,
    fill_body,
    fill_url,
    get_path,
    parse_http_options,
)
from ragtui.core.retrieval.live_base import LiveError, LiveSpec, one_line
from ragtui.core.text import mask_secrets, mask_url, plain_http_refusal

__all__ = [
    "MAX_RESPONSE_BYTES",
    "PRESETS",
    "Deadline",
    "HttpConfig",
    "HttpRetriever",
    "deadline_opener",
    "endpoint",
    "fill_body",
    "fill_url",
    "get_path",
    "is_credential_header",
    "parse_http_options",
]

#: The largest response read, in bytes (a bigger one is refused rather than held in memory).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

#: Statuses worth asking again: rate limited, or the server (or a proxy) failing for now.
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _env(text: str, source: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise LiveError(f"header needs the environment variable {name}, which is not set")
        return os.environ[name]

    return _ENV.sub(replace, text)


# ---- requests: one deadline, redirects without credentials ---------------------------------------

#: Headers that carry credentials; any header whose name holds one of _SECRET_WORDS counts too.
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_SECRET_WORDS = ("key", "token", "secret", "auth", "password", "passwd", "session", "cookie")


def is_credential_header(name: str) -> bool:
    """Whether a header may carry a credential (Authorization, Cookie, X-Api-Key, X-Auth-Token, ...)."""
    lowered = name.lower()
    return lowered in _SECRET_HEADERS or any(word in lowered for word in _SECRET_WORDS)


class _Deadline:
    """The moment a question's answer must be in by; ``left()`` raises TimeoutError once it has passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def left(self) -> float:
        """The seconds left (a socket timeout), or TimeoutError when none are."""
        remaining = self.remaining()
        if remaining <= 0:
            raise TimeoutError(f"no answer within {self.seconds:g} s")
        return remaining


class _Socket(Protocol):
    """What the deadline-bound reads use of a connected socket. (``socket`` itself is not imported:
    ragtui's HTTP retriever only connects, and no module of ragtui but ``ragtui serve`` may listen.)"""

    def settimeout(self, value: float | None, /) -> None: ...


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each with the time left before the deadline as its timeout."""

    def __init__(self, raw: io.RawIOBase, sock: _Socket, deadline: _Deadline) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._deadline.left())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _response_class(sock: _Socket, deadline: _Deadline) -> type[http.client.HTTPResponse]:
    """``HTTPResponse`` reading ``sock`` (the connection's socket, which the connection makes its
    response with) through a ``_DeadlineReader``: the status line, the headers and the body alike."""

    class DeadlineResponse(http.client.HTTPResponse):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # Nothing was read through the plain reader yet: its socket stream is taken from it.
            self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline))

    return DeadlineResponse


class _DeadlineHTTP(http.client.HTTPConnection):
    """An HTTP connection whose connect, send and every read share one deadline."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline

    def connect(self) -> None:
        self.timeout = self.deadline.left()
        super().connect()  # over TLS, the handshake too: ``sock`` is the TLS socket after it
        self.response_class = _response_class(self.sock, self.deadline)

    def send(self, data: Any) -> None:
        if self.sock is not None:
            self.sock.settimeout(self.deadline.left())
        super().send(data)


class _DeadlineHTTPS(_DeadlineHTTP, http.client.HTTPSConnection):
    """The same over TLS (the handshake is bounded by the time left when it starts)."""


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_DeadlineHTTP, deadline=self.deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        # No context given: the connection makes urllib's default one, as HTTPSHandler() would.
        return self.do_open(functools.partial(_DeadlineHTTPS, deadline=self.deadline), req)


def _origin(parts: SplitResult) -> tuple[str, str, int | None]:
    scheme = parts.scheme.lower()
    return (
        scheme,
        (parts.hostname or "").lower(),
        parts.port or {"http": 80, "https": 443}.get(scheme),
    )


class _RedirectHandler(urllib.request.HTTPRedirectHandler):
    """Redirects as urllib follows them, but only to http(s), and without credentials to another origin.

    A redirect to another host, scheme or port drops every header the user configured and any
    header that may carry a credential (Authorization, Proxy-Authorization, Cookie, X-Api-Key, ...).
    """

    def __init__(self, configured: frozenset[str]) -> None:
        super().__init__()
        self.configured = configured

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is None:
            return None
        try:
            source, target = urlsplit(req.full_url), urlsplit(new.full_url)
            same = _origin(source) == _origin(target)
        except ValueError:
            same = False
            target = urlsplit("")
        if target.scheme.lower() not in ("http", "https"):
            raise urllib.error.HTTPError(
                req.full_url,
                code,
                f"redirect to {mask_url(new.full_url)} refused (not http or https)",
                headers,
                fp,
            )
        if not same:
            for name in list(new.headers):
                if name.lower() in self.configured or is_credential_header(name):
                    del new.headers[name]
            for name in list(new.unredirected_hdrs):
                if name.lower() in self.configured or is_credential_header(name):
                    del new.unredirected_hdrs[name]
        return new


#: One deadline shared by connecting, sending and every read (the chat judges ask within one too).
Deadline = _Deadline


def deadline_opener(
    deadline: _Deadline, configured: frozenset[str] = frozenset()
) -> urllib.request.OpenerDirector:
    """An opener whose requests keep to ``deadline`` and whose redirects to another origin carry
    neither the ``configured`` headers (lowercase names) nor any header that may hold a credential."""
    return urllib.request.build_opener(
        _HTTPHandler(deadline), _HTTPSHandler(deadline), _RedirectHandler(configured)
    )


class _Retry(Exception):
    """A failure that may pass (no connection, the deadline, HTTP 429 and 5xx): its one-line reason."""


class HttpRetriever:
    """An HTTP search API asked once per question, within one deadline, with retries."""

    cacheable = True
    batch_size = 1

    def __init__(self, spec: LiveSpec) -> None:
        self.name = spec.name
        self.config: HttpConfig = spec.options["http"]
        self.concurrency = self.config.concurrency
        self.where = endpoint(self.config.url)
        self.configured = frozenset(key.lower() for key, _ in self.config.headers)
        #: Seconds slept between tries; a test may shorten it.
        self.backoff = 0.25

    def identity(self) -> dict[str, Any]:
        """The request and the response mapping (header values are hashed with the rest, never stored)."""
        c = self.config
        return {
            "kind": "http",
            "url": c.url,
            "method": c.method,
            "body": c.body,
            "headers": [list(h) for h in c.headers],
            "paths": [c.results, c.id, c.score, c.text, c.doc],
        }

    def plain_http_refusal(self, allowed: bool) -> str | None:
        """Why this retriever may not be asked: a credential header, or a credential in the URL,
        to a plain ``http://`` host other than this machine (None: it may be)."""
        c = self.config
        secret = [key for key, _ in c.headers if is_credential_header(key)]
        if secret:
            return plain_http_refusal(c.url, f"the header {secret[0]}", allowed)
        if mask_url(c.url) != c.url:
            return plain_http_refusal(c.url, "the credential in its URL", allowed)
        return None

    def secrets(self) -> list[str]:
        """Every header value as sent (``${VAR}`` read), for ``mask_secrets``: never shown."""
        out = []
        for _, value in self.config.headers:
            try:
                out.append(_env(value, self.name))
            except LiveError:
                continue
        return out

    def describe(self) -> dict[str, Any]:
        """What a saved run's manifest records (the endpoint without its query string, which may hold a key)."""
        return {"kind": "http", "endpoint": self.where, "method": self.config.method}

    def _request(self, question: str, depth: int) -> urllib.request.Request:
        c = self.config
        headers = {
            "Accept": "application/json",
            "User-Agent": f"ragtui/{__version__}",
        }
        data = None
        if c.body is not None:
            data = orjson.dumps(fill_body(c.body, question, depth))
            headers["Content-Type"] = "application/json"
        for key, value in c.headers:
            headers[key] = _env(value, self.name)
        return urllib.request.Request(
            fill_url(c.url, question, depth), data=data, headers=headers, method=c.method
        )

    def _once(self, request: urllib.request.Request, deadline: _Deadline) -> bytes:
        """One try within the deadline: the body, LiveError for a failure that will not pass, _Retry else."""
        opener = deadline_opener(deadline, self.configured)
        try:
            with opener.open(request) as response:
                body = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                if exc.fp:
                    echoed = mask_secrets(exc.read(4096).decode("utf-8", "replace"), self.secrets())
                    detail = one_line(echoed, 80)
            except (OSError, ValueError, http.client.HTTPException):
                detail = ""
            finally:
                exc.close()
            last = f"HTTP {exc.code} {exc.reason}" + (f" ({detail})" if detail else "")
            if exc.code not in _RETRY_STATUS:
                raise LiveError(f"{self.where}: {last}") from None
            raise _Retry(last) from None
        except TimeoutError:
            raise _Retry(f"no answer within {deadline.seconds:g} s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise _Retry(f"no answer within {deadline.seconds:g} s") from None
            raise _Retry(
                f"cannot connect ({getattr(reason, 'strerror', None) or reason})"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            what = getattr(exc, "strerror", None) or type(exc).__name__
            raise _Retry(f"connection failed ({what})") from None
        if len(body) > MAX_RESPONSE_BYTES:
            raise LiveError(f"{self.where}: response over {MAX_RESPONSE_BYTES // 1048576} MB")
        return bytes(body)

    def _fetch(self, question: str, depth: int) -> bytes:
        """The response body within the question's deadline, asking again (with back-off) after
        failures that may pass while the deadline leaves time for it."""
        c = self.config
        deadline = _Deadline(c.timeout)
        tries = 0
        last = ""
        for attempt in range(c.retries + 1):
            if attempt:
                pause = self.backoff * 2 ** (attempt - 1)
                if deadline.remaining() <= pause:
                    break
                time.sleep(pause)
            tries += 1
            try:
                return self._once(self._request(question, depth), deadline)
            except _Retry as exc:
                last = str(exc)
            if deadline.remaining() <= 0:
                break
        plural = "try" if tries == 1 else "tries"
        raise LiveError(f"{self.where}: {last} ({tries} {plural})")

    def parse(self, raw: bytes) -> list[Hit]:
        """The hits of a response, by the configured paths; LiveError naming the path when the shape is wrong."""
        c = self.config
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            start = one_line(raw[:40].decode("utf-8", "replace"), 40)
            raise LiveError(
                f"{self.where}: the response is not JSON (it starts {start!r})"
            ) from None
        items = get_path(obj, c.results)
        if not isinstance(items, list):
            raise LiveError(f"{self.where}: the response has no list at {c.results!r}")
        hits = []
        for rank, item in enumerate(items, start=1):
            hit_id = get_path(item, c.id)
            if isinstance(hit_id, bool) or not isinstance(hit_id, str | int) or hit_id == "":
                raise LiveError(f"{self.where}: result {rank} has no id at {c.id!r}")
            score = get_path(item, c.score)
            if isinstance(score, bool) or not isinstance(score, int | float | str):
                raise LiveError(f"{self.where}: result {rank} has no score at {c.score!r}")
            try:
                value = float(score)
            except ValueError:
                raise LiveError(
                    f"{self.where}: result {rank} has a score that is not a number at {c.score!r}"
                ) from None
            if not math.isfinite(value):
                raise LiveError(f"{self.where}: result {rank} has a score that is not finite")
            text = get_path(item, c.text)
            doc = get_path(item, c.doc)
            hits.append(
                Hit(
                    str(hit_id),
                    value,
                    text if isinstance(text, str) else None,
                    str(doc) if isinstance(doc, str | int) and not isinstance(doc, bool) else None,
                )
            )
        return hits

    def search(self, question: str, depth: int) -> list[Hit]:
        """Ask the API once (with retries) and read its results, in the order given."""
        return self.parse(self._fetch(question, depth))[:depth]

    def search_batch(self, questions: Sequence[str], depth: int) -> list[list[Hit]]:
        """One request per question (an HTTP API is asked one question at a time)."""
        return [self.search(q, depth) for q in questions]
