"""The report: the answer page, captioned seaborn figures, findings, an environment page, an appendix, and a PDF.

Everything is drawn from ``results/summary.csv`` (:mod:`tickpar.pipeline.aggregate`) and
``results/prediction.csv`` (:mod:`tickpar.perf.predict.prediction`), so a report can be
rebuilt from the tables alone::

    python -m tickpar.report results/summary.csv --prediction results/prediction.csv \
        --engine-bench results/engine/engine.json --calibration results/calibration.json \
        --outdir results/report --pdf results/report.pdf

The pages are :data:`PAGES`, in PDF order; figure pages are also written one
file each, for Snakemake's HTML report, and the text pages of :data:`HTML_PAGES` as HTML:

* ``answer`` (page 1, titled "Answer"; ``answer.html`` and ``results/answer.csv``): per strategy
  variant, correct? and why, 2-worker speedups at representative work per event per engine,
  break-even, the model at 16 and 64 workers; then at most eight ranked findings, each naming its
  page (:mod:`tickpar.report.answer`, drawn by :mod:`tickpar.report.answer_page`);
* ``findings`` (``findings.html``): the detailed sentences computed from the tables
  (:mod:`tickpar.report.findings`), with, for relaxed strategies, the quantum ratio at which the
  error passes 1% and 15%;
* ``environment``: CPU, cores, Python, GIL, work model, versions, the native engine's calibration (each
  cost beside its floor, ``pingpong_ns`` or ``heap_ns``), and the engine benchmark's table: tickpar's
  events/s beside SimPy, desimpy, salabim and a bare heapq loop (:mod:`tickpar.report.environment`);
* ``correctness``: strategy/variant x (workload shape, workers) -> the worst
  verdict over seeds, as a coloured grid; ``!`` marks a verdict the strategy
  did not promise, ``*`` a cell whose seeds disagree;
* ``speedup``: speedup vs workers per workload shape, one line per
  strategy/variant, with the bound lines (:mod:`tickpar.report.speed`);
* ``efficiency``: speedup / workers;
* ``breakeven``: speedup at the largest timed worker count against the work per
  event on a log axis; where a line crosses 1 the strategy breaks even;
* ``interpreters`` and ``ft_cost``: the default and the free-threaded interpreter
  side by side (:mod:`tickpar.report.interpreters`);
* ``engines``: the Python and the native (C++) engine side by side, loop speedup against the
  work per event with each strategy's break-even (:mod:`tickpar.report.engines`);
* ``scaling``: predicted speedup for P = 1 ... 64, presets ``here`` and ``cxx``, with the
  measured points on top and a legend per panel;
* ``time_per_event`` and ``overhead``: the cost per event and what synchronisation adds to it;
* ``optimism``: optimistic (Time Warp) beside conservative (:mod:`tickpar.report.optimism`);
* ``accuracy`` (PDF page; the HTML figure comes from rules/accuracy.smk): relaxed strategies'
  error against golden (%) against speedup per quantum ratio (:mod:`tickpar.report.accuracy`);
* ``verdict table`` and ``speedup table`` (PDF pages, also in ``findings.html``);
* ``failures``: the anatomy pages of rules/failures.smk, when made;
* ``traces``: the gem5 trace pages of rules/traces.smk, when the sweep has traces (:mod:`tickpar.report.traces`);
* ``synthetic``: "Synthetic against real" of rules/synthetic.smk, when the config lists real runs to fit
  (:mod:`tickpar.report.synthetic`): gem5's parallelism against simulated cores, then a table per run;
* ``appendix`` (last; ``appendix.html``): timing diagnostics (re-timed rounds, contention, cells
  that do not count) and the counted cells above their bound (:mod:`tickpar.report.appendix`).

Each figure page says what to read from it (:mod:`tickpar.report.captions`), under the figure in
the PDF and first in its ``report/{name}.rst`` caption.

**Adding a page** is one function ``make(data: ReportData) -> Figure`` (or a
list of figures for a multi-page table) and one :class:`Page` entry in
:data:`PAGES` (``figure=False`` for a PDF-only page).  A figure page also needs
its output: a ``REPORT_OUTPUTS`` entry in ``rules/common.smk``, a ``report(...)``
output of ``report_files`` in ``rules/report.smk``, its caption ``report/{name}.rst`` and its
sentence in :data:`tickpar.report.captions.READ`.  Put a family of pages in its own module, as
:mod:`tickpar.report.speed` does for the speedup study.
"""

