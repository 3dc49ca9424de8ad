"""What the start does less of (issue 26, item 1): each cut keeps what is shown and computed.

- The model's tokenizer is parsed and its files fingerprinted ahead, in a thread, while the app
  is imported; a model that cannot be read is left for the load to report.
- A model's fingerprint is read again only when a file changed.
- The footer rebuilds its keys only when they change; the embedding progress bar is made when
  first shown; the judging progress places the questions in the walk only when something is judged.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ragtui.core.data import tokenizer
from ragtui.core.settings import Settings
from ragtui.tui.widgets.footer import Footer
from tests.test_tui import main_screen, make_app, run_async, wait_ready

WIDE = (130, 40)


def test_the_model_files_are_warmed_in_a_thread_and_the_load_finds_them() -> None:
    tokenizer.token_counter.cache_clear()
    thread = tokenizer.warm_model_files(None)
    assert thread.daemon and thread is not threading.current_thread()
    thread.join(30)
    assert not thread.is_alive()
    hits = tokenizer.token_counter.cache_info().hits
    counter = tokenizer.token_counter(None)
    assert tokenizer.token_counter.cache_info().hits == hits + 1  # parsed by the thread
    assert counter.count("a ferry") == 2


def test_warming_a_model_that_cannot_be_read_is_quiet_and_the_load_reports_it(
    tmp_path: Path,
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer.json").write_text("{not json")
    tokenizer.warm_model_files(str(model)).join(30)
    with pytest.raises(tokenizer.InputError, match="broken tokenizer"):
        tokenizer.token_counter(str(model))


def test_a_fingerprint_is_read_again_only_when_a_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    weights = model / "weights.bin"
    weights.write_bytes(b"a" * 4096)
    (model / "tokenizer.json").write_text("{}")
    reads: list[Path] = []
    read = tokenizer._fingerprint

    def counted(folder: Path, files: list[Path]) -> str:
        reads.append(folder)
        return read(folder, files)

    monkeypatch.setattr(tokenizer, "_fingerprint", counted)
    first = tokenizer.model_fingerprint(str(model))
    assert tokenizer.model_fingerprint(str(model)) == first
    assert len(reads) == 1
    # The same size, other bytes, a later time: read again, and another fingerprint.
    weights.write_bytes(b"b" * 4096)
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = tokenizer.model_fingerprint(str(model))
    assert len(reads) == 2 and second != first
    # A file added: read again.
    (model / "extra.json").write_text("{}")
    assert tokenizer.model_fingerprint(str(model)) not in (first, second)
    assert len(reads) == 3


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    import dataclasses

    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


@run_async
async def test_the_footer_keeps_its_keys_when_the_bindings_stay_the_same(
    tui_settings: Settings,
) -> None:
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        footer = screen.query_one(Footer)
        keys = list(footer.children)
        assert keys and any("Quit" in str(k.render()) for k in keys)
        # The bindings announced again, twice, unchanged: the same key widgets stay.
        screen.refresh_bindings()
        screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert list(footer.children) == keys
        # A change of what the footer shows (the narrow footer) rebuilds it.
        await pilot.resize_terminal(90, 40)
        await pilot.pause()
        await pilot.pause()
        assert list(footer.children) != keys


@run_async
async def test_the_progress_bar_is_made_when_first_shown(tui_settings: Settings) -> None:
    async with make_app(tui_settings).run_test(size=WIDE) as pilot:
        await wait_ready(pilot)  # embeds (progress shown), and caches every vector
    app = make_app(tui_settings)  # warm: nothing to embed, no progress
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        row = screen.query_one("#progress-row")
        assert not row.display and not screen.query("#progress")
        screen.show_progress(5, 20, "")
        await pilot.pause()
        bar = screen.query_one("#progress")
        assert row.display and bar.total == 20 and bar.progress == 5  # type: ignore[attr-defined]
        screen.show_progress(10, 20, "")
        await pilot.pause()
        assert screen.query_one("#progress") is bar and bar.progress == 10  # type: ignore[attr-defined]
        screen.hide_progress()
        await pilot.pause()
        assert not row.display


@run_async
async def test_the_judging_progress_places_no_question_when_nothing_is_judged(
    tui_settings: Settings,
) -> None:
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        pane = main_screen(app).questions
        assert app.workspace is not None and not app.workspace.labels.pairs
        walk = pane.walk(app.workspace)
        totals = walk.totals()
        assert totals.judged == 0 and totals.pooled > 0
        assert walk._positions is None
        assert f"judged {totals}" in str(pane.border_subtitle)


def test_the_load_evaluates_on_its_tables_rows_without_looking_for_repeats(
    mini_settings: Settings,
) -> None:
    from ragtui.core.metrics.evaluation import Evaluation
    from ragtui.core.metrics.tables import RankingTable
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(mini_settings)
    table = ws.rankings["bm25"]
    assert isinstance(table, RankingTable) and table.distinct  # BM25 ranks each chunk once
    ev = ws.evaluation
    assert ev is not None
    # The questions as loaded: the evaluation reads the tables' own rows (no lookup).
    assert ev.question_ids is ws.loaded_ids and ev._rows is ws.loaded_rows
    # The same numbers as an evaluation that builds its own rows and looks for repeats.
    plain = dict(table.items())
    again = Evaluation(list(ws.loaded_ids), ws.evaluation_grades, {"bm25": plain}, ws.settings.k)
    assert again.summary("bm25") == ev.summary("bm25")
    for qid in ws.loaded_ids:
        assert again.per_question["bm25"][qid] == ev.per_question["bm25"][qid]
