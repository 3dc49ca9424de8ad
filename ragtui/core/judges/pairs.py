"""What ``ragtui judge`` grades: the pool of the chosen questions (every shown retriever's top
``depth``, ragtui's chunks and the live retrievers' own passages alike), and each judge's share of
it (the pairs it has no current verdict for, those no person graded with ``unjudged``, at most
``limit``); and the pairs people graded, which a judge gets ready with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtui.core.errors import InputError
from ragtui.core.judges.base import Judge, JudgePair
from ragtui.core.judges.sample import draw_sample, load_sample
from ragtui.core.labelling.labels import Label, PairLabels
from ragtui.core.workspace import Workspace
from ragtui.core.workspace.judging import pool_question

__all__ = [
    "JudgeAsk",
    "JudgePlan",
    "JudgePool",
    "choose_questions",
    "people_graded",
    "plan_judge",
    "pool_pairs",
]


@dataclass(frozen=True)
class JudgeAsk:
    """What ``ragtui judge`` grades, beyond the pool: every shown retriever's top ``depth`` (None:
    its top k, the pool the metrics and the estimates read, at the evaluation's ``--depth``)."""

    unjudged: bool = False
    questions: tuple[str, ...] = ()
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    again: bool = False
    depth: int | None = None


@dataclass(frozen=True)
class JudgePool:
    """The pairs chosen: the questions, their pooled pairs with texts, and how they were pooled."""

    questions: tuple[str, ...]
    pairs: tuple[JudgePair, ...]
    depth: int
    retrievers: tuple[str, ...]
    #: Pooled ids with no text to show a judge (an external run naming a document ragtui lacks).
    without_text: int = 0


@dataclass(frozen=True)
class JudgePlan:
    """One judge's share of the pool: the pairs to grade, and why the others are left."""

    todo: tuple[JudgePair, ...]
    #: Pairs with a current verdict of this judge (with ``unjudged``: with any verdict on this text).
    skipped_judged: int = 0
    #: Pairs a person graded (``unjudged`` only).
    skipped_person: int = 0
    #: Pairs past ``limit``, left for another run.
    left: int = 0


def choose_questions(ws: Workspace, ask: JudgeAsk) -> list[str]:
    """The questions to pool, in golden-set order: the named ones (else every question not
    retired), then a random sample of them when asked."""
    if ask.questions:
        unknown = [qid for qid in ask.questions if qid not in ws.questions.by_id]
        if unknown:
            raise InputError(None, f"--questions: no question {', '.join(map(repr, unknown))}")
        named = set(ask.questions)
        chosen = [q.id for q in ws.questions if q.id in named]
    else:
        chosen = [q.id for q in ws.questions if not q.retired]
    if ask.sample is not None and chosen:
        drawn = set(draw_sample(chosen, ask.sample, ask.seed).questions)
        chosen = [qid for qid in chosen if qid in drawn]
    return chosen


def pool_pairs(ws: Workspace, qids: Sequence[str], depth: int) -> JudgePool:
    """The pooled pairs of ``qids``: every shown retriever's top ``depth``, best rank first."""
    retrievers = tuple(ws.retrievers)
    pairs: list[JudgePair] = []
    without_text = 0
    for qid in qids:
        question = ws.questions.by_id[qid]
        for entry in pool_question(qid, ws.ranked.rankings, retrievers, depth, ws.passages.order):
            chunk = ws.passages.by_id.get(entry.chunk)
            if chunk is None:
                without_text += 1
                continue
            pairs.append(JudgePair(qid, question.text, chunk.id, chunk.text, chunk.sha1))
    return JudgePool(tuple(qids), tuple(pairs), depth, retrievers, without_text)


def _current(verdict: Label, judge: Judge, pair: JudgePair) -> bool:
    """Whether a verdict is what the judge would give now: same model, chunk text and prompt."""
    return (
        verdict.chunk_sha1 == pair.chunk_sha1
        and verdict.model == judge.model_id
        and verdict.prompt_sha1 == judge.prompt_sha1
    )


def plan_judge(ws: Workspace, judge: Judge, pool: JudgePool, ask: JudgeAsk) -> JudgePlan:
    """The pairs of ``pool`` this judge grades, and how many are skipped and why."""

    def applies(label: Label) -> bool:
        return ws.grades.label_status(label) is None

    todo: list[JudgePair] = []
    judged = person = 0
    for pair in pool.pairs:
        labels: PairLabels | None = ws.grades.labels.pair(pair.question_id, pair.chunk_id)
        if labels is not None:
            human = labels.human(applies)
            if ask.unjudged and human is not None and human.grade is not None:
                person += 1
                continue
            verdict = labels.verdicts(applies).get(judge.name)
            if (
                verdict is not None
                and not ask.again
                and (ask.unjudged or _current(verdict, judge, pair))
            ):
                judged += 1
                continue
        todo.append(pair)
    left = 0
    if ask.limit is not None and len(todo) > ask.limit:
        left = len(todo) - ask.limit
        todo = todo[: ask.limit]
    return JudgePlan(tuple(todo), judged, person, left)


def people_graded(ws: Workspace) -> list[tuple[JudgePair, int]]:
    """Every pair a person graded (the grade that counts among people's, where it applies), with
    its texts; the questions of the estimate's recorded sample left out, so that a judge fitted to
    people's grades (thresholds) is never fitted to the grades that then judge it."""
    out: list[tuple[JudgePair, int]] = []
    try:
        sample = load_sample(ws.grades.labels.path.parent)
    except InputError:
        sample = None  # the estimates say why; the judge fits to every grade
    held_out = set(sample.questions) if sample is not None else set()

    def applies(label: Label) -> bool:
        return ws.grades.label_status(label) is None

    for qid, cid, labels in ws.grades.labels.iter_pairs():
        human = labels.human(applies)
        if human is None or human.grade is None or qid in held_out:
            continue
        chunk = ws.passages.by_id[cid]  # the label applies, so the chunk is there
        text = ws.questions.by_id[qid].text
        out.append((JudgePair(qid, text, cid, chunk.text, chunk.sha1), human.grade))
    return out
