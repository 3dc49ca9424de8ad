"""The entry point: the argument parser (built from the shared option table) and the dispatch."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ragtui import __version__
from ragtui.cli import dataclass_cache
from ragtui.core.errors import InputError
from ragtui.core.options import OPTIONS, OptionError, path, seed, whole_number
from ragtui.core.project import Effective, effective_settings, project_for
from ragtui.core.settings import Settings
from ragtui.core.text import not_utf8, visible_line

if TYPE_CHECKING:
    from ragtui.cli.evaluate import EvalOptions
    from ragtui.core.analysis.gate import Threshold


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, as every other error is."""

    def error(self, message: str) -> NoReturn:
        """``ragtui: error: MESSAGE (ragtui COMMAND --help lists the options)``, exit 2."""
        hint = f"{self.prog} --help lists the options"
        self.exit(2, f"ragtui: error: {visible_line(message)} ({hint})\n")


def _argparse_type(parse: Any) -> Any:
    """An option's parser as an argparse type (argparse reports its message as the problem)."""

    def convert(raw: str) -> Any:
        try:
            return parse(raw)
        except OptionError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


#: A count of the command's own (``--limit``, ``--batch``, ``--sample``): up to a thousand million.
_positive = _argparse_type(whole_number(1, 1_000_000_000))
#: A file or folder named on the command line (not empty, no NUL).
_path = _argparse_type(path)
#: A seed of the randomisation tests and samples: 0 to 2**32 - 1.
_seed = _argparse_type(seed)


def _help_text(text: str) -> str:
    """An option's help as argparse takes it: a literal ``%`` ("95 % interval") is doubled, since
    argparse %-formats every help string."""
    return text.replace("%", "%%")


def _shared_options(parser: argparse.ArgumentParser) -> None:
    """The options every command takes, from ``ragtui.core.options.OPTIONS``.

    Their argparse default is SUPPRESS, so an option may come before or after the command name.
    """
    groups: dict[str, Any] = {}
    for option in OPTIONS:
        if option.flag in parser._option_string_actions:
            # The command's own option of that flag wins (agreement --judge NAME: one judge's tables).
            continue
        group = groups.get(option.group)
        if group is None:
            group = groups[option.group] = parser.add_argument_group(option.group)
        if option.metavar is None:  # a switch: the flag alone turns it on
            group.add_argument(
                option.flag,
                dest=option.name,
                action="store_true",
                default=argparse.SUPPRESS,
                help=_help_text(option.help),
            )
            continue
        group.add_argument(
            option.flag,
            dest=option.name,
            type=_argparse_type(option.parse),
            default=argparse.SUPPRESS,
            metavar=option.metavar,
            action="append" if option.repeatable else "store",
            help=_help_text(option.help),
        )
    project = groups.get("project file") or parser.add_argument_group("project file")
    project.add_argument(
        "--project",
        type=_path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="read this project file (default: ragtui.toml, or pyproject.toml with [tool.ragtui], "
        "in the working folder or a parent)",
    )
    project.add_argument(
        "--no-project",
        action="store_true",
        default=argparse.SUPPRESS,
        help="read no project file: only flags and defaults",
    )


def _threshold(raw: str) -> Threshold:
    """``--fail-under`` as an argparse type (a bad value is a usage error, before anything loads)."""
    from ragtui.core.analysis.gate import parse_threshold

    try:
        return parse_threshold(raw)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.problem.removeprefix("--fail-under: ")) from None


