"""The options every command shares, declared once: the command line, the project file and
``ragtui config`` are all built from this table.

An option's name is its ``Settings`` field; its flag is ``--`` plus the name with dashes, and its
key in a project file is the name with dashes too (``chunk-size = 256``). Values are checked here,
so a bad value gets the same one-line message wherever it came from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ragtui.core.data.chunking import DEFAULT_CHUNK_SIZE
from ragtui.core.data.corpus import MAX_FILE_BYTES
from ragtui.core.data.tokenizer import DEFAULT_MODEL
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import JudgeSpec, judge_text, parse_judge_flag
from ragtui.core.labelling.labels import GRADES_MODES
from ragtui.core.metrics.evaluation import UNIT_CHUNKS, UNIT_EVIDENCE
from ragtui.core.retrieval.bm25 import BM25_BACKENDS
from ragtui.core.retrieval.external import parse_run_spec
from ragtui.core.retrieval.live import LiveSpec, parse_retriever_spec
from ragtui.core.retrieval.onnx_backend import BACKENDS
from ragtui.core.retrieval.windows import WINDOW_MODES
from ragtui.core.settings import Settings
from ragtui.core.text import not_utf8


class OptionError(ValueError):
    """A value an option cannot take; the message says why, without naming where it came from."""


@dataclass(frozen=True)
class Option:
    """One shared option: its ``Settings`` field, how its value is read, and its help."""

    name: str
    """The ``Settings`` field (``chunk_size``)."""
    parse: Callable[[Any], Any]
    """Turns a raw value (a command-line string or a project-file value) into the field's value."""
    help: str
    """One line for ``--help`` and ``ragtui config``."""
    metavar: str | None = None
    """How ``--help`` shows the value (None: a switch with no value)."""
    group: str = "retrieval and metrics"
    """The ``--help`` section."""
    repeatable: bool = False
    """Given several times on the command line (each adds one item); a list in a project file."""
    example: Any = None
    """A value a new project file shows for the option (commented out), when the default and the
    metavar do not make a valid one."""
    flag_name: str | None = None
    """The flag without dashes when it differs from the key (``run`` for ``runs``, one run a flag)."""
    unparse: Callable[[Any], str] | None = None
    """One value (one item of a repeatable option) back as the text its flag takes (default: generic)."""
    toml: tuple[type, ...] = ()
    """The TOML types a project file must give the value in (``(int,)``: ``k = 3``, not ``k = "3"``);
    empty: any value the parser takes."""

    def parse_file(self, raw: Any) -> Any:
        """The value a project file gives: one value, or for a repeatable option a list (or one
        item); a number, or true or false, must be one in TOML, not text."""
        if self.repeatable:
            items = raw if isinstance(raw, list) else [raw]
            return tuple(self._file_item(item) for item in items)
        return self._file_item(raw)

    def _file_item(self, raw: Any) -> Any:
        value = self.parse(raw)
        if self.toml and not isinstance(raw, self.toml):
            meant = "true or false" if self.toml == (bool,) else "a number"
            if not isinstance(raw, str):
                raise OptionError(f"expected {meant}, not {_shown(raw)}")
            hint = "" if self.toml == (bool,) else " (write it without quotes)"
            raise OptionError(f"expected {meant}, not the text {_shown(raw)}{hint}")
        return value

    def args(self, value: Any) -> list[str]:
        """The command-line arguments that give the option ``value`` (``["--k", "5"]``): parse's inverse."""
        items = value if self.repeatable else (value,)
        out: list[str] = []
        for item in items:
            out += [self.flag, self.unparse(item) if self.unparse else value_text(item)]
        return out

    @property
    def flag(self) -> str:
        """The command-line flag: ``--chunk-size``."""
        return "--" + (self.flag_name or self.key)

    @property
    def key(self) -> str:
        """The project-file key: ``chunk-size``."""
        return self.name.replace("_", "-")

    @property
    def default(self) -> Any:
        """The value when nothing sets the option (the ``Settings`` default)."""
        return _SETTINGS_DEFAULTS[self.name]


_SETTINGS_DEFAULTS = {f.name: f.default for f in fields(Settings)}


def value_text(value: Any) -> str:
    """A value as a flag takes it: a list as ``a,b``, a path as written, a number as Python prints it."""
    if isinstance(value, list | tuple):
        return ",".join(value_text(v) for v in value)
    return str(value)


# ---- value parsers (each accepts a command-line string or a project-file value) -------------------


#: The largest count an option takes unless it says otherwise (``--k``, ``--depth``, ``--chunk-size``):
#: far above any sensible value, and far below what an array or a JSON number can hold.
MAX_COUNT = 1_000_000
#: The largest ``--max-file-mb``: one tebibyte.
MAX_FILE_MB = 1_048_576
#: The largest seed (``--seed``): the seeds a 32-bit generator takes.
MAX_SEED = 2**32 - 1


