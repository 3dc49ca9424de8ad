"""How sure the numbers are (``--estimate``): per retriever and metric, the value the grades in force
give, the range its unjudged pairs allow, the people's value, the model-filled value and the
prediction-powered estimate with its 95 % interval (``ragtui.core.judges.estimate`` has the math).

Three sets of grades are read from the journal, each at the evaluation's level (chunks, or documents
at their best chunk's grade) and over the evidence rule or the qrels, as ``evaluation_grades`` does:

- the people's: adjudicated, else a person's grade (the numbers ``--grades human`` shows);
- model-filled: the people's where a person graded, else the judge's verdict;
- the judge's: the judge's verdict wherever it gave one, people aside. The estimate corrects these
  with the people's on the sample, so they must not already hold the people's grades there.

The judge is one (``judge``) or, by default, every judge: the latest verdict of any of them.

The sample is the recorded random sample (``labelling.sample``, ``sample.json`` beside the label
journal), drawn from the questions as they are now (not retired, in golden-set order). A sampled
question counts when it is *judged fully*: a person's grade (or an adjudicated one) applies to every
pair of its pool at depth k, the union of the retrievers' top k, as the judging view's sample order
counts it (the evidence rule and the qrels are there to be confirmed). The target is the mean over
every question of the value people would give after grading every pool; for MRR, which reads the
whole run, a pair beyond the pool keeps the evidence rule's or the qrels' grade, as it does today.
The estimate is withheld, with the reason, when there is no recorded sample, when it was drawn from
other questions, when fewer than ``MIN_SAMPLE`` of its questions are judged fully, when there is no
verdict of the judge, or when the judge graded the sampled questions' pools much more or less fully
than the others' (``ragtui judge --unjudged`` after people graded the sample: its errors there would
never be seen).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragtui.core.errors import InputError
from ragtui.core.judges.build import judge_shares
from ragtui.core.judges.estimate import (
    MIN_SAMPLE,
    Interval,
    RangeMeasure,
    Stratum,
    stratified_mean,
    unjudged_range,
)
from ragtui.core.judges.sample import (
    MIN_PER_STRATUM,
    SAMPLE_FILE,
    HumanSample,
    confidence_strata,
    draw_sample,
    draw_stratified,
    load_sample,
)
from ragtui.core.judges.verify import person_graded, sample_population
from ragtui.core.labelling.labels import Label, PairLabels
from ragtui.core.metrics.evaluation import Evaluation
from ragtui.core.text import visible_line
from ragtui.core.workspace import SOURCE_QRELS, Workspace
from ragtui.core.workspace.judging import pool_question

__all__ = [
    "COVERAGE_GAP",
    "METRICS",
    "STRATA_BY",
    "Estimates",
    "MetricEstimate",
    "RetrieverEstimate",
    "SampleUse",
    "draw_design",
    "estimates",
    "question_doubts",
    "question_pairs",
]

#: The metrics estimated: (eval --json name, per-question field, unjudged-range measure).
METRICS: tuple[tuple[str, str, RangeMeasure], ...] = (
    ("recall", "recall", "recall"),
    ("precision", "precision", "precision"),
    ("mrr", "rr", "rr"),
    ("ndcg", "ndcg", "ndcg"),
)

#: The judge must have graded about as much of the sampled questions' pools as of the others'
#: (shares within this many points), or its errors on one side are never measured.
COVERAGE_GAP = 0.05

Pick = Callable[[PairLabels], Label | None]


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """One retriever's figures for one metric (``None``: not computed; ``reason`` says why)."""

    value: float
    """The mean ``eval`` shows (the grades in force)."""
    unjudged: tuple[float, float] | None
    """The lowest and highest mean the unjudged pool pairs allow (None: recall from evidence)."""
    human: float
    """The mean with the people's grades only (``--grades human``)."""
    model_filled: float | None
    ppi: Interval | None
    human_only: Interval | None
    differing: int
    """Sampled questions whose value differs between the judge's grades and the people's."""
    reason: str
    """Why there is no prediction-powered estimate ("" when there is one)."""

    @property
    def narrows(self) -> bool | None:
        """Whether the judge narrowed the interval against the people's sample alone (None: no
        two intervals to compare)."""
        if self.ppi is None or self.human_only is None:
            return None
        return self.ppi.width < self.human_only.width


