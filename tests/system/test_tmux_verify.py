"""Issue 25, item 5, in a real terminal: the judging view's verify mode in an 80x24 tmux pane with
``TERM=screen``. The judge's grade and its reason (holding a clear-screen escape) are shown, enter
takes the grade as the person's own, a digit overrides, blind hides the grade and enter then saves
nothing, and ``o o`` records the random sample for the estimate."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ragtui.core.settings import Settings
from tests.app.test_tui_verify import pool_of, write_verdicts
from tests.system.test_tmux_judging import app_args
from tests.tmux import Pane, app_env, needs_tmux, ragtui_command, shell_command

pytestmark = needs_tmux


def test_verify_at_80x24_over_tmux(mini_settings: Settings, tmp_path: Path) -> None:
    """j, v: ``verify · pair 1 of 2``; the judge's row ``llm: grade 2 (answers fully)`` and its
    reason without its ``ESC [2J`` (removed whole, issue 33: the screen is not cleared and no
    parameter is left as text); enter writes tester's 2,
    0 overrides the judge's 1; b hides the row and enter saves nothing; o o draws the sample."""
    settings = dataclasses.replace(mini_settings, retrievers=("bm25",))
    pool = pool_of(settings, "m01")
    write_verdicts(
        settings,
        [
            ("m01", pool[0], 2, "Gives the fare.\x1b[2J Clear?"),
            ("m01", pool[1], 1, "Mentions ferries."),
        ],
    )
    journal = Path(settings.golden) / "labels.jsonl"
    before = len(journal.read_text().splitlines())
    args = [*ragtui_command(), *app_args(settings, "tester")]
    pane = Pane()
    pane.start(shell_command(args, app_env(tmp_path / "cache")), 80, 24)
    try:
        pane.wait_for(lambda s: "judged 0/" in s, 60, "the main screen")
        pane.keys("j")
        pane.wait_for(lambda s: "pair 1 of" in s, 20, "the judging view")
        pane.keys("v")
        screen = pane.wait_for(
            # The judge's rows and the counts too: the assertions below read them.
            lambda s: (
                "verify · pair 1 of 2" in s
                and "⏎ accepts" in s
                and "Gives the fare. Clear?" in s
                and "verified 0/2" in s
            ),
            20,
            "verify mode with the judge's grade and reason",
        )
        rows = screen.splitlines()
        assert len(rows) <= 24
        assert any("llm: grade 2 (answers fully)" in r and "⏎ accepts" in r for r in rows), screen
        assert any("Gives the fare. Clear?" in r for r in rows), screen
        assert "[2J" not in screen
        assert "verified 0/2" in screen and "m01" in screen
        pane.keys("Enter")
        screen = pane.wait_for(
            # The next pair's verdict too: it may be drawn after the count.
            lambda s: "verified 1/2" in s and "Mentions ferries." in s,
            20,
            "the judge's grade accepted and the next pair's verdict",
        )
        assert "llm: grade 1 (partly)" in screen and "Mentions ferries." in screen
        pane.keys("0")
        pane.wait_for(lambda s: "verified 2/2" in s, 20, "the judge's 1 overridden with 0")
        pane.keys("left", "b")
        screen = pane.wait_for(
            lambda s: "blind: the judge's grade and reason are hidden" in s, 20, "blind"
        )
        assert "Mentions ferries." not in screen and "llm" not in screen
        pane.keys("Enter")
        pane.wait_for(lambda s: "you give the grade yourself" in s, 20, "enter refused blind")
        pane.keys("o", "o")
        pane.wait_for(
            lambda s: " · judged " in s and "sample 0/7 judged fully" in s, 20, "the sample order"
        )
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
    lines = [json.loads(x) for x in journal.read_text().splitlines()[before:]]
    assert [(x["chunk"], x["grade"], x["annotator"]) for x in lines] == [
        (pool[0], 2, "tester"),
        (pool[1], 0, "tester"),
    ]
    sample = json.loads((Path(settings.golden) / "sample.json").read_text())
    assert sample["seed"] == 0 and len(sample["questions"]) == 7
