"""Tests for ragtui.core.metrics.formulas (and the TREC file readers in ragtui.core.data.trec).

Three kinds of evidence: hand-computed values, pytrec_eval (trec_eval bound to Python) on random
graded cases, and trec_eval's own test vectors (qrels/results/out files from its test/ folder).
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtui.core.data.trec import (
    parse_trec_qrels,
    parse_trec_run,
    rank_by_score,
    read_trec_qrels,
    read_trec_run,
)
from ragtui.core.metrics.formulas import (
    QuestionMetrics,
    average_precision,
    dcg_at_k,
    first_relevant_rank,
    judged_at_k,
    ndcg_at_k,
    precision_at_k,
    precision_ceiling_at_k,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
    relevant_ids,
    success_at_k,
)
from tests.conftest import TREC_EVAL

CUTOFFS = (1, 3, 5, 10)
TOL = 1e-9


# --------------------------------------------------------------------------------------------
# 1. Hand-computed values
# --------------------------------------------------------------------------------------------


def test_seed_case_one_relevant_at_rank_2_of_3() -> None:
    ranked = ["c1", "c2", "c3"]
    relevant = {"c2"}
    assert recall_at_k(ranked, relevant, 3) == 1.0
    assert precision_at_k(ranked, relevant, 3) == pytest.approx(1 / 3)
    assert precision_at_k(ranked, relevant, 3) == pytest.approx(0.3333, abs=5e-5)
    assert reciprocal_rank(ranked, relevant) == 0.5
    assert first_relevant_rank(ranked, relevant) == 2
    assert average_precision(ranked, relevant) == 0.5
    assert success_at_k(ranked, relevant, 1) == 0.0
    assert success_at_k(ranked, relevant, 2) == 1.0
    assert recall_at_k(ranked, relevant, 1) == 0.0


def test_graded_ndcg_hand_computed() -> None:
    gains = {"a": 3, "b": 2, "c": 0, "d": 1, "e": -1}
    ranked = ["c", "a", "d", "x", "b"]  # "x" is unjudged: gain 0
    # DCG@3   = 0/log2(2) + 3/log2(3) + 1/log2(4)         = 0 + 1.892789 + 0.5     = 2.392789
    # IDCG@3  = 3/log2(2) + 2/log2(3) + 1/log2(4)         = 3 + 1.261860 + 0.5     = 4.761860
    #           (ideal = all judged grades 3, 2, 1, 0, -1 sorted, cut at 3; -1 and 0 give 0)
    # nDCG@3  = 2.392789 / 4.761860                                                = 0.502490
    assert dcg_at_k(ranked, gains, 3) == pytest.approx(2.392789, abs=1e-6)
    assert ndcg_at_k(ranked, gains, 3) == pytest.approx(0.502490, abs=1e-6)
    # DCG@5   = 2.392789 + 0/log2(5) + 2/log2(6)          = 2.392789 + 0.773706    = 3.166495
    # IDCG@5  = 4.761860 (only three positive grades)
    # nDCG@5  = 3.166495 / 4.761860                                                = 0.664970
    assert ndcg_at_k(ranked, gains, 5) == pytest.approx(0.664970, abs=1e-6)
    # Linear is the default (trec_eval's gain), not 2^g - 1.
    assert ndcg_at_k(ranked, gains, 3) == ndcg_at_k(ranked, gains, 3, gain="linear")


def test_exponential_ndcg_hand_computed() -> None:
    gains = {"a": 3, "b": 2, "c": 0, "d": 1, "e": -1}
    ranked = ["c", "a", "d", "x", "b"]
    # gains 2^g - 1: a -> 7, b -> 3, d -> 1, c -> 0, e (grade -1) -> 0
    # DCG@3   = 0 + 7/log2(3) + 1/log2(4)                 = 4.416508 + 0.5         = 4.916508
    # IDCG@3  = 7/log2(2) + 3/log2(3) + 1/log2(4)         = 7 + 1.892789 + 0.5     = 9.392789
    # nDCG@3  = 4.916508 / 9.392789                                                = 0.523434
    assert dcg_at_k(ranked, gains, 3, gain="exponential") == pytest.approx(4.916508, abs=1e-6)
    assert ndcg_at_k(ranked, gains, 3, gain="exponential") == pytest.approx(0.523434, abs=1e-6)
    qm = question_metrics(ranked, gains, 3, gain="exponential")
    assert qm.ndcg == pytest.approx(0.523434, abs=1e-6)
    with pytest.raises(ValueError):
        ndcg_at_k(ranked, gains, 3, gain="quadratic")  # type: ignore[arg-type]


def test_precision_divides_by_k_when_fewer_results() -> None:
    ranked = ["r1", "n1"]
    relevant = {"r1", "r2"}
    assert precision_at_k(ranked, relevant, 5) == pytest.approx(1 / 5)
    assert precision_at_k(ranked, relevant, 10) == pytest.approx(1 / 10)
    assert recall_at_k(ranked, relevant, 5) == 0.5
    assert average_precision(ranked, relevant) == 0.5  # (1/1) / 2


def test_ndcg_zero_when_ideal_is_zero() -> None:
    ranked = ["a", "b", "c"]
    assert ndcg_at_k(ranked, {"a": 0, "b": -1, "c": 0}, 3) == 0.0
    assert ndcg_at_k(ranked, {}, 3) == 0.0
    assert dcg_at_k(ranked, {"a": 0, "b": -1}, 3) == 0.0
    assert question_metrics(ranked, {"a": 0}, 3).ndcg == 0.0


def test_ndcg_ideal_uses_all_grades_whatever_the_threshold() -> None:
    gains = {"a": 1, "b": 2}
    # Nothing at or above threshold 3 is relevant, but nDCG still uses grades 2 and 1.
    assert relevant_ids(gains, 3) == frozenset()
    qm = question_metrics(["b", "a"], gains, 2, threshold=3)
    assert qm.ndcg == pytest.approx(1.0)
    assert qm.num_relevant == 0
    assert (qm.recall, qm.precision, qm.rr, qm.precision_ceiling) == (0.0, 0.0, 0.0, 0.0)
    # The ideal holds grades of ids that were never retrieved: 1/log2(2) vs 2/1 + 1/log2(3).
    assert ndcg_at_k(["a"], gains, 2) == pytest.approx(1 / (2 + 1 / math.log2(3)))


def test_precision_ceiling() -> None:
    assert precision_ceiling_at_k(1, 3) == pytest.approx(1 / 3)
    assert precision_ceiling_at_k(5, 3) == 1.0
    assert precision_ceiling_at_k(0, 3) == 0.0
    assert precision_ceiling_at_k(3, 3) == 1.0
    with pytest.raises(ValueError):
        precision_ceiling_at_k(-1, 3)
    with pytest.raises(ValueError):
        precision_ceiling_at_k(1, 0)


def test_relevant_ids_threshold() -> None:
    gains = {"a": 4, "b": 2, "c": 1, "d": 0, "e": -1}
    assert relevant_ids(gains) == frozenset({"a", "b", "c"})
    assert relevant_ids(gains, threshold=2) == frozenset({"a", "b"})
    assert relevant_ids(gains, threshold=0) == frozenset({"a", "b", "c", "d"})
    assert isinstance(relevant_ids(gains), frozenset)


def test_no_relevant_gives_zero_not_division_error() -> None:
    ranked = ["a", "b"]
    assert recall_at_k(ranked, set(), 3) == 0.0
    assert precision_at_k(ranked, [], 3) == 0.0
    assert reciprocal_rank(ranked, frozenset()) == 0.0
    assert average_precision(ranked, ()) == 0.0
    assert success_at_k(ranked, set(), 3) == 0.0
    assert first_relevant_rank(ranked, set()) is None


def test_empty_run_gives_zero() -> None:
    gains = {"a": 2, "b": 1}
    rel = relevant_ids(gains)
    for k in CUTOFFS:
        assert recall_at_k([], rel, k) == 0.0
        assert precision_at_k([], rel, k) == 0.0
        assert success_at_k([], rel, k) == 0.0
        assert ndcg_at_k([], gains, k) == 0.0
        assert dcg_at_k([], gains, k) == 0.0
        assert judged_at_k([], gains.keys(), k) == 0.0
        assert question_metrics([], gains, k) == QuestionMetrics(
            first_relevant_rank=None,
            recall=0.0,
            precision=0.0,
            precision_ceiling=min(k, 2) / k,
            rr=0.0,
            ndcg=0.0,
            num_relevant=2,
        )
    assert reciprocal_rank([], rel) == 0.0
    assert average_precision([], rel) == 0.0
    assert first_relevant_rank([], rel) is None


def test_rr_looks_past_k() -> None:
    ranked = [f"n{i}" for i in range(20)] + ["r"]
    assert reciprocal_rank(ranked, {"r"}) == pytest.approx(1 / 21)
    qm = question_metrics(ranked, {"r": 1}, 5)
    assert qm.first_relevant_rank == 21
    assert qm.rr == pytest.approx(1 / 21)
    assert qm.recall == 0.0


def test_duplicates_count_first_occurrence_only() -> None:
    gains = {"a": 0, "b": 2, "c": 1}
    rel = relevant_ids(gains)
    ranked = ["a", "a", "b", "a", "b", "c"]  # de-duplicated: a, b, c
    assert first_relevant_rank(ranked, rel) == 2
    assert reciprocal_rank(ranked, rel) == 0.5
    assert precision_at_k(ranked, rel, 2) == 0.5
    assert recall_at_k(ranked, rel, 3) == 1.0
    assert precision_at_k(ranked, rel, 3) == pytest.approx(2 / 3)
    assert average_precision(ranked, rel) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert ndcg_at_k(ranked, gains, 3) == pytest.approx(ndcg_at_k(["a", "b", "c"], gains, 3))
    assert judged_at_k(["a", "a", "z"], {"a"}, 3) == 0.5
    assert question_metrics(ranked, gains, 3) == question_metrics(["a", "b", "c"], gains, 3)


def test_relevant_may_be_any_collection() -> None:
    ranked = ["a", "b", "c", "d"]
    graded = {"b": 1, "d": 1}
    collections = ({"b", "d"}, frozenset({"b", "d"}), ["b", "d"], ("d", "b"), graded.keys())
    for relevant in collections:
        assert recall_at_k(ranked, relevant, 2) == 0.5
        assert precision_at_k(ranked, relevant, 4) == 0.5
        assert reciprocal_rank(ranked, relevant) == 0.5
        assert average_precision(ranked, relevant) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert recall_at_k(ranked, (doc for doc in "bd"), 2) == 0.5


@pytest.mark.parametrize("bad_k", [0, -1, 1.5, True, "3", None])
def test_k_must_be_a_positive_int(bad_k: object) -> None:
    calls = [
        lambda: recall_at_k(["a"], {"a"}, bad_k),
        lambda: precision_at_k(["a"], {"a"}, bad_k),
        lambda: success_at_k(["a"], {"a"}, bad_k),
        lambda: judged_at_k(["a"], {"a"}, bad_k),
        lambda: dcg_at_k(["a"], {"a": 1}, bad_k),
        lambda: ndcg_at_k(["a"], {"a": 1}, bad_k),
        lambda: precision_ceiling_at_k(1, bad_k),
        lambda: question_metrics(["a"], {"a": 1}, bad_k),
    ]
    for call in calls:
        with pytest.raises(ValueError):
            call()
    # k = 1 is accepted.
    assert precision_at_k(["a"], {"a"}, 1) == 1.0


def test_judged_at_k_matches_ir_measures() -> None:
    # ir_measures' own Judged test case, query "1": qrels D0, D3, D5; run D1, D3, D4, D2.
    judged = {"D0", "D3", "D5"}
    ranked = ["D1", "D3", "D4", "D2"]
    assert judged_at_k(ranked, judged, 1000) == 0.25
    assert judged_at_k(ranked, judged, 1) == 0.0
    assert judged_at_k(ranked, judged, 2) == 0.5
    # Divides by min(k, len(run)), not by k.
    assert judged_at_k(["D3"], judged, 10) == 1.0
    assert judged_at_k(["D3", "D9"], judged, 10) == 0.5


def test_success_at_k() -> None:
    ranked = ["n1", "n2", "r"]
    assert [success_at_k(ranked, {"r"}, k) for k in (1, 2, 3, 10)] == [0.0, 0.0, 1.0, 1.0]


def test_question_metrics_fields() -> None:
    qm = question_metrics(["c1", "c2", "c3"], {"c2": 1, "c9": 2, "c3": 0}, 3)
    assert qm.first_relevant_rank == 2
    assert qm.num_relevant == 2
    assert qm.recall == 0.5
    assert qm.precision == pytest.approx(1 / 3)
    assert qm.precision_ceiling == pytest.approx(2 / 3)
    assert qm.rr == 0.5
    # DCG = 1/log2(3); IDCG = 2/log2(2) + 1/log2(3)
    assert qm.ndcg == pytest.approx((1 / math.log2(3)) / (2 + 1 / math.log2(3)))
    with pytest.raises(AttributeError):
        qm.recall = 1.0  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# 2. Against pytrec_eval on random graded cases
# --------------------------------------------------------------------------------------------

PYTREC_MEASURES = {"recall.1,3,5,10", "P.1,3,5,10", "recip_rank", "ndcg_cut.1,3,5,10", "map"}


def _ours(ranked: list[str], gains: dict[str, int], threshold: int) -> dict[str, float]:
    """Our values under pytrec_eval's measure names."""
    rel = relevant_ids(gains, threshold)
    out = {"recip_rank": reciprocal_rank(ranked, rel), "map": average_precision(ranked, rel)}
    for k in CUTOFFS:
        out[f"recall_{k}"] = recall_at_k(ranked, rel, k)
        out[f"P_{k}"] = precision_at_k(ranked, rel, k)
        out[f"ndcg_cut_{k}"] = ndcg_at_k(ranked, gains, k)
    return out