@dataclass(frozen=True, slots=True)
class RetrieverEstimate:
    """A retriever's estimates, by metric (``METRICS`` order), and whether the judge shares its model."""

    retriever: str
    metrics: dict[str, MetricEstimate]
    shares_model: bool


@dataclass(frozen=True, slots=True)
class SampleUse:
    """The sample the estimate uses: where it was read, how it was drawn, which questions count."""

    path: str
    sample: HumanSample | None
    population: int
    used: tuple[str, ...]
    """The sample's questions judged fully, in sample order."""
    coverage: tuple[float, float] | None
    """The share of pool pairs the judge graded: on ``used`` questions, and on the others."""
    reason: str
    """Why the sample gives no interval ("" when it does; a judge's coverage aside)."""

    def describe(self) -> str:
        """``sample.json: 40 drawn (seed 0) of 225 questions, 38 judged fully``."""
        shown = _shown(self.path)
        if self.sample is None:
            return f"none ({shown})"
        s = self.sample
        return (
            f"{shown}: {len(s.questions)} drawn (seed {s.seed}, {s.describe_design()}) of "
            f"{s.population} questions, {len(self.used)} judged fully"
        )

    def strata(self) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """(label, the stratum's questions, its questions judged fully) of each stratum; one stratum
        of every question for a uniform sample."""
        s = self.sample
        if s is None:
            return []
        used = set(self.used)
        if s.design != "strata":
            return [("all", (), self.used)]
        return [
            (t.label, t.questions, tuple(q for q in t.questions if q in used)) for t in s.strata
        ]


@dataclass(frozen=True, slots=True)
class Estimates:
    """Every retriever's estimates, the judges read and the sample used."""

    judge: str | None
    judges: tuple[str, ...]
    """The judges whose verdicts were read (every judge's latest when ``judge`` is None)."""
    models: tuple[str, ...]
    shares: tuple[str, ...]
    sample: SampleUse
    k: int
    retrievers: dict[str, RetrieverEstimate]
    #: What every interval estimates, in words (``target``).
    target: str = ""

    def reversals(self) -> list[tuple[str, str, str]]:
        """(metric, a, b): two retrievers whose model-filled means are in the other order than their
        prediction-powered estimates (a judge that would mislead a reader comparing them)."""
        out = []
        names = list(self.retrievers)
        for metric, _, _ in METRICS:
            for i, a in enumerate(names):
                for b in names[i + 1 :]:
                    ma, mb = (
                        self.retrievers[a].metrics.get(metric),
                        self.retrievers[b].metrics.get(metric),
                    )
                    if ma is None or mb is None or ma.ppi is None or mb.ppi is None:
                        continue
                    if ma.model_filled is None or mb.model_filled is None:
                        continue
                    filled = ma.model_filled - mb.model_filled
                    estimated = ma.ppi.estimate - mb.ppi.estimate
                    if filled * estimated < 0:
                        out.append((metric, a, b))
        return out


def _shown(path: str) -> str:
    """A path relative to the working folder when inside it (``./golden/sample.json``)."""
    try:
        return f"./{Path(path).relative_to(Path.cwd())}"
    except ValueError:
        return path


def _picker(judge: str | None, applies: Callable[[Label], bool]) -> Pick:
    """The verdict that counts for a pair: the judge's, or the latest of every judge's."""

    def pick(pair: PairLabels) -> Label | None:
        verdicts = pair.verdicts(applies)
        if judge is not None:
            return verdicts.get(judge)
        return max(verdicts.values(), key=lambda label: label.line, default=None)

    return pick


