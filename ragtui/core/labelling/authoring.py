"""Growing the golden set: new questions validated and appended to ``questions.jsonl`` safely.

A new question is validated against the current chunking (every evidence string must lie inside
some chunk), given an id (the next ``<prefix><number>`` after the file's last id when none is
given), and written atomically: under an exclusive lock on ``questions.jsonl``, the old bytes plus
the new line go to a temporary file that is fsynced and renamed over the old one, so readers see
either the old file or the new one, and every old line stays byte-identical.
``Workspace.add_question`` appends through here and then evaluates the new question.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document, read_jsonl
from ragtui.core.data.golden import (
    EvidenceIndex,
    Question,
    parse_question,
    straddling_pairs,
)
from ragtui.core.data.paths import is_bundled
from ragtui.core.errors import InputError
from ragtui.core.files import check_writable, locked, write_atomic
from ragtui.core.metrics.evaluation import Ranking
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.text import not_utf8

QUESTIONS_FILE = "questions.jsonl"

_NUMBERED_ID = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True, slots=True)
class AddedQuestion:
    """A question just appended and evaluated: its grades, every retriever's ranking and values."""

    question: Question
    relevant_chunks: list[str]
    rankings: dict[str, Ranking]
    metrics: dict[str, QuestionMetrics]


def next_question_id(existing: Sequence[str]) -> str:
    """The id after the last numbered one: same prefix, number + 1, same zero padding (``q68`` -> ``q69``); ``q01`` first."""
    taken = set(existing)
    numbered = [m for m in (_NUMBERED_ID.match(i) for i in existing) if m]
    if not numbered:
        prefix, number, width = "q", 1, 2
    else:
        prefix = numbered[-1].group(1)
        same = [m for m in numbered if m.group(1) == prefix]
        number = max(int(m.group(2)) for m in same) + 1
        width = len(numbered[-1].group(2))
    while f"{prefix}{number:0{width}d}" in taken:
        number += 1
    return f"{prefix}{number:0{width}d}"


def question_key(text: str) -> str:
    """A question's text compared for duplicates: white space collapsed, case folded."""
    return " ".join(text.split()).casefold()


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_new_question(
    question_text: str,
    evidence: str | Sequence[str],
    slices: Sequence[str],
    qid: str | None,
    existing_ids: Sequence[str],
    chunks: Sequence[Chunk],
    documents: Sequence[Document] = (),
    path: Path | None = None,
    existing_texts: Mapping[str, str] | None = None,
) -> tuple[Question, list[str]]:
    """The question to append and its matching chunk ids, or an InputError saying what is wrong.

    Every evidence string must lie inside some chunk of ``chunks``; the message says when one
    straddles a chunk boundary (naming the two chunks) or is in no document. The id, if given, must
    be new and hold no white space (TREC files split on it); if not given, :func:`next_question_id`.
    ``existing_texts`` maps each existing question's text (white space collapsed, lower-cased) to
    its id: the same question twice is refused, naming the one already there.
    """
    items = (evidence,) if isinstance(evidence, str) else tuple(evidence)
    where = path or Path(QUESTIONS_FILE)
    for field, values in (
        ("question", [question_text]),
        ("evidence", items),
        ("slice", slices),
        ("id", [qid or ""]),
    ):
        for value in values:
            bad = not_utf8(value)
            if bad is not None:
                # questions.jsonl is UTF-8: such a line could not be written (or read back).
                raise InputError(where, f"the {field} is not UTF-8 text ({bad}); nothing was added")
    obj: dict[str, object] = {
        "id": qid if qid is not None else next_question_id(existing_ids),
        "question": question_text,
        "evidence": list(items),
        "slices": [s.strip() for s in slices if s.strip()],
    }
    try:
        question = parse_question(obj, where, 0)
    except InputError as exc:  # the new line has no line number yet
        raise InputError(where, exc.problem) from None
    if any(ch.isspace() for ch in question.id):
        raise InputError(where, f"question id {question.id!r} must not contain white space")
    if question.id in existing_ids:
        raise InputError(where, f"question id {question.id!r} is already in the golden set")
    same = (existing_texts or {}).get(question_key(question.text))
    if same is not None:
        raise InputError(where, f"the golden set has this question already, as {same}")
    index = EvidenceIndex([c.id for c in chunks], [c.text for c in chunks])
    for item in question.evidence:
        if index.matching_chunks([item]):
            continue
        pairs = straddling_pairs(documents, chunks, item)
        if pairs:
            across = "; ".join(f"{a} and {b}" for a, b in pairs)
            raise InputError(
                where,
                f"evidence {_short(item)!r} is in no single chunk: it straddles a chunk boundary ({across})",
            )
        raise InputError(where, f"evidence {_short(item)!r} is found in no chunk of the corpus")
    return question, index.matching_chunks(question.evidence)


