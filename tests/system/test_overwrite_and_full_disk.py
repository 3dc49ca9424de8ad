"""Issue 22, files: nothing overwritten without asking, labels safe on a full disk, limits and odd inputs.

Saved runs are never replaced silently (``--save`` and ``experiment`` refuse before running anything
unless ``--replace``, which keeps a backup); a failed journal write (a real ENOSPC on a tiny tmpfs when
the tests run as root, a real EFBIG from RLIMIT_FSIZE everywhere) leaves the journal byte for byte as
it was, and the app keeps the error on screen through the label poll; a UTF-8 BOM is read past in every
JSON-lines file; ``--chunks`` keeps to ``--max-file-mb``; a BEIR grade out of range is one line;
``diff`` tells regraded questions from worse ones; ``experiment`` on BEIR says the qrels judge.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragtui
from ragtui.cli import main
from ragtui.core.analysis.experiment import run_experiment
from ragtui.core.analysis.runs import RunExistsError, list_runs, load_run, save_run
from ragtui.core.data.beir import load_beir
from ragtui.core.data.chunks_file import load_chunks_file
from ragtui.core.data.golden import load_questions
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal, WriteFailedError
from ragtui.core.project import effective_settings, load_project
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import grade_of, mini_args, settings_of

BOM = b"\xef\xbb\xbf"


def _err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


# ---- saved runs: never replaced without asking ----------------------------------------------------


def test_save_over_an_existing_run_refuses_before_loading_and_replace_keeps_a_backup(
    mini: Path, capsys: pytest.CaptureFixture[str], cli_cache_env: None
) -> None:
    runs = mini / "golden" / "runs"
    assert main(["eval", "--retrievers", "bm25", "--save", "base", *mini_args(mini)]) == 0
    capsys.readouterr()
    path = runs / "base.json"
    before = path.read_bytes()

    # Refused before the data is read: with a corpus that does not exist the refusal still comes first.
    missing = ["--corpus", str(mini / "nowhere"), "--golden", str(mini / "golden")]
    assert main(["eval", "--retrievers", "bm25", "--save", "base", *missing]) == 2
    err = _err_lines(capsys)
    assert err == [
        (
            f"ragtui: error: {path}: a saved run 'base' exists; nothing was run. Give --replace "
            "to replace it (the old one is kept as a backup beside it) or choose another name"
        )
    ]
    assert path.read_bytes() == before
    assert sorted(p.name for p in runs.iterdir()) == ["base.json"]

    # --replace: the new run replaces it and the old one is kept, byte for byte, beside it.
    replace = ["--save", "base", "--replace", "--k", "2"]
    assert main(["eval", "--retrievers", "bm25", *replace, *mini_args(mini)]) == 0
    err = _err_lines(capsys)
    backups = sorted(runs.glob("base.json.*.bak"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert (
        err[-1]
        == f"ragtui: saved run 'base' to {path}; the run it replaced is kept as {backups[0]}"
    )
    assert load_run(path).k == 2 and load_run(backups[0]).k == 3
    assert list_runs(runs) == ["base"], "a backup is not listed as a saved run"
    # A backup can be diffed by its path.
    assert main(["diff", str(backups[0]), "base", "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.startswith("diff base:bm25 -> base:bm25: k=3")

    # --replace with no run of that name just saves.
    assert (
        main(["eval", "--retrievers", "bm25", "--save", "new", "--replace", *mini_args(mini)]) == 0
    )
    assert _err_lines(capsys)[-1] == f"ragtui: saved run 'new' to {runs / 'new.json'}"


def test_save_run_in_the_core_refuses_an_existing_name(
    mini_settings: Settings, tmp_path: Path
) -> None:
    ws = Workspace.load(dataclasses.replace(mini_settings, retrievers=("bm25",)))
    path = save_run(ws, "api", tmp_path)
    before = path.read_bytes()
    with pytest.raises(RunExistsError, match="a saved run 'api' exists"):
        save_run(ws, "api", tmp_path)
    assert path.read_bytes() == before
    assert save_run(ws, "api", tmp_path, replace=True) == path
    assert [p.read_bytes() for p in tmp_path.glob("api.json.*.bak")] == [before]


PROJECT = """
corpus = "corpus"
golden = "golden"
chunk-size = 48
retrievers = "bm25"

[variants.baseline]