class _Grades:
    """The three sets of grades of a question, at the evaluation's level (see the module docstring)."""

    def __init__(self, ws: Workspace, judge: str | None) -> None:
        self.ws = ws
        self.applies: Callable[[Label], bool] = lambda label: ws.grades.label_status(label) is None
        self.verdict = _picker(judge, self.applies)

    def _hand(self, qid: str, people: bool, model: bool) -> dict[str, int]:
        """The chosen labels' grades of ragtui's chunks: people's first, then the judge's."""
        out: dict[str, int] = {}
        foreign = self.ws.passages.foreign
        for cid, pair in self.ws.grades.labels.pairs.get(qid, {}).items():
            if cid in foreign:
                continue
            label = pair.human(self.applies) if people else None
            if label is None and model:
                label = self.verdict(pair)
            if label is not None and label.grade is not None:
                out[cid] = label.grade
        return out

    def _lifted(self, qid: str, hand: dict[str, int], base: bool = True) -> dict[str, int]:
        """Over the evidence rule or the qrels, as the metrics' grades are laid (``evaluation_grades``)."""
        return self.ws.grades.evaluation_grades(qid, hand, base)

    def human(self, qid: str) -> dict[str, int]:
        return self._lifted(qid, self._hand(qid, people=True, model=False))

    def filled(self, qid: str) -> dict[str, int]:
        return self._lifted(qid, self._hand(qid, people=True, model=True))

    def model(self, qid: str) -> dict[str, int]:
        # The judge's side alone: a pair it never graded is unjudged there, never filled from the
        # qrels (people's grades); the evidence rule, no person's, still lies under it.
        people = self.ws.data.base_source == SOURCE_QRELS
        return self._lifted(qid, self._hand(qid, people=False, model=True), base=not people)


def _evaluation(ws: Workspace, grades: Callable[[str], dict[str, int]]) -> Evaluation:
    """The shown retrievers evaluated with other grades (same questions, rankings, k)."""
    ev = ws.evaluation
    assert ev is not None
    return Evaluation(
        ev.question_ids,
        grades,
        ev.rankings,
        ev.k,
        ev.threshold,
        own=dict(ev.own),
        units=ev.units,
    )


def _max_grade(ws: Workspace) -> int:
    """The highest grade an unjudged pair could get: the scale's top, or the data's if higher."""
    scale = ws.settings.grade_scale
    top = max((g for g, _ in scale), default=2) if scale else 2
    for grades in ws.data.qrels.values():
        top = max(top, max(grades.values(), default=top))
    return top


def _ranges(ws: Workspace, name: str) -> dict[str, tuple[float, float] | None]:
    """The mean of each question's unjudged range, over the questions today's means are over."""
    ev = ws.evaluation
    assert ev is not None
    k, threshold, top = ev.k, ev.threshold, _max_grade(ws)
    lows: dict[str, list[float]] = {m: [] for m, _, _ in METRICS}
    highs: dict[str, list[float]] = {m: [] for m, _, _ in METRICS}
    foreign = ws.passages.foreign
    for qid in ev.evaluated:
        ranked = [cid for cid, _ in ev.rankings[name].get(qid, ())]
        gains = ev.gains_for(name, qid)
        mine = set(ranked)
        pool: dict[str, None] = {}
        for other in ev.rankings:
            for cid, _ in ev.rankings[other].get(qid, ())[:k]:
                if cid not in foreign or cid in mine:
                    pool.setdefault(cid)
        for metric, _, measure in METRICS:
            low, high = unjudged_range(
                measure, ranked, gains, ranked if measure == "rr" else pool, k, threshold, top
            )
            lows[metric].append(low)
            highs[metric].append(high)
    out: dict[str, tuple[float, float] | None] = {}
    for metric, _, _ in METRICS:
        if metric == "recall" and ev.units is not None:
            out[metric] = None  # evidence recall: not a function of the chunks' grades alone
        elif lows[metric]:
            out[metric] = (float(np.mean(lows[metric])), float(np.mean(highs[metric])))
        else:
            out[metric] = (0.0, 0.0)
    return out


