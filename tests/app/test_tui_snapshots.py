"""SVG snapshots of the app on the small fixed corpus with the fake embedder: main screen at 80x24 and
120x40, and the help screen. Update with ``pytest --snapshot-update`` and look at the SVGs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from tests.app.test_tui import FakeEmbedder, wait_ready


@pytest.fixture
def snapshot_app(mini_settings: Settings, tmp_path: Path) -> RagtuiApp:
    """The app on the mini corpus with deterministic vectors and a per-test cache."""
    settings = dataclasses.replace(mini_settings, cache_dir=tmp_path / "cache")
    return RagtuiApp(settings, embedder=FakeEmbedder())


def test_main_screen_compact(snap_compare, snapshot_app: RagtuiApp) -> None:
    """80x24: questions and one result list (tabs) on top, metrics and the chunk view below."""
    assert snap_compare(snapshot_app, terminal_size=(80, 24), run_before=wait_ready)


def test_main_screen_wide(snap_compare, snapshot_app: RagtuiApp) -> None:
    """120x40: questions beside the three stacked result lists, metrics and the chunk view below."""
    assert snap_compare(snapshot_app, terminal_size=(120, 40), run_before=wait_ready)


def test_main_screen_wide_vector_focused(snap_compare, snapshot_app: RagtuiApp) -> None:
    """120x40 on m06 (two relevant chunks), the vector list focused on its second chunk."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await pilot.press("down", "down", "down", "down", "down", "tab", "tab", "down")
        await pilot.pause()

    assert snap_compare(snapshot_app, terminal_size=(120, 40), run_before=run_before)


def test_help_screen(snap_compare, snapshot_app: RagtuiApp) -> None:
    """The help screen over the main screen at 120x40."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(snapshot_app, terminal_size=(120, 40), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_judging_view(snap_compare, snapshot_app: RagtuiApp, size: tuple[int, int]) -> None:
    """The judging view after one grade: question, origin and ranks, the chunk at the evidence,
    the scale, the status line, the keys."""

    async def run_before(pilot) -> None:
        await wait_ready(pilot)
        await pilot.press("j", "2")
        await pilot.pause()

    assert snap_compare(snapshot_app, terminal_size=size, run_before=run_before)