def _assert_question_metrics_consistent(
    ranked: list[str], gains: dict[str, int], k: int, threshold: int
) -> None:
    rel = relevant_ids(gains, threshold)
    qm = question_metrics(ranked, gains, k, threshold)
    assert qm.num_relevant == len(rel)
    assert qm.first_relevant_rank == first_relevant_rank(ranked, rel)
    assert qm.recall == pytest.approx(recall_at_k(ranked, rel, k), abs=TOL)
    assert qm.precision == pytest.approx(precision_at_k(ranked, rel, k), abs=TOL)
    assert qm.precision_ceiling == pytest.approx(precision_ceiling_at_k(len(rel), k), abs=TOL)
    assert qm.rr == pytest.approx(reciprocal_rank(ranked, rel), abs=TOL)
    assert qm.ndcg == pytest.approx(ndcg_at_k(ranked, gains, k), abs=TOL)


def _random_case(rng: random.Random) -> tuple[dict[str, int], list[str]]:
    """A question with 1..15 judged docs graded -1..4 and a run of 0..15 judged/unjudged ids."""
    n_judged = rng.randint(1, 15)
    gains = {f"j{i:02d}": rng.randint(-1, 4) for i in range(n_judged)}
    pool = list(gains) + [f"u{i:02d}" for i in range(rng.randint(0, 10))]
    ranked = rng.sample(pool, rng.randint(0, min(15, len(pool))))
    return gains, ranked


