"""App figures: start-up to the first full screen (in-process and in tmux), label edit to repainted
screen, and a 10,000-question golden set (start-up and scrolling).

Every in-process figure runs in a fresh child process (``python -m bench.app inprocess ...``), so
imports and caches start cold each time and the child can say whether torch or
sentence-transformers were imported. The embedding cache is the default one, warmed first by a
``ragtui eval``; the 10,000-question set repeats the bundled questions (see
``bench.label_edit.synthetic_golden``), so every text is in that cache and no model is loaded.

Timings in the child:
- start-up: from ``RagtuiApp(...)`` to ``app.full_screen_after`` (set after the screen with every
  list and the metrics filled has been refreshed);
- label edit: a digit key (2, then 0, alternately, on the bm25 list's second chunk) posted to the
  app, until the metric panel shows the new value and the following screen refresh is done
  (polled every 1 ms);
- scrolling: a page-down or down key on the question list, until the next question is shown in
  the result lists and the screen refreshed.
``--baseline`` puts DataTable's own row measuring back into the question list (the code before).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import ROOT, Report, percentile, run_child

#: The figures' targets.
STARTUP_TARGET_S = 1.0
EDIT_TARGET_MS = 50.0
HEAVY = ("torch", "sentence_transformers", "transformers")


def _golden_copy(folder: Path, questions: int) -> Path:
    """A golden folder with no labels: the bundled questions, or ``questions`` synthetic ones."""
    from bench.label_edit import synthetic_golden
    from ragtui.core.data.paths import bundled_golden

    golden = folder / "golden"
    if questions <= 68:
        golden.mkdir(parents=True)
        shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
        return golden
    return synthetic_golden(golden, questions)


# ---- the child: one app in-process ------------------------------------------------------------


async def _until(check, timeout: float = 60.0, step: float = 0.001) -> None:
    """Poll ``check`` until it holds."""
    deadline = time.perf_counter() + timeout
    while not check():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not get there")
        await asyncio.sleep(step)


async def _after_refresh(app) -> None:
    """Wait until the app has processed its messages and refreshed the screen."""
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await done.wait()


async def _key(app, key: str) -> None:
    """Post one key to the app as the terminal driver would."""
    from textual import events

    app._driver.send_message(events.Key(key, key if len(key) == 1 else None))


async def _measure_app(golden: Path, edits: int, scrolls: int) -> dict[str, object]:
    """Start the app on ``golden``, then time grade changes and scrolling."""
    t_import = time.perf_counter()
    from ragtui.core.settings import Settings
    from ragtui.tui.app import RagtuiApp

    import_s = time.perf_counter() - t_import
    out: dict[str, object] = {"import_s": import_s}
    app = RagtuiApp(Settings(golden=golden, annotator="bench"))
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(lambda: app.full_screen_after is not None, step=0.002)
        out["full_screen_s"] = app.full_screen_after
        out["ready_s"] = app.ready_after
        out["questions"] = len(app.workspace.questions)
        screen = app.main_screen
        await pilot.pause()
        # Label edits: focus the bm25 list, then alternate grade 2 and 0 on its second chunk (the
        # first is often the only relevant one: grading it 0 would also make the question skipped).
        edit_ms: list[float] = []
        if edits:
            await pilot.press("tab", "down")
            await pilot.pause()
            for i in range(edits):
                before = screen.metrics.plain
                t0 = time.perf_counter()
                await _key(app, "2" if i % 2 == 0 else "0")
                await _until(lambda before=before: screen.metrics.plain != before)
                await _after_refresh(app)
                edit_ms.append(1000 * (time.perf_counter() - t0))
                await asyncio.sleep(0.01)  # a person does not type faster than this
            await pilot.press("shift+tab")
            await pilot.pause()
        out["edit_ms"] = edit_ms
        # Scrolling the question list.
        for key in ("pagedown", "down"):
            times: list[float] = []
            for _ in range(scrolls):
                before_qid = screen.current_qid
                t0 = time.perf_counter()
                await _key(app, key)
                await _until(lambda before_qid=before_qid: screen.current_qid != before_qid)
                await _after_refresh(app)
                times.append(1000 * (time.perf_counter() - t0))
                await asyncio.sleep(0.005)
            out[f"{key}_ms"] = times
        await pilot.press("ctrl+q")
    out["heavy_imports"] = sorted(m for m in HEAVY if m in sys.modules)
    return out


def _child(argv: list[str]) -> None:
    """``python -m bench.app inprocess --questions N [--edits E] [--scrolls S] [--baseline]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=68)
    parser.add_argument("--edits", type=int, default=0)
    parser.add_argument("--scrolls", type=int, default=0)
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument(
        "--plain-update",
        action="store_true",
        help="DataTable's own update_cell (re-renders every row)",
    )
    args = parser.parse_args(argv)
    if args.plain_update:
        from textual.widgets import DataTable

        from ragtui.tui.widgets.table import RowCachedTable

        RowCachedTable.update_cell = DataTable.update_cell  # type: ignore[method-assign]
    if args.baseline:
        from textual.widgets import DataTable

        from ragtui.tui.widgets.question_list import QuestionList

        QuestionList._update_dimensions = DataTable._update_dimensions  # type: ignore[method-assign]
        QuestionList._update_column_widths = DataTable._update_column_widths  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-app-") as tmp:
        golden = _golden_copy(Path(tmp), args.questions)
        figures = asyncio.run(_measure_app(golden, args.edits, args.scrolls))
    print(json.dumps(figures))


