"""Python plugins: a real package (tests/data/plugin) installed with pip into a folder on sys.path.

The package registers its factory under the ``ragtui.retrievers`` entry-point group, so both ways
in are exercised: ``--retriever NAME=package.module:factory`` and an entry-point name in
``--retrievers``. Its search is Okapi BM25 ranked as ragtui's own bm25, so the numbers must agree.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.retrieval.live import parse_retriever_section, parse_retriever_spec
from ragtui.core.retrieval.plugins import entry_point_names
from ragtui.core.workspace import Workspace
from tests.conftest import DATA, ROOT, mini_args

PLUGIN_SOURCE = DATA / "plugin"


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package installed by pip into its own folder (a copy is built: nothing lands in tests/)."""
    work = tmp_path_factory.mktemp("plugin")
    source = work / "src"
    shutil.copytree(PLUGIN_SOURCE, source)
    site = work / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


@pytest.fixture
def plugin(plugin_site, monkeypatch, mini_settings, tmp_path):
    """The installed plugin importable, and the small corpus's chunks written for it to read."""
    monkeypatch.syspath_prepend(str(plugin_site))
    importlib.invalidate_caches()
    chunks_file = tmp_path / "plugin-chunks.jsonl"
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    chunks_file.write_text(
        "".join(json.dumps({"id": c.id, "text": c.text}) + "\n" for c in ws.data.chunks)
    )
    monkeypatch.setenv("RAGTUI_TEST_PLUGIN_CHUNKS", str(chunks_file))
    yield chunks_file
    sys.modules.pop("ragtui_test_plugin", None)


def _settings(mini_settings, tmp_path, *specs, retrievers=("bm25",)):
    return replace(
        mini_settings,
        retrievers=retrievers,
        live_retrievers=tuple(parse_retriever_spec(s) for s in specs),
        cache_dir=tmp_path / "cache",
    )


def test_a_factory_plugin_gives_bm25s_numbers(plugin, mini_settings, tmp_path):
    ws = Workspace.open(_settings(mini_settings, tmp_path, "kw=ragtui_test_plugin:make"))
    assert ws.retrievers == ["bm25", "kw"]
    ev = ws.evaluation
    assert ev is not None
    for q in ws.questions:
        assert ws.ranking("kw", q.id) == ws.ranking("bm25", q.id)
    assert ev.summary("kw") == ev.summary("bm25")


def test_an_entry_point_named_in_retrievers_is_found(plugin, mini_settings, tmp_path):
    assert "testkw" in entry_point_names()
    ws = Workspace.open(_settings(mini_settings, tmp_path, retrievers=("bm25", "testkw")))
    assert ws.retrievers == ["bm25", "testkw"]
    assert ws.ranked.rankings["testkw"] == ws.ranked.rankings["bm25"]


def test_options_from_the_project_file_reach_the_factory(plugin, mini_settings, tmp_path):
    spec = parse_retriever_section(
        "fn",
        {"factory": "ragtui_test_plugin:make_function", "options": {"chunks_file": str(plugin)}},
    )
    settings = replace(mini_settings, retrievers=("bm25",), live_retrievers=(spec,))
    ws = Workspace.open(replace(settings, cache_dir=tmp_path / "cache"))
    # A plain function returning (id, score, text) tuples is a retriever too.
    assert ws.ranked.rankings["fn"] == ws.ranked.rankings["bm25"]


def test_a_plugin_that_raises_shows_its_error_and_leaves_the_rest(plugin, mini_settings, tmp_path):
    ws = Workspace.open(_settings(mini_settings, tmp_path, "down=ragtui_test_plugin:make_broken"))
    status = ws.live.status["down"]
    assert status.state == "failed"
    assert status.message == "no question answered: RuntimeError: index offline"
    assert ws.retrievers == ["bm25"]


def test_unusable_results_are_named(plugin, mini_settings, tmp_path):
    ws = Workspace.open(
        _settings(mini_settings, tmp_path, "bad=ragtui_test_plugin:make_bad_results")
    )
    assert ws.live.status["bad"].message == (
        "no question answered: unusable result: result 1 (x) has a score that is not a number: 'high'"
    )


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            "kw=ragtui_no_such_plugin:make",
            "cannot import ragtui_no_such_plugin (ModuleNotFoundError",
        ),
        ("kw=no-such-entry-point", "no entry point of that name in group ragtui.retrievers"),
    ],
)
def test_a_plugin_that_does_not_exist_is_bad_input(plugin, mini_settings, tmp_path, spec, problem):
    # Found out without running any code: at load, before anything is embedded or asked.
    with pytest.raises(InputError) as caught:
        Workspace.load(_settings(mini_settings, tmp_path, spec))
    assert problem in caught.value.message


def test_a_plugin_is_imported_only_when_it_is_asked(plugin, mini_settings, tmp_path):
    settings = _settings(mini_settings, tmp_path, "kw=ragtui_test_plugin:nothing")
    ws = Workspace.load(settings)
    assert "ragtui_test_plugin" not in sys.modules  # built, not imported
    assert ws.live.retrievers["kw"].describe() == {
        "kind": "plugin",
        "target": "ragtui_test_plugin:nothing",
        "version": "1.0.0",
    }
    ws = Workspace.open(settings)
    assert ws.live.status["kw"].state == "failed"
    assert ws.live.status["kw"].message == "ragtui_test_plugin has no nothing"
    assert ws.retrievers == ["bm25"]