def _gate_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-under",
        dest="fail_under",
        type=_threshold,
        action="append",
        default=[],
        metavar="[RETRIEVER:]METRIC=VALUE",
        help="exit 1 when a mean falls below VALUE, naming each shortfall: recall@3=0.8, nDCG@3=0.7, "
        "hybrid:R@3=0.9 (every retriever shown unless one is named; repeatable)",
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
        "--seed",
        type=_seed,
        default=0,
        metavar="N",
        help="seed of the randomisation test and the bootstrap (default 0)",
    )
    more.add_argument(
        "--save",
        default=None,
        metavar="NAME",
        help="save the per-question ranks and values as run NAME (an existing run NAME needs --replace)",
    )
    more.add_argument(
        "--replace",
        action="store_true",
        help="with --save: replace an existing run NAME, keeping the old one as NAME.json.<time>.bak",
    )
    more.add_argument(
        "--runs-dir",
        type=_path,
        default=None,
        metavar="DIR",
        help="where saved runs live (default <golden>/runs)",
    )
    more.add_argument(
        "--explain", default=None, metavar="QID", help="also the hybrid attribution of one question"
    )


def _eval_options(args: argparse.Namespace) -> EvalOptions:
    from ragtui.cli.evaluate import EvalOptions

    return EvalOptions(
        by_slice=args.by_slice,
        curve=args.curve,
        metrics=args.metrics,
        compare=tuple(args.compare) if args.compare else None,
        retriever=plain_retriever(args),
        save=args.save,
        replace=args.replace,
        runs_dir=args.runs_dir,
        explain=args.explain,
        seed=args.seed,
        estimate_judge=args.estimate_judge,
    )


#: The commands' names, one subparser each in ``build_parser`` (a test keeps the two the same).
COMMANDS = frozenset(
    [
        "eval",
        "export",
        "check",
        "diff",
        "explain",
        "why",
        "retire",
        "add-question",
        "agreement",
        "index",
        "labels",
        "experiment",
        "config",
        "init",
        "report",
        "serve",
        "judge",
        "sample",
    ]
)


class _Refused(Exception):
    """The top level alone cannot read this command line (``parse``)."""


class _TopParser(_Parser):
    """The top level without the commands: its refusal goes to the whole parser."""

    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


