"""Reliability (issue 6): no acknowledged label lost, two writers, compaction, bad input, security.

The figures these tests produce are listed in docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
from tests.conftest import ROOT, grade_of, mini_args, settings_of

# ---- 1. crash safety: SIGKILL during bursts of grade changes -------------------------------------

BURST = 1000
KILLS = 20

#: The child: 1,000 grade changes through the core API, each printed (flushed) only once
#: ``set_grade`` has returned. The chunk hash carries the change's number, so the parent can find
#: every acknowledged change in the journal, in order.
_BURST_CHILD = """
import sys
from ragtui.core.labelling.journal import LabelJournal

path, round_no, burst = sys.argv[1], sys.argv[2], int(sys.argv[3])
journal = LabelJournal(path, annotator="burst")
out = sys.stdout
for i in range(burst):
    grade = None if i % 11 == 10 else i % 10
    journal.set_grade(f"r{round_no}", f"doc.md#{i % 50}", grade, f"{i:040x}")
    out.write(f"{i}\\n")
    out.flush()
"""


def _round_lines(journal: LabelJournal, round_no: int) -> list[int]:
    """The change numbers of one round's lines, in journal order."""
    return [int(lab.chunk_sha1, 16) for lab in journal.history if lab.question == f"r{round_no}"]


def _expected_state(changes: int) -> dict[str, int]:
    """The grades the first ``changes`` changes of a burst leave (last line wins, None removes)."""
    state: dict[str, int] = {}
    for i in range(changes):
        chunk = f"doc.md#{i % 50}"
        if i % 11 == 10:
            state.pop(chunk, None)
        else:
            state[chunk] = i % 10
    return state


def _torn_line(rng: random.Random) -> bytes:
    """A prefix of a real journal line, as a writer killed inside ``write`` would leave."""
    line = orjson.dumps(
        {"question": "torn", "chunk": "doc.md#0", "grade": 3, "chunk_sha1": "0" * 40, "at": "x"}
    )
    return line[: rng.randrange(1, len(line))]


def test_sigkill_during_bursts_loses_no_acknowledged_label(tmp_path):
    rng = random.Random(6)
    path = tmp_path / "labels.jsonl"
    figures = {
        "kills": 0,
        "acknowledged": 0,
        "lost": 0,
        "torn_simulated": 0,
        "torn_natural": 0,
        "repaired": 0,
    }
    pending_torn = False
    tails = 0  # rounds that ended with a torn last line: a kill inside a write, or one added here
    for round_no in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", _BURST_CHILD, str(path), str(round_no), str(BURST)],
            stdout=subprocess.PIPE,
            cwd=ROOT,
        )
        assert child.stdout is not None
        target = rng.randrange(0, BURST - 50)
        acked = 0
        while acked <= target:
            if not child.stdout.readline():
                break
            acked += 1
        time.sleep(rng.uniform(0, 0.003))
        child.send_signal(signal.SIGKILL)
        rest = child.stdout.read()  # printed before the kill: acknowledged too
        child.wait()
        acked += rest.count(b"\n")
        assert child.returncode == -signal.SIGKILL, "the burst must be cut short, not finished"
        assert acked < BURST
        figures["kills"] += 1
        figures["acknowledged"] += acked

        if pending_torn:
            # The previous round left a torn line; this round's first write must have cut it. Each
            # torn last line cut is one line of the .torn file: the ones added here, and those a
            # kill inside a write left (one added after such a line joins it: one line for both).
            assert (tmp_path / "labels.jsonl.torn").read_bytes().count(b"\n") == tails
            figures["repaired"] += 1
            pending_torn = False

        journal = LabelJournal(path)  # loads, never raises
        torn_tail = bool(journal.warnings)
        if journal.warnings:
            figures["torn_natural"] += 1
            assert "torn last line" in journal.warnings[0]
        written = _round_lines(journal, round_no)
        # Every acknowledged change is there, in order; at most one more (fsynced, killed before print).
        assert written[:acked] == list(range(acked)), f"round {round_no}: acknowledged labels lost"
        assert len(written) in (acked, acked + 1)
        got = {c: lab.grade for (q, c), lab in journal.current.items() if q == f"r{round_no}"}
        assert got == _expected_state(len(written))

        if round_no % 3 == 1:
            with open(path, "ab") as fh:
                fh.write(_torn_line(rng))
            torn = LabelJournal(path)
            assert (
                len(torn.warnings) == 1
                and "torn last line (partial write) ignored" in torn.warnings[0]
            )
            assert _round_lines(torn, round_no) == written
            figures["torn_simulated"] += 1
            pending_torn = torn_tail = True
        tails += torn_tail

    final = LabelJournal(path, annotator="after")
    final.set_grade("after", "doc.md#0", 1, "f" * 40)
    reread = LabelJournal(path)
    assert not reread.warnings
    assert len(path.read_bytes().splitlines()) == len(reread.history)
    assert figures["kills"] == KILLS and figures["torn_simulated"] == figures["repaired"] + int(
        pending_torn
    )
    print(f"\nreliability figures: {figures}")