def test_an_unknown_name_in_retrievers_lists_what_exists(plugin, mini_settings, tmp_path):
    with pytest.raises(InputError) as caught:
        Workspace.load(_settings(mini_settings, tmp_path, retrievers=("bm25", "nope")))
    assert "--retrievers: unknown nope; choose from bm25, vector, hybrid" in caught.value.message
    assert "testkw" in caught.value.message


def test_the_installed_entry_point_works_from_the_command_line(
    plugin, plugin_site, mini, cache_dir
):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugin_site), str(ROOT)]),
        "RAGTUI_CACHE_DIR": str(cache_dir),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragtui",
            "eval",
            "--json",
            *mini_args(mini, "--retrievers", "bm25,testkw"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (
        report["retrievers"]["testkw"]["per_question"]
        == report["retrievers"]["bm25"]["per_question"]
    )


def test_the_command_line_names_a_factory_that_fails(plugin, mini, capsys, monkeypatch):
    argv = [
        "eval",
        *mini_args(mini, "--retrievers", "bm25"),
        "--retriever",
        "kw=ragtui_test_plugin:make_function",
    ]
    monkeypatch.delenv("RAGTUI_TEST_PLUGIN_CHUNKS")
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "ragtui: error: kw: the factory ragtui_test_plugin:make_function failed: "
        "KeyError: 'RAGTUI_TEST_PLUGIN_CHUNKS'"
    )


# ---- a plugin cannot end ragtui -----------------------------------------------------------------

#: Plugins that try to end ragtui or answer nonsense (written into a folder put on sys.path).
HOSTILE = """
import sys


def exits():
    return lambda question, depth: sys.exit(0)


def interrupts():
    def search(question, depth):
        raise KeyboardInterrupt

    return search


def raises_system_exit():
    raise SystemExit(3)


class _Threads:
    concurrency = 4

    def search(self, question, depth):
        raise KeyboardInterrupt


def threads():
    return _Threads()


def exits_once():
    from ragtui_test_plugin import make

    inner, calls = make(), []

    def search(question, depth):
        calls.append(question)
        if len(calls) == 1:
            sys.exit(0)
        return inner.search(question, depth)

    return search


class _Exits:
    def __float__(self):
        sys.exit(0)


class _Id(str):
    def __str__(self):
        raise SystemExit(0)


class _Answer:
    def __str__(self):
        raise SystemExit(0)


def _exit_midway():
    yield ("m01.md#0", 1.0)
    sys.exit(0)


ANSWERS = {
    "none": None,
    "number": 5,
    "text": "a text",
    "short": [("a",)],
    "long": [("a", 1.0, "text", "extra")],
    "nan": [("a", float("nan"))],
    "midway": None,
    "float": [("a", _Exits())],
    "id": [(_Id("a"), 1.0)],
}


def returns(kind):
    def search(question, depth):
        if kind == "midway":
            return _exit_midway()
        if kind == "str":
            raise ValueError(_Answer())
        return ANSWERS[kind]

    return search


class _Batch:
    batch_size = 4

    def __init__(self, answers):
        self.answers = answers

    def search(self, question, depth):
        return []

    def search_batch(self, questions, depth):
        return self.answers(questions)


def batch_none():
    return _Batch(lambda questions: None)


def batch_short():
    return _Batch(lambda questions: [[]])
"""

#: A plugin whose import ends the process.
EXITS_ON_IMPORT = "import sys\n\nsys.exit(1)\n\n\ndef make():\n    return lambda q, d: []\n"


