"""An HTTP retriever's settings: the URL template, the request and where the response keeps its results.

``--retriever NAME=http://host:port/search?q={query}&k={depth}`` is a GET with the question
URL-encoded into ``{query}`` and the depth into ``{depth}``, read as the default response
``{"results": [{"id": …, "score": …}, …]}``. A project file's ``[retrievers.NAME]`` table can
describe any other shape (see :func:`parse_http_options`). Everything here only reads text: the
requests are ``ragtui.core.retrieval.http``'s, which imports urllib only when a retriever is built.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from ragtui.core.errors import InputError
from ragtui.core.text import mask_url

__all__ = [
    "PRESETS",
    "HttpConfig",
    "endpoint",
    "fill_body",
    "fill_url",
    "get_path",
    "parse_http_options",
]

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

#: A placeholder of a URL or body template: ``{query}`` or ``{depth}``.
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

#: The keys of an HTTP retriever's ``[retrievers.NAME]`` table.
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


def _check_url(url: str, source: str) -> None:
    """An http(s) URL template that can be requested: a host, a port in range, brackets that close."""
    probe = _PLACEHOLDER.sub(lambda m: "1" if m.group(1) == "depth" else "x", url)
    shown = mask_url(url)
    try:
        parts = urlsplit(probe)
        port = parts.port
    except ValueError as exc:
        raise InputError(None, f"{source}: url {shown} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InputError(None, f"{source}: url must start with http:// or https://")
    if not parts.hostname:
        raise InputError(None, f"{source}: url {shown} has no host")
    if port == 0:
        raise InputError(None, f"{source}: url {shown} has port 0 (use 1-65535)")


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
    _check_url(url, source)
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
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:  # checked when the spec is read; kept safe for any other caller
        return mask_url(url.partition("?")[0].partition("#")[0])
    return f"{parts.scheme}://{host}{parts.path}"