def test_a_label_is_fsynced_before_set_grade_returns(tmp_path, monkeypatch):
    """The journal's bytes are written and fsynced to the same descriptor before the call returns."""
    import ragtui.core.labelling.journal as labels_module

    events: list[tuple[str, int]] = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd, data):
        events.append(("write", fd))
        return real_write(fd, data)

    def fsync(fd):
        events.append(("fsync", fd))
        return real_fsync(fd)

    monkeypatch.setattr(labels_module.os, "write", write)
    monkeypatch.setattr(labels_module.os, "fsync", fsync)
    journal = LabelJournal(tmp_path / "labels.jsonl")
    journal.set_grade("q1", "a#0", 2, "s")
    writes = [fd for kind, fd in events if kind == "write"]
    assert writes, "the label was not written"
    last_write = max(i for i, (kind, _) in enumerate(events) if kind == "write")
    assert ("fsync", writes[-1]) in events[last_write + 1 :], (
        "the label was not fsynced before set_grade returned"
    )


# ---- 2. two processes, one journal -----------------------------------------------------------------

APPENDS = 1000

#: No child process of these tests may outlive this many seconds (a failure must not hang the run).
CHILD_TIMEOUT = 60


def _run_children(ctx, targets) -> list[int | None]:
    """Start daemon processes, wait for them (bounded), kill stragglers; returns their exit codes."""
    children = [ctx.Process(target=target, args=args, daemon=True) for target, args in targets]
    try:
        for child in children:
            child.start()
        deadline = time.monotonic() + CHILD_TIMEOUT
        for child in children:
            child.join(max(0.0, deadline - time.monotonic()))
        return [child.exitcode for child in children]
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join(5)


def _append_many(path: str, who: str, count: int, barrier) -> None:
    journal = LabelJournal(path, annotator=who)
    barrier.wait(CHILD_TIMEOUT)
    for i in range(count):
        journal.set_grade(who, f"doc.md#{i}", i % 10, "s")


