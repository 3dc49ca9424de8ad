"""Pilot tests of the Textual app on the small fixed corpus, with a deterministic fake embedder."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.dialogs import LoadErrorScreen, ProblemsScreen, PromptScreen
from ragtui.tui.screens.help import HelpScreen
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.widgets.question_list import QuestionList
from ragtui.tui.widgets.result_list import ResultList

#: The two terminal sizes every layout is tried at: compact and wide.
COMPACT = (80, 24)
WIDE = (120, 40)


class FakeEmbedder:
    """Deterministic embeddings: each word hashed into one of a few dimensions, rows of unit length."""

    max_seq_length = 256

    def __init__(self, dims: int = 16) -> None:
        """Vectors of ``dims`` dimensions."""
        self.dims = dims
        #: Its vectors are cached apart from the real model's.
        self.cache_name = f"fake-embedder-{dims}"
        #: How many texts were encoded (0 when everything came from the cache).
        self.encoded = 0

    def encode(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """One unit row per text: word counts hashed into ``dims`` buckets."""
        rows = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dims] += 1.0
            norm = float(np.linalg.norm(rows[i]))
            if norm == 0.0:
                rows[i, 0], norm = 1.0, 1.0
            rows[i] /= norm
        self.encoded += len(texts)
        if progress:
            progress(len(texts), len(texts))
        return rows


class BrokenEmbedder:
    """An embedder whose model cannot be loaded, as a missing sentence-transformers model."""

    max_seq_length = 256
    cache_name = "broken-embedder"

    def encode(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Fail like ``Embedder`` does when the model is missing."""
        raise InputError("no-such-model", "cannot load embedding model: not found")


