"""A judging session as a person has it: the app in an 80x24 tmux pane (TERM=screen), ``j``, then one
digit per pair for 500 pairs; keys per pair, and key to next pair drawn (median, p95).

The bundled set at k = 5 pools more than 500 (question, chunk) pairs over the three retrievers.
Each digit is sent with ``tmux send-keys`` and the pane is read until its title says the next pair
(``pair N of``); the time includes tmux's own round trips (a few ms), so it is an upper bound of
what the app takes. The journal is checked afterwards: one line per pair, in order.

python -m bench.judging [--pairs 500]
"""

from __future__ import annotations

import argparse
import json
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

from bench.common import ROOT, percentile

_PAIR = re.compile(r"pair (\d+) of (\d+)")


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=False
    ).stdout


def _wait(socket: str, check, timeout: float = 120.0) -> str:
    deadline = time.perf_counter() + timeout
    while True:
        screen = _tmux(socket, "capture-pane", "-p")
        if check(screen):
            return screen
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the pane never got there:\n{screen}")
        time.sleep(0.002)


def measure(pairs: int) -> dict[str, object]:
    """Run the session and return the figures."""
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed")
    from ragtui.core.data.paths import bundled_golden

    socket = f"ragtui-judge-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="ragtui-bench-judging-") as tmp:
        golden = Path(tmp) / "golden"
        golden.mkdir()
        shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
        command = (
            f"cd {shlex.quote(str(ROOT))} && HF_HUB_OFFLINE=1 TERM=screen TEXTUAL_ANIMATIONS=none "
            f"{shlex.quote(sys.executable)} -m ragtui --golden {shlex.quote(str(golden))} --k 5 "
            "--annotator bench; sleep 30"
        )
        _tmux(socket, "new-session", "-d", "-x", "80", "-y", "24", command)
        try:
            _wait(socket, lambda s: "hybrid #" in s)
            keys = 1
            _tmux(socket, "send-keys", "j")
            first = _wait(socket, lambda s: "pair 1 of" in s)
            match = _PAIR.search(first)
            assert match is not None
            total = int(match.group(2))
            if total < pairs:
                raise SystemExit(f"only {total} pooled pairs; ask for fewer")
            latencies: list[float] = []
            for i in range(pairs):
                digit = str(i % 3)
                want = f"pair {i + 2} of" if i + 1 < total else "judged"
                t0 = time.perf_counter()
                _tmux(socket, "send-keys", "-l", digit)
                keys += 1
                _wait(socket, lambda s, want=want: want in s)
                latencies.append(1000 * (time.perf_counter() - t0))
            time.sleep(0.5)
            journal = golden / "labels.jsonl"
            lines = [json.loads(x) for x in journal.read_text().splitlines() if x.strip()]
        finally:
            _tmux(socket, "kill-server")
    return {
        "pairs": pairs,
        "pooled": total,
        "keys": keys,
        "keys_per_pair": keys / pairs,
        "journal_lines": len(lines),
        "grades_in_order": [line["grade"] for line in lines] == [i % 3 for i in range(pairs)],
        "latency_ms_median": statistics.median(latencies),
        "latency_ms_p95": percentile(latencies, 95),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=500)
    args = parser.parse_args()
    print(json.dumps(measure(args.pairs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
