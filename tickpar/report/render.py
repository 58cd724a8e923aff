"""The report: captioned seaborn figures, findings computed from the data, an environment page, and a PDF.

Everything is drawn from ``results/summary.csv`` (:mod:`tickpar.pipeline.aggregate`) and
``results/prediction.csv`` (:mod:`tickpar.perf.prediction`), so a report can be
rebuilt from the tables alone::

    python -m tickpar.report results/summary.csv --prediction results/prediction.csv \
        --engine-bench results/engine/engine.json --outdir results/report --pdf results/report.pdf

The pages are :data:`PAGES`, in PDF order; figure pages are also written one
file each, for Snakemake's HTML report:

* ``findings`` (PDF page; ``findings.html`` for the HTML report): sentences
  computed from the tables, none written by hand (with, for relaxed strategies,
  the quantum ratio at which the error passes 1% and 15%);
* ``environment``: CPU, cores, Python, GIL, work model, versions, and the engine benchmark: tickpar's
  events/s beside SimPy, desimpy, salabim and a bare heapq loop, with the speed goals judged from
  it (``results/engine/engine.json``, :mod:`tickpar.report.engine_bench`);
* ``correctness``: strategy/variant x (workload shape, workers) -> the worst
  verdict over seeds, as a coloured grid; ``!`` marks a verdict the strategy
  did not promise, ``*`` a cell whose seeds disagree;
* ``speedup``: speedup vs workers per workload shape, one line per
  strategy/variant, with the bound lines (:mod:`tickpar.report.speed`);
* ``efficiency``: speedup / workers;
* ``breakeven``: speedup at the largest timed worker count against the work per
  event on a log axis; where a line crosses 1 the strategy breaks even;
* ``interpreters`` and ``ft_cost``: the default and the free-threaded interpreter
  side by side, speedup against the work per event per work mode, and the
  free-threaded build's single-thread cost (:mod:`tickpar.report.interpreters`);
* ``engines``: the Python and the native (C++) engine side by side, loop speedup against the
  work per event with each strategy's break-even, and native ``split``'s verdicts over its
  real-thread check cells (:mod:`tickpar.report.engines`);
* ``scaling``: predicted speedup for P = 1 ... 64, presets ``here`` and
  ``cxx``, with the measured points on top;
* ``time_per_event``: mean seconds per event (µs), per strategy and worker count;
* ``overhead``: (T - T_sequential) / events (µs): at one worker, the synchronisation cost;
* ``optimism``: optimistic (Time Warp) beside conservative: speedup, Time Warp efficiency
  and rollback length against work per event and against lookahead (:mod:`tickpar.report.optimism`);
* ``accuracy`` (PDF page; the HTML figure comes from rules/accuracy.smk): relaxed strategies'
  error against golden (%) against speedup per quantum ratio (:mod:`tickpar.report.accuracy`);
* ``verdict table`` and ``speedup table`` (PDF pages, also in ``findings.html``).

**Adding a page** is one function ``make(data: ReportData) -> Figure`` (or a
list of figures for a multi-page table) and one :class:`Page` entry in
:data:`PAGES` (``figure=False`` for a PDF-only page).  A figure page also needs
its output: a ``REPORT_OUTPUTS`` entry in ``rules/common.smk``, a ``report(...)``
output of ``report_files`` in ``rules/report.smk`` and its caption
``report/{name}.rst``.  Put a family of pages in its own module, as
:mod:`tickpar.report.speed` does for the speedup study.
"""

from __future__ import annotations

import argparse
import html
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from tickpar.report import engine_bench
from tickpar.report import failures as report_failures
from tickpar.report.accuracy import accuracy_findings, summary_page
from tickpar.report.engines import engine_findings, fig_engines
from tickpar.report.interpreters import fig_ft_cost, fig_interpreters, interpreter_findings
from tickpar.report.model_error import findings as model_error_findings
from tickpar.report.model_error import model_error_table
from tickpar.report.optimism import fig_optimism, optimism_findings
from tickpar.report.speed import (
    breakeven,
    breakeven_points,
    empty_figure,
    fig_breakeven,
    fig_scaling,
    speed_findings,
    speed_table,
    speedup_table,
)
from tickpar.verify.oracle import SEVERITY, worst_verdict