def _shown(raw: Any) -> str:
    """A value as a message quotes it, cut to 40 characters (a 100-digit number stays one line)."""
    shown = repr(raw) if isinstance(raw, str) else str(raw)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def whole_number(minimum: int, maximum: int = MAX_COUNT) -> Callable[[Any], int]:
    """A whole number from ``minimum`` to ``maximum``."""

    def parse(raw: Any) -> int:
        if isinstance(raw, bool):
            raise OptionError(f"{raw!r} is not a whole number")
        if isinstance(raw, int):
            value = raw
        else:
            try:
                value = int(str(raw).strip())
            except ValueError:
                raise OptionError(f"{_shown(raw)} is not a whole number") from None
        if value < minimum:
            raise OptionError(f"{_shown(value)} must be at least {minimum}")
        if value > maximum:
            raise OptionError(f"{_shown(value)} must be at most {maximum}")
        return value

    return parse


def positive_up_to(maximum: float) -> Callable[[Any], float]:
    """A finite number above 0 and at most ``maximum``."""

    def parse(raw: Any) -> float:
        if isinstance(raw, bool):
            raise OptionError(f"{raw!r} is not a number")
        try:
            value = float(raw)
        except (TypeError, ValueError, OverflowError):
            raise OptionError(f"{_shown(raw)} is not a number") from None
        if not value > 0 or math.isinf(value):
            raise OptionError(f"{_shown(raw)} must be a positive number")
        if value > maximum:
            raise OptionError(f"{_shown(raw)} must be at most {maximum:.15g}")
        return value

    return parse


seed = whole_number(0, MAX_SEED)
"""A seed: a whole number from 0 to 2**32 - 1."""


def _nonempty(raw: Any) -> str:
    """A non-empty string."""
    if not isinstance(raw, str) or not raw.strip():
        raise OptionError(f"{raw!r} is not a non-empty text")
    return raw


def text(raw: Any) -> str:
    """A non-empty string of valid UTF-8 (it is written into JSON: a label's annotator, a manifest's model)."""
    value = _nonempty(raw)
    bad = not_utf8(value)
    if bad is not None:
        raise OptionError(f"not UTF-8 text ({bad})")
    return value


def path(raw: Any) -> Path:
    """A file or folder path (``~`` expanded); its bytes need not be UTF-8, as a file name's need
    not, but it holds no NUL (no file name can; a project file's ``"\u0000"`` could)."""
    value = _nonempty(raw)
    if "\x00" in value:
        raise OptionError(f"{_shown(value)}: a path cannot hold a NUL character")
    return Path(value).expanduser()


def name_list(raw: Any) -> tuple[str, ...]:
    """Comma-separated names (or a list of names in a project file), in order, without repeats."""
    items = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise OptionError(f"{item!r} is not a name")
        name = item.strip()
        if name and name not in names:
            names.append(name)
    if not names:
        raise OptionError("the list is empty")
    return tuple(names)


def choice(options: Iterable[str]) -> Callable[[Any], str]:
    """One of ``options``."""
    allowed = tuple(options)

    def parse(raw: Any) -> str:
        if raw not in allowed:
            raise OptionError(f"{raw!r} is not one of {', '.join(allowed)}")
        return str(raw)

    return parse


def windows_mode(raw: Any) -> str:
    """``max``, ``mean`` or ``off``; a project file may also say ``true`` (``max``) or ``false`` (``off``)."""
    if raw is True or raw == "on":
        return "max"
    if raw is False:
        return "off"
    return choice(WINDOW_MODES)(raw)


def run_spec(raw: Any) -> tuple[str, Path]:
    """``NAME=path.trec``: an external run."""
    try:
        return parse_run_spec(text(raw))
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def retriever_spec(raw: Any) -> LiveSpec | str:
    """``NAME=SPEC``: a live retriever; a plain ``NAME`` (no ``=``) is kept as a name for ``--compare`` and ``diff``."""
    value = text(raw).strip()
    if "=" not in value:
        return value
    try:
        return parse_retriever_spec(value)
    except InputError as exc:
        raise OptionError(exc.problem) from None


def judge_spec(raw: Any) -> JudgeSpec | str:
    """``NAME=SPEC``: a model judge; a plain ``NAME`` names a ``[judges.NAME]`` of the project file."""
    try:
        return parse_judge_flag(text(raw))
    except InputError as exc:
        raise OptionError(exc.problem) from None


def switch(raw: Any) -> bool:
    """On or off: ``true``/``false`` in a project file, the flag alone on the command line."""
    if isinstance(raw, bool):
        return raw
    lowered = str(raw).strip().lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise OptionError(f"{raw!r} is not true or false")


