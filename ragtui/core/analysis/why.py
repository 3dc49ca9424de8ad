"""Why it missed: a cause, with the evidence that shows it, for every relevant chunk a retriever
leaves out of its top k, and each cause's remedy ceiling.

A *miss* of a question for a retriever is one of:

* a relevant chunk (effective grade at least the threshold) outside the retriever's top k that the
  top k had room for: with ``hits`` relevant chunks in the top k, the best-placed
  ``min(k, relevant) - hits`` relevant chunks outside it (by rank, then by the retriever's score);
  a question with more relevant chunks than k is not missed because its hardest chunk is out of
  reach. A chunk relevant by a label that may be wrong (``ambiguous-evidence``, ``label-gap``)
  is always a miss: it stops counting as relevant when fixed;
* an evidence string of the question that lies in no chunk (so no chunk can be relevant for it).

Every miss gets the causes that hold for it, in the fixed order of :data:`CAUSES` (the order of
precedence: from the data to the ranking); its first cause is the one to fix first. A chunk miss
always ends with its position, ``outranked`` (in the top depth, below k) or ``not-retrieved``. The
remedy ceiling of a cause is recall@k with every miss that has the cause fixed, where *fixed* is
defined per cause by :data:`FIXES`. The definitions, with the usual remedy of each cause, are in
docs/why.md.

Content words are BM25 tokens longer than one character that are not stop words. An id that is not
one of ragtui's chunks (a live retriever's own passage) has no place in the chunk arrays (BM25
scores, embeddings, windows): :func:`chunk_index` is None for it, and the causes that speak of how
ragtui's retrievers read a chunk (``cut-off``, ``lexical-gap``) never name it.

Whether the vector retriever read a span of a chunk is asked of a :class:`ReadSpans`: a vector
retriever that reads long chunks through windows provides ``read_spans`` itself; otherwise
:class:`FirstTokens` applies today's rule, the first ``max_seq_length`` less special tokens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from ragtui.core.analysis.attribution import TIE_TOLERANCE
from ragtui.core.analysis.diagnostics import model_limit
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
from ragtui.core.data.tokenizer import token_counter
from ragtui.core.errors import InputError
from ragtui.core.metrics.measures import relevant_set
from ragtui.core.retrieval.base import Ranking
from ragtui.core.retrieval.hybrid import RRF_K
from ragtui.core.workspace import LEVEL_DOCUMENT, SOURCE_EVIDENCE, Workspace

__all__ = [
    "CAUSES",
    "CAUSE_MARKS",
    "FIXES",
    "REMEDIES",
    "CauseCount",
    "FirstTokens",
    "Miss",
    "QuestionWhy",
    "ReadSpans",
    "RetrieverCauses",
    "RetrieverWhy",
    "WhyIndex",
    "cause_summary",
    "chunk_index",
    "question_words",
    "vector_coverage",
]

#: Every cause, in the order of precedence: a miss's first cause is the earliest that holds.
CAUSES: tuple[str, ...] = (
    "no-evidence-chunk",
    "split",
    "ambiguous-evidence",
    "label-gap",
    "cut-off",
    "lexical-gap",
    "fusion-loss",
    "outranked",
    "not-retrieved",
)

#: How a miss counts when its cause is fixed (for the remedy ceiling).
Fix = Literal["found", "dropped", "added"]

#: ``found``: the chunk enters the top k; ``dropped``: it stops counting as relevant (the labels
#: were wrong, the retriever had the evidence); ``added``: the evidence lands whole in one chunk,
#: which is in the top k.
FIXES: dict[str, Fix] = {
    "no-evidence-chunk": "added",
    "split": "added",
    "ambiguous-evidence": "dropped",
    "label-gap": "dropped",
    "cut-off": "found",
    "lexical-gap": "found",
    "fusion-loss": "found",
    "outranked": "found",
    "not-retrieved": "found",
}

#: The usual remedy of each cause, as the tables print it.
REMEDIES: dict[str, str] = {
    "no-evidence-chunk": "correct the evidence string (or the corpus)",
    "split": "chunk overlap, or boundaries that keep the passage whole",
    "ambiguous-evidence": "a more specific evidence string",
    "label-gap": "grade the missed chunk by hand",
    "cut-off": "long-chunk windows, smaller chunks, or a model that reads more",
    "lexical-gap": "hybrid retrieval, or query rewriting (synonyms)",
    "fusion-loss": "fusion weights or RRF k, or a reranker over both lists",
    "outranked": "a reranker, or a better embedding model",
    "not-retrieved": "query rewriting, a better model, or a deeper first stage",
}

#: A short mark of each cause, for a narrow column (the app's question list).
CAUSE_MARKS: dict[str, str] = {
    "no-evidence-chunk": "noev",
    "split": "split",
    "ambiguous-evidence": "ambig",
    "label-gap": "label",
    "cut-off": "cut",
    "lexical-gap": "lex",
    "fusion-loss": "fuse",
    "outranked": "below",
    "not-retrieved": "absent",
}

#: Evidence strings are cut to this many characters in text output.
SHORT = 60


def _short(text: str) -> str:
    text = normalize_ws(text)
    return text if len(text) <= SHORT else text[: SHORT - 3] + "..."


def _words(words: Sequence[str]) -> str:
    return ", ".join(words) if words else "none"


def question_words(text: str) -> tuple[str, ...]:
    """The content words of a text: its distinct BM25 tokens that are not stop words and are longer
    than one character (``s`` of "doctor's", ``c`` of "vitamin c" say nothing a chunk shares)."""
    return tuple(w for w in content_words(text) if len(w) > 1)


def chunk_index(ws: Workspace, cid: str) -> int | None:
    """The row of one of ragtui's chunks in the chunk arrays (BM25 scores, embeddings, windows), or
    None for any other id: a live retriever's own passage (kept in the chunk order after ragtui's
    chunks), a document id, an id ragtui does not know."""
    index = ws.chunk_order.get(cid)
    if index is None or index >= len(ws.chunks) or ws.chunks[index].id != cid:
        return None
    return index


# ---- what the vector retriever reads --------------------------------------------------------------


@runtime_checkable
class ReadSpans(Protocol):
    """What a vector retriever reads of each chunk: (start, end) offsets in the chunk's text."""

    def read_spans(self, chunk_id: str) -> Sequence[tuple[int, int]] | None:
        """The spans of the chunk's text the embedding covers; None when that is unknown."""
        ...


