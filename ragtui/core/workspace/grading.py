"""The grades part of a workspace (``Grades``, built by ``grades``): hand labels over the evidence
rule (or the qrels), label status, disputes between annotators, and the grades the metrics read at
the evaluation level (chunks, or documents at their best chunk).

Saving a grade is ``Workspace.set_grade``: the label journal first, then the numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ragtui.core.data.golden import EVIDENCE_GRADE, EvidenceIndex, Question
from ragtui.core.labelling.journal import Label, LabelJournal
from ragtui.core.labelling.labels import (
    GRADES_HUMAN_MODEL,
    HistoryMark,
    PairLabels,
    labelled_since,
)
from ragtui.core.metrics.formulas import QuestionMetrics
from ragtui.core.metrics.tables import GradeArrays, GradeRows
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.results_cache import EvidenceCache
from ragtui.core.settings import Settings
from ragtui.core.workspace.loading import (
    LEVEL_DOCUMENT,
    SOURCE_ADJUDICATED,
    SOURCE_EVIDENCE,
    SOURCE_HAND,
    SOURCE_MODEL,
    Data,
    Passages,
)
from ragtui.core.workspace.question_set import QuestionSet


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


@dataclass
class _Disputes:
    """The questions with a disputed pair, kept from one call of ``Grades.disputed_questions`` to
    the next: only the questions the journal gained labels for since are looked at again."""

    mark: HistoryMark | None = None
    #: How many questions and passages the labels were read against (more: read them all again).
    sizes: tuple[int, int] = (-1, -1)
    found: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Grades:
    """The grades a workspace judges by, read against the parts they grade: the label journal (its
    own writer), the grades before hand labels (the evidence rule's or the qrels'), and the data,
    questions and passages the labels name (replaced with the questions by ``Workspace``)."""

    labels: LabelJournal
    #: The grades before hand labels: question -> chunk -> grade.
    base: MutableMapping[str, dict[str, int]]
    data: Data
    questions: QuestionSet
    passages: Passages
    _disputes: _Disputes = field(default_factory=_Disputes, init=False, repr=False, compare=False)

    # ---- label status ----------------------------------------------------------------------------

    def label_status(self, label: Label) -> str | None:
        """Why a hand label does not apply (unknown question, missing or edited chunk), or None if it applies."""
        if self.questions.row(label.question) < 0:
            return "unknown question"
        chunk = self.passages.by_id.get(label.chunk)
        if chunk is None:
            return "chunk not in the chunked corpus"
        if label.chunk_sha1 and label.chunk_sha1 != chunk.sha1:
            return "chunk text changed since it was labelled"
        return None

    def _applies(self) -> Callable[[Label], bool]:
        """Whether a label applies (``label_status`` finds nothing against it)."""
        return lambda label: self.label_status(label) is None

    def count_stale(self) -> int:
        """How many current hand labels do not apply (``stale_labels``' length, without the reasons)."""
        return sum(
            1
            for _, _, pair in self.labels.iter_pairs()
            for label in pair.labels()
            if self.label_status(label)
        )

    def stale_labels(self) -> list[StaleLabel]:
        """Current hand labels (every annotator's and the adjudicated ones) that do not apply, with reasons, in journal order."""
        out = []
        for _, _, pair in self.labels.iter_pairs():
            for label in pair.labels():
                reason = self.label_status(label)
                if reason:
                    out.append(StaleLabel(label, reason))
        out.sort(key=lambda stale: stale.label.line)
        return out

    # ---- hand, effective and shown grades --------------------------------------------------------

    def hand_label(self, qid: str, cid: str) -> Label | None:
        """The hand label that counts for a pair, among those that apply: the adjudicated one, else the
        only annotator's, else the latest annotator's (see ``disputed``); None when none applies."""
        pair = self.labels.pair(qid, cid)
        return (
            pair.effective(self._applies(), self.labels.count_models) if pair is not None else None
        )

    def hand_labels(self, qid: str) -> dict[str, Label]:
        """``hand_label`` of every labelled chunk of a question that has one (chunk id -> label)."""
        applies = self._applies()
        models = self.labels.count_models
        out: dict[str, Label] = {}
        for cid, pair in self.labels.pairs.get(qid, {}).items():
            label = pair.effective(applies, models)
            if label is not None:
                out[cid] = label
        return out

    def hand_grades(self, qid: str, own: bool = False) -> dict[str, int]:
        """The hand grades of a question that apply (stale labels left out; one grade per pair, see
        ``hand_label``): of ragtui's chunks, and with ``own`` of live retrievers' own passages too."""
        foreign = self.passages.foreign
        return {
            cid: label.grade
            for cid, label in self.hand_labels(qid).items()
            if label.grade is not None and (own or cid not in foreign)
        }

    def effective_grades(self, qid: str) -> dict[str, int]:
        """The grades ragtui's retrievers are judged by: the evidence rule (or qrels) over ragtui's
        chunks, overridden by hand grades (a live retriever's own passages are not among them)."""
        grades = dict(self.base.get(qid, {}))
        grades.update(self.hand_grades(qid))
        return grades

    def grade_source(self, qid: str, cid: str) -> tuple[int | None, str | None]:
        """A chunk's effective grade for a question and where it came from (hand, adjudicated, evidence, qrels), or (None, None)."""
        label = self.hand_label(qid, cid)
        if label is not None and label.grade is not None:
            if label.is_model:
                return label.grade, SOURCE_MODEL
            return label.grade, SOURCE_ADJUDICATED if label.adjudicated else SOURCE_HAND
        return self.base_grade(qid, cid)

    def base_grade(self, qid: str, cid: str) -> tuple[int | None, str | None]:
        """A chunk's grade before any label (the evidence rule's or the qrels') and its source, or
        (None, None)."""
        base = self.base.get(qid, {})
        if cid in base:
            return base[cid], self.data.base_source
        own = self.passages.own_grades.get(qid, {})
        if cid in own:
            return own[cid], self.data.base_source
        return None, None

    # ---- annotators and disputes -----------------------------------------------------------------

    def annotator_grades(self, qid: str, cid: str) -> dict[str, int]:
        """Each annotator's current grade of a pair that applies, by name (the adjudicated grade aside)."""
        pair = self.labels.pair(qid, cid)
        return pair.grades(self._applies()) if pair is not None else {}

    def judge_verdicts(self, qid: str, cid: str) -> dict[str, Label]:
        """Each model judge's current verdict of a pair that applies, by judge name (counted or not)."""
        pair = self.labels.pair(qid, cid)
        return pair.verdicts(self._applies()) if pair is not None else {}

    def adjudicated_grade(self, qid: str, cid: str) -> int | None:
        """The adjudicated grade of a pair when there is one that applies, else None."""
        pair = self.labels.pair(qid, cid)
        label = pair.adjudicated if pair is not None else None
        return label.grade if label is not None and self.label_status(label) is None else None

    def disputed(self, qid: str, cid: str) -> bool:
        """Whether annotators gave a pair different grades (those that apply) and no adjudicated grade settles it."""
        pair = self.labels.pair(qid, cid)
        return pair is not None and pair.disputed(self._applies())

    def disputed_pairs(self, qid: str | None = None) -> list[tuple[str, str]]:
        """The disputed (question, chunk) pairs, of one question or of all, in golden-set then chunk order."""
        if qid is not None:
            qids = [qid]
        else:
            labelled = [q for q in self.labels.pairs if q in self.questions.by_id]
            qids = self.questions.in_golden_order(labelled)
        applies = self._applies()
        unknown = len(self.passages.order)
        out: list[tuple[str, str]] = []
        for q in qids:
            chunks = [
                c for c, pair in self.labels.pairs.get(q, {}).items() if pair.disputed(applies)
            ]
            chunks.sort(key=lambda c: (self.passages.order.get(c, unknown), c))
            out.extend((q, c) for c in chunks)
        return out

    def disputed_questions(self) -> list[str]:
        """The questions with at least one disputed pair, in golden-set order.

        Asked at every grade (the question list marks them): only the questions the journal
        gained labels for since the last call are looked at again, not every labelled pair (360
        ms a key with 300,000 labels over 100,000 questions)."""
        applies = self._applies()
        pairs, cache, row = self.labels.pairs, self._disputes, self.questions.row

        def disputed(qid: str, by_chunk: Mapping[str, PairLabels]) -> bool:
            return row(qid) >= 0 and any(pair.disputed(applies) for pair in by_chunk.values())

        since, cache.mark = labelled_since(self.labels.history, cache.mark)
        sizes = (len(self.questions), len(self.passages.by_id))
        if since is None or sizes != cache.sizes:  # read again, or a label may apply now
            cache.sizes = sizes
            cache.found = {qid for qid, by_chunk in pairs.items() if disputed(qid, by_chunk)}
        for qid in since or ():
            if disputed(qid, pairs.get(qid, {})):
                cache.found.add(qid)
            else:
                cache.found.discard(qid)
        return self.questions.in_golden_order(cache.found)

    # ---- the evaluation level --------------------------------------------------------------------

    def evaluated_ranking(self, ranking: Ranking) -> Ranking:
        """A ranking as the metrics read it: chunks, or at document level each document at its best chunk's rank (MaxP)."""
        if self.data.level != LEVEL_DOCUMENT:
            return ranking
        out: Ranking = []
        seen: set[str] = set()
        for cid, score in ranking:
            doc = self.passages.doc_of(cid)
            if doc not in seen:
                seen.add(doc)
                out.append((doc, score))
        return out

    def evaluated_rankings(
        self, by_question: MutableMapping[str, Ranking]
    ) -> MutableMapping[str, Ranking]:
        """``evaluated_ranking`` of every question's ranking (the same mapping at chunk level)."""
        if self.data.level != LEVEL_DOCUMENT:
            return by_question
        return {qid: self.evaluated_ranking(r) for qid, r in by_question.items()}

    def evaluation_grades(
        self, qid: str, hand: dict[str, int] | None = None, base: bool = True
    ) -> dict[str, int]:
        """The grades the metrics use: chunk grades, or at document level the qrels with hand grades lifted to documents.

        ``hand`` replaces the hand grades that apply (``hand_grades``) with others of ragtui's chunks
        (the estimates lay people's only, or a model judge's, over the base grades the same way).
        Without ``base``, ``hand`` alone (lifted to documents at document level): a model judge's
        side, which the qrels (people's grades) must not fill.

        At document level a document's hand grade is the highest hand grade of its chunks, and it
        overrides the qrels grade of that document.
        """
        if hand is None:
            hand = self.hand_grades(qid)
        if not base:
            if self.data.level != LEVEL_DOCUMENT:
                return dict(hand)
            alone: dict[str, int] = {}
            for cid, grade in hand.items():
                doc = self.passages.doc_of(cid)
                alone[doc] = max(alone.get(doc, grade), grade)
            return alone
        if self.data.level != LEVEL_DOCUMENT:
            grades = dict(self.base.get(qid, {}))
            grades.update(hand)
            # A judged document the corpus lacks stays relevant and unretrievable (trec_eval's reading).
            for doc, grade in self.data.qrels.get(qid, {}).items():
                if doc not in self.data.corpus_docs:
                    grades.setdefault(doc, grade)
            return grades
        grades = dict(self.data.qrels.get(qid, {}))
        lifted: dict[str, int] = {}
        for cid, grade in hand.items():
            doc = self.passages.doc_of(cid)
            lifted[doc] = max(lifted.get(doc, grade), grade)
        grades.update(lifted)
        return grades


def grades(
    settings: Settings, data: Data, questions: QuestionSet, passages: Passages, warnings: list[str]
) -> Grades:
    """The grades part: the golden set's label journal, read, and the base grades of every
    question (the evidence cache's warnings go to ``warnings``)."""
    assert settings.golden is not None
    labels = LabelJournal(
        Path(settings.golden) / "labels.jsonl",
        settings.annotator,
        models=settings.counted_grades == GRADES_HUMAN_MODEL,
    )
    base: MutableMapping[str, dict[str, int]] = (
        _evidence_grades(settings, data, questions, warnings)
        if data.base_source == SOURCE_EVIDENCE
        else _qrels_grades(data, questions)
    )
    return Grades(labels, base, data, questions, passages)


def _qrels_grades(data: Data, questions: Iterable[Question]) -> dict[str, dict[str, int]]:
    """The BEIR qrels as chunk grades (a chunked document's chunks share its grade).

    At document level these chunk grades are what the app shows beside a chunk; the metrics read
    the qrels themselves (``Grades.evaluation_grades``).
    """
    by_doc: dict[str, list[str]] = {}
    for c in data.chunks:
        by_doc.setdefault(c.doc, []).append(c.id)
    grades: dict[str, dict[str, int]] = {}
    for q in questions:
        graded: dict[str, int] = {}
        for doc, grade in data.qrels.get(q.id, {}).items():
            for cid in by_doc.get(doc, ()):
                graded[cid] = grade
        grades[q.id] = graded
    return grades


def _evidence_grades(
    settings: Settings, data: Data, questions: QuestionSet, warnings: list[str]
) -> GradeRows:
    """The evidence rule's grades of every question, from the evidence cache (only the evidence
    strings it lacks are matched against the chunks)."""
    chunks = data.chunks
    index: list[EvidenceIndex] = []

    def match(needle: str) -> list[int]:
        if not index:
            index.append(EvidenceIndex([c.id for c in chunks], [c.text for c in chunks]))
        return index[0].matching_indices(needle)

    cache = EvidenceCache(data.chunks_key, len(chunks), settings.cache_dir)
    evidence, known = questions.evidence()
    offsets, codes = cache.lookup(evidence, match, known)
    warnings.extend(cache.warnings)
    arrays = GradeArrays(
        questions.loaded_ids,
        data.chunk_ids,
        offsets,
        codes,
        np.full(len(codes), EVIDENCE_GRADE, dtype=np.int64),
        questions.loaded_rows,
    )
    return GradeRows(arrays)
