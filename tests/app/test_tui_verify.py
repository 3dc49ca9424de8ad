"""Issue 25, item 5: the judging view's verify mode (a model judge's grade and reason shown, enter
accepts it as your own, a digit overrides), blind suggestions, and the queue's orders (judge and
evidence rule disagreeing first; the random sample of questions for the estimate, recorded in
sample.json). The verdicts are real journal lines written with ``LabelJournal.append_verdicts``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ragtui.core.judges.sample import draw_sample, load_sample
from ragtui.core.judges.verify import (
    disagreeing_first,
    recorded_or_drawn,
    sample_population,
)
from ragtui.core.labelling.labels import Label, judge_annotator, now_iso
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import JudgingQueue
from ragtui.tui.judging_session import wrap_rows
from ragtui.tui.screens.judging import JudgingScreen
from tests.app.test_tui import COMPACT, labels, make_app, run_async, wait_ready
from tests.system.test_tui_judging import screen_lines
from tests.system.test_tui_labelling import type_ahead


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (fake vectors never reach the shared one)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


def write_verdicts(settings: Settings, verdicts, judge: str = "llm") -> None:
    """``judge``'s verdicts ((question, chunk, grade, reason), ...) as journal lines, in one batch."""
    ws = Workspace.load(dataclasses.replace(settings, retrievers=("bm25",)))
    ws.grades.labels.append_verdicts(
        [
            Label(
                qid,
                cid,
                grade,
                ws.passages.by_id[cid].sha1,
                now_iso(),
                judge_annotator(judge),
                model="test-model",
                prompt_sha1="0" * 40,
                reason=reason,
            )
            for qid, cid, grade, reason in verdicts
        ]
    )
    ws.grades.labels.close()


def pool_of(settings: Settings, qid: str) -> list[str]:
    """The chunks of a question's pool (every shown retriever's top k), in pool order."""
    ws = Workspace.load(settings)
    return [e.chunk for e in JudgingQueue(ws).pools[qid]]


async def open_judging(pilot) -> JudgingScreen:
    """Press j and return the judging view."""
    await pilot.press("j")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, JudgingScreen)
    return screen


def verdict_text(screen: JudgingScreen) -> str:
    """The verdict rows as drawn."""
    return screen.query_one("#judge-verdict").content.plain


