"""Widget ids and short marks built from names the user chose (retrievers, variants).

Textual ids allow only letters, digits, ``_`` and ``-``; a retriever is
called ``hybrid+rerank`` or whatever a project file names it.  Every
other character (``_`` included, so that two names never share an id) is
spelled ``_HEX_``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragtui.core.text import visible_line


def widget_id(prefix: str, name: str) -> str:
    """``prefix-NAME`` with NAME spelled so that Textual accepts it."""
    out = []
    for char in name:
        if char.isascii() and (char.isalnum() or char == "-"):
            out.append(char)
        else:
            out.append(f"_{ord(char):x}_")
    return f"{prefix}-{''.join(out)}"


#: Marks tried, in order, when a retriever's own letters are all taken.
SPARE_MARKS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: The suffix of a reranked list's name, whose mark is ``r`` when it is free.
RERANK_SUFFIX = "+rerank"


def rank_marks(names: Sequence[str]) -> dict[str, str]:
    """One character per retriever, no two alike, for the question list's collapsed rank column.

    A name whose first character no other name shares gets it (``b`` bm25, ``v`` vector); of names
    that start alike the first gets the shared character and each other one the first free letter
    or digit after what it shares with the names before it (``milvus``, ``milvus-e5``: ``m``, ``e``
    or ``5``); a reranked list ``r``. Only characters the name shows are used (control characters
    never), then spare letters and digits."""
    shown = {name: [c for c in visible_line(name) if c.isalnum()] for name in names}
    firsts = [chars[0] if chars else "" for chars in shown.values()]
    marks: dict[str, str] = {}
    for name, first in zip(names, firsts, strict=True):
        if first and firsts.count(first) == 1:
            marks[name] = first
    used = set(marks.values())
    for index, name in enumerate(names):
        if name in marks:
            continue
        chars = shown[name]
        before = ["".join(shown[n]) for n in names[:index] if shown[n][:1] == chars[:1]]
        own = "".join(chars)
        common = max((_common_prefix(own, other) for other in before), default=0)
        candidates = ["r"] if name.endswith(RERANK_SUFFIX) else []
        candidates += [*chars[:1], *chars[common:], *chars, *SPARE_MARKS]
        mark = next((c for c in candidates if c not in used), "?")
        marks[name] = mark
        used.add(mark)
    return {name: marks[name] for name in names}


def unclear_marks(marks: Mapping[str, str]) -> dict[str, str]:
    """The headings that do not say by themselves which retriever they stand for: not the start of
    the retriever's name, or the start of another shown name too (``m`` for milvus beside
    milvus-e5). Heading -> name, in the order given: what a legend has to spell out."""
    names = {name: visible_line(name) for name in marks}
    out: dict[str, str] = {}
    for name, mark in marks.items():
        starts = [n for n, shown in names.items() if shown.startswith(mark)]
        if starts != [name]:
            out[mark] = names[name]
    return out


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count
