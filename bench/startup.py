"""Start-up against its floor: the first full screen of ragtui and of a minimal Textual app, in tmux.

Each launch is a fresh private tmux server (no config file) with one 120x40 pane; the command starts
once the pane has that size, with ``COLUMNS`` and ``LINES`` unset (a shell that inherited them
would pin the app at another size), as ``tests/tmux.py``'s ``Pane`` starts the app. The clock runs
from launching tmux to the first capture (one every 20 ms) showing the full screen:

- the floor, ``python -m bench.floor_app`` (a Header, ragtui's ``RowList`` with 68 rows, a Footer):
  the row above the footer is a list row and the footer shows its key;
- the floor of ragtui's screen, ``python -m bench.floor_app --screen`` (ragtui's boxes filled with
  made-up texts, Textual alone): the third result list's title, the chunk's and the footer;
- ragtui, ``python -m ragtui --golden ... --annotator bench``: the hybrid pane has a first relevant
  rank and the metric panel a hybrid value (every list and the metrics filled).

``Session`` is that harness (``bench.keys`` sends its keys through it too).

``python -m bench.startup`` takes the floor, the floor of ragtui's screen, ragtui at 68 questions and
ragtui at ``--large`` questions in turn, ``--rounds`` times (so a busy machine slows each alike), and
prints one JSON object: the seconds of each run and each median's ratio to the floor's. The large set's cache
folder is ``--large-cache`` (default: ``$RAGTUI_BENCH_LARGE_CACHE``, else ragtui's); it must be
warm (``bench.app`` warms it before calling this).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from bench.common import ROOT, bytecode_current

WIDTH, HEIGHT = 120, 40
#: How often the pane is read, in seconds.
POLL_S = 0.02
#: The target ratios to the floor (issue 26): 68 questions and 100,000.
SMALL_RATIO_TARGET = 1.5
LARGE_RATIO_TARGET = 2.5

#: ragtui's screen is full when the hybrid pane has a first relevant rank and the metrics show hybrid.
RAGTUI_FULL = (re.compile(r"hybrid · first relevant #\d"), re.compile(r"hybrid\s+all\s+\d\.\d{3}"))


def ragtui_full(screen: str) -> bool:
    """Every list and the metrics filled."""
    return all(p.search(screen) for p in RAGTUI_FULL)


def floor_full(screen: str) -> bool:
    """The floor app's header, its last visible row and its footer are on screen."""
    from bench.floor_app import ROW_TEXT

    lines = screen.rstrip("\n").split("\n")
    return (
        len(lines) >= HEIGHT
        and "floor" in lines[0]
        and ROW_TEXT in lines[-2]
        and "Quit" in lines[-1]
    )


def screen_floor_full(screen: str) -> bool:
    """The floor of ragtui's screen shows its third result list, its chunk and its footer."""
    lines = screen.rstrip("\n").split("\n")
    return (
        len(lines) >= HEIGHT
        and "retriever 2 ·" in screen
        and "chunk 0" in screen
        and "Quit" in lines[-1]
    )