@run_async
async def test_enter_accepts_the_judges_grade_and_a_digit_overrides(
    tui_settings: Settings,
) -> None:
    """v walks the pairs the judge graded (title ``verify``); the grade and reason are shown; enter
    writes the person's own line with the judge's grade, which counts at once; u undoes it; a
    digit overrides; keys typed ahead act on the pair each was pressed on."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    pool = pool_of(settings, "m01")
    graded = [("m01", pool[0], 2, "States the ferry times."), ("m01", pool[1], 0, "Off topic.")]
    graded += [("m02", c, 1, f"Partly: {c}.") for c in pool_of(settings, "m02")[:3]]
    write_verdicts(settings, graded)
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        assert "verify" not in screen.progress
        await pilot.press("v")
        await pilot.pause()
        session = screen.session
        assert session.queue.verify and screen.progress.startswith("verify · pair 1 of 5")
        assert "verified 0/5" in screen.progress
        assert [e.key for e in session.pairs] == [(q, c) for q, c, _, _ in graded]
        shown = verdict_text(screen)
        assert "llm: grade 2 (answers fully)" in shown and "⏎ accepts" in shown
        assert "States the ferry times." in shown
        ws = app.workspace
        assert ws.grades.grade_source("m01", pool[0])[1] != "hand"
        await pilot.press("enter")
        await pilot.pause()
        line = labels(settings)[-1]
        assert (line["question"], line["chunk"], line["grade"]) == ("m01", pool[0], 2)
        assert line["annotator"] == "tester" and "model" not in line and "reason" not in line
        assert ws.grades.grade_source("m01", pool[0]) == (2, "hand"), (
            "the person's grade counts at once"
        )
        assert session.current.key == ("m01", pool[1]) and "verified 1/5" in screen.progress
        assert "Off topic." in verdict_text(screen)
        # u undoes the accepted grade and goes back to its pair.
        await pilot.press("u")
        await pilot.pause()
        assert ws.grades.labels.pair("m01", pool[0]).human() is None
        assert session.current.key == ("m01", pool[0]) and "verified 0/5" in screen.progress
        # Typed ahead: accept (2), override with 1, accept (1 of m02's first pair).
        before = len(labels(settings))
        await type_ahead(pilot, ["enter", "1", "enter"])
        written = [(x["question"], x["chunk"], x["grade"]) for x in labels(settings)[before:]]
        m02 = graded[2][1]
        assert written == [("m01", pool[0], 2), ("m01", pool[1], 1), ("m02", m02, 1)]
        assert all(x["annotator"] == "tester" for x in labels(settings)[before:])
        assert ws.grades.grade_source("m01", pool[1]) == (1, "hand"), (
            "the digit overrode the judge's 0"
        )
        assert "verified 3/5" in screen.progress
        # v again: the people's queue.
        await pilot.press("v")
        await pilot.pause()
        assert not screen.session.queue.verify and "verify" not in screen.progress
        assert not screen.query_one("#judge-verdict").display


@run_async
async def test_blind_hides_the_judges_grade_and_reason(tui_settings: Settings) -> None:
    """Blind (b, or --blind): the judge's grade and reason are not drawn anywhere; enter saves
    nothing and says that you give the grade yourself; a digit still grades. Under
    --grades human+model the model's grade that counts is hidden too (it showed as ``grade 0
    (model)`` in the origin line before)."""
    settings = dataclasses.replace(
        tui_settings, retrievers=("bm25",), blind=True, counted_grades="human+model"
    )
    pool = pool_of(settings, "m01")
    write_verdicts(settings, [("m01", c, 0, "SECRET-REASON nothing here") for c in pool[:2]])
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        await pilot.press("v")
        await pilot.pause()
        assert screen.blind and screen.session.queue.verify
        rows = "\n".join(screen_lines(app))
        assert "SECRET-REASON" not in rows and "llm" not in rows, rows
        assert "(model)" not in rows and "grade 0" not in rows, rows
        assert "blind: the judge's grade and reason are hidden" in verdict_text(screen)
        before = len(labels(settings))
        await pilot.press("enter")
        await pilot.pause()
        assert len(labels(settings)) == before, "enter saves nothing when blind"
        assert "you give the grade yourself" in app.status.text
        assert screen.session.position == 0
        await pilot.press("2")
        await pilot.pause()
        assert labels(settings)[-1]["grade"] == 2 and labels(settings)[-1]["annotator"] == "tester"
        # b shows the judge's grade again.
        await pilot.press("b")
        await pilot.pause()
        assert "llm: grade 0" in verdict_text(screen) and "SECRET-REASON" in verdict_text(screen)


@run_async
async def test_blind_hides_a_model_grade_that_counts(tui_settings: Settings) -> None:
    """Regression: under --grades human+model, alone (no --annotator), blind judging showed the
    model's grade that counts, ``grade 0 (model)``, in the origin line: the suggestion blind mode
    hides. Now blind shows ``no hand grade``; not blind, ``grade 0 (model)``."""
    settings = dataclasses.replace(
        tui_settings, retrievers=("bm25",), annotator=None, counted_grades="human+model"
    )
    pool = pool_of(settings, "m01")
    write_verdicts(settings, [("m01", pool[0], 0, "no")])
    app = make_app(dataclasses.replace(settings, blind=True))
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        assert screen.person is None and screen.session.current.key == ("m01", pool[0])
        meta = screen.query_one("#judge-meta").content.plain
        assert "no hand grade" in meta and "model" not in meta, meta
        await pilot.press("b")
        await pilot.pause()
        assert "grade 0 (model)" in screen.query_one("#judge-meta").content.plain


@run_async
async def test_the_disagreement_order(tui_settings: Settings) -> None:
    """o: the pairs where the judge and the evidence rule disagree come first, the largest
    difference first (ties in the shown order), then the rest; in the people's queue and when
    verifying; the title says ``disagree first``."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    ws = Workspace.load(settings)
    rule = {(q.id, c): g for q in ws.questions for c, g in ws.grades.base.get(q.id, {}).items()}
    pools = {q.id: [e.chunk for e in JudgingQueue(ws).pools[q.id]] for q in ws.questions}
    ws.grades.labels.close()
    evidence = next((q, c) for q in pools for c in pools[q] if rule.get((q, c)) == 2)
    other = [(q, c) for q in pools for c in pools[q] if (q, c) not in rule][:4]
    # The judge says 0 where the rule says 2 (difference 2), 1 and 2 where the rule says 0
    # (differences 1 and 2), and 0 where the rule says 0 (agreement).
    verdicts = [
        (*other[0], 1, "one"),
        (*evidence, 0, "rule 2"),
        (*other[1], 2, "two"),
        (*other[2], 0, "agrees"),
    ]
    write_verdicts(settings, verdicts)
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        shown_order = [e.key for e in screen.session.pairs]
        await pilot.press("o")
        await pilot.pause()
        session = screen.session
        assert session.queue.order == "disagree" and "disagree first" in screen.progress
        by_order = sorted([evidence, other[1]], key=shown_order.index)
        expected_first = [*by_order, other[0]]
        keys = [e.key for e in session.pairs]
        assert keys[:3] == expected_first
        assert keys[3:] == [k for k in shown_order if k not in expected_first]
        assert session.current.key == keys[0] or session.current.key in keys
        # Verifying in this order: the judged pairs only, disagreeing first.
        await pilot.press("v")
        await pilot.pause()
        keys = [e.key for e in screen.session.pairs]
        assert keys == [*expected_first, other[2]]
        assert screen.progress.startswith("verify · disagree first · pair ")
        # o twice more: the sample order, then back to the shown order.
        await pilot.press("o", "o")
        await pilot.pause()
        assert screen.session.queue.order == "shown" and "disagree" not in screen.progress


