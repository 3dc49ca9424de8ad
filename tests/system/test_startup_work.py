"""What the start does less of (issue 26, item 1): each cut keeps what is shown and computed.

- ``ragtui`` starts the first load in a thread before it imports the app; the app's loading worker
  takes its workspace, model and cached rankings, and reports what it would have reported.
- A model's fingerprint is read again only when a file changed.
- The footer rebuilds its keys only when they change; the embedding progress bar is made when
  first shown; the judging progress places the questions in the walk only when something is judged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import ProgressBar

from ragtui.core.data import tokenizer
from ragtui.core.settings import Settings
from ragtui.tui.widgets.footer import Footer
from tests.app.test_tui import main_screen, make_app, run_async, wait_ready
from tests.conftest import ROOT, mini_args

WIDE = (130, 40)


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
        screen.progress_row.show(5, 20, "")
        await pilot.pause()
        bar = screen.query_one("#progress", ProgressBar)
        assert row.display and bar.total == 20 and bar.progress == 5
        screen.progress_row.show(10, 20, "")
        await pilot.pause()
        assert screen.query_one("#progress", ProgressBar) is bar and bar.progress == 10
        screen.progress_row.hide()
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
        assert app.workspace is not None and not app.workspace.grades.labels.pairs
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
    table = ws.ranked.rankings["bm25"]
    assert isinstance(table, RankingTable) and table.distinct  # BM25 ranks each chunk once
    ev = ws.evaluation
    assert ev is not None
    # The questions as loaded: the evaluation reads the tables' own rows (no lookup).
    assert ev.question_ids is ws.questions.loaded_ids and ev._rows is ws.questions.loaded_rows
    # The same numbers as an evaluation that builds its own rows and looks for repeats.
    plain = dict(table.items())
    again = Evaluation(
        list(ws.questions.loaded_ids), ws.grades.evaluation_grades, {"bm25": plain}, ws.settings.k
    )
    assert again.summary("bm25") == ev.summary("bm25")
    for qid in ws.questions.loaded_ids:
        assert again.per_question["bm25"][qid] == ev.per_question["bm25"][qid]


def test_a_load_from_the_questions_cache_builds_no_question(
    mini_settings: Settings, tmp_path: Path
) -> None:
    """The questions come back from the cache as columns: the load, its evaluation and the question
    list's rows build none of them (at 100,000 questions, building them all took 0.1 s of a start),
    and the numbers are the parsed questions' numbers."""
    from ragtui.core.analysis.question_filter import QuestionFilter, filter_questions
    from ragtui.core.data.golden import QuestionColumns
    from ragtui.core.workspace import Workspace

    settings = replace(mini_settings, cache_dir=tmp_path / "cache")
    parsed = Workspace.load(settings)  # the first load parses questions.jsonl and caches it
    ws = Workspace.load(settings)
    loaded = ws.questions.loaded
    assert isinstance(loaded, QuestionColumns) and not isinstance(
        parsed.questions.loaded, QuestionColumns
    )
    assert filter_questions(ws, QuestionFilter()) == [q.id for q in parsed.questions]
    # A filter's words and slices are read from the columns too.
    for text, expected in (
        ("cost", ["m05"]),
        ("slice:number", ["m01", "m05"]),
        ("how slice:table", ["m01"]),
    ):
        flt = QuestionFilter.parse(text, ws.retrievers)
        assert filter_questions(ws, flt) == filter_questions(parsed, flt) == expected
    assert not any(loaded._built)
    assert ws.evaluation is not None and parsed.evaluation is not None
    for name in ws.retrievers:
        assert ws.evaluation.summary(name) == parsed.evaluation.summary(name)
    assert list(ws.questions) == list(parsed.questions)


def test_opening_the_judging_view_reads_the_retired_flags_without_building_questions(
    mini_settings: Settings, tmp_path: Path
) -> None:
    """The judging view walks the listed questions that are not retired; it read each question's
    flag by building the question (0.7 of the 4 s the view took to open at 100,000 questions),
    where the set keeps the retired ids."""
    from ragtui.core.data.golden import QuestionColumns
    from ragtui.core.workspace import Workspace
    from ragtui.tui.screens.views import Shown

    settings = replace(mini_settings, cache_dir=tmp_path / "cache")
    first = Workspace.load(settings)
    first.set_retired("m02", True)
    Workspace.load(settings)  # the rewritten questions.jsonl read and cached
    ws = Workspace.load(settings)  # the questions come back from the cache, as columns
    loaded = ws.questions.loaded
    assert isinstance(loaded, QuestionColumns) and ws.questions.retired == ["m02"]
    listed = list(ws.questions.ids)
    shown = Shown(ws, None, listed[0], None, listed, False, False, False, [], lambda: None)  # type: ignore[arg-type]
    assert shown.unretired() == [q for q in listed if q != "m02"]
    assert not any(loaded._built)


