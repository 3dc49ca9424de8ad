"""Everything the command line prints: reports as plain text, JSON, warnings, errors, the progress bar.

Text from files is data: whatever is printed goes through ``visible`` first, so no control
character from a corpus, a question or a file name reaches the terminal.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from ragtui.core.data.corpus import utf8_name
from ragtui.core.errors import InputError
from ragtui.core.report_model import Report, Section
from ragtui.core.retrieval.embeddings import Progress
from ragtui.core.retrieval.live import LiveProgress
from ragtui.core.settings import Settings
from ragtui.core.text import visible, visible_line
from ragtui.core.workspace import Workspace


def out(text: str = "") -> None:
    """Print a line (or lines) on stdout, control characters made visible."""
    print(visible(text))


def err(text: str) -> None:
    """Print one line on stderr, control characters made visible."""
    print(visible_line(text), file=sys.stderr)


def warn(text: str) -> None:
    """``ragtui: warning: …`` on stderr."""
    err(f"ragtui: warning: {text}")


def warn_all(warnings: Sequence[str]) -> None:
    """Every warning, one a line."""
    for warning in warnings:
        warn(warning)


def print_notices(ws: Workspace) -> None:
    """What the workspace wants the user told (``ragtui: …`` on stderr), then forget it."""
    for notice in ws.notices:
        err(f"ragtui: {notice}")
    ws.notices.clear()


#: Characters JSON may hold raw that a terminal must not receive raw (they occur only inside strings).
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _valid_text(value: Any) -> Any:
    """``value`` with every string made valid UTF-8 (a file name's other bytes spelled ``\\xNN``)."""
    if isinstance(value, str):
        return utf8_name(value)
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_valid_text(v) for v in value]
    return value


def print_json(value: Any) -> None:
    """A JSON document on stdout (orjson escapes every control character).

    JSON holds only UTF-8: a string that is not (a path given with other bytes) is spelled with
    ``\\xNN`` escapes rather than failing with a traceback.
    """
    try:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except TypeError:
        data = orjson.dumps(_valid_text(value), option=orjson.OPT_INDENT_2)
    # orjson escapes C0 controls; DEL, C1 and the bidi controls may stand raw in JSON, so they are
    # escaped here too (``\u009b``, still the same JSON string) before they reach a terminal.
    sys.stdout.write(_JSON_RAW.sub(_json_escape, data.decode()) + "\n")


def format_columns(
    rows: Sequence[Sequence[str]], right: Sequence[int] = (), indent: str = ""
) -> str:
    """Rows of cells as aligned columns separated by two spaces (columns in ``right`` right-aligned)."""
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(indent + "  ".join(cells).rstrip())
    return "\n".join(lines)


def render_section(section: Section) -> str:
    """One section as plain text: heading, aligned table (indented under a heading), notes.

    Titles and cells are made visible on one line (a tab or line break in a cell would break the
    columns); notes keep their line breaks.
    """
    lines: list[str] = []
    if section.heading:
        lines.append(visible_line(section.heading))
    if section.has_table:
        right = [i for i, c in enumerate(section.columns) if c.align == "right"]
        rows = [
            [visible_line(c.title) for c in section.columns],
            *([visible_line(cell) for cell in r.cells] for r in section.rows),
        ]
        indent = "  " if section.heading else ""
        lines.append(format_columns(rows, right, indent))
    lines.extend(visible(n.text) for n in section.notes)
    return "\n".join(lines)


def render_report(report: Report, title: bool = True) -> str:
    """A report as plain text: the title, then each section, a blank line between sections."""
    body = "\n\n".join(block for block in map(render_section, report.sections) if block)
    head = visible_line(report.title) if title else ""
    return "\n".join(part for part in (head, body) if part)


def print_report(report: Report, title: bool = True) -> None:
    """Print a report on stdout."""
    out(render_report(report, title))


def rich_progress(label: str = "embedding", unit: str = "texts") -> Progress:
    """A progress callback drawing a Rich bar on stderr (``unit`` per second and time left), made
    at its first report: a warm run, which reports nothing, does not import Rich (0.1 s)."""
    made: list[Progress] = []

    def progress(done: int, total: int) -> None:
        if not made:
            made.append(_rich_bar(label, unit))
        made[0](done, total)

    return progress


