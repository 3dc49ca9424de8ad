"""The judging view (j): one key a pair, the walk following the main screen's filter and sort, blind
mode, the grade scale, undo, moves without grading."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ragtui.core.settings import Settings
from ragtui.tui.screens.judging import JudgingScreen
from ragtui.tui.screens.main import MainScreen
from tests.test_tui import COMPACT, WIDE, labels, make_app, run_async, wait_ready
from tests.test_tui_labelling import type_ahead


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (fake vectors never reach the shared one)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


async def _open(pilot) -> JudgingScreen:
    """Press j and return the judging view."""
    await pilot.press("j")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, JudgingScreen)
    return screen


@pytest.mark.parametrize("size", [COMPACT, WIDE])
@run_async
async def test_one_key_per_pair(tui_settings: Settings, size) -> None:
    """Digits grade the pair on screen and move on (typed in one burst); 7 saves nothing and says
    so; escape goes back to the main screen where it was."""
    app = make_app(tui_settings)
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        session = screen.session
        assert session.current is not None and session.current.question == "m01"
        expected = [e.key for e in session.pairs[:6]]
        # Every pair starts unjudged, so the walk is the pool order.
        await type_ahead(pilot, ["2", "0", "1", "0", "0", "1"])
        written = [(lab["question"], lab["chunk"], lab["grade"]) for lab in labels(tui_settings)]
        assert written == [
            (q, c, g) for (q, c), g in zip(expected, [2, 0, 1, 0, 0, 1], strict=True)
        ]
        assert session.position == 6
        before = len(labels(tui_settings))
        await pilot.press("7")
        await pilot.pause()
        assert len(labels(tui_settings)) == before, "7 is off the 0-2 scale: nothing saved"
        assert "not on the grade scale" in app.status.text and app.status.error
        assert session.position == 6, "a refused key does not move on"
        frame = screen.query_one("#judge-question")._border_title  # as drawn
        assert frame is not None and "pair 7 of" in frame.plain and "judged 6/" in frame.plain
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert app.main_screen.current_qid == "m01"
        # The main screen caught up with the grades made meanwhile.
        assert str(app.main_screen.query_one("#questions").border_subtitle).startswith("judged 6/")
        m01 = [(c, g) for (q, c), g in zip(expected, [2, 0, 1, 0, 0, 1], strict=True) if q == "m01"]
        shown = {cid for cid, _ in app.workspace.ranking("bm25", "m01")}
        for chunk, grade in m01:
            if chunk in shown:
                text = app.main_screen.result_list("bm25").cell(chunk, "grade")
                assert f"{grade}" in text and "h" in text, (chunk, text)


@run_async
async def test_undo_clear_and_moves(tui_settings: Settings) -> None:
    """u undoes the last grade and goes back to its pair; backspace clears a hand grade; left and
    right move without grading."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        session = screen.session
        first, second = session.pairs[0], session.pairs[1]
        await type_ahead(pilot, ["2", "0"])
        assert session.position == 2
        await pilot.press("u")
        await pilot.pause()
        assert session.current == second
        assert app.workspace.labels.grade_of(*second.key) is None
        assert app.workspace.labels.grade_of(*first.key) == 2
        await pilot.press("left")
        await pilot.pause()
        assert session.current == first
        await pilot.press("backspace")
        await pilot.pause()
        assert app.workspace.labels.grade_of(*first.key) is None
        assert session.current == first, "clearing stays on the pair"
        count = len(labels(tui_settings))
        await pilot.press("right", "right")
        await pilot.pause()
        assert session.position == 2 and len(labels(tui_settings)) == count


@run_async
async def test_walk_follows_the_filter_and_sort(tui_settings: Settings) -> None:
    """The view judges the questions the main screen shows, in its order."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        main = app.main_screen
        main.set_filter("slice:number")
        main.set_sort(True)
        await pilot.pause()
        shown = list(main.visible_ids)
        assert 1 < len(shown) < 7
        screen = await _open(pilot)
        order = []
        for entry in screen.session.pairs:
            if entry.question not in order:
                order.append(entry.question)
        assert order == [q for q in shown if screen.session.walk.pairs(q)]
        assert screen.session.current is not None
        assert screen.session.current.question == main.current_qid == shown[0]


@run_async
async def test_blind_mode_hides_the_retrievers(tui_settings: Settings) -> None:
    """b hides which retrievers ranked the chunk; b again shows them."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        meta = screen.query_one("#judge-meta")
        assert "bm25 #" in str(meta.content)
        await pilot.press("b")
        await pilot.pause()
        assert "bm25" not in str(meta.content) and "blind" in str(meta.content)
        await pilot.press("b")
        await pilot.pause()
        assert "bm25 #" in str(meta.content)