def test_two_processes_appending_at_once_lose_no_line(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    path = tmp_path / "labels.jsonl"
    barrier = ctx.Barrier(2)
    codes = _run_children(
        ctx, [(_append_many, (str(path), who, APPENDS, barrier)) for who in ("w1", "w2")]
    )
    assert codes == [0, 0]
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2 * APPENDS
    journal = LabelJournal(path)
    assert not journal.warnings
    for who in ("w1", "w2"):
        assert {c: lab.grade for (q, c), lab in journal.current.items() if q == who} == {
            f"doc.md#{i}": i % 10 for i in range(APPENDS)
        }
    order = [lab.question for lab in journal.history]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches > 0, "the two writers never overlapped: the test proved nothing"
    print(f"\ntwo writers: {len(lines)} lines, {switches} switches between writers")


def _append_then_signal(path: str, done, barrier) -> None:
    try:
        journal = LabelJournal(path, annotator="writer")
        barrier.wait(CHILD_TIMEOUT)
        for i in range(APPENDS):
            journal.set_grade("writer", f"doc.md#{i % 400}", i % 10, "s")
    finally:
        done.set()


def _compact_while(path: str, done, count, barrier) -> None:
    journal = LabelJournal(path, annotator="compactor")
    barrier.wait(CHILD_TIMEOUT)
    n = 0
    deadline = time.monotonic() + CHILD_TIMEOUT
    while (not done.is_set() or n < 3) and time.monotonic() < deadline:
        journal.set_grade("compactor", f"doc.md#{n}", n % 10, "s")
        journal.compact()
        n += 1
        count.value = n


def test_compaction_while_another_process_appends_loses_nothing(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    path = tmp_path / "labels.jsonl"
    LabelJournal(path).set_grade("seed", "doc.md#0", 1, "s")
    done, count, barrier = ctx.Event(), ctx.Value("i", 0), ctx.Barrier(2)
    codes = _run_children(
        ctx,
        [
            (_append_then_signal, (str(path), done, barrier)),
            (_compact_while, (str(path), done, count, barrier)),
        ],
    )
    assert codes == [0, 0]
    journal = LabelJournal(path)
    assert not journal.warnings
    expected = {f"doc.md#{i % 400}": i % 10 for i in range(APPENDS)}
    assert {c: lab.grade for (q, c), lab in journal.current.items() if q == "writer"} == expected
    assert {c: lab.grade for (q, c), lab in journal.current.items() if q == "compactor"} == {
        f"doc.md#{n}": n % 10 for n in range(count.value)
    }
    assert grade_of(journal, "seed", "doc.md#0") == 1
    assert not list(tmp_path.glob("*.tmp")), "a temporary file was left behind"
    # Each compaction that changed the journal kept the old one in a backup of its own.
    assert 1 <= len(list(tmp_path.glob("labels.jsonl.*.bak"))) <= count.value
    assert count.value >= 3
    print(f"\ncompaction race: {count.value} compactions during {APPENDS} appends, 0 labels lost")


def _wait_blocked_in_flock(pid: int, seconds: float) -> None:
    """Wait until process ``pid`` waits for a flock (``/proc/locks`` lists a waiter after ``->``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "->" in fields and fields[fields.index("->") + 4] == str(pid):
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never waited for the lock")


def _blocked_writer(path: str, about_to_write) -> None:
    journal = LabelJournal(path, annotator="late")
    about_to_write.set()
    journal.set_grade("late", "doc.md#1", 3, "s")


def test_a_writer_waiting_on_the_old_file_writes_to_the_compacted_one(tmp_path):
    """A writer that opened the journal before a compaction renamed a new file over it must not write to the unlinked inode."""
    from ragtui.core.files import locked

    ctx = multiprocessing.get_context("spawn")
    path = tmp_path / "labels.jsonl"
    LabelJournal(path).set_grade("q", "doc.md#0", 1, "s")
    about_to_write = ctx.Event()
    writer = ctx.Process(target=_blocked_writer, args=(str(path), about_to_write), daemon=True)
    try:
        with locked(path) as fd:
            old_inode = os.fstat(fd).st_ino
            writer.start()
            assert about_to_write.wait(CHILD_TIMEOUT)
            assert writer.pid is not None
            _wait_blocked_in_flock(writer.pid, CHILD_TIMEOUT)  # on the old file
            replacement = tmp_path / "replacement"
            replacement.write_bytes(path.read_bytes())
            os.replace(replacement, path)
            assert writer.is_alive()
            old = os.dup(fd)
        writer.join(CHILD_TIMEOUT)
        assert writer.exitcode == 0
    finally:
        if writer.is_alive():
            writer.kill()
    try:
        os.lseek(old, 0, os.SEEK_SET)
        assert b"late" not in os.read(old, 1 << 16), "the label went to the unlinked file"
    finally:
        os.close(old)
    assert os.stat(path).st_ino != old_inode
    assert grade_of(LabelJournal(path), "late", "doc.md#1") == 3


def test_a_reader_is_not_fooled_by_a_reused_inode_number(tmp_path):
    """After two replacements, a new journal file may get the inode number of the one read before.

    ext4 hands a freed inode number out again at once, so a reader that remembers (dev, inode)
    takes the new file for the old one and reads it from the old offset.
    """
    path = tmp_path / "labels.jsonl"

    def line(i: int, n: int) -> bytes:
        return (
            orjson.dumps(
                {
                    "question": "q",
                    "chunk": f"a#{i}",
                    "grade": (i + n) % 10,
                    "chunk_sha1": "s" * n,
                    "at": "",
                }
            )
            + b"\n"
        )

    def replace_with(lines: range) -> None:
        """A compacted journal: each generation writes other grades, other line lengths."""
        tmp = tmp_path / "labels.jsonl.tmp"
        tmp.write_bytes(b"".join(line(i, len(lines)) for i in reversed(lines)))
        os.replace(tmp, path)

    replace_with(range(3))
    reader = LabelJournal(path)
    inodes = {os.stat(path).st_ino}
    for n in range(4, 40):
        replace_with(range(n - 1))  # two compactions by another process before the next read
        replace_with(range(n))
        inodes.add(os.stat(path).st_ino)
        reader.refresh()
        assert {c: lab.grade for (_, c), lab in reader.current.items()} == {
            f"a#{j}": (j + n) % 10 for j in range(n)
        }
    print(f"\n{len(inodes)} distinct inode numbers over 37 reads")


def test_refresh_sees_a_compaction_by_another_process(tmp_path):
    path = tmp_path / "labels.jsonl"
    mine, theirs = LabelJournal(path), LabelJournal(path)
    for grade in (1, 2, 3):
        theirs.set_grade("q1", "a#0", grade, "s")
    assert len(mine.refresh()) == 3
    theirs.compact()
    assert mine.refresh() == [], "a compaction changes no grade"
    theirs.set_grade("q1", "a#1", 4, "s")
    assert [(lab.chunk, lab.grade) for lab in mine.refresh()] == [("a#1", 4)]
    assert grade_of(mine, "q1", "a#0") == 3 and len(mine.history) == 2


def test_workspace_refresh_reports_the_questions_another_process_changed(mini_settings):
    from ragtui.core.workspace import Workspace

    mine = Workspace.load(mini_settings)
    theirs = Workspace.load(mini_settings)
    chunk = mine.data.chunks[0].id
    theirs.set_grade("m01", chunk, 0)
    assert mine.refresh_labels() == {"m01"}
    assert mine.grades.effective_grades("m01")[chunk] == 0
    assert mine.refresh_labels() == set()
    theirs.grades.labels.compact()
    assert mine.refresh_labels() == set()


def test_labels_compact_command(mini, capsys):
    golden = mini / "golden"
    journal = LabelJournal(golden / "labels.jsonl")
    for grade in (0, 1, 2):
        journal.set_grade("m01", "ferry.md#0", grade, "s")
    journal.set_grade("nosuch", "ferry.md#0", 1, "s")  # stale: kept by the compaction
    assert main(["labels", "compact", "--golden", str(golden)]) == 0
    out = capsys.readouterr().out
    (backup,) = golden.glob("labels.jsonl.*.bak")
    assert "4 lines -> 2" in out and f"backup: {backup}" in out
    assert len(backup.read_text().splitlines()) == 4
    reread = LabelJournal(golden / "labels.jsonl")
    assert (
        grade_of(reread, "m01", "ferry.md#0") == 2 and grade_of(reread, "nosuch", "ferry.md#0") == 1
    )
    assert len(reread.history) == 2


def test_labels_compact_without_a_journal_exits_2(tmp_path, capsys):
    assert main(["labels", "compact", "--golden", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ragtui: error: {tmp_path / 'labels.jsonl'}: file not found"]
    assert not (tmp_path / "labels.jsonl").exists()


# ---- 3. bad input: each gives a clear message (CLI: exit 2, one line naming file and line) ----------


_args = mini_args


def _one_line_error(capsys) -> str:
    """The CLI's stderr, which must be exactly one ``ragtui: error:`` line."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ragtui: error: ")
    return lines[0]


def test_binary_corpus_file_is_skipped_with_a_warning(mini, capsys):
    (mini / "corpus" / "image.md").write_bytes(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    )
    (mini / "corpus" / "photo.png").write_bytes(
        b"\x89PNG\x00\xff"
    )  # not a document suffix: passed over
    assert (
        main(["check", *_args(mini, "--retrievers", "bm25")]) == 1
    )  # m07's missing evidence, as before
    captured = capsys.readouterr()
    assert (
        "ragtui: warning: " in captured.err
        and "image.md: binary file (NUL bytes), skipped" in captured.err
    )
    assert "photo.png" not in captured.err
    assert "3 documents" in captured.out


def test_a_50_mb_corpus_file_is_refused_unless_the_limit_is_raised(mini, capsys):
    big = mini / "corpus" / "dump.txt"
    with open(big, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: 50 MB of NUL bytes, written in no time
    assert main(["check", *_args(mini, "--retrievers", "bm25")]) == 2
    line = _one_line_error(capsys)
    assert (
        f"{big}: file is 50.0 MB, over the 20 MB limit for one document (split it, or raise --max-file-mb)"
        in line
    )
    assert main(["check", *_args(mini, "--retrievers", "bm25", "--max-file-mb", "64")]) == 1
    assert "dump.txt: binary file (NUL bytes), skipped" in capsys.readouterr().err
    assert main(["check", *_args(mini, "--retrievers", "bm25", "--max-file-mb", "0.001")]) == 2
    assert "over the 0.001 MB limit" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"id": "m09", "question": ["x"], "evidence": "y"}',
            "questions.jsonl:8: 'question' must be a non-empty string",
        ),
        ('{"id": "m09", "question": "x"}', "questions.jsonl:8: missing field 'evidence'"),
        (
            '{"id": "m09", "question": "x", "evidence": ["", " "]}',
            "questions.jsonl:8: 'evidence' must not be empty",
        ),
        (
            '{"id": "m09", "question": "x", "evidence": "y", "slices": "a"',
            "questions.jsonl:8: malformed JSON",
        ),
        (
            '{"id": "m09", "question": "x", "evidence": "y", "slices": [1]}',
            "questions.jsonl:8: 'slices' must be a string or a list",
        ),
    ],
)
def test_bad_questions_through_the_cli(mini, capsys, line, expected):
    questions = mini / "golden" / "questions.jsonl"
    assert len(questions.read_text().splitlines()) == 7
    questions.write_text(questions.read_text() + line + "\n")
    assert main(["check", *_args(mini, "--retrievers", "bm25")]) == 2
    assert expected in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '{"question": "m01", "chunk": "ferry.md#0", "grade": 10, "chunk_sha1": "", "at": ""}',
            "labels.jsonl:2: grade 10 out of range 0..9",
        ),
        (
            '{"question": "m01", "chunk": "ferry.md#0", "grade": -1, "chunk_sha1": "", "at": ""}',
            "labels.jsonl:2: grade -1 out of range 0..9",
        ),
        (
            '{"question": "m01", "chunk": "ferry.md#0", "grade": 1.5}',
            "labels.jsonl:2: 'grade' must be a whole number or null, got 1.5",
        ),
        (
            '{"question": "m01", "chunk": "ferry.md#0", "grade": true}',
            "labels.jsonl:2: 'grade' must be a whole number or null, got True",
        ),
        (
            '{"question": "m01", "chunk": 7, "grade": 1}',
            "labels.jsonl:2: 'chunk' must be a non-empty string",
        ),
    ],
)
def test_bad_label_lines_through_the_cli(mini, capsys, line, expected):
    labels = mini / "golden" / "labels.jsonl"
    labels.write_text(
        '{"question": "m01", "chunk": "ferry.md#0", "grade": 1, "chunk_sha1": "", "at": ""}\n'
        + line
        + "\n"
    )
    before = labels.read_bytes()
    # Skipped, never applied: a warning on stderr, a problem in check (exit 1), the file untouched.
    assert main(["check", *_args(mini, "--retrievers", "bm25")]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    warnings = [line for line in captured.err.splitlines() if "labels.jsonl" in line]
    assert len(warnings) == 1 and expected in warnings[0] and "(line skipped)" in warnings[0]
    problem = expected.replace(
        "labels.jsonl:2: ", "labels.jsonl:2: label line skipped, not applied: "
    )
    assert problem in captured.out
    assert labels.read_bytes() == before
    # The numbers go on without it: eval runs, and compaction refuses to drop the line.
    assert main(["eval", *_args(mini, "--retrievers", "bm25")]) == 0
    capsys.readouterr()
    assert main(["labels", "compact", "--golden", str(mini / "golden")]) == 2
    error = _one_line_error(capsys)
    assert expected in error and "fix or delete this line first" in error
    assert labels.read_bytes() == before


def test_the_core_refuses_to_write_a_label_the_loader_would_refuse(tmp_path):
    journal = LabelJournal(tmp_path / "labels.jsonl")
    for question, chunk, grade in (
        ("", "a#0", 1),
        ("q", "", 1),
        ("q", "a#0", 10),
        ("q", "a#0", -1),
        ("q", "a#0", True),
    ):
        with pytest.raises(ValueError):
            journal.set_grade(question, chunk, grade, "s")
    assert (
        not (tmp_path / "labels.jsonl").exists() or (tmp_path / "labels.jsonl").read_bytes() == b""
    )


def test_labels_for_unknown_questions_or_chunks_are_reported_stale_never_applied_never_dropped(
    mini, mini_settings, capsys
):
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(mini_settings)
    relevant = min(ws.grades.effective_grades("m01"))
    labels = mini / "golden" / "labels.jsonl"
    labels.write_text(
        '{"question": "ghost", "chunk": "ferry.md#0", "grade": 2, "chunk_sha1": "", "at": ""}\n'
        '{"question": "m01", "chunk": "ferry.md#99", "grade": 3, "chunk_sha1": "", "at": ""}\n'
        f'{{"question": "m01", "chunk": "{relevant}", "grade": 0, "chunk_sha1": "0000", "at": ""}}\n'
    )
    ws = Workspace.load(mini_settings)
    assert sorted(
        (s.label.question, s.label.chunk, s.reason) for s in ws.grades.stale_labels()
    ) == sorted(
        [
            ("ghost", "ferry.md#0", "unknown question"),
            ("m01", "ferry.md#99", "chunk not in the chunked corpus"),
            ("m01", relevant, "chunk text changed since it was labelled"),
        ]
    )
    assert ws.grades.effective_grades("m01") == {relevant: 2}, "a stale label was applied"
    ws.set_grade("m02", ws.data.chunks[0].id, 1)
    ws.grades.labels.compact()
    kept = LabelJournal(labels)
    assert grade_of(kept, "ghost", "ferry.md#0") == 2 and grade_of(kept, "m01", "ferry.md#99") == 3
    assert grade_of(kept, "m01", relevant) == 0, "a stale label was dropped"
    assert main(["check", *_args(mini, "--retrievers", "bm25")]) == 1
    out = capsys.readouterr().out
    assert "labels.jsonl:1: ghost: stale label for ferry.md#0 (grade 2): unknown question" in out


def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "Ferry", "text": "The ferry leaves at nine."}\n'
        '{"_id": "d2", "title": "Library", "text": "Books are due in three weeks."}\n'
    )
    (folder / "queries.jsonl").write_text(
        '{"_id": "1", "text": "when does the ferry leave"}\n{"_id": "2", "text": "when are books due"}\n'
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t2\n")
    return folder


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (lambda b: (b / "corpus.jsonl").unlink(), "corpus.jsonl: file not found"),
        (lambda b: (b / "queries.jsonl").unlink(), "queries.jsonl: file not found"),
        (lambda b: (b / "qrels" / "test.tsv").unlink(), "test.tsv: file not found"),
        (
            lambda b: (b / "corpus.jsonl").write_text(
                '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n'
            ),
            "corpus.jsonl:2: malformed JSON",
        ),
        (
            lambda b: (b / "corpus.jsonl").write_text(
                '{"_id": "d1", "text": "a"}\n{"text": "b"}\n'
            ),
            "corpus.jsonl:2: missing or invalid '_id'",
        ),
        (
            lambda b: (b / "queries.jsonl").write_text(
                '{"_id": "1", "text": "a"}\n{"_id": "1", "text": "b"}\n'
            ),
            "queries.jsonl:2: duplicate query id '1'",
        ),
        (
            lambda b: (b / "queries.jsonl").write_bytes(
                b'{"_id": "1", "text": "a"}\n{"_id": "2", "text": "\xff"}\n'
            ),
            "queries.jsonl:2: not UTF-8 text",
        ),
        (
            lambda b: (b / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\n"),
            "test.tsv:2: expected 3 columns",
        ),
        (
            lambda b: (b / "qrels" / "test.tsv").write_text("1\td1\thigh\n"),
            "test.tsv:1: score 'high' is not a whole number",
        ),
    ],
)
def test_broken_beir_folders_exit_2_with_one_line(tmp_path, capsys, fault, expected):
    beir = _beir(tmp_path / "beir")
    assert main(["check", "--beir", str(beir), "--retrievers", "bm25"]) == 0
    capsys.readouterr()
    fault(beir)
    assert main(["check", "--beir", str(beir), "--retrievers", "bm25"]) == 2
    assert expected in _one_line_error(capsys)