def _to_pytrec_run(ranked: list[str]) -> dict[str, float]:
    # Strictly decreasing scores in our order, so pytrec_eval's tie-break never applies.
    return {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}


def _compare_with_pytrec(cases: dict[str, tuple[dict[str, int], list[str]]], threshold: int) -> int:
    """Assert our values equal pytrec_eval's for every case with a relevant doc and a non-empty
    run; return how many queries were compared."""
    qrels = {qid: gains for qid, (gains, _) in cases.items()}
    run = {qid: _to_pytrec_run(ranked) for qid, (_, ranked) in cases.items() if ranked}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=threshold)
    reference = evaluator.evaluate(run)
    compared = 0
    for qid, (gains, ranked) in cases.items():
        if not relevant_ids(gains, threshold):
            continue  # trec_eval's handling of queries without relevant docs differs; skipped
        if not ranked:
            assert qid not in reference
            continue  # checked to give 0 in test_random_empty_runs_give_zero
        ours = _ours(ranked, gains, threshold)
        expected = reference[qid]
        for measure, value in ours.items():
            assert value == pytest.approx(expected[measure], abs=TOL), (
                qid,
                measure,
                threshold,
                gains,
                ranked,
            )
        compared += 1
    return compared


def _random_cases(seed: int, n: int) -> dict[str, tuple[dict[str, int], list[str]]]:
    rng = random.Random(seed)
    return {f"q{i:04d}": _random_case(rng) for i in range(n)}


