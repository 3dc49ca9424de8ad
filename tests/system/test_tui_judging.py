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
from ragtui.tui.widgets.chunk_view import ChunkView
from tests.app.test_tui import COMPACT, WIDE, labels, make_app, run_async, wait_ready
from tests.conftest import grade_of
from tests.system.test_tui_labelling import type_ahead


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
        assert grade_of(app.workspace.grades.labels, *second.key) is None
        assert grade_of(app.workspace.grades.labels, *first.key) == 2
        await pilot.press("left")
        await pilot.pause()
        assert session.current == first
        await pilot.press("backspace")
        await pilot.pause()
        assert grade_of(app.workspace.grades.labels, *first.key) is None
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
        body = screen.query_one(ChunkView)
        alone = body.body_text.plain
        await pilot.press("c")
        await pilot.pause()
        framed = body.body_text.plain
        assert ws.passages.by_id[entry.chunk].text in framed and len(framed) > len(alone)
        position = ws.passages.order[entry.chunk]
        neighbours = [
            c
            for c in ws.data.chunks[max(0, position - 1) : position + 2]
            if c.doc == ws.passages.by_id[entry.chunk].doc and c.id != entry.chunk
        ]
        assert neighbours and all(n.text[:40] in framed for n in neighbours)
        await pilot.press("c")
        await pilot.pause()
        assert body.body_text.plain == alone


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
        assert ws.questions.retired == ["m01"]
        assert screen.question_list.cell("m01", "mark") == "⊘"
        assert "retired" in str(screen.query_one("#question-bar").content)
        walk = screen.walk()
        assert walk is not None and "m01" not in walk.qids
        await pilot.press("u")
        await pilot.pause()
        assert "retired" not in json.loads(path.read_bytes().splitlines()[0])
        assert path.read_bytes().splitlines()[1:] == before.splitlines()[1:]
        assert "m01" in ws.evaluation.evaluated and ws.questions.retired == []
        assert "undone" in app.status.text


