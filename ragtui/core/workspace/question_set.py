"""The golden questions as a workspace changes them: a question added (appended to questions.jsonl
and evaluated at once), inserted (appended off the UI thread, ranked by ``search_adhoc``), retired
or brought back; and the ad-hoc search of any typed text, which adds and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from ragtui.core.data.corpus import Corpus
from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question
from ragtui.core.data.paths import is_bundled
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import (
    QUESTIONS_FILE,
    AddedQuestion,
    append_question,
    validate_new_question,
)
from ragtui.core.labelling.authoring import set_retired as write_retired
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Ranking
from ragtui.core.retrieval.live import LiveError, LiveRetriever
from ragtui.core.workspace.grading import Graded, question_positions
from ragtui.core.workspace.vectors import Ranked, rank_new


class Questioned(Ranked, Graded, Protocol):
    """What the question functions read and change of a workspace (``Workspace`` is one)."""

    corpus: Corpus
    live: dict[str, LiveRetriever]

    @property
    def retrievers(self) -> list[str]:
        """The shown retrievers, in display order."""
        ...

    def ranking(self, name: str, qid: str) -> Ranking:
        """A retriever's ranking of a golden question."""
        ...

    def search_live(self, name: str, text: str, depth: int | None = None) -> Ranking:
        """One live retriever's ranking of a text (LiveError when it fails)."""
        ...

    def writable_golden(self) -> Path:
        """The golden-set folder to write into (the user's copy of the bundled set)."""
        ...

    def evaluate_all(self) -> Evaluation:
        """Every shown retriever evaluated on every question from scratch."""
        ...


def rank_text(
    ws: Questioned, text: str, depth: int, errors: dict[str, str] | None = None
) -> dict[str, Ranking]:
    """The ranking of a text by every retriever object built so far (shown or only fused), live
    ones included once they have answered the golden set (a failure goes to ``errors``)."""
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
    ws: Questioned, text: str, depth: int | None = None, errors: dict[str, str] | None = None
) -> dict[str, Ranking]:
    """Every ready chosen retriever's ranking for any typed text (ad-hoc query mode); nothing is added or written.

    bm25 is ready at once, vector and hybrid once ``prepare_vectors`` (or the app's worker) has
    built them; the vector search embeds the text through the workspace's embedding cache. Live
    retrievers are asked (through their cache) once they have answered the golden set; one that
    fails is left out and its one-line reason put in ``errors``.
    """
    if not text.strip():
        raise ValueError("the query is empty")
    found = rank_text(ws, text, depth if depth is not None else ws.settings.depth, errors)
    builtin = [n for n in RETRIEVER_NAMES if n in ws.settings.retrievers and n in found]
    return {name: found[name] for name in builtin + [n for n in ws.live if n in found]}


def add_question(
    ws: Questioned,
    text: str,
    evidence: str | list[str],
    slices: Iterable[str] = (),
    qid: str | None = None,
) -> AddedQuestion:
    """Append a validated question to questions.jsonl (atomically) and evaluate it at once with every ready retriever."""
    settings = ws.settings
    if settings.beir is not None:
        raise InputError(
            settings.beir,
            "questions can only be added to a --golden folder, not to a BEIR dataset",
        )
    assert settings.golden is not None
    if is_bundled(settings.golden):
        # Checked before the bundled set is copied, so a refused question copies nothing.
        validate_new_question(
            text,
            evidence,
            list(slices),
            qid,
            [q.id for q in ws.questions],
            ws.chunks,
            ws.corpus.documents,
            Path(settings.golden) / QUESTIONS_FILE,
        )
    question = append_question(
        ws.writable_golden(),
        text,
        evidence,
        list(slices),
        qid,
        chunks=ws.chunks,
        documents=ws.corpus.documents,
    )
    return insert_question(ws, question, rank_text(ws, question.text, ws.settings.depth))


def insert_question(
    ws: Questioned, question: Question, rankings: dict[str, Ranking]
) -> AddedQuestion:
    """Add a question already appended to questions.jsonl, with its rankings (computed off the UI
    thread by ``search_adhoc``), and evaluate it."""
    index = EvidenceIndex([c.id for c in ws.chunks], [c.text for c in ws.chunks])
    relevant = index.matching_chunks(question.evidence)
    ws.questions.append(question)
    ws.question_by_id[question.id] = question
    ws.base_grades[question.id] = dict.fromkeys(relevant, EVIDENCE_GRADE)
    for name, by_question in ws.rankings.items():
        if name in rankings:
            by_question[question.id] = rankings[name]
        else:
            by_question.setdefault(question.id, rank_new(ws, name, question.text))
    evaluation = ws.evaluate_all()
    ranked = {n: ws.ranking(n, question.id) for n in ws.retrievers}
    metrics = {n: evaluation.per_question[n][question.id] for n in ws.retrievers}
    return AddedQuestion(question, relevant, ranked, metrics)


def retire(ws: Questioned, qid: str, retired: bool) -> Question:
    """Mark a question retired (or not) in questions.jsonl (its line rewritten atomically under the
    lock) and in the workspace's lists; the caller evaluates again."""
    if qid not in ws.question_by_id:
        raise InputError(None, f"no question {qid!r}")
    if ws.settings.beir is not None and ws.settings.golden == ws.settings.beir:
        raise InputError(ws.settings.beir, "BEIR queries cannot be retired (no questions.jsonl)")
    updated = write_retired(ws.writable_golden(), qid, retired)
    position = int(question_positions(ws, [qid])[0])
    ws.questions[position] = updated
    ws.question_by_id[qid] = updated
    return updated
