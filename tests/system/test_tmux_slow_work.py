"""The real app in tmux: the first ad-hoc query loads the real embedding model with progress (BM25's
list at once), and ctrl+q right then ends the process promptly: quitting never waits for a worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.conftest import ROOT, mini_args
from tests.tmux import Pane, app_env, needs_tmux, ragtui_command, shell_command

pytestmark = needs_tmux

#: The longest ctrl+q may take to end the process (it took 2.1-2.3 s, the exit watchdog's 2 s and
#: more, while a worker loaded the model; 1.5-3.4 s once torch was loaded).
QUIT_SECONDS = 1.5


def test_ctrl_q_during_the_first_adhoc_query_ends_the_process_promptly(
    mini: Path, cache_dir: Path
) -> None:
    args = mini_args(mini, "--annotator", "e2e")
    env = {"RAGTUI_CACHE_DIR": str(cache_dir), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    # Fill the embedding and results caches: the app then starts without the model.
    done = subprocess.run(
        [sys.executable, "-m", "ragtui", "eval", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    pane = Pane()
    pane.start(shell_command([*ragtui_command(), *args], app_env(cache_dir)), 120, 40)
    try:
        # Every retriever ready (hybrid's metrics drawn): typed text is then ranked by all three.
        pane.wait_for(
            lambda s: "questions 7" in s and re.search(r"hybrid\s+all\s+\d\.\d{3}", s) is not None,
            120,
            "the main screen with every retriever ready",
        )
        pane.keys("a")
        pane.wait_for(lambda s: "Type a question and press enter" in s, 30, "the ad-hoc screen")
        # A query never asked before: its embedding is not cached, so the model must load.
        pane.type(f"ferry ticket price {uuid.uuid4().hex[:8]}")
        pane.keys("Enter")
        screen = pane.wait_for(
            # bm25's list too, on the same screen: it may be drawn apart from the loading note.
            lambda s: "loading model" in s and "ferry.md#" in s,
            30,
            "bm25's list while the model loads",
        )
        assert "ferry.md#" in screen, "bm25's list is shown while the model loads"
        started = time.monotonic()
        pane.keys("C-q")
        pane.exited(0)
        took = time.monotonic() - started
    finally:
        pane.kill()
    assert took < QUIT_SECONDS, f"ctrl+q took {took:.2f} s with a worker loading the model"
