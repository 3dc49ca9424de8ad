"""What a key costs (issue 26, two frames a key at 100,000 questions): the chunk view renders the
lines on screen and no layout pass of the screen, the metric panel repaints the rows that changed,
the judging view's judged count follows the journal lines added, the judging view's pools are
frozen with the workspace, and the matched-passage search gives the answers it always gave."""

from __future__ import annotations

import dataclasses
import gc
import json
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual._compositor import Compositor
from textual._styles_cache import StylesCache
from textual.content import _FormattedLine
from textual.geometry import Offset
from textual.screen import Screen
from textual.selection import Selection

from ragtui.core.data import golden
from ragtui.core.data.golden import evidence_spans, passage_start, query_terms, term_spans
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.judging_session import JudgingSession, JudgingWalk
from ragtui.tui.screens.judging import JudgingScreen
from ragtui.tui.widgets.chunk_view import ChunkView
from tests.app.test_tui import WIDE, main_screen, make_app, metric_rows, run_async, wait_ready
from tests.system.test_tui_judging import grade_as

#: The long page: a heading and this many short lines, the evidence on the line EVIDENCE_LINE.
LONG_LINES = 200
EVIDENCE_LINE = 150


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (fake vectors never reach the shared one)."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


@pytest.fixture
def long_settings(tui_settings: Settings) -> Settings:
    """The mini set with a page of 200 short lines in one chunk, and question m09 whose evidence
    is line 150 of it."""
    lines = [f"Line {i} of the long page." for i in range(LONG_LINES)]
    lines[EVIDENCE_LINE] = "The lighthouse keeper rings the bell at noon."
    (Path(tui_settings.corpus) / "long.md").write_text("# Long page\n\n" + "\n".join(lines) + "\n")
    question = {
        "id": "m09",
        "question": "lighthouse keeper bell at noon",
        "evidence": "The lighthouse keeper rings the bell at noon.",
    }
    with open(Path(tui_settings.golden) / "questions.jsonl", "a") as fh:
        fh.write(json.dumps(question) + "\n")
    return dataclasses.replace(tui_settings, chunk_size=4000)


@contextmanager
def lines_rendered() -> Iterator[dict[str, int]]:
    """Lines rendered per widget id (Textual's ``StylesCache.render_line``) while in the block."""
    counts: dict[str, int] = {}
    original = StylesCache.render_line

    def counting(self: StylesCache, *args: object, **kwargs: object) -> object:
        owner = getattr(args[7], "__self__", None)
        key = str(getattr(owner, "id", None))
        if owner is not None and owner.id is None:  # a scrollbar: by the widget it scrolls
            key = f"{type(owner).__name__}:{getattr(owner.parent, 'id', None)}"
        counts[key] = counts.get(key, 0) + 1
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    StylesCache.render_line = counting  # type: ignore[assignment,method-assign]
    try:
        yield counts
    finally:
        StylesCache.render_line = original  # type: ignore[method-assign]


def screen_text(app: object) -> str:
    """What the terminal shows."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())  # type: ignore[attr-defined]


def screen_cells(app: object) -> list[list[tuple[str, str]]]:
    """What the terminal shows, cell by cell with each cell's style."""
    return [
        [(char, str(segment.style)) for segment in strip for char in segment.text]
        for strip in app.screen._compositor.render_strips()  # type: ignore[attr-defined]
    ]


async def repainted_whole(pilot: object) -> list[list[tuple[str, str]]]:
    """The screen after every widget on it is drawn again from scratch."""
    app = pilot.app  # type: ignore[attr-defined]
    for widget in app.screen.walk_children(with_self=True):
        widget.refresh()
        for bar in (widget._vertical_scrollbar, widget._horizontal_scrollbar):
            if bar is not None:
                bar.refresh()
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    return screen_cells(app)