def test_a_missing_beir_folder_exits_2(tmp_path, capsys):
    assert main(["check", "--beir", str(tmp_path / "nope"), "--retrievers", "bm25"]) == 2
    assert "nope: BEIR folder not found" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("reader", "content", "expected"),
    [
        (
            "run",
            b"q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4\n",
            "run.trec: line 2: expected 6 columns (qid Q0 docid rank score tag), got 5",
        ),
        ("run", b"q1 Q0 a 1 0.5 t extra\n", "run.trec: line 1: expected 6 columns"),
        ("run", b"q1 Q0 a 1 0.5 t\n\nq1 Q0 b 2 \xff t\n", "run.trec: line 3: not UTF-8 text"),
        (
            "qrels",
            b"q1 0 a 1\nq1 0 b 1 extra\n",
            "qrels.trec: line 2: expected 4 columns (qid iter docid grade), got 5",
        ),
        ("qrels", b"q1 a 1\n", "qrels.trec: line 1: expected 4 columns"),
    ],
)
def test_trec_files_with_wrong_columns_give_one_line_input_errors(
    tmp_path, reader, content, expected
):
    from ragtui.core.data.trec import TrecFormatError, read_trec_qrels, read_trec_run

    path = tmp_path / f"{reader}.trec"
    path.write_bytes(content)
    with pytest.raises(TrecFormatError) as err:
        (read_trec_run if reader == "run" else read_trec_qrels)(path)
    # Both kinds: an InputError for the CLI (exit 2, one line), a ValueError for older callers.
    assert isinstance(err.value, InputError) and isinstance(err.value, ValueError)
    assert expected in err.value.message and "\n" not in err.value.message
    assert str(err.value) == err.value.message and err.value.message.startswith(str(path))


