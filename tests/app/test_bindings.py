"""Every key binding names an action that exists where the binding runs it.

Textual runs a binding's action on the node that declares it (``action_NAME`` or ``_action_NAME``),
on the app for ``app.NAME`` and on the current screen for ``screen.NAME``; an action that is missing
does nothing and says nothing, and the key falls through to whatever binds it next (the main
screen once bound the digits to a ``grade`` it did not have: grading worked only because the result
list caught the key after it). So every binding of every screen, widget and the app of
``ragtui.tui`` is checked here: its action must resolve, and take the arguments the binding gives.
A widget's ``screen.`` actions are checked against the screens it is mounted on, in a running app.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest
from textual import actions
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widget import Widget

import ragtui.tui
from ragtui.core.settings import Settings
from ragtui.tui.app import RagtuiApp
from ragtui.tui.screens.adhoc import AdhocScreen
from ragtui.tui.screens.help import HelpScreen
from tests.app.test_tui import WIDE, make_app, run_async, wait_ready


def ragtui_classes() -> list[type[DOMNode]]:
    """Every app, screen and widget class ``ragtui.tui`` defines (each of its modules imported)."""
    for module in pkgutil.walk_packages(ragtui.tui.__path__, "ragtui.tui."):
        importlib.import_module(module.name)
    found: dict[str, type[DOMNode]] = {}
    todo: list[type[DOMNode]] = [DOMNode]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("ragtui.tui."):
                found[f"{sub.__module__}.{sub.__qualname__}"] = sub
    return [found[name] for name in sorted(found)]


def bindings_of(cls: type[DOMNode]) -> Iterator[Binding]:
    """The bindings a node of ``cls`` has: its own and those it inherits."""
    for bindings in cls._merge_bindings().key_to_bindings.values():
        yield from bindings


def missing_action(binding: Binding, target: type[DOMNode]) -> str | None:
    """Why ``binding``'s action does not run on a ``target`` node, or None when it does."""
    _, name, params = actions.parse(binding.action)
    method = getattr(target, f"_action_{name}", None) or getattr(target, f"action_{name}", None)
    if not callable(method):
        return f"{target.__name__} has no action_{name}"
    try:
        inspect.signature(method).bind(None, *params)  # None stands for self
    except TypeError as exc:
        return f"{target.__name__}.action_{name} does not take {params!r}: {exc}"
    return None


def binding_problems(
    classes: Iterable[type[DOMNode]], app: type[App[object]]
) -> tuple[list[str], set[type[DOMNode]]]:
    """Every binding of ``classes`` whose action does not resolve (one line each), and the widget
    classes whose ``screen.`` actions depend on the screen they are mounted on."""
    problems: list[str] = []
    on_screens: set[type[DOMNode]] = set()
    for cls in classes:
        for binding in bindings_of(cls):
            namespace = actions.parse(binding.action)[0]
            where = f"{cls.__module__}.{cls.__qualname__}: {binding.key!r} -> {binding.action!r}"
            if namespace == "screen" and not issubclass(cls, Screen):
                on_screens.add(cls)
                continue
            if namespace in ("", "screen"):
                target: type[DOMNode] = cls
            elif namespace == "app":
                target = app
            else:
                problems.append(f"{where}: namespace {namespace!r} is not known before it runs")
                continue
            why = missing_action(binding, target)
            if why is not None:
                problems.append(f"{where}: {why}")
    return problems, on_screens


def test_every_binding_names_an_action_that_exists() -> None:
    classes = ragtui_classes()
    names = {cls.__name__ for cls in classes}
    assert {"RagtuiApp", "MainScreen", "JudgingScreen", "AdhocScreen", "ResultList"} <= names
    problems, on_screens = binding_problems(classes, RagtuiApp)
    assert not problems, "bindings whose action does not exist:\n" + "\n".join(problems)
    assert {cls.__name__ for cls in on_screens} >= {"QuestionList"}


class _Broken(Screen[None]):
    """A screen that binds a key to an action it does not have, and one to a wrong argument."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "grade(1)", "Grade"),
        Binding("k", "app.change_k", "k"),
        Binding("h", "app.help", "Help"),
        Binding("x", "focused.cursor(1)", "Down"),
    ]


def test_the_check_finds_a_binding_without_its_action() -> None:
    problems, _ = binding_problems([_Broken], RagtuiApp)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "'1' -> 'grade(1)': _Broken has no action_grade",
        (
            "'k' -> 'app.change_k': RagtuiApp.action_change_k does not take (): "
            "missing a required argument: 'step'"
        ),
        "'x' -> 'focused.cursor(1)': namespace 'focused' is not known before it runs",
    ]


def _screen_actions_resolve(screen: Screen[object], seen: set[type[DOMNode]]) -> list[str]:
    """The ``screen.`` actions of the widgets mounted on ``screen`` that it does not have."""
    problems = []
    for node in screen.walk_children(with_self=False):
        if not isinstance(node, Widget) or not type(node).__module__.startswith("ragtui.tui."):
            continue
        for binding in bindings_of(type(node)):
            if actions.parse(binding.action)[0] != "screen":
                continue
            seen.add(type(node))
            why = missing_action(binding, type(screen))
            if why is not None:
                problems.append(f"{type(node).__name__} on {type(screen).__name__}: {why}")
    return problems


@pytest.fixture
def tui_settings(mini_settings: Settings, tmp_path: Path) -> Settings:
    """The mini corpus with a per-test embedding cache (the app runs with a fake embedder)."""
    return replace(mini_settings, cache_dir=tmp_path / "cache")


@run_async
async def test_widgets_screen_actions_resolve_on_their_screens(tui_settings: Settings) -> None:
    """A widget's ``screen.NAME`` runs on the screen it is on: every screen that mounts such a
    widget has the action (the main screen, the ad-hoc screen, the help screen)."""
    _, on_screens = binding_problems(ragtui_classes(), RagtuiApp)
    seen: set[type[DOMNode]] = set()
    problems: list[str] = []
    app = make_app(tui_settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        problems += _screen_actions_resolve(app.screen, seen)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AdhocScreen)
        problems += _screen_actions_resolve(app.screen, seen)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        problems += _screen_actions_resolve(app.screen, seen)
    assert not problems, "\n".join(problems)
    assert seen == on_screens, "a widget with screen actions was not seen mounted"
