"""Computing the causes: one question's misses for every shown retriever (:func:`explain_misses`).

Content words are BM25 tokens longer than one character that are not stop words. An id that is not
one of ragtui's chunks (a live retriever's own passage) has no place in the chunk arrays (BM25
scores, embeddings, windows): :func:`~ragtui.core.analysis.why.coverage.chunk_index` is None for
it, and the causes that speak of how ragtui's retrievers read a chunk (``cut-off``,
``lexical-gap``) never name it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ragtui.core.analysis.why.causes import (
    CAUSES,
    FIXES,
    AmbiguousEvidence,
    CutOff,
    Finding,
    FusionLoss,
    LabelGap,
    LexicalGap,
    Miss,
    Neighbour,
    NoEvidenceChunk,
    NotRetrieved,
    Outranked,
    QuestionWhy,
    RetrieverWhy,
    Split,
)
from ragtui.core.analysis.why.coverage import ReadSpans, chunk_index, vector_coverage
from ragtui.core.data.golden import (
    EVIDENCE_GRADE,
    EvidenceIndex,
    Question,
    content_words,
    evidence_spans,
    normalize_ws,
    query_terms,
    straddling_pairs,
)
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import relevant_set
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.workspace import LEVEL_DOCUMENT, SOURCE_EVIDENCE, Workspace

__all__ = ["Context", "explain_misses", "question_words"]


def question_words(text: str) -> tuple[str, ...]:
    """The content words of a text: its distinct BM25 tokens that are not stop words and are longer
    than one character (``s`` of "doctor's", ``c`` of "vitamin c" say nothing a chunk shares)."""
    return tuple(w for w in content_words(text) if len(w) > 1)


class Context:
    """What computing causes needs once per workspace: evidence matches, chunk words, what the
    vector retriever reads."""

    def __init__(self, ws: Workspace, coverage: ReadSpans | None) -> None:
        self.ws = ws
        self.k = ws.settings.k
        self.depth = ws.settings.depth
        self.threshold = ws.settings.threshold
        self.rrf_k = ws.ranked.hybrid.k if ws.ranked.hybrid is not None else RRF_K
        #: The metrics judge documents (each at its best chunk's rank), not chunks.
        self.documents = ws.data.level == LEVEL_DOCUMENT
        self.coverage = coverage
        self._index = EvidenceIndex(
            [c.id for c in ws.data.chunks], [c.text for c in ws.data.chunks]
        )
        self._matches: dict[str, tuple[str, ...]] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        self._unmatched: dict[str, NoEvidenceChunk | Split] = {}
        self._doc_chunks: dict[str, list[str]] = {}
        for chunk in ws.data.chunks:
            self._doc_chunks.setdefault(chunk.doc, []).append(chunk.id)

    def evidence_chunks(self, evidence: str) -> tuple[str, ...]:
        """The chunks holding an evidence string, in chunk order."""
        if evidence not in self._matches:
            self._matches[evidence] = tuple(self._index.matching_chunks([evidence]))
        return self._matches[evidence]

    def searched(self, cid: str) -> bool:
        """Whether ragtui's retrievers search this id: one of ragtui's chunks, or at document level
        a document of them (a live retriever's own passage is neither)."""
        if self.documents and cid in self._doc_chunks:
            return True
        return chunk_index(self.ws, cid) is not None

    def chunk_tokens(self, cid: str) -> frozenset[str]:
        """The BM25 tokens of a chunk, or of every chunk of a document (document level)."""
        if cid not in self._tokens:
            chunk = self.ws.passages.by_id.get(cid)
            if chunk is not None:
                self._tokens[cid] = frozenset(query_terms(chunk.text))
            else:
                self._tokens[cid] = frozenset().union(
                    *(self.chunk_tokens(c) for c in self._doc_chunks.get(cid, ()))
                )
        return self._tokens[cid]

    def unmatched(self, evidence: str) -> NoEvidenceChunk | Split:
        """Why an evidence string is in no chunk: it straddles chunks of a document, or it is in none."""
        if evidence not in self._unmatched:
            needle = normalize_ws(evidence)
            docs = [d for d in self.ws.data.corpus.documents if needle in normalize_ws(d.text)]
            finding: NoEvidenceChunk | Split
            if docs:
                pairs = straddling_pairs(docs[:1], self.ws.data.chunks, evidence)
                finding = Split(evidence, docs[0].path, tuple(pairs))
            else:
                finding = NoEvidenceChunk(evidence)
            self._unmatched[evidence] = finding
        return self._unmatched[evidence]


def _placement(name: str, miss: Miss, order: int) -> tuple[bool, int, float, bool, int]:
    """How close a missed chunk came to the top k, closest first: within the top depth by rank, then
    by the retriever's score of it (unknown last); for bm25 a chunk that shares a content word with
    the question comes before one that shares none (BM25 finds only what shares words), and for the
    others that decides among equals."""
    last = miss.findings[-1]
    blind = "lexical-gap" in miss.causes
    if isinstance(last, Outranked):
        rank, score = last.rank, -last.score
    else:  # not retrieved: after every retrieved chunk, by the score the retriever gives it
        assert isinstance(last, NotRetrieved)
        rank = _UNRANKED
        score = -last.score if last.score is not None else math.inf
    return (blind and name == "bm25", rank, score, blind, order)


#: The rank a chunk outside the top depth is placed at when misses are ordered.
_UNRANKED = 1 << 30


def _ranks(
    ranking: Sequence[tuple[str, float]],
) -> tuple[list[str], dict[str, int], dict[str, float]]:
    """The unique ids of a ranking in order, their 1-based ranks and scores (a later copy is dropped,
    as the metrics drop it)."""
    ids: list[str] = []
    ranks: dict[str, int] = {}
    scores: dict[str, float] = {}
    for cid, score in ranking:
        if cid not in ranks:
            ids.append(cid)
            ranks[cid] = len(ids)
            scores[cid] = score
    return ids, ranks, scores


class _Question:
    """Computes one question's misses for each retriever."""

    def __init__(self, ctx: Context, question: Question) -> None:
        self.ctx = ctx
        self.ws = ctx.ws
        self.q = question
        ev = ctx.ws.evaluation
        assert ev is not None
        self.gains = dict(ev.gains(question.id))
        self.relevant = relevant_set(self.gains, ctx.threshold)
        self.words = question_words(question.text)
        # Hand grades by the ids the metrics judge: chunks, or documents at document level.
        self.hand = {
            self.ws.passages.doc_of(c) if ctx.documents else c: g
            for c, g in self.ws.grades.hand_grades(question.id).items()
        }
        self._bm25_scores: np.ndarray | None = None
        #: The 1-based ranks of the two lists hybrid fuses.
        self._side_ranks: dict[str, dict[str, int]] = {
            name: _ranks(self.ranking(name))[1]
            for name in ("bm25", "vector")
            if name in self.ws.ranked.rankings
        }

    def unmatched_misses(self) -> list[Miss]:
        """The question's evidence strings that lie in no chunk (when evidence counts as relevant)."""
        if self.ws.data.base_source != SOURCE_EVIDENCE or self.ctx.threshold > EVIDENCE_GRADE:
            return []
        return [
            Miss(None, e, (self.ctx.unmatched(e),))
            for e in self.q.evidence
            if not self.ctx.evidence_chunks(e)
        ]

    def neighbour(self, rank: int, cid: str, score: float) -> Neighbour:
        grade = self.gains.get(cid)
        shared = tuple(w for w in self.words if w in self.ctx.chunk_tokens(cid))
        return Neighbour(
            rank,
            cid,
            score,
            shared,
            grade,
            cid in self.hand,
            grade is not None and grade >= self.ctx.threshold,
        )

    def ranking(self, name: str) -> Ranking:
        """A retriever's ranking as the metrics judge it (documents at document level), to depth."""
        return self.ws.grades.evaluated_ranking(self.ws.ranking(name, self.q.id))[: self.ctx.depth]

    def side_rank(self, name: str, cid: str) -> int | None:
        """The chunk's rank in the bm25 or vector list hybrid fuses; None when absent."""
        return self._side_ranks.get(name, {}).get(cid)

    def within_k(self, name: str, cid: str) -> bool:
        """Whether the bm25 or vector list has the chunk in its top k."""
        rank = self.side_rank(name, cid)
        return rank is not None and rank <= self.ctx.k

    def strings_of(self, cid: str) -> list[str]:
        """The question's evidence strings the chunk holds."""
        return [e for e in self.q.evidence if cid in self.ctx.evidence_chunks(e)]

    def retriever(self, name: str, unmatched: Sequence[Miss]) -> RetrieverWhy:
        ctx = self.ctx
        ids, ranks, scores = _ranks(self.ranking(name))
        top = ids[: ctx.k]
        above = tuple(self.neighbour(i + 1, cid, scores[cid]) for i, cid in enumerate(top))
        hits = sum(1 for cid in top if cid in self.relevant)
        candidates: set[str] = set(self.relevant - set(top))
        room_of: int | None = None
        ev = self.ws.evaluation
        if ev is not None and (name in ev.own or ev.units is not None):
            # Judged as eval judges it: a live retriever with passages of its own by them too (its
            # own relevant passages in the top k are hits), and at evidence level a relevant chunk
            # whose evidence strings were found elsewhere in the top k is no miss.
            own_relevant = relevant_set(ev.gains_for(name, self.q.id), ctx.threshold)
            hits = sum(1 for cid in top if cid in own_relevant)
            if ev.units is not None:
                found = self._found_strings([c for c in top if c in own_relevant])
                candidates = {c for c in candidates if not set(self.strings_of(c)) & found}
                strings = [e for e in self.q.evidence if e.split()]
                if strings:
                    room_of = max(0, min(ctx.k, len(strings)) - len(found & set(strings)))
        order = self.ws.passages.order
        outside = [
            Miss(
                cid,
                self._first_string(cid),
                tuple(self.findings(name, cid, ids, ranks, scores, above)),
            )
            for cid in sorted(candidates, key=lambda c: (order.get(c, len(order)), c))
        ]

        # The leading misses first: labels that may be wrong (the earliest cause first), then the
        # others by how close each came to the top k.
        def leading(m: Miss) -> tuple[bool, int, tuple[bool, int, float, bool, int]]:
            label = FIXES[m.cause] == "dropped"
            place = _placement(name, m, order.get(m.chunk or "", len(order)))
            return (not label, CAUSES.index(m.cause) if label else 0, place)

        ranked = sorted(outside, key=leading)
        labels = sum(1 for m in outside if FIXES[m.cause] == "dropped")
        room = max(0, min(ctx.k, len(self.relevant)) - hits) if room_of is None else room_of
        counted = {m.chunk for m in ranked[: labels + room]}
        misses = list(unmatched) + [m for m in outside if m.chunk in counted]
        if unmatched:
            lead: str | None = min(unmatched, key=lambda m: CAUSES.index(m.cause)).cause
        else:
            lead = ranked[0].cause if counted else None
        return RetrieverWhy(
            name,
            len(self.relevant),
            hits,
            tuple(top),
            tuple(misses),
            bool(self.gains),
            len(outside) - len(counted),
            lead,
            # The value every view shows: the evaluation's, in the table's unit.
            ev.per_question[name][self.q.id].recall
            if ev is not None and name in ev.per_question and self.q.id in ev.evaluated
            else None,
        )

    def _found_strings(self, passages: Sequence[str]) -> set[str]:
        """The question's evidence strings that some of ``passages`` hold (white space collapsed)."""
        texts = []
        for cid in passages:
            chunk = self.ws.passages.by_id.get(cid)
            if chunk is not None:
                texts.append(normalize_ws(chunk.text))
        return {
            e
            for e in self.q.evidence
            if normalize_ws(e) and any(normalize_ws(e) in t for t in texts)
        }

    def _first_string(self, cid: str) -> str | None:
        strings = self.strings_of(cid)
        return strings[0] if strings else None

    def findings(
        self,
        name: str,
        cid: str,
        ids: Sequence[str],
        ranks: Mapping[str, int],
        scores: Mapping[str, float],
        above: tuple[Neighbour, ...],
    ) -> list[Finding]:
        """The causes of one missed chunk, in the order of precedence."""
        ctx = self.ctx
        by_evidence = cid not in self.hand
        strings = self.strings_of(cid) if by_evidence else []
        out: list[Finding] = []
        # A copy graded below the threshold by hand does not count as the evidence retrieved.
        top_ranks = {n.chunk: n.rank for n in above if n.relevant}
        for evidence in strings:
            copies = ctx.evidence_chunks(evidence)
            found = tuple((c, top_ranks[c]) for c in copies if c != cid and c in top_ranks)
            if found:
                out.append(AmbiguousEvidence(evidence, copies, found))
                break
        hand_relevant = tuple(n for n in above if n.hand and n.relevant)
        if by_evidence and hand_relevant:
            out.append(LabelGap(self.ws.data.base_source, hand_relevant))
        vector_side = name == "vector" or (name == "hybrid" and not self.within_k("vector", cid))
        if vector_side and strings and ctx.coverage is not None:
            cut = self.cut_off(cid, strings, ctx.coverage)
            if cut is not None:
                out.append(cut)
        bm25_side = name == "bm25" or (name == "hybrid" and not self.within_k("bm25", cid))
        if (
            bm25_side
            and self.words
            and ctx.searched(cid)
            and not set(self.words) & ctx.chunk_tokens(cid)
        ):
            evidence_words = tuple(dict.fromkeys(w for e in strings for w in question_words(e)))
            out.append(LexicalGap(self.words, evidence_words))
        if name == "hybrid" and (self.within_k("bm25", cid) or self.within_k("vector", cid)):
            out.append(self.fusion(cid, ranks, ids))
        if cid in ranks:
            out.append(Outranked(ranks[cid], scores[cid], above))
        else:
            last = scores[ids[-1]] if ids else None
            out.append(NotRetrieved(ctx.depth, self.score(name, cid), last, above))
        return out

    def cut_off(self, cid: str, strings: Sequence[str], coverage: ReadSpans) -> CutOff | None:
        """A CutOff when no occurrence of the chunk's evidence lies wholly inside what is read."""
        read = coverage.read_spans(cid)
        if read is None:
            return None
        text = self.ws.passages.by_id[cid].text
        spans = [(e, span) for e in strings for span in evidence_spans(text, [e])]
        if not spans or any(a <= s and e <= b for _, (s, e) in spans for a, b in read):
            return None
        evidence, span = spans[0]
        wholly = all(e <= a or s >= b for _, (s, e) in spans for a, b in read)
        return CutOff(evidence, span, tuple(read), len(text), wholly)

    def fusion(self, cid: str, ranks: Mapping[str, int], ids: Sequence[str]) -> FusionLoss:
        ctx = self.ctx
        b, v = self.side_rank("bm25", cid), self.side_rank("vector", cid)
        bt = 1.0 / (ctx.rrf_k + b) if b is not None else 0.0
        vt = 1.0 / (ctx.rrf_k + v) if v is not None else 0.0
        ranking = self.ranking("hybrid")
        kth = ranking[ctx.k - 1][1] if len(ranking) >= ctx.k else None
        return FusionLoss(b, v, bt, vt, bt + vt, ranks.get(cid), kth)

    def score(self, name: str, cid: str) -> float | None:
        """The retriever's score of a chunk it did not return (bm25, vector and hybrid only; None
        for an id that is not one of ragtui's chunks, which they never score)."""
        ws, index = self.ws, chunk_index(self.ws, cid)
        if index is None:
            return None
        if name == "bm25" and ws.ranked.bm25 is not None:
            if self._bm25_scores is None:
                # One scoring of the whole corpus per question, however many chunks it misses.
                self._bm25_scores = ws.ranked.bm25.scores(query_terms(self.q.text))
            scores = self._bm25_scores
            return float(scores[index]) if index < len(scores) else None
        if (
            name == "vector"
            and ws.ranked.vector is not None
            and self.q.id in ws.ranked.question_vectors
        ):
            matrix = ws.ranked.vector.matrix
            if index >= len(matrix):
                return None
            return float(matrix[index] @ ws.ranked.question_vectors[self.q.id])
        if name == "hybrid":
            return self.fusion(cid, {}, []).score
        return None


def explain_misses(
    ws: Workspace, qid: str, coverage: ReadSpans | None = None, *, context: Context | None = None
) -> QuestionWhy:
    """Every shown retriever's misses on question ``qid``, each with its causes and their evidence
    (``context``: the one a :class:`~ragtui.core.analysis.why.index.WhyIndex` keeps for its workspace)."""
    if qid not in ws.questions.by_id:
        raise InputError(None, f"unknown question {qid!r}")
    if ws.questions.by_id[qid].retired:
        # Left out of every mean: no retriever misses it.
        return QuestionWhy(ws.questions.by_id[qid], (), {})
    ctx = context or Context(ws, coverage if coverage is not None else vector_coverage(ws))
    computer = _Question(ctx, ws.questions.by_id[qid])
    unmatched = computer.unmatched_misses()
    order = ws.passages.order
    relevant = tuple(sorted(computer.relevant, key=lambda c: (order.get(c, len(order)), c)))
    return QuestionWhy(
        computer.q,
        relevant,
        {name: computer.retriever(name, unmatched) for name in ws.retrievers},
    )