def run_async(test: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """Run an async test in its own event loop (no async plugin needed; fixtures pass through)."""

    @functools.wraps(test)
    def wrapper(*args: object, **kwargs: object) -> None:
        asyncio.run(test(*args, **kwargs))  # type: ignore[arg-type]

    return wrapper


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache, so fake vectors never reach the real cache."""
    return dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")


def make_app(settings: Settings, embedder: object | None = None) -> RagtuiApp:
    """The app on ``settings`` with the fake embedder (or the one given)."""
    return RagtuiApp(settings, embedder=embedder if embedder is not None else FakeEmbedder())


async def wait_ready(pilot) -> None:
    """Wait until the workspace is shown, every retriever is ready (or failed) and the chunk view has
    scrolled to the evidence."""
    app = pilot.app
    for _ in range(200):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.is_ready and app.main_screen.chunk_view.scroll_settled:
            await pilot.pause()
            return
    raise AssertionError("the app never finished loading")


def main_screen(app: RagtuiApp) -> MainScreen:
    """The main screen."""
    return app.main_screen


def metric_rows(app: RagtuiApp) -> dict[tuple[str, str], list[str]]:
    """The metric panel as shown: (retriever, scope) -> [recall, precision, ceiling, MRR, nDCG] strings.

    A retriever's name starts its first row, or stands on a line of its own when it is long."""
    rows: dict[tuple[str, str], list[str]] = {}
    current = ""
    for line in main_screen(app).metrics.plain.splitlines()[1:]:
        tokens = line.split()
        if not line.startswith(" ") and tokens:
            current = tokens[0]
        values = tokens[-5:]
        if len(tokens) >= 6 and all(v.replace(".", "").isdigit() for v in values):
            rows[(current, tokens[-6])] = values
    return rows


def labels(settings: Settings) -> list[dict]:
    """The journal lines of ``labels.jsonl``."""
    path = Path(settings.golden) / "labels.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def result_chunks(app: RagtuiApp, name: str) -> list[str]:
    """The chunk ids shown in one result list, in order."""
    table = main_screen(app).result_list(name)
    return [cid for cid, _ in table.view.ranking] if table.view is not None else []


@pytest.mark.parametrize("size", [COMPACT, WIDE])
@run_async
async def test_starts_focused_on_first_question_with_all_lists(
    tui_settings: Settings, size
) -> None:
    """The question list has the focus, m01 is selected, and all three lists fill in."""
    app = make_app(tui_settings)
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        assert isinstance(app.focused, QuestionList)
        assert screen.current_qid == "m01"
        assert screen.question_list.row_count == 7
        for name in ("bm25", "vector", "hybrid"):
            assert result_chunks(app, name), name
        # m01's only relevant chunk is ferry.md#1; bm25 ranks it first.
        assert result_chunks(app, "bm25")[0] == "ferry.md#1"
        rows = metric_rows(app)
        assert rows[("bm25", "all")] == ["1.000", "0.389", "0.389", "1.000", "1.000"]
        assert rows[("bm25", "m01")] == ["1.000", "0.333", "0.333", "1.000", "1.000"]
        assert ("vector", "all") in rows and ("hybrid", "m01") in rows
        assert "m01" in str(screen.query_one("#question-bar").content)
        assert screen.has_class("-compact") == (size == COMPACT)


@run_async
async def test_select_questions_and_cycle_focus(tui_settings: Settings) -> None:
    """Arrows pick questions; tab and shift+tab cycle question list, bm25, vector, hybrid."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        await pilot.press("down", "down")
        assert screen.current_qid == "m03"
        assert result_chunks(app, "bm25")[0] == "library.md#1"
        assert metric_rows(app)[("bm25", "m03")][0] == "1.000"
        order = []
        for _ in range(4):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            order.append(
                focused.retriever if isinstance(focused, ResultList) else type(focused).__name__
            )
        assert order == ["bm25", "vector", "hybrid", "QuestionList"]
        await pilot.press("shift+tab")
        await pilot.pause()
        assert isinstance(app.focused, ResultList) and app.focused.retriever == "hybrid"
        assert screen.active_retriever == "hybrid"
        # The chunk view follows the highlighted chunk of the focused list.
        await pilot.press("down")
        await pilot.pause()
        highlighted = screen.result_list("hybrid").highlighted_chunk
        assert screen.chunk_view.border_title == f"chunk {highlighted}"
        # Moving to another question keeps the focus where it is.
        await pilot.press("shift+tab", "shift+tab", "shift+tab", "up")
        await pilot.pause()
        assert screen.current_qid == "m02"


@run_async
async def test_compact_layout_shows_one_list_at_a_time(tui_settings: Settings) -> None:
    """At 80x24 only the focused result list is displayed; tab switches which one."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)

        def shown() -> list[str]:
            """The retrievers whose pane is displayed."""
            return [
                n for n in ("bm25", "vector", "hybrid") if screen.pane(n).styles.display != "none"
            ]

        assert shown() == ["bm25"]
        await pilot.press("tab", "tab")
        await pilot.pause()
        assert shown() == ["vector"]
        assert isinstance(app.focused, ResultList) and app.focused.retriever == "vector"
        assert screen.metrics.region.height > 0 and screen.chunk_view.region.height > 0


@pytest.mark.parametrize("size", [COMPACT, WIDE])
@run_async
async def test_grade_backspace_and_undo_update_screen_and_journal(
    tui_settings: Settings, size
) -> None:
    """A digit saves a grade at once, backspace removes it, u undoes; every number follows."""
    app = make_app(tui_settings)
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        await pilot.press(
            "tab", "down"
        )  # bm25 list, second chunk of m01: ferry.md#0 (not relevant)
        await pilot.pause()
        assert screen.result_list("bm25").highlighted_chunk == "ferry.md#0"
        await pilot.press("1")
        await pilot.pause()
        journal = labels(tui_settings)
        assert journal[-1]["question"] == "m01"
        assert journal[-1]["chunk"] == "ferry.md#0"
        assert journal[-1]["grade"] == 1
        assert journal[-1]["annotator"] == "tester"
        # Two relevant chunks in bm25's top 3 now: P@3 2/3, and the ceiling rises with them.
        assert metric_rows(app)[("bm25", "m01")] == ["1.000", "0.667", "0.667", "1.000", "1.000"]
        grade_cell = screen.result_list("bm25").cell("ferry.md#0", "grade")
        assert grade_cell.strip() == ("●1h" if size == COMPACT else "● 1 hand")
        assert "Δ m01" in screen.metrics.plain
        await pilot.press("backspace")
        await pilot.pause()
        assert labels(tui_settings)[-1]["grade"] is None
        assert metric_rows(app)[("bm25", "m01")] == ["1.000", "0.333", "0.333", "1.000", "1.000"]
        assert screen.result_list("bm25").cell("ferry.md#0", "grade").strip() == "–"
        await pilot.press("u")  # undo the removal: grade 1 is back
        await pilot.pause()
        assert labels(tui_settings)[-1]["grade"] == 1
        assert metric_rows(app)[("bm25", "m01")][1] == "0.667"
        await pilot.press("u")  # undo the grade: back to no hand grade
        await pilot.pause()
        assert labels(tui_settings)[-1]["grade"] is None
        assert metric_rows(app)[("bm25", "m01")][1] == "0.333"
        assert len(labels(tui_settings)) == 4
        # The journal on disk replays to the same state the screen shows.
        assert LabelJournal(Path(tui_settings.golden) / "labels.jsonl").current == {}


@run_async
async def test_grading_only_relevant_chunk_zero_drops_ndcg_and_recall(
    tui_settings: Settings,
) -> None:
    """Grading m01's only relevant chunk 0 shows nDCG@3 and recall 0 for m01; undo restores them."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        before = metric_rows(app)
        assert before[("bm25", "m01")][0] == "1.000" and before[("bm25", "m01")][4] == "1.000"
        await pilot.press("tab")
        await pilot.pause()
        assert screen.result_list("bm25").highlighted_chunk == "ferry.md#1"
        await pilot.press("0")
        await pilot.pause()
        after = metric_rows(app)
        for name in ("bm25", "vector", "hybrid"):
            recall, _, _, _, ndcg = after[(name, "m01")]
            assert (recall, ndcg) == ("0.000", "0.000"), name
        assert labels(tui_settings)[-1] == {
            **labels(tui_settings)[-1],
            "chunk": "ferry.md#1",
            "grade": 0,
        }
        # m01 has no relevant chunk now but is judged: it counts with zeros, as trec_eval counts
        # it (issue 12), so the means stay over 6 questions; no retriever can find what is not
        # there, so it is marked as having nothing relevant, not as a retriever's miss.
        assert "6 questions, 1 skipped" in str(screen.metrics.border_title)
        assert screen.question_list.cell("m01", "mark") == "∅"
        bar = str(screen.query_one("#question-bar").content)
        assert "nothing relevant among its judgements: 0 in every mean" in bar
        assert "nDCG@3 bm25 1.000→0.000" in screen.metrics.plain
        await pilot.press("u")
        await pilot.pause()
        assert metric_rows(app) == before
        assert labels(tui_settings)[-1]["grade"] is None
        # Back to evaluated; the fake vectors rank m01's chunk 6th, beyond k: the failure mark.
        assert screen.question_list.cell("m01", "mark") == "✗"


@run_async
async def test_change_k_with_keys(tui_settings: Settings) -> None:
    """+ and ] raise k, - and [ lower it; the panel, headers and workspace follow."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        await pilot.press("plus")
        await pilot.pause()
        assert app.workspace.settings.k == 4
        assert "R@4" in screen.metrics.plain.splitlines()[0]
        # m01 has one relevant chunk: the P@4 ceiling is 1/4.
        assert metric_rows(app)[("bm25", "m01")] == ["1.000", "0.250", "0.250", "1.000", "1.000"]
        assert "k=4" in main_screen(app).sub_title
        await pilot.press("left_square_bracket", "minus", "minus")
        await pilot.pause()
        assert app.workspace.settings.k == 1
        assert metric_rows(app)[("bm25", "m01")] == ["1.000", "1.000", "1.000", "1.000", "1.000"]
        await pilot.press("minus")  # k stays at least 1
        await pilot.pause()
        assert app.workspace.settings.k == 1
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.workspace.settings.k == 2
        # A rank beyond k is shown in the late style: vector finds m01's chunk at rank 6 > 2.
        assert "nDCG@2" in screen.metrics.plain


@run_async
async def test_filter_by_slice_and_text_then_clear(tui_settings: Settings) -> None:
    """/ filters by slice:NAME or words; the metric panel adds the filtered means; escape clears."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await pilot.pause()
        await wait_ready(pilot)
        screen = main_screen(app)
        await pilot.press("slash", *"slice:lookup", "enter")
        await pilot.pause()
        assert screen.visible_ids == ["m03", "m04"]
        assert screen.current_qid == "m03"
        assert isinstance(app.focused, QuestionList)
        assert ("bm25", "filter") in metric_rows(app)
        assert "questions 2/7 · slice:lookup" in str(screen.query_one("#questions").border_title)
        await pilot.press("escape")
        await pilot.pause()
        assert len(screen.visible_ids) == 7
        assert ("bm25", "filter") not in metric_rows(app)
        await pilot.press("slash", *"ferry", "enter")
        await pilot.pause()
        assert screen.visible_ids == ["m01"]


@run_async
async def test_sort_worst_first(tui_settings: Settings) -> None:
    """s puts the question with the lowest hybrid nDCG first and skipped ones last; s again restores."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        ws = app.workspace
        await pilot.press("s")
        await pilot.pause()
        order = list(screen.visible_ids)
        hybrid = ws.evaluation.per_question["hybrid"]
        evaluated = [q for q in order if q in ws.evaluation.evaluated]
        assert [hybrid[q].ndcg for q in evaluated] == sorted(hybrid[q].ndcg for q in evaluated)
        assert order[-1] == "m07"
        assert screen.current_qid == order[0]  # after a sort the cursor goes to the first row
        await pilot.press("s")
        await pilot.pause()
        order = list(screen.visible_ids)
        assert order == [f"m0{i}" for i in range(1, 8)]


@run_async
async def test_read_only_labels_refuse_edits(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only journal: digits change nothing, a notification says why, the header says read-only."""
    monkeypatch.setattr(LabelJournal, "read_only", property(lambda self: True))
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        assert "read-only" in main_screen(app).sub_title
        await pilot.press("tab", "0")
        await pilot.pause()
        assert labels(tui_settings) == []
        assert metric_rows(app)[("bm25", "m01")][4] == "1.000"
        assert any("read-only" in s.text for s in app.status_log)


@run_async
async def test_missing_model_keeps_bm25_working(tui_settings: Settings) -> None:
    """A model that cannot load: a clear message in the vector and hybrid panes, bm25 still grades."""
    app = make_app(tui_settings, BrokenEmbedder())
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        assert app.controller.retriever_status == {
            "bm25": "ready",
            "vector": "failed",
            "hybrid": "failed",
        }
        note = screen.pane("vector").query_one(".pane-note")
        assert "unavailable" in str(note.content) and "cannot load embedding model" in str(
            note.content
        )
        # The note shows in the failed panes only.
        assert note.display and note.region.height > 0
        assert not screen.pane("bm25").query_one(".pane-note").display
        assert screen.question_list.cell("m01", "vector").strip() == "×"
        assert "vector unavailable" in screen.metrics.plain
        assert any("Vector search is unavailable" in s.text for s in app.status_log)
        await pilot.press("tab", "0")
        await pilot.pause()
        assert labels(tui_settings)[-1]["grade"] == 0
        assert metric_rows(app)[("bm25", "m01")][4] == "0.000"


@run_async
async def test_bad_golden_set_shows_error_screen(tui_settings: Settings) -> None:
    """A malformed questions.jsonl: an error screen naming the file and line, not a traceback."""
    (Path(tui_settings.golden) / "questions.jsonl").write_text(
        '{"id": "x1", "question": "?"}\nnot json\n'
    )
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, LoadErrorScreen)
        assert "questions.jsonl:2: malformed JSON" in app.screen.message
        await pilot.press("q")
        await pilot.pause()
    assert app.load_error is not None


@run_async
async def test_help_screen_lists_keys_and_metric_ceilings(tui_settings: Settings) -> None:
    """? opens help with every key and each metric's ceiling; escape closes it."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        from ragtui.tui.screens.help import KEYS, METRICS

        keys = {key for key, _ in KEYS}
        for key in ("0-9", "backspace", "u", "/", "?", "ctrl+p", "ctrl+q", "tab / shift+tab"):
            assert key in keys
        assert any("min(k, relevant) / k" in ceiling for _, _, ceiling in METRICS)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@run_async
async def test_palette_actions_depth_export_check(tui_settings: Settings, tmp_path: Path) -> None:
    """The palette's actions: a new depth re-runs search, export writes TREC files, check lists problems."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        app.set_depth(3)
        await wait_ready(pilot)
        assert app.workspace.settings.depth == 3
        assert all(len(result_chunks(app, n)) <= 3 for n in ("bm25", "vector", "hybrid"))
        assert "depth 3" in main_screen(app).sub_title
        app.action_export()
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        prompt = app.screen.query_one("#prompt-input")
        prompt.value = str(tmp_path / "trec")
        await pilot.press("enter")
        await pilot.pause()
        written = sorted(p.name for p in (tmp_path / "trec").iterdir())
        assert written == ["bm25.trec", "hybrid.trec", "qrels.trec", "vector.trec"]
        app.action_check()
        await pilot.pause()
        assert isinstance(app.screen, ProblemsScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@run_async
async def test_palette_provider_offers_area_verb_commands(tui_settings: Settings) -> None:
    """ctrl+p lists the app's commands titled "area: verb"."""
    from ragtui.tui.commands import RagtuiCommands

    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        provider = RagtuiCommands(app.screen)
        titles = [title for title, _, _ in provider.commands()]
        for wanted in (
            "metrics: increase k",
            "results: set depth to 20",
            "export: write TREC qrels and runs",
            "check: validate the golden set",
            "questions: sort worst-first",
            "questions: clear filter",
        ):
            assert wanted in titles
        assert all(": " in t for t in titles)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"


@run_async
async def test_enter_shows_chunk_full_screen(tui_settings: Settings) -> None:
    """Enter on a question moves to its lists; enter on a chunk shows it full screen with highlights."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.focused, ResultList)
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "ChunkScreen"
        text = app.screen.query_one("#chunk-screen-text").content
        assert "return adult | 5.80 EUR" in text.plain
        assert text.spans  # evidence and question terms are styled
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@run_async
async def test_corpus_text_is_never_markup(tui_settings: Settings) -> None:
    """Square brackets in the corpus and questions show as typed (no Rich markup parsing)."""
    corpus = Path(tui_settings.corpus)
    (corpus / "brackets.md").write_text(
        "# Notes\n\nThe [k1] parameter and [bold]raw[/bold] text stay.\n"
    )
    questions = Path(tui_settings.golden) / "questions.jsonl"
    with questions.open("a") as fh:
        fh.write(
            json.dumps({"id": "m08", "question": "What is [k1]?", "evidence": "The [k1] parameter"})
            + "\n"
        )
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        screen.question_list.select_qid("m08")
        await pilot.pause()
        assert screen.current_qid == "m08"
        assert "[k1]" in str(screen.query_one("#question-bar").content)
        top = result_chunks(app, "bm25")[0]
        assert top == "brackets.md#0"
        snippet = screen.result_list("bm25").cell(top, "passage")
        assert "[k1]" in snippet and "[bold]raw[/bold]" in snippet
        body = screen.chunk_view.body_text
        assert "[bold]raw[/bold]" in body.plain


@run_async
async def test_embedding_progress_then_cached_second_start(tui_settings: Settings) -> None:
    """The first start encodes (progress reported); a second start reads every vector from the cache."""
    first = FakeEmbedder()
    app = make_app(tui_settings, first)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        assert first.encoded == 9 + 7  # chunks and questions
        assert not main_screen(app).query_one("#progress-row").display
    second = FakeEmbedder()
    app = make_app(tui_settings, second)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        assert second.encoded == 0
        assert app.ready_after is not None


@run_async
async def test_digit_on_question_list_only_hints(tui_settings: Settings) -> None:
    """A digit with the question list focused saves nothing and says to tab to a result list."""
    app = make_app(tui_settings)
    async with app.run_test(size=COMPACT) as pilot:
        await wait_ready(pilot)
        await pilot.press("1")
        await pilot.pause()
        assert labels(tui_settings) == []
        assert any("tab" in s.text for s in app.status_log)


@run_async
async def test_injected_workspace_is_used(tui_settings: Settings) -> None:
    """A workspace loaded by the caller is shown as is; the app only adds the vectors."""
    from ragtui.core.workspace import Workspace

    workspace = Workspace.load(tui_settings)
    app = RagtuiApp(tui_settings, embedder=FakeEmbedder(), workspace=workspace)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        assert app.workspace is workspace
        assert workspace.ranked.vector is not None
        assert set(workspace.evaluation.per_question) == {"bm25", "vector", "hybrid"}


@run_async
async def test_a_question_judged_with_nothing_relevant_counts_zero_and_says_so(
    tui_settings: Settings,
) -> None:
    """m07 has no evidence chunk: unjudged it is skipped; graded 0 it counts 0 in every mean."""
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = main_screen(app)
        qlist = screen.question_list

        def mark_and_bar() -> tuple[str, str]:
            row = list(screen.visible_ids).index("m07")
            bar = str(screen.query_one("#question-bar").content)
            return qlist.row_cells(row)[0].text, bar

        await pilot.press("end")
        await pilot.pause()
        assert screen.current_qid == "m07"
        mark, bar = mark_and_bar()
        assert mark == "∅" and "no judgement: skipped in every mean" in bar
        before = app.workspace.evaluation.summary("bm25")
        await pilot.press("tab", "0")
        await wait_ready(pilot)
        mark, bar = mark_and_bar()
        assert mark == "∅" and "nothing relevant among its judgements: 0 in every mean" in bar
        after = app.workspace.evaluation.summary("bm25")
        assert after.questions == before.questions + 1
        assert after.recall == pytest.approx(before.recall * before.questions / after.questions)
        assert metric_rows(app)[("bm25", "all")][0] == f"{after.recall:.3f}"
        # Nothing relevant to miss: the miss filter leaves it out.
        await pilot.press("shift+tab", "/")
        for key in "miss:any":
            await pilot.press(key)
        await pilot.press("enter")
        await pilot.pause()
        assert "m07" not in screen.visible_ids
