"""How sure the numbers are (issue 25 item 4): the prediction-powered estimate and its interval on
constructed cases computed by hand, Student's t against scipy, the unjudged range by hand and
against every grading of the unjudged pairs, the range holding the true value on Cranfield with
qrels removed at random, and ``--estimate`` over a workspace: the people's, model-filled and
prediction-powered values, the reasons there is no interval, ``eval --estimate`` (text, ``--json``
and its documented keys), ``report`` and the app's metric panel.

The coverage of the interval is ``tests/unit/test_estimate_simulation.py``'s.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from ragtui.cli import main
from ragtui.cli.output import render_report
from ragtui.core.data.tokenizer import resolve_model
from ragtui.core.judges.estimate import (
    MIN_SAMPLE,
    degrees_of_freedom,
    mean_interval,
    ppi_mean,
    t_quantile,
    unjudged_range,
)
from ragtui.core.judges.estimates import estimates
from ragtui.core.judges.estimates_report import estimates_report
from ragtui.core.judges.sample import draw_sample, save_sample
from ragtui.core.judges.verify import sample_population
from ragtui.core.labelling.journal import LabelJournal
from ragtui.core.labelling.labels import GRADES_HUMAN_MODEL, Label, judge_annotator, now_iso
from ragtui.core.metrics.formulas import (
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevant_ids,
)
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace
from ragtui.tui.widgets.metrics_panel import estimate_line
from ragtui.tui.widgets.report_view import report_plain
from tests.app.test_tui import WIDE, FakeEmbedder, make_app, run_async, wait_ready
from tests.conftest import CRANFIELD, ROOT
from tests.unit.test_docs import assert_documented, documented, key_paths, matches

# ---- the estimate, by hand -------------------------------------------------------------------


def test_ppi_on_a_constructed_case_by_hand():
    # N = 6 questions, the sample the first 4: y (people) and f (model) there, f elsewhere.
    y = [1.0, 0.0, 1.0, 0.5]
    f = [1.0, 0.5, 0.5, 0.5]
    rest = [0.2, 0.4]
    got = ppi_mean(y, f, rest)
    # r = f - y = (0, 0.5, -0.5, 0): mean 0, S^2 = 0.5 / 3; theta = (2.5 + 0.6) / 6 - (2/6) * 0.
    assert got.estimate == pytest.approx(3.1 / 6, abs=1e-15)
    # Var = S^2 / n * (1 - n / N) = (1/6) / 4 * (1/3) = 1/72; r's kurtosis is below 0: df = 3,
    # t_{0.975, 3} = 3.182446305 (tables).
    assert got.df == 3
    half = 3.182446305284263 * math.sqrt(1 / 72)
    assert got.low == pytest.approx(3.1 / 6 - half, abs=1e-12)
    assert got.high == pytest.approx(3.1 / 6 + half, abs=1e-12)
    assert (got.n, got.population) == (4, 6)
    assert got.half_width == pytest.approx(half, abs=1e-12)


def test_the_correction_removes_the_models_error_on_the_sample():
    # The model says 1 everywhere; people say 1, 0, 1, 0 on the sample: the model is 0.5 too high.
    got = ppi_mean([1, 0, 1, 0], [1, 1, 1, 1], [1, 1])
    # (2 + 2) / 6 - (2 / 6) * 0.5 = 0.5 = mean_N(f) - mean_s(f - y) = 1 - 0.5.
    assert got.estimate == pytest.approx(0.5, abs=1e-15)
    # With every question in the sample the interval is the exact mean, of width 0.
    exact = ppi_mean([1, 0, 1, 0], [1, 1, 1, 1], [])
    assert (exact.estimate, exact.width) == (0.5, 0.0)


def test_the_human_only_interval_by_hand():
    got = mean_interval([1.0, 0.0, 1.0, 0.5], 6)
    # mean 0.625, S^2 = (0.140625 * 2 + 0.390625 + 0.015625) / 3 = 0.229167; df 3.
    variance = (2 * 0.375**2 + 0.625**2 + 0.125**2) / 3 / 4 * (1 - 4 / 6)
    assert got.estimate == 0.625
    half = 3.182446305284263 * math.sqrt(variance)
    # 0.625 + half passes 1: the upper end is brought to 1, and the note says so.
    assert got.low == pytest.approx(0.625 - half, abs=1e-12) and got.high == 1.0
    assert got.note is not None and f"{0.625 + half:.3f}" in got.note


def test_degrees_of_freedom_fall_with_the_kurtosis():
    # 36 zeros and 4 ones: kurtosis = m4 / m2^2 - 3 = 0.0657 / 0.0081 - 3 = 5.111...;
    # df = 2 / (2/39 + 5.111/40) = 11.17, rounded down.
    assert degrees_of_freedom([0.0] * 36 + [1.0] * 4) == 11
    # Normal-looking values keep n - 1; equal values too (no spread to doubt).
    assert degrees_of_freedom(np.linspace(-1, 1, 40)) == 39
    assert degrees_of_freedom([0.3] * 12) == 11


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 11, 20, 39, 100, 1000])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_t_quantile_against_scipy(p, df):
    assert t_quantile(p, df) == pytest.approx(scipy.stats.t.ppf(p, df), rel=1e-9)
    assert t_quantile(1 - p, df) == pytest.approx(scipy.stats.t.ppf(1 - p, df), rel=1e-9)


def test_too_small_a_sample_is_refused():
    with pytest.raises(ValueError):
        ppi_mean([1.0], [1.0], [0.0])
    with pytest.raises(ValueError):
        mean_interval([1.0, 0.0], 1)


# ---- the unjudged range, by hand ------------------------------------------------------------

#: The retriever ranked a, b, c, d; k = 3; a is judged not relevant and x (not retrieved)
#: relevant (grade 1); b and c (its top 3) and e (another retriever's top 3) are unjudged.
RANKED = ["a", "b", "c", "d"]
GAINS = {"a": 0, "x": 1}
POOL = ["a", "b", "c", "e"]


def test_the_unjudged_range_by_hand():
    # recall@3: today 0/1; high b, c relevant: 2/3; low e relevant: 0/2.
    assert unjudged_range("recall", RANKED, GAINS, POOL, 3) == (0.0, pytest.approx(2 / 3))
    # P@3: today 0; high 2/3; low 0.
    assert unjudged_range("precision", RANKED, GAINS, POOL, 3) == (0.0, pytest.approx(2 / 3))
    # RR over the whole run: b, c and d unjudged; high: b at rank 2.
    assert unjudged_range("rr", RANKED, GAINS, RANKED, 3) == (0.0, 0.5)
    # nDCG@3, grades 0-2: high b = c = 2: DCG 2/log2(3) + 2/2, ideal 2 + 2/log2(3) + 1/2.
    high = (2 / math.log2(3) + 1) / (2 + 2 / math.log2(3) + 0.5)
    assert high == pytest.approx(0.601261, abs=1e-6)
    low, top = unjudged_range("ndcg", RANKED, GAINS, POOL, 3, max_grade=2)
    assert (low, top) == (0.0, pytest.approx(high, abs=1e-15))


def test_all_relevant_is_not_the_top_of_ndcg():
    # Ranks 1-2 judged 2, rank 3 unjudged, grades 0-4: nDCG is 1.0 at grade 0-2 for c, and
    # (2 + 2/log2(3) + 4/2) / (4 + 2/log2(3) + 2/2) = 0.840 at grade 4. "All relevant at the top
    # grade" is the low here and "none relevant" the high; a grade of 3 (0.905) lies between.
    low, high = unjudged_range("ndcg", ["a", "b", "c"], {"a": 2, "b": 2}, ["a", "b", "c"], 3, 1, 4)
    at4 = (2 + 2 / math.log2(3) + 2) / (4 + 2 / math.log2(3) + 1)
    assert at4 == pytest.approx(0.840304, abs=1e-6)
    assert (low, high) == (pytest.approx(at4, abs=1e-15), 1.0)


def _value(measure, ranked, gains, k, threshold):
    rel = relevant_ids(gains, threshold)
    if measure == "recall":
        return recall_at_k(ranked, rel, k)
    if measure == "precision":
        return precision_at_k(ranked, rel, k)
    if measure == "rr":
        return reciprocal_rank(ranked, rel)
    return ndcg_at_k(ranked, gains, k)


def test_the_range_is_the_min_and_max_over_every_grading_of_the_unjudged_pairs():
    rng = random.Random(25)
    checked = 0
    while checked < 400:
        docs = list(range(9))
        k = rng.randint(1, 4)
        ranked = rng.sample(docs, rng.randint(0, 6))
        measure = rng.choice(["recall", "precision", "rr", "ndcg"])
        pool = set(ranked[:k]) | set(rng.sample(docs, 3))
        if measure == "rr":
            pool = set(ranked)
        top = rng.randint(1, 3)
        threshold = rng.randint(1, top)
        gains = {d: rng.randint(0, top + 1) for d in docs if rng.random() < 0.5}
        unjudged = sorted((pool | set(ranked if measure == "rr" else ranked[:k])) - set(gains))
        if len(unjudged) > 5:
            continue
        values = []
        for grades in itertools.product(range(top + 1), repeat=len(unjudged)):
            graded = {**gains, **dict(zip(unjudged, grades, strict=True))}
            values.append(_value(measure, ranked, graded, k, threshold))
        low, high = unjudged_range(measure, ranked, gains, pool, k, threshold, top)
        assert (low, high) == (
            pytest.approx(min(values), abs=1e-12),
            pytest.approx(max(values), abs=1e-12),
        )
        checked += 1


# ---- the range on Cranfield with qrels removed at random -------------------------------------


@pytest.fixture(scope="module")
def cranfield_bm25() -> Workspace:
    return Workspace.load(
        Settings(beir=CRANFIELD, chunk_size=None, retrievers=("bm25",), k=10, depth=100)
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_range_holds_the_true_value_with_qrels_removed_at_random(cranfield_bm25, seed):
    """Two retrievers: BM25, and BM25's list from rank 6 on (their top 10s make the pool). Qrels
    of pool pairs are removed at random (half of them); the range computed from what is left holds
    the value the full qrels give, for every question, metric and retriever. RR reads the whole
    run: there qrels of any pair of the run are removed."""
    ws = cranfield_bm25
    rng = random.Random(seed)
    k = 10
    for qid in ws.evaluation.question_ids:
        truth = ws.data.qrels[qid]
        bm25 = [cid for cid, _ in ws.ranked.rankings["bm25"][qid]]
        shifted = bm25[5:]
        pool = list(dict.fromkeys(bm25[:k] + shifted[:k]))
        for measure in ("recall", "precision", "rr", "ndcg"):
            reach = set(bm25) | set(shifted) if measure == "rr" else set(pool)
            removed = {d for d in truth if d in reach and rng.random() < 0.5}
            gains = {d: g for d, g in truth.items() if d not in removed}
            for ranked in (bm25, shifted):
                scope = ranked if measure == "rr" else pool
                low, high = unjudged_range(measure, ranked, gains, scope, k, 1, 4)
                true = _value(measure, ranked, truth, k, 1)
                assert low - 1e-12 <= true <= high + 1e-12, (qid, measure, low, true, high)


# ---- over a workspace: Cranfield's qrels as the people, a noisy judge ------------------------

K = 3
SAMPLE = 40


@pytest.fixture
def cran(tmp_path: Path) -> Path:
    """A writable copy of Cranfield (its journal and sample are written by the tests)."""
    folder = tmp_path / "cranfield"
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        shutil.copy(CRANFIELD / name, folder / name)
    return folder


def _settings(folder: Path, **changes: object) -> Settings:
    return Settings(beir=folder, chunk_size=None, retrievers=("bm25",), k=K, depth=10, **changes)


def _person(q: str, c: str, grade: int, sha1: str, who: str = "ann") -> bytes:
    return Label(q, c, grade, sha1, now_iso(), who).to_json()


def _verdict(q: str, c: str, grade: int, sha1: str, judge: str = "llm", model: str = "m") -> Label:
    return Label(q, c, grade, sha1, now_iso(), judge_annotator(judge), model=model, reason="r")


def _noisy(grade: int, rng: random.Random, rate: float) -> int:
    return rng.choice([g for g in range(5) if g != grade]) if rng.random() < rate else grade


def _journal(
    folder: Path,
    *,
    judged: int = SAMPLE,
    sample: bool = True,
    skip_people_graded: bool = False,
    judge: str = "llm",
    rate: float = 0.2,
    seed: int = 7,
) -> tuple[Workspace, list[str]]:
    """The sample drawn and recorded, ``judged`` of its questions judged fully by a person (the
    qrels' grade, 0 where there is none), and the judge's verdicts on every question's top 10
    (the qrels' grade, wrong at ``rate``; with ``skip_people_graded`` none where a person graded)."""
    ws = Workspace.load(_settings(folder))
    sha = {c.id: c.sha1 for c in ws.data.chunks}
    population = sample_population(ws.questions)
    drawn = draw_sample(population, SAMPLE, seed)
    if sample:
        save_sample(folder, drawn)
    lines = []
    graded: set[tuple[str, str]] = set()
    for qid in drawn.questions[:judged]:
        for cid, _ in ws.ranked.rankings["bm25"][qid][:K]:
            lines.append(_person(qid, cid, ws.data.qrels[qid].get(cid, 0), sha[cid]))
            graded.add((qid, cid))
    (folder / "labels.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    rng = random.Random(seed)
    verdicts = [
        _verdict(qid, cid, _noisy(ws.data.qrels[qid].get(cid, 0), rng, rate), sha[cid], judge)
        for qid in population
        for cid, _ in ws.ranked.rankings["bm25"][qid][:10]
        if not (skip_people_graded and (qid, cid) in graded)
    ]
    LabelJournal(folder / "labels.jsonl", "tester").append_verdicts(verdicts)
    return Workspace.load(_settings(folder)), list(drawn.questions[:judged])


def test_the_three_values_and_the_estimate_computed_independently(cran):
    ws, used = _journal(cran)
    est = estimates(ws)
    assert est.judges == ("llm",) and est.sample.used == tuple(used)
    assert est.sample.coverage == (1.0, 1.0)
    population = sample_population(ws.questions)
    in_sample = set(used)
    # With --grades human+model the journal's counted grades are the model-filled ones.
    filled = Workspace.load(_settings(cran, counted_grades=GRADES_HUMAN_MODEL)).evaluation
    verdicts = {
        (q, c): lab.grade
        for q, by_chunk in ws.grades.labels.pairs.items()
        for c, pair in by_chunk.items()
        for lab in pair.verdicts().values()
    }
    for metric, field in (
        ("recall", "recall"),
        ("precision", "precision"),
        ("mrr", "rr"),
        ("ndcg", "ndcg"),
    ):
        m = est.retrievers["bm25"].metrics[metric]
        # The people's grades are the qrels: today's numbers, as trec_eval gives them.
        assert m.human == m.value == ws.evaluation.summary("bm25").as_dict()[metric]
        assert m.model_filled == pytest.approx(filled.summary("bm25").as_dict()[metric], abs=1e-12)
        # y and f by the formulas: the qrels; the judge's grades alone (the qrels are people's:
        # a pair the judge did not grade is unjudged on its side).
        ranked = {q: [c for c, _ in ws.ranked.rankings["bm25"][q]] for q in population}
        y = {q: _value(field, ranked[q], ws.data.qrels[q], K, 1) for q in population}
        f = {}
        for q in population:
            gains = {c: g for (qq, c), g in verdicts.items() if qq == q}
            f[q] = _value(field, ranked[q], gains, K, 1)
        n, big_n = len(used), len(population)
        by_hand = (
            sum(y[q] for q in used) + sum(f[q] for q in population if q not in in_sample)
        ) / big_n - ((big_n - n) / big_n) * float(np.mean([f[q] - y[q] for q in used]))
        assert m.ppi is not None and m.reason == ""
        assert m.ppi.estimate == pytest.approx(by_hand, abs=1e-12)
        expected = ppi_mean(
            [y[q] for q in used],
            [f[q] for q in used],
            [f[q] for q in population if q not in in_sample],
        )
        assert (m.ppi.low, m.ppi.high) == (
            pytest.approx(expected.low, abs=1e-12),
            pytest.approx(expected.high, abs=1e-12),
        )
        assert (m.ppi.n, m.ppi.population) == (SAMPLE, 225)
        assert m.differing == sum(f[q] != y[q] for q in used)
        assert m.human_only is not None and m.human_only.estimate == pytest.approx(
            np.mean([y[q] for q in used])
        )
        # The range holds today's value.
        assert m.unjudged is not None and m.unjudged[0] <= m.value <= m.unjudged[1]


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"sample": False}, "no recorded random sample of questions"),
        ({"judged": MIN_SAMPLE - 1}, f"{MIN_SAMPLE - 1} of the sample's 40 questions judged fully"),
        (
            {"skip_people_graded": True},
            "the judge graded 0% of the pool pairs of the sampled questions",
        ),
    ],
)
def test_no_interval_and_the_reason(cran, setup, reason):
    ws, _ = _journal(cran, **setup)
    est = estimates(ws)
    for r in est.retrievers.values():
        for m in r.metrics.values():
            assert m.ppi is None and reason in m.reason
            assert m.model_filled is not None  # the judge's values are still shown
    text = render_report(estimates_report(est))
    assert "no prediction-powered estimate: " in text and reason in text


