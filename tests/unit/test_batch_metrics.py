"""The vectorized per-question figures equal ``formulas.question_metrics`` (the trec_eval-verified code).

``batch_metrics`` computes every question at once with numpy; ``Evaluation`` uses it and computes
single questions (a regraded one, an assigned ranking, an id ranked twice) with
``question_metrics``. Both must give the same numbers as ``question_metrics`` and ``judged_at_k``
on any ranking and any grades: random rankings, graded qrels with zeros and negative grades,
relevant chunks never retrieved, questions with no judgement or none relevant, empty runs,
k above the depth, and thresholds from 0 to 3.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from ragtui.core.metrics.batch import batch_metrics, duplicate_rows
from ragtui.core.metrics.evaluation import MEAN_FIELDS, Evaluation
from ragtui.core.metrics.formulas import judged_at_k, question_metrics
from ragtui.core.metrics.tables import GradeArrays, GradeRows, RankingTable

TOLERANCE = 1e-12


def _case(rng: random.Random, n_chunks: int, depth: int) -> tuple[list[int], dict[int, int]]:
    """One question: a ranking of distinct chunk codes and its graded judgements."""
    length = rng.choice([0, depth, rng.randint(0, depth)])
    ranked = rng.sample(range(n_chunks), min(length, n_chunks))
    grades: dict[int, int] = {}
    kind = rng.random()
    if kind < 0.1:
        return ranked, grades  # no judgement at all
    pool = list(range(n_chunks))
    for code in rng.sample(pool, rng.randint(1, min(8, n_chunks))):
        grades[code] = rng.choice([-1, 0, 0, 1, 2, 3, 2])
    if kind < 0.2:
        grades = dict.fromkeys(grades, 0)  # judged, nothing relevant
    return ranked, grades


def _matrix(rankings: list[list[int]], depth: int) -> np.ndarray:
    out = np.full((len(rankings), depth), -1, dtype=np.int64)
    for i, r in enumerate(rankings):
        out[i, : len(r)] = r
    return out


def _csr(grades: list[dict[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    offsets = np.zeros(len(grades) + 1, dtype=np.int64)
    codes: list[int] = []
    values: list[int] = []
    for i, g in enumerate(grades):
        items = list(g.items())
        random.Random(i).shuffle(items)  # the order of a question's grades does not matter
        codes += [c for c, _ in items]
        values += [v for _, v in items]
        offsets[i + 1] = len(codes)
    return offsets, np.asarray(codes, dtype=np.int64), np.asarray(values, dtype=np.int64)


@pytest.mark.parametrize("scatter", [True, False], ids=["scatter", "search"])
@pytest.mark.parametrize("seed", range(40))
def test_batch_metrics_equal_question_metrics(
    seed: int, scatter: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways of finding the grades (scattering few judgements, searching many) agree."""
    from ragtui.core.metrics import batch

    monkeypatch.setattr(batch, "SCATTER_CELLS", batch.SCATTER_CELLS if scatter else 0)
    rng = random.Random(seed)
    n_chunks = rng.choice([3, 12, 60])
    depth = rng.choice([1, 3, 10, 20])
    k = rng.choice([1, 2, 3, 5, 10, 25])  # k above the depth too
    threshold = rng.choice([0, 1, 1, 2, 3])
    cases = [_case(rng, n_chunks, depth) for _ in range(rng.randint(1, 120))]
    ranked = _matrix([r for r, _ in cases], depth)
    offsets, codes, values = _csr([g for _, g in cases])
    batch = batch_metrics(ranked, offsets, codes, values, k, threshold)
    for i, (ranking, grades) in enumerate(cases):
        ref = question_metrics(ranking, grades, k, threshold)
        assert int(batch.num_relevant[i]) == ref.num_relevant
        first = int(batch.first[i])
        assert (first if first else None) == ref.first_relevant_rank
        for field in ("recall", "precision", "precision_ceiling", "rr", "ndcg"):
            got, want = float(getattr(batch, field)[i]), getattr(ref, field)
            assert abs(got - want) <= TOLERANCE, (i, field, got, want)
            assert got == want, (i, field, got, want)  # the same operations: the same number
        assert float(batch.judged[i]) == judged_at_k(ranking, grades, k)


