"""The key footer: Textual's, rebuilt only when what it shows changed.

Textual's footer rebuilds its keys (a widget each) after every change of the screen's bindings,
once per change even when several arrive before the next paint: the first screen asked three times
for the same ten keys, 10-15 ms each. This one rebuilds when the keys it would show differ from
those it shows.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer as TextualFooter

__all__ = ["Footer"]


class Footer(TextualFooter):
    """Textual's footer, skipping a rebuild that would show the same keys."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: What the keys were last built from (None: not built yet).
        self._shown: tuple[object, ...] | None = None

    def _showing(self) -> tuple[object, ...]:
        """Everything the keys are built from: each shown binding, whether it is enabled, its
        tooltip and key display, the palette's key, and the layout."""
        app = self.app
        active = self.screen.active_bindings
        keys = tuple(
            (binding, enabled, tooltip, app.get_key_display(binding))
            for (_, binding, enabled, tooltip) in active.values()
            if binding.show
        )
        palette = active.get(app.COMMAND_PALETTE_BINDING)
        return (
            keys,
            palette[1:] if palette is not None else None,
            self.show_command_palette,
            app.ENABLE_COMMAND_PALETTE,
            self.compact,
            self._bindings_ready,
        )

    async def recompose(self) -> None:
        """Rebuild the keys, unless they would be the ones shown."""
        if not self.is_attached:
            return
        showing = self._showing()
        if showing == self._shown:
            return
        self._shown = showing
        await super().recompose()
