"""Many retrievers in the app (issue 23, finding 6): eight lists, five of them live retrievers from a
small plugin module written here, beside bm25, vector and hybrid.

- The question list's collapsed rank column has one distinct mark per retriever, and a legend line
  names the marks that do not name their retriever themselves (``m=milvus  5=milvus-e5``).
- In the compact layout the tab strip keeps the active tab in view, marked ``▸``, after tabbing to
  the eighth list (``‹4`` counts the tabs left out before it).
- The experiment table (and every report table) fits the width or scrolls sideways: no word is
  broken, no column drawn a letter per line.

The tmux test runs the real ``ragtui`` at 100x30 with the real embedding model.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from ragtui.core.report_model import Report, table
from ragtui.core.retrieval.live import spec_from_target
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.app import RagtuiApp
from ragtui.tui.ids import rank_marks, unclear_marks
from ragtui.tui.screens.main import MainScreen
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.widgets.question_list import RankLegend
from ragtui.tui.widgets.report_view import ReportView, fitted_widths, report_min_width
from ragtui.tui.widgets.tab_strip import TabLabel
from tests.app.test_tui import FakeEmbedder, run_async, wait_ready
from tests.conftest import MINI, MINI_CHUNK_SIZE, ROOT
from tests.tmux import STARTUP_SECONDS, Pane, app_env, needs_tmux, ragtui_command, shell_command

#: The five live retrievers: two pairs that start alike, one that does not.
LIVE = ("milvus", "milvus-e5", "elastic", "pgvector", "pinecone")
#: Every list, in the order the app shows them.
EIGHT = ("bm25", "vector", "hybrid", *LIVE)
#: The module the plugin is written to.
PLUGIN = "many_lists_plugin"

PLUGIN_SOURCE = '''"""Live retrievers for a test: shared words first, ties broken per seed (no cache)."""

import hashlib

CHUNKS = {chunks}


class Search:
    cache = False

    def __init__(self, seed):
        self.seed = int(seed)
        self.settings = {{"seed": self.seed}}

    def _score(self, words, cid, text):
        tie = int(hashlib.sha1(f"{{self.seed}}:{{cid}}".encode()).hexdigest(), 16) % 1000
        return len(words & set(text.lower().split())) * 1000 + tie * (self.seed % 3)

    def search(self, question, depth):
        words = set(question.lower().split())
        scored = [(cid, float(self._score(words, cid, text))) for cid, text in CHUNKS]
        return sorted(scored, key=lambda hit: -hit[1])[:depth]


def make(seed=0):
    return Search(seed)
'''


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the plugin module, its chunks those of the small corpus."""
    work = tmp_path_factory.mktemp("many-lists")
    shutil.copytree(MINI / "corpus", work / "corpus")
    settings = Settings(
        corpus=work / "corpus",
        golden=MINI / "golden",
        chunk_size=MINI_CHUNK_SIZE,
        cache_dir=work / "cache",
        retrievers=("bm25",),
    )
    chunks = [[c.id, c.text] for c in Workspace.load(settings).data.chunks]
    folder = work / "plugin"
    folder.mkdir()
    (folder / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE.format(chunks=json.dumps(chunks)))
    return folder


