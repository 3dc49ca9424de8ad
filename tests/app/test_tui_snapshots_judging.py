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