class FirstTokens:
    """Today's rule: the model reads the first ``max_seq_length`` tokens less its special tokens."""

    def __init__(self, ws: Workspace) -> None:
        self._ws = ws
        self._counter = token_counter(ws.settings.model)
        limit = model_limit(ws.settings.model, self._counter)
        #: Tokens of text the model reads; None when the model's limit is unknown.
        self.tokens = limit.content_tokens if limit is not None else None
        self._spans: dict[str, tuple[tuple[int, int], ...] | None] = {}

    def read_spans(self, chunk_id: str) -> Sequence[tuple[int, int]] | None:
        """``[(0, offset of the first unread token)]``, or the whole text when it fits."""
        if chunk_id not in self._spans:
            index = chunk_index(self._ws, chunk_id)
            if index is None or self.tokens is None:
                # Not one of ragtui's chunks: the vector retriever never read it.
                self._spans[chunk_id] = None
            else:
                chunk = self._ws.chunks[index]
                offsets = self._counter.offsets(chunk.text)
                end = offsets[self.tokens][0] if self.tokens < len(offsets) else len(chunk.text)
                self._spans[chunk_id] = ((0, end),)
        return self._spans[chunk_id]


class WindowSpans:
    """Long-chunk windows: the model reads each window whole, so a chunk is read where its windows lie."""

    def __init__(self, ws: Workspace) -> None:
        assert ws.windows is not None
        self._spans = ws.windows.spans
        self._ws = ws

    def read_spans(self, chunk_id: str) -> Sequence[tuple[int, int]] | None:
        """The chunk's windows' character spans (None for an id that is not one of ragtui's chunks)."""
        index = chunk_index(self._ws, chunk_id)
        return None if index is None or index >= len(self._spans) else self._spans[index]


def vector_coverage(ws: Workspace) -> ReadSpans:
    """What the workspace's vector retriever reads: its own ``read_spans`` if it has one, the
    long-chunk windows it embedded if any, else the first tokens the model reads."""
    if isinstance(ws.vector, ReadSpans):
        return ws.vector
    if ws.windows is not None and ws.windows.plan is not None:
        return WindowSpans(ws)
    return FirstTokens(ws)


