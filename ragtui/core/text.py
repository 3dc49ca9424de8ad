"""Text from files is data: control characters are made visible before anything is drawn or printed.

Rich drops BEL but passes ESC, so a corpus document, a question, a slice or a file name holding
``ESC ] 52 ; …`` could otherwise write to the clipboard, retitle the window or clear the screen.
Every C0 control but tab and newline, DEL, every C1 control, and the bidirectional overrides that
can make text read differently from what it is, are shown as ``\\xNN`` / ``\\uNNNN`` escapes; a file
name's undecodable bytes (kept by Python as lone surrogates) show as ``\\xNN`` too.
"""

from __future__ import annotations

import re

#: C0 but tab and newline, DEL, C1, the bidi embeddings/overrides/isolates, and lone surrogates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: The same, plus tab, newline and the other line breaks, for text that must stay on one line.
_CONTROL_ONE_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    """The visible form of one control character."""
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character but tab and newline shown as an escape (never sent raw)."""
    return _CONTROL.sub(_escape, text)


def visible_line(text: str) -> str:
    """``text`` for one line: like ``visible``, and tabs and line breaks are escaped too."""
    return _CONTROL_ONE_LINE.sub(_escape, text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def not_utf8(text: str) -> str | None:
    """What makes ``text`` impossible to write as UTF-8 (``byte 0xe9``: a byte of a command-line argument
    or file name that was not UTF-8, kept by Python as a lone surrogate), or None when it is valid."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"byte 0x{code - 0xDC00:02x}"
    return f"lone surrogate U+{code:04X}"


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character ``visible`` would escape."""
    return _CONTROL.search(text) is not None
