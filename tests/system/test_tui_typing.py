"""Typing in a text box types (issue 23, finding 2), and the main screen's small items of finding 5:
the judged count after a filter, ``✗`` against ``miss:``, the status line, the messages log, the
80x24 footer and the stacked result lists at 110x30."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input

from ragtui.core.analysis.question_filter import (
    CAUSE_WORDS,
    QuestionFilter,
    filter_questions,
    misses_in_top_k,
)
from ragtui.core.analysis.why import CAUSE_MARKS, CAUSES
from ragtui.tui.app import RagtuiApp
from ragtui.tui.judging_session import JudgingWalk
from ragtui.tui.screens.adhoc import AdhocScreen
from ragtui.tui.screens.dialogs import PromptScreen
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.typing_keys import key_character
from ragtui.tui.widgets.result_list import ResultList
from ragtui.tui.widgets.status_line import MORE, wrap_status
from tests.app.test_tui import COMPACT, WIDE, FakeEmbedder, run_async, wait_ready
from tests.system.test_tui_labelling import bundled_settings


def screen_lines(app: RagtuiApp) -> list[str]:
    """The screen as a terminal shows it, one string a row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def key_of(character: str) -> str:
    """Textual's name of the key that types ``character`` (as its terminal driver names it)."""
    names = {key_character(name): name for name in ("minus", "plus", "slash", "underscore")}
    if character in names:
        return names[character]
    if character == " ":
        return "space"
    if character.isalnum():
        return character
    from textual.keys import _character_to_key

    return _character_to_key(character)


async def type_text(pilot, text: str, *, burst: bool) -> None:
    """Type ``text`` as a terminal sends it (each key with the character it types): one key at a
    time, or all at once (a paste, tmux, SSH)."""
    app = pilot.app
    for character in text:
        event = events.Key(key_of(character), character)
        event.set_sender(app)
        app._driver.send_message(event)
        if not burst:
            await pilot.pause()
    await pilot.pause()


async def press(pilot, *keys: str) -> None:
    """Keys in one burst, each with the character it types (as a terminal sends them)."""
    app = pilot.app
    for key in keys:
        if len(key) == 1:
            key = key_of(key)
        event = events.Key(key, key_character(key))
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause()


# ---- typing in a text box types ---------------------------------------------------------------


@pytest.mark.parametrize("burst", [False, True], ids=["slowly", "burst"])
@run_async
async def test_minus_and_plus_type_into_the_filter(tmp_path: Path, burst: bool) -> None:
    """``/`` then ``why:fusion-loss``: the filter holds what was typed and k stays (before: the
    filter read ``why:fusionloss`` and k was 2); ``why:label-gap`` (docs/app.md) applies; every
    printable key the screen binds (``+ - [ ] / u j n x s``) types into the filter."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        ws = app.workspace
        k = ws.settings.k
        for typed in ("why:fusion-loss", "why:label-gap", "a+b-c [u] j/n x_s ? e"):
            await press(pilot, "slash")
            box = screen.query_one("#filter", Input)
            assert app.focused is box
            box.value = ""
            await type_text(pilot, typed, burst=burst)
            assert box.value == typed
            assert app.workspace is ws and ws.settings.k == k, "a key typed changed k"
            assert app.screen is screen, "a key typed opened another screen"
            await press(pilot, "escape")
        # The filter applies: enter, and the title names it.
        await press(pilot, "slash")
        await type_text(pilot, "why:label-gap", burst=burst)
        await press(pilot, "enter")
        assert screen.filter_text == "why:label-gap"
        assert app.focused is screen.question_list
        assert not app.status.error, app.status.text
        assert ws.settings.k == k
        # Out of the filter, the same keys act again: + raises k.
        await press(pilot, "plus")
        assert app.workspace.settings.k == k + 1


@run_async
async def test_keys_typed_in_one_burst_edit_the_filter_in_order(tmp_path: Path) -> None:
    """The filter's own keys act in the order typed, in one burst: ``q1x⌫`` reads ``q1`` (before:
    the backspace took the last character typed after it), ctrl+u clears what was there before
    the new text (before: it cleared the new text), and a key right after enter acts on the list
    (before: it was typed into the closed filter)."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        await press(pilot, "slash", "q", "1", "x", "backspace", "enter", "down")
        await pilot.pause(0.3)
        assert screen.filter_text == "q1"
        assert app.focused is screen.question_list
        assert screen.current_qid == screen.visible_ids[1], "down after enter moved in the list"
        await press(pilot, "slash", "ctrl+u", "q", "2", "left", "w", "enter")
        await pilot.pause(0.3)
        assert screen.filter_text == "qw2"
        await press(
            pilot, "slash", "ctrl+u", "w", "h", "y", ":", "f", "u", "s", "e", "enter", "end"
        )
        await pilot.pause(0.3)
        assert screen.filter_text == "why:fuse" and not app.status.error
        assert app.focused is screen.question_list


