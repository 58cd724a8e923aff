"""The answer page drawn: page 1 of the PDF (titled "Answer") and ``answer.html``, the HTML report's first entry.

The numbers come from :mod:`tickpar.report.answer`; this module only lays them out.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd

from tickpar.report.answer import NOT_CITABLE, RUN_COLUMNS, is_run_row
from tickpar.report.layout import html_page, html_table
from tickpar.report.model_error import TARGET

__all__ = [
    "GREY", "LEGEND", "RUNS_LEGEND", "RUNS_TITLE", "TITLE", "answer_html", "answer_pdf", "finding_lines", "split_table",
]  # fmt: skip

TITLE = "Answer"
#: Characters per line of each column's cells (the PDF table wraps its text to these widths).
_WRAP = {"scope": 14, "strategy variant": 28, "correct?": 22, "why": 42, RUN_COLUMNS[0]: 40, RUN_COLUMNS[1]: 62,
         RUN_COLUMNS[2]: 32, RUN_COLUMNS[3]: 32, RUN_COLUMNS[4]: 45, RUN_COLUMNS[5]: 45}
_WRAP_DEFAULT = 16
_WRAP_MODEL = 27  # the model columns' width (their text is the longest)
_WRAP_SPEED = 21  # a speedup column's: its header names its shapes
#: The "why" column in the PDF (the CSV and the HTML keep it whole).
_WHY_PDF = 80
#: The text colour of a cell that is not an answer (NOT_CITABLE), in the PDF and (class not-citable) in the HTML.
GREY = "#999999"
_LANDSCAPE = (11.69, 8.27)
#: How to read the table's cells (under it in the PDF, above it in the HTML).
LEGEND = (
    "Legend. Each column's header names its engine, its measure (loop speedup, end to end, break-even or the "
    "model), its worker count, its work per event and the shapes its cells come from. correct?: yes = exact in every "
    "checked cell (n/n), no = some cell was not; exact = identical per-component digests to the sequential run with "
    "the same seed and order mode (canonical order, or gem5's LIFO order); a 'no' is not a broken promise: split and "
    "quantum promise no exactness, and the findings page's 'every verdict matched its promise' means each verdict "
    "is what its strategy promises (PROMISE BROKEN marks where not). why: the promise's reason. Speedup columns: the "
    "best loop speedup (the strategy's execution alone) of a counted cell (exact, its timed runs exact, not "
    "contended) at 2 workers against the same engine's sequential run, on one of the shapes the header names, run "
    "at exactly that work per event ('nearest to' names the cost it stands for; the gem5-like cost is the median "
    "of the real gem5 runs' own cost per event, a default without them), [95% interval], the workload it came "
    "from, then e2e = end to end, the same cell's speedup with its setup (what a user waits for; loop and end to "
    "end can differ by more than 10%); '-' = no counted cell at that cost (a figure from another cost is never "
    "shown). break-even: per workload, the work per event (µs) where the 2-worker loop speedup crosses 1 (≈ "
    "interpolated in log work, < already faster at the smallest value swept, > beyond the largest); the findings "
    "page quotes the same numbers. model: the model's predicted loop speedup at 16 and 64 workers, a range over "
    "the shapes the header names, priced with the preset 'here' (this machine's Python engine, calibrated) or "
    "'cxx' (the native engine's measured costs); beside it its error: the median |relative error| against the "
    "measured loop speedups at 2+ workers it was not fitted on (at work_us >= 10 where there are such points), "
    "their number and worker counts, and held-out = the same over the shapes kept out of every fit; the findings "
    "page quotes the same error. 'not citable' (grey) = not an answer: no measured point off the fit ('not "
    "validated'), no held-out point, a held-out error above "
    f"{TARGET:.0%}, or more workers than were measured (an extrapolation)."
)
RUNS_TITLE = "Real gem5 runs, each at its cost per event (its own where its gem5 stats give it)"
#: How to read the real runs' table.
RUNS_LEGEND = (
    "A row per real gem5 run the sweep replays (examples/gem5-traces/README.md): its shape, the events the replay "
    "runs and the cost per event each replayed event spends (the run's own: host time over events from its "
    "untraced stats). Correct?: each strategy's checked cells exact of all, with the other verdicts, and what its "
    "timed runs gave where they were not all exact. Speedups: the best counted 2-worker cell against the same "
    "engine's sequential run of this shape, [95% interval], and its strategy and engine. Bound and model: "
    "prediction.csv at 16 and 64 workers on this run's DAG at its cost, per timed strategy, with the cost preset "
    "of the engine it ran on (cxx: the native engine); the model with its error, grey where not citable, as in the "
    "table above. The gem5-like cost of the table above is the median of these runs' own costs."
)


def finding_lines(found: Sequence[tuple[str, str]]) -> list[str]:
    """``1. sentence (page: name)``, ranked."""
    return [f"{i}. {text} (page: {page})" for i, (text, page) in enumerate(found, 1)]


def _width(column: str) -> int:
    if column in _WRAP:
        return _WRAP[column]
    if "model" in column:
        return _WRAP_MODEL
    return _WRAP_SPEED if " engine, 2 workers, " in column else _WRAP_DEFAULT


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


def split_table(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the synthetic strategy variants' table, the real runs' table), each with only its own columns."""
    runs = is_run_row(table)
    synthetic = table[~runs].drop(columns=[c for c in RUN_COLUMNS if c in table.columns])
    real = table[runs][[c for c in RUN_COLUMNS if c in table.columns]]
    return synthetic, real