@pytest.fixture
def hostile(plugin, tmp_path, monkeypatch):
    """The hostile plugins importable as ``hostile`` and ``hostile_import``."""
    folder = tmp_path / "hostile-site"
    folder.mkdir()
    (folder / "hostile.py").write_text(HOSTILE)
    (folder / "hostile_import.py").write_text(EXITS_ON_IMPORT)
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    for name in ("hostile", "hostile_import"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        ("hostile:exits", {}, "SystemExit: the plugin called sys.exit(0)"),
        (
            "hostile:interrupts",
            {},
            "KeyboardInterrupt: raised by the plugin (no Ctrl-C was pressed)",
        ),
        (
            "hostile:threads",
            {},
            "KeyboardInterrupt: raised by the plugin (no Ctrl-C was pressed)",
        ),
        (
            "hostile:raises_system_exit",
            {},
            "the factory hostile:raises_system_exit failed: SystemExit: the plugin called sys.exit(3)",
        ),
        (
            "hostile_import:make",
            {},
            "cannot import hostile_import (SystemExit: the plugin called sys.exit(1))",
        ),
        (
            "hostile:returns",
            {"kind": "none"},
            "unusable result: search returned NoneType, not a list of results",
        ),
        (
            "hostile:returns",
            {"kind": "number"},
            "unusable result: search returned int, not a list of results",
        ),
        (
            "hostile:returns",
            {"kind": "text"},
            "unusable result: search returned str, not a list of results",
        ),
        (
            "hostile:returns",
            {"kind": "short"},
            "unusable result: result 1 is a sequence of 1 items, not (id, score[, text])",
        ),
        (
            "hostile:returns",
            {"kind": "long"},
            "unusable result: result 1 is a sequence of 4 items, not (id, score[, text])",
        ),
        (
            "hostile:returns",
            {"kind": "nan"},
            "unusable result: result 1 (a) has a score that is not finite: nan",
        ),
        ("hostile:returns", {"kind": "midway"}, "SystemExit: the plugin called sys.exit(0)"),
        ("hostile:returns", {"kind": "float"}, "SystemExit: the plugin called sys.exit(0)"),
        ("hostile:returns", {"kind": "id"}, "SystemExit: the plugin called sys.exit(0)"),
        ("hostile:returns", {"kind": "str"}, "ValueError"),
        (
            "hostile:batch_none",
            {},
            "search_batch returned NoneType, not one list per question",
        ),
        ("hostile:batch_short", {}, "search_batch returned 1 answers for 4 questions"),
    ],
)
def test_whatever_a_plugin_raises_or_returns_is_its_own_failure(
    hostile, mini_settings, tmp_path, target, options, message
):
    spec = parse_retriever_section("p", {"factory": target, "options": options})
    settings = replace(
        _settings(mini_settings, tmp_path), retrievers=("bm25",), live_retrievers=(spec,)
    )
    ws = Workspace.open(settings)  # neither exits nor raises
    status = ws.live.status["p"]
    assert status.state == "failed"
    assert status.message in (message, f"no question answered: {message}")
    assert "\n" not in status.message
    # The others keep their numbers.
    alone = Workspace.open(replace(settings, live_retrievers=()))
    assert ws.evaluation is not None and alone.evaluation is not None
    assert ws.evaluation.summary("bm25") == alone.evaluation.summary("bm25")


def _project(folder: Path, target: str) -> None:
    (folder / "ragtui.toml").write_text(f'[retrievers.p]\nfactory = "{target}"\n')


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("hostile:exits", "no question answered: SystemExit: the plugin called sys.exit(0)"),
        (
            "hostile:interrupts",
            "no question answered: KeyboardInterrupt: raised by the plugin (no Ctrl-C was pressed)",
        ),
        (
            "hostile:raises_system_exit",
            "the factory hostile:raises_system_exit failed: SystemExit: the plugin called sys.exit(3)",
        ),
    ],
)
def test_a_plugin_that_exits_cannot_turn_the_gate_green(
    hostile, mini, capsys, monkeypatch, cli_cache_env, target, reason
):
    # It answered no question: exit 2 and one line, nothing on stdout (docs/retrievers.md).
    _project(mini, target)
    monkeypatch.chdir(mini)
    argv = ["eval", *mini_args(mini, "--retrievers", "bm25,p"), "--fail-under", "recall@3=0.99"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines()[-1] == f"ragtui: error: p: {reason}"


def test_a_plugin_that_exits_on_one_question_is_judged_on_the_rest(
    hostile, mini, capsys, monkeypatch, cli_cache_env
):
    # The first question failed (it counts as an empty run, named in a warning); the gate judges
    # the retrievers that ran, the failed question included, and says so.
    _project(mini, "hostile:exits_once")
    monkeypatch.chdir(mini)
    argv = ["eval", *mini_args(mini, "--retrievers", "bm25,p"), "--fail-under", "recall@3=0.99"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "ragtui: warning: p: 1 of 7 questions not answered (m01): SystemExit: " in err
    assert "ragtui: fell short: p R@3 = " in err
    assert "bm25 R@3" not in err.split("fell short")[-1]


SLEEPER = """
import pathlib
import sys
import time


def _search(swallow):
    def search(question, depth):
        pathlib.Path(MARK).touch()
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            if not swallow:
                raise
        return []

    return search


def make():
    return _search(False)


def make_swallowing():
    return _search(True)
"""


@pytest.mark.parametrize("factory", ["make", "make_swallowing"])
def test_a_real_ctrl_c_still_stops_ragtui_inside_a_plugin(mini, tmp_path, cache_dir, factory):
    # Only the main thread receives SIGINT: a Ctrl-C during the plugin's search ends the command
    # (exit 130), even when the plugin swallows the KeyboardInterrupt it raised.
    site = tmp_path / "sleepy-site"
    site.mkdir()
    mark = tmp_path / "searching"
    (site / "sleepy.py").write_text(f"MARK = {str(mark)!r}\n" + SLEEPER)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "RAGTUI_CACHE_DIR": str(cache_dir),
    }
    argv = [sys.executable, "-m", "ragtui", "eval", *mini_args(mini, "--retrievers", "bm25")]
    process = subprocess.Popen(
        [*argv, "--retriever", f"p=sleepy:{factory}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.2)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)
        assert time.monotonic() - sent < 5
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