def milvus_field(raw: Any) -> tuple[str, str]:
    """``ROLE=FIELD``: a field of a Milvus collection ragtui did not build."""
    from ragtui.core.retrieval.milvus import parse_field

    try:
        return parse_field(text(raw))
    except ValueError as exc:
        raise OptionError(f"{raw!r}: {exc}") from None


#: The levels qrels can be evaluated at.
LEVELS = ("document", "chunk")
UNITS = (UNIT_CHUNKS, UNIT_EVIDENCE)


# ---- the table ------------------------------------------------------------------------------------------

OPTIONS: tuple[Option, ...] = (
    Option(
        "corpus",
        path,
        "folder of .md/.txt documents (default: the bundled corpus)",
        "DIR",
        group="data",
    ),
    Option(
        "golden",
        path,
        "folder with questions.jsonl and labels.jsonl (default: the bundled golden set)",
        "DIR",
        group="data",
    ),
    Option(
        "beir",
        path,
        "a BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/test.tsv) instead of --corpus",
        "DIR",
        group="data",
    ),
    Option(
        "chunk_size",
        whole_number(1),
        f"chunk size in tokens (default {DEFAULT_CHUNK_SIZE}; BEIR: whole documents)",
        "N",
        toml=(int,),
    ),
    Option(
        "overlap",
        whole_number(0),
        "tokens shared by consecutive chunks (default 0)",
        "N",
        toml=(int,),
    ),
    Option(
        "model",
        text,
        f"sentence-transformers model, a name or a folder (default: the bundled {DEFAULT_MODEL})",
        "NAME_OR_PATH",
    ),
    Option(
        "embedding_backend",
        choice(BACKENDS),
        "what runs the embedding model: onnx (ONNX Runtime, the onnx extra; faster on a CPU), "
        "torch, or auto (the default: onnx where onnxruntime is installed)",
        "auto|torch|onnx",
        example="auto",
    ),
    Option(
        "k", whole_number(1), "cut-off for recall, precision and nDCG (default 3)", "N", toml=(int,)
    ),
    Option("depth", whole_number(1), "results per retriever (default 10)", "N", toml=(int,)),
    Option(
        "retrievers",
        name_list,
        "comma-separated retrievers to show (default bm25,vector,hybrid)",
        "LIST",
    ),
    Option(
        "threshold",
        whole_number(1),
        "lowest grade that counts as relevant (trec_eval -l; default 1)",
        "G",
        toml=(int,),
    ),
    Option(
        "bm25_backend",
        choice(BM25_BACKENDS),
        "rank-bm25 (default) or bm25s",
        "NAME",
    ),
    Option(
        "windows",
        windows_mode,
        "a chunk longer than the embedding model reads is embedded as overlapping windows and "
        "scored by its best window (max, default), their mean (mean), or only its head (off)",
        "MODE",
        group="windows and reranking",
    ),
    Option(
        "window_stride",
        whole_number(1),
        "tokens from one window's start to the next (default: half the model's length)",
        "N",
        group="windows and reranking",
        example=127,
        toml=(int,),
    ),
    Option(
        "rerank",
        text,
        "re-score the top --depth with this sentence-transformers CrossEncoder (a folder, or a name "
        "in the local Hugging Face cache; never downloaded), adding the retriever <over>+rerank",
        "NAME_OR_PATH",
        group="windows and reranking",
    ),
    Option(
        "rerank_over",
        text,
        "the retriever whose top --depth is reranked (default hybrid)",
        "RETRIEVER",
        group="windows and reranking",
    ),
    Option("annotator", text, "who is labelling (default: the login name)", "NAME"),
    Option(
        "counted_grades",
        choice(GRADES_MODES),
        "which grades count: human (people's only, the default) or human+model (a model judge's "
        "verdict where no person graded the pair; a person's grade always wins)",
        "human|human+model",
        example="human",
        flag_name="grades",
    ),
    Option(
        "judges",
        judge_spec,
        "a model judge for ragtui judge (repeatable): SPEC is openai:MODEL@URL, "
        "cross-encoder:PATH, similarity, package.module:factory or an entry-point name of the "
        "ragtui.judges group; a NAME alone names a [judges.NAME] of the project file",
        "NAME=SPEC",
        group="model judges",
        repeatable=True,
        flag_name="judge",
        example=["sim=similarity"],
        unparse=judge_text,
    ),
    Option(
        "estimate",
        switch,
        "eval, report and the app also show how sure each mean is: the range its unjudged pairs "
        "allow, the model-filled value and the prediction-powered estimate with its 95 % interval "
        "(docs/judges.md)",
        None,
        group="model judges",
        example=True,
        toml=(bool,),
    ),
    Option(
        "blind",
        switch,
        "judge blind: the judging view hides which retrievers ranked a chunk, the evidence rule's "
        "grade and its highlight (b in the view toggles it)",
        None,
        example=True,
        toml=(bool,),
    ),
    Option(
        "show_others",
        switch,
        "in a person's own queue, show the other people's grades of a pair (and the judges') "
        "before that person graded it; by default they are hidden until then, so each grade is "
        "given independently (adjudication and review show them)",
        None,
        toml=(bool,),
    ),
    Option(
        "max_file_mb",
        positive_up_to(MAX_FILE_MB),
        f"largest corpus document read, in MB (default {MAX_FILE_BYTES // 1048576})",
        "MB",
        toml=(int, float),
    ),
    Option(
        "runs",
        run_spec,
        "add a retriever whose rankings come from a TREC run file (repeatable)",
        "NAME=PATH",
        repeatable=True,
        flag_name="run",
        unparse=lambda spec: f"{spec[0]}={spec[1]}",
    ),
    Option(
        "chunks",
        path,
        "the team's own chunks, one JSON object a line (id, text, doc; optional heading, meta), "
        "used as they are instead of chunking --corpus (--chunk-size and --overlap do not apply)",
        "FILE.jsonl",
        group="data",
        example="chunks.jsonl",
    ),
    Option(
        "level",
        choice(LEVELS),
        "evaluate qrels at document or chunk level (default: document when BEIR qrels name "
        "documents and the corpus is chunked; a document ranks at its best chunk's rank)",
        "LEVEL",
        example="document",
    ),
    Option(
        "unit",
        choice(UNITS),
        "the unit of every row's measures: chunks (recall over ragtui's relevant chunks) or "
        "evidence (over the evidence strings, or a question's relevant documents, whatever "
        "passages a retriever returns); default: chunks, evidence when a retriever returns "
        "passages of its own (docs/metrics.md)",
        "chunks|evidence",
        example="evidence",
    ),
    Option(
        "live_retrievers",
        retriever_spec,
        "add a live retriever (repeatable): SPEC is an http(s) URL with {query} (and {depth}), "
        "package.module:factory, or an entry-point name; a NAME without =SPEC is, for eval "
        "--compare and diff, the retriever a saved run stands for",
        "NAME=SPEC",
        group="live retrievers",
        repeatable=True,
        flag_name="retriever",
        example=["web=http://localhost:9200/search?q={query}&k={depth}"],
    ),
    Option(
        "refresh",
        switch,
        "ask live retrievers again instead of using their cached answers",
        None,
        group="live retrievers",
        example=True,
        toml=(bool,),
    ),
    Option(
        "allow_http",
        switch,
        "send a judge's key or a live retriever's credential header over plain http:// to a host "
        "other than this machine (refused by default: anyone on the path reads it)",
        None,
        group="live retrievers",
        example=True,
        toml=(bool,),
    ),
    Option(
        "milvus",
        text,
        "a Milvus Lite file (./ragtui.db) or http(s)://host:19530 (token from RAGTUI_MILVUS_TOKEN); "
        "adds milvus-bm25, milvus-vector and milvus-hybrid",
        "URI",
        group="live retrievers",
        example="ragtui.db",
    ),
    Option(
        "collection",
        text,
        "the Milvus collection (with --milvus)",
        "NAME",
        group="live retrievers",
        example="ragtui",
    ),
    Option(
        "milvus_fields",
        milvus_field,
        "a field of a collection ragtui did not build (repeatable; ROLE: id, text, doc, vector, sparse)",
        "ROLE=FIELD",
        group="live retrievers",
        repeatable=True,
        flag_name="milvus-field",
        example=["text=content"],
    ),
)


def settings_from_values(values: Mapping[str, Any]) -> Settings:
    """Settings from parsed option values (missing ones take their defaults).

    A corpus chunked by default takes the default chunk size; a BEIR dataset without a size keeps
    each document whole.
    """
    given = dict(values)
    if given.get("chunk_size") is None and given.get("beir") is None:
        given["chunk_size"] = DEFAULT_CHUNK_SIZE
    elif "chunk_size" not in given:
        given["chunk_size"] = None
    for name in ("runs", "live_retrievers", "milvus_fields", "judges"):
        if name in given:
            given[name] = tuple(given[name])
    named = [v for v in given.get("judges", ()) if not isinstance(v, JudgeSpec)]
    if named:
        raise InputError(
            None,
            f"--judge {named[0]}: a name alone names a [judges.NAME] of the project file, "
            "which is not read here; give NAME=SPEC",
        )
    plain = [v for v in given.get("live_retrievers", ()) if not isinstance(v, LiveSpec)]
    if plain:
        raise InputError(
            None,
            f"--retriever {plain[0]}: a name without =SPEC only chooses the retriever of a saved run "
            "(eval --compare, diff); to add a live retriever give NAME=SPEC",
        )
    return Settings(**given)
