"""The prediction-powered interval covers the true mean as often as it says, on Cranfield's real qrels.

The truth is Cranfield's qrels (225 questions, grades 0-4) and BM25's top 10 (k = depth = 10, so
the pool is BM25's top 10). A simulated judge grades every pool pair; the pairs outside the pool
keep their qrels grade (as ``--grades human+model`` keeps the evidence rule or the qrels where no
judge graded). People judge a random sample of 40 questions fully (their grades are the qrels). Each
repetition draws the judge's errors and the sample afresh, with fixed seeds, and computes every
question's recall@10, P@10, RR and nDCG@10 with numpy (``batch_metrics``) under the judge's grades.

Judges: ``flip 10 %`` and ``flip 30 %`` replace a pool pair's grade with another grade of the scale
(uniformly) at that rate; ``biased`` calls a not-relevant pool pair relevant (a grade from 1 to 4)
at 30 % and never errs the other way.

Run with ``-s`` to see the figures docs/judges.md quotes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from ragtui.core.judges.estimate import mean_interval, ppi_mean
from ragtui.core.metrics.batch import batch_metrics
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from tests.conftest import CRANFIELD

K = 10
SAMPLE = 40
REPS = 1000
MAX_GRADE = 4
METRICS = ("recall", "precision", "rr", "ndcg")
NAMES = {"recall": "recall@10", "precision": "P@10", "rr": "RR", "ndcg": "nDCG@10"}
#: Each judge: (kind, rate, seed).
JUDGES = {
    "flip 10 %": ("flip", 0.10, 2510),
    "flip 30 %": ("flip", 0.30, 2530),
    "biased": ("biased", 0.30, 2599),
}
#: Repetitions given to batch_metrics at once (their questions stacked).
CHUNK = 250


@dataclass(frozen=True)
class Cranfield:
    """BM25's rankings as a code matrix and every (question, doc) pair that matters, with its true
    grade and whether it is in the pool."""

    ranked: np.ndarray
    offsets: np.ndarray
    codes: np.ndarray
    truth: np.ndarray
    pooled: np.ndarray

    @property
    def questions(self) -> int:
        return len(self.ranked)

    def stacked(self, times: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ranked matrix and grade rows repeated ``times`` times (one block a repetition)."""
        counts = np.tile(np.diff(self.offsets), times)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        return np.tile(self.ranked, (times, 1)), offsets, np.tile(self.codes, times)


@pytest.fixture(scope="module")
def cranfield() -> Cranfield:
    ws = Workspace.load(
        Settings(beir=CRANFIELD, chunk_size=None, retrievers=("bm25",), k=K, depth=K)
    )
    qids = [q.id for q in ws.questions]
    code: dict[str, int] = {}
    ranked = np.full((len(qids), K), -1, dtype=np.int64)
    offsets, codes, truth, pooled = [0], [], [], []
    for row, qid in enumerate(qids):
        top = [code.setdefault(doc, len(code)) for doc, _ in ws.ranked.rankings["bm25"][qid][:K]]
        ranked[row, : len(top)] = top
        grades = {code.setdefault(doc, len(code)): g for doc, g in ws.data.qrels[qid].items()}
        for doc in top:
            grades.setdefault(doc, 0)  # unjudged: not relevant, as trec_eval reads it
        for doc, grade in grades.items():
            codes.append(doc)
            truth.append(grade)
            pooled.append(doc in top)
        offsets.append(len(codes))
    return Cranfield(
        ranked, np.array(offsets), np.array(codes), np.array(truth), np.array(pooled, dtype=bool)
    )


def judged(
    data: Cranfield, kind: str, rate: float, times: int, rng: np.random.Generator
) -> np.ndarray:
    """The judge's grades of every pair, ``times`` repetitions stacked."""
    truth = np.tile(data.truth, times)
    pooled = np.tile(data.pooled, times)
    draw = rng.random(len(truth))
    if kind == "flip":
        other = rng.integers(0, MAX_GRADE, size=len(truth))  # another grade, uniformly
        other = np.where(other >= truth, other + 1, other)
        return np.where(pooled & (draw < rate), other, truth)
    relevant = rng.integers(1, MAX_GRADE + 1, size=len(truth))
    return np.where(pooled & (truth <= 0) & (draw < rate), relevant, truth)


@dataclass
class Figures:
    """What one judge's repetitions gave, per metric."""

    truth: dict[str, float]
    ppi_covered: dict[str, float]
    human_covered: dict[str, float]
    ppi_width: dict[str, float]
    human_width: dict[str, float]
    filled_bias: dict[str, float]
    filled_bias_se: dict[str, float]
    ppi_bias: dict[str, float]
    ppi_bias_se: dict[str, float]


