"""How a judge is named: ``--judge NAME=SPEC`` and the project file's ``[judges.NAME]`` tables.

SPEC on the command line is one of::

    openai:MODEL@URL        an OpenAI-compatible chat endpoint (URL: http(s), up to /v1)
    cross-encoder:PATH      a sentence-transformers CrossEncoder folder (never downloaded)
    similarity              the embedding model's cosine between question and chunk (built in)
    package.module:factory  a Python plugin
    NAME                    an entry point of the ``ragtui.judges`` group

and ``--judge NAME`` alone names a ``[judges.NAME]`` of the project file (:func:`resolve_judges`).
A ``[judges.NAME]`` table says which kind it is by ``kind`` or by its main key (``url``: openai,
``path``: cross-encoder, ``factory``: plugin, ``entry-point``), and holds that kind's keys only
(:data:`SECTION_KEYS`; ``-`` and ``_`` are the same in them). Nothing is imported, loaded or
contacted here: a judge runs code only when ``ragtui judge`` builds and uses it
(``ragtui.core.judges.build``).

The ``options`` of a spec, by kind (what the judges read):

- openai: ``url``, ``api_key_env``, ``prompt`` (a Path), ``timeout`` (seconds), ``concurrency``,
  ``retries``, ``max_tokens``; the model is the spec's ``target``.
- cross-encoder and similarity: ``thresholds`` (a tuple of floats, lowest grade first).
- plugin and entry-point: ``options`` (the factory's keyword arguments), ``timeout``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ragtui.core.data.paths import safe_filename
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES
from ragtui.core.text import mask_urls

#: What a judge spec stands for.
JudgeKind = Literal["openai", "cross-encoder", "similarity", "plugin", "entry-point"]


@dataclass(frozen=True)
class JudgeSpec:
    """How to build one judge: its name, kind, target and options, and where it was given.

    ``target`` is the kind's main value: the model name (``openai``), the folder (``cross-encoder``),
    ``package.module:factory`` (``plugin``), the entry-point name, or empty (``similarity``).
    """

    name: str
    kind: JudgeKind
    target: str = ""
    options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Kind-specific settings: url, api_key_env, prompt, timeout, concurrency, retries, thresholds."""
    source: str = "--judge"
    """Where the spec was given, for messages (``--judge``, ``ragtui.toml [judges.llm]``)."""

    def __str__(self) -> str:
        """``NAME=KIND:TARGET``, as ``--judge`` takes it."""
        if self.kind == "similarity":
            return f"{self.name}=similarity"
        if self.kind == "openai":
            url = self.options.get("url", "")
            return f"{self.name}=openai:{self.target}@{url}"
        if self.kind == "entry-point":
            return f"{self.name}={self.target}"
        prefix = "cross-encoder:" if self.kind == "cross-encoder" else ""
        return f"{self.name}={prefix}{self.target}"


def shares_model_with(
    model_id: str, embedding_model: str, rerank_model: str | None, retrievers: Sequence[str]
) -> tuple[str, ...]:
    """The retrievers that use the judge's model (a judge favours its own retriever).

    A judge on the embedding model shares it with ``vector`` and with what fuses or reranks it
    (``hybrid``, ``hybrid+rerank``); one on the reranker's model with the reranked retriever.
    Models are compared by name and by their folder's last part (``/x/all-MiniLM-L6-v2`` is
    ``all-MiniLM-L6-v2``).
    """

    def same(a: str, b: str | None) -> bool:
        if not a or not b:
            return False
        tail_a = a.rstrip("/").rsplit("/", 1)[-1]
        tail_b = b.rstrip("/").rsplit("/", 1)[-1]
        return a == b or tail_a == tail_b

    out = []
    for name in retrievers:
        uses_embedding = name in ("vector", "hybrid") or name.startswith(("vector+", "hybrid+"))
        reranked = name.endswith("+rerank")
        if (uses_embedding and same(model_id, embedding_model)) or (
            reranked and same(model_id, rerank_model)
        ):
            out.append(name)
    return tuple(out)


__all__ = [
    "JUDGE_KINDS",
    "SECTION_KEYS",
    "JudgeSectionError",
    "check_judge_name",
    "judge_text",
    "judge_where",
    "parse_judge_flag",
    "parse_judge_section",
    "parse_judge_spec",
    "parse_judges_table",
    "parse_thresholds",
    "resolve_judges",
]

#: Every kind, as ``kind = "..."`` names it in a ``[judges.NAME]`` table.
JUDGE_KINDS: tuple[JudgeKind, ...] = (
    "openai",
    "cross-encoder",
    "similarity",
    "plugin",
    "entry-point",
)

