"""Keys in one burst (as over SSH): every grade lands on the pair that was on screen when its key was
pressed, because each request carries its question and chunk; and every request (grade, clear,
undo, retire) is applied in key order, so ``1 u 2`` sent in one write leaves 2, as typed slowly.

The tmux tests run the real app in a tmux pane on the small corpus (BM25 only: no model to load)
and send keys with ``tmux send-keys``: the keys of one call reach the app in one write.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.app import RagtuiApp
from ragtui.tui.controller import Controller, Refused
from ragtui.tui.judging_session import JudgingWalk
from ragtui.tui.widgets.result_list import ResultList
from tests.app.test_tui import COMPACT, FakeEmbedder, labels, run_async, wait_ready
from tests.conftest import MINI, mini_args
from tests.system.test_tui_labelling import bundled_settings, type_ahead
from tests.tmux import Pane, app_env, needs_tmux, shell_command


@run_async
async def test_n_and_digit_in_one_burst_grade_the_pairs_shown(tmp_path: Path) -> None:
    """60 ``n``+digit pairs typed in a single burst: the journal holds, in order, exactly the pairs the
    judging walk visits, each with the digit typed right after its ``n``."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        # The walk the keys will follow, computed apart from the app: all pairs start unjudged, so
        # n visits them in order.
        walk = JudgingWalk(app.workspace, screen.visible_ids)
        expected: list[tuple[str, str]] = []
        position = (screen.current_qid, "\0")
        for _ in range(60):
            entry = walk.next_unjudged(position)
            assert entry is not None
            expected.append(entry.key)
            position = entry.key
        rng = random.Random(7)
        grades = [rng.choice("012") for _ in expected]
        keys = [key for grade in grades for key in ("n", grade)]
        await type_ahead(pilot, keys)
        written = [(lab["question"], lab["chunk"], lab["grade"]) for lab in labels(settings)]
        assert written == [(q, c, int(g)) for (q, c), g in zip(expected, grades, strict=True)]
        assert len({q for q, _ in expected}) > 5, "the burst crossed several questions"


@run_async
async def test_digits_and_moves_in_one_burst(tmp_path: Path) -> None:
    """In a result list, ``2 down 1 down 0 …`` typed at once grades each chunk in rank order; then
    ``down`` in the question list and a digit after tab grades the next question's list."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        screen = app.main_screen
        first, second = screen.visible_ids[:2]
        bm25_first = [cid for cid, _ in ws.ranking("bm25", first)][:5]
        bm25_second = [cid for cid, _ in ws.ranking("bm25", second)][:1]
        keys = ["tab"]
        grades = ["2", "1", "0", "2", "1"]
        for i, grade in enumerate(grades):
            keys += [grade] + (["down"] if i < len(grades) - 1 else [])
        keys += ["shift+tab", "down", "tab", "0"]
        await type_ahead(pilot, keys)
        written = [(lab["question"], lab["chunk"], lab["grade"]) for lab in labels(settings)]
        assert written == [
            *((first, cid, int(g)) for cid, g in zip(bm25_first, grades, strict=True)),
            (second, bm25_second[0], 0),
        ]
        assert isinstance(app.focused, ResultList) and screen.current_qid == second


@run_async
async def test_a_filter_typed_in_one_burst_is_typed_into_the_filter(tmp_path: Path) -> None:
    """``/unjudged`` and enter in one burst (a paste, tmux send-keys, SSH): the letters go to the
    filter input the slash opened, not to the keys u (undo) and j (judging view) of the list."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        await type_ahead(pilot, ["slash", *"unjudged", "enter"])
        assert app.screen is screen, "j opened the judging view"
        assert screen.filter_text == "unjudged"
        assert not any("undo" in s.text.lower() for s in app.status_log)
        assert app.focused is screen.question_list
        # And back: escape, then a grade key in one burst acts on the list again.
        await type_ahead(pilot, ["slash", "escape", "tab", "0"])
        assert screen.filter_text == ""
        assert labels(settings)[-1]["grade"] == 0


def test_an_undo_names_the_change_it_undoes(mini_settings: Settings) -> None:
    """``u`` carries the change that was the latest when it was pressed: the controller undoes that
    change or nothing, never an older or a newer one."""
    settings = replace(mini_settings, retrievers=("bm25",))
    controller = Controller(settings)
    controller.loaded(Workspace.load(settings), None)
    ws = controller.ws
    assert controller.latest_change == 0
    with pytest.raises(Refused, match="Nothing to undo"):
        controller.undo(controller.latest_change)
    controller.grade("m01", "ferry.md#0", 1)
    first = controller.latest_change
    controller.grade("m01", "ferry.md#0", 2)
    second = controller.latest_change
    controller.retire("m02", True)
    retired = controller.latest_change
    assert 0 < first < second < retired
    # The key was pressed before the retirement was made: that undo undoes nothing.
    with pytest.raises(Refused, match="Not undone: the latest change is now m02 retired"):
        controller.undo(second)
    assert ws.questions.by_id["m02"].retired and ws.grades.grade_source("m01", "ferry.md#0")[0] == 2
    assert controller.undo(retired).undo and not ws.questions.by_id["m02"].retired
    change = controller.undo(second)
    assert change.undo and change.chunk == "ferry.md#0"
    assert ws.grades.grade_source("m01", "ferry.md#0") == (1, "hand")
    assert controller.latest_change == first
    controller.undo(None)  # the latest, whatever it is (the command palette's undo)
    assert ws.grades.grade_source("m01", "ferry.md#0") != (1, "hand")
    assert controller.latest_change == 0


