"""Small formatting helpers the reports share."""

from __future__ import annotations

from ragtui.core.report_model import Note, Section, text_section

__all__ = ["count", "empty", "rank"]


def count(n: int, noun: str) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def rank(value: int | None) -> str:
    """A 1-based rank, or ``-`` when the list does not hold the chunk."""
    return "-" if value is None else str(value)


def empty(what: str) -> Section:
    """A one-line section saying a list is empty: ``only bm25 found: none``."""
    return text_section(Note(f"{what}: none", "dim"))
