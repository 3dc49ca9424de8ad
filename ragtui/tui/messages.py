"""The app's messages: requests that screens post up to the app, results that workers post to the
app, and ``Changed``, what the app tells every screen after it applied a change.

Every request carries its whole target (question id, chunk id, grade; for an undo, the change it
undoes): keys can arrive in one burst over SSH, and by the time a request is handled the screen may
show something else. Requests are posted to the app itself (``self.app.post_message``): the app
applies them in the order they were made, each right after the key that made it and before the next
key is read, so a burst does what the same keys typed slowly do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from textual.message import Message

from ragtui.core.data.golden import Question
from ragtui.core.retrieval.base import Hit, Ranking
from ragtui.core.retrieval.embeddings import TextEncoder
from ragtui.core.retrieval.rerank import RerankResult
from ragtui.core.workspace import LiveResult, VectorResult, Workspace

if TYPE_CHECKING:
    # Only the messages of the palette's experiment and baseline carry them: the app's start does
    # not import the analyses (python -X importtime: 40 ms).
    from ragtui.core.analysis.experiment import ExperimentResult
    from ragtui.core.analysis.runs import Baseline

# ---- requests: screens and widgets ask, the app decides ---------------------------------------------


@dataclass
class Request(Message):
    """A change a key (or a command) asks the app for; see the module's note on order."""


@dataclass
class GradeRequested(Request):
    """Give a chunk a grade for a question (None removes the hand grade)."""

    question: str
    """The question the chunk was shown for when the key was pressed."""
    chunk: str
    """The chunk under the cursor when the key was pressed."""
    grade: int | None
    """The grade, or None to remove the hand grade (the evidence rule applies again)."""
    adjudicate: bool = False
    """An adjudicated grade: it settles a pair the annotators disagree on (the adjudication pass)."""
    independent: bool | None = None
    """In a person's own queue: whether no other grade was on screen when the key was pressed."""
    then: str = ""
    """What the view adds to the status line after the saved grade (``every pair of the questions
    shown is judged``: a line about the questions shown)."""


@dataclass
class UndoRequested(Request):
    """Undo the latest change (a label change is undone with a new journal line)."""

    target: int | None = None
    """The change to undo: the latest one when the key was pressed (``Controller.latest_change``;
    0 when there was none). None: whatever change is the latest when the request is applied."""


@dataclass
class SampleRequested(Request):
    """Read the recorded random sample of questions for the estimate, or draw and record one."""

    size: int
    """How many questions a new sample draws."""
    seed: int
    """The seed a new sample is drawn with."""


@dataclass
class AddQuestionRequested(Message):
    """Append a question to the golden set and evaluate it."""

    text: str
    evidence: tuple[str, ...]
    slices: tuple[str, ...]


@dataclass
class RetireRequested(Request):
    """Retire a question (excluded from the metrics, kept in the file) or bring it back."""

    question: str
    retired: bool


@dataclass
class ForeignChunks(Message):
    """A live retriever returned chunks with their text that the corpus lacks: keep them."""

    hits: tuple[Hit, ...]
    origin: str


@dataclass
class Notice(Message):
    """Show a line in the status line (an error stays until the next key)."""

    text: str
    error: bool = False
    about_shown: bool = False
    """The line describes the questions shown (``every pair … is judged``): the main screen
    clears it when the list changes, so it never outlives what it describes."""


# ---- results: workers report to the app ---------------------------------------------------------------


@dataclass
class WorkspaceLoaded(Message):
    """The corpus is chunked, the golden set and labels read and BM25 built: the app can show them."""

    workspace: Workspace
    """The loaded workspace (BM25 rankings and evaluation ready; vectors perhaps not yet)."""
    generation: int
    """The load this result belongs to; results of older loads are dropped."""
    vectors: VectorResult | None = None
    """The vector and hybrid rankings too, when the embedding cache had every text (no wait)."""


@dataclass
class LoadFailed(Message):
    """Loading the corpus or golden set failed: a one-line message for the user."""

    message: str
    generation: int


@dataclass
class EmbeddingProgress(Message):
    """How far embedding has come; a newer update replaces a queued one."""

    generation: int
    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        """A newer progress report of the same load supersedes a queued one."""
        return isinstance(message, EmbeddingProgress) and message.generation == self.generation


@dataclass
class VectorsReady(Message):
    """Embeddings are done: the vector and hybrid rankings, computed off the UI thread."""

    generation: int
    result: VectorResult
    embedder: TextEncoder | None = None
    """The embedder used, kept so a reload does not load the model again."""


@dataclass
class LiveReady(Message):
    """Live retrievers answered the golden set (or failed), computed off the UI thread."""

    generation: int
    result: LiveResult


@dataclass
class LiveProgress(Message):
    """How far a live retriever has come; a newer update replaces a queued one."""

    generation: int
    name: str
    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        """A newer report of the same retriever supersedes a queued one."""
        return isinstance(message, LiveProgress) and message.name == self.name


@dataclass
class RerankReady(Message):
    """The cross-encoder re-scored every question's first-stage list (off the UI thread)."""

    generation: int
    result: RerankResult


@dataclass
class ExperimentDone(Message):
    """Every variant of the project file evaluated and compared (off the UI thread)."""

    result: ExperimentResult


@dataclass
class VectorsFailed(Message):
    """Embedding failed: vector and hybrid are unavailable, BM25 works."""

    generation: int
    message: str


@dataclass
class QuestionAppended(Message):
    """A worker appended a question to questions.jsonl and ranked it with every retriever."""

    generation: int
    question: Question
    rankings: dict[str, Ranking]
    passages: dict[str, tuple[Hit, ...]] = field(default_factory=dict)
    """Per live retriever, the passages it brought with their text (the app keeps them first)."""


@dataclass
class WorkFailed(Message):
    """A worker's change could not be made (a bad question, a run that cannot be read)."""

    what: str
    """What was tried, e.g. ``Not added``."""
    message: str


@dataclass
class BaselineLoaded(Message):
    """A saved run was read and its values computed: compare every question against it."""

    baseline: Baseline


# ---- down: what changed ---------------------------------------------------------------------------------

ChangeKind = Literal[
    "loaded",
    "retrievers",
    "grades",
    "k",
    "questions",
    "baseline",
    "labels-reloaded",
    "status",
    "progress",
    "retired",
    "sample",
]


@dataclass(frozen=True)
class Changed:
    """What the app changed; every screen updates what it shows from the workspace."""

    kind: ChangeKind
    questions: frozenset[str] | None = None
    """The questions whose numbers changed (None: any may have)."""
    chunk: str | None = None
    """The chunk whose grade changed, for a grade change."""
    undo: bool = False
    """Whether the change was an undo."""
    moves: dict[str, tuple[float, float]] = field(default_factory=dict)
    """nDCG@k before and after, per retriever, for a grade change."""
    warnings: tuple[str, ...] = ()
    """What the change met that the user should know (another writer's bad journal line)."""
    said: str = ""
    """What the status line says of a grade change or its undo: the pair, the grade given, the
    grade that counts and how nDCG moved (see ``Controller.grade``)."""
