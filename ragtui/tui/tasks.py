"""The app's other workers: add a question, run the project's experiment, read a saved run.

Like the loading workers (``ragtui.tui.loading``), each runs in a thread worker, reads only what the
UI thread captured for it, and reports with ``post``; the app's handlers apply the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.corpus import Document
from ragtui.core.errors import InputError
from ragtui.core.labelling.authoring import append_question
from ragtui.core.settings import Settings
from ragtui.core.text import visible_line
from ragtui.tui.loading import Post
from ragtui.tui.messages import (
    BaselineLoaded,
    ExperimentDone,
    Notice,
    QuestionAppended,
    WorkFailed,
)
from ragtui.tui.rankers import Rankers


@dataclass(frozen=True)
class NewQuestion:
    """A question to add, and what adding it reads, captured on the UI thread."""

    golden: Path
    """The golden-set folder to append to (the user's copy of the bundled set)."""
    generation: int
    text: str
    evidence: tuple[str, ...]
    slices: tuple[str, ...]
    chunks: Sequence[Chunk]
    """ragtui's chunks (the evidence must be in one); they never change once loaded."""
    documents: Sequence[Document]
    rankers: Rankers


def add_question(new: NewQuestion, post: Post) -> None:
    """Validate and append the question (atomic, under the golden set's lock), then rank it with
    every retriever; the questions file is read under its lock."""
    try:
        question = append_question(
            new.golden,
            new.text,
            list(new.evidence),
            list(new.slices),
            chunks=new.chunks,
            documents=new.documents,
        )
        rankings, brought = new.rankers.rank_all(question.text)
    except InputError as exc:
        post(WorkFailed("Not added", exc.message))
        return
    except Exception as exc:
        post(WorkFailed("Not added", f"{type(exc).__name__}: {exc}"))
        return
    passages = {name: tuple(hits) for name, hits in brought.items()}
    post(QuestionAppended(new.generation, question, rankings, passages))


def experiment(settings: Settings, post: Post) -> None:
    """``ragtui experiment`` off the UI thread (it loads its own workspaces; saves no runs)."""
    from ragtui.core.analysis.experiment import run_experiment

    def status(line: str) -> None:
        post(Notice(f"experiment: {line}"))

    try:
        result = run_experiment(settings, save=False, status=status)
    except InputError as exc:
        post(WorkFailed("Experiment", exc.message))
        return
    except Exception as exc:  # a variant that cannot load must be a message
        post(WorkFailed("Experiment", visible_line(f"{type(exc).__name__}: {exc}")))
        return
    post(ExperimentDone(result))


def read_baseline(folder: Path, name: str, retriever: str | None, k: int, post: Post) -> None:
    """Read saved run ``name`` and compute its values."""
    from ragtui.core.analysis.runs import load_baseline

    try:
        baseline = load_baseline(folder, name, retriever, k)
    except InputError as exc:
        post(WorkFailed(f"Cannot use {name} as baseline", exc.message))
        return
    except (OSError, ValueError) as exc:
        post(WorkFailed(f"Cannot use {name} as baseline", str(exc)))
        return
    post(BaselineLoaded(baseline))