def _pools(ws: Workspace, qids: Sequence[str]) -> dict[str, list[str]]:
    """Each question's pool at depth k: the chunks of every shown retriever's top k."""
    return {
        qid: [
            e.chunk
            for e in pool_question(
                qid, ws.ranked.rankings, ws.retrievers, ws.settings.k, ws.passages.order
            )
        ]
        for qid in qids
    }


#: What a stratified sample's strata can be formed by.
STRATA_BY = ("confidence", "slice")
#: A slice with fewer questions joins the stratum of the other small slices.
MIN_STRATUM_SIZE = 6


def question_doubts(ws: Workspace, judge: str | None = None) -> dict[str, float] | None:
    """How unsure the judge is of each question's pool at depth k: the expected number of its
    verdicts there that are wrong, the sum of ``1 - p(its grade)`` over the pool pairs with a verdict
    (its grade probabilities, from the endpoint's logprobs); None when no verdict has them."""
    grades = _Grades(ws, judge)
    population = sample_population(ws.questions)
    labels = ws.grades.labels
    out: dict[str, float] = {}
    known = False
    for qid, pool in _pools(ws, population).items():
        doubt = 0.0
        for cid in pool:
            pair = labels.pair(qid, cid)
            verdict = grades.verdict(pair) if pair is not None else None
            if verdict is None or not verdict.probabilities:
                continue
            known = True
            doubt += 1.0 - dict(verdict.probabilities).get(verdict.grade or 0, 0.0)
        out[qid] = doubt
    return out if known else None


def question_pairs(ws: Workspace) -> dict[str, float]:
    """The pairs people grade to judge each question fully: its pool pairs at depth k without a
    person's grade (at least 1, so a question already judged still counts in the allocation)."""
    grades = _Grades(ws, None)
    labels = ws.grades.labels
    return {
        qid: float(
            max(1, sum(not person_graded(labels.pair(qid, c), grades.applies) for c in pool))
        )
        for qid, pool in _pools(ws, sample_population(ws.questions)).items()
    }


def draw_design(
    ws: Workspace, size: int, seed: int, design: str = "uniform", by: str = "confidence"
) -> HumanSample:
    """A sample of ``size`` questions for the estimate: a simple random sample (``uniform``), or
    strata (``by`` the judge's doubt, ``confidence_strata``, or by slice) with more
    questions where the judge is less sure and fewer where a pool costs more pairs. ValueError, in
    words, when the design cannot be drawn (no grade probabilities for confidence strata, no
    slices, too few questions)."""
    population = sample_population(ws.questions)
    if not population:
        raise ValueError("no question to draw a sample from")
    if design == "uniform":
        return draw_sample(population, size, seed)
    doubts = question_doubts(ws)
    if by == "confidence":
        if doubts is None:
            raise ValueError(
                "confidence strata need the judge's grade probabilities (an endpoint that "
                "returns logprobs); none of the verdicts of the pool has them: draw by slice, "
                "or uniform"
            )
        stratum_of = confidence_strata(population, doubts)
    elif by == "slice":
        slices = {q.id: "+".join(q.slices) or "(no slice)" for q in ws.questions if not q.retired}
        counts: dict[str, int] = {}
        for label in slices.values():
            counts[label] = counts.get(label, 0) + 1
        stratum_of = {
            q: (label if counts[label] >= MIN_STRATUM_SIZE else "(small slices)")
            for q, label in slices.items()
        }
        if len(set(stratum_of.values())) < 2:
            raise ValueError(
                f"strata by slice need two slices of at least {MIN_STRATUM_SIZE} questions each"
            )
    else:
        raise ValueError(f"strata by {by!r}: expected one of {', '.join(STRATA_BY)}")
    return draw_stratified(population, stratum_of, size, seed, by, doubts, question_pairs(ws))


def sample_use(ws: Workspace) -> SampleUse:
    """The recorded sample and which of its questions people judged fully: what the estimates
    read (``ragtui sample`` shows it)."""
    return _sample_use(ws, _Grades(ws, None), sample_population(ws.questions))


