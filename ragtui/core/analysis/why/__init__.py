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

The modules: ``causes`` (the causes, their findings and the misses they make up), ``coverage``
(what the vector retriever reads of a chunk), ``explain`` (one question's misses computed),
``index`` (every question's misses kept, and the causes counted with their ceilings) and
``report`` (the reports and JSON objects of ``ragtui why``).
"""

from ragtui.core.analysis.why.causes import (
    CAUSE_MARKS,
    CAUSES,
    FIXES,
    REMEDIES,
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
from ragtui.core.analysis.why.coverage import (
    FirstTokens,
    ReadSpans,
    WindowSpans,
    chunk_index,
    vector_coverage,
)
from ragtui.core.analysis.why.explain import explain_misses, question_words
from ragtui.core.analysis.why.index import CauseCount, RetrieverCauses, WhyIndex, cause_summary
from ragtui.core.analysis.why.report import (
    question_why_json,
    why_json,
    why_question_report,
    why_report,
)

__all__ = [
    "CAUSES",
    "CAUSE_MARKS",
    "FIXES",
    "REMEDIES",
    "AmbiguousEvidence",
    "CauseCount",
    "CutOff",
    "Finding",
    "FirstTokens",
    "FusionLoss",
    "LabelGap",
    "LexicalGap",
    "Miss",
    "Neighbour",
    "NoEvidenceChunk",
    "NotRetrieved",
    "Outranked",
    "QuestionWhy",
    "ReadSpans",
    "RetrieverCauses",
    "RetrieverWhy",
    "Split",
    "WhyIndex",
    "WindowSpans",
    "cause_summary",
    "chunk_index",
    "explain_misses",
    "question_why_json",
    "question_words",
    "vector_coverage",
    "why_json",
    "why_question_report",
    "why_report",
]
