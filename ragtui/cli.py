"""The command line: ``ragtui`` (the app), ``ragtui eval``, ``ragtui export DIR``, ``ragtui check``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragtui import __version__
from ragtui.core.data.chunking import DEFAULT_CHUNK_SIZE
from ragtui.core.data.corpus import MAX_FILE_BYTES
from ragtui.core.data.tokenizer import DEFAULT_MODEL
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES
from ragtui.core.retrieval.bm25 import BM25_BACKENDS
from ragtui.core.retrieval.external import parse_run_spec
from ragtui.core.settings import Settings

if TYPE_CHECKING:
    from ragtui.analysis_commands import EvalOptions

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
    "run": None,
    "max_file_mb": MAX_FILE_BYTES / 1048576,
}


def _whole_number_at_least(minimum: int):
    """An argparse type: a whole number no smaller than ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
        return value

    return parse


_positive = _whole_number_at_least(1)
_non_negative = _whole_number_at_least(0)


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive number")
    return value


def _shared_options(parser: argparse.ArgumentParser) -> None:
    s = argparse.SUPPRESS
    data = parser.add_argument_group("data")
    data.add_argument(
        "--corpus",
        type=Path,
        default=s,
        metavar="DIR",
        help="folder of .md/.txt documents (default: the bundled corpus)",
    )
    data.add_argument(
        "--golden",
        type=Path,
        default=s,
        metavar="DIR",
        help="folder with questions.jsonl and labels.jsonl (default: the bundled golden set)",
    )
    data.add_argument(
        "--beir",
        type=Path,
        default=s,
        metavar="DIR",
        help="a BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/test.tsv) instead of --corpus/--golden",
    )
    opts = parser.add_argument_group("retrieval and metrics")
    opts.add_argument(
        "--chunk-size",
        type=_positive,
        default=s,
        metavar="N",
        help=f"chunk size in tokens (default {DEFAULT_CHUNK_SIZE}; BEIR: whole documents)",
    )
    opts.add_argument(
        "--overlap",
        type=_non_negative,
        default=s,
        metavar="N",
        help="tokens shared by consecutive chunks (default 0)",
    )
    opts.add_argument(
        "--model",
        default=s,
        metavar="NAME_OR_PATH",
        help=f"sentence-transformers model (default: the bundled {DEFAULT_MODEL})",
    )
    opts.add_argument(
        "--k",
        type=_positive,
        default=s,
        metavar="N",
        help="cut-off for recall, precision and nDCG (default 3)",
    )
    opts.add_argument(
        "--depth", type=_positive, default=s, metavar="N", help="results per retriever (default 10)"
    )
    opts.add_argument(
        "--retrievers",
        default=s,
        metavar="LIST",
        help="comma-separated subset of bm25,vector,hybrid",
    )
    opts.add_argument(
        "--threshold",
        type=_positive,
        default=s,
        metavar="G",
        help="lowest grade that counts as relevant (trec_eval -l; default 1)",
    )
    opts.add_argument(
        "--bm25-backend", choices=BM25_BACKENDS, default=s, help="rank-bm25 (default) or bm25s"
    )
    opts.add_argument(
        "--annotator", default=s, metavar="NAME", help="who is labelling (default: the login name)"
    )
    opts.add_argument(
        "--max-file-mb",
        type=_positive_number,
        default=s,
        metavar="MB",
        help=f"largest corpus document read (default {MAX_FILE_BYTES // 1048576}); bigger files are refused",
    )
    opts.add_argument(
        "--run",
        action="append",
        default=s,
        metavar="NAME=PATH",
        help="add a retriever whose rankings come from a TREC run file (repeatable)",
    )


def _analysis_options(p_eval: argparse.ArgumentParser) -> None:
    more = p_eval.add_argument_group("compare and explain")
    more.add_argument(
        "--by-slice", action="store_true", help="also every metric per slice, with question counts"
    )
    more.add_argument("--curve", action="store_true", help="also recall@k for k = 1..depth")
    more.add_argument(
        "--metrics",
        default=None,
        metavar="LIST",
        help="ir_measures names instead of the default columns: R@3,P@3,RR,nDCG@10,nDCG_exp@10,Success@3,Judged@10,AP",
    )
    more.add_argument(
        "--compare",
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="B against A: retrievers, saved runs or RUN:RETRIEVER; randomisation test, bootstrap CI, win/tie/loss",
    )
    more.add_argument(
        "--retriever",
        default=None,
        metavar="NAME",
        help="the retriever a saved run in --compare stands for (default hybrid)",
    )
    more.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the randomisation test and the bootstrap (default 0)",
    )
    more.add_argument(
        "--save",
        default=None,
        metavar="NAME",
        help="save the per-question ranks and values as run NAME",
    )
    more.add_argument(
        "--runs-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where saved runs live (default <golden>/runs)",
    )
    more.add_argument(
        "--explain", default=None, metavar="QID", help="also the hybrid attribution of one question"
    )