#: The keys a ``[judges.NAME]`` table of each kind may hold (``kind`` always may).
SECTION_KEYS: dict[JudgeKind, tuple[str, ...]] = {
    "openai": (
        "url",
        "model",
        "api_key_env",
        "prompt",
        "timeout",
        "concurrency",
        "retries",
        "max_tokens",
    ),
    "cross-encoder": ("path", "thresholds"),
    "similarity": ("thresholds",),
    "plugin": ("factory", "options", "timeout"),
    "entry-point": ("entry_point", "options", "timeout"),
}

#: The key that says a table's kind when ``kind`` is not given, and the keys a kind cannot do without.
_MAIN_KEY: dict[str, JudgeKind] = {
    "url": "openai",
    "path": "cross-encoder",
    "factory": "plugin",
    "entry_point": "entry-point",
}
#: Keys as the docs write them, where that is not with underscores.
_SHOWN = {"max_tokens": "max-tokens", "entry_point": "entry-point"}
_REQUIRED: dict[JudgeKind, tuple[str, ...]] = {
    "openai": ("url", "model"),
    "cross-encoder": ("path",),
    "similarity": (),
    "plugin": ("factory",),
    "entry-point": ("entry_point",),
}

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_FACTORY = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL_AT = re.compile(r"@(?=https?://)", re.IGNORECASE)

_FORMS = "openai:MODEL@URL, cross-encoder:PATH, similarity, package.module:factory or an entry-point name"


class JudgeSectionError(ValueError):
    """A bad ``[judges.NAME]`` table: the problem, and the judge and key it is about (so the project
    file's reader can name the line)."""

    def __init__(self, judge: str, key: str | None, problem: str) -> None:
        self.judge = judge
        self.key = key
        self.problem = problem
        super().__init__(f"{judge}: {key}: {problem}" if key else f"{judge}: {problem}")

    @property
    def at(self) -> tuple[str, str | None]:
        """(judge name, key): where in the file the problem is."""
        return self.judge, self.key


# ---- names ----------------------------------------------------------------------------------------


def _name_problem(name: str) -> str | None:
    try:
        safe = safe_filename(name) == name
    except ValueError:
        safe = False
    if not _NAME.fullmatch(name) or not safe:
        return f"judge name {name!r} may hold only letters, digits, '_', '.' and '-' (not first)"
    if name in RETRIEVER_NAMES:
        return f"{name!r} is a built-in retriever's name; give your judge another name"
    return None


def check_judge_name(name: str, source: str) -> str:
    """A judge's name, by the rules of a retriever's: letters, digits, ``_ . -`` (not first), and not
    a built-in retriever's name (its verdicts are ``model:NAME`` in the journal); InputError."""
    problem = _name_problem(name)
    if problem is not None:
        raise InputError(None, f"{source}: {problem}")
    return name


# ---- --judge NAME=SPEC ------------------------------------------------------------------------------


def _http_url(url: str) -> bool:
    return url.lower().startswith(("http://", "https://")) and len(url.split("://", 1)[1]) > 0


def parse_judge_spec(
    name: str, spec: str, source: str = "--judge", where: str | None = None
) -> JudgeSpec:
    """The judge ``spec`` stands for (one of :data:`_FORMS`), named ``name``; InputError when it is
    none. ``source`` is where it was given (kept in the spec), ``where`` what messages name (the
    flag as written; default ``source``)."""
    given = source
    source = where or source
    spec = spec.strip()
    lowered = spec.lower()
    if lowered == "similarity":
        return JudgeSpec(name, "similarity", "", {}, given)
    if lowered.startswith("openai:"):
        body = spec[len("openai:") :]
        parts = _URL_AT.split(body, maxsplit=1)
        if len(parts) != 2 or not parts[0].strip() or not _http_url(parts[1].strip()):
            raise InputError(
                None,
                f"{source}: expected openai:MODEL@URL with an http(s) URL "
                "(openai:qwen2.5:7b-instruct@http://127.0.0.1:11434/v1)",
            )
        return JudgeSpec(name, "openai", parts[0].strip(), {"url": parts[1].strip()}, given)
    if lowered.startswith("cross-encoder:"):
        path = spec[len("cross-encoder:") :].strip()
        if not path:
            raise InputError(None, f"{source}: expected cross-encoder:PATH (a model folder)")
        return JudgeSpec(name, "cross-encoder", str(Path(path).expanduser()), {}, given)
    if lowered in ("openai", "cross-encoder"):
        form = "openai:MODEL@URL" if lowered == "openai" else "cross-encoder:PATH"
        raise InputError(None, f"{source}: expected {form}")
    if "://" in spec:
        raise InputError(None, f"{source}: a URL is given as openai:MODEL@URL")
    if _FACTORY.fullmatch(spec):
        return JudgeSpec(name, "plugin", spec, {}, given)
    if _NAME.fullmatch(spec):
        return JudgeSpec(name, "entry-point", spec, {}, given)
    raise InputError(None, f"{source}: {spec!r} is none of {_FORMS}")