def test_a_missing_trec_file_is_an_input_error(tmp_path):
    from ragtui.core.data.trec import read_trec_run

    with pytest.raises(InputError, match=r"nope\.trec: file not found"):
        read_trec_run(tmp_path / "nope.trec")


def test_export_into_a_file_exits_2_with_one_line(mini, capsys):
    target = mini / "not-a-folder"
    target.write_text("x")
    assert main(["export", str(target), *_args(mini, "--retrievers", "bm25")]) == 2
    assert str(target) in _one_line_error(capsys)


# ---- a tampered or truncated embedding cache is rebuilt, never trusted -----------------------------


class _FakeEmbedder:
    """Deterministic 8-dimensional unit vectors from the text's hash; counts what it encodes."""

    def __init__(self) -> None:
        self.encoded = 0

    def encode(self, texts, progress=None):
        self.encoded += len(texts)
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], dtype=np.uint8)[:8].astype(
                np.float32
            )
            + 1
            for t in texts
        ]
        matrix = np.vstack(rows)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class _Boom:
    """Unpickling this makes a folder: proof that a pickle ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _manifest(folder: Path) -> dict:
    return orjson.loads((folder / "manifest.json").read_bytes())


def _rehash(folder: Path) -> None:
    """Make the manifest's file hash agree with vectors.npy again (a careful tamperer)."""
    manifest = _manifest(folder)
    manifest["npy_sha256"] = hashlib.sha256((folder / "vectors.npy").read_bytes()).hexdigest()
    (folder / "manifest.json").write_bytes(orjson.dumps(manifest))


