"""The shared tmux helper (tests/tmux.py) starts the app at the pane's size.

A shell that tmux starts with ``COLUMNS`` and ``LINES`` in its environment (the test runner's, or the
80x24 a pane had before tmux resized it) passes them on, and the app then draws at that size instead
of the pane's: dash (``/bin/sh``, tmux's shell when ``SHELL`` names none) never updates them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import mini_args
from tests.tmux import Pane, app_env, needs_tmux, shell_command

pytestmark = needs_tmux


def test_the_app_fills_the_pane_whatever_columns_and_lines_say(
    mini: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")
    monkeypatch.setenv("SHELL", "/bin/sh")
    args = [sys.executable, "-m", "ragtui", "--no-project"]
    args += mini_args(mini, "--retrievers", "bm25", "--annotator", "size")
    pane = Pane()
    pane.start(shell_command(args, app_env(tmp_path / "cache")), 110, 32)
    try:
        # Until the bottom row is drawn (the question list is drawn before the footer): a wait for
        # the screen to settle could end in a pause between the two.
        screen = pane.wait_for(
            lambda s: "questions 7" in s and len(s.rstrip("\n").splitlines()) == 32,
            60,
            "the app down to the pane's bottom row",
        )
        rows = screen.rstrip("\n").splitlines()
        assert len(rows) == 32 and max(len(row.rstrip()) for row in rows) > 100, screen
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