[variants.c24]
chunk-size = 24
"""


def test_an_experiment_variant_named_like_a_saved_run_is_refused_before_running(
    mini: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli_cache_env: None,
) -> None:
    """The committed CI baseline (docs/project.md) survives a variant called ``baseline``."""
    monkeypatch.chdir(mini)
    assert main(["eval", "--retrievers", "bm25", "--save", "baseline", *mini_args(mini)]) == 0
    capsys.readouterr()
    runs = mini / "golden" / "runs"
    committed = (runs / "baseline.json").read_bytes()

    # Nothing is loaded before the refusal: a project whose corpus is missing gets the same line.
    (mini / "ragtui.toml").write_text(PROJECT.replace('corpus = "corpus"', 'corpus = "nowhere"'))
    started = time.monotonic()
    assert main(["experiment"]) == 2
    assert time.monotonic() - started < 5
    assert _err_lines(capsys) == [
        (
            f"ragtui: error: {runs / 'baseline.json'}: variant 'baseline' would replace the saved "
            "run of that name; nothing was run. Give --replace to replace it (the old one is kept "
            "as a backup beside it), --runs-dir DIR to save elsewhere, or --no-save"
        )
    ]
    assert (runs / "baseline.json").read_bytes() == committed
    assert sorted(p.name for p in runs.iterdir()) == ["baseline.json"]

    (mini / "ragtui.toml").write_text(PROJECT)
    # --no-save and another --runs-dir run without touching it.
    assert main(["experiment", "--no-save", "--json"]) == 0
    assert main(["experiment", "--runs-dir", str(mini / "elsewhere"), "--json"]) == 0
    capsys.readouterr()
    assert (runs / "baseline.json").read_bytes() == committed

    assert main(["experiment", "--replace", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    backup = Path(body["variants"]["baseline"]["run_backup"])
    assert backup.parent == runs and backup.read_bytes() == committed
    assert body["variants"]["c24"]["run_backup"] is None
    assert load_run(runs / "baseline.json").manifest["chunk_size"] == 48


# ---- the label journal on a full disk -------------------------------------------------------------


#: tmpfs allocates whole memory pages.
PAGE = os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 16 pages (mounting needs root: skipped otherwise; the RLIMIT_FSIZE test runs anywhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={16 * PAGE}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fill the file system to the last byte with one file; returns it."""
    filler = disk / "filler"
    code = None
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * PAGE)
        except OSError as full:
            code = full.errno
    assert code == errno.ENOSPC
    return filler


def _journal_near_a_page_end(path: Path, room: int = 30) -> bytes:
    """A journal of one label and a blank padding line, ending ``room`` bytes before a page
    boundary: the next line's first bytes fit, the rest needs a page a full disk does not have."""
    first = LabelJournal(path, annotator="before")
    first.set_grade("m01", "ferry.md#0", 1, "abc")
    first.close()
    size = path.stat().st_size
    pad = (PAGE - room - size - 1) % PAGE
    with open(path, "ab") as out:
        out.write(b" " * pad + b"\n")
    data = path.read_bytes()
    assert len(data) % PAGE == PAGE - room
    return data


def test_enospc_leaves_the_journal_as_it_was_and_a_later_grade_works(tiny_disk: Path) -> None:
    path = tiny_disk / "labels.jsonl"
    before = _journal_near_a_page_end(path)
    journal = LabelJournal(path, annotator="tester")
    filler = _fill(tiny_disk)
    with pytest.raises(WriteFailedError) as failed:
        journal.set_grade("m02", "ferry.md#1", 2, "def")
    message = str(failed.value)
    assert message == (
        f"{path}: cannot write the label journal (No space left on device); the journal was left "
        "as it was and the change was not made"
    )
    assert "\n" not in message
    assert path.read_bytes() == before, "no partial line"
    assert grade_of(journal, "m02", "ferry.md#1") is None and not journal.can_undo
    assert not (tiny_disk / "labels.jsonl.torn").exists()
    assert journal.refresh() == [] and journal.take_warnings() == []
    # Room again: the next grade is one whole line after the old ones, read back by a new reader.
    filler.unlink()
    journal.set_grade("m02", "ferry.md#1", 2, "def")
    assert path.read_bytes().startswith(before)
    again = LabelJournal(path)
    assert grade_of(again, "m02", "ferry.md#1") == 2 and grade_of(again, "m01", "ferry.md#0") == 1
    assert again.warnings == []


_GRADE_UNDER_A_LIMIT = """
import resource, sys
from ragtui.core.labelling.journal import LabelJournal
journal = LabelJournal(sys.argv[1], annotator="tester")
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    journal.set_grade("m02", "ferry.md#1", 2, "def")
except OSError as exc:
    print(type(exc).__name__, exc)
    sys.exit(3)
"""


