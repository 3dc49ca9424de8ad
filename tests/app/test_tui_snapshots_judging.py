"""SVG snapshots of the judging view at 80x24 (issue 23): on a chunk whose heading path is long
enough to wrap (an MkDocs page, ``{ #anchor }`` in every heading), in the adjudication pass with
three annotators, and blind. Every line must be in view: the question, the chunk id and heading
path on one row, the ranks (or ``blind``) with the grade, the annotators, the chunk, the legend,
the status line and the keys. Update with ``pytest --snapshot-update`` on this file and look at
the SVGs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from tests.app.test_tui import FakeEmbedder, wait_ready
from tests.system.test_tui_judging import CORS_CHUNK, add_cors_page, grade_as, open_on

SIZE = (80, 24)


@pytest.fixture
def cors_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini set with the MkDocs page and its question m08, a per-test cache."""
    settings = dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")
    add_cors_page(settings)
    return settings


def test_judging_view_long_heading_path(snap_compare, cors_settings: Settings) -> None:
    """The pair under four headings: the path on one row (anchors dropped, … for the middle), the
    ranks and ``grade 2 (evidence) · unjudged by tester`` on the next."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await open_on(pilot, "m08", CORS_CHUNK)
        await wait_ready(pilot)

    app = RagtuiApp(cors_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_judging_view_adjudicating_three_annotators(snap_compare, cors_settings: Settings) -> None:
    """The adjudication pass on the same pair, graded 2, 0 and 1 by alice, bob and carol."""
    for who, grade in (("alice", 2), ("bob", 0), ("carol", 1)):
        grade_as(cors_settings, who, [("m08", CORS_CHUNK, grade)])

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        pilot.app.main_screen.set_filter("disputed")
        await pilot.pause()
        await pilot.press("j")
        await wait_ready(pilot)

    app = RagtuiApp(cors_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_judging_view_blind(snap_compare, cors_settings: Settings) -> None:
    """Blind on the same pair: no ranks, no evidence grade, no evidence highlight."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await open_on(pilot, "m08", CORS_CHUNK)
        await pilot.press("b")
        await wait_ready(pilot)

    app = RagtuiApp(cors_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_agreement_view_80x24(snap_compare, cors_settings: Settings) -> None:
    """Issue 33, item 7: the agreement view at 80x24 with a long chunk id disputed by alice and bob,
    adjudicated against the evidence rule, and a judge's reason holding escape sequences: every
    chunk id whole (before: ``com…s.md#2``), ``adjudicated`` whole in the ``by`` column (before:
    ``a…udicated``), the reason without the sequences' parameters."""
    from tests.app.test_tui_verify import write_verdicts

    grade_as(cors_settings, "alice", [("m08", CORS_CHUNK, 2), ("m01", "ferry.md#1", 2)])
    grade_as(cors_settings, "bob", [("m08", CORS_CHUNK, 0)])
    grade_as(cors_settings, "tester", [("m08", CORS_CHUNK, 0)], adjudicate=True)
    write_verdicts(
        cors_settings,
        [("m08", CORS_CHUNK, 1, "\x1b[31mRED\x1b[0m it lists \x1b]0;pwned\x07the origins")],
    )

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await pilot.press("g")
        await wait_ready(pilot)

    app = RagtuiApp(cors_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_judging_view_sample_order_80x24(snap_compare, cors_settings: Settings) -> None:
    """Issue 33, item 7: the judging view in the sample order at 80x24: the title keeps the pair
    and the judged count (before: cut before it), then the sample's progress as far as it fits."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await pilot.press("j", "o", "o")
        await wait_ready(pilot)
        # The status line named sample.json's path (a temporary folder): the keys instead.
        await pilot.press("question_mark")
        await wait_ready(pilot)

    app = RagtuiApp(cors_settings, embedder=FakeEmbedder())
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