def _top_parser(kind: type[_Parser] = _Parser) -> argparse.ArgumentParser:
    """``ragtui``'s own options (the app's), without the commands."""
    parser = kind(
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
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments. A command line that names no command (the app) is read by the top level
    alone: building every command's parser took 26 ms before the app's first screen. Any other,
    a help and any the top level refuses are read by the whole parser, whose help and errors
    they are."""
    given = sys.argv[1:] if argv is None else list(argv)
    if not COMMANDS.intersection(given) and not {"-h", "--help"}.intersection(given):
        top = _top_parser(_TopParser)
        top.set_defaults(command=None)
        try:
            return top.parse_args(given)
        except _Refused:
            pass
    return build_parser().parse_args(given)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_eval = sub.add_parser("eval", help="print the metric table of every retriever")
    p_eval.add_argument(
        "--json",
        action="store_true",
        help="print the JSON object on stdout and nothing else (every key: docs/json.md)",
    )
    p_eval.add_argument(
        "--judged",
        action="store_true",
        help="add a judged@k column (share of the top k with a hand grade or evidence match)",
    )
    from ragtui.cli.estimate import add_judge_option

    add_judge_option(p_eval)
    _analysis_options(p_eval)
    _gate_option(p_eval)
    _shared_options(p_eval)
    p_export = sub.add_parser("export", help="write TREC qrels and one run per retriever to DIR")
    p_export.add_argument("dir", type=_path, metavar="DIR")
    _shared_options(p_export)
    p_check = sub.add_parser(
        "check", help="validate the golden set against the chunked corpus; exit 1 on problems"
    )
    p_check.add_argument(
        "--verbose",
        action="store_true",
        help="list every chunk longer than the model reads and every evidence string in a cut-off "
        "tail (default: the ten longest, the count of the rest)",
    )
    _shared_options(p_check)
    p_diff = sub.add_parser(
        "diff", help="the questions that got better or worse between two saved runs, worst first"
    )
    p_diff.add_argument("run_a", metavar="A", help="saved run name (see eval --save) or file")
    p_diff.add_argument("run_b", metavar="B", help="saved run name or file")
    p_diff.add_argument(
        "--runs-dir",
        type=_path,
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
    p_why = sub.add_parser(
        "why",
        help="why each miss happened: causes by retriever with remedy ceilings, or one question's causes with their evidence",
    )
    p_why.add_argument(
        "qid", nargs="?", default=None, metavar="QID", help="one question (default: the whole set)"
    )
    p_why.add_argument(
        "--by-slice", action="store_true", help="also the causes and the best remedy per slice"
    )
    p_why.add_argument(
        "--json", action="store_true", help="print the causes as JSON (every key: docs/json.md)"
    )
    _shared_options(p_why)
    p_retire = sub.add_parser(
        "retire",
        help='retire a question: left out of every mean, kept in questions.jsonl with "retired": true',
    )
    p_retire.add_argument("qid", metavar="QID", help="the question id")
    p_retire.add_argument(
        "--restore", action="store_true", help="bring a retired question back into the metrics"
    )
    _shared_options(p_retire)
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
        help="the evidence rule against the hand grades (and two annotators), then each model judge against the rule and the people: tables, Cohen's kappa, disagreements",
    )
    p_agree.add_argument(
        "--annotators",
        nargs=2,
        default=None,
        metavar=("A", "B"),
        help="also compare these two annotators",
    )
    p_agree.add_argument(
        "--judge",
        dest="agreement_judge",
        default=None,
        metavar="NAME",
        help="the model judges' tables for this judge only (default: every judge with verdicts)",
    )
    p_agree.add_argument(
        "--json",
        action="store_true",
        help="print the model judges' agreement as JSON (docs/json.md) and nothing else",
    )
    _shared_options(p_agree)
    from ragtui.cli.estimate import add_sample_parser

    _shared_options(add_sample_parser(sub, _positive, _seed))
    p_index = sub.add_parser(
        "index",
        help="write the chunks, their embeddings and a BM25 function into a Milvus collection (--milvus URI --collection NAME)",
    )
    p_index.add_argument(
        "--batch",
        type=_positive,
        default=512,
        metavar="N",
        help="chunks written per request (default 512)",
    )
    p_index.add_argument(
        "--replace",
        action="store_true",
        help="drop the collection first when it was built from other chunks or another model",
    )
    p_index.add_argument(
        "--vector-index",
        choices=("FLAT", "HNSW", "AUTOINDEX"),
        default="FLAT",
        help="the vector index (default FLAT: exact, as the built-in vector search)",
    )
    _shared_options(p_index)
    p_labels = sub.add_parser("labels", help="maintain the label journal (labels.jsonl)")
    _shared_options(p_labels)
    labels_sub = p_labels.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    p_compact = labels_sub.add_parser(
        "compact",
        help="rewrite labels.jsonl to each annotator's current label per pair (and the adjudicated "
        "one), atomically, keeping the old file as a new labels.jsonl.<time>.bak",
    )
    _shared_options(p_compact)
    _project_commands(sub)
    _experiment_command(sub)
    from ragtui.cli.judge import add_judge_parser

    _shared_options(add_judge_parser(sub, _positive, _seed))
    return parser


def _experiment_command(sub: Any) -> None:
    """``experiment``: the project file's variants side by side, with significance."""
    from ragtui.core.metrics.significance import CORRECTIONS

    p_exp = sub.add_parser(
        "experiment",
        help="evaluate every [variants.NAME] of the project file against the baseline variant: "
        "one table of variant x retriever x measure with p-values corrected for the comparisons",
    )
    p_exp.add_argument(
        "--json", action="store_true", help="print the table as JSON (every key: docs/json.md)"
    )
    p_exp.add_argument(
        "--metrics",
        default=None,
        metavar="LIST",
        help="ir_measures names (default R@k,RR,nDCG@k)",
    )
    p_exp.add_argument(
        "--correction",
        choices=tuple(CORRECTIONS),
        default="holm",
        help="holm (default: no false 'significant' anywhere in the table, at 95 %%) or bh "
        "(Benjamini-Hochberg: at most 5 %% of the significant ones false, expected)",
    )
    p_exp.add_argument(
        "--seed",
        type=_seed,
        default=0,
        metavar="N",
        help="seed of the randomisation tests and the bootstraps (default 0)",
    )
    p_exp.add_argument(
        "--runs-dir",
        type=_path,
        default=None,
        metavar="DIR",
        help="where each variant is saved as a run named after it (default <golden>/runs)",
    )
    p_exp.add_argument("--no-save", action="store_true", help="do not save the variants as runs")
    p_exp.add_argument(
        "--replace",
        action="store_true",
        help="replace saved runs named like a variant, keeping each old one as NAME.json.<time>.bak",
    )
    _shared_options(p_exp)


def _project_commands(sub: Any) -> None:
    """``config``, ``init``, ``report`` and ``serve``: a project of your own, reports for CI, the app in a browser."""
    p_config = sub.add_parser(
        "config", help="print every option's effective value and where it came from"
    )
    p_config.add_argument("--json", action="store_true", help="print the settings as JSON")
    _shared_options(p_config)
    p_init = sub.add_parser(
        "init",
        help="create a project in DIR: ragtui.toml (commented), corpus/, golden/questions.jsonl",
    )
    p_init.add_argument("dir", type=_path, metavar="DIR")
    p_init.add_argument(
        "--handbook",
        action="store_true",
        help="copy the bundled handbook into corpus/ (the example question then matches it)",
    )
    p_init.add_argument(
        "--from-beir",
        type=_path,
        default=None,
        metavar="BEIR_DIR",
        help="start from a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/test.tsv); labels go to DIR/golden",
    )
    p_report = sub.add_parser(
        "report",
        help="write the metric, per-slice, baseline and recall@k tables as Markdown or a self-contained HTML page",
    )
    p_report.add_argument(
        "--format",
        dest="report_format",
        choices=("markdown", "html"),
        default="markdown",
        help="markdown (default: for a pull request or a step summary) or html (one self-contained page with an SVG plot)",
    )
    p_report.add_argument(
        "--output", type=_path, default=None, metavar="FILE", help="write here (default: stdout)"
    )
    p_report.add_argument(
        "--baseline",
        default=None,
        metavar="RUN",
        help="compare against this saved run (a name from eval --save, or a file)",
    )
    p_report.add_argument(
        "--runs-dir",
        type=_path,
        default=None,
        metavar="DIR",
        help="where saved runs live (default <golden>/runs)",
    )
    p_report.add_argument(
        "--seed",
        type=_seed,
        default=0,
        metavar="N",
        help="seed of the significance tests (default 0)",
    )
    from ragtui.cli.estimate import add_judge_option

    add_judge_option(p_report)
    _gate_option(p_report)
    _shared_options(p_report)
    p_serve = sub.add_parser(
        "serve", help="serve the app in a web browser (textual-serve), on 127.0.0.1 by default"
    )
    p_serve.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    p_serve.add_argument(
        "--port",
        type=_argparse_type(whole_number(1)),
        default=8000,
        metavar="PORT",
        help="port to listen on (default 8000)",
    )
    p_serve.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help="the address browsers use, when it differs from http://HOST:PORT (a proxy, 0.0.0.0)",
    )
    p_serve.add_argument(
        "--max-sessions",
        type=_argparse_type(whole_number(1, 1000)),
        default=3,
        metavar="N",
        help="at most N app processes (browser tabs) at once (default 3)",
    )
    p_serve.add_argument(
        "--no-token",
        action="store_true",
        help="serve without the token in the printed address (any local user can then use the app)",
    )
    p_serve.add_argument(
        "--annotators",
        type=_path,
        default=None,
        metavar="FILE",
        help='one token per person (a TOML file of name = "token"): each tab grades under the '
        "name of the token it was opened with (docs/serve.md)",
    )
    p_serve.add_argument(
        "--no-spare",
        action="store_true",
        help="start each tab's app when the tab opens, instead of keeping one started ahead",
    )
    _shared_options(p_serve)


