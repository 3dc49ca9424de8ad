"""Errors about bad input, each able to say which file, which line and what is wrong."""

from __future__ import annotations

from pathlib import Path

from ragtui.core.text import mask_urls, visible_line


class InputError(Exception):
    """Bad input: a file, an optional 1-based line number and the problem, shown on one line."""

    def __init__(self, path: str | Path | None, problem: str, line: int | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.problem = problem
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The one-line message ``file:line: problem``, control characters shown as escapes."""
        where = visible_line(self.path or "")
        if self.line is not None:
            where = f"{where}:{self.line}"
        flat = visible_line(mask_urls(" ".join(self.problem.split())))
        return f"{where}: {flat}" if where else flat
