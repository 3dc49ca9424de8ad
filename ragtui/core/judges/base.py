"""What every model judge shares: the pair it grades, the verdict it gives, the spec it is built
from, and the interface ``ragtui judge`` asks.

A judge grades (question, chunk) pairs on the project's grade scale and says why in a sentence. Its
verdicts are journal lines of the annotator ``model:NAME`` (``ragtui.core.labelling.labels``): a
person's grade always wins over them, and they count only with ``--grades human+model``. A judge
that cannot grade a pair (an unreadable answer, a refusal, a server that kept failing) returns a
``Verdict`` with no grade and the failure in one line: never a grade, and retried on the next run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ragtui.core.data.grades import GradeScale

__all__ = [
    "JUDGE_ENTRY_POINT_GROUP",
    "Judge",
    "JudgeError",
    "JudgeKind",
    "JudgePair",
    "JudgeSpec",
    "Verdict",
    "shares_model_with",
]

#: The entry-point group a package registers its judge factories under.
JUDGE_ENTRY_POINT_GROUP = "ragtui.judges"

#: What a judge spec stands for.
JudgeKind = Literal["openai", "cross-encoder", "similarity", "plugin", "entry-point"]


class JudgeError(Exception):
    """A judge could not be built or used at all (not one pair's failure); the message is one line."""


@dataclass(frozen=True, slots=True)
class JudgePair:
    """One (question, chunk) pair to grade: ids, texts, and the chunk text's hash (as the journal keeps it)."""

    question_id: str
    question: str
    chunk_id: str
    chunk: str
    chunk_sha1: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """A judge's answer for one pair: a grade and its reason, or no grade and why (``failure``).

    ``tokens`` is what the model says it used (prompt and completion), 0 when it does not say.
    """

    grade: int | None
    reason: str = ""
    failure: str = ""
    tokens: int = 0

    @property
    def ok(self) -> bool:
        """Whether the judge gave a grade."""
        return self.grade is not None


@dataclass(frozen=True)
class JudgeSpec:
    """How to build one judge: its name, kind, target and options, and where it was given.

    ``target`` is the kind's main value: the model name (``openai``), the folder (``cross-encoder``),
    ``package.module:factory`` (``plugin``), the entry-point name, or empty (``similarity``).
    """

    name: str
    kind: JudgeKind
    target: str = ""
    options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Kind-specific settings: url, api_key_env, prompt, timeout, concurrency, retries, thresholds."""
    source: str = "--judge"
    """Where the spec was given, for messages (``--judge``, ``ragtui.toml [judges.llm]``)."""

    def __str__(self) -> str:
        """``NAME=KIND:TARGET``, as ``--judge`` takes it."""
        if self.kind == "similarity":
            return f"{self.name}=similarity"
        if self.kind == "openai":
            url = self.options.get("url", "")
            return f"{self.name}=openai:{self.target}@{url}"
        if self.kind == "entry-point":
            return f"{self.name}={self.target}"
        prefix = "cross-encoder:" if self.kind == "cross-encoder" else ""
        return f"{self.name}={prefix}{self.target}"


class Judge(Protocol):
    """What ``ragtui judge`` asks of a judge.

    ``grade`` returns one verdict per pair, in order, and never raises for one pair's failure (that
    is a ``Verdict`` without a grade); it raises ``JudgeError`` only when the judge cannot work at
    all. ``prepare`` is called once before grading with the grade scale and the pairs people have
    graded (with their grades): a judge that maps scores to grades fits its thresholds to them; it
    returns one line saying what it did (``""`` when there is nothing to say).
    """

    name: str

    # Read-only, so that a judge may compute them (a plugin's, read from its object when it is
    # first used; a local judge's settings key once ``prepare`` chose its thresholds).
    @property
    def model_id(self) -> str:
        """The model that grades, as the journal records it (``qwen2.5:7b-instruct``, a folder's name)."""
        ...

    @property
    def prompt_sha1(self) -> str:
        """The sha1 of the prompt a judge sends (empty for judges without a prompt)."""
        ...

    @property
    def settings_key(self) -> str:
        """A hash of every setting that changes a grade (kind, model, prompt, thresholds): the cache key."""
        ...

    @property
    def batch_size(self) -> int:
        """Pairs handed to ``grade`` at once."""
        ...

    @property
    def concurrency(self) -> int:
        """Calls to ``grade`` in flight at once."""
        ...

    def prepare(self, scale: GradeScale, graded: Sequence[tuple[JudgePair, int]]) -> str:
        """Get ready to grade on ``scale``; ``graded`` are pairs people graded, with their grades."""
        ...

    def grade(self, pairs: Sequence[JudgePair]) -> list[Verdict]:
        """One verdict per pair, in order."""
        ...

    def close(self) -> None:
        """Let go of connections and models."""
        ...


def shares_model_with(
    model_id: str, embedding_model: str, rerank_model: str | None, retrievers: Sequence[str]
) -> tuple[str, ...]:
    """The retrievers that use the judge's model (a judge favours its own retriever).

    A judge on the embedding model shares it with ``vector`` and with what fuses or reranks it
    (``hybrid``, ``hybrid+rerank``); one on the reranker's model with the reranked retriever.
    Models are compared by name and by their folder's last part (``/x/all-MiniLM-L6-v2`` is
    ``all-MiniLM-L6-v2``).
    """

    def same(a: str, b: str | None) -> bool:
        if not a or not b:
            return False
        tail_a = a.rstrip("/").rsplit("/", 1)[-1]
        tail_b = b.rstrip("/").rsplit("/", 1)[-1]
        return a == b or tail_a == tail_b

    out = []
    for name in retrievers:
        uses_embedding = name in ("vector", "hybrid") or name.startswith(("vector+", "hybrid+"))
        reranked = name.endswith("+rerank")
        if (uses_embedding and same(model_id, embedding_model)) or (
            reranked and same(model_id, rerank_model)
        ):
            out.append(name)
    return tuple(out)
