"""The project file: found from the working folder up, every option key, paths relative to the file,
flags override it, ``ragtui config`` says where each value came from, bad keys and values are one-line
errors naming file, line and key; the ``[grades]`` section and ``golden/grades.json``; ``ragtui init``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.data.grades import DEFAULT_GRADE_SCALE
from ragtui.core.data.paths import bundled_corpus, bundled_golden
from ragtui.core.errors import InputError
from ragtui.core.options import OPTIONS
from ragtui.core.project import SECTIONS, effective_settings, find_project_file, load_project
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI, MINI_CHUNK_SIZE, ROOT


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _config(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["config", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)["options"]


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


# ---- reading ----------------------------------------------------------------------------------------


def test_every_option_key_is_read_and_paths_are_relative_to_the_file(tmp_path):
    path = _write(
        tmp_path / "proj" / "ragtui.toml",
        """
corpus = "docs"
golden = "gold"
chunk-size = 128
overlap = 16
model = "some/model"
embedding-backend = "torch"
k = 5
depth = 20
retrievers = ["bm25", "hybrid"]
threshold = 2
bm25-backend = "bm25s"
annotator = "ana"
counted-grades = "human+model"
judges = ["sim=similarity"]
estimate = true
blind = true
show-others = true
max-file-mb = 2.5
runs = ["mine=runs/mine.trec"]
chunks = "team/chunks.jsonl"
level = "chunk"
unit = "evidence"
live-retrievers = ["web=http://localhost:9200/search?q={query}"]
refresh = true
allow-http = true
milvus = "milvus.db"
collection = "docs"
milvus-fields = ["text=content"]
windows = "mean"
window-stride = 100
rerank = "models/ce"
rerank-over = "bm25"
""",
    )
    project = load_project(path)
    folder = path.parent.resolve()
    assert project.values == {
        "corpus": folder / "docs",
        "golden": folder / "gold",
        "chunk_size": 128,
        "overlap": 16,
        "model": "some/model",
        "embedding_backend": "torch",
        "k": 5,
        "depth": 20,
        "retrievers": ("bm25", "hybrid"),
        "threshold": 2,
        "bm25_backend": "bm25s",
        "annotator": "ana",
        "counted_grades": "human+model",
        "judges": project.values["judges"],
        "estimate": True,
        "blind": True,
        "show_others": True,
        "max_file_mb": 2.5,
        "runs": (("mine", folder / "runs" / "mine.trec"),),
        "chunks": folder / "team" / "chunks.jsonl",
        "level": "chunk",
        "unit": "evidence",
        "live_retrievers": project.values["live_retrievers"],
        "refresh": True,
        "allow_http": True,
        "milvus": "milvus.db",
        "collection": "docs",
        "milvus_fields": (("text", "content"),),
        "windows": "mean",
        "window_stride": 100,
        "rerank": "models/ce",
        "rerank_over": "bm25",
    }
    assert [spec.name for spec in project.values["live_retrievers"]] == ["web"]
    assert [str(spec) for spec in project.values["judges"]] == ["sim=similarity"]
    # Every shared option but beir (which excludes corpus) was set: the table and the file agree.
    assert {o.name for o in OPTIONS} - project.values.keys() == {"beir"}
    assert project.sources["k"] == f"{path}:k"


def test_found_in_a_parent_folder_and_in_pyproject(tmp_path, monkeypatch):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_project_file(deep) is None
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.ragtui]\nk = 7\n')
    assert find_project_file(deep) == tmp_path / "pyproject.toml"
    assert load_project(tmp_path / "pyproject.toml").values == {"k": 7}
    # A ragtui.toml nearer the working folder wins over a pyproject.toml further up.
    _write(tmp_path / "a" / "ragtui.toml", "k = 4\n")
    monkeypatch.chdir(deep)
    assert find_project_file(deep) == (tmp_path / "a" / "ragtui.toml").resolve()
    # A pyproject.toml without [tool.ragtui] is not a project file.
    _write(tmp_path / "other" / "pyproject.toml", '[project]\nname = "ragtui-fan"\n')
    assert find_project_file(tmp_path / "other") == tmp_path / "pyproject.toml"


def test_flags_override_the_file_and_config_says_where_each_value_came_from(
    tmp_path, monkeypatch, capsys
):
    _write(tmp_path / "ragtui.toml", 'k = 5\ndepth = 20\ncorpus = "docs"\n')
    monkeypatch.chdir(tmp_path)
    options = _config(capsys, "--depth", "7")
    assert options["k"] == {"value": "5", "from": "ragtui.toml:k"}
    assert options["depth"] == {"value": "7", "from": "flag --depth"}
    assert options["corpus"] == {
        "value": str(tmp_path.resolve() / "docs"),
        "from": "ragtui.toml:corpus",
    }
    assert options["overlap"] == {"value": "0", "from": "default"}
    assert options["golden"]["from"].startswith("default")
    assert options["grades"] == {
        "value": "0 not relevant, 1 partly, 2 answers fully",
        "from": "default",
    }
    # Every option is listed, and the grade scale.
    assert list(options) == [o.key for o in OPTIONS] + ["grades"]
    # --no-project ignores the file; --project names another one.
    assert _config(capsys, "--no-project")["k"] == {"value": "3", "from": "default"}
    other = _write(tmp_path / "elsewhere" / "ci.toml", "k = 9\n")
    assert _config(capsys, "--project", str(other))["k"]["from"] == f"{other}:k"


def test_the_text_form_of_config_lists_the_file(tmp_path, monkeypatch, capsys):
    _write(tmp_path / "ragtui.toml", "k = 5\n")
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 0
    text = capsys.readouterr().out
    assert "project file: ragtui.toml" in text
    row = next(line for line in text.splitlines() if line.startswith("k "))
    assert row.split() == ["k", "5", "ragtui.toml:k"]


def test_a_flag_for_the_data_replaces_the_files_data_source(tmp_path):
    _write(tmp_path / "ragtui.toml", 'beir = "beir"\ngolden = "golden"\n')
    project = load_project(tmp_path / "ragtui.toml")
    effective = effective_settings({"corpus": Path("/docs")}, project)
    # --corpus on the command line wins over beir in the file; golden stays the file's.
    assert effective.settings.beir is None
    assert effective.settings.corpus == Path("/docs")
    assert effective.settings.golden == tmp_path.resolve() / "golden"
    assert effective.sources["corpus"] == "flag --corpus"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("k = 3\nkk = 4\n", 2, "unknown key 'kk'; did you mean 'k'?"),
        ("k = 3\n\nchunk_size = 4\n", 3, "unknown key 'chunk_size'; keys use dashes: 'chunk-size'"),
        ("depth = 0\n", 1, "depth: 0 must be at least 1"),
        ('k = "three"\n', 1, "k: 'three' is not a whole number"),
        ('bm25-backend = "lucene"\n', 1, "bm25-backend: 'lucene' is not one of"),
        ("retrievers = []\n", 1, "retrievers: the list is empty"),
        ("k = [1, 2]\n", 1, "k: [1, 2] is not a whole number"),
        ('k = 3\nmodel = "a\n', 2, "invalid TOML: "),
        (
            '[grades]\n0 = "no"\n2 = "yes"\n',
            1,
            "[grades] grades must run from 0 without gaps; missing 1",
        ),
        ('[grades]\n0 = "no"\n', 1, "[grades] a scale needs at least two grades"),
        ('[grades]\n0 = "no"\n10 = "x"\n', 1, "[grades] grade 10 is above 9"),
        ('[grades]\n0 = "no"\n1 = ""\n', 1, "[grades] grade 1: the label must be a non-empty text"),
        (
            "k = 3\n[mystery]\nx = 1\n",
            2,
            "[mystery]: unknown section (sections: grades, judges, retrievers, variants)",
        ),
        (
            "[k]\nx = 1\n",
            1,
            "[k]: unknown section (sections: grades, judges, retrievers, variants); k = VALUE sets the option",
        ),
        ('grades = "0-2"\n', 1, "grades: expected a table [grades]"),
    ],
)
def test_bad_keys_and_values_are_one_line_errors_naming_file_line_and_key(
    tmp_path, monkeypatch, capsys, text, line, problem
):
    _write(tmp_path / "ragtui.toml", text)
    monkeypatch.chdir(tmp_path)
    message = _error(capsys, "config")
    assert message.startswith(f"ragtui: error: ragtui.toml:{line}: {problem}"), message
    # Every command reads the file the same way (eval fails before loading anything).
    assert _error(capsys, "eval") == message


def test_pyproject_errors_name_the_table(tmp_path, monkeypatch, capsys):
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.ragtui]\nk = 3\nkay = 2\n')
    monkeypatch.chdir(tmp_path)
    message = _error(capsys, "config")
    assert message.startswith("ragtui: error: pyproject.toml:6: unknown key 'kay'"), message


def test_a_control_character_in_the_file_is_shown_not_sent(tmp_path, monkeypatch, capsys):
    _write(tmp_path / "ragtui.toml", 'corpus = "docs\\u001b]0;pwned\\u0007"\n')
    monkeypatch.chdir(tmp_path)
    message = _error(capsys, "check")
    assert "\x1b" not in message and "\x07" not in message
    assert "docs\\x1b]0;pwned\\x07" in message


# ---- sections -----------------------------------------------------------------------------------


def test_sections_are_pluggable_and_get_the_files_folder(tmp_path, monkeypatch):
    seen = {}

    def parse(table, context):
        seen.update(table)
        if "url" not in table.get("mine", {}):
            raise ValueError("mine: url is required")
        return {"annotator": f"from {context.name} in {context.folder.name}"}

    monkeypatch.setitem(SECTIONS, "retrievers", parse)
    path = _write(
        tmp_path / "ragtui.toml",
        '[retrievers]\nshow = ["bm25", "mine"]\n\n[retrievers.mine]\nurl = "http://localhost/{query}"\n',
    )
    project = load_project(path)
    # ``show`` sets the option of the same name; the rest goes to the section's parser.
    assert project.values["retrievers"] == ("bm25", "mine")
    assert seen == {"mine": {"url": "http://localhost/{query}"}}
    assert project.values["annotator"] == f"from retrievers in {tmp_path.name}"
    assert project.sources["annotator"] == f"{path}:[retrievers]"
    _write(path, "[retrievers.mine]\nspec = 1\n")
    with pytest.raises(InputError) as caught:
        load_project(path)
    assert caught.value.message == f"{path}:1: [retrievers] mine: url is required"


def test_grade_scale_from_the_file_wins_over_the_golden_sets_grades_json(
    tmp_path, monkeypatch, capsys
):
    golden = tmp_path / "golden"
    _write(
        golden / "grades.json", '{"0": "off topic", "1": "on topic", "2": "useful", "3": "perfect"}'
    )
    _write(golden / "questions.jsonl", "")
    assert Settings(golden=golden).resolved().grade_scale == (
        (0, "off topic"),
        (1, "on topic"),
        (2, "useful"),
        (3, "perfect"),
    )
    monkeypatch.chdir(tmp_path)
    options = _config(capsys, "--golden", str(golden))
    assert options["grades"] == {
        "value": "0 off topic, 1 on topic, 2 useful, 3 perfect",
        "from": str(golden / "grades.json"),
    }
    _write(tmp_path / "ragtui.toml", '[grades]\n0 = "no"\n1 = "yes"\n')
    options = _config(capsys, "--golden", str(golden))
    assert options["grades"] == {"value": "0 no, 1 yes", "from": "ragtui.toml:[grades]"}
    assert Settings(golden=bundled_golden()).resolved().grade_scale == DEFAULT_GRADE_SCALE


def test_a_bad_grades_json_names_the_file(tmp_path, capsys):
    golden = tmp_path / "golden"
    _write(golden / "grades.json", '{"0": "no", "2": "yes"}')
    message = _error(capsys, "config", "--golden", str(golden))
    assert (
        message
        == f"ragtui: error: {golden / 'grades.json'}: grades must run from 0 without gaps; missing 1"
    )


# ---- init ---------------------------------------------------------------------------------------


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_init_creates_the_config_the_folders_and_one_example_question(tmp_path, capsys):
    project = tmp_path / "proj"
    assert main(["init", str(project)]) == 0
    assert _tree(project) == ["corpus", "golden", "golden/questions.jsonl", "ragtui.toml"]
    example = json.loads((project / "golden" / "questions.jsonl").read_text())
    assert set(example) == {"id", "question", "evidence", "slices"}
    text = (project / "ragtui.toml").read_text()
    # Every option is in the file: set (corpus, golden) or commented out with its help.
    for option in OPTIONS:
        assert f"\n{option.key} = " in text or f"\n# {option.key} = " in text, option.key
        assert f"# {option.help}\n" in text
    values = load_project(project / "ragtui.toml").values
    assert values == {
        "corpus": project.resolve() / "corpus",
        "golden": project.resolve() / "golden",
        "grade_scale": DEFAULT_GRADE_SCALE,
    }
    # Uncommenting any option's example line gives a file that still reads.
    for line in text.splitlines():
        if (
            line.startswith("# ")
            and " = " in line
            and line[2:].split(" = ")[0] in {o.key for o in OPTIONS}
        ):
            trial = _write(tmp_path / "trial" / "ragtui.toml", text.replace(line, line[2:]))
            key = line[2:].split(" = ")[0]
            assert key.replace("-", "_") in load_project(trial).values, line
    # Never overwrites.
    assert main(["init", str(project)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_init_with_the_handbook_evaluates_from_its_folder(tmp_path, monkeypatch, capsys, cache_dir):
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    project = tmp_path / "proj"
    assert main(["init", str(project), "--handbook"]) == 0
    assert sorted(p.name for p in (project / "corpus").iterdir()) == sorted(
        p.name for p in bundled_corpus().iterdir()
    )
    capsys.readouterr()
    monkeypatch.chdir(project / "corpus")  # a subfolder: the project file is found above it
    assert main(["eval", "--json", "--retrievers", "bm25"]) == 0
    report = json.loads(capsys.readouterr().out)
    first_bundled = json.loads((bundled_golden() / "questions.jsonl").read_text().splitlines()[0])
    assert report["questions"] == 1
    assert list(report["retrievers"]["bm25"]["per_question"]) == [first_bundled["id"]]
    ws = Workspace.load(Settings(corpus=project / "corpus", golden=project / "golden"))
    assert report["chunks"] == len(ws.data.chunks)


def test_init_from_beir(tmp_path, monkeypatch, capsys):
    beir = tmp_path / "beir"
    _write(
        beir / "corpus.jsonl",
        '{"_id": "d1", "title": "", "text": "pumps move water"}\n{"_id": "d2", "text": "dikes hold water"}\n',
    )
    _write(beir / "queries.jsonl", '{"_id": "1", "text": "what moves water"}\n')
    _write(beir / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n")
    project = tmp_path / "proj"
    assert main(["init", str(project), "--from-beir", str(beir)]) == 0
    assert _tree(project) == ["golden", "ragtui.toml"]
    values = load_project(project / "ragtui.toml").values
    assert values["beir"] == beir.resolve()
    assert values["golden"] == project.resolve() / "golden"
    monkeypatch.chdir(project)
    capsys.readouterr()
    assert main(["eval", "--json", "--retrievers", "bm25"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunks"] == 2 and report["retrievers"]["bm25"]["recall"] == 1.0
    # A folder that is not a BEIR dataset is refused before anything is written.
    (beir / "queries.jsonl").unlink()
    assert main(["init", str(tmp_path / "p2"), "--from-beir", str(beir)]) == 2
    assert "queries.jsonl: file not found" in capsys.readouterr().err
    assert not (tmp_path / "p2").exists()


def test_the_mini_set_runs_from_a_project_file_in_a_subprocess(tmp_path, cache_dir):
    # The real command line in a clean working folder: the file alone chooses the data.
    _write(
        tmp_path / "ragtui.toml",
        f'corpus = "{MINI / "corpus"}"\ngolden = "{MINI / "golden"}"\nchunk-size = {MINI_CHUNK_SIZE}\n'
        'retrievers = "bm25"\nk = 2\n',
    )
    env = {"RAGTUI_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "ragtui", "eval"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith("; 9 chunks; k=2, depth=10; grades: human")
    assert [line.split()[0] for line in done.stdout.splitlines()[2:]] == ["bm25"]


# ---- a project file runs only what you meant ------------------------------------------------------

#: A project two folders above the working folder whose plugin is ``os.system``: if the file is
#: read and its plugin run, the command writes a marker file.
HOSTILE_PROJECT = """corpus = "corpus"
golden = "golden"
chunk-size = {chunk_size}

