"""A judging session as people have it: the app in an 80x24 tmux pane (TERM=screen), ``j``, then one
digit per pair for 500 pairs; then a second annotator does the same on the same journal. For each:
keys per pair, and key to next pair drawn (p50, p95).

The bundled set at k = 5 pools more than 500 (question, chunk) pairs over the three retrievers.
Each digit is sent with ``tmux send-keys`` and the pane is read until its title says the next pair
(``pair N of``); the time includes tmux's own round trips (a few ms), so it is an upper bound of
what the app takes. The journal is checked afterwards: one line per pair and annotator, in order.

The second annotator (``--annotator bench2``) finds every pair the first one graded still to judge
(a queue of their own: ``judged 0/N by bench2``) and grades each with one digit too; their grades
differ from the first annotator's on two pairs in three, so those pairs become disputed as they are
graded (the view draws the annotators' line).

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
#: The annotators, in order, and the grade each gives pair i.
ANNOTATORS = (("bench", lambda i: i % 3), ("bench2", lambda i: (i + 1) % 3))


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


def session(golden: Path, annotator: str, grade_of, pairs: int) -> dict[str, object]:
    """One annotator's session: start the app, ``j``, one digit per pair; the figures."""
    socket = f"ragtui-judge-{uuid.uuid4().hex[:8]}"
    journal = golden / "labels.jsonl"
    before = len(journal.read_text().splitlines()) if journal.exists() else 0
    command = (
        f"cd {shlex.quote(str(ROOT))} && HF_HUB_OFFLINE=1 TERM=screen TEXTUAL_ANIMATIONS=none "
        f"{shlex.quote(sys.executable)} -m ragtui --golden {shlex.quote(str(golden))} --k 5 "
        f"--annotator {shlex.quote(annotator)}; sleep 30"
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
        own_queue = f"judged 0/{total} by {annotator}" in first
        latencies: list[float] = []
        for i in range(pairs):
            want = f"pair {i + 2} of" if i + 1 < total else "judged"
            t0 = time.perf_counter()
            _tmux(socket, "send-keys", "-l", str(grade_of(i)))
            keys += 1
            _wait(socket, lambda s, want=want: want in s)
            latencies.append(1000 * (time.perf_counter() - t0))
        time.sleep(0.5)
        lines = [json.loads(x) for x in journal.read_text().splitlines()[before:] if x.strip()]
    finally:
        _tmux(socket, "kill-server")
    graded = [(x["question"], x["chunk"]) for x in lines]
    distinct = len(set(graded))
    return {
        "annotator": annotator,
        "pairs": pairs,
        "pooled": total,
        "opened_on_own_queue": own_queue,
        "keys": keys,
        # The grading keys (one digit each) per pair graded; ``keys`` adds the j that opens the view.
        "keys_per_pair": (keys - 1) / distinct if distinct else float("inf"),
        "journal_lines": len(lines),
        "distinct_pairs": distinct,
        "graded_pairs": graded,
        "grades_in_order": [x["grade"] for x in lines] == [grade_of(i) for i in range(pairs)]
        and all(x.get("annotator") == annotator for x in lines),
        "latency_ms_median": statistics.median(latencies),
        "latency_ms_p95": percentile(latencies, 95),
    }


def measure(pairs: int) -> dict[str, object]:
    """Both sessions on one copy of the bundled golden set; the first one's figures at the top
    level (as before), each annotator's under ``annotators``."""
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed")
    from ragtui.core.data.paths import bundled_golden

    with tempfile.TemporaryDirectory(prefix="ragtui-bench-judging-") as tmp:
        golden = Path(tmp) / "golden"
        golden.mkdir()
        shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
        runs = [session(golden, name, grade_of, pairs) for name, grade_of in ANNOTATORS]
    first, second = runs
    same_pairs = first.pop("graded_pairs") == second.pop("graded_pairs")
    out: dict[str, object] = {k: v for k, v in first.items() if k != "annotator"}
    out["second_annotator_same_pairs"] = same_pairs
    out["annotators"] = {run["annotator"]: run for run in runs}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=500)
    args = parser.parse_args()
    print(json.dumps(measure(args.pairs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
