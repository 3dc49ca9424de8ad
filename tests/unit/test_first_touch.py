"""The first touch: ``--help`` of ragtui and of every command (found by walking the parser, so a new
command is covered without editing this file) exits 0 and prints its usage."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ragtui.cli.main import build_parser, main


def _command_paths(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    paths = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths += _command_paths(sub, (*prefix, name))
    return paths


COMMANDS = _command_paths(build_parser())


def test_the_walk_finds_every_command() -> None:
    names = {path[0] for path in COMMANDS if path}
    assert {"eval", "export", "check", "why", "judge", "serve", "init", "labels"} <= names
    assert ("labels", "compact") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ragtui")
def test_help_exits_0(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*path, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ragtui" + "".join(" " + p for p in path))


#: The one required argument of the commands that have one, and the exit each gives on the bundled
#: data with no option (docs/commands.md: 0 ran, 1 ran and found problems, 2 bad input or usage).
FIRST_RUN: dict[tuple[str, ...], tuple[list[str], set[int]]] = {
    ("eval",): ([], {0}),
    ("export",): (["{tmp}/export"], {0}),
    ("check",): ([], {0, 1}),
    ("diff",): (["a", "b"], {2}),  # no saved run yet: one line
    ("explain",): (["q01"], {0}),
    ("why",): ([], {0}),
    ("retire",): (["q01"], {0}),
    ("add-question",): (["--question", "Who?", "--evidence", "Kromme Vaart"], {0}),
    ("agreement",): ([], {0}),
    ("sample",): ([], {0}),
    ("labels",): ([], {0, 2}),
    ("labels", "compact"): ([], {2}),  # no journal yet on the bundled set: one line
    ("index",): ([], {2}),  # needs --milvus URI and --collection NAME
    ("experiment",): ([], {0, 2}),
    ("config",): ([], {0}),
    ("init",): (["{tmp}/project"], {0}),
    ("report",): ([], {0}),
    ("judge",): ([], {2}),  # needs a judge
}


@pytest.mark.parametrize(
    "path", [p for p in COMMANDS if p and p[0] != "serve"], ids=lambda p: " ".join(p)
)
def test_every_command_runs_on_the_bundled_data(
    path: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_cache_env: None,
) -> None:
    """Each command with no option (or its one required argument) on the bundled data exits as
    documented, with at most one line on stderr per error and never a traceback. ``serve`` is the
    browser test's (it runs until stopped)."""
    assert path in FIRST_RUN, f"{' '.join(path)}: add the command to FIRST_RUN"
    monkeypatch.chdir(tmp_path)  # no project file, and anything written goes here
    # The user's copy of the bundled set is this test's own: retire and add-question write to it.
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    extra, exits = FIRST_RUN[path]
    argv = [*path, *(a.format(tmp=tmp_path) for a in extra)]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    assert code in exits, (code, captured.err[-2000:])
    assert "Traceback" not in captured.err + captured.out
    errors = [line for line in captured.err.splitlines() if "error" in line]
    assert all(line.startswith("ragtui: error:") for line in errors), errors


def test_the_app_command_line_is_read_as_the_whole_parser_reads_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 34: a command line naming no command (the app) is read without building every
    command's parser; it reads exactly as the whole parser reads it, its errors are the whole
    parser's, and the list of command names it looks for is the parser's."""
    from ragtui.cli.main import COMMANDS as NAMES
    from ragtui.cli.main import parse

    assert {path[0] for path in COMMANDS if path} == NAMES
    for argv in (
        [],
        ["--annotator", "zoe", "--k", "5"],
        ["--no-mouse", "--golden", "g", "--retrievers", "bm25,vector", "--depth", "20"],
        ["--golden", "eval"],  # a folder named like a command
        ["--gold", "g"],  # an abbreviation
    ):
        assert vars(parse(argv)) == vars(build_parser().parse_args(argv)), argv
    for argv in (["--bogus"], ["foo"], ["--k", "x"], ["--k"]):
        with pytest.raises(SystemExit) as fast:
            parse(argv)
        fast_err = capsys.readouterr().err
        with pytest.raises(SystemExit) as whole:
            build_parser().parse_args(argv)
        assert (fast.value.code, fast_err) == (whole.value.code, capsys.readouterr().err), argv
