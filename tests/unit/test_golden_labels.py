"""The golden set loader, the evidence rule, highlight spans and the label journal."""

from __future__ import annotations

import os
import random
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from ragtui.core.data.binary_cache import list_digest
from ragtui.core.data.golden import (
    EvidenceIndex,
    Question,
    QuestionColumns,
    evidence_spans,
    load_questions,
    term_spans,
)
from ragtui.core.data.questions_cache import cached_questions
from ragtui.core.errors import InputError
from ragtui.core.labelling.journal import LabelJournal, ReadOnlyError
from ragtui.core.labelling.labels import Label, history_since, labelled_since, parse_label
from ragtui.core.workspace import QuestionSet
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


def _question_lines(count: int, seed: int) -> str:
    """``count`` question lines with one to three evidence strings, slices and retired ones."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        line = {
            "id": f"q{i}",
            "question": f"what is item {i}?",
            "evidence": [f"e{i}-{j}" for j in range(rng.randint(1, 3))],
            "slices": rng.choice([[], ["table"], ["table", "code"]]),
        }
        if rng.random() < 0.2:
            line["retired"] = True
        lines.append(orjson.dumps(line).decode())
    return "\n".join(lines) + "\n"


def _built(questions: QuestionSet) -> int:
    """How many of the set's loaded questions have been built."""
    loaded = questions.loaded
    assert isinstance(loaded, QuestionColumns)
    return sum(q is not None for q in loaded._built)


@pytest.mark.parametrize("seed", range(4))
def test_a_cached_question_set_builds_only_the_questions_read(tmp_path, seed):
    path = _write(tmp_path / "questions.jsonl", _question_lines(40, seed))
    parsed = load_questions(path)
    cached_questions(path, tmp_path / "cache")  # parsed and written
    columns, warnings = cached_questions(path, tmp_path / "cache")  # read back as columns
    assert warnings == [] and isinstance(columns, QuestionColumns)
    questions = QuestionSet.of(columns)
    eager = QuestionSet.of(parsed)
    assert _built(questions) == 0
    assert questions.retired_ids == eager.retired_ids == {q.id for q in parsed if q.retired}
    assert questions.retired == eager.retired == [q.id for q in parsed if q.retired]
    # The evidence is cut when read, and found by the digest the cache kept (equal to the list's).
    evidence, known = questions.evidence()
    assert list(evidence) == [q.evidence for q in parsed] and evidence[-1] == parsed[-1].evidence
    assert evidence[2:5] == [q.evidence for q in parsed[2:5]]
    assert eager.evidence() == ([q.evidence for q in parsed], None)
    assert known == list_digest([q.evidence for q in parsed])
    assert questions.loaded_texts.digest == eager.loaded_texts.digest
    texts = questions.loaded_texts.texts
    assert texts[-1] == parsed[-1].text and texts[1:4] == [q.text for q in parsed[1:4]]
    for column in (texts, evidence):
        for index in (40, -41):
            with pytest.raises(IndexError):
                column[index]
    assert list(texts) == [q.text for q in parsed]
    assert questions.loaded_texts.keys == eager.loaded_texts.keys
    assert questions.loaded_texts.texts[-2:] == [q.text for q in parsed[-2:]]
    assert questions.ids == eager.ids == [q.id for q in parsed]
    assert questions.by_id["q7"] == parsed[7] and _built(questions) == 1
    assert questions[-1] == parsed[-1] and list(questions[3:9:2]) == parsed[3:9:2]
    assert "q7" in questions.by_id and "nope" not in questions.by_id and 7 not in questions.by_id
    with pytest.raises(KeyError):
        questions.by_id["nope"]
    for index in (40, -41):
        with pytest.raises(IndexError):
            questions[index]
    assert _built(questions) == 4  # q7, q39, q3 and q5
    assert list(questions.fields()) == [(q.id, q.text, q.slices) for q in parsed]
    assert _built(questions) == 4  # the fields are read from the columns
    q7 = questions.by_id["q7"]
    assert list(questions) == list(eager) == parsed
    assert _built(questions) == 40 and questions.by_id["q7"] is q7  # built once
    assert dict(questions.by_id) == {q.id: q for q in parsed}


@pytest.mark.parametrize("seed", range(4))
def test_a_question_set_changed_is_the_list_with_the_change(tmp_path, seed):
    """Retire, bring back and add questions at random: the set reads as the plain list changed in
    the same way, and no change builds the questions it does not touch."""
    rng = random.Random(seed)
    path = _write(tmp_path / "questions.jsonl", _question_lines(30, seed))
    cached_questions(path, tmp_path / "cache")
    questions = QuestionSet.of(cached_questions(path, tmp_path / "cache")[0])
    expected = list(load_questions(path))
    for step in range(25):
        if rng.random() < 0.3:
            question = Question(f"new{step}", f"added {step}?", ("x",), retired=rng.random() < 0.5)
            expected.append(question)
        else:
            at = rng.randrange(len(expected))
            question = replace(expected[at], retired=not expected[at].retired)
            expected[at] = question
        questions = questions.with_question(question)
        assert len(questions) == len(expected) and list(questions) == expected
        assert questions.ids == [q.id for q in expected]
        assert list(questions.fields()) == [(q.id, q.text, q.slices) for q in expected]
        assert questions.retired == [q.id for q in expected if q.retired]
        ids = [q.id for q in expected]
        picked = [*rng.sample(ids, 5), "nope"]
        assert questions.positions(picked).tolist() == [
            ids.index(q) if q in ids else -1 for q in picked
        ]
        assert all(questions.by_id[q.id] == q for q in expected)
        assert questions.in_golden_order(reversed(ids)) == ids
    assert questions.loaded_ids == [q.id for q in load_questions(path)]


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


def test_history_since_reads_on_from_its_mark_or_whole_when_the_journal_was_read_again() -> None:
    """The judging walk's judged count, the queue's annotators and the disputed questions each
    read the journal from where they left it: the labels added since, or the whole history when
    it was read again from its start (a new first line, or fewer lines than were read)."""

    def label(q: str, n: int) -> Label:
        return Label(q, "c", 1, "", "", "ann", line=n)

    history = [label("q1", 1), label("q2", 2)]
    since, mark = history_since(history, None)
    assert since is None and mark == (history[0], 2)  # never read: read it whole
    history.append(label("q3", 3))
    since, mark = history_since(history, mark)
    assert since == [history[2]] and mark == (history[0], 3)
    assert labelled_since(history, (history[0], 1)) == ({"q2", "q3"}, mark)
    assert history_since(history, mark) == ([], mark)
    reread = [label("q1", 1), label("q2", 2), label("q3", 3)]  # the same lines, read again
    assert history_since(reread, mark)[0] is None
    assert history_since(history[:2], mark)[0] is None  # shorter than what was read
    assert history_since([], (None, 0)) == ([], (None, 0))
    assert history_since(history, (None, 0))[0] == history  # read when it was empty
