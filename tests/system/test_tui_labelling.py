"""Pilot tests of the labelling workflow (issue 8): the judging queue, Judged@k, ad-hoc queries,
adding questions, the agreement and diagnostics views, and labelling a whole pool from the keyboard."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from ragtui.core.analysis.rule_agreement import rule_agreement
from ragtui.core.data.paths import bundled_corpus, bundled_golden
from ragtui.core.settings import Settings
from ragtui.core.workspace.judging import JudgingQueue, judged_summaries
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.adhoc import AdhocScreen
from ragtui.tui.screens.agreement import AgreementScreen
from ragtui.tui.screens.diagnostics import DiagnosticsScreen
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.widgets.result_list import ResultList
from tests.app.test_tui import WIDE, FakeEmbedder, labels, make_app, run_async, wait_ready


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (as in tests/app/test_tui.py)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


def progress_line(app: RagtuiApp) -> str:
    """The judging progress under the question list."""
    return str(app.main_screen.query_one("#questions").border_subtitle)


def highlighted(app: RagtuiApp) -> tuple[str | None, str | None, str | None]:
    """(question, focused retriever, highlighted chunk) as the screen shows them."""
    focused = app.focused
    if not isinstance(focused, ResultList):
        return app.main_screen.current_qid, None, None
    return app.main_screen.current_qid, focused.retriever, focused.highlighted_chunk


@run_async
async def test_next_unjudged_follows_the_pool_and_counts_progress(tui_settings: Settings) -> None:
    """n visits the pooled top-k unjudged first, highest-ranked first, across questions; progress counts hand grades."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        queue = JudgingQueue(ws)
        expected = []
        after = None
        for _ in range(4):
            entry = queue.next_unjudged(after=after, wrap=False)
            expected.append(entry.key)
            after = entry.key
        progress = queue.progress()
        first_question = progress.per_question["m01"]
        # --annotator tester: several people may grade, so the queue is tester's own.
        assert progress_line(app) == (
            f"judged {progress.overall.judged}/{progress.overall.pooled} by tester · this question "
            f"{first_question.judged}/{first_question.pooled}"
        )
        seen = []
        for _ in range(4):
            await pilot.press("n")
            await pilot.pause()
            qid, retriever, chunk = highlighted(app)
            assert retriever is not None
            seen.append((qid, chunk))
        assert seen == expected
        # Grade the highlighted chunk: the counts move by one, overall and for this question.
        qid, _, chunk = highlighted(app)
        before = queue.progress()
        await pilot.press("1")
        await pilot.pause()
        after_progress = JudgingQueue(ws).progress()
        assert after_progress.overall.judged == before.overall.judged + 1
        count = after_progress.per_question[qid]
        assert (
            f"judged {after_progress.overall.judged}/{after_progress.overall.pooled}"
            in progress_line(app)
        )
        assert f"this question {count.judged}/{count.pooled}" in progress_line(app)
        assert labels(tui_settings)[-1]["chunk"] == chunk


@run_async
async def test_random_order_is_seeded_and_covers_the_same_pool(tui_settings: Settings) -> None:
    """The palette's random order visits the same pairs of a question in a seeded shuffle."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        screen.set_queue_order("random")
        await pilot.pause()
        assert "random order" in progress_line(app)
        expected = [e.chunk for e in JudgingQueue(app.workspace, order="random").pools["m01"]]
        unjudged = [c for c in expected if not JudgingQueue(app.workspace).is_judged("m01", c)]
        seen = []
        for _ in unjudged:
            await pilot.press("n")
            await pilot.pause()
            seen.append(highlighted(app)[2])
        assert seen == unjudged


@run_async
async def test_judged_at_k_beside_the_metrics(tui_settings: Settings) -> None:
    """Each retriever's Judged@k is in the metric panel, a thin one flagged."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        text = app.main_screen.metrics.plain
        line = next(row for row in text.splitlines() if row.startswith("Judged@3"))
        for name, summary in judged_summaries(ws).items():
            assert f"{name} {summary.mean:.3f}" + (" thin!" if summary.thin else "") in line