def _filled(settings: Settings) -> tuple[Settings, str]:
    """``settings``' results cache filled as the real model's, by a fake embedder of its name (no
    model is loaded); the name."""
    from ragtui.core.retrieval.encoder_process import BackgroundEmbedder
    from ragtui.core.workspace import Workspace

    name = BackgroundEmbedder(
        settings.model, settings.embedding_backend, settings.cache_dir
    ).cache_name
    Workspace.load(settings).prepare_vectors(embedder=_fake(name))
    return settings, name


def _fake(name: str) -> object:
    """A fake embedder that caches under the real model's name."""
    from tests.app.test_tui import FakeEmbedder

    fake = FakeEmbedder()
    fake.cache_name = name
    return fake


def _worker_messages(job: object) -> list[object]:
    from ragtui.tui import loading

    posted: list[object] = []
    loading.load(job, posted.append, lambda: False)  # type: ignore[arg-type]
    return posted


def test_a_warm_first_load_reads_the_windows_and_parses_no_tokenizer(tmp_path: Path) -> None:
    """A start on warm caches knows the long chunks' windows before the vector retriever is built,
    so the question list's causes are ``ragtui why``'s from the first screen (they were worked out
    as if the model read each chunk's first tokens until the windows came: on the bundled set q51
    and q64 showed a ``cut-off`` for a second), and it parses no tokenizer (34 ms of the start)."""
    from ragtui.core.analysis.why import WhyIndex
    from ragtui.core.analysis.why.coverage import FirstTokens
    from ragtui.core.workspace import Workspace
    from ragtui.core.workspace.first_load import FirstLoad

    settings, _name = _filled(Settings(cache_dir=tmp_path / "cache", annotator="t"))
    built = Workspace.load(settings)  # as ragtui why has it: the retrievers built, windows and all
    built.prepare_vectors(embedder=_fake(_name))
    assert built.ranked.vector is not None and built.ranked.windows is not None
    tokenizer.token_counter.cache_clear()
    first = FirstLoad(settings)
    ws, cached = first.workspace(), first.cached()
    assert cached is not None and cached.vector is None and ws.ranked.vector is None
    assert ws.ranked.windows is not None and ws.ranked.windows.plan is not None
    assert ws.ranked.windows.spans == built.ranked.windows.spans
    assert "_tokenizer" not in vars(ws.data.counter)  # nothing was counted, so nothing parsed
    shown, why = WhyIndex(ws), WhyIndex(built)
    pairs = [(q.id, r) for q in ws.questions for r in ws.retrievers]
    assert [shown.causes(*p) for p in pairs] == [why.causes(*p) for p in pairs]
    # The first tokens' rule, which the first screen used, gives other causes on this set.
    first_tokens = WhyIndex(ws, FirstTokens(ws))
    assert [p for p in pairs if first_tokens.causes(*p) != why.causes(*p)]


def test_the_first_load_is_what_the_loading_worker_computes(tui_settings: Settings) -> None:
    from ragtui.core.retrieval.encoder_process import BackgroundEmbedder
    from ragtui.core.workspace import Workspace
    from ragtui.core.workspace.first_load import FirstLoad
    from ragtui.tui import loading
    from ragtui.tui.messages import VectorsReady, WorkspaceLoaded

    settings, name = _filled(tui_settings)
    first = FirstLoad(settings)
    ws, cached = first.workspace(), first.cached()
    assert cached is not None and cached.vector is None and first.model().cache_name == name
    # What the worker's own steps give, on the same caches.
    own = Workspace.load(settings)
    own_cached = own.cached_vectors(
        BackgroundEmbedder(settings.model, settings.embedding_backend, settings.cache_dir)
    )
    assert own_cached is not None
    own.apply_vectors(own_cached)
    assert ws.evaluation is not None and own.evaluation is not None
    for retriever in ("bm25", "vector", "hybrid"):
        assert ws.evaluation.summary(retriever) == own.evaluation.summary(retriever)
        for qid in own.questions.loaded_ids:
            assert ws.ranking(retriever, qid) == own.ranking(retriever, qid)
    # The worker takes them: one WorkspaceLoaded with the first load's workspace and rankings,
    # then the retrievers built from the embedding cache.
    job = loading.LoadJob(settings, 1, first_paint=lambda _t: True, first=first)
    posted = _worker_messages(job)
    assert [type(m) for m in posted] == [WorkspaceLoaded, VectorsReady]
    loaded = posted[0]
    assert isinstance(loaded, WorkspaceLoaded)
    assert loaded.workspace is ws and loaded.vectors is cached
    ready = posted[1]
    assert isinstance(ready, VectorsReady) and ready.embedder is first.model()
    assert (
        ready.result.vector is not None
        and ready.result.rankings["hybrid"] is cached.rankings["hybrid"]
    )


