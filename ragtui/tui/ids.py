"""Widget ids built from names the user chose (retrievers, variants).

Textual ids allow only letters, digits, ``_`` and ``-``; a retriever is
called ``hybrid+rerank`` or whatever a project file names it.  Every
other character (``_`` included, so that two names never share an id) is
spelled ``_HEX_``.
"""

from __future__ import annotations


def widget_id(prefix: str, name: str) -> str:
    """``prefix-NAME`` with NAME spelled so that Textual accepts it."""
    out = []
    for char in name:
        if char.isascii() and (char.isalnum() or char == "-"):
            out.append(char)
        else:
            out.append(f"_{ord(char):x}_")
    return f"{prefix}-{''.join(out)}"
