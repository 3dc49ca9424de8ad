"""The grades a workspace judges by: hand labels over the evidence rule (or the qrels), label status,
disputes between annotators, the evaluation level (chunks, or documents at their best chunk), and
a grade saved or undone (the label journal first, then the numbers of the questions it touched).

Each function reads a workspace through ``Graded`` (what it holds of grades and labels); the
``Workspace`` methods of the same names call them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.golden import Question
from ragtui.core.labelling.journal import Label, LabelJournal
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.retrieval.base import Ranking

#: Where an effective grade came from.
SOURCE_EVIDENCE = "evidence"
SOURCE_QRELS = "qrels"
SOURCE_HAND = "hand"
#: A hand grade that settles a dispute: it wins over every annotator's grade of the pair.
SOURCE_ADJUDICATED = "adjudicated"
#: A model judge's verdict, counted where no person graded the pair (``--grades human+model``).
SOURCE_MODEL = "model"

#: The levels a workspace evaluates at: chunks, or documents (a document ranks at its best chunk's rank).
LEVEL_CHUNK = "chunk"
LEVEL_DOCUMENT = "document"


@dataclass(frozen=True, slots=True)
class StaleLabel:
    """A hand label that no longer applies, with the reason; kept in the journal, never applied."""

    label: Label
    reason: str


@dataclass(frozen=True, slots=True)
class GradeChange:
    """What one label change did: the label written, each retriever's (old, new) values, and new journal warnings.

    ``warnings`` are the journal's warnings not reported before (another writer's bad line, met
    while our own line was saved and applied): a front end shows them.
    """

    question: str
    chunk: str
    label: Label
    changes: dict[str, tuple[QuestionMetrics, QuestionMetrics]]
    warnings: tuple[str, ...] = ()


class Graded(Protocol):
    """What the grade functions read of a workspace (``Workspace`` is one)."""

    labels: LabelJournal
    questions: list[Question]
    question_by_id: dict[str, Question]
    chunk_by_id: dict[str, Chunk]
    chunk_order: dict[str, int]
    loaded_rows: dict[str, int]
    #: The grades before hand labels, and where they come from (evidence or qrels).
    base_grades: MutableMapping[str, dict[str, int]]
    base_source: str
    #: Live retrievers' own passages and their evidence-rule (or qrels) grades.
    foreign: dict[str, Chunk]
    own_grades: dict[str, dict[str, int]]
    level: str
    qrels: dict[str, dict[str, int]]
    corpus_docs: set[str]


# ---- label status ----------------------------------------------------------------------------


def label_status(ws: Graded, label: Label) -> str | None:
    """Why a hand label does not apply (unknown question, missing or edited chunk), or None if it applies."""
    if label.question not in ws.question_by_id:
        return "unknown question"
    chunk = ws.chunk_by_id.get(label.chunk)
    if chunk is None:
        return "chunk not in the chunked corpus"
    if label.chunk_sha1 and label.chunk_sha1 != chunk.sha1:
        return "chunk text changed since it was labelled"
    return None


def _applies(ws: Graded) -> Callable[[Label], bool]:
    """Whether a label applies (``label_status`` finds nothing against it)."""
    return lambda label: label_status(ws, label) is None


def count_stale(ws: Graded) -> int:
    """How many current hand labels do not apply (``stale_labels``' length, without the reasons)."""
    return sum(
        1
        for _, _, pair in ws.labels.iter_pairs()
        for label in pair.labels()
        if label_status(ws, label)
    )


def stale_labels(ws: Graded) -> list[StaleLabel]:
    """Current hand labels (every annotator's and the adjudicated ones) that do not apply, with reasons, in journal order."""
    out = []
    for _, _, pair in ws.labels.iter_pairs():
        for label in pair.labels():
            reason = label_status(ws, label)
            if reason:
                out.append(StaleLabel(label, reason))
    out.sort(key=lambda stale: stale.label.line)
    return out


# ---- hand, effective and shown grades --------------------------------------------------------


def hand_label(ws: Graded, qid: str, cid: str) -> Label | None:
    """The hand label that counts for a pair, among those that apply: the adjudicated one, else the
    only annotator's, else the latest annotator's (see ``disputed``); None when none applies."""
    pair = ws.labels.pair(qid, cid)
    return pair.effective(_applies(ws), ws.labels.count_models) if pair is not None else None


def hand_labels(ws: Graded, qid: str) -> dict[str, Label]:
    """``hand_label`` of every labelled chunk of a question that has one (chunk id -> label)."""
    applies = _applies(ws)
    models = ws.labels.count_models
    out: dict[str, Label] = {}
    for cid, pair in ws.labels.pairs.get(qid, {}).items():
        label = pair.effective(applies, models)
        if label is not None:
            out[cid] = label
    return out


def hand_grades(ws: Graded, qid: str, own: bool = False) -> dict[str, int]:
    """The hand grades of a question that apply (stale labels left out; one grade per pair, see
    ``hand_label``): of ragtui's chunks, and with ``own`` of live retrievers' own passages too."""
    foreign = ws.foreign
    return {
        cid: label.grade
        for cid, label in hand_labels(ws, qid).items()
        if label.grade is not None and (own or cid not in foreign)
    }


def effective_grades(ws: Graded, qid: str) -> dict[str, int]:
    """The grades ragtui's retrievers are judged by: the evidence rule (or qrels) over ragtui's
    chunks, overridden by hand grades (a live retriever's own passages are not among them)."""
    grades = dict(ws.base_grades.get(qid, {}))
    grades.update(hand_grades(ws, qid))
    return grades


def grade_source(ws: Graded, qid: str, cid: str) -> tuple[int | None, str | None]:
    """A chunk's effective grade for a question and where it came from (hand, adjudicated, evidence, qrels), or (None, None)."""
    label = hand_label(ws, qid, cid)
    if label is not None and label.grade is not None:
        if label.is_model:
            return label.grade, SOURCE_MODEL
        return label.grade, SOURCE_ADJUDICATED if label.adjudicated else SOURCE_HAND
    base = ws.base_grades.get(qid, {})
    if cid in base:
        return base[cid], ws.base_source
    own = ws.own_grades.get(qid, {})
    if cid in own:
        return own[cid], ws.base_source
    return None, None


# ---- annotators and disputes -----------------------------------------------------------------


def annotator_grades(ws: Graded, qid: str, cid: str) -> dict[str, int]:
    """Each annotator's current grade of a pair that applies, by name (the adjudicated grade aside)."""
    pair = ws.labels.pair(qid, cid)
    return pair.grades(_applies(ws)) if pair is not None else {}


def judge_verdicts(ws: Graded, qid: str, cid: str) -> dict[str, Label]:
    """Each model judge's current verdict of a pair that applies, by judge name (counted or not)."""
    pair = ws.labels.pair(qid, cid)
    return pair.verdicts(_applies(ws)) if pair is not None else {}


def adjudicated_grade(ws: Graded, qid: str, cid: str) -> int | None:
    """The adjudicated grade of a pair when there is one that applies, else None."""
    pair = ws.labels.pair(qid, cid)
    label = pair.adjudicated if pair is not None else None
    return label.grade if label is not None and label_status(ws, label) is None else None


def disputed(ws: Graded, qid: str, cid: str) -> bool:
    """Whether annotators gave a pair different grades (those that apply) and no adjudicated grade settles it."""
    pair = ws.labels.pair(qid, cid)
    return pair is not None and pair.disputed(_applies(ws))


def question_positions(ws: Graded, qids: Iterable[str]) -> np.ndarray:
    """Each question's place in the golden set (``ws.questions``), ``-1`` for an unknown id;
    read from the rows kept at load, so no pass over every question."""
    loaded = ws.loaded_rows
    questions = ws.questions
    tail: dict[str, int] | None = None
    out = []
    for qid in qids:
        row = loaded.get(qid)
        if row is None or row >= len(questions) or questions[row].id != qid:
            if tail is None:  # added since the load (or a list changed another way)
                tail = {q.id: i for i, q in enumerate(questions)}
            row = tail.get(qid, -1)
        out.append(row)
    return np.asarray(out, dtype=np.int64)


def _in_golden_order(ws: Graded, qids: Iterable[str]) -> list[str]:
    """``qids`` in golden-set order."""
    chosen = list(qids)
    return [chosen[i] for i in np.argsort(question_positions(ws, chosen), kind="stable")]


def disputed_pairs(ws: Graded, qid: str | None = None) -> list[tuple[str, str]]:
    """The disputed (question, chunk) pairs, of one question or of all, in golden-set then chunk order."""
    if qid is not None:
        qids = [qid]
    else:
        labelled = [q for q in ws.labels.pairs if q in ws.question_by_id]
        qids = _in_golden_order(ws, labelled)
    applies = _applies(ws)
    unknown = len(ws.chunk_order)
    out: list[tuple[str, str]] = []
    for q in qids:
        chunks = [c for c, pair in ws.labels.pairs.get(q, {}).items() if pair.disputed(applies)]
        chunks.sort(key=lambda c: (ws.chunk_order.get(c, unknown), c))
        out.extend((q, c) for c in chunks)
    return out


def disputed_questions(ws: Graded) -> list[str]:
    """The questions with at least one disputed pair, in golden-set order (only labelled
    questions are looked at)."""
    applies = _applies(ws)
    found = [
        qid
        for qid, pairs in ws.labels.pairs.items()
        if qid in ws.question_by_id and any(pair.disputed(applies) for pair in pairs.values())
    ]
    return _in_golden_order(ws, found)


# ---- the evaluation level --------------------------------------------------------------------


def doc_of(ws: Graded, cid: str) -> str:
    """The document of a chunk id (an id that is no chunk stands for itself: a document id)."""
    chunk = ws.chunk_by_id.get(cid)
    return chunk.doc if chunk is not None else cid


def evaluated_ranking(ws: Graded, ranking: Ranking) -> Ranking:
    """A ranking as the metrics read it: chunks, or at document level each document at its best chunk's rank (MaxP)."""
    if ws.level != LEVEL_DOCUMENT:
        return ranking
    out: Ranking = []
    seen: set[str] = set()
    for cid, score in ranking:
        doc = doc_of(ws, cid)
        if doc not in seen:
            seen.add(doc)
            out.append((doc, score))
    return out


def evaluated_rankings(
    ws: Graded, by_question: MutableMapping[str, Ranking]
) -> MutableMapping[str, Ranking]:
    """``evaluated_ranking`` of every question's ranking (the same mapping at chunk level)."""
    if ws.level != LEVEL_DOCUMENT:
        return by_question
    return {qid: evaluated_ranking(ws, r) for qid, r in by_question.items()}


def evaluation_grades(ws: Graded, qid: str, hand: dict[str, int] | None = None) -> dict[str, int]:
    """The grades the metrics use: chunk grades, or at document level the qrels with hand grades lifted to documents.

    ``hand`` replaces the hand grades that apply (``hand_grades``) with others of ragtui's chunks
    (the estimates lay people's only, or a model judge's, over the base grades the same way).

    At document level a document's hand grade is the highest hand grade of its chunks, and it
    overrides the qrels grade of that document.
    """
    if hand is None:
        hand = hand_grades(ws, qid)
    if ws.level != LEVEL_DOCUMENT:
        grades = dict(ws.base_grades.get(qid, {}))
        grades.update(hand)
        # A judged document the corpus lacks stays relevant and unretrievable (trec_eval's reading).
        for doc, grade in ws.qrels.get(qid, {}).items():
            if doc not in ws.corpus_docs:
                grades.setdefault(doc, grade)
        return grades
    grades = dict(ws.qrels.get(qid, {}))
    lifted: dict[str, int] = {}
    for cid, grade in hand.items():
        doc = doc_of(ws, cid)
        lifted[doc] = max(lifted.get(doc, grade), grade)
    grades.update(lifted)
    return grades


# ---- saving a grade --------------------------------------------------------------------------


class Regraded(Graded, Protocol):
    """What saving a grade reads and changes of a workspace besides its grades."""

    evaluation: Evaluation | None

    def writable_golden(self) -> Path:
        """The golden-set folder to write into (the user's copy of the bundled set)."""
        ...


def set_grade(
    ws: Regraded, qid: str, cid: str, grade: int | None, adjudicate: bool = False
) -> GradeChange:
    """Save this annotator's hand grade (None withdraws it), or with ``adjudicate`` the adjudicated
    grade that settles the pair (None withdraws it), to the journal, fsynced, then update the numbers.

    The numbers of every question whose labels changed are updated: another writer's lines
    read with ours count too.
    """
    chunk = ws.chunk_by_id[cid]
    if qid not in ws.question_by_id:
        raise KeyError(qid)
    ws.writable_golden()
    label = ws.labels.set_grade(qid, cid, grade, chunk.sha1, adjudicate=adjudicate)
    changes = _regrade(ws, qid)
    for other in ws.labels.take_touched() - {qid}:
        _regrade(ws, other)
    return GradeChange(qid, cid, label, changes, tuple(ws.labels.take_warnings()))


def undo(ws: Regraded) -> GradeChange | None:
    """Undo the last label change (itself a journal line, of the same kind: an annotator's or adjudicated); None when there is nothing to undo."""
    if ws.labels.can_undo:
        ws.writable_golden()
    label = ws.labels.undo()
    if label is None:
        return None
    changes = _regrade(ws, label.question)
    for other in ws.labels.take_touched() - {label.question}:
        _regrade(ws, other)
    return GradeChange(
        label.question, label.chunk, label, changes, tuple(ws.labels.take_warnings())
    )


def refresh_labels(ws: Regraded) -> set[str]:
    """Apply labels another process wrote; returns the questions whose numbers or disputes changed.

    A line that cannot be read is skipped; ``take_label_warnings`` gives its warning once.
    """
    if ws.labels.changed_on_disk():  # two stat calls: the app asks every second
        ws.labels.refresh()
    touched = ws.labels.take_touched()
    for qid in touched:
        _regrade(ws, qid)
    return {q for q in touched if q in ws.question_by_id}


def _regrade(ws: Regraded, qid: str) -> dict[str, tuple[QuestionMetrics, QuestionMetrics]]:
    assert ws.evaluation is not None
    if qid not in ws.question_by_id or not ws.evaluation.covers(qid):
        return {}  # unknown, or retired: in no mean (its label is saved all the same)
    return ws.evaluation.update_question(qid)
