"""Agreement: Cohen's kappa (hand-computed), the evidence rule against hand grades, two annotators, --annotator."""

from __future__ import annotations

import getpass
import json
from dataclasses import replace

import pytest

from ragtui.cli import build_parser, main, settings_from
from ragtui.core.analysis.rule_agreement import rule_agreement
from ragtui.core.labelling.agreement import (
    annotator_agreement,
    annotators,
    cohen_kappa,
    last_grades,
    weighted_kappa,
)
from ragtui.core.labelling.journal import Label
from ragtui.core.workspace import Workspace
from tests.conftest import mini_args, settings_of


def _args(mini, *extra: str) -> list[str]:
    return mini_args(mini, "--retrievers", "bm25", *extra)


def test_cohen_kappa_hand_computed():
    # 10 items: both yes 4, A yes / B no 2, A no / B yes 1, both no 3.
    a = [1] * 4 + [1] * 2 + [0] * 1 + [0] * 3
    b = [1] * 4 + [0] * 2 + [1] * 1 + [0] * 3
    # p_o = (4 + 3) / 10 = 0.7; A says yes 6/10, B 5/10: p_e = 0.6 * 0.5 + 0.4 * 0.5 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, a) == pytest.approx(1.0)
    # Perfect disagreement on a balanced set: p_o = 0, p_e = 0.5, kappa = -1.
    assert cohen_kappa([1, 0], [0, 1]) == pytest.approx(-1.0)
    # One category everywhere: p_e = 1, kappa undefined; no items: undefined.
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 0])


def test_weighted_kappa_hand_computed():
    a, b = [0, 1, 2], [0, 2, 2]
    # Quadratic weights (i - j)^2. Observed: pairs (0,0) 0, (1,2) 1, (2,2) 0 -> 1/3.
    # Expected: A uses 0, 1, 2 once each; B uses 0 once, 2 twice. Sum over x, y of nA(x) nB(y) w(x, y) / 9:
    # x=0: 1*1*0 + 1*2*4 = 8; x=1: 1*1*1 + 1*2*1 = 3; x=2: 1*1*4 + 1*2*0 = 4; total 15 / 9.
    # kappa_w = 1 - (1/3) / (15/9) = 1 - 3/15 = 0.8.
    assert weighted_kappa(a, b) == pytest.approx(0.8)
    # Linear weights |i - j|: observed 1/3; expected (x=0: 2*2=4; x=1: 1+2=3; x=2: 2) = 9/9; kappa_w = 1 - 1/3.
    assert weighted_kappa(a, b, "linear") == pytest.approx(2 / 3)
    assert weighted_kappa([2, 2], [2, 2]) is None


def test_kappas_agree_with_scikit_learn():
    import random

    from sklearn import metrics  # in the test extra: a missing reference fails, never skips

    rng = random.Random(3)
    for _ in range(50):
        n = rng.randint(2, 30)
        a = [rng.randint(0, 3) for _ in range(n)]
        b = [min(3, max(0, x + rng.choice((-1, 0, 0, 1)))) for x in a]
        if len(set(a) | set(b)) < 2:
            continue
        ours = cohen_kappa(a, b)
        if ours is not None:
            assert ours == pytest.approx(metrics.cohen_kappa_score(a, b), abs=1e-12)
        for weights in ("linear", "quadratic"):
            w = weighted_kappa(a, b, weights)
            if w is not None:
                assert w == pytest.approx(
                    metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12
                )


def test_rule_against_hand_grades_on_the_small_corpus(mini_settings, mini):
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    ws.set_grade("m01", "ferry.md#1", 0)  # holds m01's evidence, graded 0: disagreement
    ws.set_grade("m01", "ferry.md#0", 1)  # no evidence, graded 1: disagreement
    ws.set_grade("m03", "library.md#1", 2)  # evidence, graded 2: agreement
    ws.set_grade("m03", "library.md#0", 0)  # agreement
    ws.set_grade("m05", "library.md#1", 0)  # agreement
    result = rule_agreement(ws)
    assert result.pairs == 5
    assert result.grades == [0, 1, 2]
    assert result.row(True) == [1, 0, 1] and result.row(False) == [2, 1, 0]
    # (rule, person) relevant: (y, n), (n, y), (y, y), (n, n), (n, n). p_o = 3/5.
    # rule yes 2/5, person yes 2/5: p_e = 0.4 * 0.4 + 0.6 * 0.6 = 0.52; kappa = (0.6 - 0.52) / 0.48 = 1/6.
    assert result.observed == pytest.approx(0.6)
    assert result.kappa == pytest.approx(1 / 6)
    assert [
        (d.question, d.chunk, d.hand_grade, d.evidence_match) for d in result.disagreements
    ] == [
        ("m01", "ferry.md#0", 1, False),
        ("m01", "ferry.md#1", 0, True),
    ], "golden-set order, then chunk order"
    assert result.disagreements[1].kind == "graded not relevant but contains the evidence"
    assert result.disagreements[0].annotator == "tester"
    # A stale label takes no part; nor does a removed grade.
    with (mini / "golden" / "labels.jsonl").open("a") as fh:
        fh.write(
            '{"question": "m02", "chunk": "ferry.md#3", "grade": 0, "chunk_sha1": "old", "at": ""}\n'
        )
    ws.refresh_labels()
    ws.set_grade("m05", "library.md#1", None)
    assert rule_agreement(ws).pairs == 4
    # With --threshold 2 a grade of 1 is "not relevant": ferry.md#0 is no longer a disagreement.
    strict = Workspace.load(replace(mini_settings, retrievers=("bm25",), threshold=2))
    assert [(d.question, d.chunk) for d in rule_agreement(strict).disagreements] == [
        ("m01", "ferry.md#1")
    ]