def test_retire_from_the_command_line_and_json(mini: Path, cache_dir: Path) -> None:
    """ragtui retire QID flags the line; eval --json lists it under retired and leaves it out of the
    means; --restore brings it back."""
    import subprocess
    import sys

    from tests.conftest import mini_args

    base = [
        sys.executable,
        "-m",
        "ragtui",
        *mini_args(mini, "--retrievers", "bm25"),
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


# ---- issue 23: every line in view at 80x24, a queue per person, blind as a setting -------------

#: A page as MkDocs writes them: every heading with its ``{ #anchor }``, four levels deep.
CORS_PAGE = """# FastAPI { #fastapi }

## Tutorial - User Guide { #tutorial-user-guide }

### CORS (Cross-Origin Resource Sharing) { #cors-cross-origin-resource-sharing }

#### Allowed hosts { #use-corsmiddleware }

You can configure it in your FastAPI application using the CORSMiddleware.
Import CORSMiddleware, create a list of allowed origins as strings, and add it as a middleware to your application.
"""
#: The chunk of the page holding m08's evidence, under all four headings.
CORS_CHUNK = "tutorial/cors.md#2"


def add_cors_page(settings: Settings) -> None:
    """Add the MkDocs page and question m08 (its evidence in ``CORS_CHUNK``) to the mini set."""
    page = Path(settings.corpus) / "tutorial" / "cors.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(CORS_PAGE)
    question = {
        "id": "m08",
        "question": "Which origins may call the API from a browser?",
        "evidence": "create a list of allowed origins as strings",
        "slices": ["lookup"],
    }
    with open(Path(settings.golden) / "questions.jsonl", "a") as fh:
        fh.write(json.dumps(question) + "\n")


def grade_as(settings: Settings, who: str, pairs, adjudicate: bool = False) -> None:
    """Write ``who``'s grades of ``pairs`` ((question, chunk, grade), ...) as real journal lines."""
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(dataclasses.replace(settings, annotator=who, retrievers=("bm25",)))
    for qid, cid, grade in pairs:
        ws.set_grade(qid, cid, grade, adjudicate=adjudicate)
    ws.grades.labels.close()


def screen_lines(app) -> list[str]:
    """The text of every row of the screen as the terminal shows it."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def open_on(pilot, qid: str, cid: str | None = None) -> JudgingScreen:
    """Select ``qid`` in the main screen, press j, and move right to ``cid`` (without grading)."""
    main = pilot.app.main_screen
    main.question_list.select_qid(qid)
    main.select_question(qid)
    await pilot.pause()
    screen = await _open(pilot)
    if cid is not None:
        for _ in range(len(screen.session.pairs)):
            if screen.session.current is not None and screen.session.current.chunk == cid:
                break
            await pilot.press("right")
        await pilot.pause()
        assert screen.session.current is not None and screen.session.current.chunk == cid
    return screen


def assert_every_line_shown(app, screen: JudgingScreen) -> list[str]:
    """The question, the id and heading path, the ranks (or blind) with the grade, the annotators
    when shown, the legend: each on its own row of the terminal, none cut off."""
    rows = screen_lines(app)
    meta = screen.query_one("#judge-meta").content
    lines = meta.plain.split("\n")
    width = app.size.width - 2
    from rich.cells import cell_len

    assert all(cell_len(line) <= width for line in lines), lines
    for line in lines:
        assert any(line.strip() in row for row in rows), (line, rows)
    assert screen.query_one("#judge-meta").region.height == len(lines)
    assert any("0 not relevant" in row and "2 answers fully" in row for row in rows), rows
    assert any("pair " in row and " of " in row for row in rows), rows
    return rows


@run_async
async def test_every_line_stays_in_view_at_80x24_with_a_long_heading_path(
    tui_settings: Settings,
) -> None:
    """Regression (issue 23, finding 3): a chunk under four MkDocs headings (``{ #anchor }`` kept in
    its heading path) wrapped the path into the row of the ranks and grade, which was lost. Now the
    path is one row (anchors dropped, the middle left out with …), the ranks and grade the next."""
    add_cors_page(tui_settings)
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_on(pilot, "m08", CORS_CHUNK)
        rows = assert_every_line_shown(app, screen)
        meta = screen.query_one("#judge-meta").content.plain.split("\n")
        assert meta[0].startswith(CORS_CHUNK + "  FastAPI › … › ") and "{" not in meta[0]
        assert meta[0].endswith("Allowed hosts"), meta[0]
        assert "bm25 #1" in meta[1] and "grade 2 (evidence)" in meta[1]
        assert any("bm25 #1" in row and "grade 2 (evidence)" in row for row in rows)
        assert any("m08" in row and "Which origins" in row for row in rows)


@run_async
async def test_adjudicating_three_annotators_at_80x24(tui_settings: Settings) -> None:
    """Finding 3 when adjudicating: the annotators' line stays in view under a long heading path,
    with ``disputed: a digit settles it``; one digit settles the pair."""
    add_cors_page(tui_settings)
    for who, grade in (("alice", 2), ("bob", 0), ("carol", 1)):
        grade_as(tui_settings, who, [("m08", CORS_CHUNK, grade)])
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        app.main_screen.set_filter("disputed")
        await pilot.pause()
        screen = await _open(pilot)
        assert screen.adjudicate and screen.session.current.key == ("m08", CORS_CHUNK)
        rows = assert_every_line_shown(app, screen)
        line = "! annotators: alice 2 · bob 0 · carol 1  disputed: a digit settles it"
        assert any(line in row for row in rows), rows
        assert any("hybrid #" in row and "grade 1 (hand)" in row for row in rows), rows
        await pilot.press("2")
        await wait_ready(pilot)
        assert app.workspace.grades.grade_source("m08", CORS_CHUNK) == (2, "adjudicated")
        rows = assert_every_line_shown(app, screen)
        assert any("  annotators: alice 2 · bob 0 · carol 1" in row for row in rows), rows
        assert not any("disputed" in row for row in rows)


@run_async
async def test_a_second_annotator_has_a_queue_of_their_own(tui_settings: Settings) -> None:
    """Regression (issue 23, finding 4): alice judged every pooled pair; bob (--annotator bob) saw
    ``judged N/N`` and needed two keys a pair. Now his pairs are unjudged by him (and the view and
    the main screen say so), and each digit grades one pair and moves on."""
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(dataclasses.replace(tui_settings, retrievers=("bm25",)))
    every = [(q.id, c.id, 1) for q in ws.questions for c in ws.data.chunks]
    grade_as(tui_settings, "alice", every)
    bob = dataclasses.replace(tui_settings, annotator="bob")
    app = make_app(bob)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        progress = str(app.main_screen.query_one("#questions").border_subtitle)
        assert progress.startswith("judged 0/") and " by bob" in progress, progress
        screen = await _open(pilot)
        session = screen.session
        assert "judged 0/" in screen.progress and "by bob" in screen.progress
        meta = screen.query_one("#judge-meta").content.plain
        # Issue 33: alice's grade is hidden until bob grades the pair (the rule's is shown).
        assert "unjudged by bob" in meta and "1 other grade: shown once you grade" in meta
        assert "alice" not in meta and "(hand)" not in meta
        expected = [e.key for e in session.pairs[:5]]
        before = len(labels(bob))
        await type_ahead(pilot, ["0", "2", "0", "2", "0"])
        mine = [x for x in labels(bob)[before:] if x["annotator"] == "bob"]
        assert [(x["question"], x["chunk"], x["grade"]) for x in mine] == [
            (q, c, g) for (q, c), g in zip(expected, [0, 2, 0, 2, 0], strict=True)
        ], "one digit a pair"
        assert all(x["independent"] is True for x in mine), "alice's grades were hidden"
        assert session.position == 5 and "judged 5/" in screen.progress
        # alice's grades still count as hers: every pair keeps its grade from her or bob.
        assert app.workspace.grades.annotator_grades(*expected[1]) == {"alice": 1, "bob": 2}


@run_async
async def test_the_dispute_line_appears_right_after_grading(tui_settings: Settings) -> None:
    """Regression (issue 23, finding 5): grading the last unjudged pair (the view stays) into a
    dispute did not show the annotators' line until the pair was left; and ``disputed: a digit
    settles it`` showed outside the adjudication pass."""
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(dataclasses.replace(tui_settings, retrievers=("bm25",)))
    every = [(q.id, c.id) for q in ws.questions for c in ws.data.chunks]
    last = ("m01", "ferry.md#1")
    grade_as(tui_settings, "alice", [(*last, 2)])
    grade_as(tui_settings, "bob", [(q, c, 1) for q, c in every if (q, c) != last])
    bob = dataclasses.replace(tui_settings, annotator="bob")
    app = make_app(bob)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        assert screen.session.current.key == last, "the only pair bob has not judged"
        await pilot.press("0")
        await wait_ready(pilot)
        assert screen.session.current.key == last, "every pair judged: the view stays"
        rows = assert_every_line_shown(app, screen)
        assert any("! annotators: alice 2 · bob 0  disputed" in row for row in rows), rows
        assert not any("a digit settles it" in row for row in rows)


@run_async
async def test_blind_is_a_setting_that_stays_and_hides_the_rule(tui_settings: Settings) -> None:
    """Regression (issue 23, finding 4): blind mode reset each time j opened and still showed
    ``grade 2 (evidence)`` and the evidence highlight. ``b`` now holds for the session (and
    ``blind = true`` starts every session blind)."""
    add_cors_page(tui_settings)
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_on(pilot, "m08", CORS_CHUNK)
        evidence_style = screen.query_one("#judge-chunk").get_component_rich_style(
            "chunk-view--evidence"
        )

        def highlighted() -> bool:
            text = screen.query_one(ChunkView).body_text
            return any(span.style == evidence_style for span in text.spans)

        assert highlighted() and "grade 2 (evidence)" in str(
            screen.query_one("#judge-meta").content
        )
        await pilot.press("b")
        await pilot.pause()
        meta = screen.query_one("#judge-meta").content.plain
        # --annotator tester: a person's own queue, so blind shows only their own grade.
        assert "blind: the retrievers are hidden  ·  unjudged by tester" in meta
        assert "evidence" not in meta and "bm25" not in meta and not highlighted()
        assert "blind" in screen.progress
        assert_every_line_shown(app, screen)
        await pilot.press("escape")
        await pilot.pause()
        screen = await open_on(pilot, "m08", CORS_CHUNK)
        assert screen.blind and "bm25" not in screen.query_one("#judge-meta").content.plain
        assert not highlighted()
        await pilot.press("2")
        await wait_ready(pilot)
        await pilot.press("left")
        await pilot.pause()
        assert "grade 2 (yours)" in screen.query_one("#judge-meta").content.plain
    # The setting: every session starts blind; one person (no --annotator, no one else's grade in
    # the journal): the rule's grade hidden.
    (Path(tui_settings.golden) / "labels.jsonl").unlink()
    app = make_app(dataclasses.replace(tui_settings, blind=True, annotator=None))
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await open_on(pilot, "m08", CORS_CHUNK)
        meta = screen.query_one("#judge-meta").content.plain
        assert screen.blind and "blind: the retrievers are hidden  ·  no hand grade" in meta


def test_heading_row_fits_any_width() -> None:
    """The id and heading path in one row of any width: anchors, code ticks and bold marks
    dropped, headings left out from the middle, then the id and the last heading cut with …; the
    document named only when the id does not name it."""
    from rich.cells import cell_len

    from ragtui.tui.judging_session import clean_heading, heading_row

    assert clean_heading("Use `CORSMiddleware` { #use-corsmiddleware }") == "Use CORSMiddleware"
    assert clean_heading("**Bold** heading {: #id .cls }") == "Bold heading"
    assert clean_heading("Closed heading ##") == "Closed heading"
    assert clean_heading("Odd\x1b[31m {not an anchor}") == "Odd\\x1b[31m {not an anchor}"
    headings = [
        "FastAPI { #fastapi }",
        "Tutorial - User Guide { #tutorial-user-guide }",
        "CORS (Cross-Origin Resource Sharing) { #cors-cross-origin-resource-sharing }",
        "Use CORSMiddleware { #use-corsmiddleware }",
    ]
    cid, doc = "docs/en/docs/tutorial/cors.md#3", "docs/en/docs/tutorial/cors.md"
    assert heading_row(cid, doc, headings, 200) == (
        cid,
        "FastAPI › Tutorial - User Guide › CORS (Cross-Origin Resource Sharing) › Use CORSMiddleware",
    )
    assert heading_row(cid, doc, headings, 78) == (cid, "FastAPI › … › Use CORSMiddleware")
    assert heading_row(cid, doc, headings, 60) == (cid, "… › Use CORSMiddleware")
    for width in range(4, 120):
        shown, place = heading_row(cid, doc, headings, width)
        assert cell_len(shown) + (2 + cell_len(place) if place else 0) <= width, width
    # An id that does not name its document (the team's own chunks): the document leads the path.
    assert heading_row("c-17", "guide.md", ["Intro"], 78) == ("c-17", "guide.md › Intro")


# ---- issue 33: each person's grade their own, and the screen says what was saved -------------


@run_async
async def test_a_new_annotator_on_an_adjudicated_pair_reads_their_own_grade(
    tui_settings: Settings,
) -> None:
    """Issue 33, finding 3: dan pressed 1 on a pair adjudicated 2 and read ``→ grade 2
    (adjudicated)``; now ``→ your 1; the adjudicated 2 counts``, and the journal holds his 1."""
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(dataclasses.replace(tui_settings, retrievers=("bm25",)))
    cid = ws.ranking("bm25", "m01")[0][0]
    grade_as(tui_settings, "alice", [("m01", cid, 2)])
    grade_as(tui_settings, "bob", [("m01", cid, 0)])
    grade_as(tui_settings, "carol", [("m01", cid, 2)], adjudicate=True)
    app = make_app(dataclasses.replace(tui_settings, annotator="dan"))
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        assert screen.session.current.key == ("m01", cid)
        meta = screen.query_one("#judge-meta").content.plain
        assert "2 other grades: shown once you grade" in meta and "alice" not in meta
        await pilot.press("1")
        await wait_ready(pilot)
        assert f"saved: m01 {cid} → your 1; the adjudicated 2 counts (u undoes)" in (
            app.status.text
        )
        last = labels(tui_settings)[-1]
        assert (last["annotator"], last["grade"], last["independent"]) == ("dan", 1, True)


@run_async
async def test_backspace_on_a_pair_never_graded_writes_nothing_and_says_so(
    tui_settings: Settings,
) -> None:
    """Issue 33, finding 7: backspace on a pair never graded appended ``"grade": null`` and said
    "saved"; now nothing is written and the status says there was nothing to clear."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        qid, cid = screen.session.current.key
        before = labels(tui_settings)
        await pilot.press("backspace")
        await wait_ready(pilot)
        assert labels(tui_settings) == before
        assert app.status.error
        assert f"Nothing to clear: {qid} {cid} has no grade of yours" in app.status.text
        # Graded (the view moves on), back on it, cleared: one line each, and the status says
        # what counts again.
        await pilot.press("2")
        await wait_ready(pilot)
        await pilot.press("left")
        await wait_ready(pilot)
        assert screen.session.current.key == (qid, cid)
        await pilot.press("backspace")
        await wait_ready(pilot)
        assert [x["grade"] for x in labels(tui_settings)[len(before) :]] == [2, None]
        assert "your grade removed;" in app.status.text and "counts (u undoes)" in app.status.text


@run_async
async def test_show_others_shows_a_colleague_s_grade_before_grading_and_records_it(
    tui_settings: Settings,
) -> None:
    """Issue 33: ``--show-others`` (a team that wants them) shows alice's grade in bob's queue
    before he grades; his grade is then recorded as not independent."""
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(dataclasses.replace(tui_settings, retrievers=("bm25",)))
    grade_as(tui_settings, "alice", [(q.id, c.id, 1) for q in ws.questions for c in ws.data.chunks])
    bob = dataclasses.replace(tui_settings, annotator="bob", show_others=True)
    app = make_app(bob)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = await _open(pilot)
        meta = screen.query_one("#judge-meta").content.plain
        assert "grade 1 (hand) · unjudged by bob" in meta and "annotators: alice 1" in meta
        await pilot.press("2")
        await wait_ready(pilot)
        last = labels(tui_settings)[-1]
        assert (last["annotator"], last["grade"], last["independent"]) == ("bob", 2, False)
