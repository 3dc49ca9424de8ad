"""The workspace: everything loaded for one data set and setting, shared by the CLI and the app.

Loading is split so that a UI can show something at once: ``Workspace.load`` reads the corpus,
chunks it, reads the golden set and labels and builds BM25 (fast); ``prepare_vectors`` embeds the
chunks (as windows when they are longer than the model reads) and questions (from the cache when
possible, else with the model: slow) and adds the vector and hybrid retrievers; ``prepare_rerank``
adds ``<retriever>+rerank`` when a cross-encoder is set. Each slow step has a ``compute_*`` half
that only reads (for a worker thread) and an ``apply_*`` half that changes the workspace.

``Workspace`` (``workspace.py``) owns the parts and applies every change to them; each part is
built by one function of its module: ``loading`` (``Data``, ``Passages``), ``question_set``
(``QuestionSet``), ``grading`` (``Grades``), ``vectors`` (``Ranked``), ``live_answers`` (``Live``).
"""

from ragtui.core.settings import Settings
from ragtui.core.workspace.grading import GradeChange, Grades, StaleLabel
from ragtui.core.workspace.live_answers import Live, LiveResult, PassageCounts
from ragtui.core.workspace.loading import (
    LEVEL_CHUNK,
    LEVEL_DOCUMENT,
    SOURCE_ADJUDICATED,
    SOURCE_EVIDENCE,
    SOURCE_HAND,
    SOURCE_MODEL,
    SOURCE_QRELS,
    ChunkTexts,
    Data,
    Passages,
    Shared,
)
from ragtui.core.workspace.question_set import QuestionSet
from ragtui.core.workspace.vectors import QuestionVectors, Ranked, VectorResult
from ragtui.core.workspace.workspace import Workspace

__all__ = [
    "LEVEL_CHUNK",
    "LEVEL_DOCUMENT",
    "SOURCE_ADJUDICATED",
    "SOURCE_EVIDENCE",
    "SOURCE_HAND",
    "SOURCE_MODEL",
    "SOURCE_QRELS",
    "ChunkTexts",
    "Data",
    "GradeChange",
    "Grades",
    "Live",
    "LiveResult",
    "PassageCounts",
    "Passages",
    "QuestionSet",
    "QuestionVectors",
    "Ranked",
    "Settings",
    "Shared",
    "StaleLabel",
    "VectorResult",
    "Workspace",
]
