"""Run by ``tests/system/test_startup.py`` in a process of its own, so ``sys.modules`` and the garbage
collector's state are the app's alone: the real app, headless, on a copy of the small corpus.

Collection is turned off first, as ``ragtui`` does before it imports the app. Then the app is
imported and run with a deterministic embedder (every retriever ready without a model) until its
first full screen is painted, or, with ``--fail``, on a golden folder that does not exist until
its load error is on screen. Prints one JSON line: the modules imported after importing the app and
after the first screen, and whether collection is on and the heap frozen then.

python -m tests.startup_child MINI_FOLDER [--fail]
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

gc.disable()  # as ragtui's command line does before it imports the app

from ragtui.tui.app import RagtuiApp  # noqa: E402
from tests.conftest import settings_of  # noqa: E402

AFTER_IMPORT = sorted(sys.modules)


class HashEmbedder:
    """Each word hashed into one of 16 dimensions (as the Pilot tests' fake embedder)."""

    cache_name = "startup-child-hash-16"

    def encode(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        rows = np.zeros((len(texts), 16), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, int(hashlib.sha1(word.encode()).hexdigest(), 16) % 16] += 1.0
            rows[i, 0] += 1e-3
            rows[i] /= float(np.linalg.norm(rows[i]))
        if progress is not None:
            progress(len(texts), len(texts))
        return rows


async def _run(mini: Path, fail: bool) -> dict[str, object]:
    settings = settings_of(mini, annotator="startup")
    if fail:
        settings = dataclasses.replace(settings, golden=mini / "no-such-golden")
    app = RagtuiApp(settings, embedder=HashEmbedder())
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3000):
            if app.full_screen_after is not None or app.load_error is not None:
                break
            await asyncio.sleep(0.01)
        await pilot.pause()
        out: dict[str, object] = {
            "full_screen": app.full_screen_after is not None,
            "load_error": app.load_error,
            "after_import": AFTER_IMPORT,
            "after_first_screen": sorted(sys.modules),
            "gc_enabled": gc.isenabled(),
            "frozen": gc.get_freeze_count(),
        }
        await pilot.press("ctrl+q")
    return out


def main() -> None:
    out = asyncio.run(_run(Path(sys.argv[1]), "--fail" in sys.argv[2:]))
    gc.unfreeze()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