def _truncate(folder: Path, marker: Path) -> None:
    npy = folder / "vectors.npy"
    npy.write_bytes(npy.read_bytes()[: npy.stat().st_size // 2])


def _flip_byte(folder: Path, marker: Path) -> None:
    npy = folder / "vectors.npy"
    data = bytearray(npy.read_bytes())
    data[-5] ^= 0xFF
    npy.write_bytes(bytes(data))


def _edit_manifest(key, value):
    def edit(folder: Path, marker: Path) -> None:
        manifest = _manifest(folder)
        manifest[key] = value(manifest[key]) if callable(value) else value
        (folder / "manifest.json").write_bytes(orjson.dumps(manifest))

    return edit


def _pickled_object_array(folder: Path, marker: Path) -> None:
    manifest = _manifest(folder)
    payload = np.empty((len(manifest["hashes"]), manifest["dim"]), dtype=object)
    payload[0, 0] = _Boom(str(marker))
    buffer = io.BytesIO()
    np.save(buffer, payload, allow_pickle=True)
    (folder / "vectors.npy").write_bytes(buffer.getvalue())
    _rehash(folder)


def _forged_header(folder: Path, marker: Path) -> None:
    """A header claiming 1e11 rows (issue 12: a MemoryError traceback before the shape was checked)."""
    npy = folder / "vectors.npy"
    raw = npy.read_bytes()
    forged = raw.replace(b"(5, 8)", b"(100000000000, 8)")
    # Keep the header's 64-byte alignment: take the longer number's room from the padding.
    header_end = raw.index(b"\n") + 1
    pad = len(forged) - len(raw)
    forged = forged[: header_end - 1] + b"\n" + forged[header_end + pad :]
    assert (
        len(forged) == len(raw) and forged[header_end - 1 - pad : header_end] == b" " * pad + b"\n"
    )
    npy.write_bytes(forged)
    _rehash(folder)


def _fifo_manifest(folder: Path, marker: Path) -> None:
    """A FIFO in place of the manifest (issue 12: every command blocked on it forever)."""
    (folder / "manifest.json").unlink()
    os.mkfifo(folder / "manifest.json")


def _nan_vectors(folder: Path, marker: Path) -> None:
    vectors = np.load(folder / "vectors.npy", allow_pickle=False)
    vectors[1, 2] = np.nan
    np.save(folder / "vectors.npy", vectors, allow_pickle=False)
    _rehash(folder)


def _float64_vectors(folder: Path, marker: Path) -> None:
    vectors = np.load(folder / "vectors.npy", allow_pickle=False).astype(np.float64)
    np.save(folder / "vectors.npy", vectors, allow_pickle=False)
    _rehash(folder)


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (_truncate, "does not match its recorded hash"),
        (_flip_byte, "does not match its recorded hash"),
        (lambda f, m: (_truncate(f, m), _rehash(f)), "bytes of data, its header says"),
        (_edit_manifest("dim", lambda d: d + 1), "does not match the manifest"),
        (_edit_manifest("hashes", lambda h: h[:-1]), "does not match the manifest"),
        (_edit_manifest("hashes", lambda h: h[:-1] + h[:1]), "duplicates"),
        (_edit_manifest("hashes", lambda h: [1] * len(h)), "not a list of SHA-1 digests"),
        (_edit_manifest("dim", "8"), "'dim' is not a positive whole number"),
        (_edit_manifest("model", "another"), "another model"),
        (lambda f, m: (f / "manifest.json").write_bytes(b'{"model": '), "ignored and rebuilt"),
        (lambda f, m: (f / "manifest.json").write_bytes(b"[]"), "not a JSON object"),
        (_pickled_object_array, "not a float32 matrix"),
        (_forged_header, "shape (100000000000, 8) does not match the manifest (5, 8)"),
        (_fifo_manifest, "manifest.json: a FIFO, not a regular file"),
        (_nan_vectors, "NaN or infinite"),
        (_float64_vectors, "not a float32 matrix"),
    ],
)
def test_a_tampered_embedding_cache_is_rebuilt_not_trusted(tmp_path, tamper, reason):
    from ragtui.core.retrieval.embeddings import EmbeddingCache

    texts = [f"text number {i}" for i in range(5)]
    embedder = _FakeEmbedder()
    good = EmbeddingCache("fake-model", tmp_path).embed(texts, embedder)
    assert embedder.encoded == 5
    cache = EmbeddingCache("fake-model", tmp_path)
    assert (
        not cache.warnings
        and np.array_equal(cache.embed(texts, embedder), good)
        and embedder.encoded == 5
    )

    marker = tmp_path / "pickle-ran"
    tamper(cache.folder, marker)
    tampered = EmbeddingCache("fake-model", tmp_path)
    assert tampered.vectors is None and tampered.rows == {}
    assert (
        len(tampered.warnings) == 1
        and "embedding cache ignored and rebuilt" in tampered.warnings[0]
    )
    assert reason in tampered.warnings[0] and "\n" not in tampered.warnings[0]
    assert np.array_equal(tampered.embed(texts, embedder), good)
    assert embedder.encoded == 10, "every text is encoded again"
    rebuilt = EmbeddingCache("fake-model", tmp_path)
    assert not rebuilt.warnings and len(rebuilt.rows) == 5
    assert not marker.exists(), "a pickle in the cache was executed"


