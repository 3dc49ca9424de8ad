"""Issue 23 in a real terminal: the app in an 80x24 tmux pane with ``TERM=screen``, as a second
annotator. Finding 3: a chunk under a long MkDocs heading path shows its ranks and grade line.
Finding 4: ``--annotator bob`` has every pair alice graded still to judge, one digit a pair."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.judging_session import JudgingSession, JudgingWalk
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
    args = [*ragtui_command(), *app_args(settings, "bob")]
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


# ---- two people, then adjudication (issue 33's done-when) -------------------------------------------

#: Each person's grade of the i-th pair of the walk: they differ on two pairs in three.
ANN_GRADE = [i % 3 for i in range(40)]
BOB_GRADE = [(2 * i) % 3 for i in range(40)]


def app_args(settings: Settings, who: str, *more: str) -> list[str]:
    """The app's flags for ``who`` on ``settings``' data with bm25 alone, then ``more``."""
    return [
        "--corpus",
        str(settings.corpus),
        "--golden",
        str(settings.golden),
        "--chunk-size",
        str(settings.chunk_size),
        "--retrievers",
        "bm25",
        "--annotator",
        who,
        *more,
    ]


def two_people_args(settings: Settings, who: str) -> list[str]:
    """The app's flags for ``who`` (8 questions, bm25's top 6: over 40 pairs)."""
    return app_args(settings, who, "--k", "6")


def two_people_settings(mini_settings: Settings) -> tuple[Settings, int]:
    """The mini set with the MkDocs page (8 questions) and bm25's top 6: the pairs the judging view
    walks (over 40)."""
    settings = dataclasses.replace(mini_settings, retrievers=("bm25",), k=6)
    add_cors_page(settings)
    ws = Workspace.load(settings)
    total = len(JudgingSession(JudgingWalk(ws, [q.id for q in ws.questions]), ("m01", None)).pairs)
    assert total >= 40
    return settings, total


def judge_forty(pane: Pane, who: str, grades: list[int], other: str | None, total: int) -> None:
    """``who`` opens the judging view (``total`` pairs) and grades the first 40 one key each,
    waiting for each pair; with ``other`` (who graded before), checks on every pair that the
    other's grade is hidden until this person grades it, and that the status names this person's
    own grade."""
    pane.wait_for(lambda s: f"by {who}" in s and "questions 8" in s, 90, f"{who}'s main screen")
    pane.keys("j")
    for i, grade in enumerate(grades):
        screen = pane.wait_for(
            lambda s, i=i: f"pair {i + 1} of {total}" in s and f"judged {i}/{total} by {who}" in s,
            20,
            f"{who}'s pair {i + 1}",
        )
        if other is not None:
            assert "1 other grade: shown once you grade" in screen, screen
            assert f"{other} " not in screen.replace(f"by {other}", ""), screen
        pane.type(str(grade))
        pane.wait_for(
            lambda s, i=i, grade=grade: (
                f"judged {i + 1}/{total} by {who}" in s and f"→ your {grade} (u undoes)" in s
            ),
            20,
            f"{who}'s grade {i + 1} saved and named",
        )
    pane.keys("Escape")
    pane.wait_for(lambda s: f"judged 40/{total}" in s, 20, "back on the main screen")


def adjudicate_all(pane: Pane, disputed_questions: int) -> None:
    """Filter ``disputed``, settle one question's disputes (both grades shown), see the filter
    shrink, then settle the rest and see it empty."""
    pane.keys("/")
    pane.wait_for(lambda s: "esc Clear" in s, 20, "the filter box")
    pane.type("disputed")
    pane.keys("Enter")
    pane.wait_for(f"questions {disputed_questions}/8 · disputed", 20, "the disputed questions")
    left = disputed_questions
    while left:
        pane.keys("j")
        screen = pane.wait_for(lambda s: "adjudicating" in s and "pair 1 of" in s, 20, "the pass")
        assert "annotators: ann " in screen and " · bob " in screen, screen
        assert "disputed: a digit settles it" in screen
        first = screen.splitlines()[1].split()[0]  # the question of the first disputed pair
        pairs = int(screen.split("pair 1 of ")[1].split()[0])
        settled = 0
        while settled < pairs:
            screen = pane.screen()
            if first not in screen.splitlines()[1]:
                break  # the first question is settled: see the filter shrink
            pane.type("1")
            settled += 1
            pane.wait_for(lambda s, n=settled, of=pairs: f"judged {n}/{of}" in s, 20, "adjudicated")
        pane.keys("Escape")
        left -= 1 if settled < pairs else left
        pane.wait_for(f"questions {left}/8 · disputed", 20, f"{left} disputed questions left")


def check_two_people_journal(settings: Settings, disputed: int) -> None:
    lines = [
        json.loads(x) for x in (Path(settings.golden) / "labels.jsonl").read_text().splitlines()
    ]
    ann = [x for x in lines if x["annotator"] == "ann" and not x.get("adjudicated")]
    bob = [x for x in lines if x["annotator"] == "bob" and not x.get("adjudicated")]
    assert [x["grade"] for x in ann] == ANN_GRADE and [x["grade"] for x in bob] == BOB_GRADE
    assert [(x["question"], x["chunk"]) for x in ann] == [(x["question"], x["chunk"]) for x in bob]
    assert all(x["independent"] is True for x in ann + bob), "nobody saw another's grade first"
    adjudicated = [x for x in lines if x.get("adjudicated")]
    assert len(adjudicated) == sum(a != b for a, b in zip(ANN_GRADE, BOB_GRADE, strict=True))
    ws = Workspace.load(dataclasses.replace(settings, annotator="carol"))
    assert ws.grades.disputed_pairs() == []
    assert disputed == len({x["question"] for x in adjudicated})


def disputed_after(settings: Settings) -> int:
    """The questions with a disputed pair now."""
    return len(
        Workspace.load(dataclasses.replace(settings, annotator="carol")).grades.disputed_questions()
    )


def test_two_people_grade_forty_pairs_then_adjudicate_at_80x24(
    mini_settings: Settings, tmp_path: Path
) -> None:
    """ann then bob grade the same 40 pairs in an 80x24 tmux pane (``TERM=screen``), one key a
    pair: bob never sees ann's grade before his own, each status names the person's own grade;
    adjudication shows both grades, and the disputed filter shrinks as disputes are settled, to 0."""
    settings, total = two_people_settings(mini_settings)
    env = app_env(tmp_path / "cache")
    for who, grades, other in (("ann", ANN_GRADE, None), ("bob", BOB_GRADE, "ann")):
        pane = Pane()
        pane.start(shell_command([*ragtui_command(), *two_people_args(settings, who)], env), 80, 24)
        try:
            judge_forty(pane, who, grades, other, total)
            pane.keys("C-q")
            pane.exited(0)
        finally:
            pane.kill()
    disputed = disputed_after(settings)
    pane = Pane()
    pane.start(shell_command([*ragtui_command(), *two_people_args(settings, "carol")], env), 80, 24)
    try:
        pane.wait_for("questions 8", 90, "carol's main screen")
        adjudicate_all(pane, disputed)
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
    check_two_people_journal(settings, disputed)
