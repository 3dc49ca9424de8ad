"""The house keeps its size: no module of the headless core over 600 lines (ranx and ir_measures keep
their library files under about 450; issue 24 split the core's long modules into packages)."""

from __future__ import annotations

from tests.conftest import ROOT


def test_no_module_of_the_core_is_over_600_lines():
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "ragtui" / "core").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}, f"split these along their seams: {long}"
