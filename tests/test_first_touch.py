"""The first touch: ``--help`` of ragtui and of every command (found by walking the parser, so a new
command is covered without editing this file) exits 0 and prints its usage."""

from __future__ import annotations

import argparse

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