# ---- the real app in tmux ---------------------------------------------------------------------------


class App(Pane):
    """The real app on a copy of the small corpus and its golden set, in its own session of a tmux server
    (several share one server: ``Pane.kill`` stops it)."""

    def __init__(self, socket: str, name: str, folder: Path, size: tuple[int, int] = (100, 30)):
        """Copy the small corpus and golden set into ``folder`` and start the app there (BM25 only)."""
        super().__init__(name, socket)
        self.golden = folder / "golden"
        shutil.copytree(MINI / "corpus", folder / "corpus")
        shutil.copytree(MINI / "golden", self.golden)
        env = app_env(folder / "cache", XDG_DATA_HOME=str(folder / "data"))
        args = [sys.executable, "-m", "ragtui", "--no-project"]
        args += mini_args(folder, "--retrievers", "bm25", "--annotator", "e2e")
        self.start(shell_command(args, env, cwd=folder), *size)

    def ready(self) -> None:
        """Wait for the question list and its judging progress."""
        self.wait_for(lambda s: "questions 7" in s and "judged" in s, 60, "the app to start")

    def journal(self) -> list[dict]:
        """The journal's lines, without the time each was written."""
        path = self.golden / "labels.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for line in lines:
            line.pop("at", None)
        return lines

    def retired(self) -> list[str]:
        """The retired questions of the golden set."""
        path = self.golden / "questions.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [row["id"] for row in rows if row.get("retired")]

    def quit(self) -> None:
        """ctrl+q, and wait for the exit code 0."""
        self.keys("C-q")
        self.exited(0)


def effective(lines: list[dict]) -> dict[tuple[str, str], int | None]:
    """The grade each pair has after these journal lines (one annotator)."""
    out: dict[tuple[str, str], int | None] = {}
    for line in lines:
        out[(line["question"], line["chunk"])] = line["grade"]
    return out


@needs_tmux
def test_undo_in_a_burst_undoes_the_grade_before_it(tmp_path: Path) -> None:
    """Issue 23, finding 1, sent as ``tmux send-keys`` of several keys in one call. In the judging
    view on an unjudged pair, ``1 u 2`` leaves 2 (it left 1 and said ``undone: … → grade 1``), and
    ``1 u 2 1 0`` grades three pairs 2, 1, 0 (it undid the third pair's 0, which the user saw
    saved); on the main screen ``1 u 0`` leaves 0 and ``1 u 2 1 0`` leaves 0 (both left 1)."""
    app = App(f"ragtui-burst-{uuid.uuid4().hex[:8]}", "burst", tmp_path)
    try:
        app.ready()
        app.keys("j")
        app.wait_for(lambda s: "pair 1 of" in s and "judged 0/" in s, 30, "the judging view")
        assert not (app.golden / "labels.jsonl").read_text().strip(), "an unjudged pair"
        # 1 u 2 on an unjudged pair: 1 saved, undone, 2 saved; the view is on the next pair.
        app.keys("1", "u", "2")
        app.settled()
        lines = app.journal()
        assert [line["grade"] for line in lines] == [1, None, 2]
        pair = (lines[0]["question"], lines[0]["chunk"])
        assert {(line["question"], line["chunk"]) for line in lines} == {pair}
        assert effective(lines)[pair] == 2
        # 1 u 2 1 0 on the next pair B: B gets 2, then C 1 and D 0 (the 0 stays).
        app.keys("1", "u", "2", "1", "0")
        screen = app.settled()
        more = app.journal()[3:]
        assert [line["grade"] for line in more] == [1, None, 2, 1, 0]
        b, c, d = ((line["question"], line["chunk"]) for line in (more[0], more[3], more[4]))
        assert len({pair, b, c, d}) == 4 and more[1]["chunk"] == more[2]["chunk"] == b[1]
        grades = effective(app.journal())
        assert (grades[pair], grades[b], grades[c], grades[d]) == (2, 2, 1, 0)
        assert f"saved: {d[0]} {d[1]} → your 0 (u undoes)" in screen
        # The main screen, m01's list at rank 4 (beyond the judged top 3): 1 u 0 leaves 0.
        app.keys("Escape")
        app.settled()
        app.keys("Tab")
        app.wait_for(lambda s: "Grade" in s, 15, "the result list's keys in the footer")
        app.keys("Down", "Down", "Down")
        app.settled()
        app.keys("1", "u", "0")
        app.settled()
        x = app.journal()[8:]
        assert [line["grade"] for line in x] == [1, None, 0]
        fourth = (x[0]["question"], x[0]["chunk"])
        assert fourth[0] == "m01" and {(line["question"], line["chunk"]) for line in x} == {fourth}
        assert fourth not in (pair, b, c, d)
        assert effective(app.journal())[fourth] == 0
        # Rank 5: 1 u 2 1 0 leaves 0.
        app.keys("Down")
        app.settled()
        app.keys("1", "u", "2", "1", "0")
        screen = app.settled()
        y = app.journal()[11:]
        assert [line["grade"] for line in y] == [1, None, 2, 1, 0]
        fifth = (y[0]["question"], y[0]["chunk"])
        assert {(line["question"], line["chunk"]) for line in y} == {fifth} and fifth != fourth
        assert effective(app.journal())[fifth] == 0
        assert f"saved: m01 {fifth[1]} → your 0 (u undoes)" in screen
        app.quit()
    finally:
        app.kill()