def test_disagreeing_first_is_stable_and_largest_first() -> None:
    """The core order on its own: differences above 0 first, largest first, ties in order."""
    items = ["a", "b", "c", "d", "e"]
    diff = {"a": 0, "b": 1, "c": 2, "d": 1, "e": 0}
    assert disagreeing_first(items, diff.__getitem__) == ["c", "b", "d", "a", "e"]


@run_async
async def test_the_sample_order_records_sample_json_and_is_reproducible(
    tui_settings: Settings,
) -> None:
    """o twice: the random sample of questions for the estimate is drawn (seed 0) and written to
    sample.json beside the journal; the walk is every pooled pair of its questions, in the
    sample's order, question by question; the title counts the questions judged fully; a second
    view (and another app) reuses the recorded sample; the seed reproduces it."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    golden = Path(settings.golden)
    assert not (golden / "sample.json").exists()
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        ids = sample_population(ws.questions)
        screen = await open_judging(pilot)
        await pilot.press("o", "o")
        await pilot.pause()
        recorded = load_sample(golden)
        assert recorded is not None and recorded.seed == 0
        assert recorded.questions == draw_sample(ids, 40, seed=0).questions
        assert len(recorded.questions) == len(ids) == 7, "40 asked, the 7 there are"
        assert "sample for the estimate: drew 7 of 7 questions" in app.status.text
        session = screen.session
        assert session.sample_qids == list(recorded.questions)
        walked = []
        for entry in session.pairs:
            if entry.question not in walked:
                walked.append(entry.question)
        assert walked == [q for q in recorded.questions if session.walk.pairs(q)]
        first = recorded.questions[0]
        pool = [e.chunk for e in session.walk.pairs(first)]
        assert [e.chunk for e in session.pairs[: len(pool)]] == pool
        assert " · sample 0/7 judged fully" in screen.progress
        # Judge the first question fully: the title counts it.
        await type_ahead(pilot, ["1"] * len(pool))
        assert " · sample 1/7 judged fully" in screen.progress
        assert {x["question"] for x in labels(settings)} == {first}
        before = (golden / "sample.json").read_bytes()
        # Leave, come back: the recorded sample is read again, never redrawn.
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_judging(pilot)
        # In one burst: o o reads the sample before the digit, which grades the sample's first
        # unjudged pair (the second question's first).
        second = next(q for q in recorded.questions[1:] if JudgingQueue(ws).pools[q])
        await type_ahead(pilot, ["o", "o", "2"])
        line = labels(settings)[-1]
        assert (line["question"], line["chunk"], line["grade"]) == (
            second,
            JudgingQueue(ws).pools[second][0].chunk,
            2,
        )
        assert "the recorded sample, 7 questions (seed 0)" in "\n".join(
            s.text for s in app.status_log
        )
        assert (golden / "sample.json").read_bytes() == before
        full = 1 + (len(JudgingQueue(ws).pools[second]) == 1)
        assert f" · sample {full}/7 judged fully" in screen.progress
    # The same seed draws the same sample from the same questions: recorded_or_drawn reuses it.
    again = recorded_or_drawn(golden, ids)
    assert not again.drawn and again.current and again.sample.questions == recorded.questions
    assert json.loads(before)["seed"] == 0


@run_async
async def test_a_malformed_sample_json_is_named_and_left_alone(tui_settings: Settings) -> None:
    """A sample.json that cannot be read is never replaced by a new draw (people may have judged
    its questions): the sample order says why in one line naming the file, walks nothing, and o
    goes on to the shown order."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    path = Path(settings.golden) / "sample.json"
    path.write_text('{"seed": "zero", "questions": []}')
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        await pilot.press("o", "o")
        await pilot.pause()
        assert app.status.error and "sample.json: 'seed' must be a whole number" in app.status.text
        assert screen.progress == "pair 0 of 0 · judged 0/0 · sample: none"
        await pilot.press("o")
        await pilot.pause()
        assert screen.session.queue.order == "shown" and screen.session.current is not None
    assert path.read_text() == '{"seed": "zero", "questions": []}'