def _sample_use(ws: Workspace, grades: _Grades, population: list[str]) -> SampleUse:
    """The recorded sample and which of its questions are judged fully."""
    folder = ws.grades.labels.path.parent
    path = str(folder / SAMPLE_FILE)
    try:
        sample = load_sample(folder)
    except InputError as exc:  # a reason like the others: the numbers stand without it
        return SampleUse(path, None, len(population), (), None, exc.message)
    if sample is None:
        return SampleUse(
            path,
            None,
            len(population),
            (),
            None,
            "no recorded random sample of questions (ragtui sample, or the judging view's o, "
            "draws one); questions people choose themselves are not a random sample",
        )
    if not sample.drawn_from(population):
        return SampleUse(
            path,
            sample,
            len(population),
            (),
            None,
            f"the sample was drawn from {sample.population} questions, not from the "
            f"{len(population)} there are now: it is no random sample of them",
        )
    known = set(population)
    drawn = [q for q in sample.questions if q in known]
    pools = _pools(ws, drawn)
    labels = ws.grades.labels
    used = tuple(
        q for q in drawn if all(person_graded(labels.pair(q, c), grades.applies) for c in pools[q])
    )
    reason = ""
    if len(used) < MIN_SAMPLE:
        reason = (
            f"{len(used)} of the sample's {len(sample.questions)} questions judged fully "
            f"(a person's grade on every pair of the pool at depth {ws.settings.k}); "
            f"the interval needs {MIN_SAMPLE}"
        )
    elif sample.design == "strata":
        taken = set(used)
        counts = [(t.label, sum(q in taken for q in t.questions)) for t in sample.strata]
        short = [f"{visible_line(label)} {n}" for label, n in counts if n < MIN_PER_STRATUM]
        if short:
            reason = (
                f"each stratum needs {MIN_PER_STRATUM} questions judged fully; judged: "
                + ", ".join(short)
                + " (judge the sample in its order)"
            )
    return SampleUse(path, sample, len(population), used, None, reason)


def _coverage(
    ws: Workspace, grades: _Grades, population: list[str], used: Sequence[str]
) -> tuple[float, float]:
    """The share of pool pairs (depth k) with the judge's verdict: on ``used``, on the others."""
    chosen = set(used)
    pools = _pools(ws, population)
    graded, pooled = [0, 0], [0, 0]  # the sample's questions, then the others
    labels = ws.grades.labels
    for qid, pool in pools.items():
        side = 0 if qid in chosen else 1
        for cid in pool:
            pair = labels.pair(qid, cid)
            graded[side] += pair is not None and grades.verdict(pair) is not None
            pooled[side] += 1
    sample, others = (g / p if p else 1.0 for g, p in zip(graded, pooled, strict=True))
    return sample, others


def _judges_read(ws: Workspace, grades: _Grades) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The judges and the models whose verdicts count (each in journal order)."""
    names: dict[str, None] = {}
    models: dict[str, None] = {}
    for _, _, pair in ws.grades.labels.iter_pairs():
        label = grades.verdict(pair)
        if label is not None:
            names.setdefault(label.judge)
            if label.model:
                models.setdefault(label.model)
    return tuple(names), tuple(models)


def _shares(ws: Workspace, models: Sequence[str]) -> tuple[str, ...]:
    """The retrievers that use one of the judges' models (a judge favours them)."""
    found = {r for model in models for r in judge_shares(model, ws.settings)}
    return tuple(r for r in ws.retrievers if r in found)


