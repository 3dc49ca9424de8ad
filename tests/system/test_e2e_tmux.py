"""End to end: the real ``ragtui`` (or ``python -m ragtui``) in a tmux pane, driven by keys, read back
from the screen, with the real embedding model and a temporary embedding cache."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.conftest import mini_args
from tests.tmux import STARTUP_SECONDS, Pane, app_env, needs_tmux, ragtui_command, shell_command

pytestmark = needs_tmux


def test_real_app_in_tmux_grade_and_quit(mini: Path, tmp_path: Path) -> None:
    """Start the app at 100x30 with TERM=screen, wait for the vector list, grade a chunk 0, quit."""
    args = [*ragtui_command(), *mini_args(mini, "--annotator", "e2e")]
    pane = Pane()
    pane.start(shell_command(args, app_env(tmp_path / "cache")), 100, 30)
    try:
        shown = (
            "m01",
            "How much is a return ferry ticket?",
            "ferry.md#1",
            "evidence",
            "Quit",
            "Help",
        )
        screen = pane.wait_for(
            # All that is read below: the lists, the chunk, the metrics and the footer are drawn apart.
            lambda s: (
                "questions 7" in s
                and re.search(r"vector\s+all\s+\d\.\d{3}", s) is not None
                and re.search(r"bm25\s+all\s+\d\.\d{3}", s) is not None
                and all(text in s for text in shown)
            ),
            STARTUP_SECONDS,
            "the question list, the vector results, the chunk and the footer",
        )
        assert "m01" in screen and "How much is a return ferry ticket?" in screen
        assert "ferry.md#1" in screen and "evidence" in screen
        assert re.search(r"bm25\s+all\s+1\.000", screen)
        assert "Quit" in screen and "Help" in screen
        # Focus the bm25 list (its first chunk, ferry.md#1, is m01's only relevant chunk) and grade it 0.
        pane.keys("Tab")
        pane.wait_for(lambda s: "Grade" in s, 30, "the result list's keys in the footer")
        pane.keys("0")
        screen = pane.wait_for(
            # m01's metrics too: they may be redrawn after the grade line.
            lambda s: (
                "grade 0 (hand)" in s
                and re.search(r"m01\s+0\.000\s+0\.000\s+0\.000\s+0\.000\s+0\.000", s) is not None
            ),
            30,
            "the hand grade and m01's metrics on screen",
        )
        assert re.search(r"m01\s+0\.000\s+0\.000\s+0\.000\s+0\.000\s+0\.000", screen)
        journal = [
            json.loads(line) for line in (mini / "golden" / "labels.jsonl").read_text().splitlines()
        ]
        assert journal[-1]["question"] == "m01"
        assert journal[-1]["chunk"] == "ferry.md#1"
        assert journal[-1]["grade"] == 0
        assert journal[-1]["annotator"] == "e2e"
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
    assert os.path.isdir(tmp_path / "cache")
