"""Keys in one burst (as over SSH): every grade lands on the pair that was on screen when its key was
pressed, because each request carries its question and chunk."""

from __future__ import annotations

import random
from pathlib import Path

from ragtui.tui.app import RagtuiApp
from ragtui.tui.judging import JudgingWalk
from ragtui.tui.widgets.result_list import ResultList
from tests.test_tui import COMPACT, FakeEmbedder, labels, run_async, wait_ready
from tests.test_tui_labelling import bundled_settings, type_ahead


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
