"""The golden set loader, the evidence rule, highlight spans and the label journal."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from ragtui.core.data.golden import EvidenceIndex, evidence_spans, load_questions, term_spans
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
from ragtui.core.labelling.labels import Label, parse_label
from tests.conftest import grade_of


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "q2", "question": "x", "evidence": "y"', "malformed JSON"),
        ('{"id": 7, "question": "x", "evidence": "y"}', "'id' must be a non-empty string"),
        ('{"id": "q2", "evidence": "y"}', "missing field 'question'"),
        ('{"id": "q2", "question": "x"}', "missing field 'evidence'"),
        ('{"id": "q2", "question": "x", "evidence": ""}', "'evidence' must not be empty"),
        ('{"id": "q2", "question": "x", "evidence": [1]}', "'evidence' must be a string or a list"),
        (
            '{"id": "q1", "question": "x", "evidence": "y"}',
            "duplicate question id 'q1' (first on line 1)",
        ),
        ('["q2"]', "expected a JSON object"),
    ],
)
def test_bad_question_lines_name_file_and_line(tmp_path, line, problem):
    path = _write(
        tmp_path / "questions.jsonl",
        '{"id": "q1", "question": "a", "evidence": "b"}\n\n' + line + "\n",
    )
    with pytest.raises(InputError) as err:
        load_questions(path)
    assert err.value.line == 3
    assert problem in err.value.message
    assert err.value.message.startswith(f"{path}:3: ")
    assert "\n" not in err.value.message


def test_questions_load_with_lists_and_slices(tmp_path):
    path = _write(
        tmp_path / "q.jsonl",
        '{"id": "q1", "question": "a?", "evidence": ["b", "c"], "slices": ["table"]}\n',
    )
    (q,) = load_questions(path)
    assert q.evidence == ("b", "c") and q.slices == ("table",) and q.line == 1


def test_evidence_rule_collapses_white_space():
    index = EvidenceIndex(
        ["a#0", "a#1", "b#0"], ["the pump\n  lifts water", "nothing", "The pump lifts water"]
    )
    assert index.matching_chunks(["the pump lifts   water"]) == ["a#0"]
    assert index.matching_chunks(["zzz", "nothing"]) == ["a#1"]
    assert index.matching_chunks([]) == []


def test_highlight_spans():
    text = "The pump\n lifts water. Pumps lift."
    assert evidence_spans(text, ["pump lifts"]) == [(4, 15)]
    spans = term_spans(text, "What does the pump lift?")
    assert [text[a:b] for a, b in spans] == ["pump", "lift"]


def test_journal_last_line_wins_and_null_removes(tmp_path):
    journal = LabelJournal(tmp_path / "labels.jsonl", annotator="ann")
    journal.set_grade("q1", "a#0", 2, "s0")
    journal.set_grade("q1", "a#1", 0, "s1")
    journal.set_grade("q1", "a#0", 1, "s0")
    assert grade_of(journal, "q1", "a#0") == 1 and grade_of(journal, "q1", "a#1") == 0
    journal.set_grade("q1", "a#1", None, "s1")
    assert grade_of(journal, "q1", "a#1") is None
    reread = LabelJournal(tmp_path / "labels.jsonl")
    assert {k: v.grade for k, v in reread.current.items()} == {("q1", "a#0"): 1}
    assert len(reread.history) == 4 and reread.history[0].annotator == "ann"


def test_undo_writes_a_line_restoring_the_previous_grade(tmp_path):
    path = tmp_path / "labels.jsonl"
    journal = LabelJournal(path)
    journal.set_grade("q1", "a#0", 2, "s")
    journal.set_grade("q1", "a#0", 0, "s")
    journal.undo()
    assert grade_of(journal, "q1", "a#0") == 2
    journal.undo()
    assert grade_of(journal, "q1", "a#0") is None
    assert journal.undo() is None
    assert len(path.read_text().splitlines()) == 4
    assert grade_of(LabelJournal(path), "q1", "a#0") is None


def test_torn_last_line_is_ignored_with_a_warning_and_repaired(tmp_path):
    path = tmp_path / "labels.jsonl"
    LabelJournal(path).set_grade("q1", "a#0", 2, "s")
    with open(path, "ab") as fh:
        fh.write(b'{"question": "q1", "chunk": "a#1", "gra')
    journal = LabelJournal(path)
    assert (
        journal.warnings
        and "torn last line" in journal.warnings[0]
        and ":2:" in journal.warnings[0]
    )
    assert grade_of(journal, "q1", "a#0") == 2
    journal.set_grade("q2", "b#0", 1, "t")
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and '"q2"' in lines[1]
    assert not LabelJournal(path).warnings


def test_unterminated_but_whole_last_line_is_kept(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"question": "q1", "chunk": "a#0", "grade": 1, "chunk_sha1": "s", "at": ""}')
    journal = LabelJournal(path)
    assert grade_of(journal, "q1", "a#0") == 1 and not journal.warnings
    journal.set_grade("q1", "a#1", 2, "s")
    assert len(path.read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"question": "q1", "chunk": "a#0", "grade": 12}', "grade 12 out of range 0..9"),
        (
            '{"question": "q1", "chunk": "a#0", "grade": "2"}',
            "'grade' must be a whole number or null",
        ),
        ('{"question": "q1", "chunk": "a#0"}', "missing field 'grade'"),
        ('{"question": "", "chunk": "a#0", "grade": 1}', "'question' must be a non-empty string"),
        ("not json", "malformed JSON"),
    ],
)
def test_bad_label_lines_are_skipped_with_a_warning_naming_file_and_line(tmp_path, line, problem):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        '{"question": "q1", "chunk": "a#0", "grade": 1}\n'
        + line
        + '\n{"question": "q1", "chunk": "a#1", "grade": 2}\n'
    )
    journal = LabelJournal(path)
    assert [bad.line for bad in journal.bad_lines] == [2]
    assert problem in journal.bad_lines[0].problem
    (warning,) = journal.warnings
    assert warning.startswith(f"{path}:2: ") and problem in warning and "line skipped" in warning
    assert grade_of(journal, "q1", "a#0") == 1 and grade_of(journal, "q1", "a#1") == 2
    assert journal.take_warnings() == [warning] and journal.take_warnings() == []


def test_another_writer_is_noticed_by_refresh(tmp_path):
    path = tmp_path / "labels.jsonl"
    mine, theirs = LabelJournal(path), LabelJournal(path)
    theirs.set_grade("q1", "a#0", 2, "s")
    assert grade_of(mine, "q1", "a#0") is None
    mine.refresh()
    assert grade_of(mine, "q1", "a#0") == 2


def test_compact_keeps_the_state_and_a_backup(tmp_path):
    path = tmp_path / "labels.jsonl"
    journal = LabelJournal(path)
    for grade in (0, 1, 2):
        journal.set_grade("q1", "a#0", grade, "s")
    journal.set_grade("q1", "a#1", 1, "s")
    journal.set_grade("q1", "a#1", None, "s")
    backup = journal.compact()
    assert backup is not None and backup.parent == tmp_path
    assert backup.name.startswith("labels.jsonl.") and backup.name.endswith(".bak")
    assert len(backup.read_text().splitlines()) == 5
    assert len(path.read_text().splitlines()) == 1
    assert grade_of(LabelJournal(path), "q1", "a#0") == 2
    # Compact already: nothing rewritten, no second backup.
    assert journal.compact() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["labels.jsonl", backup.name])


def test_read_only_journal_is_reported(tmp_path):
    folder = tmp_path / "golden"
    folder.mkdir()
    path = folder / "labels.jsonl"
    path.write_text("")
    os.chmod(path, 0o444)
    try:
        journal = LabelJournal(path)
        assert journal.read_only
        with pytest.raises(ReadOnlyError):
            journal.set_grade("q1", "a#0", 2, "s")
        assert path.read_text() == ""
    finally:
        os.chmod(path, 0o644)


def test_a_verdict_line_keeps_how_its_grade_was_read_and_the_grade_probabilities(tmp_path):
    label = Label(
        "q1",
        "a#0",
        2,
        "s" * 40,
        "2026-01-01T00:00:00.000+00:00",
        "model:llm",
        model="m",
        reason="It says so.",
        answer="structured",
        probabilities=((0, 0.1), (1, 0.2), (2, 0.7)),
    )
    line = orjson.loads(label.to_json())
    assert line["answer"] == "structured" and line["probabilities"] == {
        "0": 0.1,
        "1": 0.2,
        "2": 0.7,
    }
    back = parse_label(line, tmp_path / "labels.jsonl", 1)
    assert back.answer == "structured" and back.probabilities == label.probabilities
    for bad in ({"answer": "guessed"}, {"probabilities": {"2": 1.5}}, {"probabilities": [0.7]}):
        with pytest.raises(InputError, match=r"labels\.jsonl:1: "):
            parse_label({**line, **bad}, tmp_path / "labels.jsonl", 1)
