"""``ragtui report`` names the data folders by path (issue 22: it printed ``data: corpus corpus``), and
``ragtui config`` shows the window stride and the annotator in force, not ``-``."""

from __future__ import annotations

import getpass
import json

import pytest

from ragtui.cli import main
from tests.conftest import CRANFIELD, MINI_CHUNK_SIZE

pytestmark = pytest.mark.usefixtures("cli_cache_env")


def _data_line(markdown: str) -> str:
    (line,) = [line for line in markdown.splitlines() if line.startswith("data: ")]
    return line


def test_the_report_names_each_data_folder_by_its_path(mini, capsys, monkeypatch, tmp_path_factory):
    monkeypatch.chdir(mini)
    argv = ["report", "--format", "markdown", "--retrievers", "bm25", "--no-project"]
    args = ["--corpus", "corpus", "--golden", "golden", "--chunk-size", str(MINI_CHUNK_SIZE)]
    assert main([*argv, *args]) == 0
    assert (
        _data_line(capsys.readouterr().out) == "data: corpus folder ./corpus, golden set ./golden"
    )
    # Outside the working folder: the absolute paths (Markdown escapes their underscores).
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    assert main([*argv, *args[:1], str(mini / "corpus"), "--golden", str(mini / "golden")]) == 0
    line = _data_line(capsys.readouterr().out).replace("\\_", "_")
    assert line == f"data: corpus folder {mini / 'corpus'}, golden set {mini / 'golden'}"


def test_the_report_names_a_beir_folder_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(CRANFIELD.parent)
    argv = ["report", "--format", "markdown", "--retrievers", "bm25", "--no-project"]
    assert main([*argv, "--beir", "cranfield"]) == 0
    assert _data_line(capsys.readouterr().out) == "data: BEIR dataset ./cranfield"


def _rows(text: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3:
            rest = parts[2]
            if "  " in rest:
                value_tail, source = rest.rsplit("  ", 1)
                rows[parts[0]] = (f"{parts[1]} {value_tail}".strip(), source.strip())
            else:
                rows[parts[0]] = (parts[1], rest.strip())
    return rows


def test_config_shows_the_window_stride_and_annotator_in_force(capsys, monkeypatch):
    monkeypatch.setenv("LOGNAME", "ana")  # getpass.getuser() reads it first
    assert getpass.getuser() == "ana"
    assert main(["config", "--no-project"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["window-stride"] == ("127", "default (half the model's window of 254 tokens)")
    assert rows["annotator"] == ("ana", "default (your login name)")
    assert main(["config", "--no-project", "--windows", "off", "--annotator", "bob"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["window-stride"] == ("-", "default (windows off)")
    assert rows["annotator"] == ("bob", "flag --annotator")
    assert main(["config", "--no-project", "--window-stride", "50", "--json"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    assert options["window-stride"] == {"value": "50", "from": "flag --window-stride"}
    assert options["annotator"] == {"value": "ana", "from": "default (your login name)"}