def parse_judge_flag(text: str) -> JudgeSpec | str:
    """``--judge NAME=SPEC`` as a spec, or ``--judge NAME`` as the name of a project file's judge."""
    value = text.strip()
    source = f"--judge {mask_urls(value)!r}"
    name, sep, spec = value.partition("=")
    name = name.strip()
    if not name or (sep and not spec.strip()):
        raise InputError(
            None, f"{source}: expected NAME=SPEC (SPEC: {_FORMS}), or a NAME of the project file"
        )
    check_judge_name(name, source)
    if not sep:
        return name
    return parse_judge_spec(name, spec, "--judge", source)


def judge_where(spec: JudgeSpec) -> str:
    """Where a judge was given, for messages: ``--judge NAME`` or ``ragtui.toml [judges.NAME]``."""
    return spec.source if "[judges." in spec.source else f"--judge {spec.name}"


def judge_text(spec: JudgeSpec | str) -> str:
    """A judge as ``--judge`` takes it (``NAME=SPEC``, or a plain name): ``ragtui config`` shows it so."""
    return spec if isinstance(spec, str) else str(spec)


# ---- [judges.NAME] ----------------------------------------------------------------------------------


def _whole(minimum: int) -> Callable[[Any], int]:
    def parse(raw: Any) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
            raise ValueError(f"must be a whole number of at least {minimum}, got {raw!r}")
        return raw

    return parse


def _seconds(raw: Any) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw < math.inf:
        raise ValueError(f"must be a positive number of seconds, got {raw!r}")
    return float(raw)


def _string(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"must be a non-empty string, got {raw!r}")
    return raw.strip()


def _env_name(raw: Any) -> str:
    value = _string(raw)
    if not _ENV.fullmatch(value):
        raise ValueError(
            f"must name an environment variable (letters, digits and '_'), got {value!r}"
        )
    return value


def parse_thresholds(raw: Any) -> tuple[float, ...]:
    """Score thresholds, lowest grade's first: finite numbers, each above the one before."""
    if not isinstance(raw, list | tuple) or not raw:
        raise ValueError(f"must be a list of numbers, one per grade above 0, got {raw!r}")
    out: list[float] = []
    for item in raw:
        if isinstance(item, bool) or not isinstance(item, int | float) or not math.isfinite(item):
            raise ValueError(f"{item!r} is not a finite number")
        if out and not item > out[-1]:
            raise ValueError(f"must rise from one grade to the next ({out[-1]:g} then {item:g})")
        out.append(float(item))
    return tuple(out)


