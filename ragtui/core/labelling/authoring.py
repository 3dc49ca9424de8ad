"""Growing the golden set: ad-hoc queries, and new questions appended to ``questions.jsonl`` safely.

A new question is validated against the current chunking (every evidence string must lie inside
some chunk), given an id (the next ``<prefix><number>`` after the file's last id when none is
given), and written atomically: under an exclusive lock on ``questions.jsonl``, the old bytes plus
the new line go to a temporary file that is fsynced and renamed over the old one, so readers see
either the old file or the new one, and every old line stays byte-identical.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document, read_jsonl
from ragtui.core.data.golden import (
    EVIDENCE_GRADE,
    EvidenceIndex,
    Question,
    parse_question,
    straddling_pairs,
)
from ragtui.core.errors import InputError
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Ranking

if TYPE_CHECKING:
    from ragtui.core.workspace import Workspace

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
) -> tuple[Question, list[str]]:
    """The question to append and its matching chunk ids, or an InputError saying what is wrong.

    Every evidence string must lie inside some chunk of ``chunks``; the message says when one
    straddles a chunk boundary (naming the two chunks) or is in no document. The id, if given, must
    be new and hold no white space (TREC files split on it); if not given, :func:`next_question_id`.
    """
    items = (evidence,) if isinstance(evidence, str) else tuple(evidence)
    obj: dict[str, object] = {
        "id": qid if qid is not None else next_question_id(existing_ids),
        "question": question_text,
        "evidence": list(items),
        "slices": [s.strip() for s in slices if s.strip()],
    }
    where = path or Path(QUESTIONS_FILE)
    try:
        question = parse_question(obj, where, 0)
    except InputError as exc:  # the new line has no line number yet
        raise InputError(where, exc.problem) from None
    if any(ch.isspace() for ch in question.id):
        raise InputError(where, f"question id {question.id!r} must not contain white space")
    if question.id in existing_ids:
        raise InputError(where, f"question id {question.id!r} is already in the golden set")
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


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``, retrying when it was replaced (by another writer's rename) meanwhile."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(path, f"cannot write the golden set ({exc.strerror})") from None
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        st = os.fstat(fd)
        if now is not None and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            break
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def question_line(question: Question) -> bytes:
    """The ``questions.jsonl`` line of a question (the bundled file's style), without the newline."""
    evidence: object = (
        question.evidence[0] if len(question.evidence) == 1 else list(question.evidence)
    )
    obj = {
        "id": question.id,
        "question": question.text,
        "evidence": evidence,
        "slices": list(question.slices),
    }
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


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
    with _locked(path):
        old = path.read_bytes()
        existing_ids = [str(obj.get("id")) for _, obj in read_jsonl(path)] if old.strip() else []
        question, _ = validate_new_question(
            question_text, evidence, slices, qid, existing_ids, chunks, documents, path
        )
        lead = b"" if not old or old.endswith(b"\n") else b"\n"
        line_number = old.count(b"\n") + (1 if lead else 0) + 1
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as out:
                out.write(old + lead + question_line(question) + b"\n")
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, path.stat().st_mode & 0o7777)
            os.replace(tmp, path)
        except OSError as exc:
            raise InputError(path, f"cannot write the golden set ({exc.strerror})") from None
        finally:
            tmp.unlink(missing_ok=True)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return Question(question.id, question.text, question.evidence, question.slices, line_number)


# ---- the workspace side ------------------------------------------------------------------------


def _all_rankings(
    ws: Workspace, text: str, depth: int, errors: dict[str, str] | None = None
) -> dict[str, Ranking]:
    """The ranking of every retriever object the workspace has built (shown or only fused), live ones included.

    A live retriever that has answered the golden set (fully or in part) is asked through its
    cache; one that fails here is left out, its reason put in ``errors``.
    """
    from ragtui.core.retrieval.live import LiveError

    out: dict[str, Ranking] = {}
    if ws.bm25 is not None:
        out["bm25"] = ws.bm25.search(text, depth)
    if ws.vector is not None:
        out["vector"] = ws.vector.search(text, depth)
    if ws.hybrid is not None and "bm25" in out and "vector" in out:
        out["hybrid"] = ws.hybrid.fuse(out["bm25"], out["vector"], depth)
    for name in ws.live:
        if name not in ws.rankings:
            continue  # not ready, or failed on every question: not asked again here
        try:
            out[name] = ws.search_live(name, text, depth)
        except LiveError as exc:
            if errors is not None:
                errors[name] = str(exc)
    return out


def search_adhoc(
    ws: Workspace, text: str, depth: int | None = None, errors: dict[str, str] | None = None
) -> dict[str, Ranking]:
    """Every ready chosen retriever's ranking for any typed text (ad-hoc query mode); nothing is added or written.

    bm25 is ready at once, vector and hybrid once ``prepare_vectors`` (or the app's worker) has
    built them; the vector search embeds the text through the workspace's embedding cache. Live
    retrievers are asked (through their cache) once they have answered the golden set; a live
    retriever that fails is left out and its one-line reason put in ``errors``.
    """
    if not text.strip():
        raise ValueError("the query is empty")
    found = _all_rankings(ws, text, depth if depth is not None else ws.settings.depth, errors)
    builtin = [name for name in RETRIEVER_NAMES if name in ws.settings.retrievers and name in found]
    return {name: found[name] for name in builtin + [n for n in ws.live if n in found]}


def add_question(
    ws: Workspace,
    question_text: str,
    evidence: str | Sequence[str],
    slices: Sequence[str] = (),
    qid: str | None = None,
) -> AddedQuestion:
    """Append a question to the workspace's golden set and evaluate it at once with every ready retriever."""
    if ws.settings.beir is not None:
        raise InputError(
            ws.settings.beir,
            "questions can only be added to a --golden folder, not to a BEIR dataset",
        )
    assert ws.settings.golden is not None
    question = append_question(
        ws.settings.golden,
        question_text,
        evidence,
        slices,
        qid,
        chunks=ws.chunks,
        documents=ws.corpus.documents,
    )
    index = EvidenceIndex([c.id for c in ws.chunks], [c.text for c in ws.chunks])
    relevant = index.matching_chunks(question.evidence)
    ws.questions.append(question)
    ws.question_by_id[question.id] = question
    ws.base_grades[question.id] = dict.fromkeys(relevant, EVIDENCE_GRADE)
    found = _all_rankings(ws, question.text, ws.settings.depth)
    for name, ranking in found.items():
        if name in ws.rankings:
            ws.rankings[name][question.id] = ranking
    # Rebuilt as set_k does: an Evaluation holds a fixed list of questions.
    ws.rebuild_evaluation()
    assert ws.evaluation is not None
    rankings = {n: ws.ranking(n, question.id) for n in ws.retrievers}
    metrics = {n: ws.evaluation.per_question[n][question.id] for n in ws.retrievers}
    return AddedQuestion(question, relevant, rankings, metrics)
