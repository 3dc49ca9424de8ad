"""One owner, kept: nothing outside ``ragtui/tui/controller.py`` assigns a field of the controller.

The controller (``ragtui.tui.controller.Controller``) is the one place that changes the app's state;
the app and the screens ask it with its methods. A field set from outside (the app once set
``controller.retriever_status[name]`` and ``controller.embedding_progress`` itself, the judging
view ``controller.judging_blind``) is a change no rule checked. Every module of the app is parsed
and every assignment, augmented assignment, deletion or mutating call whose target goes through a
``controller`` attribute is reported.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

#: Methods that change a list, dict or set in place.
MUTATING = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add"}


def _through_controller(node: ast.expr) -> bool:
    """Whether ``node`` is ``X.controller.FIELD`` (or an item or attribute under it)."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        inner = node.value
        if isinstance(node, ast.Attribute) and (
            (isinstance(inner, ast.Attribute) and inner.attr == "controller")
            or (isinstance(inner, ast.Name) and inner.id == "controller")
        ):
            return True
        node = inner
    return False


def controller_writes(source: str) -> list[tuple[int, str]]:
    """(line, code) of every write to a field of a controller in ``source``."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATING
        ):
            targets = [node.func.value]
        for target in targets:
            if _through_controller(target):
                found.append((node.lineno, ast.unparse(node).splitlines()[0]))
    return sorted(found)


def test_no_field_of_the_controller_is_assigned_outside_it() -> None:
    writes = []
    for path in sorted((ROOT / "ragtui" / "tui").rglob("*.py")):
        if path.name == "controller.py":
            continue
        for line, code in controller_writes(path.read_text(encoding="utf-8")):
            writes.append(f"{path.relative_to(ROOT)}:{line}: {code}")
    assert not writes, "fields of the controller changed outside it:\n" + "\n".join(writes)


def test_the_check_finds_every_kind_of_write() -> None:
    source = """
def f(self, controller):
    self.controller.retriever_status[name] = "pending"
    self.controller.embedding_progress = (1, 2)
    self.app.controller.undo_stack.append(entry)
    controller.baseline = None
    self.controller.serial += 1
    del self.controller.retriever_errors[name]
    self.controller.set_k(3)
    value = self.controller.retriever_status[name]
"""
    assert [line for line, _ in controller_writes(source)] == [3, 4, 5, 6, 7, 8]


def test_the_controller_itself_is_not_checked() -> None:
    """The controller assigns its own fields (``self.x``); only writes through ``controller`` count."""
    path = Path(ROOT / "ragtui" / "tui" / "controller.py")
    assert controller_writes(path.read_text(encoding="utf-8")) == []