@run_async
async def test_typing_in_the_filter_lays_nothing_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A character typed into the filter repaints the box only: Textual's ``Input`` sets its
    virtual size to its text's width at every change, which laid the whole screen out again at
    each keystroke (about 1 ms of its 6-8). Typed past the box's width, the text still scrolls
    sideways to show its end."""
    from textual.widget import Widget

    laid_out: list[str] = []
    refresh = Widget.refresh

    def counting(self: Widget, *regions: object, **kw: bool) -> Widget:
        if kw.get("layout"):
            laid_out.append(type(self).__name__)
        return refresh(self, *regions, **kw)  # type: ignore[arg-type]

    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        await press(pilot, "slash")
        box = app.main_screen.query_one("#filter", Input)
        monkeypatch.setattr(Widget, "refresh", counting)
        typed = "abcdefghij" * 8
        await type_text(pilot, typed, burst=False)
        monkeypatch.undo()
        assert box.value == typed and box.size.width < len(typed)
        assert "TextBox" not in laid_out
        assert box.scroll_x > 0 and box.render_line(0).text.rstrip().endswith(typed[-20:])


@run_async
async def test_a_late_focus_event_does_not_select_what_was_typed(tmp_path: Path) -> None:
    """``/`` opens the filter with its text selected, so what is typed first replaces it. Under
    load the box's Focus event reached it after the first characters of a burst (the app types
    them into the box at once), and selected them: ``why:label-gap`` read ``bel-gap`` in tmux. The
    Focus event is delivered late here on purpose: nothing typed is lost."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        await press(pilot, "slash", "q", "1", "enter")
        await pilot.pause(0.3)
        assert screen.filter_text == "q1"
        await press(pilot, "slash", *"why:la")
        box = app.focused
        assert box is not None and box.id == "filter"
        box.post_message(events.Focus())  # the Focus event, after the first characters
        await pilot.pause()
        await press(pilot, *"bel-gap", "enter")
        await pilot.pause(0.3)
        assert screen.filter_text == "why:label-gap"


@run_async
async def test_the_footer_shows_no_key_the_filter_types(tmp_path: Path) -> None:
    """While the filter has the focus the footer lists escape and quit, not ``+- k`` (which the
    filter types)."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        assert "+- k" in screen_lines(app)[-1]
        await press(pilot, "slash")
        footer = screen_lines(app)[-1]
        assert "esc Clear" in footer and "^q Quit" in footer
        assert "+- k" not in footer


@run_async
async def test_typing_in_the_adhoc_query_and_a_prompt(tmp_path: Path) -> None:
    """The ad-hoc query and a dialog's input take every printable key too; k stays."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        k = app.workspace.settings.k
        await press(pilot, "a")
        assert isinstance(app.screen, AdhocScreen)
        box = app.screen.query_one("#adhoc-query", Input)
        assert app.focused is box
        await type_text(pilot, "pump-station +2 [a] / u?", burst=True)
        assert box.value == "pump-station +2 [a] / u?"
        await press(pilot, "escape")
        prompt = PromptScreen("folder", "")
        app.push_screen(prompt)
        await pilot.pause()
        await type_text(pilot, "out-dir+1/x_y", burst=True)
        assert prompt.query_one(Input).value == "out-dir+1/x_y"
        assert app.workspace.settings.k == k


