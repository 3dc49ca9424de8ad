"""Any HTTP search API as a live retriever: a URL template, and a mapping for the response's shape.

``--retriever NAME=http://host:port/search?q={query}&k={depth}`` sends a GET with the question
URL-encoded into ``{query}`` and the depth into ``{depth}``, and reads the default response
``{"results": [{"id": …, "score": …}, …]}`` (each result may add ``text`` and ``doc``). A project
file's ``[retrievers.NAME]`` table can describe any other shape: a POST with a JSON body template,
headers (``${VAR}`` is read from the environment), and where the list of results, each id, score,
text and document are (dotted paths; ``preset = "elasticsearch"`` or ``"opensearch"`` fills in a
``_search`` response's paths). The order of the response is the ranking.

Requests use the standard library (``urllib.request``): a timeout, retries with exponential back-off
for the failures that may pass (no connection, a timeout, HTTP 429 and 5xx), and one line per
failure that names the endpoint without its query string (which may hold a key).
"""

from __future__ import annotations

import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from ragtui import __version__
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import Hit
from ragtui.core.retrieval.live import LiveError, LiveSpec, one_line

__all__ = ["PRESETS", "HttpConfig", "HttpRetriever", "parse_http_options"]

#: Response paths of well-known search engines (``preset = "..."``).
PRESETS: dict[str, dict[str, str]] = {
    "elasticsearch": {
        "results": "hits.hits",
        "id": "_id",
        "score": "_score",
        "text": "_source.text",
        "doc": "_source.doc",
    },
    "opensearch": {
        "results": "hits.hits",
        "id": "_id",
        "score": "_score",
        "text": "_source.text",
        "doc": "_source.doc",
    },
}

#: The largest response read, in bytes (a bigger one is refused rather than held in memory).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

#: Statuses worth asking again: rate limited, or the server (or a proxy) failing for now.
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_KEYS = frozenset(
    {
        "method",
        "body",
        "headers",
        "results",
        "id",
        "score",
        "text",
        "doc",
        "timeout",
        "retries",
        "concurrency",
        "preset",
    }
)


@dataclass(frozen=True)
class HttpConfig:
    """An HTTP search API: the request (URL template, method, body template, headers) and the response paths."""

    url: str
    method: str = "GET"
    body: Any = None
    headers: tuple[tuple[str, str], ...] = ()
    results: str = "results"
    id: str = "id"
    score: str = "score"
    text: str = "text"
    doc: str = "doc"
    timeout: float = 10.0
    retries: int = 2
    concurrency: int = 4


def _placeholders(text: str) -> set[str]:
    return set(_PLACEHOLDER.findall(text))


def _check_template(text: str, where: str, source: str, need_query: bool) -> None:
    unknown = _placeholders(text) - {"query", "depth"}
    if unknown:
        raise InputError(
            None,
            f"{source}: {where} has an unknown placeholder {{{sorted(unknown)[0]}}}; use {{query}} and {{depth}}",
        )
    if need_query and "query" not in _placeholders(text):
        raise InputError(None, f"{source}: {where} must hold {{query}}")


def _walk_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_walk_strings(k), *_walk_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _walk_strings(v)]
    return []