def _label(q: str, c: str, grade: int | None, who: str, sha1: str = "s") -> Label:
    return Label(q, c, grade, sha1, "", who)


def test_two_annotators_compare_each_ones_last_grade():
    history = [
        _label("q1", "a", 2, "ann"),
        _label("q1", "a", 1, "ann"),  # ann changed her mind: 1 counts
        _label("q1", "a", 1, "bob"),
        _label("q1", "b", 0, "ann"),
        _label("q1", "b", 2, "bob"),
        _label("q1", "c", 2, "ann"),
        _label("q1", "c", 2, "bob"),
        _label("q2", "a", 0, "ann"),
        _label("q2", "a", 0, "bob"),
        _label("q2", "b", 1, "ann"),
        _label("q2", "b", None, "ann"),  # ann removed hers: only bob graded it
        _label("q2", "b", 1, "bob"),
        _label("q2", "c", 1, "ann", sha1="old"),
        _label("q2", "c", 1, "bob", sha1="new"),  # another text: left out
        _label("q3", "a", 1, ""),
    ]
    assert annotators(history) == {"ann": 5, "bob": 6, "": 1}
    assert last_grades(history, "ann")[("q1", "a")].grade == 1
    result = annotator_agreement(history, "ann", "bob")
    # Shared pairs (sorted): q1/a (1, 1), q1/b (0, 2), q1/c (2, 2), q2/a (0, 0).
    assert (result.pairs, result.only_a, result.only_b, result.changed_text) == (4, 0, 1, 1)
    assert result.table == {(1, 1): 1, (0, 2): 1, (2, 2): 1, (0, 0): 1}
    # Binary (>= 1): ann [y, n, y, n], bob [y, y, y, n]; p_o = 3/4; p_e = 0.5 * 0.75 + 0.5 * 0.25 = 0.5;
    # kappa = (0.75 - 0.5) / 0.5 = 0.5.
    assert result.kappa == pytest.approx(0.5)
    # Quadratic: observed = (0 + 4 + 0 + 0) / 4 = 1; ann uses 0 twice, 1 once, 2 once; bob 0 once, 1 once, 2 twice.
    # expected = [x=0: 2*(1*0 + 1*1 + 2*4) = 18; x=1: 1*(1 + 0 + 2) = 3; x=2: 1*(4 + 1 + 0) = 5] / 16 = 26/16;
    # kappa_w = 1 - 1 / (26/16) = 1 - 16/26 = 5/13.
    assert result.weighted_kappa == pytest.approx(5 / 13)
    assert result.observed == pytest.approx(3 / 4)
    assert result.disagreements == [("q1", "b", 0, 2)]


def test_labels_carry_the_annotator(mini_settings, mini):
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    ws.set_grade("m01", "ferry.md#0", 1)
    line = json.loads((mini / "golden" / "labels.jsonl").read_text().splitlines()[-1])
    assert line["annotator"] == "tester"
    args = build_parser().parse_args(["check", "--annotator", "zoe", *_args(mini)])
    ws = Workspace.load(settings_from(args))
    ws.set_grade("m01", "ferry.md#0", 2)
    assert (
        json.loads((mini / "golden" / "labels.jsonl").read_text().splitlines()[-1])["annotator"]
        == "zoe"
    )
    # Without --annotator: the login name.
    ws = Workspace.load(settings_from(build_parser().parse_args(["check", *_args(mini)])))
    assert ws.grades.labels.annotator == getpass.getuser()
    assert annotators(ws.grades.labels.history) == {"tester": 1, "zoe": 1}


