"""The app's themes: Textual's own, and one for 16-colour terminals (TERM=screen, many SSH sessions)."""

from __future__ import annotations

from dataclasses import replace

from textual.theme import BUILTIN_THEMES

#: The theme for 16-colour terminals: Textual's ANSI theme with borders that show on a black background.
ANSI_THEME = replace(
    BUILTIN_THEMES["ansi-dark"],
    name="ragtui-ansi",
    accent="ansi_magenta",
    variables={
        **BUILTIN_THEMES["ansi-dark"].variables,
        "border": "ansi_bright_blue",
        "border-blurred": "ansi_bright_black",
        "block-cursor-blurred-foreground": "ansi_default",
        "block-cursor-blurred-background": "ansi_bright_black",
        "footer-key-foreground": "ansi_bright_yellow",
    },
)

#: Rich's colour systems of a terminal with 16 colours: its own palette stays legible there.
SIXTEEN_COLOURS = ("standard", "windows")


def theme_for(color_system: str | None) -> str | None:
    """The theme for a terminal with ``color_system`` (Rich's name), or None for Textual's default."""
    return ANSI_THEME.name if color_system in SIXTEEN_COLOURS else None