from __future__ import annotations

import argparse
import html
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tickpar.plugins import BASELINE
from tickpar.report import appendix, engine_bench, environment
from tickpar.report import failures as report_failures
from tickpar.report import synthetic as report_synthetic
from tickpar.report import traces as report_traces
from tickpar.report.accuracy import accuracy_findings, summary_page
from tickpar.report.answer import answer_findings, answer_table
from tickpar.report.answer_page import answer_html, answer_pdf
from tickpar.report.captions import caption
from tickpar.report.data import col_wrap, labels, load_prediction, load_summary, palette, prepare
from tickpar.report.engines import fig_engines
from tickpar.report.findings import (
    _apart,  # noqa: F401 (tests import it from here)
    findings,
    verdict_table,
)
from tickpar.report.interpreters import fig_ft_cost, fig_interpreters
from tickpar.report.layout import CSS, html_list, html_page, html_table, table_pages, text_page, write_text
from tickpar.report.optimism import fig_optimism, optimism_findings
from tickpar.report.speed import (
    breakeven,
    breakeven_points,
    empty_figure,
    fig_breakeven,
    fig_scaling,
    speed_table,
    speedup_table,
)
from tickpar.verify.oracle import SEVERITY, worst_verdict

__all__ = [
    "FIGURES", "HTML_PAGES", "PAGES", "PDF_PAGES", "Page", "ReportData", "breakeven", "breakeven_points", "findings",
    "load_summary", "main", "prepare", "render",
]  # fmt: skip
#: Verdicts from best to worst; a grid cell shows the worst over its seeds.
VERDICT_COLOURS = {
    "exact": "#4c9f50",
    "diverged": "#f0a030",
    "causality": "#d64541",
    "race": "#8e44ad",
    "unsaved-state": "#c0392b",
    "deadlock": "#8b5a2b",
    "timeout": "#7f8c8d",
    "crash": "#222222",
    "missing": "#dddddd",
}
VERDICT_SHORT = {
    "exact": "exact",
    "diverged": "div",
    "causality": "caus",
    "race": "race",
    "unsaved-state": "unsav",
    "deadlock": "dlock",
    "timeout": "t/o",
    "crash": "crash",
    "missing": "?",
}



# ---------------------------------------------------------------- figures


