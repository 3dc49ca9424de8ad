"""The app's modules are findable and of a size one can read (issue 24).

A screen lives in the module named after it (``DiagnosticsScreen`` in ``screens/diagnostics.py``;
only the small dialogs share ``screens/dialogs.py``), so that its name says where to look; and no
module of the app is over 700 lines: the main screen is its screen, two compound widgets
(``QuestionPane``, ``ResultsPane``) and the views it opens, not one file of 1,400 lines.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from textual.screen import Screen

import ragtui.tui
import ragtui.tui.screens

#: The most lines a module of the app may have.
MAX_LINES = 700
#: The module of the small screens (a load error, check's problems, a one-line prompt).
DIALOGS = "ragtui.tui.screens.dialogs"


def _module_for(screen: str) -> str:
    """``DiagnosticsScreen`` -> ``ragtui.tui.screens.diagnostics``."""
    words = re.findall(r"[A-Z][a-z0-9]*", screen.removesuffix("Screen"))
    return "ragtui.tui.screens." + "_".join(w.lower() for w in words)


def test_each_screen_lives_in_the_module_named_after_it() -> None:
    misfiled = []
    for info in pkgutil.iter_modules(ragtui.tui.screens.__path__, "ragtui.tui.screens."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not (isinstance(value, type) and issubclass(value, Screen)):
                continue
            if value.__module__ != info.name:
                continue  # imported here, defined elsewhere
            if info.name not in (_module_for(name), DIALOGS):
                misfiled.append(f"{name} in {info.name} (expected {_module_for(name)})")
    assert not misfiled, misfiled


def test_no_module_of_the_app_is_over_700_lines() -> None:
    root = Path(ragtui.tui.__file__).parent
    sizes = {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
        for path in root.rglob("*.py")
    }
    assert sizes["screens/main.py"] > 100  # the files were read
    assert not {name: n for name, n in sizes.items() if n > MAX_LINES}