def _draw(fig: plt.Figure, table: pd.DataFrame, top: float, height: float, fontsize: float = 5.5) -> None:
    """``table`` in the band from ``top`` down ``height``, each row as tall as its wrapped lines."""
    cells, header, lines = _wrapped(table)
    ax = fig.add_axes((0.03, top - height, 0.94, height))
    ax.axis("off")
    widths = [_width(c) for c in table.columns]
    tab = ax.table(cellText=cells, colLabels=header, cellLoc="left", colWidths=[w / sum(widths) for w in widths],
                   bbox=[0, 0, 1, 1])  # fmt: skip
    tab.auto_set_font_size(False)
    tab.set_fontsize(fontsize)
    total = sum(lines)
    for (r, _c), cell in tab.get_celld().items():
        cell.set_height(lines[r] / total)
        if r == 0:
            cell.set_facecolor("#eeeeee")
        elif cell.get_text().get_text().startswith(NOT_CITABLE):
            cell.get_text().set_color(GREY)  # a model figure that is not an answer


#: A wrapped table line's height (page fractions) at the tables' 5.5 pt; a finding's line at 7 pt; the margin left
#: at the foot of a page.
_LINE_H, _FINDING_H, _FOOT = 0.0112, 0.016, 0.03


def _findings(fig: plt.Figure, found: Sequence[tuple[str, str]], y: float) -> None:
    for line in finding_lines(found):
        for i, part in enumerate(textwrap.wrap(line, 190)):
            fig.text(0.04 if i == 0 else 0.055, y, part, fontsize=7, va="top")
            y -= _FINDING_H
        y -= 0.003


def _findings_height(found: Sequence[tuple[str, str]]) -> float:
    return sum(_FINDING_H * len(textwrap.wrap(line, 190)) + 0.003 for line in finding_lines(found))


def answer_pdf(
    table: pd.DataFrame, found: Sequence[tuple[str, str]], subtitle: str = ""
) -> plt.Figure | list[plt.Figure]:
    """The answer page: the strategy variants' table, the real runs' table, then the ranked findings, on one
    landscape A4 page.  Tables taller than the page shrink, rows and font alike (down to 4 pt); findings that
    no longer fit below them go on a page of their own right after it (then two figures are returned)."""
    fig = plt.figure(figsize=_LANDSCAPE)
    fig.text(0.04, 0.965, TITLE, fontsize=18, weight="bold", va="top")
    if subtitle:
        fig.text(0.04, 0.925, textwrap.shorten(subtitle, 170), fontsize=8, color="#444444", va="top")
    top = 0.90
    table, runs = split_table(table)
    if "scope" in table.columns and table["scope"].nunique() <= 1:
        table = table.drop(columns="scope")  # one scope (the synthetic workloads): the column says nothing
    if "why" in table.columns:
        table = table.assign(why=[textwrap.shorten(str(w), _WHY_PDF, placeholder="...") for w in table["why"]])
    parts = [(t, legend) for t, legend in ((table, LEGEND), (runs, RUNS_LEGEND)) if not t.empty]
    need = [_LINE_H * sum(_wrapped(t)[2]) + 0.003 * (len(t) + 1) for t, _ in parts]
    legends = sum(0.012 * (len(textwrap.wrap(legend, 230)) + 1) + 0.010 for _, legend in parts)
    legends += 0.022 if not runs.empty else 0.0  # the runs' title
    room = top - _FOOT - legends
    scale = min(1.0, room / sum(need)) if need else 1.0
    for (part, legend), height in zip(parts, need, strict=True):
        if legend is RUNS_LEGEND:
            fig.text(0.04, top, RUNS_TITLE, fontsize=9, weight="bold", va="top")
            top -= 0.022
        _draw(fig, part, top, height * scale, max(4.0, 5.5 * scale))
        top -= height * scale + 0.010
        fig.text(0.04, top, textwrap.fill(legend, 230), fontsize=5.5, color="#444444", va="top")
        top -= 0.012 * (len(textwrap.wrap(legend, 230)) + 1)
    if top - _findings_height(found) >= _FOOT or not found:
        _findings(fig, found, top)
        return fig
    fig.text(0.04, top, "Findings, ranked: on the next page.", fontsize=7, va="top")
    more = plt.figure(figsize=_LANDSCAPE)
    more.text(0.04, 0.965, f"{TITLE}: findings, ranked", fontsize=18, weight="bold", va="top")
    _findings(more, found, 0.90)
    return [fig, more]


def _grey(table_html: str) -> str:
    """The table's cells that are not an answer (they start with NOT_CITABLE) in class ``not-citable``: grey."""
    return table_html.replace(f"<td>{html.escape(NOT_CITABLE)}", f'<td class="not-citable">{html.escape(NOT_CITABLE)}')


def answer_html(table: pd.DataFrame, found: Sequence[tuple[str, str]], notes: Sequence[str] = ()) -> str:
    """The HTML report's answer entry: the same two tables and the findings."""
    items = "".join(f"<li>{html.escape(text)} <i>(page: {html.escape(page)})</i></li>" for text, page in found)
    extra = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    table, runs = split_table(table)
    real = (f"<h3>{html.escape(RUNS_TITLE)}</h3><p>{html.escape(RUNS_LEGEND)}</p>{_grey(html_table(runs))}"
            if not runs.empty else "")  # fmt: skip
    legend = f'<p style="font-size:smaller">{html.escape(LEGEND)}</p>'
    style = f"<style>td.not-citable{{color:{GREY}}}</style>"
    body = (f"<h2>{TITLE}</h2>{style}{legend}{_grey(html_table(table))}{real}<h3>Findings, ranked</h3>"
            f"<ol>{items}</ol>{extra}")  # fmt: skip
    return html_page(TITLE, body)
