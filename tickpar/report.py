"""The report: captioned seaborn figures, findings computed from the data, an environment page, and a PDF.

Everything is drawn from ``results/summary.csv`` (:mod:`tickpar.aggregate`) and
nothing else, so a report can be rebuilt from the table alone::

    python -m tickpar.report results/summary.csv --outdir results/report --pdf results/report.pdf

Figures (one file each, for Snakemake's HTML report, and one page each in the PDF):

* ``speedup``: speedup vs workers per workload shape, one line per strategy/variant,
  the ideal line y = workers; error bars span the seeds' bootstrap intervals; an x
  marks a point whose run was not exact.
* ``efficiency``: speedup / workers, ideal 1.
* ``correctness``: strategy/variant x (workload shape, workers) -> the worst verdict
  over seeds, as a coloured grid; ``!`` marks a verdict the strategy did not promise,
  ``*`` a cell whose seeds disagree.
* ``time_per_event``: mean seconds per event (µs), per strategy and worker count.
* ``overhead``: (T - T_sequential) / events (µs): at one worker, the synchronisation cost.
* ``breakeven``: speedup at the largest timed worker count against the work per event
  (the ``granularity_param``, ``work_us`` by default); where a line crosses 1 the
  strategy breaks even.

The findings are sentences computed from the table (which strategies were exact,
the best speedup and where, break-even granularity, overheads); none is written by hand.
"""

from __future__ import annotations

import argparse
import html
import itertools
import math
import os
import sys
import textwrap
from collections.abc import Sequence
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

from tickpar.oracle import VERDICTS
from tickpar.plugins import BASELINE

__all__ = ["FIGURES", "PDF_PAGES", "breakeven_points", "findings", "load_summary", "main", "render"]

#: Verdicts from best to worst; a grid cell shows the worst over its seeds.
SEVERITY = (*VERDICTS, "missing")
VERDICT_COLOURS = {
    "exact": "#4c9f50",
    "diverged": "#f0a030",
    "causality": "#d64541",
    "race": "#8e44ad",
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
    "deadlock": "dlock",
    "timeout": "t/o",
    "crash": "crash",
    "missing": "?",
}
FIGURES = ("speedup", "efficiency", "correctness", "time_per_event", "overhead", "breakeven")
#: PDF pages in order (the table pages may run over several pages).
PDF_PAGES = (
    "findings", "environment", "correctness", "speedup", "efficiency", "breakeven",
    "time_per_event", "overhead", "verdict table", "speedup table",
)  # fmt: skip


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


