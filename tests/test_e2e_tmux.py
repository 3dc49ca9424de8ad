"""End to end: the real ``ragtui`` (or ``python -m ragtui``) in a tmux pane, driven by keys, read back
from the screen, with the real embedding model and a temporary embedding cache."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TMUX = shutil.which("tmux")

pytestmark = pytest.mark.skipif(
    TMUX is None, reason="tmux is not installed: this test drives the real app in a tmux pane"
)

#: How long to wait for the app (the first start imports torch and encodes with the real model).
STARTUP_SECONDS = 90.0


def ragtui_command() -> list[str]:
    """The installed ``ragtui`` script, else ``python -m ragtui`` from this checkout."""
    script = shutil.which("ragtui")
    return [script] if script else [sys.executable, "-m", "ragtui"]


class Pane:
    """One tmux session on a private server socket, so no other tmux session is touched."""

    def __init__(self, socket: str) -> None:
        """A pane on the tmux server ``socket`` (started by ``start``)."""
        self.socket = socket

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this server and return its output."""
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.socket, *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        return done.stdout

    def start(self, command: str, width: int, height: int) -> None:
        """Start ``command`` in a detached session of the given size."""
        self.tmux("new-session", "-d", "-s", "e2e", "-x", str(width), "-y", str(height), command)

    def screen(self) -> str:
        """The visible text of the pane."""
        return self.tmux("capture-pane", "-p", "-t", "e2e")

    def keys(self, *keys: str) -> None:
        """Send keys (tmux names: Tab, C-q, or literal text)."""
        self.tmux("send-keys", "-t", "e2e", *keys)

    def wait_for(self, check: Callable[[str], bool], seconds: float, what: str) -> str:
        """Poll the screen until ``check`` holds; fail with the last screen otherwise."""
        deadline = time.monotonic() + seconds
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if check(text):
                return text
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{text}")

    def kill(self) -> None:
        """Stop this private tmux server (and the app in it) and remove its socket file."""
        socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip()
        self.tmux("kill-server")
        if socket_path:
            Path(socket_path).unlink(missing_ok=True)


def test_real_app_in_tmux_grade_and_quit(mini: Path, tmp_path: Path) -> None:
    """Start the app at 100x30 with TERM=screen, wait for the vector list, grade a chunk 0, quit."""
    env = {
        "RAGTUI_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "TERM": "screen",
        "PYTHONPATH": str(ROOT),
    }
    args = [
        *ragtui_command(),
        "--corpus",
        str(mini / "corpus"),
        "--golden",
        str(mini / "golden"),
        "--chunk-size",
        "48",
        "--annotator",
        "e2e",
    ]
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = f"cd {shlex.quote(str(ROOT))} && env {exports} {shlex.join(args)}; echo RAGTUI-EXIT=$?; sleep 60"
    pane = Pane(f"ragtui-e2e-{uuid.uuid4().hex[:8]}")
    pane.start(command, 100, 30)
    try:
        screen = pane.wait_for(
            lambda s: "questions 7" in s and re.search(r"vector\s+all\s+\d\.\d{3}", s) is not None,
            STARTUP_SECONDS,
            "the question list and the vector results",
        )
        assert "m01" in screen and "How much is a return ferry ticket?" in screen
        assert "ferry.md#1" in screen and "evidence" in screen
        assert re.search(r"bm25\s+all\s+1\.000", screen)
        assert "Quit" in screen and "Help" in screen
        # Focus the bm25 list (its first chunk, ferry.md#1, is m01's only relevant chunk) and grade it 0.
        pane.keys("Tab")
        pane.wait_for(lambda s: "Grade" in s, 30, "the result list's keys in the footer")
        pane.keys("0")
        screen = pane.wait_for(lambda s: "grade 0 (hand)" in s, 30, "the hand grade on screen")
        assert re.search(r"m01\s+0\.000\s+0\.000\s+0\.000\s+0\.000\s+0\.000", screen)
        journal = [
            json.loads(line) for line in (mini / "golden" / "labels.jsonl").read_text().splitlines()
        ]
        assert journal[-1]["question"] == "m01"
        assert journal[-1]["chunk"] == "ferry.md#1"
        assert journal[-1]["grade"] == 0
        assert journal[-1]["annotator"] == "e2e"
        pane.keys("C-q")
        pane.wait_for(lambda s: "RAGTUI-EXIT=0" in s, 30, "the app to exit with code 0")
    finally:
        pane.kill()
    assert os.path.isdir(tmp_path / "cache")