def test_a_sample_of_other_questions_is_not_random_for_these(cran):
    ws, _ = _journal(cran)
    retired = sample_population(ws.questions)[-1]
    lines = (cran / "queries.jsonl").read_text().splitlines()
    (cran / "queries.jsonl").write_text(
        "\n".join(line for line in lines if f'"_id": "{retired}"' not in line) + "\n"
    )
    est = estimates(Workspace.load(_settings(cran)))
    assert est.retrievers["bm25"].metrics["ndcg"].ppi is None
    assert "drawn from 225 questions, not from the 224 there are now" in est.sample.reason
    assert est.retrievers["bm25"].metrics["ndcg"].human_only is None


def test_no_verdicts(cran):
    ws = Workspace.load(_settings(cran))
    m = estimates(ws).retrievers["bm25"].metrics["ndcg"]
    assert m.model_filled is None and m.ppi is None
    assert "no model judge's verdicts in the journal" in m.reason


def test_one_judge_or_every_judges_latest(cran):
    ws, _ = _journal(cran, rate=0.0)
    # A second judge, later in the journal, calls every top-10 pair not relevant.
    sha = {c.id: c.sha1 for c in ws.data.chunks}
    zero = [
        _verdict(q, c, 0, sha[c], "zero")
        for q in sample_population(ws.questions)
        for c, _ in ws.ranked.rankings["bm25"][q][:10]
    ]
    ws.grades.labels.append_verdicts(zero)
    ws = Workspace.load(_settings(cran))
    every, llm = estimates(ws), estimates(ws, "llm")
    assert every.judges == ("zero",) and llm.judges == ("llm",)
    assert (
        every.retrievers["bm25"].metrics["ndcg"].model_filled
        < llm.retrievers["bm25"].metrics["ndcg"].model_filled
    )
    # llm is never wrong on the pairs it graded (every top 10): precision@3 reads nothing else, so
    # its estimate is the truth, with an interval of width 0.
    m = llm.retrievers["bm25"].metrics["precision"]
    assert m.ppi.estimate == pytest.approx(m.human, abs=1e-12) and m.ppi.width == 0.0
    assert m.differing == 0
    # nDCG's ideal holds relevant documents no retriever ranked: the judge never saw them, and
    # the qrels do not fill them in on its side, so it differs from the people there.
    assert llm.retrievers["bm25"].metrics["ndcg"].differing > 0


