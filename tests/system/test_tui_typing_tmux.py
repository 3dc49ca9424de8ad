"""Issue 23, finding 2 and the footer, through a real terminal: the app in a tmux pane at 80x24 with
TERM=screen (as over SSH), on the bundled set, keys sent as tmux sends them. BM25 alone: the keys
do not depend on the retrievers, and no model is loaded (test_e2e_tmux.py starts the real one)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ragtui.core.data.paths import bundled_golden
from tests.tmux import STARTUP_SECONDS, Pane, app_env, needs_tmux, ragtui_command, shell_command

pytestmark = needs_tmux


def footer(screen: str) -> str:
    """The last line of the screen (the footer)."""
    return screen.rstrip("\n").splitlines()[-1]


def filter_again(pane: Pane, text: str, title: str) -> str:
    """Open the filter over the previous one, type ``text`` in one write and apply it; the screen
    once the list's title shows ``title`` (it may end in an ellipsis at 80 columns)."""
    pane.keys("/")
    pane.wait_for(lambda s: "esc Clear" in footer(s), 20, "the filter input")
    pane.keys("C-u")
    pane.type(text)
    pane.keys("Enter")
    shown = re.compile(rf"questions \d+/68 · {re.escape(title)}")
    return pane.wait_for(lambda s: shown.search(s) is not None, 20, f"{text} applied")


def test_filter_types_minus_and_the_footer_fits_80x24(tmp_path: Path) -> None:
    """``/`` then ``why:fusion-loss`` in one write: the filter reads ``why:fusion-loss`` and k stays
    3 (before: ``why:fusionloss`` and k=2); ``why:label-gap`` and the mark ``why:fuse`` apply; the
    footer ends whole before the palette in every state (before: ``j Jud▏^p palette``)."""
    golden = tmp_path / "golden"
    shutil.copytree(bundled_golden(), golden)
    env = app_env(tmp_path / "cache", XDG_DATA_HOME=str(tmp_path / "data"))
    args = [
        *ragtui_command(),
        "--golden",
        str(golden),
        "--annotator",
        "tmux",
        "--retrievers",
        "bm25",
    ]
    pane = Pane()
    pane.start(shell_command(args, env), 80, 24)
    try:
        screen = pane.wait_for(
            # The footer too: it may be drawn after the metrics (the bottom row is the chunk view
            # until then), and the assertion below reads it.
            lambda s: (
                "questions 68" in s
                and re.search(r"bm25\s+all\s+\d\.\d{3}", s) is not None
                and "^p palette" in footer(s)
            ),
            STARTUP_SECONDS,
            "the question list, the metrics and the footer",
        )
        assert "k=3" in screen
        line = footer(screen)
        assert re.search(r"\? Help\s*▏\^p palette", line), line

        # A result list: its keys, then help, whole.
        pane.keys("Tab")
        screen = pane.wait_for(
            lambda s: (
                "0-9 Grade" in footer(s)
                and re.search(r"j Judge \^q Quit \? Help\s*▏\^p palette", footer(s)) is not None
            ),
            20,
            "the result list's keys",
        )
        assert re.search(r"j Judge \^q Quit \? Help\s*▏\^p palette", footer(screen)), footer(screen)
        pane.keys("BTab")
        pane.wait_for(lambda s: "s Sort" in footer(s), 20, "the question list's keys")

        # Finding 2: the filter takes - (and +) as text, in one write.
        pane.keys("/")
        pane.wait_for(lambda s: "esc Clear" in footer(s), 20, "the filter input")
        pane.type("why:fusion-loss")
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
        screen = filter_again(pane, "why:label-gap", "why:label-g")
        assert "k=3" in screen and "no such cause" not in screen

        # The why column's mark, and a result list's footer with the filter on.
        filter_again(pane, "why:fuse", "why:fuse")
        pane.keys("Tab")
        screen = pane.wait_for(
            lambda s: (
                "0-9 Grade" in footer(s)
                and "esc Clear" in footer(s)
                and re.search(r"\? Help\s*▏\^p palette", footer(s)) is not None
            ),
            20,
            "the result list's keys with the filter on",
        )
        line = footer(screen)
        assert "esc Clear" in line and re.search(r"\? Help\s*▏\^p palette", line), line

        # Out of the filter, + is k again.
        pane.keys("+")
        pane.wait_for(lambda s: "k=4" in s, 20, "k raised by +")
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
