"""The wheel: built from the source tree, installed into a fresh virtual environment, it carries the
bundled data, runs ``ragtui eval`` and ``ragtui init`` there, and never writes into its own install
(labels and added questions go to the user's data folder)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ragtui.cli.output import render_report
from ragtui.core.analysis.reports import eval_table_report
from ragtui.core.data.paths import bundled_corpus, bundled_golden
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT


def _tree_hash(folder: Path) -> str:
    """Every path (bytecode caches aside: the interpreter's, not ragtui's) and file's bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path):
    """The wheel, and a fresh venv (system site-packages for torch & co) with only the wheel installed into it."""
    folder = tmp_path_factory.mktemp("packaging")
    wheels = folder / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("ragtui-*.whl")
    venv = folder / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
        check=True,
        capture_output=True,
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        RAGTUI_CACHE_DIR=str(cache_dir),
        XDG_DATA_HOME=str(folder / "xdg"),
        HF_HUB_OFFLINE="1",
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    work = folder / "work"
    work.mkdir()
    return {
        "wheel": wheel,
        "venv": venv,
        "python": python,
        "env": env,
        "work": work,
        "folder": folder,
    }


def _run(installed: dict, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(installed["venv"] / "bin" / "ragtui"), *argv],
        capture_output=True,
        text=True,
        cwd=cwd or installed["work"],
        env=installed["env"],
        timeout=240,
    )
    assert done.returncode == 0, f"ragtui {' '.join(argv)}: {done.stderr}"
    return done


def _site_ragtui(installed: dict) -> Path:
    done = subprocess.run(
        [str(installed["python"]), "-c", "import ragtui; print(ragtui.__file__)"],
        capture_output=True,
        text=True,
        cwd=installed["work"],
        env=installed["env"],
        check=True,
    )
    return Path(done.stdout.strip()).parent


def test_the_wheel_carries_the_bundled_data(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    corpus = {f"ragtui/_bundled/corpus/{p.name}" for p in bundled_corpus().iterdir() if p.is_file()}
    assert corpus <= names
    assert "ragtui/_bundled/golden/questions.jsonl" in names
    # Only the golden set itself: never someone's labels or saved runs.
    assert {n for n in names if n.startswith("ragtui/_bundled/golden/")} <= {
        "ragtui/_bundled/golden/questions.jsonl",
        "ragtui/_bundled/golden/grades.json",
    }
    assert "ragtui/cli/serve_templates/app_index.html" in names


def test_eval_init_and_writes_from_the_installed_package(installed, cache_dir):
    package = _site_ragtui(installed)
    assert package.is_relative_to(installed["venv"]), package
    before = _tree_hash(package)
    # eval on the bundled data prints what the source tree computes.
    shown = _run(installed, "eval").stdout
    golden = installed["folder"] / "golden-copy"
    golden.mkdir()
    shutil.copy(bundled_golden() / "questions.jsonl", golden / "questions.jsonl")
    expected = render_report(
        eval_table_report(Workspace.open(Settings(golden=golden, cache_dir=cache_dir)))
    )
    assert expected in shown
    # A grade write: add-question on the bundled set goes to the user's data folder, said on stderr.
    copy = installed["folder"] / "xdg" / "ragtui" / "golden"
    added = _run(
        installed,
        "add-question",
        "--retrievers",
        "bm25",
        "--question",
        "How big is PS-08?",
        "--evidence",
        "| PS-08 | Noordertocht | PV-17 Rietzoom | 64 |",
    )
    assert f"copied it to {copy}" in added.stderr
    assert json.loads((copy / "questions.jsonl").read_text().splitlines()[-1])["question"] == (
        "How big is PS-08?"
    )
    # And a label, written through the installed package's own workspace.
    script = (
        "from ragtui.core.settings import Settings\n"
        "from ragtui.core.workspace import Workspace\n"
        "ws = Workspace.load(Settings(retrievers=('bm25',), annotator='pkg'))\n"
        "q = ws.questions[0].id\n"
        "ws.set_grade(q, ws.ranking('bm25', q)[0][0], 1)\n"
        "print(ws.labels.path)\n"
    )
    done = subprocess.run(
        [str(installed["python"]), "-c", script],
        capture_output=True,
        text=True,
        cwd=installed["work"],
        env=installed["env"],
        check=True,
    )
    assert Path(done.stdout.strip()) == copy / "labels.jsonl"
    assert _tree_hash(package) == before, "the installed package was written to"
    # init, then eval in the new project.
    _run(installed, "init", "proj", "--handbook")
    project = installed["work"] / "proj"
    assert sorted(p.name for p in project.iterdir()) == ["corpus", "golden", "ragtui.toml"]
    out = _run(installed, "eval", "--retrievers", "bm25", cwd=project).stdout
    assert out.startswith("1 questions;") and out.splitlines()[2].startswith("bm25")
    assert _tree_hash(package) == before
