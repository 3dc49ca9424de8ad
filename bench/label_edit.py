"""Label-edit latency in the core: one grade change at 68 and at 10,000 questions.

The incremental update (``Evaluation.update_question``: that question's values and the running
sums) is timed against the baseline a naive implementation would pay: recomputing every question
(a new ``Evaluation``). ``Workspace.set_grade`` adds the journal write (flush + fsync) to that.
The 10,000-question golden set cycles through the bundled questions under new ids, each text made
distinct by a word of its own (the first run embeds them once; later runs read the cache). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from bench.common import percentile
from ragtui.core.data.paths import bundled_golden
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace


def synthetic_golden(folder: Path, count: int, distinct: bool = True) -> Path:
    """A golden folder with ``count`` questions cycling through the bundled ones.

    With ``distinct`` (the default) every question after the first cycle gets a word of its own
    (``[v000123]``, a token no chunk holds), so every text is distinct as a real golden set's are:
    nothing is computed once for many questions, and each text is embedded and cached once.
    """
    source = [
        orjson.loads(line)
        for line in (bundled_golden() / "questions.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "questions.jsonl", "wb") as out:
        for i in range(count):
            q = dict(source[i % len(source)])
            q["id"] = f"s{i:05d}"
            if distinct and i >= len(source):
                q["question"] = f"{q['question']} [v{i:06d}]"
            out.write(orjson.dumps(q) + b"\n")
    return folder


def measure(count: int, edits: int, seed: int = 0) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="ragtui-bench-"))
    try:
        if count <= 68:
            golden = tmp / "golden"
            golden.mkdir()
            shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
        else:
            golden = synthetic_golden(tmp / "golden", count)
        t0 = time.perf_counter()
        ws = Workspace.open(Settings(golden=golden))
        load_s = time.perf_counter() - t0
        ev = ws.evaluation
        assert ev is not None
        rng = random.Random(seed)
        incremental, full, save_and_update = [], [], []
        for _ in range(edits):
            q = rng.choice(ws.questions)
            cid = rng.choice(ws.ranking("hybrid", q.id))[0]
            grade = rng.choice([0, 1, 2, None])
            # The journal write plus the incremental update, as the app calls it.
            t0 = time.perf_counter()
            ws.set_grade(q.id, cid, grade)
            save_and_update.append(time.perf_counter() - t0)
            # The core re-computation alone, on the same question.
            t0 = time.perf_counter()
            ev.update_question(q.id)
            incremental.append(time.perf_counter() - t0)
        for _ in range(max(3, edits // 50)):
            t0 = time.perf_counter()
            ws.evaluate_all()  # every question and retriever evaluated again: the baseline
            full.append(time.perf_counter() - t0)
        return {
            "questions": len(ws.questions),
            "load_s": load_s,
            "incremental_ms_median": 1000 * percentile(incremental, 50),
            "incremental_ms_p95": 1000 * percentile(incremental, 95),
            "full_recompute_ms_median": 1000 * percentile(full, 50),
            "set_grade_ms_median": 1000 * percentile(save_and_update, 50),
            "set_grade_ms_p95": 1000 * percentile(save_and_update, 95),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, nargs="+", default=[68, 10_000])
    parser.add_argument("--edits", type=int, default=200)
    args = parser.parse_args()
    print(json.dumps({str(n): measure(n, args.edits) for n in args.questions}))


if __name__ == "__main__":
    main()