async def _search(pilot, app: RagtuiApp, text: str) -> AdhocScreen:
    """Open the ad-hoc screen, type a query and wait for the lists."""
    await pilot.press("a")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, AdhocScreen)
    screen.query_one("#adhoc-query").value = text
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    return screen


@run_async
async def test_adhoc_query_shows_every_retriever(tui_settings: Settings) -> None:
    """Any typed question: bm25, vector and hybrid lists at once, equal to the workspace's search."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = await _search(pilot, app, "ferry ticket price")
        expected = app.workspace.search_adhoc("ferry ticket price")
        assert set(expected) == {"bm25", "vector", "hybrid"}
        for name, ranking in expected.items():
            table = screen.list_for(name)
            shown = [cid for cid, _ in table.ranking]
            assert shown == [cid for cid, _ in ranking]
        # The chunk view shows the highlighted chunk as plain text.
        area = screen.query_one("#adhoc-chunk")
        first = expected["bm25"][0][0]
        assert area.text == app.workspace.passages.by_id[first].text
        # Embedding the query is not a load: the main screen shows no embedding progress.
        await pilot.pause()
        assert app.controller.embedding_progress is None
        assert not app.main_screen.query_one("#progress-row").display


@run_async
async def test_add_question_from_selection_writes_and_evaluates(tui_settings: Settings) -> None:
    """Evidence selected in the chunk view (F2), slices typed, F3: appended, evaluated, in the list; bad evidence refused."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        screen = await _search(pilot, app, "price of a single ferry ticket")
        path = Path(tui_settings.golden) / "questions.jsonl"
        before = path.read_text()
        # Bad evidence: refused with a message, nothing written.
        screen.query_one("#adhoc-evidence").value = "no chunk holds this sentence"
        await pilot.press("f3")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "Not added" in app.status.text and app.status.error
        assert "found in no chunk" in app.status.text
        assert path.read_text() == before
        # Select a line of the chunk text with the keyboard, F2 takes it as evidence.
        area = screen.query_one("#adhoc-chunk")
        chunk_text = area.text
        line = next(row for row in chunk_text.splitlines() if "single" in row)
        row = chunk_text.splitlines().index(line)
        from textual.widgets.text_area import Selection

        area.selection = Selection((row, 0), (row, len(line)))
        await pilot.press("f2")
        await pilot.pause()
        assert screen.query_one("#adhoc-evidence").value == " ".join(line.split())
        screen.query_one("#adhoc-slices").value = "table, number"
        await pilot.press("f3")
        await app.workers.wait_for_complete()
        await pilot.pause()
        added = json.loads(path.read_text().splitlines()[-1])
        assert added["id"] == "m08"
        assert added["question"] == "price of a single ferry ticket"
        assert added["evidence"] == " ".join(line.split())
        assert added["slices"] == ["table", "number"]
        assert "Added m08" in app.status.text
        await pilot.press("escape")
        await pilot.pause()
        main = app.main_screen
        assert isinstance(app.screen, MainScreen)
        assert main.current_qid == "m08"
        assert "m08" in main.visible_ids
        assert "m08" in ws.evaluation.evaluated
        assert main.result_list("bm25").qid == "m08"
        assert ("bm25", "m08") in {(n, s) for n, s in [(k[0], k[1]) for k in _metric_keys(app)]}


def _metric_keys(app: RagtuiApp) -> list[tuple[str, str]]:
    """(retriever, scope) of the metric rows shown."""
    from tests.app.test_tui import metric_rows

    return list(metric_rows(app))