@pytest.mark.parametrize("threshold", [1, 2])
def test_random_cases_match_pytrec_eval(threshold: int) -> None:
    cases = _random_cases(seed=20240611, n=1500)
    compared = _compare_with_pytrec(cases, threshold)
    # Guard against a generator that silently stops producing comparable cases.
    assert compared >= 1000, compared


def test_random_cases_question_metrics_consistent() -> None:
    cases = _random_cases(seed=7, n=400)
    for gains, ranked in cases.values():
        for threshold in (1, 2):
            for k in CUTOFFS:
                _assert_question_metrics_consistent(ranked, gains, k, threshold)


def test_random_empty_runs_give_zero() -> None:
    cases = _random_cases(seed=20240611, n=1500)
    empties = [gains for gains, ranked in cases.values() if not ranked]
    assert empties, "the generator must produce empty runs"
    for gains in empties:
        for threshold in (1, 2):
            assert all(v == 0.0 for v in _ours([], gains, threshold).values())


_ids = st.sampled_from([f"d{i}" for i in range(12)])


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    gains=st.dictionaries(_ids, st.integers(min_value=-1, max_value=4), min_size=1, max_size=12),
    ranked=st.lists(_ids, max_size=12, unique=True),
    threshold=st.sampled_from([1, 2]),
)
def test_property_matches_pytrec_eval(
    gains: dict[str, int], ranked: list[str], threshold: int
) -> None:
    rel = relevant_ids(gains, threshold)
    ours = _ours(ranked, gains, threshold)
    for value in ours.values():
        assert 0.0 <= value <= 1.0 + TOL
    for k in CUTOFFS:
        assert ours[f"P_{k}"] <= precision_ceiling_at_k(len(rel), k) + TOL
        _assert_question_metrics_consistent(ranked, gains, k, threshold)
    if not ranked:
        assert all(v == 0.0 for v in ours.values())
        return
    if not rel:
        return  # trec_eval differs on queries without relevant docs
    reference = pytrec_eval.RelevanceEvaluator(
        {"q": gains}, PYTREC_MEASURES, relevance_level=threshold
    ).evaluate({"q": _to_pytrec_run(ranked)})["q"]
    for measure, value in ours.items():
        assert value == pytest.approx(reference[measure], abs=TOL), measure


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    gains=st.dictionaries(_ids, st.integers(min_value=-1, max_value=4), max_size=12),
    ranked=st.lists(_ids, max_size=20),
    k=st.sampled_from(CUTOFFS),
)
def test_property_invariants(gains: dict[str, int], ranked: list[str], k: int) -> None:
    rel = relevant_ids(gains)
    deduped = list(dict.fromkeys(ranked))
    # Duplicates: only the first occurrence counts.
    assert _ours(ranked, gains, 1) == _ours(deduped, gains, 1)
    assert question_metrics(ranked, gains, k) == question_metrics(deduped, gains, k)
    # Recall and nDCG-numerator never drop as k grows; success is recall > 0.
    assert recall_at_k(ranked, rel, k) <= recall_at_k(ranked, rel, k + 1)
    assert dcg_at_k(ranked, gains, k) <= dcg_at_k(ranked, gains, k + 1)
    assert success_at_k(ranked, rel, k) == (1.0 if recall_at_k(ranked, rel, k) > 0 else 0.0)
    # The ideal ordering of the judged ids scores nDCG 1 whenever there is a positive grade.
    ideal = sorted(gains, key=lambda d: gains[d], reverse=True)
    expected = 1.0 if any(g > 0 for g in gains.values()) else 0.0
    assert ndcg_at_k(ideal, gains, k) == pytest.approx(expected)
    assert ndcg_at_k(ideal, gains, k, gain="exponential") == pytest.approx(expected)
    # Judged@k is a share of the (de-duplicated) top k.
    share = judged_at_k(ranked, gains.keys(), k)
    assert 0.0 <= share <= 1.0
    if deduped and all(doc in gains for doc in deduped[:k]):
        assert share == 1.0


