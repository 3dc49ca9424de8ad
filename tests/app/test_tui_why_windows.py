"""The question list's causes of misses are ``ragtui why``'s, with the long chunks read through
their windows.

The app draws the question list before the vector retriever exists. Its causes were first worked
out as if the model read only each chunk's first tokens, and when the windows came (from the cache,
with rankings that do not move) the list must be worked out again. It was not: on the bundled set
q51 and q64 kept a ``cut-off`` that ``ragtui why`` does not give (the chunk is read whole through
its windows). A warm start now reads the windows with the cached rankings, before the first screen
(``tests/system/test_startup_work.py``); this test covers the list once the retriever is built."""

from __future__ import annotations

from ragtui.core.analysis.why import WhyIndex
from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from tests.app.test_tui import WIDE, run_async, wait_ready


@run_async
async def test_question_list_causes_follow_the_windows(cache_dir):
    # The real model, as the app loads it (an injected embedder is handed the vectors at load);
    # a second start, on the caches the first one filled: its rankings do not move.
    settings = Settings(cache_dir=cache_dir, annotator="t")
    async with RagtuiApp(settings).run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        await pilot.press("ctrl+q")
    app = RagtuiApp(settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        ws = app.workspace
        assert (
            ws.ranked.windows is not None and ws.ranked.windows.plan is not None
        )  # 512-token chunks, 256-token model
        shown = app.main_screen.question_list.view
        assert shown is not None and shown.why is not None
        fresh = WhyIndex(ws)
        differ = [
            (q.id, r)
            for q in ws.questions
            for r in ws.retrievers
            if list(shown.why.causes(q.id, r)) != list(fresh.causes(q.id, r))
        ]
        assert differ == []
        await pilot.press("ctrl+q")