# ---- the real terminal -------------------------------------------------------------------------

#: The screen is full when the hybrid pane has a first relevant rank and the metrics show hybrid.
_FULL = (re.compile(r"hybrid · first relevant #\d"), re.compile(r"hybrid\s+all\s+\d\.\d{3}"))


def tmux_startup(repeat: int = 3) -> list[float]:
    """Seconds from launching ``python -m ragtui`` in a 120x40 tmux pane to the full screen."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return []
    times = []
    for _ in range(repeat):
        socket = f"ragtui-bench-{uuid.uuid4().hex[:8]}"
        with tempfile.TemporaryDirectory(prefix="ragtui-bench-tmux-") as tmp:
            golden = _golden_copy(Path(tmp), 68)
            command = (
                f"cd {shlex.quote(str(ROOT))} && HF_HUB_OFFLINE=1 "
                f"{shlex.quote(sys.executable)} -m ragtui --golden {shlex.quote(str(golden))} --annotator bench; sleep 30"
            )
            t0 = time.perf_counter()
            subprocess.run(
                [tmux, "-L", socket, "new-session", "-d", "-x", "120", "-y", "40", command],
                check=True,
            )
            try:
                while True:
                    screen = subprocess.run(
                        [tmux, "-L", socket, "capture-pane", "-p"],
                        capture_output=True,
                        text=True,
                        check=False,
                    ).stdout
                    if all(p.search(screen) for p in _FULL):
                        times.append(time.perf_counter() - t0)
                        break
                    if time.perf_counter() - t0 > 60:
                        raise RuntimeError(f"the app never showed a full screen:\n{screen}")
                    time.sleep(0.02)
            finally:
                subprocess.run(
                    [tmux, "-L", socket, "kill-server"], capture_output=True, check=False
                )
    return times


# ---- the figures ------------------------------------------------------------------------------


def _ms(values: list[float]) -> str:
    """Median and p95 of a list of milliseconds."""
    return f"{statistics.median(values):.1f} ms (p95 {percentile(values, 95):.1f})"


def add_app_figures(report: Report) -> None:
    """Measure the app and add its figures to ``report``."""
    subprocess.run(
        [sys.executable, "-m", "ragtui", "eval"],
        check=True,
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # warm the default embedding cache

    runs = [run_child("bench.app", "inprocess", "--questions", "68") for _ in range(3)]
    startup = statistics.median(float(r["full_screen_s"]) for r in runs)
    heavy = sorted({m for r in runs for m in r["heavy_imports"]})
    imports = statistics.median(float(r["import_s"]) for r in runs)
    report.add(
        "app start-up to full screen, 68 q, in-process (Pilot, 120x40)",
        f"{startup:.2f} s",
        f"< {STARTUP_TARGET_S:.1f} s, no torch",
        f"+ {imports:.2f} s importing the app",
        startup < STARTUP_TARGET_S and not heavy,
        f"heavy imports: {', '.join(heavy) or 'none'}",
    )
    tmux = tmux_startup()
    if tmux:
        value = statistics.median(tmux)
        report.add(
            "app start-up to full screen, 68 q, real terminal (tmux 120x40)",
            f"{value:.2f} s",
            f"< {STARTUP_TARGET_S:.1f} s",
            f"from launching python -m ragtui; runs {', '.join(f'{t:.2f}' for t in tmux)} s",
            value < STARTUP_TARGET_S,
        )

    for n in (68, 10_000):
        r = run_child(
            "bench.app",
            "inprocess",
            "--questions",
            str(n),
            "--edits",
            "40",
            "--scrolls",
            "30" if n > 68 else "0",
        )
        edit = [float(x) for x in r["edit_ms"]]  # type: ignore[union-attr]
        plain = run_child(
            "bench.app", "inprocess", "--questions", str(n), "--edits", "40", "--plain-update"
        )
        plain_edit = [float(x) for x in plain["edit_ms"]]  # type: ignore[union-attr]
        report.add(
            f"grade key to repainted metric panel, {n:,} q (app)",
            _ms(edit),
            f"< {EDIT_TARGET_MS:.0f} ms (p95)",
            f"DataTable re-rendering every row: {_ms(plain_edit)}",
            percentile(edit, 95) < EDIT_TARGET_MS,
        )
        if n > 68:
            base = run_child("bench.app", "inprocess", "--questions", str(n), "--baseline")
            report.add(
                f"app start-up to full screen, {n:,} q, in-process",
                f"{float(r['full_screen_s']):.2f} s",
                "reported",
                f"DataTable measuring every cell: {float(base['full_screen_s']):.2f} s",
                None,
                "cached embeddings of the bundled texts",
            )
            for key, name in (("pagedown", "page down"), ("down", "down")):
                report.add(
                    f"question list {name}, {n:,} q (key to repainted screen)",
                    _ms([float(x) for x in r[f"{key}_ms"]]),  # type: ignore[union-attr]
                    "reported",
                )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "inprocess":
        _child(sys.argv[2:])
    else:
        rep = Report()
        add_app_figures(rep)
        print(rep.table())
