"""BEIR datasets: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` (the starting grades)."""

from __future__ import annotations

import re
from pathlib import Path

from ragtui.core.data.corpus import (
    Corpus,
    beir_id,
    decode_utf8,
    load_beir_corpus,
    read_file,
    read_jsonl,
)
from ragtui.core.data.golden import Question
from ragtui.core.errors import InputError

#: A whole number as qrels files write it (ASCII digits; no ``1_0``, no other scripts' digits).
_WHOLE = re.compile(r"[+-]?[0-9]+")
#: The largest grade magnitude read: grades are kept as 64-bit integers and summed as floats, and
#: within 32 bits neither a table nor a question's ideal DCG can overflow or lose a unit.
MAX_GRADE_MAGNITUDE = 2**31 - 1


def load_beir_queries(path: Path) -> list[Question]:
    """Read BEIR ``queries.jsonl`` (``_id``, ``text``) as questions without evidence strings."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        qid = beir_id(obj.get("_id"), path, line)
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(path, "'text' must be a non-empty string", line)
        if qid in seen:
            raise InputError(path, f"duplicate query id {qid!r} (first on line {seen[qid]})", line)
        seen[qid] = line
        questions.append(Question(id=qid, text=text, line=line))
    if not questions:
        raise InputError(path, "no queries")
    return questions


def load_beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Read BEIR qrels TSV (``query-id  corpus-id  score``, header optional) into qid -> doc -> grade."""
    qrels: dict[str, dict[str, int]] = {}
    text = decode_utf8(path, read_file(path))
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        cols = line.split("\t") if "\t" in line else line.split()
        if number == 1 and cols[-1].strip().lower() == "score":
            continue
        if len(cols) != 3:
            raise InputError(
                path, f"expected 3 columns (query-id, corpus-id, score), got {len(cols)}", number
            )
        qid, doc, score = (c.strip() for c in cols)
        if not qid or not doc:
            raise InputError(path, "empty query-id or corpus-id", number)
        shown = repr(score) if len(score) <= 24 else repr(score[:21] + "...")
        if not _WHOLE.fullmatch(score):
            raise InputError(path, f"score {shown} is not a whole number", number)
        # Digits counted first: int() of a very long string is slow, or refused past 4,300 digits.
        digits = score.lstrip("+-").lstrip("0")
        grade = int(score) if len(digits) <= 10 else MAX_GRADE_MAGNITUDE + 1
        if abs(grade) > MAX_GRADE_MAGNITUDE:
            raise InputError(
                path,
                f"score {shown} is out of range (a whole number from {-MAX_GRADE_MAGNITUDE} "
                f"to {MAX_GRADE_MAGNITUDE})",
                number,
            )
        qrels.setdefault(qid, {})[doc] = grade
    return qrels


def load_beir(
    folder: str | Path, split: str = "test", with_corpus: bool = True
) -> tuple[Corpus, list[Question], dict[str, dict[str, int]]]:
    """The corpus, queries and qrels of a BEIR folder; queries without qrels are kept (and skipped later).

    Without ``with_corpus`` (the team's own chunks replace ``corpus.jsonl``) the corpus is empty.
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputError(root, "BEIR folder not found")
    corpus = load_beir_corpus(root) if with_corpus else Corpus([], str(root))
    questions = load_beir_queries(root / "queries.jsonl")
    qrels = load_beir_qrels(root / "qrels" / f"{split}.tsv")
    known = {q.id for q in questions}
    questions = [q for q in questions if q.id in qrels] or questions
    unknown = sorted(set(qrels) - known)
    if unknown:
        corpus.warnings.append(
            f"{root / 'qrels' / f'{split}.tsv'}: {len(unknown)} qrels query ids not in queries.jsonl (ignored)"
        )
    return corpus, questions, qrels