# ---- a read-only golden/ ---------------------------------------------------------------------------


def _chmod_tree(folder: Path, file_mode: int, dir_mode: int) -> None:
    for path in folder.rglob("*"):
        os.chmod(path, file_mode)
    os.chmod(folder, dir_mode)


def test_a_read_only_golden_folder_refuses_edits_and_leaves_the_file_alone(
    mini, mini_settings, capsys
):
    from ragtui.core.workspace import Workspace

    golden = mini / "golden"
    labels = golden / "labels.jsonl"
    LabelJournal(labels).set_grade("m01", "ferry.md#0", 1, "s")
    before = labels.read_bytes()
    _chmod_tree(golden, 0o444, 0o555)
    try:
        ws = Workspace.load(mini_settings)  # reading still works
        assert ws.grades.labels.read_only and "read-only" in (
            ws.grades.labels.read_only_reason or ""
        )
        with pytest.raises(ReadOnlyError, match="the change was not made"):
            ws.set_grade("m01", ws.data.chunks[0].id, 2)
        with pytest.raises(ReadOnlyError):
            ws.grades.labels.compact()
        assert labels.read_bytes() == before
        assert sorted(p.name for p in golden.iterdir()) == ["labels.jsonl", "questions.jsonl"]
        assert main(["labels", "compact", "--golden", str(golden)]) == 2
        assert "read-only; the journal was not compacted" in _one_line_error(capsys)
        assert (
            main(["check", *_args(mini, "--retrievers", "bm25")]) == 1
        )  # reading commands still run
    finally:
        _chmod_tree(golden, 0o644, 0o755)


def test_a_read_only_folder_without_a_journal_creates_nothing(tmp_path):
    folder = tmp_path / "golden"
    folder.mkdir()
    os.chmod(folder, 0o555)
    try:
        journal = LabelJournal(folder / "labels.jsonl")
        assert (
            journal.read_only
            and journal.read_only_reason == f"{folder}: the label journal's folder is read-only"
        )
        with pytest.raises(ReadOnlyError):
            journal.set_grade("q1", "a#0", 1, "s")
        assert list(folder.iterdir()) == []
    finally:
        os.chmod(folder, 0o755)


def test_a_permission_error_from_the_system_is_a_read_only_error(tmp_path, monkeypatch):
    """A read-only mount (EROFS) or a refused open (EACCES) refuses the edit the same way."""
    import errno

    import ragtui.core.labelling.journal as labels_module

    journal = LabelJournal(tmp_path / "labels.jsonl")

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "labels.jsonl"))

    monkeypatch.setattr(labels_module.os, "open", refuse)
    with pytest.raises(ReadOnlyError, match="Read-only file system"):
        journal.set_grade("q1", "a#0", 1, "s")


# ---- 5. security -------------------------------------------------------------------------------------

PACKAGE = ROOT / "ragtui"


def _sources() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.rglob("*.py"))]


def _hits(pattern: str) -> list[str]:
    regex = re.compile(pattern, re.MULTILINE)
    return [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
        for path, text in _sources()
        for m in regex.finditer(text)
    ]


def test_no_pickle_anywhere_in_ragtui():
    assert _sources(), "no source found"
    assert (
        _hits(
            r"^\s*(?:import|from)\s+(?:pickle|cPickle|_pickle|dill|cloudpickle|joblib|shelve)\b.*$"
        )
        == []
    )
    assert _hits(r"\bpickle\.(?:loads?|Unpickler)\b") == []
    assert _hits(r"allow_pickle\s*=\s*True") == []
    torch_loads = _hits(r"\btorch\.load\((?:[^()]|\([^()]*\))*\)")
    assert [hit for hit in torch_loads if "weights_only=True" not in hit] == []


