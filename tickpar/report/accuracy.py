"""The accuracy–speed page of the report: error against speedup for each quantum ratio.

Drawn from ``results/accuracy.csv`` (:mod:`tickpar.pipeline.accuracy`).  One panel per
workload shape; each line is one error figure (final tick, event count, each
declared statistic) of the relaxed strategy at the swept quantum ratios, in
ratio order, each point labelled with its ratio (``1x``, ``10x``, ... the
lookahead).  The y axis is the absolute relative error in percent on a
symmetric-log scale (an exact run sits at 0).  Reference lines are the
anchors' claims: par-gem5's single-digit percent (below 10%) and parti-gem5's
under 15%; a dotted line marks speedup 1.  :func:`accuracy_sentences` are the page's findings: per shape,
the quantum ratio at which the worst error first passes 1% and 15%.

    python -m tickpar.report.accuracy results/accuracy.csv --out results/report/accuracy.svg
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from tickpar.pipeline.accuracy import ERROR_PREFIX, accuracy_table, thresholds

__all__ = ["ANCHORS", "accuracy_findings", "accuracy_sentences", "fig_accuracy", "main", "pdf_pages", "summary_page"]

#: The anchors' error claims (fractions): drawn as horizontal reference lines.
ANCHORS = (
    (0.10, "par-gem5: single-digit %"),
    (0.15, "parti-gem5: < 15%"),
)


def _ratio(x: float) -> str:
    return f"{x:g}x"


def _relaxed(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of strategies with a quantum ratio, timed (with a speedup)."""
    if table.empty or "quantum_ratio" not in table.columns:
        return table.iloc[0:0]
    out = table[pd.to_numeric(table["quantum_ratio"], errors="coerce").notna()].copy()
    out["speedup"] = pd.to_numeric(out["speedup"], errors="coerce")
    return out


def fig_accuracy(table: pd.DataFrame) -> plt.Figure:
    """Error (%) against speedup per workload shape, one line per error figure, points labelled by ratio."""
    data = _relaxed(table)
    data = data[data["speedup"].notna()] if not data.empty else data
    if data.empty:
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.axis("off")
        ax.set_title("Accuracy against speed")
        ax.text(0.5, 0.5, "no timed cell of a strategy with a quantum ratio", ha="center", va="center")
        return fig
    errors = [c for c in data.columns if c.startswith(ERROR_PREFIX)]
    long = data.melt(
        id_vars=["workload", "shape", "strategy", "workers", "quantum_ratio", "speedup"],
        value_vars=errors,
        var_name="figure",
        value_name="error",
    ).dropna(subset=["error"])
    long["figure"] = long["figure"].str.removeprefix(ERROR_PREFIX)
    long["error_pct"] = 100.0 * long["error"]
    long["where"] = long["workload"] + "/" + long["shape"] + " (" + long["workers"].astype(str) + " workers)"
    panels = list(dict.fromkeys(long["where"]))
    cols = min(len(panels), 2)
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.2 * rows), squeeze=False)
    figures = list(dict.fromkeys(long["figure"]))
    palette = dict(zip(figures, sns.color_palette("tab10", len(figures)), strict=False))
    top = max(20.0, float(long["error_pct"].max()) * 1.5)
    for ax, where in zip(axes.flat, panels, strict=False):
        part = long[long["where"] == where].sort_values("quantum_ratio")
        for figure, line in part.groupby("figure", sort=False):
            ax.plot(line["speedup"], line["error_pct"], marker="o", markersize=4, linewidth=1, alpha=0.7,
                    color=palette[figure], label=figure)  # fmt: skip
        labelled = part.groupby("quantum_ratio").agg(speedup=("speedup", "first"), error_pct=("error_pct", "max"))
        for ratio, point in labelled.iterrows():
            ax.annotate(_ratio(float(ratio)), (point["speedup"], point["error_pct"]), textcoords="offset points",
                        xytext=(4, 4), fontsize=7)  # fmt: skip
        for level, text in ANCHORS:
            ax.axhline(100 * level, color="grey", linestyle="--", linewidth=0.8)
            ax.text(ax.get_xlim()[0], 100 * level, " " + text, va="bottom", fontsize=7, color="grey")
        ax.axvline(1.0, color="black", linestyle=":", linewidth=0.8)  # break-even with sequential
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_ylim(0, top)
        ax.set_title(where)
        ax.set_xlabel("speedup over sequential")
        ax.set_ylabel("|relative error| vs golden (%)")
        ax.legend(fontsize=7, title="error figure", title_fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle("Accuracy against speed: quantum ratio (x lookahead) at each point")
    fig.tight_layout()
    return fig


def accuracy_sentences(table: pd.DataFrame) -> list[str]:
    """Per workload shape: the quantum ratio at which the worst error first passes 1% and 15%."""
    limits = thresholds(_relaxed(table))
    out: list[str] = []
    for (workload, shape, strategy, workers), group in limits.groupby(
        ["workload", "shape", "strategy", "workers"], sort=False
    ):
        parts = []
        for _, row in group.iterrows():
            level = f"{row['level']:.0%}"
            if math.isnan(row["passes"]):
                parts.append(f"within {level} at every ratio swept (up to {_ratio(row['within'])})")
            elif math.isnan(row["within"]):
                parts.append(f"above {level} already at {_ratio(row['passes'])}")
            else:
                parts.append(f"passes {level} at {_ratio(row['passes'])} (within it up to {_ratio(row['within'])})")
        out.append(f"{strategy} on {workload}/{shape}, {workers} workers: worst error " + "; ".join(parts) + ".")
    return out


def pdf_pages(table: pd.DataFrame) -> list[tuple[str, plt.Figure]]:
    """The page(s) for the PDF report: the figure, with the sentences below it."""
    fig = fig_accuracy(table)
    sentences = accuracy_sentences(table)
    if sentences:
        height = fig.get_figheight()
        extra = 0.25 * len(sentences) + 0.3
        fig.set_figheight(height + extra)
        fig.subplots_adjust(bottom=extra / (height + extra) + 0.06)
        fig.text(0.02, 0.01, "\n".join(sentences), fontsize=8, va="bottom", wrap=True)
    return [("accuracy", fig)]


def accuracy_findings(summary: pd.DataFrame) -> list[str]:
    """:func:`accuracy_sentences` of the sweep's summary table (for the report's findings)."""
    return accuracy_sentences(accuracy_table(summary)) if not summary.empty else []


def summary_page(summary: pd.DataFrame) -> plt.Figure:
    """The PDF page drawn from the sweep's summary table alone (the accuracy table is derived from it)."""
    (_, fig), = pdf_pages(accuracy_table(summary))
    return fig


def render(accuracy: str | Path, out: str | Path) -> None:
    """Write the accuracy–speed figure of ``accuracy`` (accuracy.csv) to ``out``."""
    sns.set_theme(style="whitegrid", context="paper")
    table = pd.read_csv(accuracy)
    (_, fig), = pdf_pages(table)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/accuracy_page.py`` (the Snakemake ``script:`` object)."""
    render(smk.input.accuracy, smk.output.figure)
    print(f"tickpar: {smk.output.figure}")


def main(argv: Sequence[str] | None = None) -> int:
    doc = (__doc__ or "").splitlines()
    parser = argparse.ArgumentParser(prog="python -m tickpar.report.accuracy", description=doc[0] if doc else None)
    parser.add_argument("accuracy", help="results/accuracy.csv")
    parser.add_argument("--out", default="results/report/accuracy.svg")
    args = parser.parse_args(argv)
    render(args.accuracy, args.out)
    for line in accuracy_sentences(pd.read_csv(args.accuracy)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