# ---- filters take the why column's marks ------------------------------------------------------


def test_why_terms_take_the_causes_names_and_the_columns_marks() -> None:
    """``why:fuse`` is ``why:fusion-loss``; every mark the why column shows is a cause word; an
    unknown word lists each cause with its mark."""
    for cause, mark in CAUSE_MARKS.items():
        assert QuestionFilter.parse(f"why:{mark}", ["bm25"]).causes == ((cause, None),)
        assert QuestionFilter.parse(f"why:{cause}:BM25", ["bm25"]).causes == ((cause, "bm25"),)
    assert set(CAUSE_WORDS.values()) == set(CAUSES)
    with pytest.raises(ValueError) as caught:
        QuestionFilter.parse("why:x", ["bm25"])
    assert "label-gap (label)" in str(caught.value) and "fusion-loss (fuse)" in str(caught.value)


# ---- the judged count, the miss mark ----------------------------------------------------------


@run_async
async def test_judged_count_follows_a_filter_at_once(tmp_path: Path) -> None:
    """A filter that keeps the current question: the count under the list is the new list's at
    once (before: the whole set's, until the cursor moved)."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        frame = screen.query_one("#questions")
        before = frame.border_subtitle
        first = screen.current_qid
        assert screen.set_filter(first)  # its id: the list keeps it, with fewer questions
        await pilot.pause()
        assert screen.current_qid == first and len(screen.visible_ids) < len(
            app.workspace.questions
        )
        totals = JudgingWalk(app.workspace, screen.visible_ids).totals()
        shown = str(frame.border_subtitle)
        assert shown.startswith(f"judged {totals}"), (before, shown)
        assert shown != str(before)
        screen.set_filter("no-question-has-this-word")
        await pilot.pause()
        assert str(frame.border_subtitle).startswith("judged 0/0")


@run_async
async def test_miss_mark_and_miss_filter_agree(tmp_path: Path) -> None:
    """``✗`` marks exactly the questions ``miss:any`` keeps: recall@k below 1 for some retriever,
    also a question with two relevant chunks whose first is in the top k (q63, q65 with bm25)."""
    settings = dataclasses.replace(bundled_settings(tmp_path), retrievers=("bm25",))
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        ev = ws.evaluation
        screen = app.main_screen
        partial = [
            q
            for q in ev.evaluated
            if 0 < (v := ev.per_question["bm25"][q]).recall < 1
            and (v.first_relevant_rank or 99) <= ev.k
        ]
        assert partial, "the set has a question whose first relevant chunk is in the top k, not all"
        missed = set(filter_questions(ws, QuestionFilter.parse("miss:any", ws.retrievers)))
        marked = {q for q in screen.visible_ids if screen.question_list.cell(q, "mark") == "✗"}
        other_marks = {
            q for q in screen.visible_ids if screen.question_list.cell(q, "mark") in "!⊘∅"
        }
        assert set(partial) <= marked
        assert marked == missed - other_marks
        assert all(misses_in_top_k(ev.per_question["bm25"][q]) for q in marked)


# ---- the status line and the messages log -----------------------------------------------------

LONG = (
    "Labels go to /home/a-labeller/.local/share/ragtui/golden/labels.jsonl (a copy of the "
    "bundled set); every grade is saved there."
)


def test_wrap_status_keeps_every_word_or_says_where_the_rest_is() -> None:
    rows = wrap_status(LONG, 78)
    assert len(rows) == 2 and "".join(rows) == LONG
    assert all(len(r.rstrip()) <= 78 for r in rows)
    rows = wrap_status(LONG * 3, 78)
    assert len(rows) == 3 and rows[-1].endswith(MORE) and len(rows[-1]) <= 78
    assert wrap_status("saved.", 78) == ["saved."]


@run_async
async def test_status_line_shows_a_long_message_whole(tmp_path: Path) -> None:
    """At 80x24 a message longer than a row wraps onto a second row (the content gives way), a
    shorter one takes one row again; a message too long for three rows says where it is whole."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        status = app.main_screen.status_line
        app.say(LONG)
        await pilot.pause()
        assert status.size.height == 2 and status.plain == LONG
        text = " ".join(line.strip() for line in screen_lines(app)[-4:])
        assert "labels.jsonl" in text and "every grade is saved there." in text
        assert screen_lines(app)[-1].lstrip().startswith("s Sort")  # the footer stays
        # The filter's error lists every cause with its mark, whole.
        await press(pilot, "slash")
        await type_text(pilot, "why:x", burst=True)
        await press(pilot, "enter")
        assert app.status.error and status.plain == app.status.text
        assert "not-retrieved (absent)" in " ".join(screen_lines(app)[-5:])
        # A shorter message keeps the rows for a while (no jump at every grade), then shrinks.
        status.shrink_delay = 0.2
        app.say("saved.")
        await pilot.pause()
        assert status.size.height == 3 and status.rows[0] == "saved."
        await pilot.pause(0.4)
        assert status.size.height == 1
        app.say(LONG * 3)
        await pilot.pause()
        assert status.size.height == 3 and status.plain.endswith(MORE)


