"""The app under stress: another session's labels, a read-only golden set, tiny terminals and resizes,
load warnings, and SIGHUP/SIGTERM to the real app in tmux."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import signal
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
from ragtui.core.settings import Settings
from tests.app.test_tui import (
    COMPACT,
    WIDE,
    labels,
    main_screen,
    make_app,
    metric_rows,
    run_async,
    wait_ready,
)
from tests.conftest import ROOT, mini_args
from tests.tmux import Pane, needs_tmux


def messages(app) -> list[str]:
    """Every notification's text so far."""
    return [s.text for s in app.status_log]


def question_row(app, qid: str) -> list[str]:
    """The plain cells of a question's row in the question list."""
    table = main_screen(app).question_list
    return [table.cell(qid, c.name) for c in table.columns]


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (fake vectors never reach the shared one)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


@pytest.fixture
def read_only_golden(tui_settings: Settings) -> Iterator[Path]:
    """The golden folder made read-only by its mode bits (root ignores them in os.access; ragtui does not)."""
    golden = Path(tui_settings.golden)
    journal = golden / "labels.jsonl"
    journal.write_text("")
    for path in (journal, golden):
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield golden
    finally:
        golden.chmod(0o755)
        journal.chmod(0o644)


@run_async
async def test_another_sessions_labels_update_rows_lists_and_metrics(
    tui_settings: Settings,
) -> None:
    """A second LabelJournal grades m01's only relevant chunk 0: within the 1 s poll the app shows it."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        assert metric_rows(app)[("bm25", "m01")] == ["1.000", "0.333", "0.333", "1.000", "1.000"]
        assert question_row(app, "m01")[2] == "1"  # bm25's first relevant rank
        ws = app.workspace
        assert ws is not None
        other = LabelJournal(Path(tui_settings.golden) / "labels.jsonl", annotator="other")
        other.set_grade("m01", "ferry.md#1", 0, ws.passages.by_id["ferry.md#1"].sha1)
        other.close()
        for _ in range(40):  # the poll runs every second
            await pilot.pause(0.05)
            if any("from another session" in m for m in messages(app)):
                break
        assert any(m.startswith("1 label(s) from another session") for m in messages(app))
        await pilot.pause()
        rows = metric_rows(app)
        assert rows[("bm25", "m01")] == ["0.000", "0.000", "0.000", "0.000", "0.000"]
        assert rows[("bm25", "all")] != ["1.000", "0.389", "0.389", "1.000", "1.000"]
        assert question_row(app, "m01")[2] != "1"
        assert main_screen(app).result_list("bm25").qid == "m01"
        assert "grade 0" in main_screen(app).chunk_view._header_text.plain
        # Our own next grade goes on after the other session's line, nothing re-applied twice.
        await pilot.press("tab", "2")
        await pilot.pause()
        assert [(line["annotator"], line["grade"]) for line in labels(tui_settings)] == [
            ("other", 0),
            ("tester", 2),
        ]
        app.poll_labels()
        assert sum("from another session" in m for m in messages(app)) == 1


@run_async
async def test_read_only_golden_folder_opens_read_only_and_refuses_edits(
    tui_settings: Settings, read_only_golden: Path
) -> None:
    """chmod a-w golden/: the subtitle and a notification say why; digits, backspace and undo change nothing."""
    journal = read_only_golden / "labels.jsonl"
    before = journal.read_bytes()
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        assert "labels read-only" in main_screen(app).sub_title
        assert any(
            "is read-only: you can look" in m and str(read_only_golden) in m for m in messages(app)
        )
        await pilot.press("tab", "0", "backspace", "u")
        await pilot.pause()
        assert any("the grade was not saved" in m for m in messages(app))
        assert metric_rows(app)[("bm25", "m01")][4] == "1.000"
    assert journal.read_bytes() == before
    assert sorted(p.name for p in read_only_golden.iterdir()) == ["labels.jsonl", "questions.jsonl"]


@run_async
async def test_read_only_error_from_the_core_is_a_notification(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder turns read-only between the check and the write: ReadOnlyError is shown, not raised."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        assert ws is not None

        def refuse(*args: object, **kwargs: object) -> None:
            raise ReadOnlyError(
                "golden: the label journal's folder is read-only; the change was not made"
            )

        monkeypatch.setattr(ws, "set_grade", refuse)
        await pilot.press("tab", "0")
        await pilot.pause()
        assert any("the change was not made" in m for m in messages(app))
        assert metric_rows(app)[("bm25", "m01")][4] == "1.000"
        assert app.is_running


@run_async
async def test_tiny_terminal_says_so_and_still_grades(tui_settings: Settings) -> None:
    """60x20: a line names the size and the minimum; the compact layout still grades."""
    app = make_app(tui_settings)
    async with app.run_test(size=(60, 20)) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        assert screen.has_class("-tiny") and screen.has_class("-compact")
        note = screen.query_one("#too-small")
        assert note.display and "60x20" in str(note.content) and "80x24" in str(note.content)
        await pilot.press("tab", "0")
        await pilot.pause()
        assert labels(tui_settings)[-1]["grade"] == 0
        assert metric_rows(app)[("bm25", "m01")][4] == "0.000"


@run_async
async def test_resizes_while_grading(tui_settings: Settings) -> None:
    """120x40 -> 80x24 -> 60x15 -> 120x40 with a grade at every size: each is saved and shown."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("tab")
        for i, (size, grade) in enumerate(
            ((WIDE, "1"), (COMPACT, "0"), ((60, 15), "2"), (WIDE, "1"))
        ):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            screen = main_screen(app)
            assert screen.has_class("-compact") == (size != WIDE)
            assert screen.has_class("-tiny") == (size == (60, 15))
            await pilot.press(grade)
            await pilot.pause()
            assert len(labels(tui_settings)) == i + 1
            assert labels(tui_settings)[-1]["grade"] == int(grade)
            assert f"grade {grade} (hand)" in screen.chunk_view._header_text.plain
        assert not main_screen(app).query_one("#too-small").display
        assert app.is_running


