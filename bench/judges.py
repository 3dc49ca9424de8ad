"""The chat judge's throughput: pairs judged per second against the local chat server, and ragtui's
own cost per pair.

The server is tests/judge_server.py in a process of its own (``python -m tests.judge_server``),
answering every request after a fixed delay that stands for a model (``--delay``, 20 ms) or at once.
Measured:

- pairs per second at concurrency 1 and 8: ``concurrency`` threads calling ``judge.grade`` on one
  pair each, as ``ragtui judge`` runs a judge (the ideal is ``concurrency / delay``);
- ragtui's own cost per pair, the server answering at once: the wall time per pair (an HTTP round
  trip on 127.0.0.1 included) and the CPU time of this process per pair (building the request,
  sending it, reading and parsing the answer: the server's CPU is another process's);
- the prompt and the parser alone (no HTTP), per pair;
- ``ragtui judge`` end to end on the bundled set (BM25's pool, a copy of the golden set, its own
  cache folder) at concurrency 8: the pairs per second the command reports and its wall time.

python -m bench.judges [--delay 0.02] [--pairs 800]
Prints one JSON object (the last line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench.common import ROOT
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE
from ragtui.core.data.paths import bundled_golden
from ragtui.core.judge_spec import JudgeSpec
from ragtui.core.judges.base import JudgePair
from ragtui.core.judges.openai import OpenAIJudge, openai_judge
from ragtui.core.judges.parse import parse_grade
from ragtui.core.judges.prompt import DEFAULT_PROMPT, fill_prompt, scale_text

_PASSAGE = (
    "Chunks are cut at 512 tokens with an overlap of 64 by default; a team that changes its "
    "chunker re-pools every time, and each chunk is judged against the question. "
)


@contextmanager
def chat_server(delay: float) -> Iterator[str]:
    """The chat server in a process of its own, answering after ``delay`` seconds: its URL."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.judge_server", "--delay", str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = json.loads(child.stdout.readline())["url"]
        yield str(url)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def pairs(count: int) -> list[JudgePair]:
    """``count`` distinct pairs, graded 0, 1, 2 in turn by the server (``[grade=N]``)."""
    return [
        JudgePair(
            f"q{i % 50:03d}",
            f"What is the default chunk size of setting {i}?",
            f"doc.md#{i}",
            f"{_PASSAGE * 3}[grade={i % 3}]",
            f"{i:040x}",
        )
        for i in range(count)
    ]


def judge_at(url: str, concurrency: int) -> OpenAIJudge:
    spec = JudgeSpec(
        "bench", "openai", "bench-model", {"url": url, "concurrency": concurrency, "timeout": 10}
    )
    return openai_judge(spec, DEFAULT_GRADE_SCALE)


def run(judge: OpenAIJudge, todo: Sequence[JudgePair]) -> tuple[float, float, int]:
    """Grade ``todo`` with ``judge.concurrency`` threads, one pair a call: (wall s, CPU s, graded)."""
    queue = list(reversed(todo))
    lock = threading.Lock()
    graded = [0]

    def work() -> None:
        while True:
            with lock:
                if not queue:
                    return
                pair = queue.pop()
            (verdict,) = judge.grade([pair])
            if verdict.ok:
                with lock:
                    graded[0] += 1

    threads = [threading.Thread(target=work) for _ in range(judge.concurrency)]
    cpu, wall = time.process_time(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - wall, time.process_time() - cpu, graded[0]


def local_cost(count: int) -> float:
    """Microseconds per pair to fill the default prompt and parse a typical answer."""
    scale = scale_text(DEFAULT_GRADE_SCALE)
    answer = "Reason: The passage states the default chunk size directly.\nGrade: 2"
    todo = pairs(count)
    start = time.perf_counter()
    for pair in todo:
        fill_prompt(DEFAULT_PROMPT, pair.question, pair.chunk, scale)
        parse_grade(answer, DEFAULT_GRADE_SCALE)
    return (time.perf_counter() - start) / count * 1e6


def command(url: str, limit: int) -> dict[str, float]:
    """``ragtui judge --json`` on the bundled corpus (BM25's pool), a copy of its golden set and a
    cache of its own, at concurrency 8: what it reports, and its wall time."""
    tmp = Path(tempfile.mkdtemp(prefix="ragtui-bench-judge-"))
    try:
        golden = tmp / "golden"
        shutil.copytree(bundled_golden(), golden)
        project = tmp / "ragtui.toml"
        project.write_text(
            f'[judges.llm]\nurl = "{url}"\nmodel = "bench-model"\nconcurrency = 8\n',
            encoding="utf-8",
        )
        env = {
            **os.environ,
            "XDG_CACHE_HOME": str(tmp / "cache"),
            "XDG_DATA_HOME": str(tmp / "data"),
            "HF_HUB_OFFLINE": "1",
        }
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragtui",
                "judge",
                "--project",
                str(project),
                "--golden",
                str(golden),
                "--retrievers",
                "bm25",
                "--judge",
                "llm",
                "--limit",
                str(limit),
                "--json",
            ],
            capture_output=True,
            text=True,
            cwd=tmp,
            env=env,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"ragtui judge failed ({done.returncode}):\n{done.stderr}")
        summary = json.loads(done.stdout)["judges"]["llm"]
        return {
            "command_pairs": float(summary["graded"]),
            "command_pairs_per_s": float(summary["pairs_per_s"]),
            "command_grading_s": float(summary["seconds"]),
            "command_wall_s": wall,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.02, help="the server's answer time, s")
    parser.add_argument("--pairs", type=int, default=800, help="pairs at concurrency 8")
    args = parser.parse_args()
    out: dict[str, float] = {"delay_ms": args.delay * 1000}
    with chat_server(args.delay) as url:
        run(judge_at(url, 8), pairs(40))  # warm up: imports, the server's threads
        for concurrency, count in ((1, args.pairs // 4), (8, args.pairs)):
            wall, _, graded = run(judge_at(url, concurrency), pairs(count))
            assert graded == count, f"{count - graded} pairs failed at concurrency {concurrency}"
            out[f"c{concurrency}_pairs_per_s"] = count / wall
        out.update(command(url, args.pairs // 2))
    with chat_server(0.0) as url:
        count = args.pairs // 2
        run(judge_at(url, 1), pairs(40))
        wall, cpu, graded = run(judge_at(url, 1), pairs(count))
        assert graded == count
        out["overhead_wall_ms_per_pair"] = wall / count * 1000
        out["overhead_cpu_ms_per_pair"] = cpu / count * 1000
    out["prompt_and_parse_us_per_pair"] = local_cost(5000)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