def estimates(ws: Workspace, judge: str | None = None) -> Estimates:
    """Every shown retriever's estimates (see the module docstring); ``judge`` None: every judge's
    latest verdict."""
    ev = ws.evaluation
    assert ev is not None
    grades = _Grades(ws, judge)
    judges, models = _judges_read(ws, grades)
    population = sample_population(ws.questions)
    use = _sample_use(ws, grades, population)
    reasons = [use.reason] if use.reason else []
    coverage = None
    if not judges:
        reasons.insert(
            0,
            (f"no verdict of the judge {judge!r}" if judge else "no model judge's verdicts")
            + " in the journal (ragtui judge grades the pool)",
        )
    elif not reasons:
        coverage = _coverage(ws, grades, population, use.used)
        if abs(coverage[0] - coverage[1]) > COVERAGE_GAP:
            reasons.append(
                f"the judge graded {coverage[0]:.0%} of the pool pairs of the sampled questions "
                f"and {coverage[1]:.0%} of the others': it must grade both alike (ragtui judge "
                "without --unjudged or --questions)"
            )
    reason = "; ".join(reasons)
    use = SampleUse(use.path, use.sample, use.population, use.used, coverage, use.reason)
    human_ev = _evaluation(ws, grades.human)
    filled_ev = _evaluation(ws, grades.filled) if judges else None
    model_ev = _evaluation(ws, grades.model) if judges else None
    rows = human_ev.rows_of(use.used)
    in_sample = np.zeros(len(ev.question_ids), dtype=bool)
    in_sample[rows[rows >= 0]] = True
    sample_ok = not use.reason
    strata = _stratum_rows(human_ev, use, population) if sample_ok else []
    shares = _shares(ws, models)
    out: dict[str, RetrieverEstimate] = {}
    for name in (r for r in ws.retrievers if r in ev.rankings):  # evaluated (not embedding)
        ranges = _ranges(ws, name)
        summary = ev.summary(name).as_dict()
        human_summary = human_ev.summary(name).as_dict()
        metrics: dict[str, MetricEstimate] = {}
        for metric, field, _ in METRICS:
            y = human_ev.column(name, field)
            zero = np.zeros_like(y)
            human_only = _interval(strata, y, zero) if sample_ok else None
            filled = ppi = None
            differing = 0
            if filled_ev is not None and model_ev is not None:
                filled = filled_ev.summary(name).as_dict()[metric]
                f = model_ev.column(name, field)
                differing = int(np.count_nonzero(f[in_sample] != y[in_sample]))
                if not reason:
                    ppi = _interval(strata, y, f)
            metrics[metric] = MetricEstimate(
                value=summary[metric],
                unjudged=ranges[metric],
                human=human_summary[metric],
                model_filled=filled,
                ppi=ppi,
                human_only=human_only,
                differing=differing,
                reason=reason,
            )
        out[name] = RetrieverEstimate(name, metrics, name in shares)
    return Estimates(judge, judges, models, shares, use, ev.k, out, _target(ws, len(population)))


def _stratum_rows(
    ev: Evaluation, use: SampleUse, population: Sequence[str]
) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Each stratum's rows of the evaluation: its questions judged fully, its others, its doubt."""
    out = []
    sample = use.sample
    doubts = {t.label: t.doubt for t in sample.strata} if sample is not None else {}
    for label, members, used in use.strata():
        rows = ev.rows_of(list(members or population))
        rows = rows[rows >= 0]
        taken = ev.rows_of(list(used))
        taken = taken[taken >= 0]
        rest = np.setdiff1d(rows, taken)
        out.append((taken, rest, doubts.get(label, 0.0)))
    return out


def _interval(
    strata: Sequence[tuple[np.ndarray, np.ndarray, float]], y: np.ndarray, f: np.ndarray
) -> Interval:
    """The estimate of the sample's design from the people's values ``y`` and the judge's ``f``
    (``f`` zero: the people's sample alone)."""
    return stratified_mean([Stratum(y[taken], f[taken], f[rest], d) for taken, rest, d in strata])


def _target(ws: Workspace, questions: int) -> str:
    """What the estimates estimate: the people's mean over every question's pool; where the grades
    are not the qrels, recall and nDCG are relative to what is judged."""
    s = ws.settings
    target = (
        f"the mean over the {questions} evaluated questions of what people would grade in the "
        f"pool (each retriever's top {s.k}, ranked at depth {s.depth})"
    )
    if ws.data.base_source != SOURCE_QRELS:
        target += (
            "; recall and nDCG are relative to the passages graded (the pool and the evidence "
            "rule's): a relevant passage outside them counts nowhere"
        )
    return target