[retrievers.p]
factory = "os:system"
options = {{ command = "touch {marker}" }}
"""


def _hostile(mini: Path) -> tuple[Path, Path, Path]:
    """The hostile ragtui.toml in ``mini``, a working folder two levels below it, and the marker."""
    marker = mini / "MARKER"
    project = _write(
        mini / "ragtui.toml", HOSTILE_PROJECT.format(chunk_size=MINI_CHUNK_SIZE, marker=marker)
    )
    deep = mini / "a" / "b"
    deep.mkdir(parents=True)
    return project, deep, marker


@pytest.mark.parametrize("command", [["check"], ["eval", "--retrievers", "bm25"], ["config"]])
def test_a_world_writable_project_file_two_folders_up_is_refused(
    mini, monkeypatch, capsys, cli_cache_env, command
):
    project, deep, marker = _hostile(mini)
    project.chmod(0o666)
    monkeypatch.chdir(deep)
    line = _error(capsys, *command)
    assert line == (
        f"ragtui: error: {project}: refused: writable by every user (mode 0666); a project file "
        f"can run code (plugins), so only its owner may change it: chmod go-w {project}"
    )
    assert not marker.exists()


def test_the_hostile_project_in_a_subprocess_runs_nothing(mini, cache_dir):
    # The real command line, as the issue ran it: ragtui eval two folders below the file.
    project, deep, marker = _hostile(mini)
    project.chmod(0o666)
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "ragtui", "eval"], capture_output=True, text=True, cwd=deep, env=env
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"ragtui: error: {project}: refused: writable by every user")
    assert len(done.stderr.splitlines()) == 1
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_project_file_owned_by_another_user_or_writable_by_a_group_is_refused(
    mini, monkeypatch, capsys
):
    project, deep, marker = _hostile(mini)
    monkeypatch.chdir(deep)
    monkeypatch.delenv("SUDO_UID", raising=False)
    os.chown(project, 65534, -1)  # nobody
    line = _error(capsys, "check")
    assert line == (
        f"ragtui: error: {project}: refused: owned by nobody (uid 65534), not by you (root); a "
        "project file can run code (plugins), so ragtui reads only yours: if you trust it, "
        f"chown root {project} (or --no-project to read none)"
    )
    os.chown(project, 1234, -1)  # a user without a name
    assert "refused: owned by uid 1234, not by you (root);" in _error(capsys, "check")
    os.chown(project, 65534, -1)
    # --project FILE is checked the same way; --no-project reads none.
    assert _error(capsys, "config", "--project", str(project)) == line
    assert main(["config", "--no-project", "--json"]) == 0
    # Root by sudo reads the files of the user who ran sudo, as git does.
    monkeypatch.setenv("SUDO_UID", "65534")
    assert main(["config", "--json"]) == 0
    monkeypatch.delenv("SUDO_UID")
    capsys.readouterr()
    os.chown(project, 0, 65534)  # root's again, in group nogroup
    project.chmod(0o664)
    assert _error(capsys, "config").endswith(
        f"refused: writable by its group (mode 0664); a project file can run code (plugins), so "
        f"only its owner may change it: chmod go-w {project}"
    )
    # A user private group (named as the user, holding only the user) is the user: accepted.
    os.chown(project, 0, 0)
    assert main(["config", "--json"]) == 0
    assert not marker.exists()


#: A plugin module whose import leaves a marker: imported means run.
MARKING_PLUGIN = """import pathlib

