"""Read TREC run and qrels files the way trec_eval does.

A run line is ``qid Q0 docid rank score tag``; trec_eval ignores the rank column and ranks each
query's documents by score, descending, breaking ties by docid, descending (``comp_sim_docno`` in
trec_eval's form_res_rels.c).  A qrels line is ``qid iter docid grade``.  Blank lines are skipped,
and so are run lines starting with ``#`` (as trec_eval does).  A malformed line raises
:class:`ValueError` whose message contains ``line N: problem``; so does a docid repeated within a
query, which trec_eval refuses too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "parse_trec_qrels",
    "parse_trec_run",
    "rank_by_score",
    "read_trec_qrels",
    "read_trec_run",
]

_RUN_COLUMNS = 6
_QRELS_COLUMNS = 4


def _error(source: str, line_no: int, problem: str) -> ValueError:
    """A ValueError reading ``source: line N: problem``."""
    return ValueError(f"{source}: line {line_no}: {problem}")


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """The docids of ``scores`` ranked as trec_eval ranks them: score descending, then docid
    descending."""
    # Python's sort is stable: sort by the secondary key first, then by the primary one.
    by_docid = sorted(scores, reverse=True)
    return sorted(by_docid, key=lambda doc: scores[doc], reverse=True)


def parse_trec_run(lines: Iterable[str], source: str = "<run>") -> dict[str, list[str]]:
    """Parse run lines into qid -> docids ranked by trec_eval's rule (score desc, docid desc)."""
    scores: dict[str, dict[str, float]] = {}
    for line_no, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split()
        if len(fields) != _RUN_COLUMNS:
            raise _error(
                source,
                line_no,
                f"expected {_RUN_COLUMNS} columns (qid Q0 docid rank score tag), got {len(fields)}",
            )
        qid, _iter, docid, rank, score_text, _tag = fields
        try:
            int(rank)
        except ValueError:
            raise _error(source, line_no, f"rank {rank!r} is not an integer") from None
        try:
            score = float(score_text)
        except ValueError:
            raise _error(source, line_no, f"score {score_text!r} is not a number") from None
        if not math.isfinite(score):
            raise _error(source, line_no, f"score {score_text!r} is not a finite number")
        query = scores.setdefault(qid, {})
        if docid in query:
            raise _error(source, line_no, f"docid {docid!r} appears twice for query {qid!r}")
        query[docid] = score
    return {qid: rank_by_score(docs) for qid, docs in scores.items()}


def parse_trec_qrels(lines: Iterable[str], source: str = "<qrels>") -> dict[str, dict[str, int]]:
    """Parse qrels lines into qid -> {docid: grade}, grades being integers (possibly <= 0)."""
    qrels: dict[str, dict[str, int]] = {}
    for line_no, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        fields = text.split()
        if len(fields) != _QRELS_COLUMNS:
            raise _error(
                source,
                line_no,
                f"expected {_QRELS_COLUMNS} columns (qid iter docid grade), got {len(fields)}",
            )
        qid, _iter, docid, grade_text = fields
        try:
            grade = int(grade_text)
        except ValueError:
            raise _error(source, line_no, f"grade {grade_text!r} is not an integer") from None
        query = qrels.setdefault(qid, {})
        if docid in query:
            raise _error(source, line_no, f"docid {docid!r} is judged twice for query {qid!r}")
        query[docid] = grade
    return qrels


def read_trec_run(path: str | Path) -> dict[str, list[str]]:
    """Read a run file into qid -> docids ranked by trec_eval's rule (score desc, docid desc)."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        return parse_trec_run(handle, source=str(path))


def read_trec_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into qid -> {docid: grade}."""
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        return parse_trec_qrels(handle, source=str(path))