@run_async
async def test_torn_journal_line_is_a_warning_notification(tui_settings: Settings) -> None:
    """A torn last line (a partial write) loads with a warning notification; grading repairs it."""
    journal = Path(tui_settings.golden) / "labels.jsonl"
    journal.write_text('{"question": "m01", "chunk": "ferry.md#1", "gra')
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        assert any("torn last line (partial write) ignored" in m for m in messages(app))
        await pilot.press("tab", "2")
        await pilot.pause()
    assert [line["grade"] for line in labels(tui_settings)] == [2]


# ---- signals, in a real terminal --------------------------------------------------------------


def _app_command(args: list[str], pid_file: Path, env: dict[str, str], then: str) -> str:
    """A shell command that records the app's pid in ``pid_file``, runs it (``exec``, so the pid is
    the app's) with ``env`` added, then runs ``then`` (e.g. printing the exit code)."""
    env_words = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return (
        f"cd {shlex.quote(str(ROOT))} && sh -c 'echo $$ > {shlex.quote(str(pid_file))}; "
        f"exec env {env_words} {shlex.join(args)}'; {then}"
    )


def _alive(pid: int) -> bool:
    """Whether a process exists (and is not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@needs_tmux
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "pane closed"])
def test_signal_exits_cleanly_with_labels_saved(mini: Path, tmp_path: Path, how: str) -> None:
    """Grade in the real app, then SIGTERM, SIGHUP, or close the pane (the SSH link drops): the app
    exits by itself (128 + signal), the terminal is back to normal, and the journal holds the grade."""
    pid_file = tmp_path / "pid"
    args = [sys.executable, "-m", "ragtui", *mini_args(mini, "--retrievers", "bm25")]
    args += ["--annotator", "sig"]
    command = _app_command(args, pid_file, {"TERM": "screen"}, "echo RAGTUI-EXIT=$?; sleep 30")
    pane = Pane()
    pane.start(command, 100, 30)
    try:
        pane.wait_for(lambda s: "questions 7" in s and "ferry.md#1" in s, 30, "the app")
        pid = int(pid_file.read_text())
        pane.keys("Tab")
        pane.wait_for(lambda s: "Grade" in s, 10, "the result list's keys")
        pane.keys("0")
        pane.wait_for(lambda s: "grade 0 (hand)" in s, 10, "the grade on screen")
        if how == "pane closed":
            pane.kill()  # tmux hangs up the pane's terminal: SIGHUP and a dead tty, as a dropped SSH link
        else:
            os.kill(pid, getattr(signal, how))
            code = 128 + getattr(signal, how)
            pane.wait_for(lambda s: f"RAGTUI-EXIT={code}" in s, 10, "the app to exit")
            assert pane.value("#{alternate_on}") == "0"
            assert pane.value("#{mouse_any_flag}") == "0"
            assert pane.value("#{cursor_flag}") == "1"
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the app kept running after the hang-up"
    finally:
        pane.kill()
    lines = [json.loads(x) for x in (mini / "golden" / "labels.jsonl").read_text().splitlines()]
    assert [(x["question"], x["chunk"], x["grade"], x["annotator"]) for x in lines] == [
        ("m01", "ferry.md#1", 0, "sig")
    ]
    assert LabelJournal(mini / "golden" / "labels.jsonl").warnings == []


@needs_tmux
def test_terminal_gone_while_drawing_still_ends_the_app(tmp_path: Path, cache_dir: Path) -> None:
    """Kill the tmux server (the pty vanishes, as when an SSH link drops) the moment the full
    120x40 screen is drawn: Textual's shutdown can then block on output it cannot write, so the
    app's watchdog must end the process. Without it this hung 4 times in 6."""
    shutil.copy(ROOT / "golden" / "questions.jsonl", tmp_path / "questions.jsonl")
    for attempt in range(3):
        pid_file = tmp_path / f"pid{attempt}"
        args = [sys.executable, "-m", "ragtui", "--golden", str(tmp_path), "--annotator", "hup"]
        command = _app_command(
            args, pid_file, {"RAGTUI_CACHE_DIR": str(cache_dir), "TERM": "screen"}, "sleep 30"
        )
        pane = Pane()
        pane.start(command, 120, 40)
        try:
            # Wide layout: the stacked lists' titles; compact (when tmux keeps 80x24): the tab strip.
            pane.wait_for(
                lambda s: "hybrid · first relevant" in s or "hybrid #" in s, 90, "the full screen"
            )
            pid = int(pid_file.read_text())
        finally:
            pane.kill()
        deadline = time.monotonic() + 7  # the watchdog's 2 s grace, with room to spare
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            raise AssertionError(
                f"attempt {attempt}: the app kept running after its terminal went away"
            )