# ---- the command line and the docs ----------------------------------------------------------


def _args(folder: Path, *extra: str) -> list[str]:
    return ["--beir", str(folder), "--retrievers", "bm25", "--k", str(K), "--no-project", *extra]


def test_eval_estimate_text_json_and_report(cran, capsys):
    ws, _ = _journal(cran)
    est = estimates(ws)
    ndcg = est.retrievers["bm25"].metrics["ndcg"]
    assert main(["eval", *_args(cran, "--estimate")]) == 0
    text = capsys.readouterr().out
    low, high = ndcg.unjudged
    assert f"{ndcg.value:.3f} ({low:.3f}–{high:.3f} over unjudged)" in text
    assert f"{ndcg.ppi.estimate:.3f} ± {ndcg.ppi.half_width:.3f} (n=40 of 225)" in text
    assert "judge: every judge's latest verdict (llm)" in text
    assert main(["eval", "--json", *_args(cran, "--estimate", "--judge", "llm")]) == 0
    body = json.loads(capsys.readouterr().out)
    got = body["retrievers"]["bm25"]["estimate"]["ndcg"]
    assert got["ppi"]["estimate"] == ndcg.ppi.estimate and got["unjudged_low"] == low
    assert body["estimate"]["judge"] == "llm" and body["estimate"]["sample"]["drawn"] == 40
    assert main(["report", *_args(cran, "--estimate")]) == 0
    assert "How sure the numbers are" in capsys.readouterr().out