def simulate(data: Cranfield, kind: str, rate: float, seed: int) -> Figures:
    rng = np.random.default_rng(seed)
    n_q = data.questions
    true_values = batch_metrics(data.ranked, data.offsets, data.codes, data.truth, K)
    y = {m: getattr(true_values, m) for m in METRICS}
    theta = {m: float(y[m].mean()) for m in METRICS}
    covered = {m: [0, 0] for m in METRICS}
    widths: dict[str, list[list[float]]] = {m: [[], []] for m in METRICS}
    filled: dict[str, list[float]] = {m: [] for m in METRICS}
    errors: dict[str, list[float]] = {m: [] for m in METRICS}
    ranked, offsets, codes = data.stacked(CHUNK)
    for _ in range(REPS // CHUNK):
        values = batch_metrics(ranked, offsets, codes, judged(data, kind, rate, CHUNK, rng), K)
        for block in range(CHUNK):
            sample = np.zeros(n_q, dtype=bool)
            sample[rng.choice(n_q, SAMPLE, replace=False)] = True
            rows = slice(block * n_q, (block + 1) * n_q)
            for m in METRICS:
                f = getattr(values, m)[rows]
                ppi = ppi_mean(y[m][sample], f[sample], f[~sample])
                human = mean_interval(y[m][sample], n_q)
                covered[m][0] += ppi.low <= theta[m] <= ppi.high
                covered[m][1] += human.low <= theta[m] <= human.high
                widths[m][0].append(ppi.width)
                widths[m][1].append(human.width)
                errors[m].append(ppi.estimate - theta[m])
                filled[m].append((y[m][sample].sum() + f[~sample].sum()) / n_q - theta[m])
    return Figures(
        truth=theta,
        ppi_covered={m: covered[m][0] / REPS for m in METRICS},
        human_covered={m: covered[m][1] / REPS for m in METRICS},
        ppi_width={m: float(np.mean(widths[m][0])) for m in METRICS},
        human_width={m: float(np.mean(widths[m][1])) for m in METRICS},
        filled_bias={m: float(np.mean(filled[m])) for m in METRICS},
        filled_bias_se={m: float(np.std(filled[m], ddof=1) / math.sqrt(REPS)) for m in METRICS},
        ppi_bias={m: float(np.mean(errors[m])) for m in METRICS},
        ppi_bias_se={m: float(np.std(errors[m], ddof=1) / math.sqrt(REPS)) for m in METRICS},
    )


@pytest.fixture(scope="module")
def figures(cranfield: Cranfield) -> dict[str, Figures]:
    out = {name: simulate(cranfield, *spec) for name, spec in JUDGES.items()}
    print()
    print(
        f"Cranfield, BM25 top {K}, {SAMPLE} of {cranfield.questions} questions judged by people, "
        f"{REPS} repetitions"
    )
    print(
        "judge      metric     truth  PPI covers  human-only covers  PPI width  human width  "
        "model-filled bias  PPI bias"
    )
    for name, fig in out.items():
        for m in METRICS:
            print(
                f"{name:<10} {NAMES[m]:<9} {fig.truth[m]:6.3f}  {fig.ppi_covered[m]:9.1%}  "
                f"{fig.human_covered[m]:16.1%}  {fig.ppi_width[m]:9.3f}  {fig.human_width[m]:11.3f}  "
                f"{fig.filled_bias[m]:+17.3f}  {fig.ppi_bias[m]:+8.3f}"
            )
    return out


@pytest.mark.parametrize("judge", list(JUDGES))
def test_the_95_interval_covers_the_true_mean_93_to_97_percent_of_the_time(figures, judge):
    fig = figures[judge]
    for m in METRICS:
        assert 0.93 <= fig.ppi_covered[m] <= 0.97, (judge, m, fig.ppi_covered[m])


def test_at_10_percent_the_estimate_is_narrower_than_the_human_sample_alone(figures):
    fig = figures["flip 10 %"]
    for m in METRICS:
        assert fig.ppi_width[m] < fig.human_width[m], (m, fig.ppi_width[m], fig.human_width[m])


def test_the_model_filled_mean_is_biased_and_the_estimate_is_not(figures):
    fig = figures["biased"]
    for m in METRICS:
        # Pairs called relevant that are not: every metric comes out too high, far beyond chance.
        assert fig.filled_bias[m] > 0.05, (m, fig.filled_bias[m])
        assert fig.filled_bias[m] > 10 * fig.filled_bias_se[m]
    for fig in figures.values():
        for m in METRICS:
            # The estimate's error averages out: within 4 standard errors of 0, and small.
            assert abs(fig.ppi_bias[m]) < max(4 * fig.ppi_bias_se[m], 0.002), m