def _rich_bar(label: str, unit: str) -> Progress:
    """The Rich bar of ``rich_progress`` (lines instead when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress

    console = Console(stderr=True)
    if not console.is_terminal:
        return _line_progress(label, unit)  # a log (CI) gets a line at the start and one at the end
    bar = RichProgress(
        TextColumn(visible_line(label)),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = None
    started = 0.0
    first = 0

    def progress(done: int, total: int) -> None:
        nonlocal task, started, first
        if task is None:
            # The clock starts with the work (the first call), not when the bar was made.
            started, first = time.monotonic(), done
            bar.start()
            task = bar.add_task(label, total=total, rate="")
        elapsed = max(time.monotonic() - started, 1e-6)
        bar.update(task, completed=done, rate=f"{(done - first) / elapsed:.1f} {unit}/s")
        if done >= total:
            bar.stop()

    return progress


#: Seconds between progress lines in a log (stderr not a terminal); ``RAGTUI_PROGRESS_SECONDS`` sets another.
PROGRESS_SECONDS = 10.0


def progress_period() -> float:
    raw = os.environ.get("RAGTUI_PROGRESS_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return PROGRESS_SECONDS
    return value if value >= 0 else PROGRESS_SECONDS


def _line_progress(label: str, unit: str) -> Progress:
    """Progress for stderr that is not a terminal (a CI log): a line when the work starts
    (``ragtui: embedding 644 texts...``), one every ``RAGTUI_PROGRESS_SECONDS`` (10) while it runs
    (``ragtui: embedding: 320 of 644 texts, 3.4 texts/s, about 95 s left``) and one when it is done
    with the rate over the whole work (``ragtui: embedding: 644 texts in 190.2 s (3.4 texts/s)``).

    The clock starts at the first call: a step reports ``(0, total)`` before it begins. Work
    already done at the first call (answers from a cache) is not counted in the rate.
    """
    period = progress_period()
    started = 0.0
    last = 0.0
    first = -1

    def progress(done: int, total: int) -> None:
        nonlocal started, last, first
        now = time.monotonic()
        if first < 0:
            started, last, first = now, now, done
            todo = f"{total - done} of {total}" if done else str(total)
            err(f"ragtui: {label} {todo} {unit}...")
        work = done - first
        elapsed = max(now - started, 1e-6)
        rate = work / elapsed
        if done >= total:
            err(f"ragtui: {label}: {work} {unit} in {elapsed:.1f} s ({rate:.1f} {unit}/s)")
        elif now - last >= period and done > first:
            last = now
            left = (total - done) / rate if rate > 0 else 0.0
            err(
                f"ragtui: {label}: {done} of {total} {unit}, {rate:.1f} {unit}/s, "
                f"about {left:.0f} s left"
            )

    return progress


def live_progress() -> LiveProgress:
    """A progress callback drawing one bar per live retriever while it is asked."""
    bars: dict[str, Progress] = {}

    def progress(name: str, done: int, total: int) -> None:
        if name not in bars:
            if done >= total:
                return  # every answer came from the cache: nothing to wait for
            bars[name] = rich_progress(f"asking {name}", "questions")
        bars[name](done, total)

    return progress


def open_workspace(settings: Settings) -> Workspace:
    """Load everything, embeddings, reranking and live answers included, with progress bars;
    warnings printed.

    A live retriever that could not answer some questions is a warning naming them (they count as
    empty runs); one that answered none is an error (exit 2): its numbers would be zeros that say
    nothing about it.
    """
    ws = Workspace.load(settings)
    ws.prepare_vectors(rich_progress())
    rerank = rich_progress("reranking", "questions")
    if ws.ranked.reranker is not None and ws.questions:
        rerank(0, len(ws.questions))  # the start (the first question reports after its scoring)
    ws.prepare_rerank(rerank)
    if ws.live.retrievers:
        ws.apply_live(ws.compute_live(progress=live_progress(), refresh=settings.refresh))
    warn_all(ws.warnings)
    failed = []
    for name, status in ws.live.status.items():
        if status.state == "partial":
            warn(f"{name}: {status.message}; they count as empty runs")
        elif status.state == "failed":
            failed.append(f"{name}: {status.message}")
    for message in failed[:-1]:
        err(f"ragtui: error: {message}")
    if failed:
        raise InputError(None, failed[-1])
    return ws


def load_workspace(settings: Settings) -> Workspace:
    """Load everything but the embeddings (BM25 only), printing the warnings."""
    ws = Workspace.load(settings)
    warn_all(ws.warnings)
    return ws
