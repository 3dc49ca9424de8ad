"""The chat judge's grade parser and prompt: real-looking answers, any 0..N scale, prompt files."""

from __future__ import annotations

import hashlib
import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtui.core.data.grades import DEFAULT_GRADE_SCALE, GradeScale
from ragtui.core.errors import InputError
from ragtui.core.judges.base import Verdict
from ragtui.core.judges.parse import clean_reason, parse_grade
from ragtui.core.judges.prompt import (
    DEFAULT_PROMPT,
    MAX_PROMPT_BYTES,
    default_prompt,
    fill_prompt,
    load_prompt,
    prompt_sha1,
    scale_text,
)
from ragtui.core.labelling.labels import MAX_REASON
from ragtui.core.text import has_control, visible_line, without_escapes

S = DEFAULT_GRADE_SCALE
FOUR: GradeScale = (
    (0, "irrelevant"),
    (1, "related"),
    (2, "highly relevant"),
    (3, "perfectly relevant"),
)

# (answer, expected grade, expected reason): answers in the shapes chat models give.
GRADED = [
    ("2", 2, ""),
    ("0", 0, ""),
    (" 1 \n", 1, ""),
    ("**2**", 2, ""),
    ("2.", 2, ""),
    ("Grade: 2", 2, ""),
    ("grade: 0", 0, ""),
    ("GRADE: 1", 1, ""),
    ("Grade = 2", 2, ""),
    ("**Grade:** 2", 2, ""),
    ("**Grade: 1**", 1, ""),
    ("Grade: **2**", 2, ""),
    ("Grade: [1]", 1, ""),
    ("Grade: 2 (answers fully)", 2, ""),
    ("Grade: 1 - partly", 1, ""),
    ("Grade: two", 2, ""),
    ("Grade: partly", 1, ""),
    ("Relevance: not relevant", 0, ""),
    ("Score: 2/2", 2, ""),
    ("Score: 1 out of 2", 1, ""),
    ("Grade: 2.0", 2, ""),
    ("Relevance score: 1", 1, ""),
    ("**Relevance Score: 2**", 2, ""),
    ("Rating: 0", 0, ""),
    ("Final answer: 2", 2, ""),
    ("O = 2", 2, ""),
    ("M = 2\nT = 1\nO = 1", 1, ""),
    ("M: 2, T: 2, O: 0", 0, ""),
    ("##final score: 2", 2, ""),
    ("## Final Score: 1", 1, ""),
    ("final score: 0", 0, ""),
    ("### Grade\n\n2", 2, ""),
    ("answers fully", 2, ""),
    (
        "Reason: The passage gives the default chunk size.\nGrade: 2",
        2,
        "The passage gives the default chunk size.",
    ),
    (
        "Grade: 2\nReason: The passage gives the default chunk size.",
        2,
        "The passage gives the default chunk size.",
    ),
    (
        "Reason: It mentions chunking. It does not give a size.\nGrade: 1",
        1,
        "It mentions chunking.",
    ),
    (
        "**Reason:** The passage is about ferries.\n\n**Grade:** 0",
        0,
        "The passage is about ferries.",
    ),
    ("Explanation: The text lists every default.\nScore: 2", 2, "The text lists every default."),
    (
        "Grade: 2\n\nJustification: The passage states the answer outright.",
        2,
        "The passage states the answer outright.",
    ),
    (
        "2\n\nThe passage answers the question directly.",
        2,
        "The passage answers the question directly.",
    ),
    (
        "2 - The passage answers the question directly.",
        2,
        "The passage answers the question directly.",
    ),
    ("1: It touches the topic only.", 1, "It touches the topic only."),
    (
        "The passage names the setting but not its default.\n1",
        1,
        "The passage names the setting but not its default.",
    ),
    (
        "I'd give it a 1 because it only partly answers.",
        1,
        "I'd give it a 1 because it only partly answers.",
    ),
    (
        "The passage fully answers the question, so the grade is 2.",
        2,
        "The passage fully answers the question, so the grade is 2.",
    ),
    ('{"grade": 2, "reason": "The passage states the size."}', 2, "The passage states the size."),
    ('{"grade": "1", "reason": "Partly."}', 1, "Partly."),
    ('{"score": 0, "explanation": "Off topic."}', 0, "Off topic."),
    ('{"relevance": 2, "rationale": "Direct answer."}', 2, "Direct answer."),
    ('{"Grade": 1.0, "Reason": "Half of it."}', 1, "Half of it."),
    ('{"result": {"grade": 2, "reason": "Nested."}}', 2, "Nested."),
    ('[{"grade": 1, "reason": "In a list."}]', 1, "In a list."),
    (
        '```json\n{"grade": 2, "reason": "The passage answers it."}\n```',
        2,
        "The passage answers it.",
    ),
    ('```\n{"grade": 0, "reason": "Unrelated."}\n```', 0, "Unrelated."),
    (
        'Here is my assessment:\n```json\n{\n  "reason": "It covers the topic partly.",\n  "grade": 1\n}\n```\nLet me know if you need more.',
        1,
        "It covers the topic partly.",
    ),
    ('Sure! {"grade": 2, "reason": "Exact match."}', 2, "Exact match."),
    # Reasoning first: the last stated grade, never a number of the reasoning.
    (
        "Step 1: read the question.\nStep 2: compare.\nThe passage answers the question fully.\nGrade: 2",
        2,
        "The passage answers the question fully.",
    ),
    (
        "1. The question asks for the default size.\n2. The passage gives 512 tokens.\n\nGrade: 2",
        2,
        "The passage gives 512 tokens.",
    ),
    (
        "The question has 3 parts and the passage covers 2 of them.\n\nGrade: 1",
        1,
        "The question has 3 parts and the passage covers 2 of them.",
    ),
    (
        "At first a grade of 1 seemed right since it only mentions X. However, it fully answers.\n\nGrade: 2",
        2,
        "However, it fully answers.",
    ),
    (
        "<think>The passage... step 1 maybe 2. Grade: 0?</think>\nReason: It matches.\nGrade: 1",
        1,
        "It matches.",
    ),
    ("<thinking>Hmm, grade 2? No.</thinking>\n\n0", 0, ""),
    (
        "Let me think step by step.\n\nStep 1: The user wants 2 numbers.\nStep 2: The passage gives both.\n\n**Final Grade:** **2**",
        2,
        "The passage gives both.",
    ),
    (
        "Consider the intent (M = 2) and trust (T = 1).\n##final score: 2",
        2,
        "Consider the intent (M = 2) and trust (T = 1).",
    ),
    (
        "Grade: 2\n\nThis passage deserves a grade of 2 because it states the default.",
        2,
        "This passage deserves a grade of 2 because it states the default.",
    ),
    (
        "Grade 0: not relevant\nGrade 1: partly\nGrade 2: answers fully\n\nReason: The passage is partly useful.\nGrade: 1",
        1,
        "The passage is partly useful.",
    ),
    ('```json\n{"grade": 2}\n```\nGrade: 2', 2, ""),
]

