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
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.retrieval.live import parse_retriever_section, parse_retriever_spec
from ragtui.core.retrieval.plugins import entry_point_names
from ragtui.core.workspace import Workspace
from tests.conftest import DATA, MINI_CHUNK_SIZE, ROOT

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
        "".join(json.dumps({"id": c.id, "text": c.text}) + "\n" for c in ws.chunks)
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
    assert ws.rankings["testkw"] == ws.rankings["bm25"]


def test_options_from_the_project_file_reach_the_factory(plugin, mini_settings, tmp_path):
    spec = parse_retriever_section(
        "fn",
        {"factory": "ragtui_test_plugin:make_function", "options": {"chunks_file": str(plugin)}},
    )
    settings = replace(mini_settings, retrievers=("bm25",), live_retrievers=(spec,))
    ws = Workspace.open(replace(settings, cache_dir=tmp_path / "cache"))
    # A plain function returning (id, score, text) tuples is a retriever too.
    assert ws.rankings["fn"] == ws.rankings["bm25"]


def test_a_plugin_that_raises_shows_its_error_and_leaves_the_rest(plugin, mini_settings, tmp_path):
    ws = Workspace.open(_settings(mini_settings, tmp_path, "down=ragtui_test_plugin:make_broken"))
    status = ws.live_status["down"]
    assert status.state == "failed"
    assert status.message == "no question answered: RuntimeError: index offline"
    assert ws.retrievers == ["bm25"]


def test_unusable_results_are_named(plugin, mini_settings, tmp_path):
    ws = Workspace.open(
        _settings(mini_settings, tmp_path, "bad=ragtui_test_plugin:make_bad_results")
    )
    assert ws.live_status["bad"].message == (
        "no question answered: unusable result: result 1 (x) has a score that is not a number: 'high'"
    )


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            "kw=ragtui_no_such_plugin:make",
            "cannot import ragtui_no_such_plugin (ModuleNotFoundError",
        ),
        ("kw=ragtui_test_plugin:nothing", "ragtui_test_plugin has no nothing"),
        ("kw=no-such-entry-point", "no entry point of that name in group ragtui.retrievers"),
    ],
)
def test_a_plugin_that_cannot_load_is_bad_input(plugin, mini_settings, tmp_path, spec, problem):
    with pytest.raises(InputError) as caught:
        Workspace.load(_settings(mini_settings, tmp_path, spec))
    assert problem in caught.value.message


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
            "--corpus",
            str(mini / "corpus"),
            "--golden",
            str(mini / "golden"),
            "--chunk-size",
            str(MINI_CHUNK_SIZE),
            "--retrievers",
            "bm25,testkw",
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
        "--corpus",
        str(mini / "corpus"),
        "--golden",
        str(mini / "golden"),
        "--retriever",
        "kw=ragtui_test_plugin:make_function",
    ]
    monkeypatch.delenv("RAGTUI_TEST_PLUGIN_CHUNKS")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "ragtui: error: --retriever 'kw=ragtui_test_plugin:make_function': the factory failed: "
        "KeyError: 'RAGTUI_TEST_PLUGIN_CHUNKS'"
    )