# ---- findings: one cause each, with its evidence ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A chunk ranked above a missed one: rank, score, the question's content words it holds, grade."""

    rank: int
    chunk: str
    score: float
    shared_words: tuple[str, ...]
    grade: int | None
    hand: bool
    relevant: bool


@dataclass(frozen=True, slots=True)
class NoEvidenceChunk:
    """An evidence string found in no chunk and in no document."""

    cause: ClassVar[str] = "no-evidence-chunk"
    evidence: str

    def lines(self) -> list[str]:
        """What shows it, in words."""
        return [f"evidence {_short(self.evidence)!r} is in no chunk and in no document"]


@dataclass(frozen=True, slots=True)
class Split:
    """An evidence string in a document but in no single chunk: the neighbouring pairs it straddles."""

    cause: ClassVar[str] = "split"
    evidence: str
    document: str
    pairs: tuple[tuple[str, str], ...]

    def lines(self) -> list[str]:
        """What shows it, in words."""
        where = (
            "; ".join(f"{a} | {b}" for a, b in self.pairs) if self.pairs else "more than two chunks"
        )
        return [
            (
                f"evidence {_short(self.evidence)!r} is in {self.document} but in no single chunk: "
                f"it straddles {where}"
            )
        ]


@dataclass(frozen=True, slots=True)
class AmbiguousEvidence:
    """The chunk's evidence string is in several chunks, and another of them is in the top k."""

    cause: ClassVar[str] = "ambiguous-evidence"
    evidence: str
    chunks: tuple[str, ...]
    found: tuple[tuple[str, int], ...]

    def lines(self) -> list[str]:
        """What shows it, in words."""
        found = ", ".join(f"{c} (rank {r})" for c, r in self.found)
        return [
            (
                f"evidence {_short(self.evidence)!r} is in {len(self.chunks)} chunks "
                f"({', '.join(self.chunks)}); the top k holds {found}: the evidence was retrieved"
            )
        ]


@dataclass(frozen=True, slots=True)
class LabelGap:
    """Relevant by the evidence rule (or qrels) while the top k holds a chunk graded relevant by hand."""

    cause: ClassVar[str] = "label-gap"
    source: str
    hand_relevant: tuple[Neighbour, ...]

    def lines(self) -> list[str]:
        """What shows it, in words."""
        held = ", ".join(f"{n.chunk} (rank {n.rank}, grade {n.grade})" for n in self.hand_relevant)
        rule = "the evidence rule" if self.source == "evidence" else "the qrels"
        return [
            (
                f"relevant by {rule}, and the top k holds {held}, graded relevant by hand: "
                f"{rule}, not the retriever, may be wrong"
            )
        ]


@dataclass(frozen=True, slots=True)
class CutOff:
    """The chunk's evidence lies past what the vector retriever reads of it."""

    cause: ClassVar[str] = "cut-off"
    evidence: str
    span: tuple[int, int]
    read: tuple[tuple[int, int], ...]
    length: int
    wholly: bool

    def lines(self) -> list[str]:
        """What shows it, in words."""
        read = ", ".join(f"{a}-{b}" for a, b in self.read) or "nothing"
        how = "wholly" if self.wholly else "partly"
        return [
            (
                f"evidence {_short(self.evidence)!r} (characters {self.span[0]}-{self.span[1]}) lies {how} "
                f"outside what the vector retriever reads of the chunk (characters {read} of {self.length})"
            )
        ]


@dataclass(frozen=True, slots=True)
class LexicalGap:
    """The question shares no content word with the chunk (BM25 matches words)."""

    cause: ClassVar[str] = "lexical-gap"
    question_words: tuple[str, ...]
    evidence_words: tuple[str, ...]

    def lines(self) -> list[str]:
        """What shows it, in words."""
        return [
            (
                "the question shares no content word with the chunk: question "
                f"{{{_words(self.question_words)}}}, evidence {{{_words(self.evidence_words)}}}"
            )
        ]