def test_a_recorded_sample_is_reused_when_the_questions_changed(tmp_path: Path) -> None:
    """A sample drawn from other questions is kept (never redrawn behind the people's back) and
    the line says the estimate cannot use it and how to draw again."""
    first = recorded_or_drawn(tmp_path, [f"q{i}" for i in range(50)], 40, 3)
    assert first.drawn and first.current and first.sample.seed == 3
    assert first.sample.questions == draw_sample([f"q{i}" for i in range(50)], 40, 3).questions
    again = recorded_or_drawn(tmp_path, [f"q{i}" for i in range(51)], 40, 9)
    assert not again.drawn and not again.current and again.sample == first.sample
    assert "the estimate cannot use it (remove sample.json to draw a new one)" in again.describe()
    with pytest.raises(ValueError):
        recorded_or_drawn(tmp_path / "empty", [])


def test_the_sample_of_the_bundled_set_goes_to_the_users_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled golden set is never written: the controller copies it to the user's folder and
    records sample.json there (the bundled folder's files unchanged)."""
    from ragtui.core.data.paths import bundled_corpus, bundled_golden
    from ragtui.tui.controller import Controller

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    bundled = bundled_golden()
    before = sorted(p.name for p in bundled.iterdir())
    settings = Settings(
        corpus=bundled_corpus(),
        golden=bundled,
        cache_dir=tmp_path / "cache",
        annotator="tester",
        retrievers=("bm25",),
    )
    ws = Workspace.load(settings)
    controller = Controller(ws.settings, ws)
    change = controller.draw_sample(40, 0)
    assert change.kind == "sample"
    recorded = controller.estimate_sample
    assert recorded is not None and recorded.drawn
    assert recorded.path == tmp_path / "data" / "ragtui" / "golden" / "sample.json"
    assert recorded.path.is_file() and ws.grades.labels.path.parent == recorded.path.parent
    assert len(recorded.sample.questions) == 40 and recorded.sample.population == 68
    assert sorted(p.name for p in bundled.iterdir()) == before
    assert not (bundled / "sample.json").exists()
    assert any("copied it to" in n for n in controller.take_notices())


@run_async
async def test_a_hostile_reason_is_shown_safely(tui_settings: Settings) -> None:
    """A reason of 10 kB holding escape sequences, a bidi override and line breaks: the journal
    keeps its first 1,000 characters; the view shows two rows of it, the escape sequences removed
    whole (issue 33, item 7: their parameters were left as text, ``[31mRED ]0;pwned-title``), the
    other control characters shown as escapes, never raw, and the rows fit the width."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    pool = pool_of(settings, "m01")
    hostile = "\x1b]52;c;cGF3bmVk\x07\x1b[2J\u202e\r\nGRADE 2 NOW " + "x" * 10_000
    write_verdicts(settings, [("m01", pool[0], 1, hostile)], judge="ev\x1b[31mil")
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        await pilot.press("v")
        await pilot.pause()
        text = verdict_text(screen)
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "\\u202e GRADE 2 NOW" in text
        assert "52;c" not in text and "cGF3bmVk" not in text and "[2J" not in text
        assert "ev\\x1b[31mil: grade 1" in text
        rows = text.split("\n")
        assert len(rows) == 3 and rows[-1].endswith("…")
        width = app.size.width - 2
        from rich.cells import cell_len

        assert all(cell_len(row) <= width for row in rows), rows
        drawn = "\n".join(screen_lines(app))
        assert "\x1b" not in drawn and "GRADE 2 NOW" in drawn
        # The palette names the judge with its escape shown.
        from ragtui.tui.commands import RagtuiCommands

        provider = RagtuiCommands(app.screen)
        titles = [title for title, _, _ in provider.commands()]
        assert "labels: verify judge ev\\x1b[31mil" in titles


def test_wrap_rows() -> None:
    """A reason on at most n rows of the width: words whole, a long word cut, … when more is left."""
    assert wrap_rows("a b  c\n d", 10, 2) == ["a b c d"]
    assert wrap_rows("alpha beta gamma delta", 11, 2) == ["alpha beta", "gamma delta"]
    assert wrap_rows("alpha beta gamma delta epsilon", 11, 2) == ["alpha beta", "gamma delt…"]
    assert wrap_rows("x" * 25, 10, 2) == ["x" * 10, "x" * 9 + "…"]
    assert wrap_rows("", 10, 2) == []
    assert wrap_rows("界" * 12, 9, 2) == ["界" * 4, "界" * 4 + "…"]


@run_async
async def test_model_verdicts_do_not_make_the_queue_a_persons(tui_settings: Settings) -> None:
    """Regression: a model judge's verdict in the journal made the judging queue per person
    (``judged 0/N by NAME`` for someone alone, with no --annotator): the queue counted
    ``model:llm`` as another person."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",), annotator=None)
    write_verdicts(settings, [("m01", pool_of(settings, "m01")[0], 2, "yes")])
    ws = Workspace.load(settings)
    assert JudgingQueue(ws).person is None
    ws.grades.labels.close()


