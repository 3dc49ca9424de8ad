"""docs/architecture.md matches the tree: its module index names every module of ``ragtui`` and no
other, each with the first line of the module's docstring (the one job the module does), so a
module added, removed, renamed or given another job fails here until the document says so."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

DOC = ROOT / "docs" / "architecture.md"
HEADING = "## Module index"


def first_line(path: Path) -> str:
    """The first line of a module's docstring ("" without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return doc.strip().splitlines()[0].strip() if doc else ""


def module_index() -> dict[str, str]:
    """Every module of ``ragtui`` (its path from the root) -> the first line of its docstring."""
    return {
        path.relative_to(ROOT).as_posix(): first_line(path)
        for path in sorted((ROOT / "ragtui").rglob("*.py"))
    }


def documented() -> dict[str, str]:
    """The module index of docs/architecture.md: path -> what it says the module does."""
    text = DOC.read_text(encoding="utf-8")
    assert HEADING in text, f"docs/architecture.md has no {HEADING!r} section"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (.*) \|$", section, flags=re.MULTILINE)
    return {path: job.replace("\\|", "|") for path, job in rows}


def test_every_module_states_its_job_in_its_first_line() -> None:
    silent = [path for path, job in module_index().items() if not job]
    assert not silent, f"modules without a docstring: {silent}"


def test_the_module_index_matches_the_tree() -> None:
    tree, doc = module_index(), documented()
    assert sorted(set(tree) - set(doc)) == [], "modules docs/architecture.md does not name"
    assert sorted(set(doc) - set(tree)) == [], (
        "modules docs/architecture.md names that do not exist"
    )
    changed = {path: (doc[path], job) for path, job in tree.items() if doc[path] != job}
    assert changed == {}, "first docstring lines that changed: update docs/architecture.md"