def question_line(question: Question) -> bytes:
    """The ``questions.jsonl`` line of a question (the bundled file's style), without the newline."""
    evidence: object = (
        question.evidence[0] if len(question.evidence) == 1 else list(question.evidence)
    )
    obj: dict[str, object] = {
        "id": question.id,
        "question": question.text,
        "evidence": evidence,
        "slices": list(question.slices),
    }
    if question.retired:
        obj["retired"] = True
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def set_retired(golden_dir: str | Path, qid: str, retired: bool) -> Question:
    """Mark question ``qid`` retired (or not) in ``golden_dir/questions.jsonl``: under the lock, only
    its line is rewritten (``"retired": true``), atomically; the other lines stay byte-identical.
    Returns the question as it is now; InputError when the file has no such question."""
    path = Path(golden_dir) / QUESTIONS_FILE
    with locked(path):
        old = path.read_bytes()
        lines = old.split(b"\n")
        for line_number, obj in read_jsonl(path):
            if str(obj.get("id")) != qid:
                continue
            question = parse_question(obj, path, line_number)
            updated = replace(question, retired=retired)
            lines[line_number - 1] = question_line(updated)
            try:
                write_atomic(path, b"\n".join(lines))
            except OSError as exc:
                raise InputError(path, f"cannot write the golden set ({exc.strerror})") from None
            return updated
    raise InputError(path, f"no question {qid!r} in the golden set")


def append_question(
    golden_dir: str | Path,
    question_text: str,
    evidence: str | Sequence[str],
    slices: Sequence[str] = (),
    qid: str | None = None,
    *,
    chunks: Sequence[Chunk],
    documents: Sequence[Document] = (),
) -> Question:
    """Validate a new question against ``chunks`` and append it to ``golden_dir/questions.jsonl`` atomically.

    Under the lock: read the file, validate (the id against the ids in the file now), write old
    bytes + new line to a temporary file, fsync, rename over the file, fsync the folder. Returns
    the question with its line number. Raises InputError (nothing written) when it is invalid.
    """
    path = Path(golden_dir) / QUESTIONS_FILE
    if not path.parent.is_dir():
        raise InputError(path.parent, "golden-set folder not found")
    if is_bundled(path.parent):
        raise InputError(path.parent, "the bundled golden set is never written; add to a copy")
    check_writable(path.parent, "golden-set folder")
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(path))
        except OSError as exc:
            raise InputError(path, f"cannot write the golden set ({exc.strerror})") from None
        old = path.read_bytes()
        existing = [obj for _, obj in read_jsonl(path)] if old.strip() else []
        existing_ids = [str(obj.get("id")) for obj in existing]
        texts = {question_key(str(obj.get("question", ""))): str(obj.get("id")) for obj in existing}
        question, _ = validate_new_question(
            question_text, evidence, slices, qid, existing_ids, chunks, documents, path, texts
        )
        lead = b"" if not old or old.endswith(b"\n") else b"\n"
        line_number = old.count(b"\n") + (1 if lead else 0) + 1
        try:
            write_atomic(path, old + lead + question_line(question) + b"\n")
        except OSError as exc:
            raise InputError(path, f"cannot write the golden set ({exc.strerror})") from None
    return Question(question.id, question.text, question.evidence, question.slices, line_number)