__all__ = [
    "FIGURES", "PAGES", "PDF_PAGES", "Page", "ReportData", "breakeven", "breakeven_points", "findings",
    "load_summary", "main", "render",
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


# ---------------------------------------------------------------- data


def load_summary(path: str | Path) -> pd.DataFrame:
    """summary.csv with the types the figures need."""
    df = pd.read_csv(path)
    return prepare(df)


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    if df.empty:
        return df
    df["where"] = df["workload"].astype(str) + "/" + df["shape"].astype(str)
    df["workers"] = df["workers"].astype(int)
    df["label"] = df["label"].astype(str)
    df["verdict"] = df["verdict"].fillna("missing").astype(str)
    for col in ("timed",):
        if col in df.columns:
            df[col] = df[col].map(lambda v: str(v).lower() == "true" if not isinstance(v, bool) else v)
    for col in ("speedup", "speedup_lo", "speedup_hi", "efficiency", "us_per_event", "overhead_us_per_event"):
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def _labels(df: pd.DataFrame) -> list[str]:
    """Strategy/variant labels in sweep order, the baseline first."""
    seen = list(dict.fromkeys(df["label"].tolist())) if not df.empty else []
    return sorted(seen, key=lambda lab: (not lab.startswith(BASELINE), seen.index(lab)))


def _palette(df: pd.DataFrame) -> dict[str, Any]:
    labels = _labels(df)
    colours = sns.color_palette("tab10" if len(labels) <= 10 else "tab20", max(len(labels), 1))
    return dict(zip(labels, colours, strict=False))


def _col_wrap(n: int) -> int:
    return max(1, min(3, n))


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
    pal = _palette(df)
    t = t.copy()
    y = "efficiency" if efficiency else "speedup"
    scale = t["workers"] if efficiency else 1
    for col in ("lo", "hi", "bound", "ideal"):
        t[col] = t[col] / scale
    wheres = list(dict.fromkeys(t["where"]))
    g = sns.relplot(
        data=t, x="workers", y=y, hue="label", col="where", col_order=wheres, col_wrap=_col_wrap(len(wheres)),
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
    rows = _labels(df)
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
    labels = [lab for lab in _labels(df) if lab in set(t["label"])]
    g = sns.catplot(
        data=t, kind="bar", y="label", x=column, hue="workers ", col="where", col_order=wheres,
        col_wrap=_col_wrap(len(wheres)), order=labels, orient="h", palette="crest",
        height=max(2.5, 0.3 * len(labels) + 1.5), aspect=1.3, sharex=False,
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


# ---------------------------------------------------------------- findings and environment


def _apart(low: float, high: float) -> tuple[str, str]:
    """``low`` and ``high`` signed, with the fewest decimals (1 to 3) that tell them apart."""
    for digits in (1, 2, 3):
        texts = f"{low:+.{digits}f}", f"{high:+.{digits}f}"
        if texts[0] != texts[1]:
            break
    return texts


def _cell_where(row: pd.Series) -> str:
    return f"{row['workload']}/{row['shape']} at {int(row['workers'])} workers (seed {int(row['seed'])})"


def findings(df: pd.DataFrame, param: str = "work_us", prediction: pd.DataFrame | None = None) -> list[str]:
    """Sentences computed from the summary table (and the predictions, for the prediction error)."""
    out: list[str] = []
    if df.empty:
        return ["The sweep has no cells."]
    n_cells = len(df)
    labels = _labels(df)
    out.append(
        f"{n_cells} cells: {df['workload'].nunique()} workload(s) at {df['where'].nunique()} shape(s), "
        f"{len(labels)} strategy variant(s), workers {', '.join(str(w) for w in sorted(df['workers'].unique()))}, "
        f"seeds {', '.join(str(s) for s in sorted(df['seed'].unique()))}."
    )
    exact, not_exact = [], []
    for label in labels:
        sub = df[df["label"] == label]
        counts = sub["verdict"].value_counts()
        if counts.get("exact", 0) == len(sub):
            exact.append(f"{label} ({len(sub)})")
        else:
            parts = ", ".join(f"{v} in {int(n)}" for v, n in counts.items() if v != "exact")
            not_exact.append(f"{label}: {parts} of {len(sub)} cells")
    if exact:
        out.append("Exact in every checked cell (cells in brackets): " + ", ".join(exact) + ".")
    if not_exact:
        out.append("Not always exact: " + "; ".join(not_exact) + ".")
    if "as_expected" in df.columns:
        bad = df[df["as_expected"].astype(str).str.lower() == "false"]
        if not bad.empty:
            by = bad.groupby("label")["verdict"].agg(lambda v: ", ".join(sorted(set(v))))
            first = bad.iloc[0]
            out.append(
                f"{len(bad)} cell(s) broke their strategy's own promise ("
                + "; ".join(f"{lab}: got {v}" for lab, v in by.items())
                + f"); the first is {first['label']} on {_cell_where(first)}: {first.get('verdict_reason', '')}."
            )
        else:
            promised = df["expected_verdict"].notna().sum() if "expected_verdict" in df.columns else 0
            basis = ""
            if "promise_trait" in df.columns and promised:
                by = df[df["expected_verdict"].notna()].groupby(["expected_verdict", "promise_trait"]).size()
                basis = "; " + ", ".join(f"{v} from {t} in {int(n)}" for (v, t), n in by.items())
            out.append(
                f"Every verdict matched what its strategy promises ({int(promised)} cells with a promise{basis})."
            )
    out += speed_findings(df, prediction if prediction is not None else pd.DataFrame(), param)
    out += interpreter_findings(df, param)
    out += engine_findings(df, prediction, param)
    if prediction is not None and not prediction.empty:
        out += model_error_findings(model_error_table(df, prediction, param), param)
    tp = speed_table(df)
    tp = tp[~tp["label"].str.startswith(BASELINE)]
    one = tp[(tp["workers"] == 1) & tp["overhead"].notna()]
    if not one.empty:
        per_label = one.groupby("label")["overhead"].mean().sort_values()
        lo_lab, lo_val = per_label.index[0], per_label.iloc[0]
        hi_lab, hi_val = per_label.index[-1], per_label.iloc[-1]
        if len(per_label) == 1:
            out.append(
                f"Synchronisation overhead at one worker (mean over shapes): {lo_lab} {lo_val:+.1f} µs/event "
                "over sequential."
            )
        else:
            lo_txt, hi_txt = _apart(lo_val, hi_val)
            if lo_txt == hi_txt:  # the same to a thousandth: say so once rather than twice
                out.append(
                    f"Synchronisation overhead at one worker (mean over shapes): {lo_txt} µs/event over sequential"
                    f" for each of {', '.join(map(str, per_label.index))}."
                )
            else:
                out.append(
                    f"Synchronisation overhead at one worker (mean over shapes): lowest {lo_lab} ({lo_txt} "
                    f"µs/event over sequential), highest {hi_lab} ({hi_txt} µs/event)."
                )
    env = environment_rows(df)
    env_d = dict(env)
    out.append(
        f"Measured on {env_d.get('CPU', '?')} ({env_d.get('cores (usable)', '?')} cores), "
        f"Python {env_d.get('Python', '?')}, GIL {env_d.get('GIL', '?')}, work model {env_d.get('work model', '?')}."
    )
    return out


def _unique(df: pd.DataFrame, col: str) -> str:
    if col not in df.columns:
        return "?"
    vals = [str(v) for v in dict.fromkeys(df[col].dropna().tolist())]
    if not vals:
        return "?"
    return vals[0] if len(vals) == 1 else "MIXED: " + "; ".join(vals)


def environment_rows(df: pd.DataFrame, extra: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """(key, value) rows of the environment page; values that differ between cells are shown as MIXED."""
    rows: list[tuple[str, str]] = []
    if df.empty:
        return rows
    rows += [
        ("CPU", _unique(df, "cpu_model")),
        ("cores (usable)", f"{_unique(df, 'cores')} ({_unique(df, 'usable_cores')})"),
    ]
    interps = list(dict.fromkeys(df["interpreter"].fillna("default"))) if "interpreter" in df.columns else []
    for interp in interps or [None]:
        sub = df if interp is None else df[df["interpreter"].fillna("default") == interp]
        gil = _unique(sub, "gil_enabled")
        gil_text = {"True": "enabled", "False": "disabled"}.get(gil, gil)
        ft = _unique(sub, "free_threaded_build")
        suffix = f" ({interp})" if interp is not None and len(interps) > 1 else ""
        rows += [
            ("Python" + suffix, f"{_unique(sub, 'implementation')} {_unique(sub, 'python')}"),
            ("GIL" + suffix, gil_text + (" (free-threaded build)" if ft == "True" else "")),
        ]
    rows += [
        ("platform", _unique(df, "platform")),
        ("host", _unique(df, "hostname")),
        ("git", _unique(df, "git_sha")),
    ]
    if "work_model" in df.columns:
        models = []
        for mode, grp in df.groupby("work_model", sort=False):
            rate = pd.to_numeric(grp.get("work_units_per_us"), errors="coerce").dropna()
            unit = _unique(grp, "work_unit")
            has_rate = not rate.empty and rate.mean() > 0
            models.append(f"{mode} ({rate.mean():.0f} {unit} per µs)" if has_rate else str(mode))
        rows.append(("work model", "; ".join(models)))
    for col in sorted(c for c in df.columns if c.startswith("ver_")):
        rows.append((col.removeprefix("ver_"), _unique(df, col)))
    for key, value in (extra or {}).items():
        rows.append((key, str(value)))
    return rows


def verdict_table(df: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per strategy/variant (rows) and verdict (columns)."""
    if df.empty:
        return pd.DataFrame()
    t = pd.crosstab(df["label"], df["verdict"])
    cols = [v for v in SEVERITY if v in t.columns]
    t = t[cols].reindex([lab for lab in _labels(df) if lab in t.index])
    t["cells"] = t.sum(axis=1)
    return t


# ---------------------------------------------------------------- output


_CSS = (
    "body{font-family:sans-serif;margin:1.5em;max-width:70em}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:90%}th{background:#f3f3f3}"
    "li{margin:.35em 0}"
)


def _html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p>(empty)</p>"
    return df.to_html(index=not isinstance(df.index, pd.RangeIndex), border=0, escape=True)


def _write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def findings_html(df: pd.DataFrame, sentences: list[str], title: str) -> str:
    items = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_CSS}</style></head><body><h2>Findings</h2><ul>{items}</ul>"
        f"<h3>Verdicts per strategy</h3>{_html_table(verdict_table(df))}"
        f"<h3>Speedup (mean over seeds; interval: envelope of the seeds' bootstrap intervals)</h3>"
        f"{_html_table(speedup_table(df))}</body></html>"
    )


def environment_html(rows: list[tuple[str, str]], extra_html: str = "") -> str:
    """The environment page; ``extra_html`` (the engine benchmark's section) goes below the table."""
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>environment</title><style>{_CSS}</style>"
        f"</head><body><h2>Environment</h2><table>{body}</table>{extra_html}</body></html>"
    )


def _text_page(title: str, lines: list[str], subtitle: str = "") -> plt.Figure:
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.07, 0.95, title, fontsize=18, weight="bold", va="top")
    y = 0.91
    if subtitle:
        for part in textwrap.wrap(subtitle, 95):
            fig.text(0.07, y, part, fontsize=9, color="#444444", va="top")
            y -= 0.018
        y -= 0.01
    for line in lines:
        wrapped = textwrap.wrap(line, 92) or [""]
        for i, part in enumerate(wrapped):
            fig.text(0.07, y, ("• " if i == 0 else "  ") + part, fontsize=9.5, va="top")
            y -= 0.019
        y -= 0.008
        if y < 0.05:
            break
    return fig


def _table_pages(
    title: str, table: pd.DataFrame, rows_per_page: int = 40, widths: Sequence[float] | None = None
) -> list[plt.Figure]:
    if table.empty:
        return [_text_page(title, ["(no rows)"])]
    t = table.reset_index() if not isinstance(table.index, pd.RangeIndex) else table
    cells = t.astype(str).values.tolist()
    pages = []
    for start in range(0, len(cells), rows_per_page):
        chunk = cells[start : start + rows_per_page]
        fig = plt.figure(figsize=(8.27, 11.69))
        rows = f" (rows {start + 1}-{start + len(chunk)})" if len(cells) > rows_per_page else ""
        fig.text(0.07, 0.96, title + rows, fontsize=14, weight="bold", va="top")
        ax = fig.add_axes((0.05, 0.05, 0.9, 0.87))
        ax.axis("off")
        tab = ax.table(
            cellText=chunk, colLabels=[str(c) for c in t.columns], loc="upper center", cellLoc="left",
            colWidths=list(widths) if widths else None,
        )  # fmt: skip
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)
        tab.scale(1.0, 1.25)
        pages.append(fig)
    return pages


# ---------------------------------------------------------------- pages


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


@dataclass(frozen=True)
class Page:
    """One report page: ``make`` draws it; a ``figure`` page is also written to ``outputs[name]``
    (an HTML report figure, captioned by ``report/{name}.rst``); other pages are PDF-only and may
    return several figures (a table running over pages)."""

    name: str
    make: Callable[[ReportData], plt.Figure | list[plt.Figure]]
    figure: bool = True


def _page_findings(d: ReportData) -> plt.Figure:
    return _text_page("tickpar: findings", d.sentences, d.subtitle)


#: Environment rows that share one PDF page with the engine benchmark; more get pages of their own.
_ENV_ROWS_WITH_ENGINE = 32
_ROW_H = 0.0165  # a table row's height, as a share of the A4 page


def _draw_table(fig: plt.Figure, top: float, cells: list[list[str]], columns: Sequence[str] | None,
                widths: Sequence[float], height: float | None = None) -> float:  # fmt: skip
    """A table from ``top`` down (``height``: default one :data:`_ROW_H` per row); returns where it ends."""
    rows = len(cells) + (1 if columns else 0)
    height = height or _ROW_H * rows
    ax = fig.add_axes((0.05, top - height, 0.9, height))
    ax.axis("off")
    tab = ax.table(
        cellText=cells, colLabels=list(columns) if columns else None, cellLoc="left", colWidths=list(widths),
        bbox=[0, 0, 1, 1],
    )  # fmt: skip
    tab.auto_set_font_size(False)
    tab.set_fontsize(7)
    return top - height


def _draw_lines(fig: plt.Figure, top: float, lines: Sequence[str], width: int = 100) -> float:
    y = top
    for line in lines:
        for i, part in enumerate(textwrap.wrap(line, width) or [""]):
            fig.text(0.07, y, ("• " if i == 0 else "  ") + part, fontsize=8, va="top")
            y -= 0.015
        y -= 0.004
    return y


def engine_figure(fig: plt.Figure, top: float, record: dict[str, Any] | None) -> float:
    """The engine benchmark's section on ``fig`` from ``top`` down: heading, table, goals, what failed."""
    fig.text(0.05, top, "Engine benchmark: tickpar and its peers (bench/engine.py)", fontsize=12, weight="bold",
             va="top")  # fmt: skip
    lines = engine_bench.page_lines(record)
    y = top - 0.03
    if record is not None and record.get("status") != "failed":
        y = _draw_lines(fig, y, lines[:1]) - 0.005
        rows = [list(r) for r in engine_bench.table_rows(record)]
        if rows:
            y = _draw_table(fig, y, rows, engine_bench.TABLE_COLUMNS, (0.24, 0.12, 0.34, 0.30)) - 0.015
        lines = lines[1:]
    return _draw_lines(fig, y, lines)


def _page_environment(d: ReportData) -> list[plt.Figure]:
    """The environment table and, below it, the engine benchmark (on a page of its own after a long table)."""
    env = [[k, v] for k, v in d.environment]
    if len(env) > _ENV_ROWS_WITH_ENGINE:
        pages = _table_pages("Environment", pd.DataFrame(d.environment, columns=["", "value"]), 60, (0.3, 0.7))
        fig = plt.figure(figsize=(8.27, 11.69))
        engine_figure(fig, 0.95, d.engine)
        return [*pages, fig]
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.07, 0.96, "Environment", fontsize=14, weight="bold", va="top")
    y = _draw_table(fig, 0.92, env or [["(no cells)", ""]], ["", "value"], (0.3, 0.7)) - 0.03
    engine_figure(fig, y, d.engine)
    return [fig]


def _page_verdicts(d: ReportData) -> list[plt.Figure]:
    vt = verdict_table(d.df)
    widths = [0.34] + [0.62 / max(len(vt.columns), 1)] * len(vt.columns)
    return _table_pages("Verdict table", vt, widths=widths if not vt.empty else None)


def _page_speedups(d: ReportData) -> list[plt.Figure]:
    st = speedup_table(d.df)
    widths = (0.19, 0.25, 0.03, 0.14, 0.14, 0.05, 0.06, 0.09, 0.05)
    return _table_pages("Speedup table", st, widths=widths if not st.empty else None)


#: The report, in PDF order.  A new page is one function of :class:`ReportData` and one entry here
#: (a figure page also needs its output in rules/common.smk's REPORT_OUTPUTS, an output with a caption
#: in rules/report.smk, and report/{name}.rst); see :class:`Page`.
PAGES: list[Page] = [
    Page("findings", _page_findings, figure=False),
    Page("environment", _page_environment, figure=False),
    Page("correctness", lambda d: fig_correctness(d.df)),
    Page("speedup", lambda d: fig_speedup(d.df)),
    Page("efficiency", lambda d: fig_speedup(d.df, efficiency=True)),
    Page("breakeven", lambda d: fig_breakeven(d.df, _palette(d.df), d.param)),
    Page("interpreters", lambda d: fig_interpreters(d.df, d.param)),
    Page("ft_cost", lambda d: fig_ft_cost(d.df, d.param)),
    Page("engines", lambda d: fig_engines(d.df, d.param)),
    Page("scaling", lambda d: fig_scaling(d.df, d.prediction, _palette(d.df), d.param)),
    Page("time_per_event", lambda d: fig_time_per_event(d.df)),
    Page("overhead", lambda d: fig_overhead(d.df)),
    Page("optimism", lambda d: fig_optimism(d.df, _palette(d.df), d.param)),
    Page("accuracy", lambda d: summary_page(d.df), figure=False),  # its HTML figure: rules/accuracy.smk
    Page("verdict table", _page_verdicts, figure=False),
    Page("speedup table", _page_speedups, figure=False),
    Page("failures", report_failures.pdf_pages, figure=False),  # rules/failures.smk's pages, when made
]
FIGURES = tuple(p.name for p in PAGES if p.figure)
PDF_PAGES = tuple(p.name for p in PAGES)


def load_prediction(path: str | Path | None) -> pd.DataFrame:
    """results/prediction.csv, or an empty table when there is none."""
    if not path or not Path(path).exists():
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return pd.DataFrame()


def render(
    summary: str | Path,
    outputs: dict[str, str | Path],
    *,
    param: str = "work_us",
    description: str = "",
    source: str = "",
    prediction: str | Path | None = None,
    engine: str | Path | None = None,
) -> list[str]:
    """Write every figure, the findings and environment pages and the PDF; return the PDF's page titles.

    ``engine``: the engine benchmark's record (results/engine/engine.json); None when it did not run.
    """
    sns.set_theme(style="whitegrid", context="paper")
    df = load_summary(summary)
    pred = load_prediction(prediction)
    engine_record = engine_bench.load(engine)
    sentences = findings(df, param, pred) + accuracy_findings(df) + optimism_findings(df, param)
    title = "tickpar report"
    extra = {"config": source or "?", "cells": len(df)}
    if "n_values" in df.columns and not df.empty:
        timed = df[df.get("timing_status") == "ok"]
        if not timed.empty:
            extra["pyperf values per timed cell"] = int(pd.to_numeric(timed["n_values"]).median())
    env = environment_rows(df, extra)
    _write_text(outputs["findings"], findings_html(df, sentences, title))
    _write_text(outputs["environment"], environment_html(env, engine_bench.engine_html(engine_record)))
    subtitle = " ".join(x for x in (description, f"config: {source}" if source else "") if x)
    data = ReportData(df, pred, param, sentences, env, subtitle, engine_record)
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
                figs[0].savefig(target, bbox_inches="tight")
            for fig in figs:
                pdf.savefig(fig, bbox_inches="tight" if page.figure else None)
                plt.close(fig)
                pages.append(page.name)
        info = pdf.infodict()  # inside the block: after close it would truncate the file
        info["Title"] = title
        info["Subject"] = description or "tickpar sweep"
        info["Keywords"] = "; ".join(pages)
        assert pdf.get_pagecount() == len(pages)
    os.replace(tmp_pdf, pdf_path)
    return pages


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/render.py`` (the Snakemake ``script:`` object)."""
    outputs = {k: str(smk.output[k]) for k in (*FIGURES, "findings", "environment", "pdf")}
    engine = getattr(smk.input, "engine", None)  # a list of one file, or none when engine_bench is off
    engine = engine if isinstance(engine, str) else next(iter(engine or []), None)
    pages = render(
        smk.input.summary,
        outputs,
        param=smk.params.report["granularity_param"],
        description=smk.params.description,
        source=smk.params.source,
        prediction=getattr(smk.input, "prediction", None),
        engine=engine,
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
    args = parser.parse_args(argv)
    outputs: dict[str, str | Path] = {name: Path(args.outdir, f"{name}.{args.format}") for name in FIGURES}
    outputs["findings"] = Path(args.outdir, "findings.html")
    outputs["environment"] = Path(args.outdir, "environment.html")
    outputs["pdf"] = args.pdf
    pages = render(
        args.summary, outputs, param=args.granularity_param, source=args.summary, prediction=args.prediction,
        engine=args.engine_bench,
    )  # fmt: skip
    print(f"{args.pdf}: {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
