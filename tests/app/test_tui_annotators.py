"""The app with several writers on one journal: another writer's bad line, and a FIFO as the journal."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.settings import Settings
from ragtui.tui.screens.dialogs import LoadErrorScreen
from tests.app.test_tui import (
    COMPACT,
    WIDE,
    labels,
    make_app,
    metric_rows,
    result_chunks,
    run_async,
    wait_ready,
)


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (fake vectors never reach the shared one)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


@run_async
async def test_a_bad_line_from_another_writer_does_not_stop_the_app(tui_settings: Settings) -> None:
    """Regression (issue 12 item 5): our grade after another writer's ``"grade": 77`` line is saved
    and its numbers shown; the poll goes on."""
    journal = Path(tui_settings.golden) / "labels.jsonl"
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        assert ws is not None
        assert metric_rows(app)[("bm25", "m01")][4] == "1.000"
        with open(journal, "ab") as fh:
            fh.write(
                b'{"question": "m01", "chunk": "ferry.md#0", "grade": 77, "chunk_sha1": "", "at": ""}\n'
            )
        app.poll_labels()
        await pilot.pause()
        await pilot.press("tab", "0")  # the highlighted chunk of m01 is its evidence chunk
        await pilot.pause()
        assert app.is_running
        assert [(line["annotator"], line["grade"]) for line in labels(tui_settings)[1:]] == [
            ("tester", 0)
        ]
        assert metric_rows(app)[("bm25", "m01")][4] == "0.000", "our grade was not applied"
        # Another session's good line after the bad one still arrives.
        other = LabelJournal(journal, annotator="other")
        other.set_grade("m03", "library.md#0", 1, ws.passages.by_id["library.md#0"].sha1)
        other.close()
        app.poll_labels()
        await pilot.pause()
        assert ws.grades.grade_source("m03", "library.md#0") == (1, "hand")


@run_async
async def test_a_fifo_as_the_journal_is_a_load_error_and_the_app_quits(
    tui_settings: Settings,
) -> None:
    """Regression (issue 12 item 9): loading blocked forever on the FIFO and the app could not quit."""
    journal = Path(tui_settings.golden) / "labels.jsonl"
    journal.unlink()
    os.mkfifo(journal)
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if isinstance(app.screen, LoadErrorScreen):
                break
        assert isinstance(app.screen, LoadErrorScreen)
        assert "labels.jsonl: the label journal is a FIFO, not a regular file" in app.screen.message
        await pilot.press("q")
        await pilot.pause()
    assert app.load_error is not None


@run_async
async def test_a_disputed_pair_is_marked_and_settled_in_the_adjudication_pass(
    tui_settings: Settings,
) -> None:
    """alice and bob grade a pair of m02 differently: the app marks the question and the pair with
    !, the disputed filter finds it, the adjudication pass shows both grades and one digit settles
    it (an adjudicated journal line), after which the marks are gone."""
    from dataclasses import replace

    from ragtui.core.workspace import Workspace
    from ragtui.tui.screens.judging import JudgingScreen

    pair = ("m02", None)
    for who, grade in (("alice", 2), ("bob", 0)):
        ws = Workspace.load(replace(tui_settings, annotator=who, retrievers=("bm25",)))
        chunk = pair[1] or ws.ranking("bm25", "m02")[1][0]
        pair = ("m02", chunk)
        ws.set_grade("m02", chunk, grade)
    qid, cid = pair
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        assert screen.question_list.cell(qid, "mark") == "!"
        await pilot.press("down")  # m02
        await pilot.pause()
        bm25 = result_chunks(app, "bm25")
        grade_cell = screen.result_list("bm25").row_cells(bm25.index(cid))[1].text
        assert grade_cell.endswith("!"), grade_cell
        await screen_filter(pilot, "disputed")
        assert list(screen.visible_ids) == [qid]
        screen.action_adjudicate()
        await pilot.pause()
        judging = app.screen
        assert isinstance(judging, JudgingScreen) and judging.adjudicate
        meta = judging.query_one("#judge-meta").content.plain
        assert "annotators: alice 2 · bob 0" in meta and "disputed" in meta
        await pilot.press("1")
        await wait_ready(pilot)
        last = labels(tui_settings)[-1]
        assert (last["question"], last["chunk"], last["grade"]) == (qid, cid, 1)
        assert last.get("adjudicated") is True and last["annotator"] == "tester"
        assert app.workspace.grades.grade_source(qid, cid) == (1, "adjudicated")
        await pilot.press("escape")
        await pilot.pause()
        # The disputed filter is applied again: the settled question has left it (issue 33, 2).
        assert list(screen.visible_ids) == []
        assert "questions 0/" in str(screen.query_one("#questions").border_title)
        await pilot.press("escape")  # the filter cleared: the question is back, unmarked
        await pilot.pause()
        assert screen.question_list.cell(qid, "mark") != "!"


async def screen_filter(pilot, text: str) -> None:
    """Type a filter into the question list's filter input and apply it."""
    await pilot.press("slash", *text, "enter")
    await pilot.pause()


@run_async
async def test_a_line_about_the_questions_shown_goes_when_the_list_changes(
    tui_settings: Settings,
) -> None:
    """Issue 33, item 2: "every pair of the questions shown is judged" said in the judging view
    over one question stays while that list is shown and goes once the filter is cleared (82 pairs
    were unjudged while it still said so)."""
    from ragtui.tui.screens.judging import JudgingScreen

    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        await screen_filter(pilot, "m01")
        await pilot.press("j")
        await pilot.pause()
        judging = app.screen
        assert isinstance(judging, JudgingScreen)
        await pilot.press(*["0"] * len(judging.session.pairs))
        await wait_ready(pilot)
        # The last grade named with it: a slip on the last pair is seen too.
        said = app.status.text
        assert said.startswith("saved: m01 ") and "→ your 0 (u undoes)" in said
        assert said.endswith(" · every pair of the questions shown is judged")
        await pilot.press("escape")
        await pilot.pause()
        assert app.status.text == said, "still true of the list shown"
        await pilot.press("escape")  # the filter cleared: every question, most pairs unjudged
        await pilot.pause()
        assert app.status.text == ""
        assert app.main_screen.visible_ids[0] == "m01" and len(app.main_screen.visible_ids) > 1