def test_batch_metrics_with_no_grades_and_no_results() -> None:
    ranked = np.full((3, 4), -1, dtype=np.int64)
    ranked[1, :2] = [5, 2]
    empty = np.zeros(0, dtype=np.int64)
    batch = batch_metrics(ranked, np.zeros(4, dtype=np.int64), empty, empty, 3)
    assert batch.recall.tolist() == [0.0] * 3 and batch.ndcg.tolist() == [0.0] * 3
    assert batch.first.tolist() == [0, 0, 0] and batch.judged.tolist() == [0.0] * 3
    zero_depth = batch_metrics(
        np.zeros((2, 0), dtype=np.int64), np.array([0, 1, 1]), np.array([4]), np.array([2]), 2
    )
    assert zero_depth.precision_ceiling.tolist() == [0.5, 0.0]
    assert zero_depth.recall.tolist() == [0.0, 0.0] and zero_depth.first.tolist() == [0, 0]


def test_duplicate_rows_are_found() -> None:
    ranked = np.array([[1, 2, 1, -1], [1, 2, 3, -1], [-1, -1, -1, -1], [4, 4, -1, -1]])
    assert duplicate_rows(ranked).tolist() == [True, False, False, True]
    # Against a set per row, on random rows of both integer widths with padding anywhere, found
    # column against column (up to PAIRWISE_COLUMNS) and by sorting each row (wider).
    rng = np.random.default_rng(7)
    for dtype in (np.int32, np.int64):
        for width in (0, 1, 2, 5, 12, 20, 21, 40):
            rows = rng.integers(-3, 9 + width * width // 4, size=(300, width)).astype(dtype)
            rows[rows < -1] = -1
            codes = [[c for c in row.tolist() if c >= 0] for row in rows]
            expected = [len(set(c)) < len(c) for c in codes]
            assert duplicate_rows(rows).tolist() == expected
            assert 0 < sum(expected) < len(expected) or width < 2


def _reference(
    question_ids: list[str],
    grades: dict[str, dict[str, int]],
    rankings: dict[str, list[tuple[str, float]]],
    k: int,
    threshold: int,
) -> tuple[dict[str, object], dict[str, float]]:
    """Per-question values and means as the formulas give them, with trec_eval's averaging rule."""
    per = {
        q: question_metrics([c for c, _ in rankings.get(q, [])], grades[q], k, threshold)
        for q in question_ids
    }
    evaluated = [q for q in question_ids if grades[q]]
    means = {
        f: (math.fsum(getattr(per[q], f) for q in evaluated) / len(evaluated) if evaluated else 0.0)
        for f in MEAN_FIELDS
    }
    return per, means


@pytest.mark.parametrize("seed", range(25))
def test_evaluation_equals_the_formulas_whatever_the_input(seed: int) -> None:
    """Plain dict rankings (ids ranked twice included), ranking tables (in the questions' order or
    another) with assigned questions, grade arrays with regraded questions: every per-question value and mean as the formulas say."""
    rng = random.Random(1000 + seed)
    chunks = [f"c{i}" for i in range(rng.choice([4, 15, 40]))]
    qids = [f"q{i}" for i in range(rng.randint(1, 90))]
    depth = rng.choice([2, 5, 10])
    k = rng.choice([1, 3, 5, 12])
    threshold = rng.choice([0, 1, 2])
    grades: dict[str, dict[str, int]] = {}
    for q in qids:
        codes = _case(rng, len(chunks), depth)[1]
        grades[q] = {chunks[c]: g for c, g in codes.items()}
        if rng.random() < 0.1:
            grades[q]["not-a-chunk"] = 2  # judged, never retrievable
    plain: dict[str, list[tuple[str, float]]] = {}
    for q in qids:
        ranked = rng.sample(chunks, rng.randint(0, min(depth, len(chunks))))
        if ranked and rng.random() < 0.15:
            ranked.insert(rng.randrange(len(ranked) + 1), rng.choice(ranked))  # ranked twice
        plain[q] = [(c, 1.0 / (i + 1)) for i, c in enumerate(ranked)]
    # The same rankings as a table (no id twice), some assigned afterwards.
    code_of = {c: i for i, c in enumerate(chunks)}
    table_rankings = {q: list(dict.fromkeys(c for c, _ in r)) for q, r in plain.items()}
    # Its rows in the questions' order, or in an order of its own (half the seeds).
    table_order = qids if seed % 2 else rng.sample(qids, len(qids))
    index = _matrix([[code_of[c] for c in table_rankings[q]] for q in table_order], depth + 1)
    table = RankingTable(table_order, chunks, index, np.where(index >= 0, 1.0, 0.0))
    table_plain = {q: [(c, 1.0) for c in table_rankings[q]] for q in qids}
    for q in rng.sample(qids, min(3, len(qids))):
        new = rng.sample(chunks, rng.randint(0, min(depth, len(chunks))))
        table[q] = [(c, 0.5) for c in new]
        table_plain[q] = table[q]
    # Grades as arrays, a few questions regraded (their arrays row is stale on purpose).
    arrays = GradeArrays.from_mappings(qids, lambda q: grades[q])
    regraded = rng.sample(qids, min(4, len(qids)))
    for q in regraded:
        grades[q] = {rng.choice(chunks): rng.choice([0, 1, 2, 3])}
    ev = Evaluation(
        qids,
        lambda q: dict(grades[q]),
        {"plain": plain, "table": table},
        k,
        threshold,
        grade_arrays=arrays,
        regraded=regraded,
    )
    for name, rankings in (("plain", plain), ("table", table_plain)):
        per, means = _reference(qids, grades, rankings, k, threshold)
        for q in qids:
            assert ev.per_question[name][q] == per[q], (name, q)
            ranked = [c for c, _ in rankings[q]]
            assert ev.judged[name][q] == judged_at_k(ranked, grades[q], k)
        summary = ev.summary(name).as_dict()
        assert summary["recall"] == means["recall"]
        assert summary["precision"] == means["precision"]
        assert summary["precision_ceiling"] == means["precision_ceiling"]
        assert summary["mrr"] == means["rr"]
        assert summary["ndcg"] == means["ndcg"]
    assert ev.skipped == [q for q in qids if not grades[q]]
    assert set(ev.evaluated) == {q for q in qids if grades[q]}
    assert len(ev.evaluated) == sum(1 for q in qids if grades[q])
    # One grade change: the question computed again, the means kept in O(1).
    q = rng.choice(qids)
    grades[q] = {rng.choice(chunks): 2}
    changes = ev.update_question(q)
    for name, rankings in (("plain", plain), ("table", table_plain)):
        per, means = _reference(qids, grades, rankings, k, threshold)
        assert changes[name][1] == per[q]
        assert ev.summary(name).ndcg == pytest.approx(means["ndcg"], abs=TOLERANCE)
        subset = rng.sample(qids, len(qids) // 2)
        chosen = [s for s in subset if grades[s]]
        want = math.fsum(per[s].recall for s in chosen) / len(chosen) if chosen else 0.0
        assert ev.summary(name, subset).recall == want


def test_grade_rows_build_a_question_once_and_keep_changes() -> None:
    arrays = GradeArrays.from_mappings(["a", "b"], {"a": {"x": 2}, "b": {}}.__getitem__)
    rows = GradeRows(arrays)
    assert rows["a"] == {"x": 2} and rows.get("b") == {} and "c" not in rows
    rows.setdefault("a", {}).update({"y": 1})
    rows["c"] = {"z": 2}
    assert rows["a"] == {"x": 2, "y": 1} and list(rows) == ["a", "b", "c"] and len(rows) == 3
    assert rows.changed() == {"a", "b", "c"}
    del rows["b"]
    assert list(rows) == ["a", "c"] and "b" not in rows


def test_ranking_table_reads_as_a_dict() -> None:
    index = np.array([[2, 0, -1], [-1, -1, -1]], dtype=np.int32)
    scores = np.array([[3.5, 1.25, 0.0], [0.0, 0.0, 0.0]])
    table = RankingTable(["q1", "q2"], ["c0", "c1", "c2"], index, scores)
    assert table["q1"] == [("c2", 3.5), ("c0", 1.25)] and table["q2"] == []
    assert table.get("q3", []) == [] and len(table) == 2 and list(table) == ["q1", "q2"]
    assert table.empty_rows() == ["q2"]
    copy = table.copy()
    copy["q3"] = [("c1", 1.0)]
    copy["q2"] = [("c1", 2.0)]
    assert "q3" not in table and copy["q3"] == [("c1", 1.0)] and copy.empty_rows() == []
    assert dict(copy) == {"q1": table["q1"], "q2": [("c1", 2.0)], "q3": [("c1", 1.0)]}
    del copy["q1"]
    assert list(copy) == ["q2", "q3"] and copy.changed() == {"q1", "q2", "q3"}