# (answer, the failure's kind): never a grade.
FAILED = [
    ("", "unreadable answer"),
    ("   \n  ", "unreadable answer"),
    ("asdfgh qwerty", "unreadable answer"),
    ("Relevance: high", "unreadable answer"),
    ("The passage is relevant.", "unreadable answer"),
    ("1. Analyze the question\n2. Compare\n\nThe passage is relevant.", "unreadable answer"),
    (
        "Reason: <one sentence saying why>\nGrade: <the number of one grade above>",
        "unreadable answer",
    ),
    ("Grade: 1.5", "unreadable answer"),
    ('{"grade": true, "reason": "x"}', "unreadable answer"),
    ('{"grade": null}', "unreadable answer"),
    ('{"grade": "high"}', "unreadable answer"),
    ("<think>I need to consider step 1 and 2", "unreadable answer"),
    ("I cannot help with that.", "refused"),
    ("I'm sorry, but I can't assist with that request.", "refused"),
    ("I’m sorry, but I can’t help with this.", "refused"),
    ("As an AI language model, I am unable to judge medical content.", "refused"),
    ("I apologize, but I won't evaluate this passage.", "refused"),
    ("Grade: 3", "grade outside the scale"),
    ("Grade: 10", "grade outside the scale"),
    ("Grade: -1", "grade outside the scale"),
    ("3", "grade outside the scale"),
    ('{"grade": 5, "reason": "Great."}', "grade outside the scale"),
    ("Score: 8/10", "grade outside the scale"),
    ("Score: 4 out of 5", "grade outside the scale"),
    ("Grade: 1 or 2", "conflicting grades"),
    ("Grade: 1-2", "conflicting grades"),
    ("Grade: 1\nGrade: 2", "conflicting grades"),
    ("Final grade: 1\n\nOn reflection.\n\nFinal grade: 2", "conflicting grades"),
    ('{"grade": 2, "reason": "Yes."}\nGrade: 1', "conflicting grades"),
    ('Grade: 0\n```json\n{"grade": 2}\n```', "conflicting grades"),
    ("Grade: 1 (answers fully)", "conflicting grades"),
    ("2\n\nThe passage is fine.\n\n1", "conflicting grades"),
]