def _path(value: Any, key: str, source: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(None, f"{source}: {key} must be a dotted path such as 'hits.hits'")
    return value.strip()


def _number(value: Any, key: str, source: str, minimum: float, whole: bool) -> Any:
    ok = not isinstance(value, bool) and isinstance(value, int | float)
    if ok and whole:
        ok = isinstance(value, int)
    if not ok or not math.isfinite(value) or value < minimum:
        kind = "a whole number" if whole else "a number"
        raise InputError(None, f"{source}: {key} must be {kind} of at least {minimum:g}")
    return value


def parse_http_options(url: str, table: dict[str, Any], source: str) -> HttpConfig:
    """An HTTP retriever's config from its URL template and the rest of its ``[retrievers.NAME]`` table.

    Keys: ``method`` (GET or POST), ``body`` (a JSON template: a table or a JSON string; any string
    holding ``{query}`` or ``{depth}`` is filled in, and one that is exactly ``"{depth}"`` becomes a
    number), ``headers`` (a table), ``results``, ``id``, ``score``, ``text``, ``doc`` (dotted paths),
    ``preset`` (elasticsearch, opensearch), ``timeout`` (seconds), ``retries``, ``concurrency``.
    """
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise InputError(
            None,
            f"{source}: unknown key {unknown[0]!r}; known: {', '.join(sorted(_KEYS))}",
        )
    values: dict[str, Any] = {}
    preset = table.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise InputError(
                None, f"{source}: preset must be one of {', '.join(PRESETS)}, got {preset!r}"
            )
        values.update(PRESETS[preset])
    method = str(table.get("method", "POST" if "body" in table else "GET")).upper()
    if method not in ("GET", "POST"):
        raise InputError(None, f"{source}: method must be GET or POST, got {method!r}")
    body = table.get("body")
    if isinstance(body, str):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise InputError(None, f"{source}: body is not JSON ({exc})") from None
    if body is not None and not isinstance(body, dict | list):
        raise InputError(None, f"{source}: body must be a table or a JSON object")
    if method == "GET" and body is not None:
        raise InputError(None, f'{source}: a GET request has no body; set method = "POST"')
    body_text = " ".join(_walk_strings(body)) if body is not None else ""
    _check_template(url, "url", source, need_query=body is None)
    if body is not None:
        _check_template(body_text, "body", source, need_query=False)
        if "query" not in _placeholders(url) | _placeholders(body_text):
            raise InputError(None, f"{source}: the url or the body must hold {{query}}")
    headers = table.get("headers", {})
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise InputError(None, f"{source}: headers must be a table of strings")
    for key in ("results", "id", "score", "text", "doc"):
        if key in table:
            values[key] = _path(table[key], key, source)
    if "timeout" in table:
        values["timeout"] = float(_number(table["timeout"], "timeout", source, 0.001, False))
    if "retries" in table:
        values["retries"] = int(_number(table["retries"], "retries", source, 0, True))
    if "concurrency" in table:
        values["concurrency"] = int(_number(table["concurrency"], "concurrency", source, 1, True))
    return HttpConfig(
        url=url, method=method, body=body, headers=tuple(sorted(headers.items())), **values
    )


def fill_url(template: str, question: str, depth: int) -> str:
    """The URL with the question URL-encoded (every reserved character escaped) and the depth filled in."""

    def replace(match: re.Match[str]) -> str:
        return quote(question, safe="") if match.group(1) == "query" else str(depth)

    return _PLACEHOLDER.sub(replace, template)


def fill_body(template: Any, question: str, depth: int) -> Any:
    """The JSON body with ``{query}`` and ``{depth}`` filled in (``"{depth}"`` alone becomes a number)."""
    if isinstance(template, str):
        if template == "{depth}":
            return depth
        return _PLACEHOLDER.sub(
            lambda m: question if m.group(1) == "query" else str(depth), template
        )
    if isinstance(template, dict):
        return {k: fill_body(v, question, depth) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_body(v, question, depth) for v in template]
    return template


def get_path(value: Any, path: str) -> Any:
    """The value at a dotted path (``hits.hits``, ``_source.text``, ``items.0.id``), or None."""
    for part in path.split("."):
        if isinstance(value, Mapping):
            if part not in value:
                return None
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def endpoint(url: str) -> str:
    """The URL without its query string or user info: safe to print (a query may hold a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def _env(text: str, source: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise LiveError(f"header needs the environment variable {name}, which is not set")
        return os.environ[name]

    return _ENV.sub(replace, text)


class HttpRetriever:
    """An HTTP search API asked once per question, with a timeout and retries."""

    cacheable = True
    batch_size = 1

    def __init__(self, spec: LiveSpec) -> None:
        self.name = spec.name
        self.config: HttpConfig = spec.options["http"]
        self.concurrency = self.config.concurrency
        self.where = endpoint(self.config.url)
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

    def _fetch(self, question: str, depth: int) -> bytes:
        """The response body, asking again (with back-off) after failures that may pass."""
        c = self.config
        tries = c.retries + 1
        last = ""
        for attempt in range(tries):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = self._request(question, depth)
            try:
                with urllib.request.urlopen(request, timeout=c.timeout) as response:
                    body = response.read(MAX_RESPONSE_BYTES + 1)
                if len(body) > MAX_RESPONSE_BYTES:
                    raise LiveError(
                        f"{self.where}: response over {MAX_RESPONSE_BYTES // 1048576} MB"
                    )
                return bytes(body)
            except urllib.error.HTTPError as exc:
                detail = one_line(exc.read(200).decode("utf-8", "replace"), 80) if exc.fp else ""
                last = f"HTTP {exc.code} {exc.reason}" + (f" ({detail})" if detail else "")
                if exc.code not in _RETRY_STATUS:
                    raise LiveError(f"{self.where}: {last}") from None
            except TimeoutError:
                last = f"no answer within {c.timeout:g} s"
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, TimeoutError):
                    last = f"no answer within {c.timeout:g} s"
                else:
                    last = f"cannot connect ({getattr(reason, 'strerror', None) or reason})"
            except (ConnectionError, OSError) as exc:
                last = f"connection failed ({exc.strerror or type(exc).__name__})"
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