class Session:
    """One program in a fresh private tmux server's 120x40 pane."""

    def __init__(self, args: list[str], env: Mapping[str, str] | None = None) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            raise RuntimeError("tmux is not installed")
        self.tmux = tmux
        self.socket = f"ragtui-bench-{uuid.uuid4().hex[:8]}"
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

    def wait(
        self, check: Callable[[str], bool], timeout: float, what: str, poll: float = POLL_S
    ) -> str:
        """The pane once ``check`` holds (read every ``poll`` seconds); RuntimeError after
        ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise RuntimeError(f"never shown: {what}\n{screen}")
            time.sleep(poll)

    def listen(self) -> None:
        """From now on, record when the program writes to its terminal (``pipe-pane`` into a FIFO
        read by a thread): the times ``key_ms`` reads."""
        self.fifo = Path(tempfile.mkdtemp(prefix="ragtui-bench-keys-")) / "out"
        os.mkfifo(self.fifo)
        self.writes: list[float] = []
        #: Bytes written since ``listen``, and by the last key timed (``key_ms``).
        self.written = self.key_bytes = 0
        self.run("pipe-pane", "-o", f"cat > {shlex.quote(str(self.fifo))}")

        def read() -> None:
            with open(self.fifo, "rb", buffering=0) as pipe:
                while chunk := pipe.read(65536):
                    self.written += len(chunk)
                    self.writes.append(time.perf_counter())

        threading.Thread(target=read, daemon=True).start()
        time.sleep(0.2)

    def key_ms(self, key: str, literal: bool = False) -> float:
        """Milliseconds from sending ``key`` to the end of what the program wrote for it: its last
        write before 30 ms without one (a key that repaints twice counts both)."""
        quiet = 0.03
        while self.writes and time.perf_counter() - self.writes[-1] < quiet:
            time.sleep(0.005)
        seen, before = len(self.writes), self.written
        start = time.perf_counter()
        self.run("send-keys", *(["-l"] if literal else []), key)
        deadline = start + 10
        while len(self.writes) == seen:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the key {key!r} made the program write nothing")
            time.sleep(0.001)
        while time.perf_counter() - self.writes[-1] < quiet:
            time.sleep(0.002)
        self.key_bytes = self.written - before
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


def first_screen(
    args: list[str],
    full: Callable[[str], bool],
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> float:
    """Seconds from launching ``args`` in a fresh 120x40 tmux pane to a capture where ``full``
    holds."""
    start = time.perf_counter()
    session = Session(args, env)
    try:
        session.wait(full, timeout, f"{shlex.join(args)}: a full screen", poll=POLL_S)
        return time.perf_counter() - start
    finally:
        session.close()


def floor_once() -> float:
    """The floor app's first full screen, in seconds."""
    return first_screen([sys.executable, "-m", "bench.floor_app"], floor_full)


def screen_floor_once() -> float:
    """The floor of ragtui's screen: its first full screen, in seconds."""
    args = [sys.executable, "-m", "bench.floor_app", "--screen"]
    return first_screen(args, screen_floor_full)


def ragtui_once(golden: Path, cache: Path | None = None, timeout: float = 120.0) -> float:
    """ragtui's first full screen on ``golden`` (cache folder ``cache``, default ragtui's)."""
    env = {"RAGTUI_CACHE_DIR": str(cache)} if cache is not None else {}
    args = [sys.executable, "-m", "ragtui", "--golden", str(golden), "--annotator", "bench"]
    return first_screen(args, ragtui_full, env, timeout)


def measure(rounds: int, large: int, large_cache: Path | None) -> dict[str, object]:
    """The floor, ragtui at 68 and at ``large`` questions (0: left out), in turn, ``rounds`` times."""
    from bench.app import _golden_copy

    bytecode_current()
    runs: dict[str, list[float]] = {"floor": [], "screen": [], "small": [], "large": []}
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-startup-") as tmp:
        small_golden = _golden_copy(Path(tmp) / "small", 68)
        large_golden = _golden_copy(Path(tmp) / "large", large) if large else None
        for _ in range(rounds):
            runs["floor"].append(floor_once())
            runs["screen"].append(screen_floor_once())
            runs["small"].append(ragtui_once(small_golden))
            if large_golden is not None:
                runs["large"].append(ragtui_once(large_golden, large_cache))
    floor = statistics.median(runs["floor"])
    out: dict[str, object] = {
        "runs": runs,
        "floor_s": floor,
        "screen_floor_s": statistics.median(runs["screen"]),
        "large": large,
    }
    for name in ("small", "large"):
        if runs[name]:
            value = statistics.median(runs[name])
            out[f"{name}_s"] = value
            out[f"{name}_ratio"] = value / floor
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--large", type=int, default=100_000, help="0: the 68-question set only")
    parser.add_argument("--large-cache", type=Path, default=None)
    args = parser.parse_args()
    cache = args.large_cache
    if cache is None and os.environ.get("RAGTUI_BENCH_LARGE_CACHE"):
        cache = Path(os.environ["RAGTUI_BENCH_LARGE_CACHE"])
    print(json.dumps(measure(args.rounds, args.large, cache)))


if __name__ == "__main__":
    main()
