"""Several annotators in one label journal: each one's grade kept, disputes, adjudication, compaction
that keeps everyone's labels, another writer's bad line, non-UTF-8 names, and a FIFO as the journal
(issue 13 item 6; issue 12 items 4, 5, 8 and 9, the journal's part)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from ragtui.cli import main
from ragtui.core.analysis.question_filter import QuestionFilter, filter_questions
from ragtui.core.errors import InputError
from ragtui.core.labelling.agreement import annotator_agreement, annotators, last_grades
from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
from ragtui.core.settings import Settings
from ragtui.core.workspace import SOURCE_ADJUDICATED, SOURCE_HAND, Workspace
from tests.conftest import ROOT, grade_of, mini_args


def _args(mini: Path, *extra: str) -> list[str]:
    return mini_args(mini, "--retrievers", "bm25", *extra)


def _as(settings: Settings, who: str) -> Workspace:
    """The workspace as annotator ``who`` opens it (BM25 only)."""
    return Workspace.load(replace(settings, annotator=who, retrievers=("bm25",)))


# ---- 1. each annotator's grade kept; which one counts --------------------------------------------


def test_the_grade_that_counts_adjudicated_else_only_else_latest(tmp_path):
    path = tmp_path / "labels.jsonl"
    ann, bob = LabelJournal(path, "ann"), LabelJournal(path, "bob")
    ann.set_grade("q1", "a#0", 2, "s")
    bob.refresh()
    assert grade_of(bob, "q1", "a#0") == 2 and not bob.disputed("q1", "a#0")  # the only one
    bob.set_grade("q1", "a#0", 0, "s")
    # The latest annotator's grade counts; the pair is disputed; both grades are kept.
    assert grade_of(bob, "q1", "a#0") == 0 and bob.disputed("q1", "a#0")
    pair = bob.pair("q1", "a#0")
    assert pair is not None and pair.grades() == {"ann": 2, "bob": 0}
    ann.refresh()
    ann.set_grade("q1", "a#0", 1, "s")  # ann changes her mind: still disputed, hers is latest
    assert grade_of(ann, "q1", "a#0") == 1 and ann.disputed("q1", "a#0")
    # An adjudicated grade wins, whoever writes later, and settles the dispute.
    bob.refresh()
    bob.set_grade("q1", "a#0", 2, "s", adjudicate=True)
    ann.refresh()
    ann.set_grade("q1", "a#0", 0, "s")
    assert grade_of(ann, "q1", "a#0") == 2 and not ann.disputed("q1", "a#0")
    assert ann.pair("q1", "a#0").grades() == {"ann": 0, "bob": 0}
    # Withdrawing the adjudication: the latest annotator's grade counts again (both say 0 now).
    ann.set_grade("q1", "a#0", None, "s", adjudicate=True)
    assert grade_of(ann, "q1", "a#0") == 0 and not ann.disputed("q1", "a#0")
    # A removal withdraws only that annotator's grade.
    ann.set_grade("q1", "a#0", None, "s")
    assert grade_of(ann, "q1", "a#0") == 0 and ann.pair("q1", "a#0").grades() == {"bob": 0}
    reread = LabelJournal(path, "carl")
    assert grade_of(reread, "q1", "a#0") == 0 and reread.pair("q1", "a#0").grades() == {"bob": 0}
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("adjudicated", False) for line in lines] == [
        False,
        False,
        False,
        True,
        False,
        True,
        False,
    ]


def test_an_old_journal_without_the_field_reads_as_before(tmp_path):
    """Last line wins with one annotator; lines without a name are one annotator ("")."""
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"question": "q1", "chunk": "a#0", "grade": 2, "chunk_sha1": "", "at": ""}\n'
        '{"question": "q1", "chunk": "a#0", "grade": 0, "chunk_sha1": "", "at": ""}\n'
        '{"question": "q1", "chunk": "a#1", "grade": 1, "chunk_sha1": "", "at": ""}\n'
        '{"question": "q1", "chunk": "a#1", "grade": null, "chunk_sha1": "", "at": ""}\n'
    )
    journal = LabelJournal(path)
    assert {k: v.grade for k, v in journal.current.items()} == {("q1", "a#0"): 0}
    assert not journal.disputed("q1", "a#0") and not journal.warnings
    assert all(not lab.adjudicated for lab in journal.history)


def test_undo_works_across_both_kinds(tmp_path):
    path = tmp_path / "labels.jsonl"
    LabelJournal(path, "bob").set_grade("q1", "a#0", 2, "s")
    ann = LabelJournal(path, "ann")
    ann.set_grade("q1", "a#0", 0, "s")
    ann.set_grade("q1", "a#0", 1, "s", adjudicate=True)
    ann.set_grade("q1", "a#0", 1, "s")
    assert grade_of(ann, "q1", "a#0") == 1 and ann.pair("q1", "a#0").grades() == {
        "ann": 1,
        "bob": 2,
    }
    ann.undo()  # ann's own grade back to 0; the adjudication stands
    assert ann.pair("q1", "a#0").grades() == {"ann": 0, "bob": 2}
    assert grade_of(ann, "q1", "a#0") == 1 and not ann.disputed("q1", "a#0")
    ann.undo()  # the adjudication withdrawn: the latest annotator's grade (ann's 0), disputed
    assert ann.pair("q1", "a#0").adjudicated is None
    assert grade_of(ann, "q1", "a#0") == 0 and ann.disputed("q1", "a#0")
    ann.undo()  # ann had no grade before: hers is withdrawn, bob's 2 is the only one left
    assert grade_of(ann, "q1", "a#0") == 2 and ann.pair("q1", "a#0").grades() == {"bob": 2}
    assert ann.undo() is None
    assert grade_of(LabelJournal(path), "q1", "a#0") == 2


def test_the_workspace_exposes_sources_disputes_and_adjudication(mini_settings):
    ann, bob = _as(mini_settings, "ann"), _as(mini_settings, "bob")
    relevant = min(ann.grades.effective_grades("m01"))  # the evidence chunk, grade 2 by the rule
    other = next(c.id for c in ann.data.chunks if c.id not in ann.grades.effective_grades("m01"))
    assert ann.grades.grade_source("m01", relevant) == (2, "evidence")
    ann.set_grade("m01", relevant, 2)
    change = bob.set_grade("m01", relevant, 0)
    assert change.changes["bm25"][1].ndcg == 0.0, "the latest grade (bob's 0) must count"
    assert bob.grades.grade_source("m01", relevant) == (0, SOURCE_HAND)
    assert bob.grades.disputed("m01", relevant) and bob.grades.annotator_grades(
        "m01", relevant
    ) == {
        "ann": 2,
        "bob": 0,
    }
    bob.set_grade("m03", other, 1)
    assert bob.grades.disputed_pairs() == [("m01", relevant)]
    assert bob.grades.disputed_pairs("m03") == [] and bob.grades.disputed_questions() == ["m01"]
    assert filter_questions(bob, QuestionFilter.parse("disputed", bob.retrievers)) == ["m01"]
    assert (
        filter_questions(bob, QuestionFilter.parse("disputed slice:lookup", bob.retrievers)) == []
    )
    # The other session sees the dispute on its next refresh.
    assert ann.refresh_labels() == {"m01", "m03"} and ann.grades.disputed("m01", relevant)
    # Adjudication wins and settles it; the metrics use it.
    change = ann.set_grade("m01", relevant, 2, adjudicate=True)
    assert change.changes["bm25"][1].ndcg == 1.0 and change.label.adjudicated
    assert ann.grades.grade_source("m01", relevant) == (2, SOURCE_ADJUDICATED)
    assert ann.grades.adjudicated_grade("m01", relevant) == 2
    assert not ann.grades.disputed("m01", relevant) and ann.grades.disputed_questions() == []
    assert ann.grades.annotator_grades("m01", relevant) == {"ann": 2, "bob": 0}
    # An adjudicated label is no annotator's own grade in agreement.
    history = ann.grades.labels.history
    assert annotators(history) == {"ann": 1, "bob": 2}
    assert last_grades(history, "ann")[("m01", relevant)].grade == 2
    assert annotator_agreement(history, "ann", "bob").disagreements == [("m01", relevant, 2, 0)]
    # Undo takes the adjudication back: disputed again, bob's 0 counts.
    change = ann.undo()
    assert change is not None and change.changes["bm25"][1].ndcg == 0.0
    assert ann.grades.disputed("m01", relevant) and ann.grades.grade_source("m01", relevant) == (
        0,
        SOURCE_HAND,
    )


def test_the_disputed_questions_kept_between_grades_are_the_ones_read_afresh(mini_settings):
    """The question list asks for the disputed questions at every grade; they are kept from one
    call to the next and only the questions the journal gained labels for are looked at again
    (every labelled pair was: 360 ms a key with 300,000 labels). Three people grade, adjudicate,
    undo and read each other's labels at random; after each step every session's kept answer is
    the one read afresh from its labels."""
    import random

    rng = random.Random(7)
    people = {who: _as(mini_settings, who) for who in ("ann", "bob", "cat")}
    ws = people["ann"]
    qids = [q.id for q in ws.questions][:4]
    cids = [c.id for c in ws.data.chunks][:3]
    seen: set[tuple[str, ...]] = set()
    for _ in range(150):
        who = rng.choice(list(people))
        session = people[who]
        step = rng.random()
        if step < 0.6:
            session.set_grade(rng.choice(qids), rng.choice(cids), rng.choice([0, 1, 2, None]))
        elif step < 0.7:
            session.set_grade(
                rng.choice(qids), rng.choice(cids), rng.choice([0, 2]), adjudicate=True
            )
        elif step < 0.8:
            session.undo()
        else:
            session.refresh_labels()
        for each in people.values():
            kept = each.grades.disputed_questions()
            assert kept == replace(each.grades).disputed_questions()
            seen.add(tuple(kept))
    assert len(seen) > 3  # the disputes came and went


def test_a_stale_grade_neither_counts_nor_disputes(mini_settings, mini):
    ws = _as(mini_settings, "ann")
    relevant = min(ws.grades.effective_grades("m01"))
    chunk = ws.passages.by_id[relevant]
    ws.set_grade("m01", relevant, 2)
    # bob graded another text of the chunk: stale, kept, reported, no dispute.
    with open(mini / "golden" / "labels.jsonl", "ab") as fh:
        line = {"question": "m01", "chunk": relevant, "grade": 0, "chunk_sha1": "0" * 40}
        fh.write(orjson.dumps({**line, "at": "", "annotator": "bob"}) + b"\n")
    ws.refresh_labels()
    assert ws.grades.labels.disputed("m01", relevant), "the journal alone sees two grades"
    assert not ws.grades.disputed("m01", relevant) and ws.grades.annotator_grades(
        "m01", relevant
    ) == {"ann": 2}
    assert ws.grades.grade_source("m01", relevant) == (2, SOURCE_HAND)
    stale = ws.grades.stale_labels()
    assert [(s.label.annotator, s.reason) for s in stale] == [
        ("bob", "chunk text changed since it was labelled")
    ]
    assert chunk.sha1 != "0" * 40


def test_agreement_and_check_name_the_disputed_pairs(mini, mini_settings, capsys):
    ann, bob = _as(mini_settings, "ann"), _as(mini_settings, "bob")
    ann.set_grade("m01", "ferry.md#0", 2)
    bob.set_grade("m01", "ferry.md#0", 0)
    assert main(["agreement", *_args(mini)]) == 0
    out = capsys.readouterr().out
    assert "disputed: 1 pair graded differently and not adjudicated" in out
    assert "m01 ferry.md#0" in out


# ---- 2. compaction keeps every annotator's labels and never overwrites a backup -------------------


def _shared_pairs(out: str) -> int:
    found = re.search(r"A against B: (\d+) pairs? graded by both", out)
    assert found, out
    return int(found.group(1))


def test_compact_keeps_every_annotators_label_and_every_backup(mini, mini_settings, capsys):
    """Regression (issue 12 item 4): A and B graded the same 20 pairs; compaction kept the last
    line per pair (A 1, B 19), agreement fell to 0 shared pairs, and a second compaction overwrote
    the only backup."""
    a, b = _as(mini_settings, "A"), _as(mini_settings, "B")
    pairs = [(q.id, c.id) for q in a.questions for c in a.data.chunks][:20]
    assert len(pairs) == 20
    for i, (qid, cid) in enumerate(pairs):
        a.set_grade(qid, cid, i % 3)
    for i, (qid, cid) in enumerate(pairs):
        b.set_grade(qid, cid, (i + i // 7) % 3)
    a.grades.labels.refresh()
    a.set_grade(*pairs[0], 1)  # A's last word on one pair comes after B's
    b.set_grade(*pairs[1], None)  # B withdraws one grade...
    b.set_grade(*pairs[1], 2)  # ...and gives it again
    assert main(["agreement", "--annotators", "A", "B", *_args(mini)]) == 0
    before = capsys.readouterr().out
    assert _shared_pairs(before) == 20
    golden = mini / "golden"
    journal = golden / "labels.jsonl"
    original = journal.read_bytes()
    assert main(["labels", "compact", "--golden", str(golden)]) == 0
    said = capsys.readouterr().out
    assert "43 lines -> 40" in said
    (backup,) = golden.glob("labels.jsonl.*.bak")
    assert backup.read_bytes() == original
    assert main(["agreement", "--annotators", "A", "B", *_args(mini)]) == 0
    after = capsys.readouterr().out
    assert _shared_pairs(after) == 20 and after == before
    # Nothing left to drop: the second compaction changes nothing and makes no backup.
    compacted = journal.read_bytes()
    assert main(["labels", "compact", "--golden", str(golden)]) == 0
    assert "already compact (40 lines)" in capsys.readouterr().out
    assert journal.read_bytes() == compacted and list(golden.glob("labels.jsonl.*.bak")) == [backup]
    # One more grade, one more compaction: a new backup beside the first, which is untouched.
    b.set_grade(*pairs[2], 0)
    assert main(["labels", "compact", "--golden", str(golden)]) == 0
    capsys.readouterr()
    backups = sorted(golden.glob("labels.jsonl.*.bak"))
    assert len(backups) == 2 and backup.read_bytes() == original
    assert main(["agreement", "--annotators", "A", "B", *_args(mini)]) == 0
    assert _shared_pairs(capsys.readouterr().out) == 20
    # Adjudicated labels survive a compaction too.
    a.grades.labels.refresh()
    a.set_grade(*pairs[3], 2, adjudicate=True)
    a.grades.labels.compact()
    reread = LabelJournal(journal)
    assert reread.pair(*pairs[3]).adjudicated is not None and grade_of(reread, *pairs[3]) == 2


# ---- 3. another writer's bad line ---------------------------------------------------------------


def _append_bad(path: Path, raw: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(raw + b"\n")


BAD_LINES = [
    b'{"question": "m01", "chunk": "ferry.md#0", "grade": 77, "chunk_sha1": "", "at": ""}',
    b'{"question": "m01", "chunk": "ferry.md#0", "gra',
    b"not json at all",
]


@pytest.mark.parametrize("raw", BAD_LINES)
def test_a_bad_line_from_another_writer_is_reported_once_and_our_grade_applies(mini_settings, raw):
    """Regression (issue 12 item 5): set_grade raised InputError after our line was fsynced, so the
    app died and the numbers were never updated."""
    ws = _as(mini_settings, "ann")
    journal = ws.grades.labels.path
    relevant = min(ws.grades.effective_grades("m01"))
    ws.set_grade("m02", ws.data.chunks[0].id, 1)
    _append_bad(journal, raw)
    change = ws.set_grade("m01", relevant, 0)  # raised InputError before
    assert ws.grades.grade_source("m01", relevant) == (0, SOURCE_HAND)
    assert change.changes["bm25"][1].ndcg == 0.0, "our grade must be applied"
    (warning,) = change.warnings
    assert warning.startswith(f"{journal}:2: ") and warning.endswith("(line skipped)")
    again = ws.set_grade("m01", relevant, 1)
    assert (
        again.warnings == ()
        and ws.refresh_labels() == set()
        and not ws.grades.labels.take_warnings()
    )
    # The line stays in the file, and a new session reports it once, as a load warning.
    assert journal.read_bytes().splitlines()[1] == raw
    fresh = _as(mini_settings, "bob")
    assert fresh.warnings == [warning] and fresh.grades.labels.take_warnings() == []
    assert fresh.grades.grade_source("m01", relevant) == (1, SOURCE_HAND)


def test_a_bad_line_read_by_refresh_is_reported_once(mini_settings):
    ws = _as(mini_settings, "ann")
    other = _as(mini_settings, "bob")
    other.set_grade("m01", "ferry.md#0", 2)
    _append_bad(ws.grades.labels.path, BAD_LINES[0])
    other.set_grade("m03", "library.md#0", 1)
    assert ws.refresh_labels() == {"m01", "m03"}
    (warning,) = ws.grades.labels.take_warnings()
    assert ":2: grade 77 out of range 0..9 (line skipped)" in warning
    assert ws.refresh_labels() == set() and ws.grades.labels.take_warnings() == []


def test_check_lists_a_bad_line_as_a_problem(mini, capsys):
    journal = mini / "golden" / "labels.jsonl"
    _append_bad(journal, BAD_LINES[0])
    assert main(["check", *_args(mini)]) == 1
    captured = capsys.readouterr()
    assert (
        "labels.jsonl:1: label line skipped, not applied: grade 77 out of range 0..9"
        in captured.out
    )
    assert captured.err.count("labels.jsonl:1: grade 77 out of range 0..9 (line skipped)") == 1


# ---- 4. names that are not UTF-8 ------------------------------------------------------------------


def test_a_chunk_id_from_a_non_utf8_file_name_is_labelled_and_read_back(mini, mini_settings):
    """Regression (issue 12 item 8): Label.to_json raised on the lone surrogates Python keeps for
    the byte 0xff of ``bad\\xff.md``."""
    name = os.fsdecode(b"bad\xff.md")
    (mini / "corpus" / name).write_text("The lighthouse keeper rings the bell at noon.\n")
    ws = _as(mini_settings, "ann")
    # The corpus spells the byte \xff in the id (valid text for JSON, TREC files and the journal).
    cid = "bad\\xff.md#0"
    assert cid in ws.passages.by_id
    ws.set_grade("m07", cid, 2)
    raw = ws.grades.labels.path.read_bytes()
    raw.decode("utf-8")  # the journal stays UTF-8
    assert b"bad\\\\xff.md#0" in raw
    reread = _as(mini_settings, "bob")
    assert reread.grades.grade_source("m07", cid) == (2, SOURCE_HAND)
    assert reread.grades.labels.history[-1].chunk == cid
    assert [w for w in reread.warnings if "file name is not UTF-8" not in w] == []
    # It survives a compaction, and the next grade after it.
    reread.set_grade("m07", cid, 1)
    reread.grades.labels.compact()
    assert grade_of(LabelJournal(ws.grades.labels.path), "m07", cid) == 1
    # A chunk id holding a lone surrogate, given to the journal directly, is kept reversibly.
    LabelJournal(ws.grades.labels.path, "x").set_grade("m07", f"{name}#0", 1, "")
    assert b"bad\\udcff.md#0" in ws.grades.labels.path.read_bytes()
    assert grade_of(LabelJournal(ws.grades.labels.path), "m07", f"{name}#0") == 1


def test_a_non_utf8_login_name_does_not_crash_the_first_grade(mini, mini_settings, monkeypatch):
    """Regression (issue 12 item 8): the annotator default comes from the login name."""
    login = os.fsdecode(b"caf\xe9")
    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(variable, login)
    ws = Workspace.load(replace(mini_settings, annotator=None, retrievers=("bm25",)))
    assert ws.grades.labels.annotator == login
    ws.set_grade("m01", "ferry.md#0", 2)
    reread = LabelJournal(ws.grades.labels.path, "other")
    assert reread.history[-1].annotator == login and grade_of(reread, "m01", "ferry.md#0") == 2
    assert annotators(reread.history) == {login: 1}


def test_the_agreement_report_shows_a_non_utf8_annotator_visibly(mini, capsys):
    journal = mini / "golden" / "labels.jsonl"
    LabelJournal(journal, os.fsdecode(b"caf\xe9")).set_grade("m01", "ferry.md#0", 2, "")
    LabelJournal(journal, "bob").set_grade("m01", "ferry.md#0", 0, "")
    assert main(["agreement", *_args(mini)]) == 0
    out = capsys.readouterr().out
    assert "caf\\xe9 (1 pair)" in out


# ---- 5. a FIFO, or any file that is not a regular one --------------------------------------------

#: Loads a journal that is a FIFO and prints what happened; run in a child so a hang is a timeout.
_FIFO_CHILD = textwrap.dedent(
    """
    import sys
    from ragtui.core.errors import InputError
    from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
    try:
        journal = LabelJournal(sys.argv[1])
    except InputError as exc:
        print("refused:", exc.message)
    """
)


def _run(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def test_a_fifo_as_the_journal_is_refused_and_nothing_blocks(mini):
    """Regression (issue 12 item 9): opening the FIFO for reading waited for a writer forever."""
    journal = mini / "golden" / "labels.jsonl"
    journal.unlink()
    os.mkfifo(journal)
    done = _run([sys.executable, "-c", _FIFO_CHILD, str(journal)], timeout=30)
    assert done.stdout.strip() == (
        f"refused: {journal}: the label journal is a FIFO, not a regular file"
    )
    for command in (
        ["eval", *_args(mini)],
        ["labels", "compact", "--golden", str(mini / "golden")],
    ):
        done = _run([sys.executable, "-m", "ragtui", *command])
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"ragtui: error: {journal}: the label journal is a FIFO, not a regular file"
        ]


def test_a_journal_that_turns_into_a_fifo_refuses_writes_and_reads(tmp_path):
    path = tmp_path / "labels.jsonl"
    journal = LabelJournal(path, "ann")
    journal.set_grade("q1", "a#0", 2, "s")
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ReadOnlyError, match="a FIFO, not a regular file; the change was not made"):
        journal.set_grade("q1", "a#0", 1, "s")
    with pytest.raises(InputError, match="a FIFO, not a regular file"):
        journal.refresh()
    with pytest.raises(InputError, match="a FIFO, not a regular file"):
        journal.compact()
    path.unlink()
    path.mkdir()
    with pytest.raises(InputError, match="the label journal is a folder, not a regular file"):
        LabelJournal(path)
