"""The report as Markdown (for a pull request or a wiki) or as one self-contained HTML page with an SVG plot.

Text from files is data here too: every cell, heading and note has its control characters made
visible (``ragtui.core.text``) and is then escaped for the format, so a question or a slice name can
neither break a table nor inject markup. The HTML page loads nothing (its Content-Security-Policy
forbids it) and needs no JavaScript.
"""

from __future__ import annotations

import html
import re

from ragtui.core.analysis.full_report import CURVE_HEADING, FullReport
from ragtui.core.report_model import Report, Section
from ragtui.core.text import visible, visible_line

# ---- Markdown -----------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|<>#~])")


def md_escape(text: str) -> str:
    """One line of text for Markdown: controls made visible, markup characters backslash-escaped."""
    flat = visible_line(text).replace("&", "&amp;")
    escaped = _MD_SPECIAL.sub(r"\\\1", flat)
    # A line that starts like a list item or is a heading underline would change the layout
    # (``#`` and ``>`` are escaped everywhere already); numbers such as -1.40 or 1.000 are not.
    escaped = re.sub(r"^([-+*]|\d+[.)])(?=\s)", r"\\\1", escaped)
    return re.sub(r"^(=+|-+)$", r"\\\1", escaped)


def _md_section(section: Section) -> list[str]:
    lines: list[str] = []
    if section.heading:
        lines += [f"## {md_escape(section.heading)}", ""]
    if section.has_table:
        lines.append("| " + " | ".join(md_escape(c.title) for c in section.columns) + " |")
        lines.append(
            "|" + "|".join("---:" if c.align == "right" else "---" for c in section.columns) + "|"
        )
        for row in section.rows:
            cells = [md_escape(cell) for cell in row.cells]
            if row.tone == "bad":
                cells = [f"**{c}**" if c else c for c in cells]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    for note in section.notes:
        lines += [md_escape(note.text), ""]
    return lines


def to_markdown(full: FullReport) -> str:
    """The report as GitHub-flavoured Markdown: a title, then each section's table and notes."""
    lines = [f"# {md_escape(full.report.title)}", ""]
    for section in full.report.sections:
        lines += _md_section(section)
    return "\n".join(lines).rstrip() + "\n"


# ---- HTML ---------------------------------------------------------------------------------------

