"""One factory per report screen: called on the UI thread with the live workspace, returns the screen.

A factory reads the workspace at once, on the UI thread. A cheap report is made right here; a slow
one (compare: 10,000 permutations per measure; diagnostics: token counting) gets immutable inputs
captured here (the two systems, tuples of chunks and questions), so its worker never reads the
workspace that the app keeps changing (grades, label polling, re-chunking).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from ragtui.core.analysis.attribution import explain_hybrid, explain_rerank, pool_ceilings
from ragtui.core.analysis.check import check_workspace
from ragtui.core.analysis.curve import recall_curves
from ragtui.core.analysis.reports import (
    agreement_report,
    annotator_pairs,
    check_report,
    explain_report,
    rerank_explanation_report,
    slices_report,
)
from ragtui.core.analysis.why import WhyIndex, why_question_report
from ragtui.core.errors import InputError
from ragtui.core.labelling.agreement import annotators
from ragtui.core.labelling.authoring import QUESTIONS_FILE
from ragtui.core.metrics.measures import default_measures, system_from_workspace
from ragtui.core.report_model import Report, text_section
from ragtui.core.workspace import Workspace
from ragtui.tui.screens.agreement import AgreementScreen
from ragtui.tui.screens.compare import CompareScreen
from ragtui.tui.screens.curve import CurveScreen
from ragtui.tui.screens.diagnostics import DiagnosticsInputs, DiagnosticsScreen
from ragtui.tui.screens.dialogs import ProblemsScreen
from ragtui.tui.screens.explain import ExplainScreen
from ragtui.tui.screens.report import message_report
from ragtui.tui.screens.slices import SlicesScreen

__all__ = [
    "agreement_screen",
    "check_screen",
    "compare_screen",
    "curve_screen",
    "diagnostics_screen",
    "explain_screen",
    "slices_screen",
]


def explain_screen(ws: Workspace, qid: str, why: WhyIndex | None = None) -> ExplainScreen:
    """Hybrid attribution of question ``qid`` (cheap: two lists of depth entries per question), the
    reranked list when there is one, and (with ``why``) the cause of every miss of the question."""
    try:
        expl = explain_hybrid(ws, qid)
        report = explain_report(ws.questions.by_id[qid].text, expl, pool_ceilings(ws))
    except InputError as exc:
        report = message_report(f"hybrid attribution · {qid}", exc.message, "bad")
    sections = list(report.sections)
    reranked = explain_rerank(ws, qid)
    if reranked is not None:
        extra = rerank_explanation_report(reranked)
        sections += [text_section(heading=extra.title), *extra.sections]
    if why is not None:
        causes = why_question_report(why.question(qid), ws.settings.k, ws.settings.depth)
        sections += [text_section(heading="why it missed"), *causes.sections]
    return ExplainScreen(Report(report.title, tuple(sections)))


def compare_screen(ws: Workspace, a: str, b: str) -> CompareScreen:
    """``b`` against ``a``: their two systems are captured now (not every retriever's: with many
    retrievers and questions that took the key's whole frame); another retriever's is captured on
    the UI thread when ``a`` or ``b`` cycles to it."""
    systems = {name: system_from_workspace(ws, name) for name in dict.fromkeys((a, b))}
    return CompareScreen(
        systems,
        a,
        b,
        default_measures(ws.settings.k),
        names=list(ws.retrievers),
        capture=partial(system_from_workspace, ws),
    )


def curve_screen(ws: Workspace, question_ids: Sequence[str] | None = None) -> CurveScreen:
    """Recall@k curves over ``question_ids`` (None: every evaluated question)."""
    curves = recall_curves(ws, questions=question_ids)
    scope = (
        "every evaluated question"
        if question_ids is None
        else f"{len(question_ids)} filtered questions"
    )
    return CurveScreen(curves, scope)


def slices_screen(ws: Workspace) -> SlicesScreen:
    """Every metric per slice, with the question counts."""
    return SlicesScreen(slices_report(ws))


def agreement_screen(ws: Workspace) -> AgreementScreen:
    """The evidence rule against the hand grades, and every pair of annotators compared."""
    pairs = annotator_pairs(list(annotators(ws.grades.labels.history)))
    return AgreementScreen(agreement_report(ws, pairs))


def diagnostics_screen(ws: Workspace) -> DiagnosticsScreen:
    """The chunking diagnostics, computed in a worker from the chunks and questions as they are now."""
    settings = ws.settings
    inputs = DiagnosticsInputs(
        model=settings.model,
        chunk_size=settings.chunk_size,
        overlap=settings.overlap,
        questions_file=Path(settings.golden or "") / QUESTIONS_FILE,
        chunks=tuple(ws.data.chunks),
        questions=tuple(ws.questions),
        documents=tuple(ws.data.corpus.documents),
        windows=settings.windows,
        window_stride=settings.window_stride,
    )
    return DiagnosticsScreen(inputs)


def check_screen(ws: Workspace) -> ProblemsScreen:
    """What ``ragtui check`` reports: evidence in no chunk, stale labels, and the counts."""
    return ProblemsScreen(check_report(ws, check_workspace(ws)))