@dataclass(frozen=True, slots=True)
class FusionLoss:
    """bm25 or vector had the chunk within k; the fused ranking does not."""

    cause: ClassVar[str] = "fusion-loss"
    bm25_rank: int | None
    vector_rank: int | None
    bm25_term: float
    vector_term: float
    score: float
    hybrid_rank: int | None
    kth_score: float | None

    def lines(self) -> list[str]:
        """What shows it, in words."""

        def rank(value: int | None) -> str:
            return str(value) if value is not None else "-"

        if self.kth_score is None:
            kth = ""
        elif abs(self.score - self.kth_score) <= TIE_TOLERANCE:
            kth = f", tied with hybrid's rank-k chunk ({self.kth_score:.5f}), the tie lost on chunk order"
        else:
            kth = f", below {self.kth_score:.5f} of hybrid's rank-k chunk"
        return [
            (
                f"bm25 rank {rank(self.bm25_rank)}, vector rank {rank(self.vector_rank)}: "
                f"RRF {self.bm25_term:.5f} + {self.vector_term:.5f} = {self.score:.5f}{kth}; "
                f"hybrid rank {rank(self.hybrid_rank)}"
            )
        ]


@dataclass(frozen=True, slots=True)
class Outranked:
    """In the top depth but below k: its rank and score, and the top k above it."""

    cause: ClassVar[str] = "outranked"
    rank: int
    score: float
    above: tuple[Neighbour, ...]

    def lines(self) -> list[str]:
        """What shows it, in words."""
        return [f"rank {self.rank} (score {self.score:.4g}), below the top {len(self.above)}"]


@dataclass(frozen=True, slots=True)
class NotRetrieved:
    """Not in the top depth: its score if known, the last retrieved score, and the top k."""

    cause: ClassVar[str] = "not-retrieved"
    depth: int
    score: float | None
    last_score: float | None
    above: tuple[Neighbour, ...]

    def lines(self) -> list[str]:
        """What shows it, in words."""
        own = f"; its score {self.score:.4g}" if self.score is not None else ""
        last = f", the last retrieved {self.last_score:.4g}" if self.last_score is not None else ""
        return [f"not in the top {self.depth}{own}{last}"]


#: One cause with its evidence.
Finding = (
    NoEvidenceChunk
    | Split
    | AmbiguousEvidence
    | LabelGap
    | CutOff
    | LexicalGap
    | FusionLoss
    | Outranked
    | NotRetrieved
)


def finding_json(finding: Finding) -> dict[str, Any]:
    """A finding as JSON: its cause, then its evidence fields."""
    return {"cause": finding.cause, **asdict(finding)}


# ---- misses -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Miss:
    """One miss: a relevant chunk outside the top k (``chunk``), or an evidence string in no chunk
    (``chunk`` None), with its findings in the order of precedence."""

    chunk: str | None
    evidence: str | None
    findings: tuple[Finding, ...]

    @property
    def causes(self) -> tuple[str, ...]:
        """Its causes, first one first."""
        return tuple(f.cause for f in self.findings)

    @property
    def cause(self) -> str:
        """Its first cause (the one to fix first)."""
        return self.findings[0].cause

    def fix(self, cause: str | None) -> Fix | None:
        """How it counts when ``cause`` is fixed (None: every cause, read as its first), or None
        when it does not have that cause."""
        if cause is None:
            return FIXES[self.cause]
        return FIXES[cause] if cause in self.causes else None

    def as_json(self) -> dict[str, Any]:
        """The miss as JSON."""
        return {
            "chunk": self.chunk,
            "evidence": self.evidence,
            "causes": list(self.causes),
            "findings": [finding_json(f) for f in self.findings],
        }


def fixed_recall(
    k: int, hits: int, relevant: int, misses: Iterable[Miss], cause: str | None
) -> float | None:
    """Recall@k with the misses that have ``cause`` fixed (``cause`` None: every miss, each as its
    first cause says); None when the question would still have nothing relevant.

    ``min(k, hits + found + added) / (relevant - dropped + added)``, where ``found`` counts fixed
    misses whose chunk enters the top k, ``dropped`` those that stop counting as relevant and
    ``added`` those whose evidence lands whole in one chunk in the top k.
    """
    found = dropped = added = 0
    for miss in misses:
        how = miss.fix(cause)
        if how == "found":
            found += 1
        elif how == "dropped":
            dropped += 1
        elif how == "added":
            added += 1
    denominator = relevant - dropped + added
    if denominator <= 0:
        return None
    return min(k, hits + found + added) / denominator