def effective_from(args: argparse.Namespace) -> Effective:
    """The settings a command runs with: the project file's values, overridden by the flags given."""
    names = {o.name for o in OPTIONS}
    flags = {k: v for k, v in vars(args).items() if k in names}
    if "live_retrievers" in flags and args.command in ("eval", "diff"):
        # A plain NAME keeps its old meaning there: the retriever a saved run stands for.
        flags["live_retrievers"] = [v for v in flags["live_retrievers"] if not isinstance(v, str)]
    project = project_for(
        Path.cwd(),
        getattr(args, "project", None),
        disabled=getattr(args, "no_project", False),
    )
    return effective_settings(flags, project)


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from parsed arguments (and the project file in force), defaults filled in."""
    return effective_from(args).settings


def plain_retriever(args: argparse.Namespace) -> str | None:
    """The last ``--retriever NAME`` given without ``=SPEC``: the retriever a saved run stands for (eval --compare, diff)."""
    names = [v for v in getattr(args, "live_retrievers", ()) if isinstance(v, str)]
    return names[-1] if names else None


#: Arguments that may name a file as well as a saved run: their bytes need not be UTF-8.
_PATH_LIKE = frozenset({"run_a", "run_b"})
#: How an argument is named in a message when its flag is not ``--`` + its name.
_ARGUMENT_NAMES = {"qid": "the question id", "slices": "--slice", "labels_command": "ACTION"}


def _refuse_undecodable(args: argparse.Namespace) -> None:
    """An argument that is text (a question, a name) must be UTF-8: it ends up in JSON files.

    A file name's bytes need not be (those arguments are ``Path`` objects, or named in ``_PATH_LIKE``).
    """
    for dest, value in vars(args).items():
        if dest in _PATH_LIKE:
            continue
        for item in value if isinstance(value, list | tuple) else [value]:
            bad = not_utf8(item) if isinstance(item, str) else None
            if bad is not None:
                name = _ARGUMENT_NAMES.get(dest, "--" + dest.replace("_", "-"))
                raise InputError(None, f"{name}: not UTF-8 text ({bad})")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; returns the exit code (0 ok, 1 problems found, 2 bad input or usage)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        # An option's own check (``--run NAME=PATH``) may raise InputError while parsing.
        args = parse(argv)
    except InputError as exc:
        print(f"ragtui: error: {exc.message}", file=sys.stderr)
        return 2
    try:
        _refuse_undecodable(args)
        if args.command == "init":
            from ragtui.cli.project import run_init

            return run_init(args.dir, handbook=args.handbook, from_beir=args.from_beir)
        effective = effective_from(args)
        if effective.project is not None and effective.project.found_in_parent:
            # Said by every command (on stderr: stdout may be JSON): it may not be the file meant.
            print(
                visible_line(
                    f"ragtui: using project file {effective.project.path} (found in a parent folder)"
                ),
                file=sys.stderr,
            )
        settings = effective.settings
        if args.command is None:
            # No garbage collection while the app starts: a full one walked every object the
            # imports and the workspace made (three of them, 0.2-0.3 s each, at 100,000
            # questions). The app turns it back on once the loaded workspace is on screen
            # (ragtui.tui.heap.Heap.settle).
            gc.disable()
            # The load started while the app is imported: parsing the tokenizer and reading and
            # checking the caches let go of the interpreter lock, so a second core does that part.
            from ragtui.core.workspace.first_load import FirstLoad

            first = FirstLoad(settings)
            from ragtui.tui.app import run_app

            dataclass_cache.save()  # what the app's imports compiled, for the next start
            return run_app(settings, mouse=not args.no_mouse, first=first)
        if args.command == "config":
            from ragtui.cli.project import run_config

            return run_config(effective, as_json=args.json)
        if args.command == "serve":
            try:
                from ragtui.cli.serve import run_serve
            except ImportError:  # textual-serve, or aiohttp that comes with it
                raise InputError(
                    None,
                    'ragtui serve needs the serve extra (textual-serve): pip install "ragtui[serve]"',
                ) from None

            return run_serve(
                args,
                host=args.host,
                port=args.port,
                public_url=args.public_url,
                max_sessions=args.max_sessions,
                token_required=not args.no_token,
                spare=not args.no_spare,
                annotators=args.annotators,
            )
        try:
            return _run(args, settings)
        finally:
            dataclass_cache.save()  # what the command's imports compiled, for the next run
    except InputError as exc:
        print(f"ragtui: error: {exc.message}", file=sys.stderr)  # message is made visible
        return 2
    except BrokenPipeError:
        # The reader went away (``ragtui eval | head``): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # A folder that cannot be written, a full disk: one line, no traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(visible_line(f"ragtui: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C: one line and the shell's code for SIGINT (live requests run in daemon threads).
        print("ragtui: interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace, settings: Settings) -> int:
    """Run the command ``args`` names (``main`` starts the app, init, config and serve itself)."""
    command = args.command
    if command in ("eval", "export", "diff", "explain"):
        from ragtui.cli import evaluate

        if command == "eval":
            return evaluate.run_eval(
                settings,
                as_json=args.json,
                judged=args.judged,
                options=_eval_options(args),
                fail_under=args.fail_under,
            )
        if command == "export":
            return evaluate.run_export(settings, args.dir)
        if command == "diff":
            return evaluate.run_diff(
                settings,
                args.run_a,
                args.run_b,
                retriever=plain_retriever(args),
                k=getattr(args, "k", None),
                runs_dir=args.runs_dir,
                limit=args.limit,
                as_json=args.json,
            )
        return evaluate.run_explain(settings, args.qid, as_json=args.json)
    if command == "experiment":
        from ragtui.cli.experiment import run_experiment_command

        return run_experiment_command(
            settings,
            as_json=args.json,
            metrics=args.metrics,
            correction=args.correction,
            seed=args.seed,
            runs_dir=args.runs_dir,
            save=not args.no_save,
            replace=args.replace,
        )
    if command == "sample":
        from ragtui.cli.estimate import run_sample

        return run_sample(
            settings, args.size, args.seed, design=args.design, by=args.by, as_json=args.json
        )
    if command == "judge":
        from ragtui.cli.judge import judge_ask, run_judge

        return run_judge(settings, judge_ask(args), as_json=args.json)
    if command == "why":
        from ragtui.cli.why import run_why

        return run_why(settings, args.qid, by_slice=args.by_slice, as_json=args.json)
    if command == "index":
        from ragtui.cli.live import run_index

        return run_index(
            settings, batch=args.batch, replace=args.replace, vector_index=args.vector_index
        )
    if command == "report":
        from ragtui.cli.report import run_report

        return run_report(
            settings,
            fmt=args.report_format,
            output=args.output,
            baseline=args.baseline,
            runs_dir=args.runs_dir,
            fail_under=args.fail_under,
            seed=args.seed,
            estimate_judge=args.estimate_judge,
        )
    from ragtui.cli import golden

    if command == "check":
        return golden.run_check(settings, verbose=args.verbose)
    if command == "retire":
        return golden.run_retire(settings, args.qid, restore=args.restore)
    if command == "add-question":
        return golden.run_add_question(
            settings, args.question, args.evidence, args.slices, args.qid
        )
    if command == "agreement":
        return golden.run_agreement(
            settings, args.annotators, args.agreement_judge, as_json=args.json
        )
    if command == "labels":
        return golden.run_labels_compact(settings)
    raise AssertionError(command)