@pytest.mark.parametrize(("answer", "grade", "reason"), GRADED)
def test_answers_give_their_grade_and_reason(answer: str, grade: int, reason: str) -> None:
    verdict = parse_grade(answer, S)
    assert (verdict.grade, verdict.reason, verdict.failure) == (grade, reason, "")


@pytest.mark.parametrize(("answer", "kind"), FAILED)
def test_unreadable_answers_are_failures_never_grades(answer: str, kind: str) -> None:
    verdict = parse_grade(answer, S)
    assert verdict.grade is None
    assert verdict.failure.split(":", 1)[0] == kind
    assert "\n" not in verdict.failure and len(verdict.failure) < 200


def test_a_refusal_that_still_grades_is_a_grade() -> None:
    assert parse_grade("I cannot find the default in it.\nGrade: 0", S).grade == 0


@pytest.mark.parametrize("top", [1, 2, 3, 4, 9])
def test_any_zero_to_n_scale(top: int) -> None:
    scale = tuple((g, f"level {g}") for g in range(top + 1))
    for g in range(top + 1):
        for answer in (
            f"Grade: {g}",
            f'{{"grade": {g}}}',
            f"{g}",
            f"Grade: level {g}",
            f"Score: {g}/{top}",
        ):
            assert parse_grade(answer, scale).grade == g, answer
    outside = parse_grade(f"Grade: {top + 1}", scale)
    assert outside.grade is None and outside.failure.startswith("grade outside the scale")
    assert f"0–{top}" in outside.failure


def test_four_level_scale_words() -> None:
    assert parse_grade("Grade: perfectly relevant", FOUR).grade == 3
    assert parse_grade("Relevance: irrelevant", FOUR).grade == 0
    assert parse_grade("Grade: 3", FOUR).grade == 3
    assert parse_grade("Grade: 3", S).grade is None


def test_reason_is_one_clean_capped_line() -> None:
    dirty = "Reason: The \x1b]52;c;aGk=\x07passage\x00 **is** `on topic`.\nGrade: 1"
    verdict = parse_grade(dirty, S)
    assert verdict.grade == 1
    assert verdict.reason == "The passage is on topic."  # the sequence gone whole (issue 33)
    long = parse_grade(json.dumps({"grade": 2, "reason": "word " * 1000}), S)
    assert long.grade == 2 and len(long.reason) == MAX_REASON and long.reason.endswith("…")
    lines = parse_grade(json.dumps({"grade": 2, "reason": "one\ntwo\r\nthree"}), S)
    assert lines.reason == "one two three"


def test_huge_answer_is_read_from_its_end() -> None:
    verdict = parse_grade("step 1 " * 100_000 + "\nGrade: 2", S)
    assert verdict.grade == 2