@dataclass(frozen=True)
class RetrieverWhy:
    """One retriever on one question: relevant chunks, how many are in the top k, and the misses
    (those of the top k: see the module's docstring)."""

    retriever: str
    relevant: int
    hits: int
    top: tuple[str, ...]
    misses: tuple[Miss, ...]
    #: Whether the question has any judgement: as in trec_eval, a judged question with nothing
    #: relevant counts with recall 0; one with no judgement at all is skipped.
    judged: bool = True
    #: Relevant chunks outside the top k beyond what it had room for: not misses of the top k.
    beyond: int = 0
    #: The question's first cause: that of its leading miss (an evidence string in no chunk, else a
    #: chunk relevant by a label that may be wrong, else the missed chunk that came closest to the
    #: top k); None: the earliest of the causes in the order of precedence.
    lead: str | None = None

    @property
    def recall(self) -> float | None:
        """Recall@k (0 when judged with nothing relevant; None when not judged at all: skipped)."""
        if self.relevant:
            return self.hits / self.relevant
        return 0.0 if self.judged else None

    @property
    def causes(self) -> tuple[str, ...]:
        """Every cause of its misses, the first cause first, then the others in the order of
        precedence (empty when nothing is missed)."""
        have = {c for m in self.misses for c in m.causes}
        ordered = tuple(c for c in CAUSES if c in have)
        if self.lead is not None and self.lead in have:
            return (self.lead, *(c for c in ordered if c != self.lead))
        return ordered

    @property
    def cause(self) -> str | None:
        """Its first cause, or None when nothing is missed."""
        causes = self.causes
        return causes[0] if causes else None

    def chunk_causes(self, chunk: str) -> tuple[str, ...]:
        """The causes of one missed chunk (empty when the chunk is not a miss)."""
        for miss in self.misses:
            if miss.chunk == chunk:
                return miss.causes
        return ()

    def fixed_recall(self, k: int, cause: str | None) -> float | None:
        """Recall@k with the misses that have ``cause`` fixed (see :func:`fixed_recall`); a judged
        question that would still have nothing relevant counts 0, as in the means."""
        value = fixed_recall(k, self.hits, self.relevant, self.misses, cause)
        return 0.0 if value is None and self.judged else value


@dataclass(frozen=True)
class QuestionWhy:
    """Every shown retriever's misses on one question."""

    question: Question
    relevant: tuple[str, ...]
    retrievers: dict[str, RetrieverWhy]

    @property
    def evaluated(self) -> bool:
        """Whether the question has any judgement (else it is skipped by every mean, as in trec_eval)."""
        return bool(self.relevant) or any(r.judged for r in self.retrievers.values())

    @property
    def retired(self) -> bool:
        """Whether the question is retired: left out of every mean, no retriever misses it."""
        return self.question.retired


# ---- computing the causes --------------------------------------------------------------------------