@run_async
async def test_frame_titles_show_file_names_with_brackets_as_they_are(
    tui_settings: Settings,
) -> None:
    """A border title given as a plain string is read as markup by Textual: ``a[b]c.md`` showed as
    ``ac.md``, ``x[b]y[i]z.md`` lost its brackets, a name holding a closing tag raised an error, and ``[@click=app.quit]`` made a title that
    quits when clicked. Titles holding data are set as text."""
    corpus = Path(tui_settings.corpus)
    (corpus / "ferry.md").rename(corpus / "x[b]y[i]z.md")
    (corpus / "library.md").rename(corpus / "a[@click=app.quit]c.md")
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        ws = app.workspace
        assert ws is not None
        qid = screen.current_qid
        for name in ("x[b]y[i]z.md", "a[@click=app.quit]c.md"):
            cid = next(c.id for c in ws.data.chunks if c.doc == name)
            screen.chunk_view.show(ws, qid, cid)
            await pilot.pause()
            title = screen.chunk_view._border_title  # what the frame draws
            assert title is not None and title.plain == f"chunk {cid}" and not title.spans
        # The question list's title holds the filter as typed, brackets and all.
        await pilot.press("slash", *"[/]", "enter")
        await pilot.pause()
        frame = screen.query_one("#questions")._border_title
        assert frame is not None and "[/]" in frame.plain