def test_the_estimate_keys_are_documented(cran, capsys):
    _journal(cran)
    assert main(["eval", "--json", *_args(cran, "--estimate")]) == 0
    full = json.loads(capsys.readouterr().out)
    (cran / "sample.json").unlink()
    assert main(["eval", "--json", *_args(cran, "--estimate")]) == 0
    bare = json.loads(capsys.readouterr().out)
    assert bare["estimate"]["coverage"] is None
    printed = {
        p
        for body in (full, bare)
        for p in key_paths(body)
        if p[0] == "estimate" or (len(p) > 2 and p[2] == "estimate")
    }
    assert ("retrievers", "bm25", "estimate", "ndcg", "ppi", "differing") in printed
    assert_documented(
        printed, documented("`ragtui eval --estimate --json`"), "eval --estimate --json"
    )


def test_bad_judge_options_are_one_line(cran, capsys):
    _journal(cran)
    assert main(["eval", *_args(cran, "--judge", "llm")]) == 2
    assert capsys.readouterr().err.strip() == (
        "ragtui: error: --judge llm: chooses the judge of --estimate; add --estimate"
    )
    assert main(["eval", *_args(cran, "--estimate", "--judge", "nobody")]) == 2
    assert capsys.readouterr().err.strip() == (
        "ragtui: error: --judge nobody: no verdict of a judge named nobody in the journal "
        "(judges with verdicts: llm)"
    )