class _Context:
    """What computing causes needs once per workspace: evidence matches, chunk words, what the
    vector retriever reads."""

    def __init__(self, ws: Workspace, coverage: ReadSpans | None) -> None:
        self.ws = ws
        self.k = ws.settings.k
        self.depth = ws.settings.depth
        self.threshold = ws.settings.threshold
        self.rrf_k = ws.hybrid.k if ws.hybrid is not None else RRF_K
        #: The metrics judge documents (each at its best chunk's rank), not chunks.
        self.documents = ws.level == LEVEL_DOCUMENT
        self.coverage = coverage
        self._index = EvidenceIndex([c.id for c in ws.chunks], [c.text for c in ws.chunks])
        self._matches: dict[str, tuple[str, ...]] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        self._unmatched: dict[str, NoEvidenceChunk | Split] = {}
        self._doc_chunks: dict[str, list[str]] = {}
        for chunk in ws.chunks:
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
            chunk = self.ws.chunk_by_id.get(cid)
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
            docs = [d for d in self.ws.corpus.documents if needle in normalize_ws(d.text)]
            finding: NoEvidenceChunk | Split
            if docs:
                pairs = straddling_pairs(docs[:1], self.ws.chunks, evidence)
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

    def __init__(self, ctx: _Context, question: Question) -> None:
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
            self.ws.doc_of(c) if ctx.documents else c: g
            for c, g in self.ws.hand_grades(question.id).items()
        }
        self._bm25_scores: np.ndarray | None = None
        #: The 1-based ranks of the two lists hybrid fuses.
        self._side_ranks: dict[str, dict[str, int]] = {
            name: _ranks(self.ranking(name))[1]
            for name in ("bm25", "vector")
            if name in self.ws.rankings
        }

    def unmatched_misses(self) -> list[Miss]:
        """The question's evidence strings that lie in no chunk (when evidence counts as relevant)."""
        if self.ws.base_source != SOURCE_EVIDENCE or self.ctx.threshold > EVIDENCE_GRADE:
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
        return self.ws.evaluated_ranking(self.ws.ranking(name, self.q.id))[: self.ctx.depth]

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
        if ev is not None and name in ev.own:
            # A live retriever with passages of its own is judged with them too (as eval judges
            # it): its own relevant passages in the top k are hits, and with evidence recall a
            # relevant chunk whose evidence strings it found elsewhere is no miss.
            own_relevant = relevant_set(ev.gains_for(name, self.q.id), ctx.threshold)
            hits = sum(1 for cid in top if cid in own_relevant)
            if ev.recall_definition(name) == "evidence":
                found = self._found_strings([c for c in top if c in own_relevant])
                candidates = {c for c in candidates if not set(self.strings_of(c)) & found}
                strings = [e for e in self.q.evidence if e.split()]
                room_of = max(0, min(ctx.k, len(strings)) - len(found & set(strings)))
        order = self.ws.chunk_order
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
        )

    def _found_strings(self, passages: Sequence[str]) -> set[str]:
        """The question's evidence strings that some of ``passages`` hold (white space collapsed)."""
        texts = []
        for cid in passages:
            chunk = self.ws.chunk_by_id.get(cid)
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
            out.append(LabelGap(self.ws.base_source, hand_relevant))
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
        text = self.ws.chunk_by_id[cid].text
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
        if name == "bm25" and ws.bm25 is not None:
            if self._bm25_scores is None:
                # One scoring of the whole corpus per question, however many chunks it misses.
                self._bm25_scores = ws.bm25.scores(query_terms(self.q.text))
            scores = self._bm25_scores
            return float(scores[index]) if index < len(scores) else None
        if name == "vector" and ws.vector is not None and self.q.id in ws.question_vectors:
            matrix = ws.vector.matrix
            if index >= len(matrix):
                return None
            return float(matrix[index] @ ws.question_vectors[self.q.id])
        if name == "hybrid":
            return self.fusion(cid, {}, []).score
        return None


def explain_misses(
    ws: Workspace, qid: str, coverage: ReadSpans | None = None, *, _ctx: _Context | None = None
) -> QuestionWhy:
    """Every shown retriever's misses on question ``qid``, each with its causes and their evidence."""
    if qid not in ws.question_by_id:
        raise InputError(None, f"unknown question {qid!r}")
    if ws.question_by_id[qid].retired:
        # Left out of every mean: no retriever misses it.
        return QuestionWhy(ws.question_by_id[qid], (), {})
    ctx = _ctx or _Context(ws, coverage if coverage is not None else vector_coverage(ws))
    computer = _Question(ctx, ws.question_by_id[qid])
    unmatched = computer.unmatched_misses()
    order = ws.chunk_order
    relevant = tuple(sorted(computer.relevant, key=lambda c: (order.get(c, len(order)), c)))
    return QuestionWhy(
        computer.q,
        relevant,
        {name: computer.retriever(name, unmatched) for name in ws.retrievers},
    )