def test_a_failed_write_efbig_leaves_the_journal_as_it_was(tmp_path: Path) -> None:
    """RLIMIT_FSIZE: the kernel writes the first 20 bytes of the line, then refuses the rest (EFBIG)."""
    path = tmp_path / "labels.jsonl"
    first = LabelJournal(path, annotator="before")
    first.set_grade("m01", "ferry.md#0", 1, "abc")
    first.close()
    before = path.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(ragtui.__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _GRADE_UNDER_A_LIMIT, str(path), str(len(before) + 20)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == (
        f"WriteFailedError {path}: cannot write the label journal (File too large); the journal "
        "was left as it was and the change was not made\n"
    )
    assert path.read_bytes() == before
    journal = LabelJournal(path, annotator="tester")
    journal.set_grade("m02", "ferry.md#1", 2, "def")
    assert grade_of(LabelJournal(path), "m02", "ferry.md#1") == 2
    assert LabelJournal(path).warnings == []


def test_the_app_keeps_a_failed_grades_error_through_the_label_poll(
    mini_settings: Settings, tiny_disk: Path, tmp_path: Path
) -> None:
    from tests.app.test_tui import make_app, run_async, wait_ready

    golden = tiny_disk / "golden"
    shutil.copytree(Path(mini_settings.golden), golden)
    settings = dataclasses.replace(mini_settings, golden=golden, cache_dir=tmp_path / "cache")

    @run_async
    async def scenario() -> None:
        app = make_app(settings)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_ready(pilot)
            journal = golden / "labels.jsonl"
            _journal_near_a_page_end(journal)
            app.poll_labels()
            await pilot.pause()
            await pilot.press("tab")
            await pilot.pause()
            before = journal.read_bytes()
            filler = _fill(tiny_disk)
            await pilot.press("2")
            await pilot.pause()
            assert app.status.error and "No space left on device" in app.status.text
            shown = app.status
            assert journal.read_bytes() == before
            # Two polls (one a second) pass without a key: the error stays.
            await pilot.pause(2.2)
            assert app.status is shown
            # Another session grades once there is room: the poll applies it, the error stays.
            filler.unlink()
            ws = app.workspace
            assert ws is not None
            other = LabelJournal(journal, annotator="other")
            other.set_grade("m03", "library.md#0", 0, ws.passages.by_id["library.md#0"].sha1)
            other.close()
            app.poll_labels()
            await pilot.pause()
            assert app.status is shown
            assert any(s.text.startswith("1 label(s) from another session") for s in app.status_log)
            # The next key clears it.
            await pilot.press("down")
            await pilot.pause()
            assert not app.status.error

    scenario()


# ---- a UTF-8 byte-order mark before the first line --------------------------------------------------


def test_a_bom_before_the_journals_first_line_keeps_that_label(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    line = b'{"question":"m01","chunk":"ferry.md#0","grade":2,"chunk_sha1":"abc","at":"t","annotator":"ana"}'
    second = b'{"question":"m02","chunk":"ferry.md#1","grade":0,"chunk_sha1":"def","at":"t","annotator":"ana"}'
    path.write_bytes(BOM + line + b"\n" + second + b"\n")
    journal = LabelJournal(path, annotator="tester")
    assert (
        grade_of(journal, "m01", "ferry.md#0") == 2 and grade_of(journal, "m02", "ferry.md#1") == 0
    )
    assert journal.warnings == [] and journal.bad_lines == []
    # A single BOM line without its newline (an editor's save) is a whole line, not a torn one.
    path.write_bytes(BOM + line)
    journal = LabelJournal(path, annotator="tester")
    assert grade_of(journal, "m01", "ferry.md#0") == 2 and journal.warnings == []
    journal.set_grade("m03", "library.md#0", 1, "ghi")
    assert not (tmp_path / "labels.jsonl.torn").exists()
    again = LabelJournal(path)
    assert grade_of(again, "m01", "ferry.md#0") == 2 and grade_of(again, "m03", "library.md#0") == 1
    assert again.warnings == []
    # Compaction writes it back without the mark (the old file is the backup).
    assert again.compact() is not None
    assert not path.read_bytes().startswith(BOM)
    assert grade_of(LabelJournal(path), "m01", "ferry.md#0") == 2


def test_a_bom_is_read_past_in_every_json_lines_file(mini: Path, tmp_path: Path) -> None:
    questions = mini / "golden" / "questions.jsonl"
    raw = questions.read_bytes()
    questions.write_bytes(BOM + raw)
    assert load_questions(questions) == load_questions(questions, raw=raw)
    assert load_questions(questions)[0].id == "m01"

    chunks = tmp_path / "chunks.jsonl"
    chunks.write_bytes(
        BOM + b'{"id":"a#0","text":"one","doc":"a"}\n{"id":"a#1","text":"two","doc":"a"}\n'
    )
    assert [c.id for c in load_chunks_file(chunks).chunks] == ["a#0", "a#1"]

    beir = _beir(tmp_path / "beir")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (beir / name).write_bytes(BOM + (beir / name).read_bytes())
    corpus, qs, qrels = load_beir(beir)
    assert [d.path for d in corpus.documents] == ["d1", "d2", "d3"]
    assert [q.id for q in qs] == ["q1", "q2"] and qrels == {"q1": {"d1": 1}, "q2": {"d2": 2}}

    run_path = tmp_path / "runs" / "bom.json"
    run_path.parent.mkdir()
    ws = Workspace.load(settings_of(mini, retrievers=("bm25",), cache_dir=tmp_path / "cache"))
    saved = save_run(ws, "bom", run_path.parent)
    saved.write_bytes(BOM + saved.read_bytes())
    assert load_run(saved).retrievers == ["bm25"]


# ---- --chunks keeps to --max-file-mb ---------------------------------------------------------------


def test_a_chunks_file_over_the_limit_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as out:  # 1 GiB, one line, sparse: nothing is read if it is refused first
        out.truncate(1 << 30)
    started = time.monotonic()
    with pytest.raises(InputError) as refused:
        load_chunks_file(big)
    assert refused.value.message == (
        f"{big}: file is 1024 MB, over the limit of 20 MB for a chunks file (split it, or raise "
        "--max-file-mb)"
    )
    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"id":"a#0","text":"' + b"x" * 2000 + b'","doc":"a"}\n')
    with pytest.raises(InputError, match=r"file is 2,033 bytes, over the limit of 1,000 bytes"):
        load_chunks_file(small, max_file_bytes=1000)
    assert [c.id for c in load_chunks_file(small, max_file_bytes=3000).chunks] == ["a#0"]

    assert (
        main(["eval", "--chunks", str(big), "--golden", str(tmp_path), "--retrievers", "bm25"]) == 2
    )
    assert capsys.readouterr().err == (
        f"ragtui: error: {big}: file is 1024 MB, over the limit of 20 MB for a chunks file (split "
        "it, or raise --max-file-mb)\n"
    )
    assert time.monotonic() - started < 10


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_a_chunks_file_growing_past_the_limit_while_read_is_refused_at_that_line() -> None:
    """/proc files say they are empty and then give lines: the limit holds on what is read."""
    maps = Path("/proc/self/maps")
    assert maps.stat().st_size == 0
    with pytest.raises(InputError) as refused:
        load_chunks_file(maps, max_file_bytes=300)
    where, line, problem = refused.value.message.split(":", 2)
    assert where == str(maps) and 2 <= int(line) <= 8
    assert problem == (
        " the file grew while read, over the limit of 300 bytes for a chunks file (split it, or "
        "raise --max-file-mb)"
    )


# ---- BEIR qrels grades out of range ----------------------------------------------------------------


def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "text": "the ferry costs five euro"}\n'
        '{"_id": "d2", "text": "the library opens at nine"}\n'
        '{"_id": "d3", "text": "the market sells fish on friday"}\n'
    )
    (folder / "queries.jsonl").write_text(
        '{"_id": "q1", "text": "ferry price"}\n{"_id": "q2", "text": "library opening hours"}\n'
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\n")
    return folder


@pytest.mark.parametrize(
    ("score", "problem"),
    [
        ("99999999999999999999", "score '99999999999999999999' is out of range"),
        ("-99999999999999999999", "score '-99999999999999999999' is out of range"),
        ("2147483648", "score '2147483648' is out of range"),
        ("9" * 5000, "score '" + "9" * 21 + "...' is out of range"),
        ("1.5", "score '1.5' is not a whole number"),
    ],
    ids=["20 digits", "negative", "2**31", "5000 digits", "fraction"],
)
def test_a_beir_grade_out_of_range_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], score: str, problem: str
) -> None:
    beir = _beir(tmp_path / "beir")
    (beir / "qrels" / "test.tsv").write_text(
        f"query-id\tcorpus-id\tscore\nq1\td1\t{score}\nq2\td2\t2\n"
    )
    assert main(["eval", "--beir", str(beir), "--retrievers", "bm25"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"ragtui: error: {beir / 'qrels' / 'test.tsv'}:2: {problem}")
    assert len(err) < 300


def test_the_largest_beir_grades_are_read(tmp_path: Path) -> None:
    beir = _beir(tmp_path / "beir")
    (beir / "qrels" / "test.tsv").write_text("q1\td1\t2147483647\nq2\td2\t-0002147483647\n")
    _, _, qrels = load_beir(beir)
    assert qrels == {"q1": {"d1": 2147483647}, "q2": {"d2": -2147483647}}


# ---- diff: hand grades that differ -----------------------------------------------------------------


def test_diff_says_hand_grades_differ_and_calls_no_unchanged_ranking_worse(
    mini_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = dataclasses.replace(mini_settings, retrievers=("bm25",))
    runs = tmp_path / "runs"
    save_run(Workspace.load(settings), "a", runs)
    ws = Workspace.load(settings)
    top = [cid for cid, _ in ws.ranking("bm25", "m01")]
    outside = next(c.id for c in ws.data.chunks if c.id not in top[:3])
    ws.set_grade("m01", outside, 2)  # a relevant chunk bm25 ranks below k: nDCG@3 falls
    ws.set_grade("m02", next(cid for cid, _ in ws.ranking("bm25", "m02")), 0)
    save_run(Workspace.load(settings), "b", runs)

    assert main(["diff", "a", "b", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "hand grades differ between the runs: 2 question(s) judged with other grades (m01, m02); "
        "ranked the same, a change is the grades' ('regraded'), not better or worse retrieval"
    ) in out
    assert "0 worse, 0 better, 2 regraded (same ranking, other grades), 4 unchanged" in out
    assert all("(grades only)" in line for line in out if line.startswith(("m01 ", "m02 ")))

    assert main(["diff", "a", "b", "--runs-dir", str(runs), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["regraded"] == ["m01", "m02"] and body["labels_differ"] is True
    by_question = {c["question"]: c for c in body["changes"]}
    assert by_question["m01"]["direction"] == by_question["m02"]["direction"] == "regraded"
    assert by_question["m01"]["same_ranking"] and by_question["m01"]["regraded"]
    assert by_question["m03"]["direction"] == "same" and not by_question["m03"]["regraded"]

    # Same run on both sides: no grades differ, nothing moved.
    assert main(["diff", "b", "b", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "hand grades differ" not in out and "0 worse, 0 better, 6 unchanged" in out


# ---- experiment on BEIR data ------------------------------------------------------------------------


def test_an_experiment_on_beir_data_says_the_qrels_judge(tmp_path: Path, cache_dir: Path) -> None:
    _beir(tmp_path / "beir")
    (tmp_path / "ragtui.toml").write_text(
        'beir = "beir"\nretrievers = "bm25"\n\n[variants.whole]\n\n[variants.c4]\nchunk-size = 4\n'
    )
    loaded = load_project(tmp_path / "ragtui.toml")
    settings = dataclasses.replace(effective_settings({}, loaded).settings, cache_dir=cache_dir)
    report = run_experiment(settings, save=False).report()
    notes = [str(n.text) for section in report.sections for n in section.notes]
    judged = [n for n in notes if "judged by" in n]
    qrels = tmp_path / "beir" / "qrels" / "test.tsv"
    assert judged == [f"every variant is judged by the BEIR qrels ({qrels}) alone (no hand grades)"]
    assert not any("evidence rule" in n for n in notes)


def test_max_file_mb_applies_to_the_chunks_file(tmp_path, capsys):
    """--max-file-mb bounds --chunks as it bounds corpus files, both ways."""
    from ragtui.cli import main

    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text(
        "".join(
            json.dumps({"id": f"c{i}", "text": "word " * 100, "doc": "d"}) + "\n" for i in range(4)
        )
    )
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "question": "word?", "evidence": "word word"}) + "\n"
    )
    args = ["eval", "--chunks", str(chunks), "--golden", str(golden), "--retrievers", "bm25"]
    assert main([*args, "--max-file-mb", "0.001"]) == 2
    err = capsys.readouterr().err
    assert str(chunks) in err and len(err.strip().splitlines()) == 1
    assert main([*args, "--max-file-mb", "1"]) == 0
