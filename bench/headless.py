"""Headless evaluation wall-clock: ``ragtui eval`` on the bundled set and on Cranfield, warm cache.

The bundled set is first run with an empty cache (the cold figure: importing the model and
encoding 107 texts); then each command runs once to warm the cache and three times more, and the
median is reported. A child
process also reports whether a warm ``eval`` imported torch or sentence-transformers. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench.common import CRANFIELD, ROOT, wall


def imports_after_warm_eval(args: list[str]) -> list[str]:
    code = (
        "import sys, io, contextlib; from ragtui.cli import main;"
        f"buf = io.StringIO();\nwith contextlib.redirect_stdout(buf): main({args!r})\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1].replace("'", '"'))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--cold-cranfield",
        action="store_true",
        help="also time Cranfield with an empty cache (about 90 s)",
    )
    args = parser.parse_args()
    figures: dict[str, object] = {}
    ragtui = [sys.executable, "-m", "ragtui"]
    with tempfile.TemporaryDirectory() as empty:
        cold_env = {**os.environ, "RAGTUI_CACHE_DIR": empty}
        t0 = time.perf_counter()
        subprocess.run([*ragtui, "eval"], check=True, capture_output=True, cwd=ROOT, env=cold_env)
        figures["bundled_cold_s"] = time.perf_counter() - t0
        if args.cold_cranfield and CRANFIELD.is_dir():
            t0 = time.perf_counter()
            subprocess.run(
                [*ragtui, "eval", "--beir", str(CRANFIELD)],
                check=True,
                capture_output=True,
                cwd=ROOT,
                env=cold_env,
            )
            figures["cranfield_cold_s"] = time.perf_counter() - t0
    subprocess.run([*ragtui, "eval"], check=True, capture_output=True, cwd=ROOT)
    figures["bundled_warm_s"] = wall([*ragtui, "eval"])
    figures["bundled_warm_heavy_imports"] = imports_after_warm_eval(["eval"])
    if CRANFIELD.is_dir():
        beir = ["eval", "--beir", str(CRANFIELD)]
        subprocess.run([*ragtui, *beir], check=True, capture_output=True, cwd=ROOT)
        figures["cranfield_warm_s"] = wall([*ragtui, *beir])
        figures["cranfield_warm_heavy_imports"] = imports_after_warm_eval(beir)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
