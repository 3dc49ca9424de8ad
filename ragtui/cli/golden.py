"""The golden-set commands: ``check``, ``add-question``, ``agreement`` and ``labels compact``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragtui.cli.output import (
    err,
    load_workspace,
    out,
    print_json,
    print_notices,
    print_report,
    rich_progress,
    warn_all,
)
from ragtui.core.analysis.check import check_workspace
from ragtui.core.analysis.diagnostics import diagnose
from ragtui.core.analysis.reports import (
    added_question_report,
    agreement_report,
    check_report,
    diagnostics_report,
)
from ragtui.core.errors import InputError
from ragtui.core.judges.agreement import agreement_json, judge_agreements, judge_names
from ragtui.core.labelling.agreement import annotators
from ragtui.core.labelling.authoring import QUESTIONS_FILE, question_key, validate_new_question
from ragtui.core.labelling.labels import MODEL_PREFIX, is_model_annotator
from ragtui.core.settings import Settings

# ---- add-question -----------------------------------------------------------------------------------


def run_retire(settings: Settings, qid: str, restore: bool = False) -> int:
    """``ragtui retire QID [--restore]``: mark a question retired (or not) in questions.jsonl."""
    ws = load_workspace(settings)
    question = ws.questions.by_id.get(qid)
    if question is None:
        raise InputError(Path(ws.settings.golden or "") / QUESTIONS_FILE, f"no question {qid!r}")
    if question.retired != restore:
        out(f"{qid} is {'not ' if restore else 'already '}retired: nothing changed")
        return 0
    ws.set_retired(qid, not restore)
    print_notices(ws)
    out(
        f"{qid} is back in the metrics"
        if restore
        else f"{qid} retired: left out of every mean, kept in questions.jsonl"
    )
    return 0


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
        ws.data.chunks,
        ws.data.corpus.documents,
        path,
        {question_key(q.text): q.id for q in ws.questions},
    )
    ws.prepare_vectors(rich_progress())
    added = ws.add_question(question, list(evidence), list(slices), qid)
    print_notices(ws)
    path = Path(ws.settings.golden or "") / QUESTIONS_FILE
    print_report(added_question_report(added, path, ws.settings.k))
    return 0


# ---- agreement --------------------------------------------------------------------------------------


def run_agreement(
    settings: Settings,
    pair: Sequence[str] | None,
    judge: str | None = None,
    as_json: bool = False,
) -> int:
    """``ragtui agreement [--annotators A B] [--judge NAME] [--json]``: the evidence rule against
    hand grades, optionally two annotators, then each model judge against the rule and the people
    (``--json``: the judges' part only)."""
    if as_json and pair is not None:
        raise InputError(None, "--annotators: --json holds the model judges' agreement only")
    ws = load_workspace(settings)
    names = annotators(ws.grades.labels.history)
    if pair is not None:
        judged = [n for n in pair if is_model_annotator(n)]
        if judged:
            raise InputError(
                None,
                f"--annotators: {judged[0]} is a model judge, not a person; its agreement with "
                f"the people is in the judges' tables (--judge {judged[0][len(MODEL_PREFIX) :]})",
            )
        missing = [n for n in pair if n not in names]
        if missing:
            known = ", ".join(n or "(unnamed)" for n in names) or "none"
            raise InputError(
                ws.grades.labels.path, f"no labels by {', '.join(missing)} (annotators: {known})"
            )
    if judge is not None:
        if is_model_annotator(judge):
            judge = judge[len(MODEL_PREFIX) :]
        known_judges = judge_names(ws)
        if judge not in known_judges:
            listed = ", ".join(known_judges) or "none (ragtui judge writes them)"
            raise InputError(
                ws.grades.labels.path, f"no verdicts by judge {judge!r} (judges: {listed})"
            )
    agreements = judge_agreements(ws, judge)
    if as_json:
        print_json(agreement_json(ws, agreements))
        return 0
    print_report(agreement_report(ws, [(pair[0], pair[1])] if pair is not None else [], agreements))
    return 0


#: ``ragtui check`` lists this many long chunks (the longest) and cut-off tails unless ``--verbose``.
CHECK_LISTED = 10


def run_check(settings: Settings, *, verbose: bool = False) -> int:
    """``ragtui check``: print every problem; exit 1 if there is any. The chunking diagnostics above
    them list the ten longest chunks the model does not read whole (``verbose``: every one)."""
    ws = load_workspace(settings)
    problems = check_workspace(ws)
    settings = ws.settings
    diagnostics = diagnostics_report(
        diagnose(ws),
        chunk_size=settings.chunk_size,
        overlap=settings.overlap,
        questions_file=Path(settings.golden or "") / QUESTIONS_FILE,
        windows=settings.windows,
        longest=None if verbose else CHECK_LISTED,
    )
    print_report(diagnostics)
    out()
    print_report(check_report(ws, problems))
    return 1 if problems else 0


def run_labels_compact(settings: Settings) -> int:
    """``ragtui labels compact``: rewrite the journal to each annotator's current label per pair, keeping a new backup."""
    from ragtui.core.data.paths import writable_golden
    from ragtui.core.labelling.journal import LabelJournal, check_regular

    golden = settings.resolved().golden
    assert golden is not None
    if not check_regular(Path(golden) / "labels.jsonl"):
        raise InputError(Path(golden) / "labels.jsonl", "file not found")
    golden, made = writable_golden(golden)
    if made:
        err(f"ragtui: the bundled golden set is never written: copied it to {golden}")
    journal = LabelJournal(Path(golden) / "labels.jsonl", settings.annotator)
    if not journal.bad_lines:  # else the compaction refuses with one line naming the first
        warn_all(journal.take_warnings())
    lines_before = len(journal.history)
    backup = journal.compact()
    if backup is None:
        out(
            f"{journal.path}: already compact ({_lines(lines_before)}); nothing changed, no backup made"
        )
        return 0
    out(
        f"{journal.path}: {_lines(lines_before)} -> {len(journal.history)} "
        f"(each annotator's current label per pair and the adjudicated one; stale labels kept); "
        f"backup: {backup}"
    )
    return 0


def _lines(n: int) -> str:
    return f"{n} line{'s' if n != 1 else ''}"
