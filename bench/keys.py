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
  smallest change of one row, as a grade key makes), and ``r``, which rewrites every row (a
  repaint of as much of the screen as ragtui's Down repaints: Textual's own cost of that work);
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
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from bench.common import ROOT, percentile
from bench.startup import HEIGHT, WIDTH, floor_full, ragtui_full

#: The key target: each of ragtui's keys' p95 within this ratio of the floor's Down p95.
KEY_RATIO_TARGET = 1.5
#: The process tree's target at 68 questions, in MB.
TREE_TARGET_MB = 250


class Session:
    """One program in a fresh private tmux server's 120x40 pane."""

    def __init__(self, args: list[str], env: Mapping[str, str] | None = None) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            raise RuntimeError("tmux is not installed")
        self.tmux = tmux
        self.socket = f"ragtui-bench-keys-{uuid.uuid4().hex[:8]}"
        exports = " ".join(
            f"{k}={shlex.quote(v)}" for k, v in {"HF_HUB_OFFLINE": "1", **(env or {})}.items()
        )
        sized = (
            f'i=0; while [ "$(stty size)" != "{HEIGHT} {WIDTH}" ] && [ $i -lt 200 ]; '
            "do sleep 0.01; i=$((i+1)); done; unset COLUMNS LINES; "
        )
        command = (
            f"{sized}cd {shlex.quote(str(ROOT))} && env {exports} {shlex.join(args)}; sleep 60"
        )
        self.env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        self.run("new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), command)

    def run(self, *more: str) -> str:
        return subprocess.run(
            [self.tmux, "-L", self.socket, "-f", "/dev/null", *more],
            capture_output=True,
            text=True,
            check=False,
            env=self.env,
        ).stdout

    def capture(self) -> str:
        return self.run("capture-pane", "-p")

    def wait(self, check: Callable[[str], bool], timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise RuntimeError(f"never shown: {what}\n{screen}")
            time.sleep(0.02)

    def listen(self) -> None:
        """From now on, record when the program writes to its terminal (``pipe-pane`` into a FIFO
        read by a thread): the times ``key_ms`` reads."""
        self.fifo = Path(tempfile.mkdtemp(prefix="ragtui-bench-keys-")) / "out"
        os.mkfifo(self.fifo)
        self.writes: list[float] = []
        self.run("pipe-pane", "-o", f"cat > {shlex.quote(str(self.fifo))}")

        def read() -> None:
            with open(self.fifo, "rb", buffering=0) as pipe:
                while pipe.read(65536):
                    self.writes.append(time.perf_counter())

        threading.Thread(target=read, daemon=True).start()
        time.sleep(0.2)

    def key_ms(self, key: str, literal: bool = False) -> float:
        """Milliseconds from sending ``key`` to the end of what the program wrote for it: its last
        write before 30 ms without one (a key that repaints twice counts both)."""
        quiet = 0.03
        while self.writes and time.perf_counter() - self.writes[-1] < quiet:
            time.sleep(0.005)
        seen = len(self.writes)
        start = time.perf_counter()
        self.run("send-keys", *(["-l"] if literal else []), key)
        deadline = start + 10
        while len(self.writes) == seen:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the key {key!r} made the program write nothing")
            time.sleep(0.001)
        while time.perf_counter() - self.writes[-1] < quiet:
            time.sleep(0.002)
        return (self.writes[-1] - start) * 1000

    def keys(self, *keys: str) -> None:
        self.run("send-keys", *keys)

    def tree_mb(self) -> float:
        """The resident memory of the pane's program and every process it started (the pane's
        own shell left out), in MB."""
        shell = int(self.run("display-message", "-p", "#{pane_pid}").strip())
        total, todo = 0, list(_children(shell))
        while todo:
            pid = todo.pop()
            todo.extend(_children(pid))
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                continue
        return total / 1024

    def close(self) -> None:
        path = self.run("display-message", "-p", "#{socket_path}").strip()
        self.run("kill-server")
        if path:
            Path(path).unlink(missing_ok=True)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _timed(session: Session, key: str, presses: int, literal: bool = False) -> list[float]:
    return [session.key_ms(key, literal) for _ in range(presses)]


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
        out["down"] = _timed(session, "Down", presses)
        # PageDown and PageUp in turn: 68 rows end after a few pages.
        out["page_down"] = [
            session.key_ms("PageDown" if i % 2 == 0 else "PageUp") for i in range(presses)
        ]
        if not small:
            return out
        session.keys("Home")
        session.keys("Tab")  # the bm25 list, its first chunk highlighted
        out["grade"] = [session.key_ms("2" if i % 2 == 0 else "0", True) for i in range(presses)]
        session.keys("BTab", "/")
        session.wait(lambda s: "esc Clear" in s, 20, "the filter box")
        typed = "q0wertyuiop" * 4
        out["filter"] = [session.key_ms(typed[i], True) for i in range(presses)]
        session.keys("C-u", "Escape")
        session.wait(lambda s: "s Sort" in s and "esc Clear" not in s, 20, "the filter closed")
        session.keys("j")
        session.wait(lambda s: "pair 1 of" in s, 20, "the judging view")
        out["judging"] = [session.key_ms(str(i % 3), True) for i in range(presses)]
        session.keys("v")
        session.wait(lambda s: "verify" in s and "⏎ accepts" in s, 20, "verify mode")
        out["verify_enter"] = _timed(session, "Enter", presses)
        return out
    finally:
        session.close()


def measure(presses: int, large: int, large_cache: Path | None, settle: float) -> dict[str, object]:
    from bench.app import _golden_copy

    with tempfile.TemporaryDirectory(prefix="ragtui-bench-keys-") as tmp:
        small = _golden_copy(Path(tmp) / "small", 68)
        _verdicts(small, presses + 10)
        out: dict[str, object] = {
            "presses": presses,
            "settle_s": settle,
            "floor": floor(presses, settle),
            "small": ragtui(small, presses, settle, None, small=True),
        }
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