_NOISE_WORDS = st.sampled_from(
    [
        "step",
        "1",
        "2",
        "3",
        "the",
        "passage",
        "question",
        "parts",
        "mentions",
        "not",
        "is",
        "answer",
        "relevant",
        "12",
        "0.5",
        "first",
        "then",
        "(a)",
        "-",
        ",",
        ".",
        "\n",
        "###",
        "**",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(_NOISE_WORDS, max_size=60).map(" ".join),
    st.integers(0, 2),
    st.sampled_from(
        [
            "Grade: {g}",
            "**Grade:** {g}",
            "Final grade: {g}",
            "##final score: {g}",
            '{{"grade": {g}}}',
            "O = {g}",
        ]
    ),
)
def test_reasoning_then_grade_gives_the_stated_grade(noise: str, grade: int, shape: str) -> None:
    answer = f"{noise}\n\n{shape.format(g=grade)}"
    assert parse_grade(answer, S).grade == grade


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.integers(0, 2))
def test_json_reason_of_any_text(reason: str, grade: int) -> None:
    verdict = parse_grade(json.dumps({"grade": grade, "reason": reason}), S)
    assert verdict.grade == grade
    assert not has_control(verdict.reason) and "\n" not in verdict.reason


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=400), st.sampled_from([S, FOUR, ((0, "no"), (1, "yes"))]))
def test_any_text_is_a_grade_on_the_scale_or_a_failure(answer: str, scale: GradeScale) -> None:
    verdict = parse_grade(answer, scale)
    if verdict.grade is None:
        assert verdict.failure and "\n" not in verdict.failure
        assert not has_control(verdict.failure)
    else:
        assert 0 <= verdict.grade <= scale[-1][0] and not verdict.failure
    assert "\n" not in verdict.reason and not has_control(verdict.reason)
    assert len(verdict.reason) <= MAX_REASON


# ---- the prompt ----------------------------------------------------------------------------------


def test_default_prompt_names_every_grade_and_fills_once() -> None:
    prompt = default_prompt()
    assert (
        prompt.sha1
        == hashlib.sha1(DEFAULT_PROMPT.encode()).hexdigest()
        == prompt_sha1(DEFAULT_PROMPT)
    )
    filled = fill_prompt(
        prompt.template, "What is {passage}?", "Chunk {question} {scale}", scale_text(FOUR)
    )
    assert "Question: What is {passage}?" in filled
    assert "Chunk {question} {scale}" in filled
    for grade, label in FOUR:
        assert f"{grade} = {label}" in filled
    assert "Reason:" in filled and "Grade:" in filled
    assert "{" + "scale}" not in filled.replace("Chunk {question} {scale}", "")


def test_scale_text_flattens_labels() -> None:
    assert scale_text(((0, "no\nway"), (1, "yes\x1b[31m"))) == "0 = no way\n1 = yes[31m"


def test_prompt_file_is_read_as_sent(tmp_path) -> None:
    path = tmp_path / "prompt.txt"
    path.write_bytes(
        '\ufeffQ: {question}\r\nP: {passage}\r\nScale:\r\n{scale}\r\nJSON: {"grade": N}\r\n'.encode()
    )
    prompt = load_prompt(path)
    assert prompt.template == 'Q: {question}\nP: {passage}\nScale:\n{scale}\nJSON: {"grade": N}\n'
    assert prompt.sha1 == hashlib.sha1(prompt.template.encode()).hexdigest()
    assert prompt.source == str(path)
    assert fill_prompt(prompt.template, "q", "p", "0 = no").startswith(
        "Q: q\nP: p\nScale:\n0 = no\n"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"Q: {question}\nP: {passage}\n", "no {scale} placeholder"),
        (
            b"Q: {query}\nP: {passage}\n{scale}",
            "no {question} placeholder (it has {query}: rename it {question})",
        ),
        (b"Q: {question}\nP: {document}\n{scale}", "(it has {document}: rename it {passage})"),
        (b"", "the prompt is empty"),
        (b"  \n\n", "the prompt is empty"),
        (b"{question} {passage} {scale} \xe9t\xe9", "the prompt is not UTF-8 (byte 0xe9)"),
        (b"{question}\n{passage} {scale}\x1b[2J", "control character (\\x1b)"),
        (b"\x00\x01\x02{question}{passage}{scale}", "control character (\\x00)"),
    ],
)
def test_bad_prompt_file_is_one_line_naming_it(tmp_path, content: bytes, problem: str) -> None:
    path = tmp_path / "my prompt.txt"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        load_prompt(path)
    message = str(info.value)
    assert message.startswith(str(path)) and problem in message and "\n" not in message