def test_the_table_reads_the_same_in_the_cli_and_the_app(cran):
    ws, _ = _journal(cran)
    report = estimates_report(estimates(ws))
    assert report_plain(report).split() == render_report(report).split()


def test_the_example_in_judges_md_is_what_eval_prints(cran, capsys):
    _journal(cran)
    assert main(["eval", *_args(cran, "--estimate")]) == 0
    printed = capsys.readouterr().out.splitlines()
    printed = printed[printed.index("How sure the numbers are") :]
    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    section = text.split("## How sure the numbers are", 1)[1]
    block = section.split("```\n", 2)[1].splitlines()
    assert matches(block, printed), "\n".join(printed)


# ---- the app's metric panel -------------------------------------------------------------------


@run_async
async def test_the_apps_panel_shows_the_range_and_the_estimate(mini_settings, tmp_path):
    """Started with --estimate, the whole-set rows get a line: nDCG@3's range over unjudged pairs and
    the estimate (none here: the small corpus has 7 questions, the note says why); a grade moves it."""
    settings = dataclasses.replace(
        mini_settings, estimate=True, retrievers=("bm25",), cache_dir=tmp_path / "cache"
    )
    app = make_app(settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        screen = app.main_screen
        ws = app.controller.workspace
        before = estimate_line(estimates(ws), "bm25")
        assert "bm25   all" in screen.metrics.plain
        assert f"       est    {before}" in screen.metrics.plain
        assert "est: nDCG@3 over unjudged pairs · prediction-powered estimate, 95 %; none: " in (
            screen.metrics.plain.replace("\n", " ")
        )
        await pilot.press("tab", "down")  # bm25's second chunk of m01: unjudged
        await pilot.pause()
        assert screen.result_list("bm25").highlighted_chunk == "ferry.md#0"
        await pilot.press("2")
        await pilot.pause()
        after = estimate_line(estimates(ws), "bm25")
        assert after != before and f"       est    {after}" in screen.metrics.plain
    # Without --estimate the panel is as it was.
    app = make_app(dataclasses.replace(settings, estimate=False))
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        assert " est " not in app.main_screen.metrics.plain


def test_a_malformed_sample_file_is_a_reason_not_a_crash(cran, capsys):
    _journal(cran)
    (cran / "sample.json").write_text('{"seed": 0, "population": 225, "questions": ["1", "1"]}')
    assert main(["eval", *_args(cran, "--estimate")]) == 0
    text = capsys.readouterr().out
    assert "no prediction-powered estimate: " in text
    assert "sample.json: 'population_sha1' must be a string" in text


@run_async
async def test_the_app_survives_a_malformed_sample_file(mini_settings, tmp_path):
    (Path(mini_settings.golden) / "sample.json").write_text("{not json")
    settings = dataclasses.replace(
        mini_settings, estimate=True, retrievers=("bm25",), cache_dir=tmp_path / "cache"
    )
    app = make_app(settings)
    async with app.run_test(size=WIDE) as pilot:
        await wait_ready(pilot)
        plain = app.main_screen.metrics.plain.replace("\n", " ")
        assert "sample.json: malformed JSON" in plain


def test_a_judge_sharing_a_retrievers_model_is_marked(mini_settings):
    ws = Workspace.load(dataclasses.replace(mini_settings, retrievers=("bm25", "vector", "hybrid")))
    ws.prepare_vectors(embedder=FakeEmbedder())
    chunk = ws.data.chunks[0]
    qid = ws.questions[0].id
    ws.grades.labels.append_verdicts(
        [_verdict(qid, chunk.id, 1, chunk.sha1, "sim", resolve_model(None))]
    )
    est = estimates(ws)
    assert est.shares == ("vector", "hybrid")
    assert [r.shares_model for r in est.retrievers.values()] == [False, True, True]
    text = render_report(estimates_report(est))
    assert "vector ‡" in text and "hybrid ‡" in text and "bm25 ‡" not in text
    assert "‡ the judge shares its model" in text


def test_under_human_and_model_grades_the_value_is_the_model_filled_one(cran):
    _journal(cran)
    ws = Workspace.load(_settings(cran, counted_grades=GRADES_HUMAN_MODEL))
    est = estimates(ws)
    for metric, m in est.retrievers["bm25"].metrics.items():
        assert m.value == pytest.approx(m.model_filled, abs=1e-12), metric
        assert m.value != m.human  # the people's value leaves the verdicts out
        # No pair of a run is unjudged (the judge graded every top 10): the range is the value.
        assert m.unjudged == (pytest.approx(m.value, abs=1e-12),) * 2


def test_estimates_and_interval_ends_stay_inside_the_measures_range():
    # People say 0 on the sample; the model says 0.4 there and 0 elsewhere: unbounded, the
    # estimate is (0 + 0) / 10 - (6/10) * 0.1 < 0 and the interval reaches below 0.
    got = ppi_mean([0, 0, 0, 0], [0.4, 0.0, 0.0, 0.0], [0.0] * 6)
    assert got.estimate == 0.0 and got.low == 0.0 and 0.0 < got.high <= 1.0
    assert got.note is not None and "brought inside the measure's range 0-1" in got.note
    assert "-0.060" in got.note  # the unbounded estimate, named
    # The same at the top: MRR-like values at 1 with a model too low on the sample.
    top = ppi_mean([1, 1, 1, 1], [0.6, 1.0, 1.0, 1.0], [1.0] * 6)
    assert top.estimate == 1.0 and top.high == 1.0 and top.low < 1.0
    people = mean_interval([1.0, 1.0, 1.0, 0.9], 10)
    assert people.high <= 1.0 and people.low >= 0.0
    # Inside the range nothing is said.
    assert ppi_mean([1.0, 0.0, 1.0, 0.5], [1.0, 0.5, 0.5, 0.5], [0.2, 0.4]).note is None


def test_an_interval_without_width_says_why():
    # People and the judge differ by the same 0.2 on every sampled question: zero variance.
    got = ppi_mean([0.2, 0.4, 0.6, 0.3], [0.4, 0.6, 0.8, 0.5], [0.5] * 6)
    assert got.width == 0.0
    assert (
        got.note is not None and "differ by the same amount on every sampled question" in got.note
    )
    same = mean_interval([0.5] * 5, 9)
    assert same.width == 0.0 and same.note is not None and "the same value" in same.note
    exact = ppi_mean([1, 0, 1, 0], [1, 1, 1, 1], [])
    assert exact.note is not None and "every question is in the sample" in exact.note


# ---- the stratified design: drawn by `ragtui sample`, estimated by strata --------------------


def test_a_stratified_sample_is_drawn_by_confidence_and_estimated_by_strata(cran, capsys):
    from ragtui.core.judges.estimate import Stratum, stratified_mean
    from ragtui.core.judges.sample import load_sample

    ws = Workspace.load(_settings(cran))
    sha = {c.id: c.sha1 for c in ws.data.chunks}
    population = sample_population(ws.questions)
    rng = random.Random(11)
    # The judge is unsure of (and often wrong on) every fourth question, sure elsewhere.
    hard = set(population[::4])
    verdicts = []
    for qid in population:
        rate = 0.5 if qid in hard else 0.05
        for cid, _ in ws.ranked.rankings["bm25"][qid][:K]:
            truth = ws.data.qrels[qid].get(cid, 0)
            grade = _noisy(truth, rng, rate)
            probabilities = tuple((g, 1 - rate if g == grade else rate / 4) for g in range(5))
            label = _verdict(qid, cid, grade, sha[cid])
            verdicts.append(dataclasses.replace(label, probabilities=probabilities))
    LabelJournal(cran / "labels.jsonl", "tester").append_verdicts(verdicts)

    argv = ["sample", *_args(cran, "--design", "strata", "--size", "30", "--json")]
    assert main(argv) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["design"] == "strata" and shown["by"] == "confidence"
    strata = {s["label"]: s for s in shown["strata"]}
    assert list(strata) == ["judge sure", "judge fairly sure", "judge unsure"]
    assert sum(s["size"] for s in strata.values()) == len(population)
    assert sum(s["drawn"] for s in strata.values()) == 30 == len(shown["questions"])
    # More questions where the judge is least sure.
    assert strata["judge unsure"]["drawn"] > strata["judge sure"]["drawn"] >= 2
    sample = load_sample(cran)
    assert sample is not None and sample.design == "strata"
    assert hard <= set(sample.strata[2].questions)  # the 57 hard questions, in the 75 unsure
    # A second run keeps the recorded sample.
    assert main(["sample", *_args(cran, "--json")]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == shown["questions"]

    # People judge every drawn question (the qrels' grades).
    lines = [
        _person(qid, cid, ws.data.qrels[qid].get(cid, 0), sha[cid])
        for qid in sample.questions
        for cid, _ in ws.ranked.rankings["bm25"][qid][:K]
    ]
    with (cran / "labels.jsonl").open("ab") as out:
        out.write(b"".join(line + b"\n" for line in lines))
    ws = Workspace.load(_settings(cran))
    est = estimates(ws)
    assert est.sample.sample is not None and est.sample.sample.design == "strata"
    assert set(est.sample.used) == set(sample.questions)
    ranked = {q: [c for c, _ in ws.ranked.rankings["bm25"][q]] for q in population}
    judge = {
        q: {c: lab.grade for c, pair in by.items() for lab in pair.verdicts().values()}
        for q, by in ws.grades.labels.pairs.items()
    }
    drawn = set(sample.questions)
    for metric, field in (("recall", "recall"), ("precision", "precision"), ("ndcg", "ndcg")):
        y = {q: _value(field, ranked[q], ws.data.qrels[q], K, 1) for q in population}
        f = {q: _value(field, ranked[q], judge.get(q, {}), K, 1) for q in population}
        parts = [
            (
                [q for q in t.questions if q in drawn],
                [q for q in t.questions if q not in drawn],
                t.doubt,
            )
            for t in sample.strata
        ]
        expected = stratified_mean(
            [
                Stratum(
                    np.array([y[q] for q in a]),
                    np.array([f[q] for q in a]),
                    np.array([f[q] for q in b]),
                    d,
                )
                for a, b, d in parts
            ]
        )
        people = stratified_mean(
            [
                Stratum(np.array([y[q] for q in a]), np.zeros(len(a)), np.zeros(len(b)), d)
                for a, b, d in parts
            ]
        )
        m = est.retrievers["bm25"].metrics[metric]
        assert m.ppi is not None and m.human_only is not None
        assert (m.ppi.estimate, m.ppi.low, m.ppi.high) == pytest.approx(
            (expected.estimate, expected.low, expected.high), abs=1e-12
        )
        assert m.human_only.estimate == pytest.approx(people.estimate, abs=1e-12)
        # The people's stratified mean weighs each stratum by its size, not by its draw.
        weighted = sum(
            len(t.questions) / len(population) * np.mean([y[q] for q in a])
            for t, (a, _, _) in zip(sample.strata, parts, strict=True)
        )
        assert people.estimate == pytest.approx(weighted, abs=1e-12)

    assert main(["eval", "--json", *_args(cran, "--estimate")]) == 0
    got = json.loads(capsys.readouterr().out)["estimate"]["sample"]
    assert got["design"] == "strata" and got["by"] == "confidence"
    assert [s["judged_fully"] for s in got["strata"]] == [t.drawn for t in sample.strata]
    assert main(["eval", *_args(cran, "--estimate")]) == 0
    assert "strata by confidence (3: " in capsys.readouterr().out


def test_a_stratified_sample_needs_grade_probabilities_or_slices(cran, capsys):
    _journal(cran, sample=False)  # verdicts without probabilities; no slices in Cranfield
    assert main(["sample", *_args(cran, "--design", "strata")]) == 2
    err = capsys.readouterr().err
    assert "confidence strata need the judge's grade probabilities" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["sample", *_args(cran, "--design", "strata", "--by", "slice")]) == 2
    assert "strata by slice need two slices" in capsys.readouterr().err
    assert not (cran / "sample.json").exists()