#: Colour-blind-safe line colours (Okabe and Ito), one per retriever in order.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 72rem; padding: 0 1rem; color: #1b1f23; background: #fff; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #d0d7de; padding: .25rem .75rem; text-align: left; }
th { background: #f6f8fa; }
td.num, th.num { text-align: right; }
tr.good td { color: #116329; } tr.bad td { color: #b42318; font-weight: 600; }
tr.dim td { color: #6e7781; } tr.strong td { font-weight: 600; } tr.warning td { color: #9a6700; }
p.note { color: #57606a; margin: .25rem 0; }
svg text { font-family: system-ui, sans-serif; font-size: 12px; fill: #1b1f23; }
"""


def esc(text: str) -> str:
    """Text for HTML: control characters made visible, then ``&``, ``<``, ``>`` and quotes escaped."""
    return html.escape(visible(text), quote=True)


def _html_section(section: Section, figure: str = "") -> list[str]:
    parts: list[str] = ["<section>"]
    if section.heading:
        parts.append(f"<h2>{esc(section.heading)}</h2>")
    if figure:
        parts.append(figure)
    if section.has_table:
        parts.append("<table>")
        head = "".join(
            f"<th{' class=num' if c.align == 'right' else ''}>{esc(c.title)}</th>"
            for c in section.columns
        )
        parts.append(f"<thead><tr>{head}</tr></thead><tbody>")
        for row in section.rows:
            cells = "".join(
                f"<td{' class=num' if col.align == 'right' else ''}>{esc(cell)}</td>"
                for cell, col in zip(row.cells, section.columns, strict=True)
            )
            tone = f' class="{row.tone}"' if row.tone else ""
            parts.append(f"<tr{tone}>{cells}</tr>")
        parts.append("</tbody></table>")
    for note in section.notes:
        parts.append(f'<p class="note">{esc(note.text)}</p>')
    parts.append("</section>")
    return parts


def curve_svg(
    curves: dict[str, list[float]],
    baseline: dict[str, list[float]] | None = None,
    baseline_name: str | None = None,
    k: int | None = None,
    width: int = 640,
    height: int = 360,
) -> str:
    """The recall@k curves as an inline SVG: one line per retriever, the baseline's dashed, k marked."""
    baseline = baseline or {}
    left, right, top, bottom = 56, 160, 20, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    depth = max((len(v) for v in [*curves.values(), *baseline.values()]), default=1)
    depth = max(depth, 1)

    def x(k_value: float) -> float:
        return left + (plot_w * (k_value - 1) / (depth - 1) if depth > 1 else plot_w / 2)

    def y(recall: float) -> float:
        return top + plot_h * (1.0 - min(max(recall, 0.0), 1.0))

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" aria-labelledby="curve-title">'
        ),
        '<title id="curve-title">Recall@k curve</title>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#d0d7de"/>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        ty = y(tick)
        parts.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" stroke="#eaeef2"/>'
        )
        parts.append(f'<text x="{left - 8}" y="{ty + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    step = max(1, depth // 10)
    for k_value in range(1, depth + 1, step):
        parts.append(
            f'<text x="{x(k_value):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{k_value}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">k (cut-off)</text>'
    )
    parts.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">mean recall@k</text>'
    )
    if k is not None and 1 <= k <= depth:
        kx = x(k)
        parts.append(
            f'<line x1="{kx:.1f}" y1="{top}" x2="{kx:.1f}" y2="{top + plot_h}" stroke="#8c959f" stroke-dasharray="2 3"/>'
        )
        parts.append(f'<text x="{kx + 4:.1f}" y="{top + 12}">k={k}</text>')
    legend_y = top + 8
    for i, (name, values) in enumerate(curves.items()):
        colour = PALETTE[i % len(PALETTE)]
        for label, series, dash in (
            (name, values, ""),
            (f"{name} ({baseline_name})", baseline.get(name), ' stroke-dasharray="6 4"'),
        ):
            if not series:
                continue
            points = " ".join(f"{x(j + 1):.1f},{y(v):.1f}" for j, v in enumerate(series))
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{points}">'
                f"<title>{esc(label)}</title></polyline>"
            )
            if not dash:
                for j, v in enumerate(series):
                    parts.append(
                        f'<circle cx="{x(j + 1):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}">'
                        f"<title>{esc(name)}: recall@{j + 1} = {v:.3f}</title></circle>"
                    )
            lx = left + plot_w + 12
            parts.append(
                f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 24}" y2="{legend_y}" stroke="{colour}" stroke-width="2"{dash}/>'
            )
            parts.append(f'<text x="{lx + 30}" y="{legend_y + 4}">{esc(label)}</text>')
            legend_y += 18
    parts.append("</svg>")
    return "\n".join(parts)


def to_html(full: FullReport) -> str:
    """The report as one HTML page: tables, notes and the recall@k plot inline; nothing loaded from anywhere."""
    report: Report = full.report
    body: list[str] = [f"<h1>{esc(report.title)}</h1>"]
    for section in report.sections:
        figure = ""
        if section.heading == CURVE_HEADING:
            figure = curve_svg(full.curves, full.baseline_curves, full.baseline, full.k)
        body += _html_section(section, figure)
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # Nothing may be fetched: no scripts, fonts, images or styles from anywhere.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(report.title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
    ]
    return "\n".join([*head, *body, "</body>", "</html>"]) + "\n"


def render(full: FullReport, fmt: str) -> str:
    """The report in ``fmt`` (``markdown`` or ``html``)."""
    if fmt == "markdown":
        return to_markdown(full)
    if fmt == "html":
        return to_html(full)
    raise ValueError(f"unknown format {fmt!r}")
