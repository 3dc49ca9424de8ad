"""Verifying a model judge's grades, and the orders a judging queue is walked in.

A model judge's verdicts are journal lines of annotator ``model:NAME`` (``labels``). To verify them
a person walks the pairs a judge graded that no person has graded yet, sees the judge's grade and
its reason, and accepts it (a person's own journal line with the same grade) or gives another. A
pair counts as verified once any person's grade (or an adjudicated one) applies to it: from then on
the person's grade is the one that counts, whatever the judge said.

The judging queue is walked in one of three orders (``QueueOrder``):

- ``shown``: the questions the app shows, in their order, each question's unjudged pairs first;
- ``disagree``: the pairs where the judge's grade and the evidence rule's (or the qrels') differ
  first, the largest difference first, then the rest in the shown order;
- ``sample``: the recorded random sample of questions for the estimate (``sample.json``, drawn
  here when there is none), every pooled pair of each, question by question, so that people
  judge them fully: the estimate corrects the judge with the people's grades on such questions.

Nothing here writes a grade: the front end saves a person's grade as any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from ragtui.core.data.golden import Question
from ragtui.core.judges.sample import (
    SAMPLE_FILE,
    HumanSample,
    draw_sample,
    load_sample,
    save_sample,
)
from ragtui.core.labelling.labels import Label, LabelSet, PairLabels

__all__ = [
    "QUEUE_ORDERS",
    "SAMPLE_SEED",
    "SAMPLE_SIZE",
    "QueueOrder",
    "RecordedSample",
    "disagreeing_first",
    "disagreement",
    "judge_verdict",
    "judged_chunks",
    "judges",
    "person_graded",
    "recorded_or_drawn",
    "sample_population",
]

#: The orders of the judging queue, in the order ``o`` cycles through them.
QueueOrder = Literal["shown", "disagree", "sample"]
QUEUE_ORDERS: tuple[QueueOrder, ...] = ("shown", "disagree", "sample")

#: How many questions a new random sample for the estimate draws, and with which seed.
SAMPLE_SIZE = 40
SAMPLE_SEED = 0

#: Whether a label applies (not stale); None: every label does.
Applies = Callable[[Label], bool] | None

T = TypeVar("T")


def judge_verdict(
    pair: PairLabels | None, judge: str | None = None, applies: Applies = None
) -> Label | None:
    """The verdict a person verifies: the named judge's current verdict of the pair, or with
    ``judge`` None the latest of every judge's (the one ``--grades human+model`` would count)."""
    if pair is None:
        return None
    verdicts = pair.verdicts(applies)
    if judge is not None:
        return verdicts.get(judge)
    return max(verdicts.values(), key=lambda label: label.line, default=None)


def person_graded(pair: PairLabels | None, applies: Applies = None) -> bool:
    """Whether a person's grade (or an adjudicated one) applies to the pair: it is verified, and
    it is judged for the estimate."""
    return pair is not None and pair.human(applies) is not None


def judged_chunks(
    labels: LabelSet, qid: str, judge: str | None = None, applies: Applies = None
) -> list[str]:
    """The chunks of a question that a judge (None: any judge) graded, with a verdict that applies."""
    return [
        cid
        for cid, pair in labels.pairs.get(qid, {}).items()
        if judge_verdict(pair, judge, applies) is not None
    ]


def judges(labels: LabelSet) -> list[str]:
    """Every judge with a current verdict in the journal, by name."""
    return sorted(
        {
            label.judge
            for _, _, pair in labels.iter_pairs()
            for label in pair.annotators.values()
            if label.is_model
        }
    )


def disagreement(verdict: int | None, rule: int | None) -> int:
    """How far a judge's grade lies from the evidence rule's (or the qrels'): 0 without a verdict;
    a pair the rule does not grade counts as the rule's 0 (not relevant, as the metrics count it)."""
    if verdict is None:
        return 0
    return abs(verdict - (rule or 0))


def disagreeing_first(items: Sequence[T], difference: Callable[[T], int]) -> list[T]:
    """The items whose ``difference`` is above 0 first, the largest first (ties in their order),
    then the others in their order."""
    scored = [(difference(item), i) for i, item in enumerate(items)]
    first = sorted(((d, i) for d, i in scored if d > 0), key=lambda s: (-s[0], s[1]))
    rest = [i for d, i in scored if d <= 0]
    return [items[i] for _, i in first] + [items[i] for i in rest]


def sample_population(questions: Iterable[Question]) -> list[str]:
    """The questions a sample for the estimate is drawn from: every question not retired (retired
    ones are in no mean), in golden-set order."""
    return [q.id for q in questions if not q.retired]


@dataclass(frozen=True, slots=True)
class RecordedSample:
    """The random sample of questions for the estimate, where it is recorded, and how it came."""

    sample: HumanSample
    path: Path
    #: Drawn now (and recorded); False: the sample recorded before was read.
    drawn: bool
    #: Drawn from the questions as they are now (a question added or retired since: False).
    current: bool

    def describe(self) -> str:
        """One line for the status line."""
        sample = self.sample
        what = (
            f"drew {len(sample.questions)} of {sample.population} questions at random "
            f"(seed {sample.seed}) and recorded them in {self.path}"
            if self.drawn
            else f"the recorded sample, {len(sample.questions)} questions (seed {sample.seed}), "
            f"from {self.path}"
        )
        note = (
            ""
            if self.current
            else "; the questions changed since it was drawn, so the estimate cannot use it "
            f"(remove {SAMPLE_FILE} to draw a new one)"
        )
        return f"sample for the estimate: {what}{note}"


def recorded_or_drawn(
    golden: Path,
    population: Sequence[str],
    size: int = SAMPLE_SIZE,
    seed: int = SAMPLE_SEED,
    draw: Callable[[], HumanSample] | None = None,
) -> RecordedSample:
    """The sample recorded in ``golden``'s ``sample.json``, else ``size`` questions of
    ``population`` drawn with ``seed`` (or by ``draw``, another design) and recorded there.

    A recorded sample is never replaced (people may have judged its questions already), even when
    the questions changed since it was drawn (``current`` says so); a malformed ``sample.json`` is
    an ``InputError`` naming it, and is left alone. ``OSError`` when it cannot be written.
    """
    path = Path(golden) / SAMPLE_FILE
    recorded = load_sample(golden)
    if recorded is not None:
        return RecordedSample(recorded, path, False, recorded.drawn_from(population))
    if not population:
        raise ValueError("no question to draw a sample from")
    sample = draw() if draw is not None else draw_sample(population, size, seed)
    return RecordedSample(sample, save_sample(golden, sample), True, True)
