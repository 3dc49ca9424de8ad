"""Issue 23, finding 2 and the footer, through a real terminal: the app in a tmux pane at 80x24 with
TERM=screen (as over SSH), on the bundled set, keys sent as tmux sends them. BM25 alone: the keys
do not depend on the retrievers, and no model is loaded (test_e2e_tmux.py starts the real one)."""

from __future__ import annotations

import re
import shlex
import shutil
import uuid
from pathlib import Path

from ragtui.core.data.paths import bundled_golden
from tests.test_e2e_tmux import ROOT, STARTUP_SECONDS, Pane, pytestmark, ragtui_command

__all__ = ["pytestmark"]


def footer(screen: str) -> str:
    """The last line of the screen (the footer)."""
    return screen.rstrip("\n").splitlines()[-1]


def test_filter_types_minus_and_the_footer_fits_80x24(tmp_path: Path) -> None:
    """``/`` then ``why:fusion-loss`` in one write: the filter reads ``why:fusion-loss`` and k stays
    3 (before: ``why:fusionloss`` and k=2); ``why:label-gap`` and the mark ``why:fuse`` apply; the
    footer ends whole before the palette in every state (before: ``j Jud▏^p palette``)."""
    golden = tmp_path / "golden"
    shutil.copytree(bundled_golden(), golden)
    env = {
        "RAGTUI_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
        "TERM": "screen",
        "PYTHONPATH": str(ROOT),
    }
    args = [
        *ragtui_command(),
        "--golden",
        str(golden),
        "--annotator",
        "tmux",
        "--retrievers",
        "bm25",
    ]
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = f"cd {shlex.quote(str(ROOT))} && env {exports} {shlex.join(args)}; echo RAGTUI-EXIT=$?; sleep 60"
    pane = Pane(f"ragtui-typing-{uuid.uuid4().hex[:8]}")
    pane.start(command, 80, 24)
    try:
        screen = pane.wait_for(
            lambda s: "questions 68" in s and re.search(r"bm25\s+all\s+\d\.\d{3}", s) is not None,
            STARTUP_SECONDS,
            "the question list and the metrics",
        )
        assert "k=3" in screen
        line = footer(screen)
        assert re.search(r"\? Help\s*▏\^p palette", line), line

        # A result list: its keys, then help, whole.
        pane.keys("Tab")
        screen = pane.wait_for(lambda s: "0-9 Grade" in footer(s), 20, "the result list's keys")
        assert re.search(r"j Judge \^q Quit \? Help\s*▏\^p palette", footer(screen)), footer(screen)
        pane.keys("BTab")
        pane.wait_for(lambda s: "s Sort" in footer(s), 20, "the question list's keys")

        # Finding 2: the filter takes - (and +) as text, in one write.
        pane.keys("/")
        pane.wait_for(lambda s: "esc Clear" in footer(s), 20, "the filter input")
        pane.tmux("send-keys", "-t", "e2e", "-l", "why:fusion-loss")
        screen = pane.wait_for(lambda s: "why:fusion-loss" in s, 20, "the text typed")
        assert "why:fusionloss" not in screen
        assert "+- k" not in footer(screen)
        pane.keys("Enter")
        screen = pane.wait_for(
            # The title may end in an ellipsis at 80 columns.
            lambda s: re.search(r"questions \d+/68 · why:fusion-l", s) is not None,
            20,
            "the filter applied in the list's title",
        )
        assert "k=3" in screen and "k=2" not in screen

        # The cause named in docs/app.md, over the previous filter (the slash opens it again).
        pane.keys("/")
        pane.wait_for(lambda s: "esc Clear" in footer(s), 20, "the filter input")
        pane.keys("C-u")
        pane.tmux("send-keys", "-t", "e2e", "-l", "why:label-gap")
        pane.keys("Enter")
        screen = pane.wait_for(
            lambda s: re.search(r"questions \d+/68 · why:label-g", s) is not None,
            20,
            "why:label-gap applied",
        )
        assert "k=3" in screen and "no such cause" not in screen

        # The why column's mark, and a result list's footer with the filter on.
        pane.keys("/")
        pane.wait_for(lambda s: "esc Clear" in footer(s), 20, "the filter input")
        pane.keys("C-u")
        pane.tmux("send-keys", "-t", "e2e", "-l", "why:fuse")
        pane.keys("Enter")
        screen = pane.wait_for(
            lambda s: re.search(r"questions \d+/68 · why:fuse", s) is not None, 20, "why:fuse"
        )
        pane.keys("Tab")
        screen = pane.wait_for(lambda s: "0-9 Grade" in footer(s), 20, "the result list's keys")
        line = footer(screen)
        assert "esc Clear" in line and re.search(r"\? Help\s*▏\^p palette", line), line

        # Out of the filter, + is k again.
        pane.keys("+")
        pane.wait_for(lambda s: "k=4" in s, 20, "k raised by +")
        pane.keys("C-q")
        pane.wait_for(lambda s: "RAGTUI-EXIT=0" in s, 30, "the app to exit with code 0")
    finally:
        pane.kill()