def test_the_first_load_runs_without_numpys_huge_page_advice_and_gives_it_back(
    tui_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where huge pages are given on advice, a fault in a fresh advised array may wait for the
    # kernel to compact memory: the first load's 8 MB code matrices were 75-110 ms slower at
    # 100,000 questions. Everything after it keeps the advice (a vector search is faster with it).
    from numpy._core.multiarray import _set_madvise_hugepage

    from ragtui.core.workspace import Workspace
    from ragtui.core.workspace.first_load import FirstLoad
    from ragtui.core.workspace.vectors import VectorResult

    def advice() -> bool:  # whether the advice is on, left as it was
        on = bool(_set_madvise_hugepage(True))
        _set_madvise_hugepage(on)
        return on

    seen: list[tuple[str, bool]] = []
    load, apply = Workspace.load, Workspace.apply_vectors

    def spied_load(settings: Settings) -> Workspace:
        seen.append(("load", advice()))
        return load(settings)

    def spied_apply(self: Workspace, result: VectorResult) -> bool:
        seen.append(("apply", advice()))
        return apply(self, result)

    monkeypatch.setattr(Workspace, "load", staticmethod(spied_load))
    monkeypatch.setattr(Workspace, "apply_vectors", spied_apply)
    settings, _name = _filled(tui_settings)
    for before in (True, False):
        _set_madvise_hugepage(before)
        seen.clear()
        first = FirstLoad(settings)
        assert first.cached() is not None
        assert seen == [("load", False), ("apply", False)]
        assert advice() is before
    _set_madvise_hugepage(True)


def test_a_first_load_that_fails_is_reported_as_the_worker_reports_it(
    tui_settings: Settings,
) -> None:
    import dataclasses

    from ragtui.core.workspace.first_load import FirstLoad
    from ragtui.tui import loading
    from ragtui.tui.messages import LoadFailed

    assert tui_settings.golden is not None
    broken = dataclasses.replace(tui_settings, golden=Path(tui_settings.golden) / "missing")
    with_first = _worker_messages(loading.LoadJob(broken, 1, first=FirstLoad(broken)))
    without = _worker_messages(loading.LoadJob(broken, 1))
    assert [type(m) for m in with_first] == [LoadFailed] == [type(m) for m in without]
    assert with_first[0].message == without[0].message  # type: ignore[attr-defined]


def test_the_command_starts_the_first_load_before_it_imports_the_app(
    mini: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The app module stands in as a module that notes when the command asks it for run_app.
    code = (
        "import json, sys, types\n"
        "import ragtui.core.workspace.first_load as fl\n"
        "order, seen = [], {}\n"
        "class Probe(fl.FirstLoad):\n"
        "    def __init__(self, settings):\n"
        "        order.append('first load started')\n"
        "        super().__init__(settings)\n"
        "fl.FirstLoad = Probe\n"
        "def run_app(settings, mouse=True, first=None):\n"
        "    seen['same_settings'] = first.settings is settings\n"
        "    seen['questions'] = len(first.workspace().questions)\n"
        "    seen['order'] = order\n"
        "    print(json.dumps(seen))\n"
        "    return 0\n"
        "class App(types.ModuleType):\n"
        "    def __getattr__(self, name):\n"
        "        if name != 'run_app':\n"
        "            raise AttributeError(name)\n"
        "        order.append('app imported')\n"
        "        return run_app\n"
        "sys.modules['ragtui.tui.app'] = App('ragtui.tui.app')\n"
        "from ragtui.cli.main import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *mini_args(mini)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "RAGTUI_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "order": ["first load started", "app imported"],
        "same_settings": True,
        "questions": len((mini / "golden" / "questions.jsonl").read_text().splitlines()),
    }


def test_a_first_load_of_other_settings_or_for_another_embedder_is_not_taken(
    tui_settings: Settings,
) -> None:
    import dataclasses

    from ragtui.core.workspace.first_load import FirstLoad
    from ragtui.tui import loading
    from ragtui.tui.messages import WorkspaceLoaded
    from tests.app.test_tui import FakeEmbedder

    settings = dataclasses.replace(tui_settings, retrievers=("bm25",))
    first = FirstLoad(settings)
    other = dataclasses.replace(settings, k=settings.k + 1)
    for job in (
        loading.LoadJob(other, 1, first=first),  # a reload of other settings
        loading.LoadJob(settings, 1, embedder=FakeEmbedder(), first=first),  # tests' embedder
    ):
        (loaded,) = _worker_messages(job)
        assert isinstance(loaded, WorkspaceLoaded)
        assert loaded.workspace is not first.workspace()
        assert loaded.workspace.settings.k == job.settings.k
    (taken,) = _worker_messages(loading.LoadJob(settings, 1, first=first))
    assert isinstance(taken, WorkspaceLoaded) and taken.workspace is first.workspace()
