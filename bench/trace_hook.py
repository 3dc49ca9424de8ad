"""Where a key's time goes inside a Textual program: the trace behind ``bench.keys``'s ratios.

``python -m bench.trace_hook LOG MODULE [ARGS...]`` runs ``python -m MODULE ARGS`` with Textual's
key delivery and paints timed, one line per event appended to LOG:

- ``K <time> <cpu>``: a key event reached the app (posted by the terminal driver);
- ``P <start> <end> <cpu> <lines> <layout> <output> <textual lines>``: a paint (Textual's screen
  update: a layout pass when one is due, then the changed lines drawn and turned into terminal
  output). ``lines`` is the time the widgets spent drawing their lines in the program's own
  drawing code (a ``render_line`` the program defines: ragtui's or the floor's), ``textual lines``
  the time in Textual's (a scrollbar, the header, the footer, a ``Static``'s text),
  ``layout`` the time in layout passes, ``output`` the time turning the update into escape
  sequences; the rest of the paint is Textual's compositor (styles, borders, cutting and joining
  the widgets' strips).

Times are ``perf_counter`` seconds, ``cpu`` the process's CPU seconds then. ``bench.keys`` reads
the log: for each key, its CPU time from its arrival to the end of its last paint, split into the
paints (their parts as above) and everything else (the program's handlers: ragtui's or the
floor's work for the key, and Textual's message passing). The same split for the floor app's
keys tells what of ragtui's time is Textual's own.
"""

from __future__ import annotations

import functools
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any


def install(path: str) -> None:
    """Time Textual's key delivery and paints into the log at ``path``."""
    from textual import events
    from textual._styles_cache import StylesCache
    from textual.app import App
    from textual.screen import Screen

    log = open(path, "a", buffering=1)  # noqa: SIM115 (open for the program's life)
    clock, cpu = time.perf_counter, time.process_time
    parts = {"lines": 0.0, "layout": 0.0, "output": 0.0, "textual_lines": 0.0}

    inside: list[float] = []  # per timed call under way: the time of the timed calls it made

    def timed(part: str, method: Callable[..., Any]) -> Callable[..., Any]:
        """``method``, its own time added to ``part`` (a layout pass draws lines: those count
        as lines, not as layout)."""

        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            inside.append(0.0)
            try:
                return method(*args, **kwargs)
            finally:
                spent = clock() - start
                parts[part] += spent - inside.pop()
                if inside:
                    inside[-1] += spent

        return wrapper

    post = App.post_message

    @functools.wraps(post)
    def post_message(self: App[Any], message: Any) -> bool:
        if isinstance(message, events.Key):
            log.write(f"K {clock():.6f} {cpu():.6f}\n")
        return post(self, message)

    render = StylesCache.render

    @functools.wraps(render)
    def render_widget_lines(self: StylesCache, *args: Any, **kwargs: Any) -> Any:
        draw = args[4]  # the widget's render_line
        module = getattr(getattr(draw, "__func__", draw), "__module__", "") or ""
        part = "textual_lines" if module.split(".")[0] == "textual" else "lines"
        args = (*args[:4], timed(part, draw), *args[5:])
        return render(self, *args, **kwargs)

    update = Screen._on_timer_update

    @functools.wraps(update)
    def paint(self: Screen[Any]) -> None:
        for part in parts:
            parts[part] = 0.0
        start = clock()
        update(self)
        end = clock()
        log.write(
            f"P {start:.6f} {end:.6f} {cpu():.6f} "
            f"{parts['lines']:.6f} {parts['layout']:.6f} {parts['output']:.6f} "
            f"{parts['textual_lines']:.6f}\n"
        )

    App.post_message = post_message  # type: ignore[method-assign]
    StylesCache.render = render_widget_lines  # type: ignore[method-assign]
    Screen._on_timer_update = paint  # type: ignore[method-assign]
    Screen._refresh_layout = timed("layout", Screen._refresh_layout)  # type: ignore[method-assign]
    App._display = timed("output", App._display)  # type: ignore[method-assign]


def main() -> None:
    path, module, *args = sys.argv[1:]
    install(path)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
