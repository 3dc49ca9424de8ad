"""The headless commands: ``eval``, ``export``, ``check`` and ``labels compact`` (Rich is used here, never in the core)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ragtui.core.analysis.check import check_workspace
from ragtui.core.analysis.eval_report import eval_report, format_table
from ragtui.core.analysis.export import export_trec
from ragtui.core.retrieval.embeddings import Progress
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace

if TYPE_CHECKING:
    from ragtui.analysis_commands import EvalOptions


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


def rich_progress() -> tuple[Progress, object]:
    """A progress callback drawing a Rich bar on stderr (chunks per second and time left), and the bar."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.progress import (
        Progress as RichProgress,
    )

    bar = RichProgress(
        TextColumn("embedding"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = None
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task("embedding", total=total, rate="")
        elapsed = max(time.monotonic() - started, 1e-6)
        bar.update(task, completed=done, rate=f"{done / elapsed:.1f} texts/s")
        if done >= total:
            bar.stop()

    return progress, bar


def open_workspace(settings: Settings) -> Workspace:
    """Load everything, showing a progress bar while texts are embedded."""
    progress, _ = rich_progress()
    ws = Workspace.open(settings, progress)
    for warning in ws.warnings:
        _stderr(f"ragtui: warning: {warning}")
    return ws


def run_eval(
    settings: Settings, as_json: bool, judged: bool = False, options: EvalOptions | None = None
) -> int:
    """``ragtui eval``: the metric table (or the JSON object) of every chosen retriever; ``judged`` adds Judged@k.

    ``options`` adds slices, curves, ir_measures columns, a comparison, an attribution or a saved run.
    """
    from ragtui import analysis_commands as analysis

    options = options or analysis.EvalOptions()
    measures = analysis.parse_options_measures(options)
    ws = open_workspace(settings)
    analysis.save_if_asked(ws, options)
    if as_json:
        report = eval_report(ws)
        analysis.add_json_extras(ws, report, options)
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    extras = analysis.text_extras(ws, options)
    ev = ws.evaluation
    assert ev is not None
    skipped = ev.skipped
    note = f"{len(ev.evaluated)} questions"
    if skipped:
        shown = ", ".join(skipped[:8]) + (", ..." if len(skipped) > 8 else "")
        note += f" ({len(skipped)} skipped, no relevant chunk: {shown})"
    print(f"{note}; {len(ws.chunks)} chunks; k={ws.settings.k}, depth={ws.settings.depth}")
    print(
        analysis.format_measure_table(ws, measures) if measures else format_table(ws, judged=judged)
    )
    if judged and not measures:
        from ragtui.core.labelling.judging import THIN_JUDGED

        print(
            f"judged@{ws.settings.k}: share of the top {ws.settings.k} with a hand grade or an evidence match; "
            f"thin = below {THIN_JUDGED}: the metrics rest on unjudged chunks"
        )
    for section in extras:
        print()
        print(section)
    return 0


def run_export(settings: Settings, folder: Path) -> int:
    """``ragtui export DIR``: TREC qrels and runs."""
    ws = open_workspace(settings)
    for path in export_trec(ws, folder):
        print(path)
    return 0


def run_check(settings: Settings) -> int:
    """``ragtui check``: print every problem; exit 1 if there is any."""
    ws = Workspace.load(settings)
    for warning in ws.warnings:
        _stderr(f"ragtui: warning: {warning}")
    problems = check_workspace(ws)
    for problem in problems:
        print(problem)
    from ragtui.commands_labelling import print_diagnostics

    print_diagnostics(ws)
    ev = ws.evaluation
    assert ev is not None
    relevant_counts = [
        sum(1 for g in ws.effective_grades(q.id).values() if g >= ws.settings.threshold)
        for q in ws.questions
    ]
    print(
        f"{len(ws.corpus.documents)} documents, {len(ws.chunks)} chunks, {len(ws.questions)} questions "
        f"({sum(1 for n in relevant_counts if n == 1)} with one relevant chunk, "
        f"{sum(1 for n in relevant_counts if n > 1)} with several, {sum(1 for n in relevant_counts if n == 0)} with none); "
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    )
    return 1 if problems else 0


def run_labels_compact(settings: Settings) -> int:
    """``ragtui labels compact``: rewrite the journal to one line per labelled pair, keeping a backup."""
    from ragtui.core.labelling.journal import LabelJournal

    golden = settings.resolved().golden
    assert golden is not None
    journal = LabelJournal(Path(golden) / "labels.jsonl", settings.annotator)
    for warning in journal.warnings:
        _stderr(f"ragtui: warning: {warning}")
    lines_before = len(journal.history)
    backup = journal.compact()
    print(
        f"{journal.path}: {lines_before} line{'s' if lines_before != 1 else ''} -> {len(journal.history)} "
        f"(one per labelled pair; stale labels kept); backup: {backup}"
    )
    return 0
