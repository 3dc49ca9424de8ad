"""Run by ``tests/system/test_encoder_process.py`` in a process of its own (so ``sys.modules`` says what
the app imported): the real app, headless, on a copy of the small corpus and ``$RAGTUI_CACHE_DIR``.

It waits for the first full screen; when ``$RAGTUI_PRELOAD_MODEL`` is 1, for the helper process to
have read the model too; then asks a new ad-hoc query. Prints one JSON line: when the helper was
started and when the first full screen was painted (seconds from the app's start), the frames'
steps the vector list showed, whether the lists are ``search_adhoc``'s, the heavy modules the
app's process imported, and whether the query's cached vector is the model's (checked last: that
check reads the model here).

python -m tests.adhoc_preload_child MINI_FOLDER [--no-query]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path

from ragtui.core.retrieval import encoder_process
from ragtui.core.retrieval.embeddings import Embedder, EmbeddingCache
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.adhoc import AdhocScreen
from tests.app.test_tui import WIDE, wait_ready
from tests.conftest import settings_of

HEAVY = ("torch", "sentence_transformers", "transformers")


async def _run(mini: Path, query: bool) -> dict[str, object]:
    started: list[float] = []
    original = encoder_process.EncoderProcess.start

    def start(self: encoder_process.EncoderProcess) -> None:
        started.append(time.monotonic())
        original(self)

    encoder_process.EncoderProcess.start = start  # type: ignore[method-assign]
    cache = Path(os.environ["RAGTUI_CACHE_DIR"])
    settings = settings_of(mini, annotator="tester", cache_dir=cache)
    app = RagtuiApp(settings)
    out: dict[str, object] = {}
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        while app.full_screen_after is None:
            await pilot.pause(0.05)
        out["full_screen"] = app.full_screen_after
        model = app.models.get(settings.model or "")
        if os.environ.get("RAGTUI_PRELOAD_MODEL") == "1":
            assert isinstance(model, encoder_process.BackgroundEmbedder), model
            deadline = time.monotonic() + 300
            while not model.loaded and time.monotonic() < deadline:
                await pilot.pause(0.1)
        out["helper_started"] = started[0] - app.started if started else None
        if query:
            await pilot.press("a")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, AdhocScreen)
            text = f"who pays for the ferry {uuid.uuid4().hex[:8]}"
            screen.query_one("#adhoc-query").value = text  # type: ignore[attr-defined]
            await pilot.press("enter")
            steps: list[str] = []
            deadline = time.monotonic() + 300
            while not screen.list_for("hybrid").ranking and time.monotonic() < deadline:
                pane = screen.list_for("vector").parent
                subtitle = str(getattr(pane, "border_subtitle", "") or "")
                if subtitle and (not steps or steps[-1] != subtitle):
                    steps.append(subtitle)
                await pilot.pause(0.02)
            expected = app.workspace.search_adhoc(text) if app.workspace else {}
            out["steps"] = steps
            out["vector_rows"] = len(screen.list_for("vector").ranking)
            out["lists_match"] = all(
                screen.list_for(n).ranking == expected[n] for n in ("bm25", "vector", "hybrid")
            )
            out["heavy_imports"] = sorted(m for m in HEAVY if m in sys.modules)
            name = model.cache_name if model is not None else (settings.model or "")
            cached = EmbeddingCache(name, cache).get([text])
            out["query_vector_matches"] = bool((cached == Embedder().encode([text])).all())
        if isinstance(model, encoder_process.BackgroundEmbedder):
            model.close()
    return out


def main() -> None:
    mini = Path(sys.argv[1])
    print(json.dumps(asyncio.run(_run(mini, "--no-query" not in sys.argv))))


if __name__ == "__main__":
    main()