@pytest.fixture
def eight_settings(
    mini_settings: Settings, tmp_path: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """The small corpus with the five live retrievers (the plugin importable) and a private cache."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    specs = tuple(
        spec_from_target(name, f"{PLUGIN}:make", "test", {"seed": i}) for i, name in enumerate(LIVE)
    )
    yield replace(mini_settings, live_retrievers=specs, cache_dir=tmp_path / "cache")
    sys.modules.pop(PLUGIN, None)


# ---- the marks --------------------------------------------------------------------------------------


def test_one_distinct_mark_per_retriever_and_a_legend_where_a_mark_does_not_say_it():
    marks = rank_marks(list(EIGHT))
    assert "".join(marks.values()) == "bvhm5epi"
    assert unclear_marks(marks) == {
        "m": "milvus",
        "5": "milvus-e5",
        "p": "pgvector",
        "i": "pinecone",
    }
    assert unclear_marks(rank_marks(["bm25", "vector", "hybrid"])) == {}
    assert unclear_marks(rank_marks(["bm25", "vector", "hybrid", "web", "junk"])) == {}
    assert rank_marks(["bm25", "vector", "hybrid", "hybrid+rerank"])["hybrid+rerank"] == "r"
    # Whatever the names, one visible character each, no two alike.
    rng = random.Random(23)
    for _ in range(300):
        names = list(
            dict.fromkeys(
                rng.choice(["bm25", "vector", "hybrid", "milvus", "web", "es\x1b[2J", "a", "b"])
                + rng.choice(["", "-a", "-b", "+rerank", "2", "-e5"])
                for _ in range(rng.randint(1, 12))
            )
        )
        marks = rank_marks(names)
        assert list(marks) == names
        assert len(set(marks.values())) == len(names)
        assert all(len(m) == 1 and m.isalnum() and m.isascii() for m in marks.values())
        assert set(unclear_marks(marks)) <= set(marks.values())


# ---- the main screen with eight lists -----------------------------------------------------------------


def _tabs(screen: MainScreen) -> list[TabLabel]:
    return list(screen.query(TabLabel))


def _in_view(screen: MainScreen, name: str) -> bool:
    """Whether a retriever's tab is drawn whole inside the tab strip."""
    strip = screen.query_one("#tab-strip")
    tab = next(t for t in _tabs(screen) if t.retriever == name)
    region = tab.region
    return (
        tab.display
        and region.width > 0
        and strip.region.x <= region.x
        and region.right <= strip.region.right
    )


@run_async
async def test_eight_lists_at_100x30_a_legend_and_the_active_tab_in_view(
    eight_settings: Settings,
) -> None:
    app = RagtuiApp(eight_settings, embedder=FakeEmbedder())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        assert app.retrievers == list(EIGHT)
        questions = screen.question_list
        assert [c.title for c in questions.columns][2] == "bvhm5epi"
        legend = screen.query_one(RankLegend)
        assert legend.display and legend.region.height >= 1
        shown = " ".join(str(legend.content).split())
        assert shown == "m=milvus 5=milvus-e5 p=pgvector i=pinecone"
        assert legend.region.x >= screen.query_one("#questions").region.x
        assert all(name in str(questions.tooltip) for name in EIGHT)
        # Tab through every list: the tab of the list shown is always whole in view and marked.
        for name in EIGHT:
            await pilot.press("tab")
            await pilot.pause()
            assert screen.focused is screen.result_list(name)
            assert _in_view(screen, name), name
            active = [str(t.content) for t in _tabs(screen) if str(t.content).startswith("▸")]
            rank = screen._first_rank_text(name)
            assert active == [f"▸{name} {rank.ljust(3)} "]
        more = screen.query_one("#tab-more")
        assert more.display and str(more.content) == "‹4"
        assert not _in_view(screen, "bm25")
        # Narrower still: the active tab stays in view.
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert _in_view(screen, "pinecone")
        # Back to the first list: nothing before it is left out; the tabs after it that do not fit
        # whole are left out and counted (issue 33, item 7: the strip ended at "milvus #").
        await pilot.press("tab", "tab")
        await pilot.pause()
        assert _in_view(screen, "bm25") and not more.display
        after = screen.query_one("#tab-after")
        shown = [t.retriever for t in _tabs(screen) if t.display]
        assert shown == list(EIGHT[: len(shown)]) and len(shown) < len(EIGHT)
        assert all(_in_view(screen, name) for name in shown)
        assert after.display and str(after.content) == f"{len(EIGHT) - len(shown)}›"
        assert after.region.right <= screen.query_one("#tab-strip").region.right


@run_async
async def test_three_lists_need_no_legend(mini_settings: Settings, tmp_path: Path) -> None:
    app = RagtuiApp(replace(mini_settings, cache_dir=tmp_path / "cache"), embedder=FakeEmbedder())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        assert not app.main_screen.query_one(RankLegend).display
        assert app.main_screen.question_list.tooltip is None


def test_main_screen_with_eight_lists_snapshot(snap_compare, eight_settings: Settings) -> None:
    """100x30 after tabbing to the eighth list: the rank heading ``bvhm5epi`` and its legend under
    the question list, the tab strip from ``‹4`` to ``▸pinecone``, pinecone's list."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await pilot.press(*["tab"] * 8)
        await pilot.pause()

    app = RagtuiApp(eight_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_main_screen_with_eight_lists_at_80x24_snapshot(
    snap_compare, eight_settings: Settings
) -> None:
    """80x24 on the first list (issue 33, item 7): the tabs that fit whole, then ``N›`` counting the
    lists left out after them (before: the strip ended at ``milvus #``)."""
    app = RagtuiApp(eight_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=(80, 24), run_before=wait_ready)


# ---- report tables ------------------------------------------------------------------------------------


def _wide_report() -> Report:
    """The experiment's variants table as a team's variants fill it: long settings, long windows."""
    rows = [
        (
            f"{name}{' (baseline)' if i == 0 else ''}",
            changed,
            str(9 + i),
            "max, 254 tokens, stride 127",
            "68",
            "12 apply, 3 stale",
            "yes" if i < 2 else "no",
        )
        for i, (name, changed) in enumerate(
            [
                ("c200", "-"),
                ("c120-overlap40", "chunk-size 120, chunk-overlap 40"),
                (
                    "e5-large",
                    "model intfloat/e5-large-v2, windows off, rerank cross-encoder/ms-marco",
                ),
            ]
        )
    ]
    variants = table(
        (
            "variant",
            "settings",
            "chunks",
            "windows",
            "questions",
            "hand grades",
            "judged like baseline",
        ),
        rows,
        heading="variants",
        right=(2, 4),
    )
    measures = table(
        ("variant", "retriever", "measure", "mean", "change", "95% CI", "p", "p Holm", "n"),
        [
            (v, r, "nDCG@10", "0.512", "+0.031*", "[+0.004, +0.058]", "0.0210", "0.0420", "68")
            for v in ("c200", "c120-overlap40")
            for r in EIGHT
        ],
        heading="variant x retriever x measure (k=10)",
        right=(3, 4, 5, 6, 7, 8),
    )
    return Report("ragtui experiment: 3 variants against 'c200'", (variants, measures))


def _drawn_lines(view: ReportView) -> list[str]:
    """The view's drawing at its own width, every line (also those scrolled out of view)."""
    console = Console(width=view.size.width, file=None, color_system=None, record=True)
    with console.capture() as capture:
        console.print(view.render())
    return capture.get().splitlines()


def test_a_table_too_wide_wraps_at_spaces_and_never_breaks_a_word():
    report = _wide_report()
    variants = report.sections[0]
    natural = fitted_widths(variants, 1000)
    for width in (60, 80, 100):
        widths = fitted_widths(variants, width)
        # Numbers are never narrowed; text is never narrower than its longest word.
        assert widths[2] == natural[2] and widths[4] == natural[4]
        assert widths[1] >= len("intfloat/e5-large-v2,")
    assert report_min_width(report) > 60


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
@run_async
async def test_report_tables_in_the_app_fit_or_scroll(
    size: tuple[int, int], mini_settings: Settings, tmp_path: Path
) -> None:
    """The report view draws every word of every cell whole (the header wraps at its spaces, text
    cells wrap at theirs); what does not fit scrolls sideways."""
    report = _wide_report()
    app = RagtuiApp(replace(mini_settings, cache_dir=tmp_path / "cache"), embedder=FakeEmbedder())
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        await app.push_screen(ReportScreen(report, id="experiment"))
        await pilot.pause()
        view = app.screen.query_one(ReportView)
        box = app.screen.query_one(".report-box")
        lines = _drawn_lines(view)
        tokens = {token for line in lines for token in line.split()}
        for section in report.sections:
            for row in section.rows:
                for cell in row.cells:
                    for word in cell.split():
                        assert word in tokens, (word, "\n".join(lines))
            for column in section.columns:
                for word in column.title.split():
                    assert word in tokens, (word, "\n".join(lines))
        # No column is drawn a letter per line: no line of the table holds a lone letter.
        assert not [line for line in lines if re.fullmatch(r"\s*[A-Za-z]\s*", line)]
        if view.size.width > box.scrollable_content_region.width:
            assert box.max_scroll_x > 0
            await pilot.press("right")
            await pilot.pause()
            assert box.scroll_x > 0
        # Notes and headings still wrap at the visible width.
        assert all(len(line.rstrip()) <= view.size.width for line in lines)


@run_async
async def test_the_experiment_table_in_the_app_keeps_its_words_whole(
    mini: Path, cache_dir: Path, plugin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctrl+p "experiment: run the variants" at 80x24 (bm25 and the five live lists shown): the
    variants table is wider than the screen; its headings wrap at their spaces, no word breaks."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.chdir(mini)
    (mini / "ragtui.toml").write_text(_project_toml(retrievers=("bm25", *LIVE)))
    from tests.unit.test_experiment import _settings

    settings = _settings(mini / "ragtui.toml", cache_dir)
    app = RagtuiApp(settings, embedder=FakeEmbedder())
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_ready(pilot)
            assert len(app.retrievers) == 6
            app.run_experiment()
            for _ in range(1200):
                await pilot.pause(0.05)
                if isinstance(app.screen, ReportScreen) or any(s.error for s in app.status_log):
                    break
            screen = app.screen
            assert isinstance(screen, ReportScreen), list(app.status_log)[-3:]
            await pilot.pause()
            view = screen.query_one(ReportView)
            lines = _drawn_lines(view)
            tokens = {token for line in lines for token in line.split()}
            for word in screen.report.words():
                if " " not in word:  # a cell of one word: shown whole
                    assert word in tokens, (word, "\n".join(lines))
            header = r"variant\s+settings\s+chunks\s+windows\s+questions\s"
            assert any(re.search(header, line) for line in lines), "\n".join(lines)
    finally:
        sys.modules.pop(PLUGIN, None)


def _project_toml(retrievers: tuple[str, ...]) -> str:
    """A project on the small corpus: the five live retrievers, those shown, two variants."""
    tables = "".join(
        f'\n[retrievers.{name}]\nfactory = "{PLUGIN}:make"\noptions = {{ seed = {i} }}\n'
        for i, name in enumerate(LIVE)
    )
    shown = ", ".join(f'"{n}"' for n in retrievers)
    return f"""corpus = "corpus"
golden = "golden"
chunk-size = {MINI_CHUNK_SIZE}

[retrievers]
show = [{shown}]
{tables}
[variants]
baseline = "c48"

[variants.c48]

[variants.c24-off]
chunk-size = 24
windows = "off"
"""


# ---- the real app in tmux -----------------------------------------------------------------------------


@needs_tmux
def test_real_app_in_tmux_with_eight_lists(mini: Path, tmp_path: Path, plugin_dir: Path) -> None:
    """100x30, TERM=screen, the real model: the rank heading and its legend, the eighth list named
    after eight tabs, the experiment table readable."""
    (mini / "ragtui.toml").write_text(_project_toml(retrievers=EIGHT))
    env = app_env(tmp_path / "cache", PYTHONPATH=f"{plugin_dir}:{ROOT}")
    args = [*ragtui_command(), "--annotator", "e2e"]
    pane = Pane()  # starts the app at the pane's size, COLUMNS and LINES unset (tests/tmux.py)
    pane.start(shell_command(args, env, cwd=mini), 100, 30)
    try:
        screen = pane.wait_for(
            lambda s: "questions 7" in s and "pinecone answered" in s and "vector #" in s,
            STARTUP_SECONDS,
            "the question list, the live lists and the vector list",
        )
        assert max(len(line.rstrip()) for line in screen.splitlines()) > 90, screen  # 100 wide
        # The rank heading, one mark per list, and the legend of the marks that need one.
        assert re.search(r"│\s+id\s+bvhm5epi\s+question", screen), screen
        legend = " ".join(
            line.strip("│ ") for line in screen.splitlines() if "=" in line and "│" in line
        )
        for entry in ("m=milvus", "5=milvus-e5", "p=pgvector", "i=pinecone"):
            assert entry in legend, screen
        # Eight tabs: the eighth list is shown and its tab is in view, marked.
        for _ in range(8):
            pane.keys("Tab")
        screen = pane.wait_for(lambda s: "▸pinecone #" in s, 30, "the pinecone tab marked active")
        tab_line = next(line for line in screen.splitlines() if "▸pinecone" in line)
        assert "‹4" in tab_line and "milvus-e5" in tab_line, screen
        # The experiment table: every heading word whole, the settings of a variant readable.
        pane.keys("C-p")
        pane.wait_for(lambda s: "Search for commands" in s or "experiment" in s, 20, "the palette")
        pane.keys("experiment: run the variants")
        pane.wait_for(lambda s: "experiment: run the variants" in s, 20, "the command")
        pane.keys("Enter")
        screen = pane.wait_for(
            lambda s: "variant x retriever x measure" in s and "judged" in s,
            STARTUP_SECONDS,
            "the experiment table",
        )
        # The heading words whole and in one line (a long heading wraps at its spaces, above), a
        # variant's row whole: its settings wrap at a space, its numbers stay on its line.
        assert re.search(r"variant\s+settings\s+chunks\s+windows\s+questions\s", screen), screen
        assert re.search(r"c24-off\s+chunk-size 24,?\s+\d+\s+off\s+6\s+0 apply, 0", screen), screen
        assert not [
            line for line in screen.splitlines() if re.fullmatch(r"[│\s]*[A-Za-z][│\s]*", line)
        ]
        pane.keys("Escape")
        pane.keys("C-q")
        pane.exited(0)
    finally:
        pane.kill()