def fig_speedup(df: pd.DataFrame, efficiency: bool = False) -> plt.Figure:
    """Speedup (or efficiency) vs workers per shape: measured points with intervals, bound and ideal lines.

    Filled markers count toward the study (see :mod:`tickpar.report.speed`),
    hollow ones do not, an x marks a run that was not exact.  Dotted lines in a
    strategy's colour: its own structural bound (``bound_speedup``); the black
    dashed line: the critical-path ideal (``ideal_speedup``, else y = workers).
    """
    t = speed_table(df)
    title = "Parallel efficiency (speedup / workers)" if efficiency else "Speedup vs workers"
    if t.empty:
        return empty_figure(title, "no timed cells: timing disabled, or every timing run failed")
    pal = palette(df)
    t = t.copy()
    y = "efficiency" if efficiency else "speedup"
    scale = t["workers"] if efficiency else 1
    for col in ("lo", "hi", "bound", "ideal"):
        t[col] = t[col] / scale
    wheres = list(dict.fromkeys(t["where"]))
    g = sns.relplot(
        data=t, x="workers", y=y, hue="label", col="where", col_order=wheres, col_wrap=col_wrap(len(wheres)),
        kind="line", marker="o", palette=pal, hue_order=[lab for lab in pal if lab in set(t["label"])],
        height=3.0, aspect=1.25, facet_kws={"sharey": False}, errorbar=None,
    )  # fmt: skip
    workers = sorted(t["workers"].unique())
    for where, ax in g.axes_dict.items():
        sub = t[t["where"] == where]
        for label, s in sub.groupby("label", sort=False):
            lo = (s[y] - s["lo"]).clip(lower=0).fillna(0)
            hi = (s["hi"] - s[y]).clip(lower=0).fillna(0)
            ax.errorbar(s["workers"], s[y], yerr=[lo, hi], fmt="none", ecolor=pal.get(label), capsize=2, lw=1)
            bound = s[s["bound"].notna()]
            if not label.startswith(BASELINE) and not bound.empty:
                ax.plot(bound["workers"], bound["bound"], color=pal.get(label), ls=":", lw=1.3)
            hollow = s[~s["counted"] & s["exact"]]
            ax.scatter(hollow["workers"], hollow[y], marker="o", facecolor="white", edgecolor=pal.get(label), zorder=6)
        ideal = sub.groupby("workers")["ideal"].mean().dropna()
        if not ideal.empty:
            ax.plot(ideal.index, ideal.values, color="black", ls="--", lw=1)
        elif efficiency:
            ax.axhline(1.0, color="black", ls="--", lw=1)
        else:
            ax.plot(workers, workers, color="black", ls="--", lw=1)
        bad = sub[~sub["exact"]]
        if not bad.empty:
            ax.scatter(bad["workers"], bad[y], marker="x", color="black", s=40, zorder=7)
        ax.set_xticks(workers)
        if max(workers) > 8:
            ax.set_xscale("log", base=2)
            ax.set_xticks(workers, [str(w) for w in workers])
        ax.set_title(where)
        ax.set_ylim(bottom=0)
    g.set_axis_labels("workers", "efficiency" if efficiency else "speedup vs sequential")
    handles = [
        Line2D([], [], color="black", ls="--", label="ideal: critical path (else y = workers)"),
        Line2D([], [], color="#555555", ls=":", label="strategy's bound (its colour)"),
        Line2D([], [], color="#555555", marker="o", markerfacecolor="white", ls="none", label="not counted"),
        Line2D([], [], color="black", marker="x", ls="none", label="not exact"),
    ]
    if g.legend is not None:
        g.legend.set_title("strategy")
    g.figure.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, -0.06), fontsize=7, frameon=False, ncol=2)
    g.figure.suptitle(title, y=1.02)
    return g.figure