def _eval_options(args: argparse.Namespace) -> EvalOptions:
    from ragtui.analysis_commands import EvalOptions

    return EvalOptions(
        by_slice=args.by_slice,
        curve=args.curve,
        metrics=args.metrics,
        compare=tuple(args.compare) if args.compare else None,
        retriever=args.retriever,
        save=args.save,
        runs_dir=args.runs_dir,
        explain=args.explain,
        seed=args.seed,
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="ragtui",
        description="See whether retrieval found the evidence: BM25, vector and hybrid side by side.",
    )
    parser.add_argument("--version", action="version", version=f"ragtui {__version__}")
    parser.add_argument(
        "--no-mouse",
        action="store_true",
        help="the app ignores the mouse (for terminals and SSH sessions that misbehave)",
    )
    _shared_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_eval = sub.add_parser("eval", help="print the metric table of every retriever")
    p_eval.add_argument(
        "--json",
        action="store_true",
        help="print the JSON object of DESIGN.md on stdout and nothing else",
    )
    p_eval.add_argument(
        "--judged",
        action="store_true",
        help="add a judged@k column (share of the top k with a hand grade or evidence match)",
    )
    _analysis_options(p_eval)
    _shared_options(p_eval)
    p_export = sub.add_parser("export", help="write TREC qrels and one run per retriever to DIR")
    p_export.add_argument("dir", type=Path, metavar="DIR")
    _shared_options(p_export)
    p_check = sub.add_parser(
        "check", help="validate the golden set against the chunked corpus; exit 1 on problems"
    )
    _shared_options(p_check)
    p_diff = sub.add_parser(
        "diff", help="the questions that got better or worse between two saved runs, worst first"
    )
    p_diff.add_argument("run_a", metavar="A", help="saved run name (see eval --save) or file")
    p_diff.add_argument("run_b", metavar="B", help="saved run name or file")
    p_diff.add_argument(
        "--retriever", default=None, metavar="NAME", help="the retriever to diff (default hybrid)"
    )
    p_diff.add_argument(
        "--runs-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where saved runs live (default <golden>/runs)",
    )
    p_diff.add_argument(
        "--limit",
        type=_positive,
        default=None,
        metavar="N",
        help="list at most N changed questions",
    )
    p_diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    _shared_options(p_diff)
    p_explain = sub.add_parser(
        "explain",
        help="hybrid attribution of one question: bm25 and vector ranks, RRF terms, ties, pool ceiling",
    )
    p_explain.add_argument("qid", metavar="QID", help="the question id")
    p_explain.add_argument("--json", action="store_true", help="print the attribution as JSON")
    _shared_options(p_explain)
    p_add = sub.add_parser(
        "add-question",
        help="append a question to questions.jsonl (validated, atomic) and show how each retriever ranks it",
    )
    p_add.add_argument("--question", required=True, metavar="TEXT", help="the question text")
    p_add.add_argument(
        "--evidence",
        required=True,
        action="append",
        metavar="TEXT",
        help="exact text a relevant chunk contains (repeat for several)",
    )
    p_add.add_argument(
        "--slice",
        action="append",
        default=[],
        dest="slices",
        metavar="NAME",
        help="a slice the question belongs to (repeatable)",
    )
    p_add.add_argument(
        "--id",
        dest="qid",
        default=None,
        metavar="ID",
        help="the question id (default: the next one, e.g. q69)",
    )
    _shared_options(p_add)
    p_agree = sub.add_parser(
        "agreement",
        help="the evidence rule against the hand grades (and two annotators): tables, Cohen's kappa, disagreements",
    )
    p_agree.add_argument(
        "--annotators",
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="also compare these two annotators",
    )
    _shared_options(p_agree)
    p_labels = sub.add_parser("labels", help="maintain the label journal (labels.jsonl)")
    _shared_options(p_labels)
    labels_sub = p_labels.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    p_compact = labels_sub.add_parser(
        "compact",
        help="rewrite labels.jsonl to one line per labelled pair, atomically, keeping labels.jsonl.bak",
    )
    _shared_options(p_compact)
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from parsed arguments, defaults filled in."""
    values = {**_DEFAULTS, **{k: v for k, v in vars(args).items() if k in _DEFAULTS}}
    retrievers = tuple(r.strip() for r in values["retrievers"].split(",") if r.strip())
    unknown = [r for r in retrievers if r not in RETRIEVER_NAMES]
    if unknown or not retrievers:
        raise InputError(
            None,
            f"--retrievers: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(RETRIEVER_NAMES)}",
        )
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
        max_file_mb=values["max_file_mb"],
        runs=tuple(parse_run_spec(spec) for spec in values["run"] or ()),
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
            return commands.run_eval(
                settings, as_json=args.json, judged=args.judged, options=_eval_options(args)
            )
        if args.command in ("diff", "explain"):
            from ragtui import analysis_commands

            if args.command == "diff":
                return analysis_commands.run_diff(
                    settings,
                    args.run_a,
                    args.run_b,
                    retriever=args.retriever,
                    k=getattr(args, "k", None),
                    runs_dir=args.runs_dir,
                    limit=args.limit,
                    as_json=args.json,
                )
            return analysis_commands.run_explain(
                commands.open_workspace(settings), args.qid, as_json=args.json
            )
        if args.command == "export":
            return commands.run_export(settings, args.dir)
        if args.command == "check":
            return commands.run_check(settings)
        if args.command in ("add-question", "agreement"):
            from ragtui import commands_labelling

            if args.command == "add-question":
                return commands_labelling.run_add_question(
                    settings, args.question, args.evidence, args.slices, args.qid
                )
            return commands_labelling.run_agreement(settings, args.annotators)
        if args.command == "labels":
            return commands.run_labels_compact(settings)
    except InputError as exc:
        print(f"ragtui: error: {exc.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``ragtui eval | head``): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # A folder that cannot be written, a full disk: one line, no traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"ragtui: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    raise AssertionError(args.command)
