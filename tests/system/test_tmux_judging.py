"""Issue 23 in a real terminal: the app in an 80x24 tmux pane with ``TERM=screen``, as a second
annotator. Finding 3: a chunk under a long MkDocs heading path shows its ranks and grade line.
Finding 4: ``--annotator bob`` has every pair alice graded still to judge, one digit a pair."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.system.test_tui_judging import CORS_CHUNK, add_cors_page, grade_as
from tests.tmux import Pane, app_env, needs_tmux, ragtui_command, shell_command

pytestmark = needs_tmux


def test_second_annotator_at_80x24_over_tmux(mini_settings: Settings, tmp_path: Path) -> None:
    """alice graded every pair; bob's app at 80x24 says ``judged 0/N by bob``; on m08 the chunk
    under four headings shows its id and path on one row and ``bm25 #1 · grade 2 (evidence) ·
    unjudged by bob`` on the next, alice's grade hidden until bob grades (issue 33); three digits
    grade m08's three pooled pairs, one key each, the status naming bob's own grade; back on the
    first pair, both grades and the dispute show."""
    settings = dataclasses.replace(mini_settings, retrievers=("bm25",))
    add_cors_page(settings)
    ws = Workspace.load(settings)
    grade_as(settings, "alice", [(q.id, c.id, 1) for q in ws.questions for c in ws.data.chunks])
    args = [
        *ragtui_command(),
        "--corpus",
        str(settings.corpus),
        "--golden",
        str(settings.golden),
        "--chunk-size",
        str(settings.chunk_size),
        "--retrievers",
        "bm25",
        "--annotator",
        "bob",
    ]
    pane = Pane()
    pane.start(shell_command(args, app_env(tmp_path / "cache")), 80, 24)
    journal = Path(settings.golden) / "labels.jsonl"
    alice_lines = len(journal.read_text().splitlines())
    try:
        screen = pane.wait_for(lambda s: "judged 0/" in s, 60, "the main screen")
        assert "by bob" in screen, screen
        pane.keys("/")
        # The filter box open (its placeholder shown) before anything is typed into it.
        pane.wait_for(lambda s: "│words, " in s or "│ words, " in s, 20, "the filter box")
        pane.keys("m08", "Enter")
        pane.wait_for(lambda s: "questions 1/8 · m08" in s, 20, "the filter on m08")
        pane.keys("j")
        shown = (
            f"{CORS_CHUNK}  FastAPI › … › Allowed hosts",
            "bm25 #1  ·  grade 2 (evidence) · unjudged by bob",
            "1 other grade: shown once you grade",
            "judged 0/3 by bob",
        )
        screen = pane.wait_for(
            # The pair's rows too: the assertions below read them.
            lambda s: "pair 1 of 3" in s and all(text in s for text in shown),
            20,
            "the judging view on m08 with its pair's rows",
        )
        rows = screen.splitlines()
        assert len(rows) <= 24
        assert any(f"{CORS_CHUNK}  FastAPI › … › Allowed hosts" in row for row in rows), screen
        assert any("bm25 #1  ·  grade 2 (evidence) · unjudged by bob" in row for row in rows)
        assert "alice" not in screen and "grade 1" not in screen, screen
        assert "judged 0/3 by bob" in screen
        pane.keys("2")
        pane.wait_for(
            lambda s: (
                "pair 2 of 3" in s
                and "judged 1/3 by bob" in s
                and f"saved: m08 {CORS_CHUNK} → your 2 (u undoes)" in s
            ),
            20,
            "pair 2, the status naming bob's 2 for the first pair",
        )
        pane.keys("0")
        pane.wait_for(lambda s: "pair 3 of 3" in s and "judged 2/3 by bob" in s, 20, "pair 3")
        pane.keys("1")
        pane.wait_for(lambda s: "judged 3/3 by bob" in s, 20, "every pair of m08 judged by bob")
        pane.keys("Left", "Left")
        pane.wait_for(
            lambda s: "pair 1 of 3" in s and "annotators: alice 1 · bob 2  disputed" in s,
            20,
            "back on the first pair: both grades, disputed",
        )
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
    lines = [json.loads(x) for x in journal.read_text().splitlines()[alice_lines:]]
    assert [(x["question"], x["annotator"], x["grade"]) for x in lines] == [
        ("m08", "bob", 2),
        ("m08", "bob", 0),
        ("m08", "bob", 1),
    ]
    assert lines[0]["chunk"] == CORS_CHUNK and len({x["chunk"] for x in lines}) == 3
    assert [x["independent"] for x in lines] == [True, True, True]
