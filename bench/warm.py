"""Warm means warm (issue 26, item 5): the warm ``ragtui eval`` of an NFCorpus-sized BEIR set, the
first ad-hoc query's wait for the embedding model, and what reading that model costs the UI thread.

- warm eval: ``python -m ragtui eval --beir DIR`` end to end (interpreter start included) on the
  3,000-document set of ``bench.beir_set`` (3 retrievers), after one run that fills the caches (the
  very first run embeds about 4,300 texts: minutes); the median of 3, and the same eval in one
  process (``main([...])`` after the imports), median of 3.
- ad-hoc: the real app in a 120x40 tmux pane on the bundled set, warm cache (no model loaded at
  start): from the key that opens the ad-hoc screen (``a``) to every list of a new query shown
  (the status line's ``F3 adds the question``), typed at once; opened right after the first full
  screen (``at once``) and after ``--browse`` seconds on the main screen. With ``--root`` the app
  runs from another checkout (the code before, for the baseline).
- stall: the longest the main thread of a process waited (a 2 ms sleep loop) while the model was
  read in a thread of that process (as an in-process preload would), against while it was read
  in the helper process (``BackgroundEmbedder.start``).

python -m bench.warm [--skip-eval] [--skip-adhoc] [--browse 20] [--root DIR]   # prints JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.beir_set import nfcorpus_sized
from bench.common import ROOT

#: The screen is full when the hybrid pane has a first relevant rank (as bench.app waits for it).
_FULL = "hybrid · first relevant #"


def warm_eval(repeat: int = 3) -> dict[str, float]:
    """End-to-end and in-process seconds of a warm ``eval --beir`` on the 3,000-document set."""
    folder = nfcorpus_sized()
    command = [sys.executable, "-m", "ragtui", "eval", "--beir", str(folder)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)  # fills the caches
    wall = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
        wall.append(time.perf_counter() - t0)
    code = (
        "import contextlib, io, json, statistics, sys, time\n"
        "from ragtui.cli import main\n"
        "times = []\n"
        f"for _ in range({repeat}):\n"
        "    t = time.perf_counter()\n"
        "    with contextlib.redirect_stdout(io.StringIO()): main(sys.argv[1:])\n"
        "    times.append(time.perf_counter() - t)\n"
        "print(json.dumps(statistics.median(times)))\n"
    )
    inproc = subprocess.run(
        [sys.executable, "-c", code, "eval", "--beir", str(folder)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    return {
        "documents": sum(1 for _ in (folder / "corpus.jsonl").open(encoding="utf-8")),
        "questions": sum(1 for _ in (folder / "queries.jsonl").open(encoding="utf-8")),
        "eval_wall_s": statistics.median(wall),
        "eval_wall_runs": wall,  # type: ignore[dict-item]
        "eval_inprocess_s": float(inproc.stdout.strip().splitlines()[-1]),
    }


def _tmux(socket: str, *args: str) -> str:
    tmux = shutil.which("tmux")
    assert tmux is not None
    return subprocess.run(
        [tmux, "-L", socket, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=20,
    ).stdout


def _wait(socket: str, text: str, timeout: float) -> tuple[float, str]:
    """Poll the pane until ``text`` is on screen; the time it was seen and the screen."""
    deadline = time.perf_counter() + timeout
    while True:
        screen = _tmux(socket, "capture-pane", "-p", "-t", "app")
        now = time.perf_counter()
        if text in screen:
            return now, screen
        if now > deadline:
            raise RuntimeError(f"timed out waiting for {text!r}:\n{screen}")
        time.sleep(0.02)


def adhoc_once(root: Path, browse: float, timeout: float = 180) -> dict[str, object]:
    """One app in tmux: seconds from ``a`` to every list of a new query, after ``browse`` seconds
    on the main screen; whether the lists said the model was loading."""
    socket = f"ragtui-bench-adhoc-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-adhoc-") as tmp:
        from ragtui.core.data.paths import bundled_golden

        golden = Path(tmp) / "golden"
        golden.mkdir()
        shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
        command = (
            f"cd {shlex.quote(str(root))} && env HF_HUB_OFFLINE=1 TERM=screen "
            f"{shlex.quote(sys.executable)} -m ragtui --golden {shlex.quote(str(golden))} "
            "--annotator bench; sleep 60"
        )
        _tmux(socket, "new-session", "-d", "-s", "app", "-x", "120", "-y", "40", command)
        try:
            _wait(socket, _FULL, timeout)
            time.sleep(browse)
            opened = time.perf_counter()
            _tmux(socket, "send-keys", "-t", "app", "a")
            _wait(socket, "Type a question and press enter", 30)
            query = f"how are flood barriers tested {uuid.uuid4().hex[:6]}"
            _tmux(socket, "send-keys", "-t", "app", "-l", query)
            _tmux(socket, "send-keys", "-t", "app", "Enter")
            loading = False
            deadline = time.perf_counter() + timeout
            while True:
                screen = _tmux(socket, "capture-pane", "-p", "-t", "app")
                shown = time.perf_counter()
                loading = loading or "loading model" in screen
                if "F3 adds the question" in screen:
                    break
                if shown > deadline:
                    raise RuntimeError(f"the ad-hoc lists never came:\n{screen}")
                time.sleep(0.02)
            return {"seconds": shown - opened, "said_loading": loading}
        finally:
            _tmux(socket, "kill-server")


def stall_ms() -> dict[str, float]:
    """The longest main-thread wait (ms) while the model is read in a thread vs in the helper."""
    code = (
        "import json, sys, threading, time\n"
        "from ragtui.core.retrieval.encoder_process import BackgroundEmbedder\n"
        "from ragtui.core.retrieval.embeddings import Embedder\n"
        "mode = sys.argv[1]\n"
        "done = threading.Event()\n"
        "def read():\n"
        "    if mode == 'thread':\n"
        "        e = Embedder(); e.load(); e.encode(['x'])\n"
        "    else:\n"
        "        b = BackgroundEmbedder(); b.start(); b.helper.wait(); b.encode(['x']); b.close()\n"
        "    done.set()\n"
        "threading.Thread(target=read, daemon=True).start()\n"
        "gaps, last = [], time.perf_counter()\n"
        "while not done.is_set():\n"
        "    time.sleep(0.002); now = time.perf_counter(); gaps.append(now - last); last = now\n"
        "gaps.sort()\n"
        "print(json.dumps([1000 * gaps[-1], 1000 * gaps[int(len(gaps) * 0.99)]]))\n"
    )
    out: dict[str, float] = {}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for mode in ("thread", "helper"):
        done = subprocess.run(
            [sys.executable, "-c", code, mode],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
        )
        worst, p99 = json.loads(done.stdout.strip().splitlines()[-1])
        out[f"{mode}_max_ms"], out[f"{mode}_p99_ms"] = worst, p99
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--skip-adhoc", action="store_true")
    parser.add_argument("--browse", type=float, default=20.0, help="seconds on the main screen")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout the app runs from")
    args = parser.parse_args()
    figures: dict[str, object] = {}
    if not args.skip_eval:
        figures.update(warm_eval())
    if not args.skip_adhoc and shutil.which("tmux"):
        subprocess.run(
            [sys.executable, "-m", "ragtui", "eval"],
            check=True,
            capture_output=True,
            cwd=args.root,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )  # warm caches: the app starts without the model
        figures["adhoc_at_once"] = adhoc_once(args.root, 0.0)
        figures["adhoc_after_browsing"] = adhoc_once(args.root, args.browse)
        figures["browse_s"] = args.browse
        figures.update(stall_ms())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