#: The one module that serves, and only when asked (``ragtui serve``, 127.0.0.1 by default:
#: tests/system/test_serve.py).
SERVE_MODULE = "ragtui/cli/serve.py"


def test_nothing_in_ragtui_opens_a_listening_socket():
    patterns = [
        r"^\s*(?:import|from)\s+(?:socket|socketserver|http\.server|xmlrpc\.server|asyncio\.base_events)\b.*$",
        r"\b(?:socketserver|HTTPServer|ThreadingHTTPServer|TCPServer|start_server|serve_forever|create_server)\b",
        r"\.(?:bind|listen)\(",
        r"\b(?:textual_serve|uvicorn|aiohttp\.web|flask|fastapi)\b",
    ]
    for pattern in patterns:
        hits = [hit for hit in _hits(pattern) if not hit.startswith(f"{SERVE_MODULE}:")]
        assert hits == [], f"a network server in ragtui/ ({pattern})"
    # The serving module (textual-serve imported at its top) is imported by the serve command
    # only: one import, inside the function that runs the commands, never at a module's top.
    importers = [
        hit
        for hit in _hits(
            r"^\s*(?:from\s+ragtui\.cli\.serve\s+import|import\s+ragtui\.cli\.serve)\b"
        )
        if not hit.startswith(f"{SERVE_MODULE}:")
    ]
    assert len(importers) == 1 and importers[0].startswith("ragtui/cli/main.py:"), importers
    line = int(importers[0].split(":")[1])
    source = (ROOT / "ragtui" / "cli" / "main.py").read_text().splitlines()[line - 1]
    assert source.startswith("    "), source  # inside a function


def test_eval_neither_binds_nor_listens(mini, cache_dir):
    """Run ``ragtui eval`` with socket.bind/listen instrumented: no call may happen."""
    code = (
        "import socket, sys\n"
        "calls = []\n"
        "def spy(name):\n"
        "    real = getattr(socket.socket, name)\n"
        "    def wrapper(self, *a, **k):\n"
        "        calls.append((name, a))\n"
        "        return real(self, *a, **k)\n"
        "    return wrapper\n"
        "socket.socket.bind = spy('bind'); socket.socket.listen = spy('listen')\n"
        "from ragtui.cli import main\n"
        f"rc = main(['eval', '--json', {', '.join(repr(a) for a in _args(mini))}])\n"
        "print('SOCKETS', rc, calls, file=sys.stderr)\n"
    )
    env = {**os.environ, "RAGTUI_CACHE_DIR": str(cache_dir)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "SOCKETS 0 []"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../x", "_.._x"),
        ("/etc/passwd", "_etc_passwd"),
        ("..\\..\\win", "_.._win"),
        ("run: bm25 (k=3)", "run__bm25__k_3_"),
        (".hidden", "hidden"),
        ("a/../../b", "a_.._.._b"),
        ("x" * 300, "x" * 120),
    ],
)
def test_file_names_from_data_stay_in_their_folder(tmp_path, name, expected):
    from ragtui.core.data.paths import safe_filename

    cleaned = safe_filename(name, ".trec")
    assert cleaned == expected + ".trec"
    assert "/" not in cleaned and "\\" not in cleaned and not cleaned.startswith(".")
    target = (tmp_path / cleaned).resolve()
    assert target.parent == tmp_path.resolve()


@pytest.mark.parametrize("name", ["", ".", "..", "...", "/", "//", "\x00", "../", "_"])
def test_file_names_that_cannot_be_made_safe_are_refused(name):
    from ragtui.core.data.paths import safe_filename

    with pytest.raises(ValueError):
        safe_filename(name)


def test_export_names_its_files_from_fixed_retriever_names(mini):
    from ragtui.core.analysis.export import export_trec
    from ragtui.core.workspace import Workspace

    ws = Workspace.load(settings_of(mini, retrievers=("bm25",)))
    out = mini / "out"
    written = export_trec(ws, out)
    assert all(path.parent == out for path in written)
    assert sorted(path.name for path in written) == ["bm25.trec", "qrels.trec"]


def test_a_bad_line_from_another_process_is_skipped_reported_once_and_read_when_fixed(tmp_path):
    """refresh() skips a hand-broken line with one warning, applies the lines around it once, and
    reads the line once it is fixed in place."""
    path = tmp_path / "labels.jsonl"
    mine = LabelJournal(path)
    mine.set_grade("q", "a#0", 1, "s")
    good = orjson.dumps({"question": "q", "chunk": "a#1", "grade": 2, "chunk_sha1": "s", "at": ""})
    with open(path, "ab") as fh:
        fh.write(good + b"\n" + b"{broken\n")
    mine.refresh()
    assert [lab.chunk for lab in mine.history] == ["a#0", "a#1"]
    (warning,) = mine.take_warnings()
    assert re.search(r"labels.jsonl:3: malformed JSON .*\(line skipped\)", warning)
    mine.refresh()
    assert [lab.chunk for lab in mine.history] == ["a#0", "a#1"] and not mine.take_warnings()
    path.write_bytes(path.read_bytes().replace(b"{broken\n", good.replace(b"a#1", b"a#2") + b"\n"))
    mine.refresh()
    assert [lab.chunk for lab in mine.history] == ["a#0", "a#1", "a#2"] and not mine.bad_lines