def test_prompt_file_errors_name_the_line_and_the_file_safely(tmp_path) -> None:
    path = tmp_path / "p\x1bx.txt"
    path.write_bytes(b"{question}\n{passage}\n\x07{scale}")
    with pytest.raises(InputError) as info:
        load_prompt(path)
    assert "p\\x1bx.txt:3:" in str(info.value) and "\x1b" not in str(info.value)


def test_unreadable_prompt_files(tmp_path) -> None:
    for path, problem in (
        (tmp_path / "missing.txt", "cannot read the prompt (No such file or directory)"),
        (tmp_path, "a folder, not a regular file"),
    ):
        with pytest.raises(InputError, match=re.escape(problem)):
            load_prompt(path)
    big = tmp_path / "big.txt"
    big.write_text("{question}{passage}{scale}" + "x" * MAX_PROMPT_BYTES)
    with pytest.raises(InputError, match="over 64 KB"):
        load_prompt(big)


def test_docs_print_the_default_prompt_in_full() -> None:
    from tests.conftest import ROOT

    page = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    assert f"```text\n{DEFAULT_PROMPT}```" in page


@pytest.mark.parametrize(
    "answer",
    [
        "[" * 100_000,
        '{"a":' * 20_000,
        "```json\n" + "[" * 100_000 + "\n```",
        "Sure: " + '{"grade": ' * 5_000,
        "{" * 100_000,
        '{"' * 50_000,
        "Grade: 1 or " * 10_000,
        json.dumps(json.loads("[" * 900 + "]" * 900)),
    ],
)
def test_hostile_answers_are_failures_quickly(answer: str) -> None:
    # Before: nested JSON raised RecursionError out of the parser (a judge's grade() raised, which
    # stops ragtui judge's whole run); 100,000 braces took 3 s and one long line 6 s.
    started = time.perf_counter()
    verdict = parse_grade(answer, S)
    assert time.perf_counter() - started < 1.0
    assert verdict.grade in (None, 1)


def test_deeply_nested_json_grade() -> None:
    nested: dict[str, object] = {"grade": 2}
    for _ in range(500):
        nested = {"x": nested}
    # Past three levels the JSON is not searched; its text still says "grade": 2.
    assert parse_grade(json.dumps(nested), S) == Verdict(2)
    assert parse_grade(json.dumps({"a": {"b": {"grade": 2}}}), S).grade == 2


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # Issue 33, item 7: the reason read "[31mRED ANSI[0m ]0;pwned-title".
        ("\x1b[31mRED ANSI\x1b[0m \x1b]0;pwned-title\x07 it answers", "RED ANSI it answers"),
        ("clip\x1b]52;c;ZXZpbA==\x1b\\board holds it", "clipboard holds it"),
        ("an 8-bit \x9b2Jclear and \x9d0;t\x9ctitle", "an 8-bit clear and title"),
        ("reset \x1bc and charset \x1b(B here", "reset and charset here"),
        ("unterminated title \x1b]0;never ends", "unterminated title"),
        ("a bell \x07 and a tab\tstay visible", "a bell \\x07 and a tab\\x09stay visible"),
    ],
)
def test_escape_sequences_leave_whole(raw: str, shown: str) -> None:
    """A terminal escape sequence goes whole, parameters and terminator too; any other control
    character is shown as an escape; the reason kept in the journal holds none of them."""
    assert " ".join(visible_line(without_escapes(raw)).split()) == shown
    reason = clean_reason(raw)
    assert not has_control(reason) and "[31m" not in reason and "52;c" not in reason
