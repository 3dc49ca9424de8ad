"""The app's start does only what its first screen needs (issue 26, item 1).

- Importing the app leaves out what the first screen does not draw: the views a key opens (the
  judging view, the ad-hoc query, the help, the report screens), the analyses only they run (the
  experiment, saved runs, the significance tests, the golden-set reports), Milvus, and the models.
  Each is imported when first used; ``python -X importtime`` put them at a quarter of the app's
  import time.
- The first full screen imports none of them either.
- ``ragtui`` starts the app with garbage collection off (three full collections of 0.2-0.3 s each
  walked the objects the imports and a 100,000-question load made); the app turns it back on, with
  the heap frozen, once the loaded workspace is on screen, and also when the load fails.
- Importing the command line runs no collection, and leaves none to walk what it made: collection
  is back on after it with those objects frozen (the first young collection walked them all: 8-15
  ms of every start, 500 garbage objects its only find).

Each check runs in a process of its own (``tests/startup_child.py``), so ``sys.modules`` and the
collector's state are the app's alone.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

#: Imported on first use, never by the app's import or its first screen.
LAZY = (
    "ragtui.core.analysis.experiment",
    "ragtui.core.analysis.runs",
    "ragtui.core.analysis.reports",
    "ragtui.core.analysis.check",
    "ragtui.core.analysis.curve",
    "ragtui.core.metrics.significance",
    "ragtui.core.retrieval.milvus",
    "ragtui.core.judges.openai",
    "ragtui.core.judges.local",
    "ragtui.tui.screens.adhoc",
    "ragtui.tui.screens.agreement",
    "ragtui.tui.screens.chunk",
    "ragtui.tui.screens.compare",
    "ragtui.tui.screens.dialogs",
    "ragtui.tui.screens.curve",
    "ragtui.tui.screens.diagnostics",
    "ragtui.tui.screens.explain",
    "ragtui.tui.screens.help",
    "ragtui.tui.screens.judging",
    "ragtui.tui.screens.report",
    "ragtui.tui.screens.reports",
    "ragtui.tui.screens.slices",
    "pymilvus",
    "torch",
    "sentence_transformers",
    "transformers",
)


def _child(mini: Path, cache_dir: Path, *args: str) -> dict[str, object]:
    """Run ``tests/startup_child.py`` on ``mini`` and return what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.startup_child", str(mini), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir), "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _python(code: str) -> Any:
    """What ``code``, run in a fresh interpreter, printed as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(done.stdout)


def test_importing_the_app_imports_nothing_a_key_opens() -> None:
    code = "import json, sys; import ragtui.cli.main, ragtui.tui.app; print(json.dumps(sorted(sys.modules)))"
    imported = set(_python(code))
    assert "ragtui.tui.screens.main" in imported  # the check itself sees the app's modules
    # No HTTP client either (the first screen's load may: a model named, not a folder, is looked
    # up in the Hugging Face cache through huggingface_hub, as the child's embedder is).
    assert sorted(m for m in (*LAZY, "http.client", "urllib.request") if m in imported) == []


def test_the_first_screen_imports_nothing_a_key_opens_and_collects_again(
    mini: Path, cache_dir: Path
) -> None:
    out = _child(mini, cache_dir)
    assert out["full_screen"] and out["load_error"] is None
    assert sorted(m for m in LAZY if m in out["after_first_screen"]) == []  # type: ignore[operator]
    # Collection was off from before the import; the first screen turned it on, the heap frozen.
    assert out["gc_enabled"] is True
    assert isinstance(out["frozen"], int) and out["frozen"] > 0


def test_a_load_that_fails_turns_collection_back_on(mini: Path, cache_dir: Path) -> None:
    out = _child(mini, cache_dir, "--fail")
    assert out["load_error"] and not out["full_screen"]
    assert out["gc_enabled"] is True


def test_the_command_starts_the_app_with_collection_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import ragtui.core.workspace.first_load
    import ragtui.tui.app
    from ragtui.cli.main import main

    seen: list[bool] = []

    def run_app(settings: object, mouse: bool = True, first: object = None) -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(ragtui.tui.app, "run_app", run_app)
    # No load in this process (tests/system/test_startup_work.py checks the command's first load).
    monkeypatch.setattr(ragtui.core.workspace.first_load, "FirstLoad", lambda settings: None)
    try:
        assert main(["--no-project"]) == 0
    finally:
        gc.enable()
    assert seen == [False]


def test_the_command_lines_import_leaves_no_collection_to_walk_it() -> None:
    # No collection runs while ``ragtui.cli``'s modules are imported, and none walks them after:
    # collection is back on with what the import made frozen, so the young generation is empty.
    code = (
        "import gc, json, sys\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: seen.append('ragtui.core' in sys.modules) if phase == 'start' else None)\n"
        "import ragtui.cli\n"
        "print(json.dumps([seen, gc.isenabled(), gc.get_freeze_count(), gc.get_count()[0]]))\n"
    )
    collections, enabled, frozen, young = _python(code)
    assert True not in collections and enabled is True  # (one may run before the import starts)
    assert frozen > 10_000 and young < 100
