"""No import cycle in ragtui, counting every import: module level, inside functions, and under
``if TYPE_CHECKING:``.

import-linter's layers contracts see the imports too, but a cycle between two modules of one
layer (or of a folder no contract covers) passes them, and a function-level import that dodges a
cycle at import time is still a cycle of the design. So every module of the package is parsed with
``ast``, every ``import`` and ``from ... import`` anywhere in it is an edge (relative imports
resolved; ``from package import name`` is an edge to ``package.name`` when that is a module, else
to the package), and any strongly connected component of more than one module is a failure, shown
as one shortest cycle with the line of each import. Importing ``a.b.c`` also runs ``a`` and
``a.b`` (their ``__init__``), but a package re-exporting its own modules is not a cycle of the
design, so only the module named is an edge, as import-linter counts it.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.conftest import ROOT

#: module -> {imported module -> the line of the first import of it}.
Graph = dict[str, dict[str, int]]


def module_names(package_dir: Path) -> dict[str, Path]:
    """Every module of the package under ``package_dir`` by its dotted name (a package by its ``__init__``)."""
    root = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement names (a ``from`` import: the base, then base.name each)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        if node.level > 1:
            package = package[: -(node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]


def import_graph(package_dir: Path) -> tuple[Graph, dict[str, Path]]:
    """The package's import graph (edges only between its own modules) and its modules' files."""
    modules = module_names(package_dir)
    graph: Graph = {name: {} for name in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _imported(node, module, is_package)
            if isinstance(node, ast.ImportFrom):
                base, members = names[0], names[1:]
                # ``from pkg import mod`` imports the module; ``from pkg import name`` the package.
                targets = [m for m in members if m in modules]
                if len(targets) < len(members) or not members:
                    targets.append(base)
            else:
                targets = names
            for target in targets:
                # ``import a.b.c`` where only ``a.b`` is ours (c an attribute): the deepest module.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    graph[module].setdefault(target, node.lineno)
    return graph, modules


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def shortest_cycle(graph: Graph, component: list[str]) -> list[str]:
    """One shortest cycle through the component's first module (breadth first, inside the component)."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for succ in sorted(graph[node]):
            if succ not in inside:
                continue
            if succ == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if succ not in came_from:
                came_from[succ] = node
                queue.append(succ)
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def describe_cycles(graph: Graph, modules: Mapping[str, Path], root: Path = ROOT) -> list[str]:
    """Each strongly connected component as one line: its modules and one shortest cycle through
    them, ``a (a.py:12) -> b (b.py:40) -> a``, naming where each import is."""
    lines = []
    for component in strongly_connected(graph):
        cycle = shortest_cycle(graph, component)
        steps = [
            f"{a} ({modules[a].relative_to(root)}:{graph[a][b]})"
            for a, b in itertools.pairwise(cycle)
        ]
        shown = "" if len(component) == 2 else f" ({', '.join(component)}), for one"
        lines.append(f"{len(component)} modules{shown}: " + " -> ".join([*steps, cycle[-1]]))
    return lines


def test_ragtui_has_no_import_cycle() -> None:
    graph, modules = import_graph(ROOT / "ragtui")
    assert len(modules) > 100  # every module was found
    assert "ragtui.core.errors" in graph["ragtui.core.files"]  # and its imports read
    cycles = describe_cycles(graph, modules)
    assert not cycles, "import cycles (function-level and TYPE_CHECKING imports count):\n" + (
        "\n".join(cycles)
    )


def _write(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_check_finds_cycles_hidden_in_functions_and_type_checking(tmp_path: Path) -> None:
    """What the check counts: a function-level import, a ``TYPE_CHECKING`` one and relative ones."""
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg.b import g\n",
            "pkg/b.py": "from pkg import a\n",
            "pkg/sub/__init__.py": "from .c import C\n",
            "pkg/sub/c.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ..d import D\n"
                "class C: ...\n"
            ),
            "pkg/d.py": "import pkg.sub.c\nimport os\n",
            "pkg/e.py": "from . import d\nfrom .sub import C\n",
        },
    )
    graph, modules = import_graph(package)
    assert graph["pkg.e"] == {"pkg.d": 1, "pkg.sub": 2}
    assert strongly_connected(graph) == [["pkg.a", "pkg.b"], ["pkg.d", "pkg.sub.c"]]
    assert graph["pkg.sub.c"] == {"pkg.d": 3}  # under TYPE_CHECKING, two levels up
    assert describe_cycles(graph, modules, tmp_path) == [
        "2 modules: pkg.a (pkg/a.py:2) -> pkg.b (pkg/b.py:1) -> pkg.a",
        "2 modules: pkg.d (pkg/d.py:1) -> pkg.sub.c (pkg/sub/c.py:3) -> pkg.d",
    ]


def test_the_check_passes_a_package_without_cycles(tmp_path: Path) -> None:
    """A package re-exporting its own modules (``__init__`` importing them) is no cycle."""
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\n",
            "pkg/a.py": "from pkg.b import B\nclass A: ...\n",
            "pkg/b.py": "def f():\n    import json\n    from pkg import c\nclass B: ...\n",
            "pkg/c.py": "",
        },
    )
    graph, _ = import_graph(package)
    assert graph["pkg.b"] == {"pkg.c": 3}
    assert strongly_connected(graph) == []