class WhyIndex:
    """Every question's misses for every shown retriever, computed once; ``update`` recomputes one
    question after its grades change, ``matching`` answers the ``why:CAUSE`` filter."""

    def __init__(
        self, ws: Workspace, coverage: ReadSpans | None = None, lazy: bool = False
    ) -> None:
        """The misses of every question (``lazy``: each computed when first asked for, as the app
        does for the rows it shows)."""
        self.ws = ws
        self._ctx = _Context(ws, coverage if coverage is not None else vector_coverage(ws))
        self._by_question: dict[str, QuestionWhy] = {}
        if not lazy:
            for q in ws.questions:
                self.update(q.id)

    @property
    def k(self) -> int:
        """The cut-off the causes were computed at."""
        return self._ctx.k

    def update(self, qid: str) -> QuestionWhy:
        """Recompute one question (after a grade change) and return it."""
        self._by_question[qid] = explain_misses(self.ws, qid, _ctx=self._ctx)
        return self._by_question[qid]

    def question(self, qid: str) -> QuestionWhy:
        """One question's misses (computed on first use for a question added since)."""
        if qid not in self._by_question:
            return self.update(qid)
        return self._by_question[qid]

    def causes(self, qid: str, retriever: str) -> tuple[str, ...]:
        """The causes of a question's misses for one retriever, first one first (empty: no miss)."""
        found = self.question(qid).retrievers.get(retriever)
        return found.causes if found is not None else ()

    def cause(self, qid: str, retriever: str) -> str | None:
        """A question's first cause for one retriever, or None when it misses nothing."""
        found = self.question(qid).retrievers.get(retriever)
        return found.cause if found is not None else None

    def chunk_causes(self, qid: str, retriever: str, chunk: str) -> tuple[str, ...]:
        """The causes of one missed chunk of a question for one retriever (empty: not a miss)."""
        found = self.question(qid).retrievers.get(retriever)
        return found.chunk_causes(chunk) if found is not None else ()

    def matching(self, cause: str, retrievers: Sequence[str] | None = None) -> list[str]:
        """The questions some of ``retrievers`` (default: every shown one) misses with ``cause``, in golden-set order."""
        names = list(retrievers) if retrievers is not None else list(self.ws.retrievers)
        return [
            q.id for q in self.ws.questions if any(cause in self.causes(q.id, r) for r in names)
        ]

    def questions(self, qids: Iterable[str] | None = None) -> list[QuestionWhy]:
        """The questions' misses, in golden-set order (default: every question)."""
        wanted = set(qids) if qids is not None else None
        return [self.question(q.id) for q in self.ws.questions if wanted is None or q.id in wanted]


# ---- counting causes and their ceilings ------------------------------------------------------------


@dataclass(frozen=True)
class CauseCount:
    """One cause for one retriever over a set of questions: how many questions have it (``first``:
    as their first cause), how many misses, and recall@k with those misses fixed."""

    cause: str
    questions: int
    first: int
    misses: int
    ceiling: float
    question_ids: tuple[str, ...]


@dataclass(frozen=True)
class RetrieverCauses:
    """One retriever over a set of questions: recall@k now, the questions it misses, each cause's
    count and ceiling, and the ceiling with every miss fixed."""

    retriever: str
    questions: int
    recall: float
    missed: int
    causes: dict[str, CauseCount]
    every_cause: float

    def best(self) -> CauseCount | None:
        """The cause whose fix gains most (the first in precedence order among equals), or None when nothing is missed."""
        counted = [c for c in self.causes.values() if c.questions]
        return max(counted, key=lambda c: c.ceiling - self.recall) if counted else None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def cause_summary(index: WhyIndex, qids: Iterable[str] | None = None) -> dict[str, RetrieverCauses]:
    """Per shown retriever, each cause's question count and remedy ceiling over the questions
    ``qids`` (default: all); means are over the evaluated questions, plus, for a ceiling, those a fix
    would make evaluated (their evidence added)."""
    k = index.k
    whys = index.questions(qids)
    out: dict[str, RetrieverCauses] = {}
    for name in index.ws.retrievers:
        pairs = [(w.question.id, w.retrievers[name]) for w in whys if name in w.retrievers]
        now = [r.recall for _, r in pairs if r.recall is not None]
        counts: dict[str, CauseCount] = {}
        for cause in CAUSES:
            having = [(qid, r) for qid, r in pairs if cause in r.causes]
            ceilings = [v for _, r in pairs if (v := r.fixed_recall(k, cause)) is not None]
            counts[cause] = CauseCount(
                cause,
                len(having),
                sum(1 for _, r in having if r.cause == cause),
                sum(1 for _, r in having for m in r.misses if cause in m.causes),
                _mean(ceilings),
                tuple(qid for qid, _ in having),
            )
        every = [v for _, r in pairs if (v := r.fixed_recall(k, None)) is not None]
        out[name] = RetrieverCauses(
            name,
            len(now),
            _mean(now),
            sum(1 for _, r in pairs if r.misses),
            counts,
            _mean(every),
        )
    return out