@run_async
async def test_messages_log_fits_80_columns(tmp_path: Path) -> None:
    """The messages log at 80x24: each time on one row (before: wrapped into three), a long
    message wrapped beside it."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        app.say(LONG)
        app.say("why:x: no such cause", error=True)
        app.show_messages()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        lines = screen_lines(app)
        times = [s.when for s in app.status_log]
        text = "\n".join(lines)
        for when in times:
            assert when in text, f"the time {when} is cut:\n{text}"
        assert "every grade is saved there." in " ".join(line.strip(" │") for line in lines)
        assert all(len(line) <= 80 for line in lines)


# ---- the footer at 80x24, the result lists at 110x30 ------------------------------------------


def footer_items(line: str) -> str:
    """The footer's keys, without the palette part."""
    return line.split("▏")[0].strip()


@run_async
async def test_footer_fits_80_columns(tmp_path: Path) -> None:
    """At 80x24 the footer ends with its last key whole, then the palette, in every state: the
    question list, a result list, and a result list with a filter on (before: ``j Jud▏^p``)."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen

        def check() -> str:
            line = screen_lines(app)[-1]
            assert "▏^p palette" in line, line
            keys = footer_items(line)
            assert keys.endswith("? Help"), line
            for item in ("u Undo", "j Judge", "^q Quit", "/ Filter"):
                assert item in keys, line
            return keys

        assert "s Sort" in check()
        await press(pilot, "tab")
        assert isinstance(app.focused, ResultList)
        assert "0-9 Grade" in check()
        screen.set_filter("q1")
        await pilot.pause()
        assert "esc Clear" in check()
        # Wide: room for every key.
        await pilot.resize_terminal(*WIDE)
        await pilot.pause()
        line = screen_lines(app)[-1]
        assert "+- k" in line and "n Unjudged" in line


@run_async
async def test_result_lists_show_k_rows_at_110x30(tmp_path: Path) -> None:
    """At 110x30 (the smallest wide layout) each of the three stacked lists shows at least k rows
    under its header (before: one or two)."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=(110, 30)) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        assert not screen.has_class("-compact")
        k = app.workspace.settings.k
        for name in screen.retrievers:
            results = screen.result_list(name)
            assert results.size.height - results.header_height >= k, (name, results.size)
        lines = screen_lines(app)
        assert re.search(r"bm25\s+all", "\n".join(lines)), "the metric rows show"