def test_agreement_command(mini, capsys):
    journal = mini / "golden" / "labels.jsonl"
    lines = [
        ("m01", "ferry.md#1", 0, "ann"),
        ("m01", "ferry.md#0", 1, "ann"),
        ("m03", "library.md#1", 2, "ann"),
        ("m01", "ferry.md#1", 2, "bob"),
        ("m01", "ferry.md#0", 1, "bob"),
    ]
    ws = Workspace.load(settings_of(mini, retrievers=("bm25",)))
    sha = {c.id: c.sha1 for c in ws.data.chunks}
    journal.write_text(
        "".join(
            json.dumps(
                {
                    "question": q,
                    "chunk": c,
                    "grade": g,
                    "chunk_sha1": sha[c],
                    "at": "",
                    "annotator": a,
                }
            )
            + "\n"
            for q, c, g, a in lines
        )
    )
    assert main(["agreement", *_args(mini)]) == 0
    out = capsys.readouterr().out
    # Current grades (last line per pair wins): m01/ferry.md#1 2 (bob), m01/ferry.md#0 1, m03/library.md#1 2.
    assert "3 hand-graded pairs that apply" in out
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "disagreements to review: 1" in out
    assert "m01 ferry.md#0 1 bob graded relevant without the evidence" in rows
    assert "annotators: ann (3 pairs), bob (2 pairs)" in out
    assert main(["agreement", "--annotators", "ann", "bob", *_args(mini)]) == 0
    out = capsys.readouterr().out
    assert "ann against bob: 2 pairs graded by both (1 only by ann, 0 only by bob)" in out
    assert "disagreements between ann and bob: 1" in out
    assert "m01 ferry.md#1 0 2" in [" ".join(line.split()) for line in out.splitlines()]
    assert "Cohen's kappa (binary, grade >= 1): 0.000" in out
    assert main(["agreement", "--annotators", "ann", "carl", *_args(mini)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"ragtui: error: {journal}: no labels by carl (annotators: ann, bob)"
    )


def test_an_adjudicated_grade_is_credited_to_no_annotator(mini, mini_settings, capsys):
    """Issue 23: alice and bob grade m01's evidence chunk 0 and 2, carol adjudicates 0 (real journal
    lines, written as each of them): the disagreement with the rule reads ``adjudicated``, not
    ``carol``; carol is no annotator and has no grade of her own; alice against bob is unchanged."""
    for who, grade, adjudicate in (("alice", 0, False), ("bob", 2, False), ("carol", 0, True)):
        ws = Workspace.load(replace(mini_settings, annotator=who, retrievers=("bm25",)))
        ws.set_grade("m01", "ferry.md#1", grade, adjudicate=adjudicate)
    lines = [json.loads(x) for x in (mini / "golden" / "labels.jsonl").read_text().splitlines()]
    assert [(x["annotator"], x.get("adjudicated", False)) for x in lines] == [
        ("alice", False),
        ("bob", False),
        ("carol", True),
    ]
    ws = Workspace.load(replace(mini_settings, retrievers=("bm25",)))
    result = rule_agreement(ws)
    assert [(d.hand_grade, d.by, d.adjudicated) for d in result.disagreements] == [
        (0, "adjudicated", True)
    ]
    assert rule_agreement(ws, "carol").pairs == 0, "an adjudication is not carol's own grade"
    assert [d.by for d in rule_agreement(ws, "alice").disagreements] == ["alice"]
    assert annotators(ws.grades.labels.history) == {"alice": 1, "bob": 1}
    assert main(["agreement", *_args(mini)]) == 0
    rows = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "m01 ferry.md#1 0 adjudicated graded not relevant but contains the evidence" in rows
    assert not any("carol" in row for row in rows), rows
    assert main(["agreement", "--annotators", "alice", "bob", *_args(mini)]) == 0
    out = capsys.readouterr().out
    assert "alice against bob: 1 pair graded by both (0 only by alice, 0 only by bob)" in out


def test_agreement_says_whether_the_grades_were_given_independently():
    """Issue 33: each shared pair counts as independent when both grades were given before seeing
    another's, as seen when either was not, and not recorded otherwise (old journals)."""
    history = [
        replace(_label("q1", "a", 2, "ann"), independent=True),
        replace(_label("q1", "a", 2, "bob"), independent=True),
        replace(_label("q1", "b", 1, "ann"), independent=True),
        replace(_label("q1", "b", 0, "bob"), independent=False),
        _label("q2", "a", 1, "ann"),
        replace(_label("q2", "a", 1, "bob"), independent=True),
    ]
    result = annotator_agreement(history, "ann", "bob")
    assert result.independence == (1, 1, 1)
    text = result.independence_text()
    assert text.startswith("given independently: 1 of 3 pairs; 1 after seeing another's grade")
    assert text.endswith("1 not recorded")
    # The journal line round-trips the flag; a bad value is refused naming it.
    from pathlib import Path

    from ragtui.core.errors import InputError
    from ragtui.core.labelling.labels import parse_label

    line = json.loads(history[3].to_json())
    assert line["independent"] is False
    assert parse_label(line, Path("labels.jsonl"), 4).independent is False
    with pytest.raises(InputError, match="'independent' must be true or false"):
        parse_label({**line, "independent": "yes"}, Path("labels.jsonl"), 4)