@run_async
async def test_verify_from_the_palette_and_with_no_judge(tui_settings: Settings) -> None:
    """Without verdicts v says there is nothing to verify and stays; the palette's "labels: verify
    judge NAME" opens the view verifying that judge only (the other's pairs left out)."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_judging(pilot)
        await pilot.press("v")
        await pilot.pause()
        assert not screen.session.queue.verify and "No judge has graded" in app.status.text
    pool = pool_of(settings, "m01")
    write_verdicts(settings, [("m01", pool[0], 2, "a")], judge="llm")
    write_verdicts(settings, [("m01", pool[1], 0, "b"), ("m01", pool[0], 1, "c")], judge="sim")
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        from ragtui.tui.commands import RagtuiCommands

        entries = {title: call for title, call, _ in RagtuiCommands(app.screen).commands()}
        entries["labels: verify judge llm"]()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JudgingScreen)
        assert [e.key for e in screen.session.pairs] == [("m01", pool[0])]
        assert screen.progress.startswith("verify llm · pair 1 of 1")
        assert "llm: grade 2 (answers fully) · also sim 1" in verdict_text(screen)
        # From the palette again, over the view: every judge's pairs, in the same view.
        entries["labels: verify the judges' grades"]()
        await pilot.pause()
        assert app.screen is screen
        assert [e.key for e in screen.session.pairs] == [("m01", pool[0]), ("m01", pool[1])]


@run_async
async def test_verify_over_questions_the_judge_did_not_grade(tui_settings: Settings) -> None:
    """The filter shows only questions the judge did not grade: v walks nothing and says so."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    write_verdicts(settings, [("m02", pool_of(settings, "m02")[0], 1, "d")])
    app = make_app(settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        app.main_screen.set_filter("slice:number")
        await pilot.pause()
        screen = await open_judging(pilot)
        await pilot.press("v")
        await pilot.pause()
        assert screen.session.queue.verify and screen.session.pairs == []
        assert "No pair of the questions shown has the judges' grade" in app.status.text
        assert screen.progress.startswith("verify · pair 0 of 0")
        await pilot.press("enter", "1")
        await pilot.pause()
        assert not (Path(settings.golden) / "labels.jsonl").read_text().count('"tester"')
