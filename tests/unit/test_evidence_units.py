"""Evidence-level measures (docs/metrics.md#units): a question's evidence units, the rank at which
each is first held by a relevant passage, and evidence recall@k from those ranks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragtui.core.data.chunking import Chunk
from ragtui.core.data.golden import Question
from ragtui.core.metrics.formulas import evidence_recall
from ragtui.core.workspace import LEVEL_CHUNK, Passages, QuestionSet
from ragtui.core.workspace.live_answers import _evidence_ranks


def _chunk(cid: str, doc: str, text: str = "") -> Chunk:
    return Chunk(cid, doc, 0, 0, len(text), text, (), 1)


def _grades(chunks: list[Chunk], evidence: tuple[str, ...] = ()) -> SimpleNamespace:
    """What the evidence ranks read of the grades part: the questions, the level, the passages."""
    return SimpleNamespace(
        questions=QuestionSet.of([Question("q1", "what?", evidence)]),
        data=SimpleNamespace(level=LEVEL_CHUNK),
        passages=Passages.of(chunks),
    )


def test_document_units_count_only_the_questions_relevant_documents():
    # Units: documents A and B (ragtui's relevant chunks). A relevant passage of document C (graded
    # by hand, no unit) comes first: it holds nothing, and B is still found at rank 3.
    chunks = [_chunk("x", "C"), _chunk("a", "A"), _chunk("b", "B")]
    shared = {"a": 2, "b": 1}
    gains = {"x": 2, "a": 2, "b": 1}
    ranks = _evidence_ranks(1, _grades(chunks), "q1", ["x", "a", "b"], gains, shared)
    assert ranks == (2, 3)
    assert evidence_recall(ranks, 2) == 0.5 and evidence_recall(ranks, 3) == 1.0


def test_string_units_and_a_passage_graded_0_holds_nothing():
    chunks = [_chunk("p", "D", "the pump  PS-07 runs"), _chunk("r", "D", "PS-07 runs; PV-12 too")]
    grades = _grades(chunks, evidence=("PS-07 runs", "PV-12"))
    assert _evidence_ranks(1, grades, "q1", ["p", "r"], {"p": 2, "r": 2}, {}) == (1, 2)
    # p graded 0 by hand: PS-07's first holder is r, at rank 2.
    assert _evidence_ranks(1, grades, "q1", ["p", "r"], {"p": 0, "r": 2}, {}) == (2, 2)
    assert _evidence_ranks(1, grades, "q1", ["p"], {"p": 2}, {}) == (1, None)


@pytest.mark.parametrize(
    ("ranks", "k", "expected"),
    [
        ((), 3, 0.0),
        ((None, None), 3, 0.0),
        ((1, 4), 3, 0.5),
        ((3,), 3, 1.0),
        ((1, 2, None), 1, 1 / 3),
    ],
)
def test_evidence_recall(ranks, k, expected):
    assert evidence_recall(ranks, k) == expected
