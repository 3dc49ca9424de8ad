"""Read TREC run and qrels files the way trec_eval does.

A run line is ``qid Q0 docid rank score tag``; trec_eval ignores the rank column and ranks each
query's documents by score, descending, breaking ties by docid, descending (``comp_sim_docno`` in
trec_eval's form_res_rels.c).  A qrels line is ``qid iter docid grade``.  Blank lines are skipped,
and so are run lines starting with ``#`` (as trec_eval does).  A malformed line raises
:class:`TrecFormatError` (both a :class:`ValueError` and an :class:`~ragtui.core.errors.InputError`,
so the CLI prints it as one line and exits 2) whose message reads ``file: line N: problem``; so does
a docid repeated within a query, which trec_eval refuses too, and a file that is not UTF-8.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ragtui.core.data.beir import MAX_GRADE_MAGNITUDE
from ragtui.core.errors import InputError
from ragtui.core.files import NotRegularFileError, read_regular
from ragtui.core.text import visible_line

__all__ = [
    "TrecFormatError",
    "parse_trec_qrels",
    "parse_trec_run",
    "rank_by_score",
    "read_trec_qrels",
    "read_trec_run",
]

_RUN_COLUMNS = 6
_QRELS_COLUMNS = 4

# Numbers as C's atoi/atof read them in trec_eval: ASCII only (Python's int() and float() would also
# take "1_0", other scripts' digits, "infinity").
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf)", re.IGNORECASE
)


class TrecFormatError(InputError, ValueError):
    """A bad TREC file: the file, the 1-based line and the problem, on one line."""

    @property
    def message(self) -> str:
        """The one-line message: ``file: line N: problem``, control characters shown as escapes."""
        flat = " ".join(self.problem.split())
        if self.line is None:
            return visible_line(f"{self.path}: {flat}")
        return visible_line(f"{self.path}: line {self.line}: {flat}")


def _error(source: str, line_no: int, problem: str) -> TrecFormatError:
    """An error reading ``source: line N: problem``."""
    return TrecFormatError(source, problem, line_no)


def _read_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 text file, or a TrecFormatError naming the file (and the line)."""
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        raise TrecFormatError(path, "file not found") from None
    except NotRegularFileError as exc:
        raise TrecFormatError(path, exc.problem) from None
    except OSError as exc:
        raise TrecFormatError(path, f"cannot read the file ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _error(str(path), line, f"not UTF-8 text (byte 0x{raw[exc.start]:02x})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


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
        if not _INTEGER.fullmatch(rank):
            raise _error(source, line_no, f"rank {rank!r} is not an integer")
        if not _NUMBER.fullmatch(score_text):
            raise _error(source, line_no, f"score {score_text!r} is not a number")
        score = float(score_text)
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
        if not _INTEGER.fullmatch(grade_text):
            raise _error(source, line_no, f"grade {grade_text!r} is not an integer")
        # Digits counted first: int() of a very long string is slow, or refused past 4,300 digits;
        # the bound is the BEIR loader's, so no table or ideal-DCG sum can overflow.
        digits = grade_text.lstrip("+-").lstrip("0")
        grade = int(grade_text) if len(digits) <= 10 else MAX_GRADE_MAGNITUDE + 1
        if abs(grade) > MAX_GRADE_MAGNITUDE:
            shown = grade_text if len(grade_text) <= 24 else grade_text[:21] + "..."
            raise _error(
                source,
                line_no,
                f"grade {shown!r} is out of range (a whole number from {-MAX_GRADE_MAGNITUDE} "
                f"to {MAX_GRADE_MAGNITUDE})",
            )
        query = qrels.setdefault(qid, {})
        if docid in query:
            raise _error(source, line_no, f"docid {docid!r} is judged twice for query {qid!r}")
        query[docid] = grade
    return qrels


def read_trec_run(path: str | Path) -> dict[str, list[str]]:
    """Read a run file into qid -> docids ranked by trec_eval's rule (score desc, docid desc)."""
    path = Path(path)
    return parse_trec_run(_read_lines(path), source=str(path))


def read_trec_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read a qrels file into qid -> {docid: grade}."""
    path = Path(path)
    return parse_trec_qrels(_read_lines(path), source=str(path))
