"""External runs: a retriever whose ranked lists come from a TREC run file (``--run NAME=path.trec``).

Any engine that can write ``qid Q0 docid rank score tag`` lines can be evaluated, compared and
labelled against in ragtui.  The file is read the way trec_eval reads it (:mod:`ragtui.core.data.trec`:
score descending, ties by docid descending; the rank column is ignored) and each question's list is
cut to ``depth``, like the built-in retrievers.  Ids written by ``ragtui export`` are
percent-encoded; an id that is not a chunk (or question) as written is tried decoded.  Ids that are
still not chunks of the corpus are kept in the ranking (they count as not relevant, and are shown by
id) and reported in a warning; so are question ids that are not in the golden set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from ragtui.core.data.corpus import decode_utf8, read_file
from ragtui.core.data.paths import safe_filename
from ragtui.core.data.trec import TrecFormatError, parse_trec_run
from ragtui.core.errors import InputError
from ragtui.core.retrieval.base import RETRIEVER_NAMES, Ranking

__all__ = ["ExternalRun", "load_external_run", "parse_run_spec"]

#: How many example ids a warning names.
EXAMPLES = 3


@dataclass(frozen=True)
class ExternalRun:
    """A TREC run file read as a retriever: rankings per golden question, and what did not match."""

    name: str
    path: Path
    rankings: dict[str, Ranking]
    unknown_chunks: list[str] = field(default_factory=list)
    unknown_questions: list[str] = field(default_factory=list)
    missing_questions: list[str] = field(default_factory=list)
    sha256: str = ""

    @property
    def warnings(self) -> list[str]:
        """One line per problem found: ids not in the corpus, questions not in the golden set, questions without results."""
        out = []
        where = f"run {self.name!r} ({self.path})"
        if self.unknown_chunks:
            out.append(
                f"{where}: {len(self.unknown_chunks)} id{'s' if len(self.unknown_chunks) != 1 else ''} "
                f"not among the corpus chunks (e.g. {_examples(self.unknown_chunks)}); "
                "they stay in the ranking, count as not relevant and are shown by id"
            )
        if self.unknown_questions:
            out.append(
                f"{where}: {len(self.unknown_questions)} question id{'s' if len(self.unknown_questions) != 1 else ''} "
                f"not in the golden set (e.g. {_examples(self.unknown_questions)}); ignored"
            )
        if self.missing_questions:
            out.append(
                f"{where}: no results for {len(self.missing_questions)} golden question"
                f"{'s' if len(self.missing_questions) != 1 else ''} (e.g. {_examples(self.missing_questions)}); "
                "they count as empty runs"
            )
        return out


def _examples(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:EXAMPLES])
    return shown + (", ..." if len(ids) > EXAMPLES else "")


def parse_run_spec(text: str) -> tuple[str, Path]:
    """``NAME=path.trec`` (or just ``path.trec``, named after the file's stem) as (name, path); InputError if unusable."""
    name, sep, path = text.partition("=")
    if not sep or not name or "/" in name or "\\" in name:
        name, path = Path(text).stem, text
    if not path:
        raise InputError(None, f"--run {text!r}: expected NAME=path.trec")
    try:
        ok = safe_filename(name) == name
    except ValueError:
        ok = False
    if not ok:
        raise InputError(
            None,
            f"--run {text!r}: a run name may hold only letters, digits, '-', '_' and '.' (not first)",
        )
    if name in RETRIEVER_NAMES:
        raise InputError(
            None, f"--run {text!r}: {name!r} is a built-in retriever; choose another name"
        )
    return name, Path(path)


def _match(identifier: str, known: Collection[str]) -> str | None:
    """The known id this file id stands for (as written, or percent-decoded), or None."""
    if identifier in known:
        return identifier
    decoded = unquote(identifier)
    if decoded in known:
        return decoded
    return None


def load_external_run(
    name: str, path: str | Path, chunk_ids: Collection[str], question_ids: Sequence[str], depth: int
) -> ExternalRun:
    """Read a TREC run file as the rankings of retriever ``name``; a malformed file raises InputError(path, problem, line)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "run file not found")
    raw = read_file(path)
    lines = decode_utf8(path, raw).splitlines()
    try:
        ranked = parse_trec_run(lines, source=str(path))
    except TrecFormatError as exc:
        raise InputError(path, exc.problem, exc.line) from None
    if not ranked:
        raise InputError(path, "the run file holds no results")
    scores: dict[tuple[str, str], float] = {}
    for line in lines:
        fields = line.split()
        if len(fields) == 6 and not line.lstrip().startswith("#"):
            scores[(fields[0], fields[2])] = float(fields[4])

    questions = set(question_ids)
    rankings: dict[str, Ranking] = {}
    unknown_questions: list[str] = []
    unknown_chunks: dict[str, None] = {}
    for file_qid, docids in ranked.items():
        qid = _match(file_qid, questions)
        if qid is None:
            unknown_questions.append(file_qid)
            continue
        ranking: Ranking = []
        for docid in docids[:depth]:
            cid = _match(docid, chunk_ids)
            if cid is None:
                cid = docid
                unknown_chunks.setdefault(docid, None)
            ranking.append((cid, scores[(file_qid, docid)]))
        rankings[qid] = ranking
    missing = [q for q in question_ids if q not in rankings]
    return ExternalRun(
        name=name,
        path=path,
        rankings=rankings,
        unknown_chunks=list(unknown_chunks),
        unknown_questions=unknown_questions,
        missing_questions=missing,
        sha256=hashlib.sha256(raw).hexdigest(),
    )
