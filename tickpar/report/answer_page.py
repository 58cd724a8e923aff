"""The answer page drawn: page 1 of the PDF (titled "Answer") and ``answer.html``, the HTML report's first entry.

The numbers come from :mod:`tickpar.report.answer`; this module only lays them out.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd

from tickpar.report.layout import html_page, html_table

__all__ = ["LEGEND", "TITLE", "answer_html", "answer_pdf", "finding_lines"]

TITLE = "Answer"
#: Characters per line of each column's cells (the PDF table wraps its text to these widths).
_WRAP = {"scope": 14, "strategy variant": 28, "correct?": 22, "why": 42}
_WRAP_DEFAULT = 16
_WRAP_MODEL = 27  # the model columns' width (their text is the longest)
#: The "why" column in the PDF (the CSV and the HTML keep it whole).
_WHY_PDF = 80
_LANDSCAPE = (11.69, 8.27)
#: How to read the table's cells (under it in the PDF, above it in the HTML).
LEGEND = (
    "Speedups: the best loop speedup (the strategy's execution alone) of a counted cell at 2 workers against the "
    "same engine's sequential run, [95% interval], and the workload it was measured on. Break-even: the work per "
    "event (µs) at which the speedup crosses 1 (≈ interpolated, < below the smallest value swept, > beyond the "
    "largest). Model: predicted speedup at 16 and 64 workers on the shape nearest the engine's representative work, "
    "with its median error over the measured points it was not fitted on (work_us >= 10 where there are such points) "
    "and the worker range they cover."
)


def finding_lines(found: Sequence[tuple[str, str]]) -> list[str]:
    """``1. sentence (page: name)``, ranked."""
    return [f"{i}. {text} (page: {page})" for i, (text, page) in enumerate(found, 1)]


def _width(column: str) -> int:
    return _WRAP.get(column, _WRAP_MODEL if "model" in column else _WRAP_DEFAULT)


def _wrapped(table: pd.DataFrame) -> tuple[list[list[str]], list[str], list[int]]:
    """Cell texts wrapped to their column's width, the wrapped headers, and each row's line count."""
    cols = list(table.columns)
    widths = [_width(c) - 3 for c in cols]  # the cell's padding
    header = ["\n".join(textwrap.wrap(c, w)) for c, w in zip(cols, widths, strict=True)]
    cells = [
        ["\n".join(textwrap.wrap(str(v), w, break_on_hyphens=False) or [""]) for v, w in zip(row, widths, strict=True)]
        for row in table.astype(str).values.tolist()
    ]
    lines = [max(t.count("\n") + 1 for t in row) for row in [header, *cells]]
    return cells, header, lines


def answer_pdf(table: pd.DataFrame, found: Sequence[tuple[str, str]], subtitle: str = "") -> plt.Figure:
    """The answer page: the table, then the ranked findings, on one landscape A4 page."""
    fig = plt.figure(figsize=_LANDSCAPE)
    fig.text(0.04, 0.965, TITLE, fontsize=18, weight="bold", va="top")
    if subtitle:
        fig.text(0.04, 0.925, textwrap.shorten(subtitle, 170), fontsize=8, color="#444444", va="top")
    top = 0.90
    if "scope" in table.columns and table["scope"].nunique() == 1:
        table = table.drop(columns="scope")  # one scope (no gem5 traces): the column says nothing
    if "why" in table.columns:
        table = table.assign(why=[textwrap.shorten(str(w), _WHY_PDF, placeholder="...") for w in table["why"]])
    if not table.empty:
        cells, header, lines = _wrapped(table)
        line_h = 0.0112
        height = min(0.74, line_h * sum(lines) + 0.003 * len(lines))
        ax = fig.add_axes((0.03, top - height, 0.94, height))
        ax.axis("off")
        widths = [_width(c) for c in table.columns]
        tab = ax.table(cellText=cells, colLabels=header, cellLoc="left", colWidths=[w / sum(widths) for w in widths],
                       bbox=[0, 0, 1, 1])  # fmt: skip
        tab.auto_set_font_size(False)
        tab.set_fontsize(5.5)
        total = sum(lines)
        for (r, _c), cell in tab.get_celld().items():
            cell.set_height(lines[r] / total)
            if r == 0:
                cell.set_facecolor("#eeeeee")
        top -= height + 0.012
        fig.text(0.04, top, textwrap.fill(LEGEND, 230), fontsize=5.5, color="#444444", va="top")
        top -= 0.04
    y = top
    for line in finding_lines(found):
        for i, part in enumerate(textwrap.wrap(line, 190)):
            fig.text(0.04 if i == 0 else 0.055, y, part, fontsize=7, va="top")
            y -= 0.016
        y -= 0.003
    return fig


def answer_html(table: pd.DataFrame, found: Sequence[tuple[str, str]], notes: Sequence[str] = ()) -> str:
    """The HTML report's answer entry: the same table and findings."""
    items = "".join(f"<li>{html.escape(text)} <i>(page: {html.escape(page)})</i></li>" for text, page in found)
    extra = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    body = (f"<h2>{TITLE}</h2><p>{html.escape(LEGEND)}</p>{html_table(table)}<h3>Findings, ranked</h3>"
            f"<ol>{items}</ol>{extra}")  # fmt: skip
    return html_page(TITLE, body)