def correctness_grid(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(verdict codes, annotation text), rows = strategy/variant, columns = (where, workers)."""
    rows = labels(df)
    cols = list(dict.fromkeys(zip(df["where"], df["workers"], strict=True)))
    cols.sort(key=lambda c: (list(dict.fromkeys(df["where"])).index(c[0]), c[1]))
    codes = pd.DataFrame(np.nan, index=rows, columns=pd.MultiIndex.from_tuples(cols, names=["where", "workers"]))
    text = pd.DataFrame("", index=rows, columns=codes.columns)
    for (label, where, workers), grp in df.groupby(["label", "where", "workers"], sort=False):
        worst = worst_verdict(grp["verdict"])
        codes.loc[label, (where, workers)] = SEVERITY.index(worst)
        mark = VERDICT_SHORT[worst]
        if grp["verdict"].nunique() > 1:
            mark += "*"
        if "as_expected" in grp and (grp["as_expected"].astype(str).str.lower() == "false").any():
            mark += "!"
        text.loc[label, (where, workers)] = mark
    return codes, text


def fig_correctness(df: pd.DataFrame) -> plt.Figure:
    if df.empty:
        return empty_figure("Correctness", "no cells")
    codes, text = correctness_grid(df)
    n_rows, n_cols = codes.shape
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * n_cols + 3.0), max(2.5, 0.42 * n_rows + 1.8)))
    cmap = ListedColormap([VERDICT_COLOURS[v] for v in SEVERITY])
    sns.heatmap(
        codes.astype(float), ax=ax, cmap=cmap, vmin=-0.5, vmax=len(SEVERITY) - 0.5, annot=text.values, fmt="",
        cbar=False, linewidths=1, linecolor="white", annot_kws={"fontsize": 7, "color": "white"},
    )  # fmt: skip
    ax.set_xticks(np.arange(n_cols) + 0.5, [str(n) for _, n in codes.columns], rotation=0, fontsize=7)
    ax.set_yticks(np.arange(n_rows) + 0.5, codes.index, rotation=0, fontsize=8)
    groups = list(dict.fromkeys(w for w, _ in codes.columns))
    for where in groups:
        idx = [i for i, (w, _) in enumerate(codes.columns) if w == where]
        ax.text((idx[0] + idx[-1] + 1) / 2, -0.15, where, ha="center", va="bottom", fontsize=7,
                rotation=0 if len(idx) >= 3 or len(groups) <= 3 else 45)  # fmt: skip
        if idx[0] > 0:
            ax.axvline(idx[0], color="#333333", lw=1.5)
    ax.set_xlabel("workers (columns grouped by workload/shape)")
    ax.set_ylabel("strategy/variant")
    present = [v for v in SEVERITY if v in set(df["verdict"])]
    ax.legend(
        handles=[Patch(color=VERDICT_COLOURS[v], label=v) for v in present], loc="upper left",
        bbox_to_anchor=(1.01, 1.0), fontsize=8, title="verdict", frameon=False,
    )  # fmt: skip
    ax.set_title(
        "Correctness: worst verdict over seeds\n(! = not what the strategy promises, * = seeds differ)", pad=34
    )
    fig.tight_layout()
    return fig


def _bars(df: pd.DataFrame, column: str, title: str, xlabel: str, include_baseline: bool) -> plt.Figure:
    t = speed_table(df)
    if not include_baseline:
        t = t[~t["label"].str.startswith(BASELINE)]
    t = t[t[column].notna()] if column in t.columns else t.iloc[0:0]
    if t.empty:
        return empty_figure(title, "no timed parallel cells")
    t = t.copy()
    t["workers "] = t["workers"].astype(str)
    wheres = list(dict.fromkeys(t["where"]))
    names = [lab for lab in labels(df) if lab in set(t["label"])]
    g = sns.catplot(
        data=t, kind="bar", y="label", x=column, hue="workers ", col="where", col_order=wheres,
        col_wrap=col_wrap(len(wheres)), order=names, orient="h", palette="crest",
        height=max(2.5, 0.3 * len(names) + 1.5), aspect=1.3, sharex=False,
    )  # fmt: skip
    values = t[column].abs()
    wide = values.max() > 50 * max(values[values > 0].min(), 1e-9) if (values > 0).any() else False
    for ax in g.axes.flat:
        ax.axvline(0, color="black", lw=0.8)
        if wide:  # one slow backend would flatten every other bar
            ax.set_xscale("symlog", linthresh=1.0)
    if wide:
        xlabel += " (symmetric log scale)"
    g.set_axis_labels(xlabel, "")
    g.set_titles("{col_name}")
    g.figure.suptitle(title, y=1.02)
    return g.figure


def fig_time_per_event(df: pd.DataFrame) -> plt.Figure:
    return _bars(df, "us_per_event", "Time per event (mean over seeds)", "µs per event", True)


def fig_overhead(df: pd.DataFrame) -> plt.Figure:
    return _bars(
        df, "overhead", "Synchronisation overhead: (T - T_sequential) / events", "µs per event over sequential", False
    )



# ---------------------------------------------------------------- pages


def findings_html(df: pd.DataFrame, sentences: list[str], title: str) -> str:
    items = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><h2>Findings</h2><ul>{items}</ul>"
        f"<h3>Verdicts per strategy</h3>{html_table(verdict_table(df))}"
        f"<h3>Speedup (mean over seeds; interval: envelope of the seeds' bootstrap intervals)</h3>"
        f"{html_table(speedup_table(df))}</body></html>"
    )


@dataclass
class ReportData:
    """What every page is drawn from."""

    df: pd.DataFrame
    """results/summary.csv, prepared (:func:`prepare`)."""
    prediction: pd.DataFrame
    """results/prediction.csv (empty when there is none)."""
    param: str
    sentences: list[str]
    environment: list[tuple[str, str]]
    subtitle: str = ""
    engine: dict[str, Any] | None = None
    """The engine benchmark's record (:func:`tickpar.report.engine_bench.load`); None when it did not run."""
    answer: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The answer table (:func:`tickpar.report.answer.answer_table`)."""
    answer_found: list[tuple[str, str]] = field(default_factory=list)
    """The answer page's ranked (sentence, page) findings."""


@dataclass(frozen=True)
class Page:
    """One report page: ``make`` draws it; a ``figure`` page is also written to ``outputs[name]``
    (an HTML report figure, captioned by ``report/{name}.rst``); other pages are PDF-only and may
    return several figures (a table running over pages)."""

    name: str
    make: Callable[[ReportData], plt.Figure | list[plt.Figure]]
    figure: bool = True


def _page_findings(d: ReportData) -> plt.Figure:
    return text_page("tickpar: findings", d.sentences, d.subtitle)


def _page_appendix(d: ReportData) -> list[plt.Figure]:
    pages = [text_page(appendix.TITLE, appendix.diagnostics(d.df) or ["Nothing to report: no timing diagnostics."])]
    defects = appendix.defect_rows(d.df)
    if not defects.empty:
        pages += table_pages("Appendix: counted cells above their bound (defects)", defects)
    return pages


def appendix_html(df: pd.DataFrame) -> str:
    defects = appendix.defect_rows(df)
    table = f"<h3>Counted cells above their bound (defects)</h3>{html_table(defects)}" if not defects.empty else ""
    return html_page(appendix.TITLE, f"<h2>{html.escape(appendix.TITLE)}</h2>{html_list(appendix.diagnostics(df))}"
                     f"{table}")  # fmt: skip


def _page_verdicts(d: ReportData) -> list[plt.Figure]:
    vt = verdict_table(d.df)
    widths = [0.34] + [0.62 / max(len(vt.columns), 1)] * len(vt.columns)
    return table_pages("Verdict table", vt, widths=widths if not vt.empty else None)


def _page_speedups(d: ReportData) -> list[plt.Figure]:
    st = speedup_table(d.df)
    widths = (0.19, 0.25, 0.03, 0.14, 0.14, 0.05, 0.06, 0.09, 0.05)
    return table_pages("Speedup table", st, widths=widths if not st.empty else None)


#: The report, in PDF order.  A new page is one function of :class:`ReportData` and one entry here
#: (a figure page also needs its output in rules/common.smk's REPORT_OUTPUTS, an output with a caption
#: in rules/report.smk, and report/{name}.rst); see :class:`Page`.
PAGES: list[Page] = [
    Page("answer", lambda d: answer_pdf(d.answer, d.answer_found, d.subtitle), figure=False),
    Page("findings", _page_findings, figure=False),
    Page("traces", report_traces.pdf_pages, figure=False),  # rules/traces.smk's gem5 trace pages, when made
    Page("synthetic", report_synthetic.pdf_pages, figure=False),  # rules/synthetic.smk's page, when made
    Page("environment", lambda d: environment.pdf_pages(d.environment, d.engine), figure=False),
    Page("correctness", lambda d: fig_correctness(d.df)),
    Page("speedup", lambda d: fig_speedup(d.df)),
    Page("efficiency", lambda d: fig_speedup(d.df, efficiency=True)),
    Page("breakeven", lambda d: fig_breakeven(d.df, palette(d.df), d.param)),
    Page("interpreters", lambda d: fig_interpreters(d.df, d.param)),
    Page("ft_cost", lambda d: fig_ft_cost(d.df, d.param)),
    Page("engines", lambda d: fig_engines(d.df, d.param)),
    Page("scaling", lambda d: fig_scaling(d.df, d.prediction, palette(d.df), d.param)),
    Page("time_per_event", lambda d: fig_time_per_event(d.df)),
    Page("overhead", lambda d: fig_overhead(d.df)),
    Page("optimism", lambda d: fig_optimism(d.df, palette(d.df), d.param)),
    Page("accuracy", lambda d: summary_page(d.df), figure=False),  # its HTML figure: rules/accuracy.smk
    Page("verdict table", _page_verdicts, figure=False),
    Page("speedup table", _page_speedups, figure=False),
    Page("failures", report_failures.pdf_pages, figure=False),  # rules/failures.smk's pages, when made
    Page("appendix", _page_appendix, figure=False),
]
#: The HTML report's text entries (rules/report.smk), besides the figure pages.
HTML_PAGES = ("answer", "findings", "environment", "appendix")
FIGURES = tuple(p.name for p in PAGES if p.figure)
PDF_PAGES = tuple(p.name for p in PAGES)



def render(
    summary: str | Path,
    outputs: dict[str, str | Path],
    *,
    param: str = "work_us",
    description: str = "",
    source: str = "",
    prediction: str | Path | None = None,
    engine: str | Path | None = None,
    calibration: str | Path | None = None,
) -> list[str]:
    """Write every figure, the text pages (:data:`HTML_PAGES`), ``answer_csv`` and the PDF; return its page titles.

    ``engine``: the engine benchmark's record (results/engine/engine.json); None when it did not run.
    ``calibration``: the native engine's (results/calibration.json), on the environment page; None: none there.
    """
    sns.set_theme(style="whitegrid", context="paper")
    data = _report_data(summary, param, description, source, prediction, engine, calibration)
    _write_text_pages(data, outputs)
    pages: list[str] = []
    pdf_path = Path(outputs["pdf"])
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_pdf = pdf_path.with_name(f".{pdf_path.name}.tmp")
    with PdfPages(tmp_pdf) as pdf:
        for page in PAGES:
            made = page.make(data)
            figs = made if isinstance(made, list) else [made]
            if page.figure and page.name in outputs:
                target = Path(outputs[page.name])
                target.parent.mkdir(parents=True, exist_ok=True)
                figs[0].savefig(target, bbox_inches="tight")  # its HTML caption is report/{name}.rst
            if figs:
                _caption(figs[0], page.name, inside=not page.figure)
            for fig in figs:
                pdf.savefig(fig, bbox_inches="tight" if page.figure else None)
                plt.close(fig)
                pages.append(page.name)
        info = pdf.infodict()  # inside the block: after close it would truncate the file
        info["Title"] = "tickpar report"
        info["Subject"] = description or "tickpar sweep"
        info["Keywords"] = "; ".join(pages)
        assert pdf.get_pagecount() == len(pages)
    os.replace(tmp_pdf, pdf_path)
    return pages


def _caption(fig: plt.Figure, name: str, inside: bool = False) -> None:
    """What to read from the figure, under it in the PDF (the same sentence opens report/{name}.rst);
    ``inside``: at the foot of a full page (saved as it is), rather than below a figure cropped to fit."""
    text = caption(name)
    if text:
        x, y = (0.05, 0.012) if inside else (0.0, -0.01)
        fig.text(x, y, "What to read: " + text, fontsize=8, va="bottom" if inside else "top", ha="left", wrap=True,
                 color="#333333")  # fmt: skip


def _report_data(
    summary: str | Path, param: str, description: str, source: str, prediction: str | Path | None,
    engine: str | Path | None, calibration: str | Path | None = None,
) -> ReportData:  # fmt: skip
    df = load_summary(summary)
    pred = load_prediction(prediction)
    sentences = findings(df, param, pred) + accuracy_findings(df) + optimism_findings(df, param)
    extra = {"config": source or "?", "cells": len(df)}
    if "n_values" in df.columns and not df.empty:
        timed = df[df.get("timing_status") == "ok"]
        if not timed.empty:
            extra["pyperf values per timed cell"] = int(pd.to_numeric(timed["n_values"]).median())
    env = environment.environment_rows(df, extra) + environment.calibration_rows(calibration)
    subtitle = " ".join(x for x in (description, f"config: {source}" if source else "") if x)
    table = answer_table(df, pred, param)
    found = answer_findings(df, pred, table, param)
    return ReportData(df, pred, param, sentences, env, subtitle, engine_bench.load(engine), table, found)


def _write_text_pages(d: ReportData, outputs: dict[str, str | Path]) -> None:
    """The HTML report's text entries and results/answer.csv, each where ``outputs`` names a path for it."""
    texts = {
        "answer": lambda: answer_html(d.answer, d.answer_found),
        "findings": lambda: findings_html(d.df, d.sentences, "tickpar report"),
        "environment": lambda: environment.environment_html(d.environment, engine_bench.engine_html(d.engine)),
        "appendix": lambda: appendix_html(d.df),
    }
    for name, make in texts.items():
        if name in outputs:
            write_text(outputs[name], make())
    if "answer_csv" in outputs:
        write_text(outputs["answer_csv"], d.answer.to_csv(index=False))


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/render.py`` (the Snakemake ``script:`` object)."""
    outputs = {k: str(smk.output[k]) for k in (*FIGURES, *HTML_PAGES, "answer_csv", "pdf")}
    engine = getattr(smk.input, "engine", None)  # a list of one file, or none when engine_bench is off
    engine = engine if isinstance(engine, str) else next(iter(engine or []), None)
    calibration = getattr(smk.input, "calibration", None)  # likewise: none when the native engine is not built
    calibration = calibration if isinstance(calibration, str) else next(iter(calibration or []), None)
    pages = render(
        smk.input.summary,
        outputs,
        param=smk.params.report["granularity_param"],
        description=smk.params.description,
        source=smk.params.source,
        prediction=getattr(smk.input, "prediction", None),
        engine=engine,
        calibration=calibration,
    )
    print(f"tickpar: {outputs['pdf']}: {len(pages)} pages ({', '.join(dict.fromkeys(pages))})")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tickpar.report SUMMARY.csv --outdir DIR --pdf FILE``: the report without Snakemake."""
    doc = (__doc__ or "").splitlines()
    parser = argparse.ArgumentParser(prog="python -m tickpar.report", description=doc[0] if doc else None)
    parser.add_argument("summary")
    parser.add_argument("--outdir", default="results/report")
    parser.add_argument("--pdf", default="results/report.pdf")
    parser.add_argument("--format", choices=("svg", "png"), default="svg")
    parser.add_argument("--granularity-param", default="work_us")
    parser.add_argument("--prediction", default=None, help="results/prediction.csv (the scaling page)")
    parser.add_argument(
        "--engine-bench", default=None, help="results/engine/engine.json (the environment page's engine table)"
    )
    parser.add_argument(
        "--calibration", default=None, help="results/calibration.json (the environment page's native costs)"
    )
    args = parser.parse_args(argv)
    outputs: dict[str, str | Path] = {name: Path(args.outdir, f"{name}.{args.format}") for name in FIGURES}
    outputs.update({name: Path(args.outdir, f"{name}.html") for name in HTML_PAGES})
    outputs["answer_csv"] = Path(Path(args.pdf).parent, "answer.csv")
    outputs["pdf"] = args.pdf
    pages = render(
        args.summary, outputs, param=args.granularity_param, source=args.summary, prediction=args.prediction,
        engine=args.engine_bench, calibration=args.calibration,
    )  # fmt: skip
    print(f"{args.pdf}: {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
