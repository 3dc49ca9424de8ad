"""The workspace: everything loaded for one data set and setting, shared by the CLI and the app.

Loading is split so that a UI can show something at once: ``Workspace.load`` reads the corpus,
chunks it, reads the golden set and labels and builds BM25 (fast); ``prepare_vectors`` embeds the
chunks (as windows when they are longer than the model reads) and questions (from the cache when
possible, else with the model: slow) and adds the vector and hybrid retrievers; ``prepare_rerank``
adds ``<retriever>+rerank`` when a cross-encoder is set. Each slow step has a ``compute_*`` half
that only reads (for a worker thread) and an ``apply_*`` half that changes the workspace.

``Workspace`` (``workspace.py``) holds the state; its methods call the functions of ``loading``
(the steps of ``load``), ``vectors`` (the built-in retrievers, the results cache, reranking),
``live_answers`` (live retrievers' answers, their own passages, evidence recall), ``grading``
(hand, effective and shown grades, label status, disputes, saving a grade) and ``question_set``
(adding, inserting and retiring questions, the ad-hoc search).
"""

from ragtui.core.settings import Settings
from ragtui.core.workspace.grading import (
    LEVEL_CHUNK,
    LEVEL_DOCUMENT,
    SOURCE_ADJUDICATED,
    SOURCE_EVIDENCE,
    SOURCE_HAND,
    SOURCE_MODEL,
    SOURCE_QRELS,
    GradeChange,
    StaleLabel,
)
from ragtui.core.workspace.live_answers import LiveResult, PassageCounts
from ragtui.core.workspace.loading import Shared
from ragtui.core.workspace.vectors import QuestionVectors, VectorResult
from ragtui.core.workspace.workspace import Workspace

__all__ = [
    "LEVEL_CHUNK",
    "LEVEL_DOCUMENT",
    "SOURCE_ADJUDICATED",
    "SOURCE_EVIDENCE",
    "SOURCE_HAND",
    "SOURCE_MODEL",
    "SOURCE_QRELS",
    "GradeChange",
    "LiveResult",
    "PassageCounts",
    "QuestionVectors",
    "Settings",
    "Shared",
    "StaleLabel",
    "VectorResult",
    "Workspace",
]
