"""Typing in a text box types: which keys a focused text box takes for itself.

Textual leaves a binding out while the focused widget would consume its key
(``check_consume_key``), but it finds a key's character from the key's name, and for ``plus``,
``minus``, ``slash`` and ``underscore`` it finds none: ``-`` typed into the filter changed k.
The app therefore asks the focused widget with the character the key really carries
(``RagtuiApp.run_action``), and the footer with the character each printable key name stands for
(``key_character``).
"""

from __future__ import annotations

import unicodedata
from functools import cache

from textual.dom import DOMNode
from textual.keys import KEY_NAME_REPLACEMENTS, key_to_character


@cache
def _printable_keys() -> dict[str, str]:
    """Textual's name of each printable ASCII key (as its terminal driver names them), with the
    character it types: ``minus`` → ``-``, ``space`` → `` ``."""
    out: dict[str, str] = {}
    for character in map(chr, range(0x20, 0x7F)):
        if character.isalnum():
            out[character] = character
            continue
        name = unicodedata.name(character).lower().replace("-", "_").replace(" ", "_")
        out[KEY_NAME_REPLACEMENTS.get(name, name)] = character
    return out


def key_character(key: str) -> str | None:
    """The character a key name types (``minus`` → ``-``), None for keys that type nothing."""
    return _printable_keys().get(key) or key_to_character(key)


def typed_into(widget: DOMNode | None, key: str, character: str | None) -> bool:
    """Whether ``widget`` (the focused one) takes this key as typing: a text box (an input, an
    editable text area, the palette's input) and a printable character."""
    return (
        widget is not None
        and character is not None
        and character.isprintable()
        and widget.check_consume_key(key, character)
    )