@run_async
async def test_a_long_chunk_renders_only_the_lines_in_view(
    long_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk of 200 lines scrolled to its evidence: the lines on screen are rendered, not the
    200 (a Static rendered and wrapped every line of the text, twice a move); the evidence is on
    screen, the header scrolled away as before, and the same chunk shown again renders nothing new."""
    rendered: list[str] = []
    original = _FormattedLine.to_strip

    def counting(self: _FormattedLine, *args: object, **kwargs: object) -> object:
        if "of the long page" in self.content.plain:
            rendered.append(self.content.plain)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_FormattedLine, "to_strip", counting)
    app = make_app(long_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        view = screen.chunk_view
        rendered.clear()
        screen.question_list.select_qid("m09")
        await wait_ready(pilot)
        assert screen.current_qid == "m09"
        assert "lighthouse keeper rings the bell" in view.body_text.plain
        height = view.scrollable_content_region.height
        assert 0 < len(rendered) <= height, f"{len(rendered)} lines rendered for {height} in view"
        shown = screen_text(app)
        assert "The lighthouse keeper rings the bell at noon." in shown
        assert f"Line {EVIDENCE_LINE - 1} of the long page." in shown  # one line above it
        assert "chars 0–" not in shown  # the header scrolled away with the text
        assert view.scroll_y > EVIDENCE_LINE - 5 and view.max_scroll_y > view.scroll_y
        # Away and back: the same text, highlights and width are drawn from what was rendered.
        screen.question_list.select_qid("m01")
        await wait_ready(pilot)
        rendered.clear()
        screen.question_list.select_qid("m09")
        await wait_ready(pilot)
        assert rendered == []
        assert "The lighthouse keeper rings the bell at noon." in screen_text(app)


@run_async
async def test_a_question_move_repaints_the_questions_rows_without_a_layout(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Down through the question list: the metric panel repaints one row a retriever (the
    question's, not the whole set's), the chunk view the lines in its frame, and the screen is
    laid out again only when something changed size (the question bar's rows, a scrollbar coming
    or going): the chunk view and the result lists set their own scroll range."""
    reflows: list[int] = []
    paints: list[int] = []
    original = Compositor.reflow
    original_paint = Screen._compositor_refresh

    def counting(self: Compositor, *args: object, **kwargs: object) -> object:
        reflows.append(1)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    def painting(self: Screen[object]) -> None:
        paints.append(1)
        original_paint(self)

    monkeypatch.setattr(Compositor, "reflow", counting)
    monkeypatch.setattr(Screen, "_compositor_refresh", painting)
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        bar = screen.query_one("#question-bar")
        scrolling = [screen.chunk_view, *map(screen.result_list, app.retrievers)]

        def sizes() -> tuple[object, ...]:
            return (bar.size.height, *(w.show_vertical_scrollbar for w in scrolling))

        quiet = 0
        for _ in range(len(screen.visible_ids) - 1):
            before, shape = dict(metric_rows(app)), sizes()
            reflows.clear()
            paints.clear()
            with lines_rendered() as counts:
                await pilot.press("down")
                await wait_ready(pilot)
            qid = screen.current_qid
            rows = metric_rows(app)
            assert all(rows[key] == value for key, value in before.items() if key[1] == "all")
            assert {key for key in rows if key[1] == qid} == {(r, qid) for r in app.retrievers}
            assert counts.get("metrics", 0) <= len(app.retrievers), counts
            # The lines in the frame, and the frame's top line for the title.
            assert 0 < counts.get("chunk", 0) <= screen.chunk_view.size.height + 1
            # One frame, also when the question bar took another number of rows and the panes
            # below it were resized (Textual laid them out again a frame later, and painted
            # their scrollbars once more the frame after).
            assert len(paints) == 1, qid
            if sizes() == shape:
                assert reflows == [], qid
                quiet += 1
            # What a key drew, without a full repaint, is what a full repaint draws (no list,
            # scrollbar or metric row left as it was).
            assert screen_cells(app) == await repainted_whole(pilot), qid
        assert quiet >= 2


@run_async
async def test_a_mouse_selection_in_the_chunk_view_gives_the_words_under_it(
    tui_settings: Settings,
) -> None:
    """The chunk view is drawn a paragraph at a time, yet a character's offset (what a mouse
    selection reads under the pointer) names its row in the whole text: a selection highlights
    and copies the characters drawn under it, in the header and in the text."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        view = main_screen(app).chunk_view
        region = view.content_region
        checked = 0
        for y in range(region.y, region.bottom):
            line = screen_text(app).splitlines()[y]
            x = region.x
            if not line[x : x + 4].strip():
                continue  # a blank row (the margin under the header)
            widget, offset = app.screen.get_widget_and_offset_at(x, y)
            assert widget is view and offset is not None
            app.screen.selections = {view: Selection(offset, offset + Offset(4, 0))}
            await pilot.pause()
            assert app.screen.get_selected_text() == line[x : x + 4], (y, offset)
            checked += 1
        assert checked >= 3
        app.screen.clear_selection()


@pytest.fixture
def many_settings(tui_settings: Settings) -> Settings:
    """The mini corpus with 2,000 questions (the mini ones repeated under new ids)."""
    golden = Path(tui_settings.golden)
    source = [json.loads(x) for x in (golden / "questions.jsonl").read_text().splitlines() if x]
    lines = (json.dumps({**source[i % len(source)], "id": f"s{i:04d}"}) for i in range(2000))
    (golden / "questions.jsonl").write_text("\n".join(lines) + "\n")
    return tui_settings


@run_async
async def test_the_question_lists_scrollbar_is_repainted_when_its_thumb_moves(
    many_settings: Settings,
) -> None:
    """Down past the last row shown, ten times, in a list of 2,000 questions: the list scrolls a
    row each time, its scrollbar's thumb moves by less than the eighth of a cell it is drawn in
    most times, and the scrollbar is repainted only when it does move; what is on screen is what
    a full repaint of the scrollbar draws."""
    app = make_app(many_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        questions = screen.question_list
        bar = questions.vertical_scrollbar
        rows = questions.scrollable_content_region.height - questions.header_height
        for _ in range(rows - 1):
            await pilot.press("down")
        await wait_ready(pilot)
        assert questions.scroll_y == 0
        painted = 0
        for step in range(10):
            with lines_rendered() as counts:
                await pilot.press("down")
                await wait_ready(pilot)
            assert questions.scroll_y == step + 1
            assert counts.get("question-list", 0) >= rows  # the rows moved up: all drawn again
            painted += bool(counts.get("ScrollBar:question-list"))
        assert painted <= 2
        shown = screen_text(app)
        bar.refresh()
        await pilot.pause()
        assert screen_text(app) == shown
        assert bar.position == questions.scroll_y


def _brute(session: JudgingSession) -> int:
    return sum(1 for entry in session.pairs if session.is_judged(entry))


def test_walk_totals_follow_the_journal_lines_added(tui_settings: Settings) -> None:
    """Issue 34: the main screen's progress line (every move shows it) counts the judged pairs
    once, then again only for the questions labelled since: a key costs the new labels' questions,
    not every labelled one; the totals equal counting every question after each change, an undo,
    another annotator's lines and a journal read again from its start."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    ws = Workspace.load(settings)
    qids = [q.id for q in ws.questions]
    walk = JudgingWalk(ws, qids)

    def brute() -> int:
        return sum(walk.queue.count(q).judged for q in qids)

    pairs = [entry.key for qid in qids for entry in walk.pairs(qid)]
    counted: list[str] = []
    count = walk.queue.count

    def counting(qid):  # type: ignore[no-untyped-def]
        counted.append(qid)
        return count(qid)

    walk.queue.count = counting  # type: ignore[method-assign]
    rng = random.Random(11)
    for step in range(30):
        qid, cid = rng.choice(pairs)
        ws.set_grade(qid, cid, rng.choice([0, 1, 2, None]))
        walk.totals()
        assert walk._positions is None, "whether a question is walked: a set, not the places"
        counted.clear()
        assert walk.totals().judged == brute(), step
        counted.clear()
        walk.totals()
        assert counted == [], "no new label: nothing counted again"
        if step % 7 == 3:
            ws.grades.labels.undo()
            assert walk.totals().judged == brute()
    qid, cid = pairs[0]
    ws.set_grade(qid, cid, 2)
    counted.clear()
    walk.totals()
    assert counted == [qid], "one label: its question counted again"
    grade_as(settings, "alice", [(*pairs[1], 2)])
    ws.grades.labels.refresh()
    assert walk.totals().judged == brute()
    ws.grades.labels.compact()
    ws.grades.labels.refresh()
    assert walk.totals().judged == brute()


def test_the_peoples_queue_pools_a_question_when_the_walk_reaches_it(
    tui_settings: Settings,
) -> None:
    """Opening the judging view pooled every question shown (3.4 s at 100,000 questions): the
    session now pools the question it opens on and those the walk reaches, and reads the same
    pairs, positions and counts as listing every pair first."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    ws = Workspace.load(settings)
    qids = [q.id for q in ws.questions]
    rng = random.Random(5)
    graded = rng.sample([(q, e.chunk) for q in qids for e in JudgingWalk(ws, qids).pairs(q)], 9)
    for qid, cid in graded:
        ws.set_grade(qid, cid, rng.choice([0, 1, 2]))
    last = [e.chunk for e in JudgingWalk(ws, qids).pairs(qids[-1])]
    ws.set_grade(qids[-1], last[0], 2)  # the last question has a judged pair
    start = qids[len(qids) // 2]
    walk = JudgingWalk(ws, qids)
    pooled: list[str] = []
    pool = walk.queue.pool

    def pooling(qid: str, rankings=None):  # type: ignore[no-untyped-def]
        pooled.append(qid)
        return pool(qid, rankings)

    walk.queue.pool = pooling  # type: ignore[method-assign]
    session = JudgingSession(walk, (start, None))
    assert start in pooled and len(set(pooled)) <= 3, "the question opened on, not every one"
    listed = [
        e
        for q in qids
        for e in sorted(walk.pairs(q), key=lambda e: walk.queue.is_judged(q, e.chunk))
    ]
    assert session.current == next(
        e for e in listed if e.question == start and not walk.queue.is_judged(*e.key)
    )
    pairs = session.pairs
    assert len(pairs) == len(listed) and list(pairs) == listed
    for i in rng.sample(range(len(listed)), min(20, len(listed))):
        assert pairs[i] == listed[i] and pairs[i - len(listed)] == listed[i]
        assert session._find(listed[i].key) == listed.index(listed[i])
    assert pairs[3:9] == listed[3:9] and pairs[::-5] == listed[::-5]
    with pytest.raises(IndexError):
        pairs[len(listed)]
    for qid in qids:
        first = next((i for i, e in enumerate(listed) if e.question == qid), None)
        assert session._first(qid) == first
    assert session._find((start, "no-such-chunk")) is None and session._first("nope") is None
    assert session.judged_count() == sum(1 for e in listed if session.is_judged(e))
    # Rankings that change while the view is open (another retriever's arrive, one is computed
    # again): a question reached afterwards still fills the places counted when it opened, and
    # the count is of those places (a walk of its own: none of its pools is read yet).
    fresh = JudgingSession(JudgingWalk(ws, qids), (start, None))
    changed = ws.ranked.rankings["bm25"].copy()  # type: ignore[attr-defined]
    other = next(
        c for c in ws.data.chunk_ids if c not in last and not walk.queue.is_judged(qids[-1], c)
    )
    changed[qids[-1]] = [(other, 1.0)]
    ws.ranked = ws.ranked.with_rankings("bm25", changed)
    assert len(walk.queue.pool(qids[-1])) != sum(1 for e in listed if e.question == qids[-1])
    assert list(fresh.pairs) == listed and fresh.walk.queue.pools._done == {}
    ws.set_grade(qids[-1], last[-1], 1)  # the count of the pairs on the view, not of the new pool
    assert fresh.judged_count() == sum(1 for e in listed if fresh.is_judged(e))
    ws.grades.labels.close()


def test_walk_totals_count_again_when_the_queue_becomes_a_persons(tui_settings: Settings) -> None:
    """With one person grading, any hand grade counts as judged (an unnamed line of an older
    journal too); once another person's lines arrive, only the current annotator's own grades do,
    and the totals count every question again, not only the new lines' questions."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",), annotator=None)
    ws = Workspace.load(settings)
    qids = [q.id for q in ws.questions]
    walk = JudgingWalk(ws, qids)
    pairs = [entry.key for qid in qids for entry in walk.pairs(qid)]
    ws.grades.labels.close()
    # An older journal's line: no annotator.
    grade_as(settings, "old", [(*pairs[0], 2)])
    journal = settings.golden / "labels.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        line.pop("annotator", None)
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ws = Workspace.load(settings)
    walk = JudgingWalk(ws, qids)
    assert walk.queue.person is None
    assert walk.totals().judged == 1
    other = next(key for key in pairs if key[0] != pairs[0][0])
    grade_as(settings, "alice", [(*other, 1)])
    ws.grades.labels.refresh()
    assert walk.queue.person is not None
    assert walk.totals().judged == sum(walk.queue.count(q).judged for q in qids) == 0
    ws.grades.labels.close()


def test_judged_count_follows_the_journal_lines_added(tui_settings: Settings) -> None:
    """The judging view's count of judged pairs after each change equals counting every pair;
    a grade costs the pairs of its question only (it went over every pair, 500,000 at 100,000
    questions, twice a key); another annotator, a journal read again from its start and an undo
    give the right count too."""
    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    ws = Workspace.load(settings)
    qids = [q.id for q in ws.questions]
    session = JudgingSession(JudgingWalk(ws, qids))
    pairs = [entry.key for entry in session.pairs]
    assert session.judged_count() == _brute(session)
    asked: list[tuple[str, str]] = []
    queue = session.walk.queue
    is_judged = queue.is_judged

    def counting(qid: str, cid: str) -> bool:
        asked.append((qid, cid))
        return is_judged(qid, cid)

    queue.is_judged = counting  # type: ignore[method-assign]
    rng = random.Random(7)
    for step in range(40):
        qid, cid = rng.choice(pairs)
        asked.clear()
        ws.set_grade(qid, cid, rng.choice([0, 1, 2, None]))
        count = session.judged_count()
        assert {q for q, _ in asked} <= {qid}, "only the graded question's pairs are asked"
        assert len(asked) <= sum(1 for q, _ in pairs if q == qid)
        assert count == _brute(session), step
        if step % 7 == 3:
            ws.grades.labels.undo()
            assert session.judged_count() == _brute(session)
    # Another annotator's lines, read from the journal: several people grade now (whose queue
    # it is changes: every pair is counted again).
    grade_as(settings, "alice", [(*pairs[0], 2), (*pairs[1], 0)])
    ws.grades.labels.refresh()
    assert session.judged_count() == _brute(session)
    # The journal read again from its start (compacted by another session).
    ws.grades.labels.compact()
    ws.grades.labels.refresh()
    assert session.judged_count() == _brute(session)
    ws.grades.labels.close()


@run_async
async def test_the_judging_views_pools_are_frozen_once_drawn(tui_settings: Settings) -> None:
    """Once the judging view is drawn, its session's pairs leave the garbage collector's walk
    with the workspace (when opening the view built every pooled pair, 500,000 at 100,000
    questions, a full collection walked them for 0.5 s in the first key)."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("j")
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, JudgingScreen) and screen.session.pairs
        pairs = screen.session.pairs
        assert not any(obj is pairs for obj in gc.get_objects())
        assert screen.query_one(ChunkView).body_text.plain


# ---- the passage that matched: the same answers, faster ----------------------------------------


def _old_term_spans(text: str, question: str) -> list[tuple[int, int]]:
    terms = {t for t in query_terms(question) if t not in golden._STOPWORDS}
    if not terms:
        return []
    return [m.span() for m in re.finditer(r"\w+", text) if m.group().lower() in terms]


def _old_passage_start(text: str, question: str, window: int) -> tuple[int, str]:
    terms = _old_term_spans(text, question)
    if not terms:
        return 0, "start"
    best_start, best_count = 0, -1
    for i, (start, _) in enumerate(terms):
        seen = {text[s:e].lower() for s, e in terms[i:] if e <= start + window}
        if len(seen) > best_count:
            best_start, best_count = start, len(seen)
    return golden._word_start(text, best_start), "terms"


def test_term_spans_and_passage_start_answer_as_before() -> None:
    """The question terms found from each text's word index, and the densest window found by a
    sliding count, give what a scan of every word and a count of every window gave (Unicode
    case, long words, control characters, repeated words, empty questions)."""
    vocab = ["Ferry", "ferry", "İstanbul", "straße", "STRASSE", "ß", "the", "a", "x" * 250]
    vocab += ["tickets", "Ticket", "K", "\u212a", "naïve", "ＡＢＣ", "abc", "1999", "snake_case"]
    rng = random.Random(3)
    for _ in range(2000):
        words = [rng.choice(vocab) for _ in range(rng.randint(0, 80))]
        seps = [rng.choice([" ", "\n", ", ", "—", "\t", "\x1b[31m"]) for _ in words]
        text = "".join(w + s for w, s in zip(words, seps, strict=True))
        question = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 5)))
        window = rng.choice([5, 30, 200])
        assert term_spans(text, question) == _old_term_spans(text, question)
        assert passage_start(text, (), question, window) == _old_passage_start(
            text, question, window
        )
        assert evidence_spans(text, ()) == []