def _timed(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty or "timing_status" not in df.columns:
        return df.iloc[0:0]
    return df[(df["timing_status"] == "ok") & df["speedup"].notna()]


def _speed_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (where, label, workers): mean speedup over seeds, the envelope of their intervals, exactness."""
    d = _timed(df)
    if d.empty:
        return pd.DataFrame(columns=["where", "label", "workers", "speedup", "lo", "hi", "efficiency", "exact"])
    g = d.groupby(["where", "label", "workers"], sort=False)
    out = g.agg(
        speedup=("speedup", "mean"),
        lo=("speedup_lo", "min"),
        hi=("speedup_hi", "max"),
        efficiency=("efficiency", "mean"),
        us_per_event=("us_per_event", "mean"),
        overhead=("overhead_us_per_event", "mean"),
        exact=("verdict", lambda v: bool((v == "exact").all())),
        seeds=("seed", "nunique"),
    ).reset_index()
    return out


def _empty_figure(title: str, message: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontsize=11, color="#555555")
    return fig


def _col_wrap(n: int) -> int:
    return max(1, min(3, n))


# ---------------------------------------------------------------- figures


def fig_speedup(df: pd.DataFrame, efficiency: bool = False) -> plt.Figure:
    t = _speed_table(df)
    title = "Parallel efficiency (speedup / workers)" if efficiency else "Speedup vs workers"
    if t.empty:
        return _empty_figure(title, "no timed cells: timing disabled, or every timing run failed")
    pal = _palette(df)
    t = t.copy()
    y = "efficiency" if efficiency else "speedup"
    if efficiency:
        t["lo"] = t["lo"] / t["workers"]
        t["hi"] = t["hi"] / t["workers"]
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
        bad = sub[~sub["exact"]]
        if not bad.empty:
            ax.scatter(bad["workers"], bad[y], marker="x", color="black", s=40, zorder=5)
        if efficiency:
            ax.axhline(1.0, color="black", ls="--", lw=1)
        else:
            ax.plot(workers, workers, color="black", ls="--", lw=1)
        ax.set_xticks(workers)
        if max(workers) > 8:
            ax.set_xscale("log", base=2)
            ax.set_xticks(workers, [str(w) for w in workers])
        ax.set_title(where)
        ax.set_ylim(bottom=0)
    g.set_axis_labels("workers", "efficiency" if efficiency else "speedup vs sequential")
    handles = [
        Line2D([], [], color="black", ls="--", label="ideal (y = 1)" if efficiency else "ideal (y = workers)"),
        Line2D([], [], color="black", marker="x", ls="none", label="not exact"),
    ]
    if g.legend is not None:
        g.legend.set_title("strategy")
    g.figure.legend(handles=handles, loc="lower right", fontsize=8, frameon=False)
    g.figure.suptitle(title, y=1.02)
    return g.figure


def _worst(verdicts: pd.Series) -> str:
    ranks = [SEVERITY.index(v) if v in SEVERITY else len(SEVERITY) - 1 for v in verdicts]
    return SEVERITY[max(ranks)]


def correctness_grid(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(verdict codes, annotation text), rows = strategy/variant, columns = (where, workers)."""
    rows = _labels(df)
    cols = list(dict.fromkeys(zip(df["where"], df["workers"], strict=True)))
    cols.sort(key=lambda c: (list(dict.fromkeys(df["where"])).index(c[0]), c[1]))
    codes = pd.DataFrame(np.nan, index=rows, columns=pd.MultiIndex.from_tuples(cols, names=["where", "workers"]))
    text = pd.DataFrame("", index=rows, columns=codes.columns)
    for (label, where, workers), grp in df.groupby(["label", "where", "workers"], sort=False):
        worst = _worst(grp["verdict"])
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
        return _empty_figure("Correctness", "no cells")
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
    t = _speed_table(df)
    if not include_baseline:
        t = t[~t["label"].str.startswith(BASELINE)]
    t = t[t[column].notna()] if column in t.columns else t.iloc[0:0]
    if t.empty:
        return _empty_figure(title, "no timed parallel cells")
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


def _granularity_column(df: pd.DataFrame, param: str) -> str | None:
    col = f"param_{param}"
    return col if col in df.columns else None


def breakeven_points(df: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """Mean speedup at the largest timed worker count per (workload, label, granularity value).

    Per workload, the shapes used are the family (a base shape and the shapes a
    ``sweep`` derived from it) with the most distinct granularity values; when no
    family has two, every shape of the workload is used.
    """
    col = _granularity_column(df, param)
    t = _timed(df)
    if col is None or t.empty:
        return pd.DataFrame(columns=["workload", "family", "label", "x", "speedup", "workers"])
    t = t[~t["label"].str.startswith(BASELINE)]
    frames = []
    for workload, wdf in t.groupby("workload", sort=False):
        wmax = int(wdf["workers"].max())
        wdf = wdf[wdf["workers"] == wmax]
        fam_sizes = wdf.groupby("family")[col].nunique()
        if not fam_sizes.empty and fam_sizes.max() >= 2:
            family = str(fam_sizes.idxmax())
            wdf = wdf[wdf["family"] == family]
        else:
            family = "all shapes"
        pts = wdf.groupby(["label", col], sort=False)["speedup"].mean().reset_index()
        pts = pts.rename(columns={col: "x"})
        pts["workload"] = workload
        pts["family"] = family
        pts["workers"] = wmax
        frames.append(pts)
    if not frames:
        return pd.DataFrame(columns=["workload", "family", "label", "x", "speedup", "workers"])
    out = pd.concat(frames, ignore_index=True)
    out["x"] = pd.to_numeric(out["x"], errors="coerce")
    return out.sort_values(["workload", "label", "x"]).reset_index(drop=True)


def breakeven(xs: Sequence[float], ys: Sequence[float]) -> tuple[str, float | None]:
    """Where speedup first reaches 1 as granularity grows: ("at", x), ("below", min), ("above", max), ("never", None).

    Interpolates linearly in log(granularity) between the two points around the
    crossing (linearly when one of them is 0).
    """
    pts = sorted((float(x), float(y)) for x, y in zip(xs, ys, strict=True) if not math.isnan(y))
    if not pts:
        return ("never", None)
    if pts[0][1] >= 1.0:
        return ("below", pts[0][0])
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if y0 < 1.0 <= y1:
            f = (1.0 - y0) / (y1 - y0)
            if x0 > 0 and x1 > 0:
                return ("at", float(math.exp(math.log(x0) + f * (math.log(x1) - math.log(x0)))))
            return ("at", x0 + f * (x1 - x0))
    return ("above", pts[-1][0])


def fig_breakeven(df: pd.DataFrame, param: str = "work_us") -> plt.Figure:
    title = f"Speedup vs {param} (largest timed worker count): break-even where a line crosses 1"
    pts = breakeven_points(df, param)
    if pts.empty or pts.groupby("workload")["x"].nunique().max() < 2:
        return _empty_figure(title, f"needs timed parallel cells at two or more values of {param}")
    pal = _palette(df)
    pts = pts.copy()
    pts["panel"] = pts["workload"] + " (" + pts["family"] + ", " + pts["workers"].astype(str) + " workers)"
    panels = list(dict.fromkeys(pts["panel"]))
    g = sns.relplot(
        data=pts, x="x", y="speedup", hue="label", col="panel", col_order=panels, col_wrap=_col_wrap(len(panels)),
        kind="line", marker="o", palette=pal, hue_order=[lab for lab in pal if lab in set(pts["label"])],
        height=3.0, aspect=1.3, facet_kws={"sharex": False, "sharey": False}, errorbar=None,
    )  # fmt: skip
    for panel, ax in g.axes_dict.items():
        ax.axhline(1.0, color="black", ls="--", lw=1)
        ax.set_xscale("symlog", linthresh=1.0)
        xs = sorted(pts.loc[pts["panel"] == panel, "x"].unique())
        ax.set_xticks(xs, [_fmt_x(x) for x in xs])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
    g.set_titles("{col_name}")
    g.set_axis_labels(f"{param} per event", "speedup vs sequential")
    if g.legend is not None:
        g.legend.set_title("strategy")
    g.figure.suptitle(title, y=1.02)
    return g.figure


# ---------------------------------------------------------------- findings and environment


def _fmt_x(x: float) -> str:
    return f"{x:.3g}"


def _cell_where(row: pd.Series) -> str:
    return f"{row['workload']}/{row['shape']} at {int(row['workers'])} workers (seed {int(row['seed'])})"


def findings(df: pd.DataFrame, param: str = "work_us") -> list[str]:
    """Sentences computed from the summary table."""
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
            out.append(f"Every verdict matched what its strategy promises ({int(promised)} cells with a promise).")
    timed = _timed(df)
    parallel = timed[~timed["label"].str.startswith(BASELINE)] if not timed.empty else timed
    if timed.empty:
        out.append("No cell was timed, so there are no speedups.")
        return out
    if parallel.empty:
        out.append("Only the sequential strategy was timed: no speedups to report.")
        return out
    t = _speed_table(df)
    tp = t[~t["label"].str.startswith(BASELINE)]
    exact_rows = tp[tp["exact"]]
    if (exact_rows["workers"] > 1).any():
        exact_rows = exact_rows[exact_rows["workers"] > 1]  # one worker is no parallel speedup
    if not exact_rows.empty:
        best = exact_rows.loc[exact_rows["speedup"].idxmax()]
        lead = (
            "Best speedup of an exact strategy"
            if best["speedup"] >= 1.0
            else ("No exact parallel run beat sequential; the closest")
        )
        out.append(
            f"{lead}: {best['speedup']:.2f}x "
            f"(95% interval {best['lo']:.2f}-{best['hi']:.2f}, mean over {int(best['seeds'])} seed(s)) "
            f"by {best['label']} on {best['where']} at {int(best['workers'])} workers, "
            f"efficiency {best['efficiency']:.0%}."
        )
    else:
        out.append("No parallel strategy was exact in a timed cell.")
    fastest = tp.loc[tp["speedup"].idxmax()]
    if not bool(fastest["exact"]):
        out.append(
            f"The fastest cell overall, {fastest['label']} on {fastest['where']} at {int(fastest['workers'])} "
            f"workers ({fastest['speedup']:.2f}x), was not exact: its speed is that of a wrong answer."
        )
    above = tp[tp["speedup"] > 1.0]
    out.append(
        f"{len(above)} of {len(tp)} timed parallel (shape, strategy, workers) points beat sequential; "
        f"the median speedup is {tp['speedup'].median():.2f}x."
    )
    pts = breakeven_points(df, param)
    if not pts.empty and pts.groupby("workload")["x"].nunique().max() >= 2:
        for workload, wpts in pts.groupby("workload", sort=False):
            if wpts["x"].nunique() < 2:
                continue
            at, below, above = [], [], []
            for label, lp in wpts.groupby("label", sort=False):
                kind, x = breakeven(lp["x"].tolist(), lp["speedup"].tolist())
                if kind == "at" and x is not None:
                    at.append(f"{label} at about {_fmt_x(x)}")
                elif kind == "below":
                    below.append(label)
                elif kind == "above":
                    above.append(label)
            lo, hi = _fmt_x(wpts["x"].min()), _fmt_x(wpts["x"].max())
            phrases = at[:]
            if below:
                phrases.append(f"already faster at {lo} (the smallest value swept): " + ", ".join(below))
            if above:
                phrases.append(f"still slower at {hi} (the largest value swept): " + ", ".join(above))
            family = wpts["family"].iloc[0]
            workers = int(wpts["workers"].iloc[0])
            out.append(
                f"Break-even {param} per event on {workload} ({family}, {workers} workers): " + "; ".join(phrases) + "."
            )
    else:
        out.append(f"Break-even granularity: not computable (needs timed cells at two or more {param} values).")
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
            out.append(
                f"Synchronisation overhead at one worker (mean over shapes): lowest {lo_lab} ({lo_val:+.1f} "
                f"µs/event over sequential), highest {hi_lab} ({hi_val:+.1f} µs/event)."
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
    gil = _unique(df, "gil_enabled")
    gil_text = {"True": "enabled", "False": "disabled"}.get(gil, gil)
    ft = _unique(df, "free_threaded_build")
    rows += [
        ("CPU", _unique(df, "cpu_model")),
        ("cores (usable)", f"{_unique(df, 'cores')} ({_unique(df, 'usable_cores')})"),
        ("Python", f"{_unique(df, 'implementation')} {_unique(df, 'python')}"),
        ("GIL", gil_text + (" (free-threaded build)" if ft == "True" else "")),
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


def speedup_table(df: pd.DataFrame) -> pd.DataFrame:
    t = _speed_table(df)
    if t.empty:
        return t
    t = t.copy()
    t["speedup [interval]"] = [
        f"{s:.2f} [{lo:.2f}, {hi:.2f}]" if not (math.isnan(lo) or math.isnan(hi)) else f"{s:.2f}"
        for s, lo, hi in zip(t["speedup"], t["lo"], t["hi"], strict=True)
    ]
    t["µs/event"] = t["us_per_event"].map(lambda v: f"{v:.1f}")
    t["exact"] = t["exact"].map({True: "yes", False: "NO"})
    return t[["where", "label", "workers", "speedup [interval]", "µs/event", "exact"]]


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


def environment_html(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>environment</title><style>{_CSS}</style>"
        f"</head><body><h2>Environment</h2><table>{body}</table></body></html>"
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


def render(
    summary: str | Path,
    outputs: dict[str, str | Path],
    *,
    param: str = "work_us",
    description: str = "",
    source: str = "",
) -> list[str]:
    """Write every figure, the findings and environment pages and the PDF; return the PDF's page titles."""
    sns.set_theme(style="whitegrid", context="paper")
    df = load_summary(summary)
    sentences = findings(df, param)
    title = "tickpar report"
    extra = {"config": source or "?", "cells": len(df)}
    if "n_values" in df.columns and not df.empty:
        timed = df[df.get("timing_status") == "ok"]
        if not timed.empty:
            extra["pyperf values per timed cell"] = int(pd.to_numeric(timed["n_values"]).median())
    env = environment_rows(df, extra)
    _write_text(outputs["findings"], findings_html(df, sentences, title))
    _write_text(outputs["environment"], environment_html(env))
    makers = {
        "correctness": lambda: fig_correctness(df),
        "speedup": lambda: fig_speedup(df),
        "efficiency": lambda: fig_speedup(df, efficiency=True),
        "breakeven": lambda: fig_breakeven(df, param),
        "time_per_event": lambda: fig_time_per_event(df),
        "overhead": lambda: fig_overhead(df),
    }
    pages: list[str] = []
    pdf_path = Path(outputs["pdf"])
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_pdf = pdf_path.with_name(f".{pdf_path.name}.tmp")
    with PdfPages(tmp_pdf) as pdf:
        subtitle = " ".join(x for x in (description, f"config: {source}" if source else "") if x)
        fig = _text_page("tickpar: findings", sentences, subtitle)
        pdf.savefig(fig)
        plt.close(fig)
        pages.append("findings")
        env_table = pd.DataFrame(env, columns=["", "value"])
        for fig in _table_pages("Environment", env_table, rows_per_page=60, widths=(0.3, 0.7)):
            pdf.savefig(fig)
            plt.close(fig)
            pages.append("environment")
        for name in ("correctness", "speedup", "efficiency", "breakeven", "time_per_event", "overhead"):
            fig = makers[name]()
            target = Path(outputs[name])
            target.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(target, bbox_inches="tight")
            pdf.savefig(fig, bbox_inches="tight")
            plt.close(fig)
            pages.append(name)
        vt = verdict_table(df)
        vt_widths = [0.34] + [0.62 / max(len(vt.columns), 1)] * len(vt.columns)
        st_widths = (0.2, 0.33, 0.07, 0.2, 0.1, 0.07)
        for name, table, widths in (("verdict table", vt, vt_widths), ("speedup table", speedup_table(df), st_widths)):
            for fig in _table_pages(name.capitalize(), table, widths=widths if not table.empty else None):
                pdf.savefig(fig)
                plt.close(fig)
                pages.append(name)
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
    pages = render(
        smk.input.summary,
        outputs,
        param=smk.params.report["granularity_param"],
        description=smk.params.description,
        source=smk.params.source,
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
    args = parser.parse_args(argv)
    outputs: dict[str, str | Path] = {name: Path(args.outdir, f"{name}.{args.format}") for name in FIGURES}
    outputs["findings"] = Path(args.outdir, "findings.html")
    outputs["environment"] = Path(args.outdir, "environment.html")
    outputs["pdf"] = args.pdf
    pages = render(args.summary, outputs, param=args.granularity_param, source=args.summary)
    print(f"{args.pdf}: {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
