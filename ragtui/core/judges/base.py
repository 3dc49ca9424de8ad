"""What every model judge shares: the pair it grades, the verdict it gives, and the interface ``ragtui judge`` asks.

A judge grades (question, chunk) pairs on the project's grade scale and says why in a sentence. Its
verdicts are journal lines of the annotator ``model:NAME`` (``ragtui.core.labelling.labels``): a
person's grade always wins over them, and they count only with ``--grades human+model``. A judge
that cannot grade a pair (an unreadable answer, a refusal, a server that kept failing) returns a
``Verdict`` with no grade and the failure in one line: never a grade, and retried on the next run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ragtui.core.data.grades import GradeScale

__all__ = [
    "DOWN_FAILURES",
    "JUDGE_ENTRY_POINT_GROUP",
    "Judge",
    "JudgeError",
    "JudgePair",
    "Verdict",
]

#: How a failure that says the endpoint is down starts (no connection, or no answer in time):
#: the check before the pool stops on one, and a run on several in a row.
DOWN_FAILURES = ("cannot connect", "connection failed", "timed out")

#: The entry-point group a package registers its judge factories under.
JUDGE_ENTRY_POINT_GROUP = "ragtui.judges"


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
    ``answer`` says how a chat judge's grade was read: ``structured`` (the JSON object the endpoint
    was asked for with ``response_format``) or ``text`` (read from free text by
    ``judges.parse``); empty for other judges. ``probabilities`` is the model's probability of each
    grade where the endpoint gave ``logprobs`` ((grade, p) pairs summing to 1), else empty.
    """

    grade: int | None
    reason: str = ""
    failure: str = ""
    tokens: int = 0
    answer: str = ""
    probabilities: tuple[tuple[int, float], ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the judge gave a grade."""
        return self.grade is not None


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