# --------------------------------------------------------------------------------------------
# 3. Against trec_eval's own test vectors
# --------------------------------------------------------------------------------------------

_CUT_MEASURE = re.compile(r"^(P|recall|ndcg_cut|success|unj)_(\d+)$")
# Measures that must be in the out files, so that the comparison cannot pass by comparing nothing.
_REQUIRED = {
    "P_5",
    "P_10",
    "P_30",
    "recall_5",
    "recall_10",
    "recip_rank",
    "ndcg_cut_5",
    "ndcg_cut_10",
    "map",
}


def _read_out(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval -q output as measure -> {qid or 'all': value text}."""
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            measure, qid, value = line.split()
            table.setdefault(measure, {})[qid] = value
    return table


def _value(measure: str, ranked: list[str], gains: dict[str, int], threshold: int) -> float | None:
    """Our value for a trec_eval measure name, or None if we do not implement that measure."""
    rel = relevant_ids(gains, threshold)
    if measure == "recip_rank":
        return reciprocal_rank(ranked, rel)
    if measure == "map":
        return average_precision(ranked, rel)
    if measure == "num_rel":
        return float(len(rel))
    if measure == "num_ret":
        return float(len(ranked))
    match = _CUT_MEASURE.match(measure)
    if match is None:
        return None
    name, k = match.group(1), int(match.group(2))
    if name == "P":
        return precision_at_k(ranked, rel, k)
    if name == "recall":
        return recall_at_k(ranked, rel, k)
    if name == "ndcg_cut":
        return ndcg_at_k(ranked, gains, k)
    if name == "success":
        return success_at_k(ranked, rel, k)
    # unj_k (share of unjudged docs in the top k, over k): equals 1 - Judged@k when the run has
    # at least k docs, as all runs in results.test do (500 docs each).
    assert len(ranked) >= k
    return 1.0 - judged_at_k(ranked, gains.keys(), k)


@pytest.mark.parametrize(
    ("qrels_name", "out_name", "threshold"),
    [("qrels.test", "out.test.aq", 1), ("qrels.rel_level", "out.test.aql", 2)],
)
def test_trec_eval_test_vectors(qrels_name: str, out_name: str, threshold: int) -> None:
    run = read_trec_run(TREC_EVAL / "results.test")
    qrels = read_trec_qrels(TREC_EVAL / qrels_name)
    table = _read_out(TREC_EVAL / out_name)
    assert table.keys() >= _REQUIRED, _REQUIRED - table.keys()
    assert set(run) == {"301", "302", "303"}

    checked: set[str] = set()
    for measure, by_qid in table.items():
        if measure.startswith("unj_") and threshold != 1:
            continue  # unj is checked on the binary file only (qrels.rel_level has -1 grades)
        per_query: list[float] = []
        for qid in sorted(run):
            ours = _value(measure, run[qid], qrels[qid], threshold)
            if ours is None:
                break
            expected = float(by_qid[qid])
            assert abs(ours - expected) <= 5e-5 + 1e-12, (measure, qid, ours, expected)
            per_query.append(ours)
        else:
            # 'all' is the mean over the queries in the run (for counts: the sum).
            summary = sum(per_query) if measure.startswith("num_") else sum(per_query) / len(run)
            expected_all = float(by_qid["all"])
            assert abs(summary - expected_all) <= 5e-5 + 1e-12, (measure, summary, expected_all)
            checked.add(measure)
    assert checked >= _REQUIRED
    assert {m for m in checked if m.startswith("ndcg_cut_")} >= {"ndcg_cut_5", "ndcg_cut_10"}


def test_trec_run_ranked_by_score_not_rank_column() -> None:
    # results.test's rank column disagrees with its scores; trec_eval ranks by score.
    lines = (TREC_EVAL / "results.test").read_text(encoding="utf-8").splitlines()
    first_301 = [line.split() for line in lines if line.split()[0] == "301"]
    best = max(first_301, key=lambda f: (float(f[4]), f[2]))
    assert read_trec_run(TREC_EVAL / "results.test")["301"][0] == best[2]


# --------------------------------------------------------------------------------------------
# ragtui.core.data.trec readers
# --------------------------------------------------------------------------------------------


def test_rank_by_score_breaks_ties_by_docid_descending() -> None:
    assert rank_by_score({"a": 1.0, "c": 1.0, "b": 2.0, "d": 0.5}) == ["b", "c", "a", "d"]


def test_parse_trec_run_and_qrels() -> None:
    run = parse_trec_run(
        [
            "# a comment",
            "q1 Q0 a 1 1.0 tag",
            "",
            "q1 Q0 c 2 1.0 tag",
            "q1 Q0 b 3 2.5 tag",
            "q2\tQ0\tz\t1\t-3e-1\ttag",
        ]
    )
    assert run == {"q1": ["b", "c", "a"], "q2": ["z"]}
    qrels = parse_trec_qrels(["q1 0 a 2", "q1 0 b -1", "", "q2 0 z 0"])
    assert qrels == {"q1": {"a": 2, "b": -1}, "q2": {"z": 0}}


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["q1 Q0 a 1 1.0 tag", "q1 Q0 b 2 1.0"], "line 2: expected 6 columns"),
        (["q1 Q0 a 1 high tag"], "line 1: score 'high' is not a number"),
        (["q1 Q0 a 1 nan tag"], "line 1: score 'nan' is not a finite number"),
        (["q1 Q0 a first 1.0 tag"], "line 1: rank 'first' is not an integer"),
        (["q1 Q0 a 1 1.0 tag", "", "q1 Q0 a 2 0.5 tag"], "line 3: docid 'a' appears twice"),
    ],
)
def test_parse_trec_run_errors(lines: list[str], problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse_trec_run(lines, source="run.txt")


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["q1 0 a 1", "q1 0 b"], "line 2: expected 4 columns"),
        (["q1 0 a 1.5"], "line 1: grade '1.5' is not an integer"),
        (["q1 0 a 1", "q1 0 a 2"], "line 2: docid 'a' is judged twice"),
        (["q1 0 a 99999999999999999999"], "line 1: grade '99999999999999999999' is out of range"),
        (["q1 0 a 1" + "0" * 5000], "line 1: grade '100000000000000000000...' is out of range"),
    ],
)
def test_parse_trec_qrels_errors(lines: list[str], problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse_trec_qrels(lines, source="qrels.txt")


def test_read_trec_files(tmp_path: Path) -> None:
    run_file = tmp_path / "run.txt"
    run_file.write_text("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.9 t\n", encoding="utf-8")
    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("q1 0 b 3\nbroken line\n", encoding="utf-8")
    assert read_trec_run(run_file) == {"q1": ["b", "a"]}
    with pytest.raises(ValueError, match=r"qrels\.txt: line 2: expected 4 columns"):
        read_trec_qrels(qrels_file)
