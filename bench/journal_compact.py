"""``ragtui labels compact`` on a large label journal: the time to read it and to compact it.

python -m bench.journal_compact            # a 200 MB journal (about 1.3 million lines)
python -m bench.journal_compact --mb 20    # smaller

Two shapes: ``random`` (people and model judges grading random pairs of 2,000 questions) and
``crowd`` (every line a new annotator of one pair, which made reading quadratic before). Prints one
JSON object: per shape, the journal's size and lines, and the seconds to read it
(``LabelJournal``) and to compact it (``LabelJournal.compact``, which the command runs after).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import orjson

from ragtui.core.labelling.journal import LabelJournal

ANNOTATORS = ("ana", "bob", "cy", "model:one")


def write_journal(path: Path, megabytes: float, shape: str) -> int:
    """A journal of about ``megabytes`` MB; returns its number of lines."""
    rng = random.Random(0)
    target = int(megabytes * 1_000_000)
    size = lines = 0
    with path.open("wb") as out:
        while size < target:
            crowd = shape == "crowd"
            obj = {
                "question": "q1" if crowd else f"q{rng.randrange(2000)}",
                "chunk": "c1" if crowd else f"doc{rng.randrange(500)}.md#{rng.randrange(30)}",
                "grade": rng.choice([0, 1, 2, 3]),
                "chunk_sha1": "0123456789abcdef0123456789abcdef01234567",
                "at": "2024-01-01T00:00:00.000+00:00",
                "annotator": f"p{lines}" if crowd else rng.choice(ANNOTATORS),
            }
            line = orjson.dumps(obj) + b"\n"
            out.write(line)
            size += len(line)
            lines += 1
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=200.0, help="journal size in MB (default 200)")
    args = parser.parse_args()
    result = {}
    with tempfile.TemporaryDirectory() as folder:
        for shape in ("random", "crowd"):
            path = Path(folder) / shape / "labels.jsonl"
            path.parent.mkdir()
            lines = write_journal(path, args.mb, shape)
            size = path.stat().st_size
            start = time.perf_counter()
            journal = LabelJournal(path, "bench")
            read = time.perf_counter() - start
            start = time.perf_counter()
            journal.compact()
            compact = time.perf_counter() - start
            result[shape] = {
                "mb": round(size / 1e6, 1),
                "lines": lines,
                "kept": len(journal.history),
                "read_s": round(read, 2),
                "compact_s": round(compact, 2),
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