@run_async
async def test_agreement_view_numbers(tui_settings: Settings) -> None:
    """Two hand grades against the rule: the table, kappa and the disagreement shown match a hand count."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        relevant = next(c for c, g in ws.grades.base["m01"].items() if g >= 1)
        other = next(c.id for c in ws.data.chunks if c.id not in ws.grades.base["m01"])
        ws.set_grade("m01", relevant, 0)  # contains the evidence, graded 0: a disagreement
        ws.set_grade("m01", other, 0)  # agrees with the rule
        await pilot.press("g")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AgreementScreen)
        lines = [" ".join(line.split()) for line in screen.plain.splitlines()]
        rule = rule_agreement(ws)
        assert rule.pairs == 2
        # Hand count: match/grade 0 = 1, no match/grade 0 = 1; the rule says 1 relevant, the person 0.
        assert "evidence match 1 0 0" in lines
        assert "no evidence match 1 0 0" in lines
        assert "Cohen's kappa (binary): 0.000; observed agreement 0.500" in lines
        assert f"m01 {relevant} 0 tester graded not relevant but contains the evidence" in lines


@run_async
async def test_diagnostics_view_and_rechunking_keep_labels(tui_settings: Settings) -> None:
    """d shows the diagnostics; a new chunk size from the app re-chunks and old labels stay (stale)."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        chunk = ws.ranking("bm25", "m01")[0][0]
        ws.set_grade("m01", chunk, 1)
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DiagnosticsScreen)
        assert screen.result is not None
        assert f"{len(ws.data.chunks)} chunks" in screen.plain
        assert "chunk token counts" in screen.plain
        await pilot.press("escape")
        await pilot.pause()
        app.set_chunking(24, 4)
        await wait_ready(pilot)
        new = app.workspace
        assert new is not ws and new.settings.chunk_size == 24 and new.settings.overlap == 4
        assert len(new.data.chunks) > len(ws.data.chunks)
        assert any(lab["chunk"] == chunk for lab in labels(tui_settings))
        assert ("m01", chunk) in new.grades.labels.current


def bundled_settings(tmp_path: Path) -> Settings:
    """The bundled corpus with a writable copy of the bundled golden set."""
    shutil.copytree(bundled_golden(), tmp_path / "golden")
    return Settings(
        corpus=bundled_corpus(),
        golden=tmp_path / "golden",
        cache_dir=tmp_path / "cache",
        annotator="tester",
    )


async def type_ahead(pilot, keys: list[str]) -> None:
    """Send keys as a fast typist (or tmux) does: all at once, then wait until the app is idle.

    ``pilot.press`` waits for the app to go idle after every key (at least 40 ms each); the app
    must cope with keys typed ahead anyway, which is what this checks."""
    from textual import events

    driver = pilot.app._driver
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(pilot.app)
        driver.send_message(event)
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@run_async
async def test_label_whole_pooled_top3_of_bundled_set_from_keyboard(tmp_path: Path) -> None:
    """n, digit, n, digit, ...: every pooled (question, chunk) of the bundled set ends up in labels.jsonl.

    The grade is the one the evidence rule would give (2 for a chunk holding the evidence, else 0),
    decided from the queue's order, which the keys must follow: each pair must get its own grade. Keys are typed ahead, one batch per question (``pilot.press`` one key at a
    time gives the same journal in about 130 s instead)."""
    settings = bundled_settings(tmp_path)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        queue = JudgingQueue(ws)
        assert queue.retrievers == ["bm25", "vector", "hybrid"]
        order = [e.key for q in ws.questions for e in queue.pools[q.id]]
        keystrokes = 0
        for q in ws.questions:
            keys: list[str] = []
            for entry in queue.pools[q.id]:
                keys += ["n", str(ws.grades.base.get(entry.question, {}).get(entry.chunk, 0))]
            await type_ahead(pilot, keys)
            keystrokes += len(keys)
        await pilot.pause()
        written = [(lab["question"], lab["chunk"]) for lab in labels(settings)]
        # Every pooled pair exactly once (grades of different lists may land in either order).
        assert sorted(written) == sorted(order) and len(set(order)) == len(order)
        assert all(
            lab["grade"] == ws.grades.base.get(lab["question"], {}).get(lab["chunk"], 0)
            for lab in labels(settings)
        )
        assert keystrokes == 2 * len(order)
        assert progress_line(app).startswith(f"judged {len(order)}/{len(order)}")
        print(
            f"\nlabelled {len(order)} pooled pairs of {len(ws.questions)} questions with {keystrokes} keystrokes"
        )
        # One more n says the pool is judged.
        await pilot.press("n")
        await pilot.pause()
        assert any("Every pooled chunk" in s.text for s in app.status_log)
