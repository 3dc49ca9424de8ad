"""The command line: ``ragtui`` (the app), ``ragtui eval``, ``ragtui export DIR``, ``ragtui check``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ragtui import __version__
from ragtui.core.chunking import DEFAULT_CHUNK_SIZE
from ragtui.core.errors import InputError
from ragtui.core.retrievers import BM25_BACKENDS, RETRIEVER_NAMES
from ragtui.core.tokenizer import DEFAULT_MODEL
from ragtui.core.workspace import Settings

#: Defaults of the shared options; ``argparse.SUPPRESS`` lets them appear before or after the command.
_DEFAULTS = {
    "corpus": None,
    "golden": None,
    "beir": None,
    "chunk_size": None,
    "overlap": 0,
    "model": DEFAULT_MODEL,
    "k": 3,
    "depth": 10,
    "retrievers": ",".join(RETRIEVER_NAMES),
    "threshold": 1,
    "bm25_backend": "rank-bm25",
    "annotator": None,
}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must not be negative")
    return value


def _shared_options(parser: argparse.ArgumentParser) -> None:
    s = argparse.SUPPRESS
    data = parser.add_argument_group("data")
    data.add_argument("--corpus", type=Path, default=s, metavar="DIR", help="folder of .md/.txt documents (default: the bundled corpus)")
    data.add_argument("--golden", type=Path, default=s, metavar="DIR", help="folder with questions.jsonl and labels.jsonl (default: the bundled golden set)")
    data.add_argument("--beir", type=Path, default=s, metavar="DIR", help="a BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/test.tsv) instead of --corpus/--golden")
    opts = parser.add_argument_group("retrieval and metrics")
    opts.add_argument("--chunk-size", type=_positive, default=s, metavar="N", help=f"chunk size in tokens (default {DEFAULT_CHUNK_SIZE}; BEIR: whole documents)")
    opts.add_argument("--overlap", type=_non_negative, default=s, metavar="N", help="tokens shared by consecutive chunks (default 0)")
    opts.add_argument("--model", default=s, metavar="NAME_OR_PATH", help=f"sentence-transformers model (default: the bundled {DEFAULT_MODEL})")
    opts.add_argument("--k", type=_positive, default=s, metavar="N", help="cut-off for recall, precision and nDCG (default 3)")
    opts.add_argument("--depth", type=_positive, default=s, metavar="N", help="results per retriever (default 10)")
    opts.add_argument("--retrievers", default=s, metavar="LIST", help="comma-separated subset of bm25,vector,hybrid")
    opts.add_argument("--threshold", type=_positive, default=s, metavar="G", help="lowest grade that counts as relevant (trec_eval -l; default 1)")
    opts.add_argument("--bm25-backend", choices=BM25_BACKENDS, default=s, help="rank-bm25 (default) or bm25s")
    opts.add_argument("--annotator", default=s, metavar="NAME", help="who is labelling (default: the login name)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="ragtui",
        description="See whether retrieval found the evidence: BM25, vector and hybrid side by side.",
    )
    parser.add_argument("--version", action="version", version=f"ragtui {__version__}")
    parser.add_argument("--no-mouse", action="store_true", help="the app ignores the mouse (for terminals and SSH sessions that misbehave)")
    _shared_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_eval = sub.add_parser("eval", help="print the metric table of every retriever")
    p_eval.add_argument("--json", action="store_true", help="print the JSON object of DESIGN.md on stdout and nothing else")
    _shared_options(p_eval)
    p_export = sub.add_parser("export", help="write TREC qrels and one run per retriever to DIR")
    p_export.add_argument("dir", type=Path, metavar="DIR")
    _shared_options(p_export)
    p_check = sub.add_parser("check", help="validate the golden set against the chunked corpus; exit 1 on problems")
    _shared_options(p_check)
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from parsed arguments, defaults filled in."""
    values = {**_DEFAULTS, **{k: v for k, v in vars(args).items() if k in _DEFAULTS}}
    retrievers = tuple(r.strip() for r in values["retrievers"].split(",") if r.strip())
    unknown = [r for r in retrievers if r not in RETRIEVER_NAMES]
    if unknown or not retrievers:
        raise InputError(None, f"--retrievers: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(RETRIEVER_NAMES)}")
    chunk_size = values["chunk_size"]
    if chunk_size is None and values["beir"] is None:
        chunk_size = DEFAULT_CHUNK_SIZE
    return Settings(
        corpus=values["corpus"],
        golden=values["golden"],
        beir=values["beir"],
        chunk_size=chunk_size,
        overlap=values["overlap"],
        model=values["model"],
        k=values["k"],
        depth=values["depth"],
        retrievers=retrievers,
        threshold=values["threshold"],
        bm25_backend=values["bm25_backend"],
        annotator=values["annotator"],
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; returns the exit code (0 ok, 1 problems found, 2 bad input or usage)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from(args)
        if args.command is None:
            from ragtui.tui.app import run_app

            return run_app(settings, mouse=not args.no_mouse)
        from ragtui import commands

        if args.command == "eval":
            return commands.run_eval(settings, as_json=args.json)
        if args.command == "export":
            return commands.run_export(settings, args.dir)
        if args.command == "check":
            return commands.run_check(settings)
    except InputError as exc:
        print(f"ragtui: error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    raise AssertionError(args.command)