def _options(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ValueError("must be a table (the factory's keyword arguments)")
    for key in raw:
        if not isinstance(key, str) or not key.isidentifier():
            raise ValueError(f"{key!r} cannot be a keyword argument")
    return dict(raw)


def _kind(table: Mapping[str, Any], name: str) -> JudgeKind:
    """The table's kind: ``kind``, else the main key it holds."""
    if "kind" in table:
        kind = table["kind"]
        if kind not in JUDGE_KINDS:
            raise JudgeSectionError(
                name, "kind", f"{kind!r} is not one of {', '.join(JUDGE_KINDS)}"
            )
        found: JudgeKind = kind
        return found
    mains = [key for key in _MAIN_KEY if key in table]
    if len(mains) > 1:
        raise JudgeSectionError(
            name,
            mains[1],
            f"give one of url, path, factory or entry-point (found {', '.join(mains)})",
        )
    if not mains:
        raise JudgeSectionError(
            name,
            None,
            'say which judge it is: kind = "similarity", or url (openai), path (cross-encoder), '
            "factory (a plugin) or entry-point",
        )
    return _MAIN_KEY[mains[0]]


def parse_judge_section(
    name: str, table: Mapping[str, Any], resolve: Callable[[str], Path] = Path, where: str = ""
) -> JudgeSpec:
    """One ``[judges.NAME]`` table as a spec; JudgeSectionError naming the key at fault.

    ``resolve`` makes a path of the file relative to the file's folder; ``where`` is the file, for
    the spec's ``source`` (``ragtui.toml [judges.llm]``).
    """
    problem = _name_problem(name)
    if problem is not None:
        raise JudgeSectionError(name, None, problem)
    if not isinstance(table, Mapping):
        raise JudgeSectionError(name, None, f"expected a table [judges.{name}]")
    by_key: dict[str, tuple[str, Any]] = {}
    for written, value in table.items():
        key = str(written).replace("-", "_")
        if key in by_key:
            raise JudgeSectionError(name, str(written), f"given twice (as {by_key[key][0]!r} too)")
        by_key[key] = (str(written), value)
    if "api_key" in by_key:
        raise JudgeSectionError(
            name,
            by_key["api_key"][0],
            "a key is never read from the project file: put it in an environment variable and "
            'name the variable with api_key_env = "VARIABLE"',
        )
    values = {key: value for key, (_, value) in by_key.items()}
    kind = _kind(values, name)
    allowed = SECTION_KEYS[kind]
    article = "an" if kind[0] in "aeiou" else "a"
    for key, (written, _) in by_key.items():
        if key != "kind" and key not in allowed:
            keys = ", ".join(_SHOWN.get(k, k) for k in allowed)
            raise JudgeSectionError(
                name, written, f"not a key of {article} {kind} judge (its keys: kind, {keys})"
            )
    for key in _REQUIRED[kind]:
        if key not in values:
            raise JudgeSectionError(
                name, None, f"{article} {kind} judge needs {_SHOWN.get(key, key)}"
            )

    def read(key: str, parse: Callable[[Any], Any]) -> Any:
        try:
            return parse(values[key])
        except ValueError as exc:
            raise JudgeSectionError(name, by_key[key][0], str(exc)) from None

    source = f"{where} [judges.{name}]".strip()
    options: dict[str, Any] = {}
    target = ""
    if kind == "openai":
        url = read("url", _string)
        if not _http_url(url):
            raise JudgeSectionError(name, by_key["url"][0], "must start with http:// or https://")
        options["url"] = url
        target = read("model", _string)
        readers: dict[str, Callable[[Any], Any]] = {
            "api_key_env": _env_name,
            "prompt": lambda raw: resolve(_string(raw)),
            "timeout": _seconds,
            "concurrency": _whole(1),
            "retries": _whole(0),
            "max_tokens": _whole(1),
        }
        for key, parse in readers.items():
            if key in values:
                options[key] = read(key, parse)
    elif kind == "cross-encoder":
        raw_path = read("path", _string)
        anchored = resolve(raw_path)
        # A folder beside the project file, else the path as written (an absolute one, or a name
        # in the local Hugging Face cache).
        target = str(anchored) if anchored.exists() else str(Path(raw_path).expanduser())
    elif kind in ("plugin", "entry-point"):
        key = "factory" if kind == "plugin" else "entry_point"
        target = read(key, _string)
        pattern = _FACTORY if kind == "plugin" else _NAME
        if not pattern.fullmatch(target):
            form = "package.module:function" if kind == "plugin" else "an entry-point name"
            raise JudgeSectionError(name, by_key[key][0], f"must be {form}, got {target!r}")
        options["options"] = read("options", _options) if "options" in values else {}
        if "timeout" in values:
            options["timeout"] = read("timeout", _seconds)
    if "thresholds" in values:
        options["thresholds"] = read("thresholds", parse_thresholds)
    return JudgeSpec(name, kind, target, options, source)


def parse_judges_table(
    table: Mapping[str, Any], resolve: Callable[[str], Path] = Path, where: str = ""
) -> tuple[JudgeSpec, ...]:
    """The project file's ``[judges]``: one ``[judges.NAME]`` table per judge, in the file's order."""
    specs = []
    for name, body in table.items():
        if not isinstance(body, Mapping):
            raise JudgeSectionError(str(name), None, f"expected a table [judges.{name}]")
        specs.append(parse_judge_section(str(name), body, resolve, where))
    return tuple(specs)


# ---- the judges in force -------------------------------------------------------------------------


def resolve_judges(
    given: Sequence[JudgeSpec | str], defined: Sequence[JudgeSpec], where: str | None
) -> tuple[JudgeSpec, ...]:
    """The judges ``--judge`` gives: each ``NAME=SPEC`` as it is, each plain ``NAME`` the project
    file's ``[judges.NAME]`` (``where``: the file, None without one); InputError for a name the file
    does not define or a name given twice."""
    by_name = {spec.name: spec for spec in defined}
    out: list[JudgeSpec] = []
    for item in given:
        if isinstance(item, str):
            spec = by_name.get(item)
            if spec is None:
                if where is None:
                    problem = "no project file is in force to define it"
                else:
                    known = ", ".join(by_name) or "none"
                    problem = f"{where} has no [judges.{item}] (its judges: {known})"
                raise InputError(
                    None, f"--judge {item}: {problem}; give NAME=SPEC ({_FORMS}) to name one here"
                )
            item = spec
        if any(spec.name == item.name for spec in out):
            raise InputError(
                None, f"--judge: the judge name {item.name!r} is given twice; give each its own"
            )
        out.append(item)
    return tuple(out)