pathlib.Path({marker!r}).write_text("imported")


def make():
    return lambda question, depth: []
"""


def test_a_project_plugin_is_imported_only_when_its_retriever_is_used(
    mini, monkeypatch, capsys, cli_cache_env
):
    marker = mini / "IMPORTED"
    site = mini / "site"
    _write(site / "marking.py", MARKING_PLUGIN.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(site))
    _write(
        mini / "ragtui.toml",
        f'corpus = "corpus"\ngolden = "golden"\nchunk-size = {MINI_CHUNK_SIZE}\n\n'
        '[retrievers.p]\nfactory = "marking:make"\n',
    )
    monkeypatch.chdir(mini)
    try:
        for argv in (["check"], ["config"], ["eval", "--retrievers", "bm25"], ["retire", "m01"]):
            assert main(argv) in (0, 1), argv
            assert not marker.exists(), argv
            assert "marking" not in sys.modules, argv
        assert main(["retire", "m01", "--restore"]) == 0
        capsys.readouterr()
        # Named, it is used: imported, built and asked (an empty answer for every question).
        assert main(["eval", "--json", "--retrievers", "bm25,p"]) == 0
        assert marker.read_text() == "imported"
        report = json.loads(capsys.readouterr().out)
        assert list(report["retrievers"]) == ["bm25", "p"]
    finally:
        sys.modules.pop("marking", None)


def test_a_project_file_in_a_parent_folder_is_named_on_stderr(tmp_path, monkeypatch, capsys):
    path = _write(tmp_path / "ragtui.toml", "k = 5\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert main(["config", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["project"] == str(path)  # stdout holds the JSON alone
    assert captured.err == (f"ragtui: using project file {path} (found in a parent folder)\n")
    # Not when it is in the working folder, nor when --project names it.
    assert main(["config", "--json", "--project", str(path)]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.chdir(tmp_path)
    assert main(["config", "--json"]) == 0
    assert capsys.readouterr().err == ""
