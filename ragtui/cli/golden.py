"""The golden-set commands: ``check``, ``add-question``, ``agreement`` and ``labels compact``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragtui.cli.output import err, load_workspace, out, print_notices, rich_progress, warn_all
from ragtui.core.analysis.check import check_notes, check_workspace, window_summary
from ragtui.core.analysis.diagnostics import diagnose, histogram_lines
from ragtui.core.errors import InputError
from ragtui.core.labelling.agreement import (
    AnnotatorAgreement,
    RuleAgreement,
    annotator_agreement,
    annotators,
    rule_agreement,
)
from ragtui.core.labelling.authoring import QUESTIONS_FILE, question_key, validate_new_question
from ragtui.core.settings import Settings
from ragtui.core.workspace import Workspace


def _table(rows: Sequence[Sequence[str]], left: Sequence[int] = (0,)) -> str:
    """Columns padded to their widest cell: the ``left`` ones left-aligned, the (numeric) others right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _kappa(value: float | None) -> str:
    return "undefined (a single category on every pair)" if value is None else f"{value:.3f}"


# ---- check ------------------------------------------------------------------------------------------


def print_diagnostics(ws: Workspace) -> None:
    """The information part of ``ragtui check``: ``note:`` lines, the token histogram and a count line (never an exit 1)."""
    diag = diagnose(ws)
    for note in check_notes(ws, diag):
        out(str(note))
    limit = diag.limit
    reads = (
        f"the embedding model reads {limit.content_tokens}: max_seq_length {limit.max_seq_length} "
        f"less {limit.special_tokens} special tokens; '>' marks bins with longer chunks"
        if limit
        else "the model's limit is unknown"
    )
    out(f"chunk token counts ({len(diag.token_counts)} chunks; {reads}):")
    for line in histogram_lines(diag.histogram):
        out(f"  {line}")
    out(
        f"notes: {len(diag.truncated)} of {len(ws.chunks)} chunks longer than the embedding model reads, "
        f"{_count(len(diag.hidden_evidence), 'evidence string')} in a cut-off tail, "
        f"{_count(len(diag.multi_match), 'evidence string')} in several chunks"
    )
    out(window_summary(diag, ws.settings.windows))


# ---- add-question -----------------------------------------------------------------------------------


def run_add_question(
    settings: Settings,
    question: str,
    evidence: Sequence[str],
    slices: Sequence[str],
    qid: str | None,
) -> int:
    """``ragtui add-question``: validate, append to questions.jsonl atomically, and print how every retriever ranks it."""
    ws = load_workspace(settings)
    if ws.settings.beir is not None:
        raise InputError(
            ws.settings.beir,
            "questions can only be added to a --golden folder, not to a BEIR dataset",
        )
    path = Path(ws.settings.golden or "") / QUESTIONS_FILE
    # Refuse bad input before the (possibly slow) embedding; add_question checks again under the lock.
    validate_new_question(
        question,
        evidence,
        slices,
        qid,
        [q.id for q in ws.questions],
        ws.chunks,
        ws.corpus.documents,
        path,
        {question_key(q.text): q.id for q in ws.questions},
    )
    ws.prepare_vectors(rich_progress())
    added = ws.add_question(question, list(evidence), list(slices), qid)
    print_notices(ws)
    path = Path(ws.settings.golden or "") / QUESTIONS_FILE
    q = added.question
    out(f"{path}:{q.line}: added {q.id}; relevant (evidence): {', '.join(added.relevant_chunks)}")
    k = ws.settings.k
    rows = [("retriever", "first relevant rank", f"recall@{k}", f"nDCG@{k}", "top 3")]
    for name, ranking in added.rankings.items():
        m = added.metrics[name]
        rank = str(m.first_relevant_rank) if m.first_relevant_rank is not None else "-"
        top = ", ".join(cid for cid, _ in ranking[:3])
        rows.append((name, rank, f"{m.recall:.3f}", f"{m.ndcg:.3f}", top))
    out(_table(rows, left=(0, 4)))
    return 0


# ---- agreement --------------------------------------------------------------------------------------


def format_rule_agreement(result: RuleAgreement, source: str) -> list[str]:
    """The evidence-rule section of ``ragtui agreement``."""
    rule = "evidence match" if source == "evidence" else f"qrels grade >= {result.threshold}"
    lines = [
        (
            f"{source} rule against hand grades: {result.pairs} hand-graded pairs that apply "
            f"(relevant = grade >= {result.threshold})"
        )
    ]
    if not result.pairs:
        return [*lines, "  no hand grades yet"]
    header = ["", *(f"grade {g}" for g in result.grades)]
    rows = [
        header,
        [rule, *map(str, result.row(True))],
        [f"no {rule}", *map(str, result.row(False))],
    ]
    lines += ["  " + line for line in _table(rows).splitlines()]
    lines.append(
        f"Cohen's kappa (binary): {_kappa(result.kappa)}; observed agreement {result.observed:.3f}"
    )
    lines.append(f"disagreements to review: {len(result.disagreements)}")
    for d in result.disagreements:
        who = f" ({d.annotator})" if d.annotator else ""
        lines.append(f"  {d.question} {d.chunk}: grade {d.hand_grade}, {d.kind}{who}")
    return lines