@run_async
async def test_a_0_to_3_scale_from_the_golden_set(tui_settings: Settings) -> None:
    """golden/grades.json with four grades: the legend shows its words and 3 is saved."""
    scale = {"0": "irrelevant", "1": "related", "2": "highly relevant", "3": "perfect"}
    (Path(tui_settings.golden) / "grades.json").write_text(json.dumps(scale))
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        legend = str(screen.query_one("#judge-scale").content)
        assert "3 perfect" in legend and "0 irrelevant" in legend
        await pilot.press("3")
        await pilot.pause()
        assert labels(tui_settings)[-1]["grade"] == 3
        await pilot.press("4")
        await pilot.pause()
        assert len(labels(tui_settings)) == 1
        assert "0 irrelevant · 1 related · 2 highly relevant · 3 perfect" in app.status.text


@run_async
async def test_context_shows_the_neighbouring_chunks(tui_settings: Settings) -> None:
    """c adds the chunks before and after in the same document, and takes them away again."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        entry = screen.session.current
        assert entry is not None
        ws = app.workspace
        body = screen.query_one("#chunk-text")
        alone = body.content.plain
        await pilot.press("c")
        await pilot.pause()
        framed = body.content.plain
        assert ws.chunk_by_id[entry.chunk].text in framed and len(framed) > len(alone)
        position = ws.chunk_order[entry.chunk]
        neighbours = [
            c
            for c in ws.chunks[max(0, position - 1) : position + 2]
            if c.doc == ws.chunk_by_id[entry.chunk].doc and c.id != entry.chunk
        ]
        assert neighbours and all(n.text[:40] in framed for n in neighbours)
        await pilot.press("c")
        await pilot.pause()
        assert body.content.plain == alone


@run_async
async def test_retire_a_question_and_undo(tui_settings: Settings) -> None:
    """x retires the question: flagged in questions.jsonl (other lines byte-identical), left out of
    every mean and marked ⊘; u brings it back; the judging walk skips it while retired."""
    path = Path(tui_settings.golden) / "questions.jsonl"
    before = path.read_bytes()
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        screen = app.main_screen
        assert screen.current_qid == "m01"
        evaluated = len(ws.evaluation.evaluated)
        await pilot.press("x")
        await pilot.pause()
        lines = path.read_bytes().splitlines()
        assert json.loads(lines[0])["retired"] is True
        assert lines[1:] == before.splitlines()[1:]
        assert (
            "m01" not in ws.evaluation.evaluated and len(ws.evaluation.evaluated) == evaluated - 1
        )
        assert ws.retired == ["m01"]
        assert screen.question_list.cell("m01", "mark") == "⊘"
        assert "retired" in str(screen.query_one("#question-bar").content)
        walk = screen.walk()
        assert walk is not None and "m01" not in walk.qids
        await pilot.press("u")
        await pilot.pause()
        assert "retired" not in json.loads(path.read_bytes().splitlines()[0])
        assert path.read_bytes().splitlines()[1:] == before.splitlines()[1:]
        assert "m01" in ws.evaluation.evaluated and ws.retired == []
        assert "undone" in app.status.text


def test_retire_from_the_command_line_and_json(mini: Path, cache_dir: Path) -> None:
    """ragtui retire QID flags the line; eval --json lists it under retired and leaves it out of the
    means; --restore brings it back."""
    import subprocess
    import sys

    from tests.conftest import MINI_CHUNK_SIZE

    base = [
        sys.executable,
        "-m",
        "ragtui",
        "--corpus",
        str(mini / "corpus"),
        "--golden",
        str(mini / "golden"),
        "--chunk-size",
        str(MINI_CHUNK_SIZE),
        "--retrievers",
        "bm25",
    ]
    env = {"RAGTUI_CACHE_DIR": str(cache_dir), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, env=env, check=False)

    full = json.loads(run("eval", "--json").stdout)
    done = run("retire", "m02")
    assert done.returncode == 0, done.stderr
    line = (mini / "golden" / "questions.jsonl").read_text().splitlines()[1]
    assert json.loads(line)["retired"] is True
    report = json.loads(run("eval", "--json").stdout)
    assert report["retired"] == ["m02"] and report["questions"] == full["questions"] - 1
    assert "m02" not in report["retrievers"]["bm25"]["per_question"]
    assert run("retire", "m02", "--restore").returncode == 0
    assert json.loads(run("eval", "--json").stdout)["retired"] == []
