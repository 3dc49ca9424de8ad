"""Labels never in the install: the bundled golden set is copied to ``$XDG_DATA_HOME/ragtui`` on the
first write (a label, an added question, a saved run, a compaction), the user is told where, later
runs read the copy, and the bundled folders are never written (their hashes do not change)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.data.paths import (
    bundled_corpus,
    bundled_golden,
    data_home,
    is_bundled,
    user_golden,
    writable_golden,
)
from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import MINI_CHUNK_SIZE


def tree_hash(folder: Path) -> str:
    """Every file's path, mode and bytes under ``folder``, and every folder's path: one hash."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(oct(path.stat().st_mode).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def fresh_home(tmp_path, monkeypatch, cache_dir):
    """An empty user data folder, the shared embedding cache, and the bundled folders' hashes before."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("RAGTUI_CACHE_DIR", str(cache_dir))
    before = (tree_hash(bundled_golden()), tree_hash(bundled_corpus()))
    yield tmp_path / "xdg" / "ragtui"
    assert (tree_hash(bundled_golden()), tree_hash(bundled_corpus())) == before, (
        "the bundled data was written to"
    )


def test_data_home_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert data_home() == tmp_path / "ragtui"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/path")  # ignored, as the XDG spec says
    assert data_home() == Path.home() / ".local" / "share" / "ragtui"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert data_home() == Path.home() / ".local" / "share" / "ragtui"


def test_a_grade_on_the_bundled_set_goes_to_the_users_copy(fresh_home):
    assert is_bundled(bundled_golden()) and not user_golden().exists()
    ws = Workspace.load(Settings(retrievers=("bm25",), annotator="t"))
    assert Path(ws.settings.golden) == bundled_golden()
    qid = ws.questions[0].id
    cid = ws.ranking("bm25", qid)[1][0]
    change = ws.set_grade(qid, cid, 1)
    copy = fresh_home / "golden"
    assert Path(ws.settings.golden) == copy == user_golden()
    assert ws.grades.labels.path == copy / "labels.jsonl"
    assert [json.loads(x)["chunk"] for x in (copy / "labels.jsonl").read_text().splitlines()] == [
        cid
    ]
    assert change.label.grade == 1
    assert ws.notices == [
        (
            f"the bundled golden set is never written: copied it to {copy}; "
            "labels, added questions and saved runs are kept there"
        )
    ]
    assert (copy / "questions.jsonl").read_bytes() == (
        bundled_golden() / "questions.jsonl"
    ).read_bytes()
    # Undo writes to the copy too; a second grade does not copy again.
    ws.notices.clear()
    ws.undo()
    ws.set_grade(qid, cid, 2)
    assert ws.notices == []
    assert len((copy / "labels.jsonl").read_text().splitlines()) == 3
    # A later run reads the copy: the hand grade applies.
    again = Workspace.load(Settings(retrievers=("bm25",)))
    assert Path(again.settings.golden) == copy
    assert again.grades.hand_grades(qid) == {cid: 2}


def test_the_journal_itself_refuses_to_write_into_the_bundled_set(fresh_home):
    journal = LabelJournal(bundled_golden() / "labels.jsonl", "t")
    with pytest.raises(ReadOnlyError, match="bundled golden set is never written"):
        journal.set_grade("q01", "x.md#0", 1, "sha")
    assert not (bundled_golden() / "labels.jsonl").exists()


def test_add_question_and_eval_save_on_the_bundled_set(fresh_home, capsys):
    copy = fresh_home / "golden"
    # A refused question copies nothing.
    assert main(["add-question", "--question", "Q?", "--evidence", "no such text anywhere"]) == 2
    assert not copy.exists()
    capsys.readouterr()
    evidence = "| PS-08 | Noordertocht | PV-17 Rietzoom | 64 |"
    assert (
        main(
            [
                "add-question",
                "--retrievers",
                "bm25",
                "--question",
                "How big is PS-08?",
                "--evidence",
                evidence,
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert f"copied it to {copy}" in captured.err
    assert captured.out.startswith(f"{copy / 'questions.jsonl'}:")
    added = json.loads((copy / "questions.jsonl").read_text().splitlines()[-1])
    assert added["question"] == "How big is PS-08?"
    # eval --save (an issue-11 defect: it wrote into the source tree's golden/runs/).
    assert main(["eval", "--retrievers", "bm25", "--save", "base"]) == 0
    assert "copied" not in capsys.readouterr().err  # the copy exists: nothing copied again
    saved = json.loads((copy / "runs" / "base.json").read_text())
    assert added["id"] in saved["questions"]
    # diff and compare find the saved run in the copy.
    assert main(["diff", "base", "base", "--retrievers", "bm25", "--retriever", "bm25"]) == 0
    assert not (bundled_golden() / "runs").exists()


def test_eval_save_first_copies_then_saves(fresh_home, capsys):
    assert main(["eval", "--retrievers", "bm25", "--save", "first"]) == 0
    err = capsys.readouterr().err
    copy = fresh_home / "golden"
    assert (
        f"copied it to {copy}" in err
        and f"saved run 'first' to {copy / 'runs' / 'first.json'}" in err
    )


def test_labels_compact_on_the_bundled_set(fresh_home, capsys):
    # Nothing to compact yet: one clear error, nothing copied.
    assert main(["labels", "compact"]) == 2
    assert "labels.jsonl: file not found" in capsys.readouterr().err
    assert not (fresh_home / "golden").exists()


def test_a_read_only_install_is_labelled_through_the_copy(tmp_path, monkeypatch, mini, cache_dir):
    # A system-wide install: the package and its bundled golden set are read-only.
    import ragtui.core.data.paths as paths

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    package = tmp_path / "site" / "ragtui"
    fake = package / "_bundled" / "golden"
    fake.parent.mkdir(parents=True)
    shutil.copytree(mini / "golden", fake)
    (fake / "labels.jsonl").unlink()
    for path in [fake / "questions.jsonl"]:
        path.chmod(0o444)
    fake.chmod(0o555)
    monkeypatch.setattr(paths, "_PACKAGE_DIR", package)
    try:
        before = tree_hash(fake)
        assert paths.is_bundled(fake)
        settings = Settings(
            corpus=mini / "corpus", golden=fake, chunk_size=MINI_CHUNK_SIZE, retrievers=("bm25",)
        )
        ws = Workspace.load(settings)
        # Grading is allowed (the app asks this before it grades): the copy will be writable.
        assert ws.grades.labels.read_only_reason is None
        qid = ws.questions[0].id
        ws.set_grade(qid, ws.ranking("bm25", qid)[0][0], 0)
        target = tmp_path / "xdg" / "ragtui" / "golden"
        assert Path(ws.settings.golden) == target
        assert (target / "questions.jsonl").stat().st_mode & 0o200 and target.stat().st_mode & 0o200
        assert len((target / "labels.jsonl").read_text().splitlines()) == 1
        assert writable_golden(fake) == (target, False)
        assert sorted(p.name for p in target.parent.iterdir()) == ["golden"]  # no staging left
        assert tree_hash(fake) == before
        # When the user's copy cannot be written either, the journal says so, naming the copy.
        target.chmod(0o555)
        (target / "labels.jsonl").chmod(0o444)
        again = Workspace.load(settings)
        assert Path(again.settings.golden) == target
        assert (
            again.grades.labels.read_only_reason
            == f"{target / 'labels.jsonl'}: the label journal is read-only"
        )
    finally:
        fake.chmod(0o755)
        (tmp_path / "xdg" / "ragtui" / "golden").chmod(0o755)
