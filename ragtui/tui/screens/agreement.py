"""Agreement views: the evidence rule against the hand grades, annotators against each other, and the
chunking diagnostics (issue 8)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.message import Message

from ragtui.core.analysis.diagnostics import ChunkDiagnostics, diagnose, histogram_lines
from ragtui.core.labelling.agreement import annotator_agreement, annotators, rule_agreement
from ragtui.core.workspace import Workspace
from ragtui.tui.screens.report import ReportScreen
from ragtui.tui.widgets.text import fmt


def _kappa(value: float | None) -> str:
    """Kappa with three decimals, or n/a when undefined (one class only)."""
    return "n/a" if value is None else fmt(value)


def agreement_text(ws: Workspace) -> Text:
    """Confusion table and kappa of the evidence rule against the hand grades, the disagreements, and annotator pairs."""
    rule = rule_agreement(ws)
    out = Text()
    out.append(f"evidence rule against hand grades · {rule.pairs} hand-graded pairs\n\n", "bold")
    out.append(" " * 18 + "".join(f"grade {g}".rjust(9) for g in rule.grades) + "\n", "bold")
    for match, label in ((True, "contains evidence"), (False, "no evidence")):
        out.append(label.ljust(18) + "".join(str(v).rjust(9) for v in rule.row(match)) + "\n")
    out.append(
        f"\nCohen's kappa {_kappa(rule.kappa)} (relevant = grade >= {rule.threshold}) · "
        f"observed agreement {fmt(rule.observed)}\n"
    )
    out.append(f"\ndisagreements to review ({len(rule.disagreements)}):\n", "bold")
    if not rule.disagreements:
        out.append("  none\n", "dim")
    for d in rule.disagreements:
        out.append(f"  {d.question} {d.chunk} grade {d.hand_grade} by {d.annotator}: {d.kind}\n")
    names = annotators(ws.labels.history)
    out.append(
        f"\nannotators: {', '.join(f'{n} ({c})' for n, c in names.items()) or 'none'}\n", "bold"
    )
    people = list(names)
    for i, a in enumerate(people):
        for b in people[i + 1 :]:
            pair = annotator_agreement(ws.labels.history, a, b, ws.settings.threshold)
            out.append(
                f"  {a} vs {b}: {pair.pairs} shared pairs, kappa {_kappa(pair.kappa)}, "
                f"weighted kappa {_kappa(pair.weighted_kappa)}, same grade {fmt(pair.observed)}, "
                f"{len(pair.disagreements)} differ\n"
            )
            for qid, cid, ga, gb in pair.disagreements:
                out.append(f"    {qid} {cid}: {a} {ga}, {b} {gb}\n", "dim")
    if len(people) < 2:
        out.append("  (two annotators needed to compare; labels carry --annotator)\n", "dim")
    return out


class AgreementScreen(ReportScreen):
    """The agreement report."""

    report_title = "agreement"

    def __init__(self, ws: Workspace) -> None:
        """The report of ``ws``'s labels."""
        super().__init__(id="agreement")
        self.ws = ws

    def on_mount(self) -> None:
        """Compute (cheap: one pass over the hand labels) and show."""
        self.set_body(agreement_text(self.ws))


def diagnostics_text(ws: Workspace, diagnostics: ChunkDiagnostics) -> Text:
    """Every chunking diagnostic, as ``ragtui check`` reports it, plus the histogram."""
    d = diagnostics
    out = Text()
    settings = ws.settings
    out.append(
        f"chunk size {settings.chunk_size or 'whole documents'} · overlap {settings.overlap} · {len(ws.chunks)} chunks\n",
        "bold",
    )
    if d.limit is not None:
        out.append(
            f"the model reads {d.limit.content_tokens} tokens of text ({d.limit.max_seq_length} with "
            f"{d.limit.special_tokens} special tokens, from {d.limit.source})\n"
        )
    out.append(f"\nstraddling a chunk boundary ({len(d.straddling)}):\n", "bold")
    for s in d.straddling:
        pairs = "; ".join(" + ".join(p) for p in s.pairs) or "more than two chunks"
        out.append(f"  {s.question} (line {s.line}): {s.evidence!r} spans {pairs}\n")
    out.append(f"\nevidence in several chunks ({len(d.multi_match)}):\n", "bold")
    for m in d.multi_match:
        out.append(f"  {m.question}: {m.evidence!r} in {', '.join(m.chunks)}\n")
    out.append(f"\nchunks longer than the model reads ({len(d.truncated)}):\n", "bold")
    for t in d.truncated:
        out.append(
            f"  {t.chunk}: {t.token_count} tokens, {t.hidden_tokens} never seen by vector search\n"
        )
    out.append(f"\nevidence in a cut-off tail ({len(d.hidden_evidence)}):\n", "bold")
    for h in d.hidden_evidence:
        out.append(
            f"  {h.question} {h.chunk}: {'wholly' if h.wholly_hidden else 'partly'} hidden\n"
        )
    out.append("\nchunk token counts (> marks bins over the model's limit):\n", "bold")
    for line in histogram_lines(d.histogram):
        out.append("  " + line + "\n")
    out.append(
        "\nctrl+p, chunking: set size and overlap to re-chunk (hand labels of vanished chunks stay, as stale).",
        "dim",
    )
    return out


class DiagnosticsScreen(ReportScreen):
    """The chunking diagnostics, computed in a worker (token counting loads a tokenizer)."""

    report_title = "chunking diagnostics"

    @dataclass
    class Ready(Message):
        """The diagnostics are computed."""

        diagnostics: ChunkDiagnostics | None
        error: str = ""

    def __init__(self, ws: Workspace) -> None:
        """The diagnostics of ``ws``."""
        super().__init__(id="diagnostics")
        self.ws = ws
        self.diagnostics: ChunkDiagnostics | None = None

    def on_mount(self) -> None:
        """Start the worker."""
        self._compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="diagnostics")
    def _compute(self) -> None:
        """Diagnose off the UI thread; post the result."""
        try:
            self.post_message(self.Ready(diagnose(self.ws)))
        except Exception as exc:
            self.post_message(self.Ready(None, f"{type(exc).__name__}: {exc}"))

    def on_diagnostics_screen_ready(self, message: Ready) -> None:
        """Show the diagnostics."""
        self.diagnostics = message.diagnostics
        if message.diagnostics is None:
            self.set_body(Text(f"diagnostics failed: {message.error}"))
        else:
            self.set_body(diagnostics_text(self.ws, message.diagnostics))