def format_annotator_agreement(result: AnnotatorAgreement) -> list[str]:
    """The two-annotator section of ``ragtui agreement --annotators A B``."""
    a, b = result.a or "(unnamed)", result.b or "(unnamed)"
    lines = [
        f"{a} against {b}: {result.pairs} pairs graded by both "
        f"({result.only_a} only by {a}, {result.only_b} only by {b}"
        + (
            f", {result.changed_text} left out: the chunk text changed between their labels"
            if result.changed_text
            else ""
        )
        + ")"
    ]
    if not result.pairs:
        return lines
    header = [f"{a} \\ {b}", *(f"{g}" for g in result.grades)]
    rows = [header] + [
        [f"grade {ga}", *(str(result.table.get((ga, gb), 0)) for gb in result.grades)]
        for ga in result.grades
    ]
    lines += ["  " + line for line in _table(rows).splitlines()]
    lines.append(
        f"Cohen's kappa (binary, grade >= {result.threshold}): {_kappa(result.kappa)}; "
        f"weighted kappa (quadratic, on grades): {_kappa(result.weighted_kappa)}; same grade on {result.observed:.3f}"
    )
    lines.append(f"disagreements: {len(result.disagreements)}")
    for q, c, ga, gb in result.disagreements:
        lines.append(f"  {q} {c}: {a} {ga}, {b} {gb}")
    return lines


def run_agreement(settings: Settings, pair: Sequence[str] | None) -> int:
    """``ragtui agreement [--annotators A B]``: the evidence rule against hand grades, and optionally two annotators."""
    ws = load_workspace(settings)
    names = annotators(ws.labels.history)
    if pair is not None:
        missing = [n for n in pair if n not in names]
        if missing:
            known = ", ".join(n or "(unnamed)" for n in names) or "none"
            raise InputError(
                ws.labels.path, f"no labels by {', '.join(missing)} (annotators: {known})"
            )
    for line in format_rule_agreement(rule_agreement(ws), ws.base_source):
        out(line)
    listed = ", ".join(f"{n or '(unnamed)'} ({c} pairs)" for n, c in names.items()) or "none"
    out(f"annotators: {listed}")
    if pair is not None:
        result = annotator_agreement(ws.labels.history, pair[0], pair[1], ws.settings.threshold)
        for line in format_annotator_agreement(result):
            out(line)
    return 0


def run_check(settings: Settings) -> int:
    """``ragtui check``: print every problem; exit 1 if there is any."""
    ws = load_workspace(settings)
    problems = check_workspace(ws)
    for problem in problems:
        out(str(problem))
    print_diagnostics(ws)
    ev = ws.evaluation
    assert ev is not None
    relevant_counts = [
        sum(1 for g in ws.effective_grades(q.id).values() if g >= ws.settings.threshold)
        for q in ws.questions
    ]
    out(
        f"{len(ws.corpus.documents)} documents, {len(ws.chunks)} chunks, {len(ws.questions)} questions "
        f"({sum(1 for n in relevant_counts if n == 1)} with one relevant chunk, "
        f"{sum(1 for n in relevant_counts if n > 1)} with several, {sum(1 for n in relevant_counts if n == 0)} with none); "
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    )
    return 1 if problems else 0


def run_labels_compact(settings: Settings) -> int:
    """``ragtui labels compact``: rewrite the journal to one line per labelled pair, keeping a backup."""
    from ragtui.core.data.paths import writable_golden
    from ragtui.core.labelling.journal import LabelJournal

    golden = settings.resolved().golden
    assert golden is not None
    if not (Path(golden) / "labels.jsonl").is_file():
        raise InputError(Path(golden) / "labels.jsonl", "file not found")
    golden, made = writable_golden(golden)
    if made:
        err(f"ragtui: the bundled golden set is never written: copied it to {golden}")
    journal = LabelJournal(Path(golden) / "labels.jsonl", settings.annotator)
    warn_all(journal.warnings)
    lines_before = len(journal.history)
    backup = journal.compact()
    out(
        f"{journal.path}: {lines_before} line{'s' if lines_before != 1 else ''} -> {len(journal.history)} "
        f"(one per labelled pair; stale labels kept); backup: {backup}"
    )
    return 0
