"""TREC export: qrels of the effective grades and one run per retriever, readable by trec_eval.

Retired questions are left out of every file, as ``ragtui eval`` leaves them out of every mean, so
trec_eval averages over the questions ``eval`` does (those with a judgement among the rest)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from ragtui.core.data.golden import Question
from ragtui.core.errors import InputError
from ragtui.core.files import check_writable, write_atomic
from ragtui.core.workspace import Workspace

#: Characters left as they are in TREC ids; white space and '%' are percent-encoded.
_SAFE = "/#:@!$&'()*+,;=-._~[]"


def trec_id(identifier: str) -> str:
    """An id safe for whitespace-separated TREC files (reversible with ``urllib.parse.unquote``)."""
    return quote(identifier, safe=_SAFE)


def exported_questions(ws: Workspace) -> list[Question]:
    """The questions the export writes: every question but the retired ones, in golden-set order."""
    return [q for q in ws.questions if not q.retired]


def qrels_lines(ws: Workspace, retriever: str | None = None) -> list[str]:
    """``qid 0 docid grade`` for every judged pair the metrics use: chunks (evidence rule or qrels,
    then hand grades) or, at document level, documents; with ``retriever``, those its own passages
    add for it (a live retriever's passages that ragtui does not hold). Retired questions are left
    out."""
    lines = []
    first_chunk: dict[str, int] = {}
    for c in ws.data.chunks:
        first_chunk.setdefault(c.doc, ws.passages.order[c.id])
    ev = ws.evaluation
    for q in exported_questions(ws):
        if retriever is not None and ev is not None and q.id in ev.rankings.get(retriever, {}):
            if q.id not in ev.evaluated:
                continue  # skipped by every mean (no judgement on ragtui's chunks), as in eval
            grades = dict(ev.gains_for(retriever, q.id))
            # ragtui's other judged chunks at grade 0: the question stays judged (trec_eval averages
            # over the questions with a judgement, as eval does) and no measure moves.
            for cid in ws.grades.evaluation_grades(q.id):
                grades.setdefault(cid, 0)
        else:
            grades = ws.grades.evaluation_grades(q.id)
        for cid in sorted(
            grades,
            key=lambda c: ws.passages.order.get(c, first_chunk.get(c, len(ws.passages.order))),
        ):
            lines.append(f"{trec_id(q.id)} 0 {trec_id(cid)} {grades[cid]}")
    return lines


def run_lines(ws: Workspace, name: str) -> list[str]:
    """``qid Q0 docid rank score tag`` for one retriever, as the metrics read it; scores are the
    ranks turned into strictly decreasing numbers. Retired questions are left out."""
    lines = []
    depth = ws.settings.depth
    for q in exported_questions(ws):
        ranking = ws.grades.evaluated_ranking(ws.ranking(name, q.id))
        for rank, (cid, _) in enumerate(ranking, start=1):
            lines.append(
                f"{trec_id(q.id)} Q0 {trec_id(cid)} {rank} {depth - rank + 1} ragtui-{name}"
            )
    return lines


def export_claims(ws: Workspace) -> str:
    """Which of ``ragtui eval``'s numbers trec_eval (or pytrec_eval) gives back from the exported
    files, and which it cannot: one line."""
    ev = ws.evaluation
    k, threshold = ws.settings.k, ws.settings.threshold
    level = f" -l {threshold}" if threshold != 1 else ""
    measures = f"P_{k}, recip_rank and ndcg_cut_{k}"
    own = [] if ev is None else [n for n in ws.retrievers if n in ev.own]
    against = (
        f" ({', '.join(own)} against qrels-NAME.trec: {'its' if len(own) == 1 else 'their'} own passages)"
        if own
        else ""
    )
    if ev is not None and ev.units is not None:
        return (
            f"trec_eval{level} on these files gives eval's precision@{k}, MRR and nDCG@{k} "
            f"({measures}) for every retriever{against}; not recall@{k}: the table is "
            "evidence-level and evidence recall is no TREC measure (ragtui eval --json has it "
            "per question)"
        )
    return (
        f"trec_eval{level} on these files gives eval's recall@{k}, precision@{k}, MRR and "
        f"nDCG@{k} (recall_{k}, {measures}) for every retriever{against}"
    )


def export_trec(ws: Workspace, folder: str | Path) -> list[Path]:
    """Write ``qrels.trec`` and ``<retriever>.trec`` into ``folder`` (and ``qrels-<retriever>.trec``
    for a live retriever judged with passages of its own); returns the files written."""
    out = Path(folder)
    files: list[tuple[str, list[str]]] = [("qrels.trec", qrels_lines(ws))]
    for name in ws.retrievers:
        files.append((f"{name}.trec", run_lines(ws, name)))
        if ws.evaluation is not None and name in ws.evaluation.own:
            # Its own passages are judged for it alone: trec_eval scores it against these.
            files.append((f"qrels-{name}.trec", qrels_lines(ws, name)))
    names = [filename for filename, _ in files]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        # A retriever named ``qrels`` (or ``qrels-NAME`` beside NAME) would overwrite another file.
        raise InputError(
            out, f"two exports would be written to {', '.join(clash)}: rename a retriever"
        )
    check_writable(out, "export folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(out, f"cannot make the export folder ({exc.strerror or exc})") from None
    written = []
    for filename, lines in files:
        path = out / filename
        try:
            # Atomic: a full disk leaves the old file (or none), never a truncated one.
            write_atomic(path, "".join(line + "\n" for line in lines).encode("utf-8"))
        except OSError as exc:
            raise InputError(path, f"cannot write the file ({exc.strerror or exc})") from None
        written.append(path)
    return written
