"""Keys against Textual's own key (issue 34): every key of ragtui as a ratio to the floor app's.

In the harness of ``bench.startup`` (a private tmux server, one 120x40 pane started at its size,
``TERM`` as tmux sets it), the floor app (``bench.floor_app``: a Header, ragtui's ``RowList`` of 68
rows, a Footer) and ragtui are launched in turn; once each shows its full screen, what it writes to
its terminal is recorded with the time (``pipe-pane`` into a FIFO read by a thread), and keys are
sent one at a time: each is timed from ``send-keys`` to the last write of its repaint (the last
before 30 ms without a write, so a key that repaints twice counts both). The next key waits for
30 ms of quiet, so no key is timed on another's repaint. Sending a key (a ``tmux`` command, a few
ms) is in every figure, the floor's too.

- the floor: Down in its list, a digit that rewrites the highlighted row's last cell (the
  smallest change of one row, as a grade key makes), and ``r``, which rewrites every row;
- the floor of ragtui's screen (``bench.floor_app --screen``: ragtui's boxes, filled with made-up
  texts by Textual alone): Down and PageDown in its question list, which show another question's
  line, lists, metrics and chunk, the same screen change as ragtui's Down (the bytes each key
  writes to the terminal are recorded for both, to show it): what that change costs in Textual;
- the floor of ragtui's judging view (``bench.floor_app --judging``, the same way): its digit,
  which shows the next pair, and its verify enter (``v`` shows the judge's verdict first);
- ragtui at 68 questions: the question list's Down and PageDown (PageUp in turn), a grade key on the bm25 list
  (2 and 0 in turn on one pair), a filter keystroke (a character typed into the filter box), the
  judging view's digit (grades and moves to the next pair) and the verify mode's enter (takes a
  judge's grade and moves on; the judge's verdicts are written to the golden copy's journal first);
- ragtui at ``--large`` questions: Down and PageDown.

The memory of each program's process tree (the app and every process it started: the embedding
helper included, when one runs) is read ``--settle`` seconds after its first full screen: the sum
of each process's resident set (``VmRSS``).

``python -m bench.keys [--presses 30] [--large 100000] [--large-cache DIR] [--settle 15]`` prints
one JSON object: each key's times in ms and each program's memory in MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench.common import bytecode_current, percentile
from bench.startup import Session, floor_full, ragtui_full, screen_floor_full

#: The key target: each of ragtui's keys' p95 within this ratio of the floor's Down p95.
KEY_RATIO_TARGET = 1.5
#: The process tree's target at 68 questions, in MB.
TREE_TARGET_MB = 250


def _timed(session: Session, key: str, presses: int, literal: bool = False) -> list[float]:
    return [session.key_ms(key, literal) for _ in range(presses)]


def _grades(presses: int) -> list[str]:
    """Grade keys for one pair: 2 and 0 in turn (the pair's grade changes every time)."""
    return ["2" if i % 2 == 0 else "0" for i in range(presses)]


def _digits(presses: int) -> list[str]:
    """Judging digits, 0, 1 and 2 in turn (each grades a pair and moves to the next)."""
    return [str(i % 3) for i in range(presses)]


def floor(presses: int, settle: float) -> dict[str, object]:
    """The floor's Down and digit, and its process tree."""
    session = Session([sys.executable, "-m", "bench.floor_app"])
    try:
        session.wait(floor_full, 60, "the floor's first screen")
        time.sleep(settle)
        memory = session.tree_mb()
        session.listen()
        down = _timed(session, "Down", presses)
        digits = [session.key_ms(str(1 + i % 2), literal=True) for i in range(presses)]
        repaint = [session.key_ms("r", literal=True) for _ in range(presses)]
        return {"down": down, "digit": digits, "repaint": repaint, "tree_mb": memory}
    finally:
        session.close()


def screen_floor(presses: int) -> dict[str, object]:
    """The floor of ragtui's screen: Down and PageDown (PageUp in turn), each key's time and the
    bytes it wrote."""
    session = Session([sys.executable, "-m", "bench.floor_app", "--screen"])
    try:
        session.wait(screen_floor_full, 60, "the screen floor's first screen")
        time.sleep(2)
        session.listen()
        down, written = [], []
        for _ in range(presses):
            down.append(session.key_ms("Down"))
            written.append(session.key_bytes)
        pages = [session.key_ms("PageDown" if i % 2 == 0 else "PageUp") for i in range(presses)]
        return {"down": down, "down_bytes": written, "page_down": pages}
    finally:
        session.close()


def judging_floor_full(screen: str) -> bool:
    """The floor of ragtui's judging view shows its first pair, its saved line and its footer."""
    lines = screen.rstrip("\n").split("\n")
    return len(lines) >= 40 and "pair 1 of" in lines[0] and "Quit" in lines[-1]


def _pressed(session: Session, keys: list[str]) -> tuple[list[float], list[int]]:
    """Each key's time, and the bytes it wrote."""
    times, written = [], []
    for key in keys:
        times.append(session.key_ms(key, literal=len(key) == 1))
        written.append(session.key_bytes)
    return times, written


def judging_floor(presses: int) -> dict[str, object]:
    """The floor of ragtui's judging view: its digit (the next pair), then its verify enter."""
    session = Session([sys.executable, "-m", "bench.floor_app", "--judging"])
    try:
        session.wait(judging_floor_full, 60, "the judging floor's first screen")
        time.sleep(2)
        session.listen()
        digits, written = _pressed(session, _digits(presses))
        session.keys("v")
        session.wait(partial(_shows, "judge bench: grade"), 20, "the judging floor's verdict")
        enter, _ = _pressed(session, ["Enter"] * presses)
        return {"digit": digits, "digit_bytes": written, "enter": enter}
    finally:
        session.close()


def _verdicts(golden: Path, count: int) -> None:
    """A judge's verdicts on the first ``count`` pooled pairs of the questions, in the journal."""
    from ragtui.core.labelling.labels import Label, judge_annotator, now_iso
    from ragtui.core.settings import Settings
    from ragtui.core.workspace import Workspace
    from ragtui.core.workspace.judging import JudgingQueue

    ws = Workspace.load(Settings(golden=golden, annotator="bench"))
    queue = JudgingQueue(ws)
    pairs = [e.key for q in ws.questions for e in queue.pools[q.id]][:count]
    ws.grades.labels.append_verdicts(
        [
            Label(
                q,
                c,
                i % 3,
                ws.passages.by_id[c].sha1,
                now_iso(),
                judge_annotator("bench"),
                model="bench",
                prompt_sha1="0" * 40,
                reason="a verdict for the bench",
            )
            for i, (q, c) in enumerate(pairs)
        ]
    )
    ws.grades.labels.close()


def ragtui(
    golden: Path, presses: int, settle: float, cache: Path | None, small: bool
) -> dict[str, object]:
    """ragtui's keys on ``golden`` (the judging keys too when ``small``), and its process tree."""
    env = {"RAGTUI_CACHE_DIR": str(cache)} if cache is not None else {}
    args = [sys.executable, "-m", "ragtui", "--golden", str(golden), "--annotator", "bench"]
    session = Session(args, env)
    out: dict[str, object] = {}
    try:
        session.wait(ragtui_full, 300, "ragtui's first screen")
        time.sleep(settle)
        out["tree_mb"] = session.tree_mb()
        session.listen()
        down, written = [], []
        for _ in range(presses):
            down.append(session.key_ms("Down"))
            written.append(session.key_bytes)
        out["down"], out["down_bytes"] = down, written
        # PageDown and PageUp in turn: 68 rows end after a few pages.
        out["page_down"] = [
            session.key_ms("PageDown" if i % 2 == 0 else "PageUp") for i in range(presses)
        ]
        if not small:
            return out
        session.keys("Home")
        session.keys("Tab")  # the bm25 list, its first chunk highlighted
        out["grade"] = [session.key_ms(k, True) for k in _grades(presses)]
        session.keys("BTab", "/")
        session.wait(lambda s: "esc Clear" in s, 20, "the filter box")
        typed = "q0wertyuiop" * 4
        out["filter"] = [session.key_ms(typed[i], True) for i in range(presses)]
        session.keys("C-u", "Escape")
        session.wait(lambda s: "s Sort" in s and "esc Clear" not in s, 20, "the filter closed")
        session.keys("j")
        session.wait(lambda s: "pair 1 of" in s, 20, "the judging view")
        out["judging"], out["judging_bytes"] = _pressed(session, _digits(presses))
        session.keys("v")
        session.wait(lambda s: "verify" in s and "⏎ accepts" in s, 20, "verify mode")
        out["verify_enter"] = _timed(session, "Enter", presses)
        return out
    finally:
        session.close()


def _shows(text: str, screen: str) -> bool:
    return text in screen


def _trace(log: Path) -> list[dict[str, float]]:
    """Each key of a ``bench.trace_hook`` log: its CPU time (ms) from its arrival to the end of
    its last paint, split into the paints' parts and the rest (the program's handlers)."""
    keys: list[tuple[float, float]] = []
    paints: list[tuple[float, ...]] = []
    for line in log.read_text().splitlines():
        kind, *values = line.split()
        if kind == "K":
            keys.append((float(values[0]), float(values[1])))
        elif kind == "P":
            paints.append(tuple(map(float, values)))
    out = []
    for i, (arrived, cpu) in enumerate(keys):
        until = keys[i + 1][0] if i + 1 < len(keys) else arrived + 1.0
        mine = [p for p in paints if arrived <= p[0] < min(until, arrived + 0.5)]
        if not mine:
            continue
        spent = 1000 * (mine[-1][2] - cpu)
        paint = 1000 * sum(end - start for start, end, *_ in mine)
        lines, layout, output, widgets = (
            1000 * sum(p[i] if i < len(p) else 0.0 for p in mine) for i in (3, 4, 5, 6)
        )
        out.append(
            {
                "cpu": spent,
                "handlers": max(0.0, spent - paint),
                "paint": paint,
                "lines": lines,
                "layout": layout,
                "output": output,
                "textual_lines": widgets,
                "textual": max(0.0, paint - lines - layout - output - widgets),
                "paints": len(mine),
            }
        )
    return out


def trace(presses: int) -> dict[str, object]:
    """The floor's Down and ``r``, the screen floor's Down, the judging floor's digit, and ragtui's
    Down, grade key and judging digit at 68 questions, each program run under ``bench.trace_hook``: where each key's
    CPU time goes."""
    from bench.app import _golden_copy

    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-trace-") as tmp:
        small = _golden_copy(Path(tmp) / "small", 68)
        hook = [sys.executable, "-m", "bench.trace_hook"]
        # Per program: the keys traced, each with the keys that lead to it and a text to wait for.
        Plan = list[tuple[str, tuple[str, ...], str, list[str]]]
        runs: dict[str, tuple[list[str], Callable[[str], bool], Plan]] = {
            "floor": (
                ["bench.floor_app"],
                floor_full,
                [("down", (), "", ["Down"] * presses), ("repaint", (), "", ["r"] * presses)],
            ),
            "screen_floor": (
                ["bench.floor_app", "--screen"],
                screen_floor_full,
                [("down", (), "", ["Down"] * presses)],
            ),
            "judging_floor": (
                ["bench.floor_app", "--judging"],
                judging_floor_full,
                [("digit", (), "", _digits(presses))],
            ),
            "ragtui": (
                ["ragtui", "--golden", str(small), "--annotator", "bench"],
                ragtui_full,
                [
                    ("down", (), "", ["Down"] * presses),
                    ("grade", ("Home", "Tab"), "", _grades(presses)),  # the bm25 list's chunk
                    ("judging", ("BTab", "j"), "pair 1 of", _digits(presses)),
                ],
            ),
        }
        for name, (args, full, plan) in runs.items():
            log = Path(tmp) / f"{name}.log"
            session = Session([*hook, str(log), *args])
            try:
                session.wait(full, 120, f"{name}'s first screen")
                time.sleep(2)
                session.listen()
                for key_name, lead, shown, keys in plan:
                    if lead:
                        session.keys(*lead)
                    if shown:
                        session.wait(partial(_shows, shown), 20, shown)
                    time.sleep(0.3)
                    first = len(_trace(log))
                    for key in keys:
                        session.key_ms(key, literal=len(key) == 1)
                    time.sleep(0.1)
                    out[f"{name}_{key_name}"] = _trace(log)[first:]
            finally:
                session.close()
    return out


def measure(presses: int, large: int, large_cache: Path | None, settle: float) -> dict[str, object]:
    from bench.app import _golden_copy

    bytecode_current()
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-keys-") as tmp:
        small = _golden_copy(Path(tmp) / "small", 68)
        _verdicts(small, presses + 10)
        out: dict[str, object] = {
            "presses": presses,
            "settle_s": settle,
            "floor": floor(presses, settle),
            "screen_floor": screen_floor(presses),
            "judging_floor": judging_floor(presses),
            "small": ragtui(small, presses, settle, None, small=True),
        }
        out["trace"] = trace(presses)
        if large:
            big = _golden_copy(Path(tmp) / "large", large)
            out["large"] = ragtui(big, presses, settle, large_cache, small=False)
            out["large_questions"] = large
    return out


def p95(values: list[float]) -> float:
    return percentile(values, 95)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--presses", type=int, default=30)
    parser.add_argument("--large", type=int, default=100_000, help="0: the 68-question set only")
    parser.add_argument("--large-cache", type=Path, default=None)
    parser.add_argument("--settle", type=float, default=15.0)
    args = parser.parse_args()
    cache = args.large_cache
    if cache is None and os.environ.get("RAGTUI_BENCH_LARGE_CACHE"):
        cache = Path(os.environ["RAGTUI_BENCH_LARGE_CACHE"])
    print(json.dumps(measure(args.presses, args.large, cache, args.settle)))


if __name__ == "__main__":
    main()
