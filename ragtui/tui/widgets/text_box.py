"""A one-line text box that takes every key typed into it, in the order typed.

Textual's ``Input`` has two gaps this closes:

- It tells Textual which keys it consumes from the key's name, and ``plus``, ``minus``, ``slash``
  and ``underscore`` name no character there: a binding on ``-`` (lower k) fired instead of
  typing. ``check_consume_key`` here finds the character (``ragtui.tui.typing_keys``).
- Its own keys (backspace, enter, ctrl+u, the arrows) are bindings that run when the key has
  bubbled up to the app, after the characters typed behind it: ``why:lx⌫ex`` typed in one burst
  read ``why:lxe``. ``take_key`` applies a character or one of its own keys at once; the app calls
  it for each key while a text box has the focus (``RagtuiApp.on_event``), so a burst types what
  the same keys typed slowly do.

And one cost: ``Input`` sets its virtual size to its text's width at every change (to scroll it
sideways), and a widget's virtual size is declared to lay the screen out when it changes, so each
character typed laid out the whole screen again, though the box's size never follows its text.
Here a change of it repaints the box only.
"""

from __future__ import annotations

from textual import events
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input

from ragtui.tui.typing_keys import key_character


class TextBox(Input):
    """An ``Input`` that takes its keys in order (see the module docstring)."""

    #: The text's width, for scrolling sideways: it lays nothing out (see the module docstring).
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Every printable key is typed here, ``-`` and ``+`` too (Textual finds no character for
        their names)."""
        return super().check_consume_key(key, character or key_character(key))

    async def take_key(self, event: events.Key) -> bool:
        """Apply a key now: type its character, or run this box's own binding of it (backspace,
        enter, ctrl+u, the arrows...). False when the key is neither (it is left to Textual)."""
        character = event.character
        if event.is_printable and character is not None:
            selection = self.selection
            if selection.is_empty:
                self.insert_text_at_cursor(character)
            else:
                self.replace(character, *selection)
            return True
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if await self.app.run_action(binding.action, self):
                return True
        return False

    async def _on_key(self, event: events.Key) -> None:
        """A key that reached the box through its queue: the same, in order."""
        if await self.take_key(event):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)
