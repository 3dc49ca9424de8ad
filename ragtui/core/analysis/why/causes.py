"""The causes of a miss, each with the evidence that shows it (a *finding*), and the misses they
make up: one miss (:class:`Miss`), one retriever on one question (:class:`RetrieverWhy`), every
shown retriever on one question (:class:`QuestionWhy`).

:data:`CAUSES` is the order of precedence, :data:`FIXES` how a miss counts when its cause is fixed
(the remedy ceiling), :data:`REMEDIES` the usual remedy of each; the definitions are in docs/why.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

from ragtui.core.data.golden import Question, normalize_ws
from ragtui.core.retrieval.hybrid import TIE_TOLERANCE

__all__ = [
    "CAUSES",
    "CAUSE_MARKS",
    "FIXES",
    "REMEDIES",
    "AmbiguousEvidence",
    "CutOff",
    "Finding",
    "Fix",
    "FusionLoss",
    "LabelGap",
    "LexicalGap",
    "Miss",
    "Neighbour",
    "NoEvidenceChunk",
    "NotRetrieved",
    "Outranked",
    "QuestionWhy",
    "RetrieverWhy",
    "Split",
    "fixed_recall",
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
    #: The question's recall@k as the evaluation holds it (in the table's unit), which every view
    #: shows; None: not evaluated there (computed here from the counts).
    evaluated_recall: float | None = None

    @property
    def recall(self) -> float | None:
        """Recall@k (0 when judged with nothing relevant; None when not judged at all: skipped)."""
        if self.evaluated_recall is not None:
            return self.evaluated_recall
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
        if value is not None and self.evaluated_recall is not None:
            # The gain of the fix, on top of the value the table shows (equal at chunk level).
            counted = min(k, self.hits) / self.relevant if self.relevant else 0.0
            value = min(1.0, max(self.evaluated_recall, self.evaluated_recall + value - counted))
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
