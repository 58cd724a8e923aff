"""The speedup study in the report: which timed points count, bounds beside them, break-even, predicted scaling.

Used by :mod:`tickpar.report` (pages ``speedup``, ``breakeven``, ``scaling``,
the speedup table and the speed findings).  Inputs: ``results/summary.csv``
and ``results/prediction.csv`` (:mod:`tickpar.perf.predict.prediction`).

*Counted* points (:func:`counted`): a timed cell's speedup counts toward the
study only if its run was exact and, where the summary has the timing
columns, its timed runs were exact (``timed_exact``) and it was not measured
under contention (``contended``: every round, re-times included, saw another
load).  Every other timed point is still drawn, hollow, and listed, but it never
makes a finding.  :func:`retime_finding` says how many contended rounds were
timed again, and why.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from tickpar.perf.predict.tables import BOUND_TOLERANCE
from tickpar.plugins import BASELINE
from tickpar.report.model_error import PRESET_ENGINE, model_error, recompute

__all__ = [
    "base_label",
    "bound_defects",
    "bound_defects_finding",
    "breakeven",
    "breakeven_figure",
    "breakeven_points",
    "counted",
    "empty_figure",
    "engine_breakevens",
    "engine_of",
    "engine_points",
    "fig_breakeven",
    "fig_scaling",
    "points_at_largest_workers",
    "retime_finding",
    "speed_findings",
    "speed_table",
    "speedup_table",
    "uncounted_finding",
    "validation",
]

_NUMERIC = (
    "speedup", "speedup_lo", "speedup_hi", "loop_speedup", "loop_speedup_lo", "loop_speedup_hi",
    "bound_speedup", "ideal_speedup", "efficiency", "us_per_event", "overhead_us_per_event",
)  # fmt: skip


def _flag(df: pd.DataFrame, column: str, default: bool) -> pd.Series:
    """A boolean column read from CSV text; ``default`` where the column or the value is missing."""
    if column not in df.columns:
        return pd.Series(default, index=df.index)
    return df[column].map(lambda v: default if pd.isna(v) else str(v).strip().lower() in ("true", "1", "yes"))


def timed(df: pd.DataFrame) -> pd.DataFrame:
    """Timed rows with a speedup (counted or not)."""
    if df.empty or "timing_status" not in df.columns or "speedup" not in df.columns:
        return df.iloc[0:0]
    out = df[(df["timing_status"] == "ok") & pd.to_numeric(df["speedup"], errors="coerce").notna()].copy()
    for col in _NUMERIC:
        if col in out.columns:
            out[col] = pd.to_numeric(out[col], errors="coerce")
    out["counted"] = (out["verdict"] == "exact") & _flag(out, "timed_exact", True) & ~_flag(out, "contended", False)
    return out


def counted(df: pd.DataFrame) -> pd.DataFrame:
    """The timed rows whose speedup counts: exact, timed runs exact, not contended."""
    t = timed(df)
    return t[t["counted"]]


def base_label(df: pd.DataFrame) -> pd.Series:
    """Each row's strategy/variant label without its order suffix (``label`` where there is no ``base_label``)."""
    if "base_label" in df.columns:
        return df["base_label"].fillna(df["label"]).astype(str)
    return df["label"].astype(str)


def points_at_largest_workers(
    t: pd.DataFrame, param: str, by: Sequence[str], keys: Sequence[str], y: str = "speedup"
) -> pd.DataFrame:
    """The mean of ``y`` per ``keys`` and ``param_<param>`` value (as ``x``) at each ``by`` group's largest workers.

    ``t``: counted rows with a ``base_label`` column and whatever ``by`` and ``keys`` name; the
    baseline's rows are left out.  Columns: ``by``, ``keys``, ``x``, ``speedup`` (the mean of ``y``),
    ``workers``.
    """
    col = f"param_{param}"
    cols = [*by, *keys, "x", "speedup", "workers"]
    if t.empty or col not in t.columns:
        return pd.DataFrame(columns=cols)
    t = t[t["strategy"] != BASELINE]
    frames = []
    for group, gdf in t.groupby(list(by), sort=False):
        wmax = int(gdf["workers"].max())
        gdf = gdf[gdf["workers"] == wmax]
        pts = gdf.groupby([*keys, col], sort=False, as_index=False).agg(speedup=(y, "mean"))
        pts = pts.rename(columns={col: "x"})
        for name, value in zip(by, group if isinstance(group, tuple) else (group,), strict=True):
            pts[name] = value
        pts["workers"] = wmax
        frames.append(pts)
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)
    out["x"] = pd.to_numeric(out["x"], errors="coerce")
    return out[cols].sort_values([*by, *keys, "x"]).reset_index(drop=True)


def speed_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (where, label, workers): speedups over seeds (mean; interval: envelope), bounds, achieved/bound.

    ``achieved`` is ``loop_speedup`` where the summary has it (the bound models
    the loop alone), else ``speedup``; ``of_bound`` is ``achieved / bound_speedup``.
    """
    cols = ["where", "label", "workers", "speedup", "lo", "hi", "loop", "loop_lo", "loop_hi", "bound", "ideal",
            "achieved", "of_bound", "efficiency", "us_per_event", "overhead", "exact", "counted", "seeds",
            "retimed"]  # fmt: skip
    d = timed(df)
    if d.empty:
        return pd.DataFrame(columns=cols)
    for col in ("loop_speedup", "loop_speedup_lo", "loop_speedup_hi", "bound_speedup", "ideal_speedup"):
        if col not in d.columns:
            d[col] = math.nan
    d["n_retimed"] = pd.to_numeric(d["n_retimed"], errors="coerce").fillna(0) if "n_retimed" in d.columns else 0
    g = d.groupby(["where", "label", "workers"], sort=False)
    out = g.agg(
        speedup=("speedup", "mean"),
        lo=("speedup_lo", "min"),
        hi=("speedup_hi", "max"),
        loop=("loop_speedup", "mean"),
        loop_lo=("loop_speedup_lo", "min"),
        loop_hi=("loop_speedup_hi", "max"),
        bound=("bound_speedup", "mean"),
        ideal=("ideal_speedup", "mean"),
        efficiency=("efficiency", "mean"),
        us_per_event=("us_per_event", "mean"),
        overhead=("overhead_us_per_event", "mean"),
        exact=("verdict", lambda v: bool((v == "exact").all())),
        counted=("counted", "all"),
        seeds=("seed", "nunique"),
        retimed=("n_retimed", "sum"),
    ).reset_index()
    out["achieved"] = out["loop"].where(out["loop"].notna(), out["speedup"])
    out["of_bound"] = out["achieved"] / out["bound"]
    return out[cols]


def _interval(s: float, lo: float, hi: float) -> str:
    if math.isnan(s):
        return "-"
    if math.isnan(lo) or math.isnan(hi):
        return f"{s:.2f}"
    return f"{s:.2f} [{lo:.2f}, {hi:.2f}]"


def speedup_table(df: pd.DataFrame) -> pd.DataFrame:
    """The report's speedup table: speedup and loop speedup with intervals, bound, achieved/bound, counted."""
    t = speed_table(df)
    if t.empty:
        return t
    out = pd.DataFrame(
        {
            "where": t["where"],
            "label": t["label"],
            "P": t["workers"],
            "speedup [95%]": [_interval(*v) for v in zip(t["speedup"], t["lo"], t["hi"], strict=True)],
            "loop [95%]": [_interval(*v) for v in zip(t["loop"], t["loop_lo"], t["loop_hi"], strict=True)],
            "bound": t["bound"].map(lambda v: "-" if math.isnan(v) else f"{v:.2f}"),
            "of bound": t["of_bound"].map(lambda v: "-" if math.isnan(v) else f"{v:.0%}"),
            "counted": [
                "yes" if c else ("NO: not exact" if not e else "NO: timed run/contention")
                for c, e in zip(t["counted"], t["exact"], strict=True)
            ],
            "re-timed": t["retimed"].map(lambda v: int(v) if v else "-"),
        }
    )
    return out


def retime_finding(df: pd.DataFrame) -> str | None:
    """One sentence: how many contended timing rounds were re-timed, of which cells, why, and what was lost.

    None when the summary has no timed cell or predates re-timing (no ``n_retimed`` column).
    """
    if df.empty or "n_retimed" not in df.columns or "timing_status" not in df.columns:
        return None
    t = df[df["timing_status"] == "ok"]
    if t.empty:
        return None
    n = pd.to_numeric(t["n_retimed"], errors="coerce").fillna(0).astype(int)
    lost = t[_flag(t, "contended", False)]
    tail = (
        f" {len(lost)} timed cell(s) still had every round contended and have no speedup"
        f" ({', '.join(f'{r.label} on {r.workload}/{r.shape}' for r in lost.itertuples())})."
        if not lost.empty
        else " No cell lost its speedup to contention."
    )
    if not n.any():
        return f"Timing: no round was re-timed (no CPU-availability probe saw another load).{tail}"
    retimed = t[n > 0]
    why = [
        f"{r.label} on {r.workload}/{r.shape}: {r.retime_reasons}"
        for r in retimed.itertuples()
        if isinstance(r.retime_reasons, str) and r.retime_reasons
    ]
    return (
        f"Timing: {int(n.sum())} contended round(s) of {len(retimed)} cell(s) were re-timed"
        f" ({'; '.join(why[:4])}{'; ...' if len(why) > 4 else ''}).{tail}"
    )


# ---------------------------------------------------------------- break-even


def breakeven_points(df: pd.DataFrame, param: str = "work_us", counted_only: bool = True) -> pd.DataFrame:
    """Mean speedup at the largest timed worker count per (workload, family, label, granularity value).

    One row set per shape family (a base shape and the shapes a ``sweep``
    derived from it) with two or more granularity values; when no family of a
    workload has two, all its shapes form one family ("all shapes").  Only
    counted points, unless ``counted_only`` is false.
    """
    col = f"param_{param}"
    empty = pd.DataFrame(columns=["workload", "family", "label", "x", "speedup", "lo", "hi", "workers"])
    t = counted(df) if counted_only else timed(df)
    if col not in t.columns or t.empty:
        return empty
    t = t[~t["label"].str.startswith(BASELINE)]
    frames = []
    for workload, wdf in t.groupby("workload", sort=False):
        wmax = int(wdf["workers"].max())
        wdf = wdf[wdf["workers"] == wmax]
        sizes = wdf.groupby("family")[col].nunique()
        families = [str(f) for f, n in sizes.items() if n >= 2]
        groups = [(f, wdf[wdf["family"] == f]) for f in families] or [("all shapes", wdf)]
        for family, fdf in groups:
            pts = fdf.groupby(["label", col], sort=False).agg(
                speedup=("speedup", "mean"), lo=("speedup_lo", "min"), hi=("speedup_hi", "max")
            )
            pts = pts.reset_index().rename(columns={col: "x"})
            pts["workload"], pts["family"], pts["workers"] = workload, family, wmax
            frames.append(pts)
    if not frames:
        return empty
    out = pd.concat(frames, ignore_index=True)
    out["x"] = pd.to_numeric(out["x"], errors="coerce")
    return out.sort_values(["workload", "family", "label", "x"]).reset_index(drop=True)


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


def breakeven_figure(x: float) -> str:
    """A break-even work per event as every page prints it (three significant digits)."""
    return f"{x:.3g}"


_fmt = breakeven_figure


def breakeven_text(kind: str, x: float | None) -> str:
    if kind == "at" and x is not None:
        return f"breaks even at about {_fmt(x)}"
    if kind == "below" and x is not None:
        return f"already faster at {_fmt(x)} (the smallest value swept)"
    if kind == "above" and x is not None:
        return f"break-even beyond {_fmt(x)} (the largest value swept)"
    return "no counted point"


def empty_figure(title: str, message: str) -> plt.Figure:
    """A figure that says why there is nothing to draw (the report keeps every page)."""
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontsize=11, color="#555555")
    return fig


def fig_breakeven(df: pd.DataFrame, palette: dict[str, object], param: str = "work_us") -> plt.Figure:
    """Speedup against the granularity on a log axis, one panel per workload family; 1.0 marked."""
    title = f"Speedup vs {param} (largest timed worker count): break-even where a line crosses 1"
    pts = breakeven_points(df, param)
    if pts.empty or pts.groupby(["workload", "family"])["x"].nunique().max() < 2:
        return empty_figure(title, f"needs counted parallel points at two or more values of {param}")
    pts = pts[pts["x"] > 0].copy()
    pts["panel"] = pts["workload"] + " (" + pts["family"] + ", " + pts["workers"].astype(str) + " workers)"
    panels = list(dict.fromkeys(pts["panel"]))
    g = sns.relplot(
        data=pts, x="x", y="speedup", hue="label", col="panel", col_order=panels, col_wrap=max(1, min(3, len(panels))),
        kind="line", marker="o", palette=palette, hue_order=[lab for lab in palette if lab in set(pts["label"])],
        height=3.0, aspect=1.3, facet_kws={"sharex": False, "sharey": False}, errorbar=None,
    )  # fmt: skip
    for panel, ax in g.axes_dict.items():
        sub = pts[pts["panel"] == panel]
        for label, s in sub.groupby("label", sort=False):
            lo = (s["speedup"] - s["lo"]).clip(lower=0).fillna(0)
            hi = (s["hi"] - s["speedup"]).clip(lower=0).fillna(0)
            ax.errorbar(s["x"], s["speedup"], yerr=[lo, hi], fmt="none", ecolor=palette.get(label), capsize=2, lw=1)
        ax.axhline(1.0, color="black", ls="--", lw=1)
        ax.set_xscale("log")
        xs = sorted(sub["x"].unique())
        ax.set_xticks(xs, [_fmt(x) for x in xs])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
    g.set_titles("{col_name}")
    g.set_axis_labels(f"{param} per event (log scale)", "speedup vs sequential")
    if g.legend is not None:
        g.legend.set_title("strategy")
    g.figure.suptitle(title, y=1.02)
    return g.figure


# ---------------------------------------------------------------- bound defects


def bound_defects(df: pd.DataFrame) -> pd.DataFrame:
    """Counted cells whose measured speedup (``loop_speedup``, else ``speedup``) is above ``bound_speedup``,
    its whole 95% interval included (the lower end above the bound; without an interval, the point).

    The bound is the zero-overhead limit under the strategy's own assignment, so such a cell is a
    defect (of the bound or of the measurement); a point above whose interval reaches the bound is the
    measurement's noise (a 1-worker cell against its bound of exactly 1), judged as the prediction table's
    ``above_bound`` is (:data:`tickpar.perf.predict.tables.BOUND_TOLERANCE`).  Columns ``where``, ``label``,
    ``workers``, ``seed``, ``achieved`` (the point), ``bound``, ordered by how far above.
    """
    cols = ["where", "label", "workers", "seed", "achieved", "bound"]
    c = counted(df)
    if c.empty or "bound_speedup" not in c.columns:
        return pd.DataFrame(columns=cols)
    def column(name: str) -> pd.Series:
        return c[name] if name in c.columns else pd.Series(math.nan, index=c.index)

    loop = column("loop_speedup")
    achieved = loop.where(loop.notna(), column("speedup"))
    low = column("loop_speedup_lo").where(loop.notna(), column("speedup_lo"))
    low = low.where(low.notna(), achieved)
    bound = c["bound_speedup"]
    above = bound.notna() & (low > bound * (1 + BOUND_TOLERANCE))
    out = c.loc[above, ["where", "label", "workers", "seed"]].assign(achieved=achieved[above], bound=bound[above])
    out = out.assign(_over=out["achieved"] / out["bound"]).sort_values("_over", ascending=False)
    return out[cols].reset_index(drop=True)


def bound_defects_finding(df: pd.DataFrame, shown: int = 6) -> str | None:
    """One sentence listing the counted cells above their bound (``None`` when nothing has a bound)."""
    c = counted(df)
    if c.empty or "bound_speedup" not in c.columns or c["bound_speedup"].isna().all():
        return None
    bad = bound_defects(df)
    if bad.empty:
        checked = int(c["bound_speedup"].notna().sum())
        return f"No counted cell's measured speedup is above its bound ({checked} checked)."
    listed = "; ".join(
        f"{r.label} on {r.where} at {int(r.workers)} workers (seed {r.seed}): {r.achieved:.2f}x against {r.bound:.2f}x"
        for r in bad.head(shown).itertuples()
    )
    more = f"; and {len(bad) - shown} more" if len(bad) > shown else ""
    return (
        f"DEFECT: {len(bad)} counted cell(s) measured above their bound (the zero-overhead limit under the "
        f"strategy's own assignment, so the bound or the measurement is wrong): {listed}{more}."
    )


# ---------------------------------------------------------------- predicted scaling


def scaling_shapes(df: pd.DataFrame, prediction: pd.DataFrame, param: str = "work_us") -> list[tuple[str, str]]:
    """The (workload, shape) panels of the scaling figure: per workload family, the shape with the most work."""
    if prediction.empty:
        return []
    have = set(zip(prediction["workload"], prediction["shape"], strict=True))
    col = f"param_{param}"
    out: list[tuple[str, str]] = []
    if df.empty or "family" not in df.columns:
        return sorted(have)[:6]
    shapes = df[["workload", "shape", "family", *([col] if col in df.columns else [])]].drop_duplicates()
    for (_workload, _family), grp in shapes.groupby(["workload", "family"], sort=False):
        grp = grp[[(w, s) in have for w, s in zip(grp["workload"], grp["shape"], strict=True)]]
        if grp.empty:
            continue
        if col in grp.columns:
            grp = grp.assign(_x=pd.to_numeric(grp[col], errors="coerce").fillna(0)).sort_values("_x")
        row = grp.iloc[-1]
        out.append((str(row["workload"]), str(row["shape"])))
    return out[:6]


def validation(s: pd.DataFrame) -> tuple[float, int, int, str] | None:
    """``(median |rel_error|, smallest and largest validated P, kind)`` of one model line (``None``: no measured point).

    Validated points are the measured ones the model was not fitted on (``validation`` is not ``fit``);
    ``kind`` is ``held-out`` where they all lie on a held-out shape, else ``sweep``.
    """
    m = s[s["measured_speedup"].notna() & s["rel_error"].notna()]
    if "validation" in m.columns:
        m = m[m["validation"].fillna("sweep") != "fit"]
    if m.empty:
        return None
    kind = "held-out" if "validation" in m.columns and (m["validation"] == "held-out").all() else "sweep"
    err = float(np.median(np.abs(m["rel_error"].astype(float))))
    return err, int(m["workers"].min()), int(m["workers"].max()), kind


def _split_line(ax: plt.Axes, s: pd.DataFrame, column: str, top: int | None, **style: object) -> None:
    """``column`` against workers: full strength up to ``top``, faint beyond (extrapolation); all faint without."""
    if top is None:
        ax.plot(s["workers"], s[column], alpha=0.35, **style)  # type: ignore[arg-type]
        return
    inside, beyond = s[s["workers"] <= top], s[s["workers"] >= top]
    ax.plot(inside["workers"], inside[column], **style)  # type: ignore[arg-type]
    ax.plot(beyond["workers"], beyond[column], alpha=0.35, **style)  # type: ignore[arg-type]


def _model_text(s: pd.DataFrame, points: pd.DataFrame, param: str) -> tuple[str, int | None]:
    """A model line's legend text and the largest worker count it was validated at: THE model error of its strategy
    variant and preset's engine (:func:`tickpar.report.model_error.model_error`, the one page 1 gives)."""
    row = s.iloc[0]
    engine = PRESET_ENGINE.get(str(row["preset"]), "python")
    error = model_error(points, engine, str(row["strategy"]), str(row["variant"]), param) if not points.empty else None
    return (error.text(), error.top) if error is not None else ("not validated", None)


def _bound_text(s: pd.DataFrame) -> tuple[str, int | None]:
    """The bound line's legend text: how many measured points lie above it (judged with their 95% intervals)."""
    m = s[s["measured_speedup"].notna()]
    if m.empty:
        return "bound", None
    above = int(m["above_bound"].astype("boolean").fillna(False).sum()) if "above_bound" in m.columns else 0
    top = int(m["workers"].max())
    return f"bound: {above} above, P {int(m['workers'].min())}-{top}", top


def _scaling_panel(ax: plt.Axes, sub: pd.DataFrame, palette: dict[str, object], points: pd.DataFrame,
                   param: str) -> list[Line2D]:  # fmt: skip
    """One panel's lines and points; returns its legend handles (one per line, naming what it is and its error)."""
    handles: list[Line2D] = []
    for (label, preset), s in sub.groupby(["label", "preset"], sort=False):
        s = s.sort_values("workers")
        color, ls = palette.get(label), "-" if preset == "here" else "--"
        text, top = _model_text(s, points, param)
        _split_line(ax, s, "predicted_speedup", top, color=color, lw=1.4, ls=ls)
        legend = textwrap.fill(f"{label} {preset} model: {text}", 44)  # wrapped: clear of the next panel
        handles.append(Line2D([], [], color=color, ls=ls, lw=1.4, label=legend))
        if preset != "here":
            continue
        if "bound" in s.columns and s["bound"].notna().any():
            text, top = _bound_text(s)
            _split_line(ax, s, "bound", top, color=color, lw=0.9, ls="-.")
            handles.append(Line2D([], [], color=color, ls="-.", lw=0.9, label=f"{label} {text}"))
        m = s[s["measured_speedup"].notna()]
        ax.scatter(m["workers"], m["measured_speedup"], color=color, edgecolor="black", s=36, zorder=5)
        if "bound" in m.columns:
            over = m[m["above_bound"].astype("boolean").fillna(False).astype(bool)] if "above_bound" in m.columns \
                else m[m["measured_speedup"] > m["bound"] * (1 + 1e-9)]
            ax.scatter(over["workers"], over["measured_speedup"], color="red", marker="x", s=70, zorder=6)
    return handles


def _scaling_axes(ax: plt.Axes, sub: pd.DataFrame, title: str) -> None:
    workers = sorted(sub["workers"].unique())
    ax.plot(workers, workers, color="#999999", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(workers, [str(w) for w in workers])
    values = pd.concat([sub["predicted_speedup"], sub["measured_speedup"]]).dropna()
    lo = 2.0 ** math.floor(math.log2(max(values.min(), 1 / 64))) if not values.empty else 0.5
    ticks = [2.0**k for k in range(int(math.log2(lo)), 7)]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("workers")
    ax.set_ylabel("speedup vs sequential")


def fig_scaling(
    df: pd.DataFrame, prediction: pd.DataFrame, palette: dict[str, object], param: str = "work_us"
) -> plt.Figure:
    """Speedup vs workers (log2): the model, presets ``here`` (solid) and ``cxx`` (native, dashed); the bound
    (zero overhead, dash-dot); measured points on top, a red cross on each one above its bound (a defect).

    Each panel has its own legend beside it, one entry per line with its validation error and P range, so
    that no label sits on a line or on another label."""
    title = ("Scaling: model here (calibrated, solid), model cxx (native C++ engine, dashed), bound (zero overhead, "
             "dash-dot); measured points on top, x: above its bound")  # fmt: skip
    panels = scaling_shapes(df, prediction, param)
    if not panels:
        return empty_figure(title, "no predictions: results/prediction.csv is empty or missing")
    cols = 1 if len(panels) == 1 else 2
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(8.4 * cols, 3.6 * rows), squeeze=False,
                             gridspec_kw={"wspace": 1.1, "hspace": 0.45})  # fmt: skip
    p = prediction.copy()
    p["label"] = [s if v == "default" else f"{s}/{v}" for s, v in zip(p["strategy"], p["variant"], strict=True)]
    try:  # the model's measured points, for THE model error in each line's legend
        points = recompute(df, prediction, param)
    except KeyError:  # a summary or prediction without the join's columns: nothing validated
        points = pd.DataFrame()
    drawn = list(dict.fromkeys(p["label"]))
    if len(drawn) <= 10:  # the sweep's palette spreads over every label of the sweep: few, distinct colours here
        palette = dict(zip(drawn, sns.color_palette("tab10", len(drawn)), strict=True))
    for ax, (workload, shape) in zip(axes.flat, panels, strict=False):
        sub = p[(p["workload"] == workload) & (p["shape"] == shape)]
        handles = _scaling_panel(ax, sub, palette, points, param)
        _scaling_axes(ax, sub, f"{workload}/{shape}")
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6, frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles = [
        Line2D([], [], color="black", ls="-", label="model, here (calibrated)"),
        Line2D([], [], color="black", ls="-", alpha=0.35, label="beyond the validated P (extrapolation)"),
        Line2D([], [], color="black", ls="--", label="model, cxx (native engine)"),
        Line2D([], [], color="black", ls="-.", lw=0.9, label="bound (zero overhead)"),
        Line2D([], [], color="red", marker="x", ls="", label="measured above its bound (defect)"),
        Line2D([], [], color="#999999", ls=":", label="y = workers"),
        Line2D([], [], color="white", marker="o", markeredgecolor="black", markerfacecolor="#888888", label="measured"),
    ]
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8, frameon=False, ncol=4)
    fig.suptitle(title, fontsize=10, y=1.08)
    return fig


# ---------------------------------------------------------------- findings


def uncounted_finding(df: pd.DataFrame) -> str | None:
    """One sentence: how many timed parallel cells do not count toward speedups, and why (None: all count)."""
    t = timed(df)
    left = t[~t["label"].str.startswith(BASELINE) & ~t["counted"]] if not t.empty else t
    if left.empty:
        return None
    why = []
    if (left["verdict"] != "exact").any():
        why.append(f"{int((left['verdict'] != 'exact').sum())} not exact")
    if "timed_exact" in left.columns and (~_flag(left, "timed_exact", True)).any():
        why.append(f"{int((~_flag(left, 'timed_exact', True)).sum())} with a timed run that was not exact")
    if "contended" in left.columns and _flag(left, "contended", False).any():
        why.append(f"{int(_flag(left, 'contended', False).sum())} timed under contention")
    n_par = int((~t["label"].str.startswith(BASELINE)).sum())
    return (
        f"{len(left)} of {n_par} timed parallel cells do not count toward speedups ({', '.join(why)}); "
        "they are drawn hollow and listed in the speedup table."
    )


def speed_findings(df: pd.DataFrame, prediction: pd.DataFrame, param: str = "work_us") -> list[str]:
    """Per strategy and shape family: break-even, best counted speedup, fraction of bound, and the model's error
    (:func:`tickpar.report.model_error.model_error`, the figure page 1 gives beside the model)."""
    out: list[str] = []
    t = timed(df)
    if t.empty:
        return ["No cell was timed, so there are no speedups."]
    if t["label"].str.startswith(BASELINE).all():
        return ["Only the sequential strategy was timed: no speedups to report."]
    table = speed_table(df)
    table = table[~table["label"].str.startswith(BASELINE) & table["counted"]]
    be = engine_breakevens(df, param)  # the one break-even (loop speedup) that page 1 and answer.csv quote too
    engine_of_label = dict(zip(df["label"], df["engine"].fillna("python").astype(str), strict=True)) \
        if "engine" in df.columns else {}
    base_of = dict(zip(df["label"], base_label(df), strict=True))
    points = recompute(df, prediction, param) if not prediction.empty else pd.DataFrame()
    shapes = df[["workload", "shape", "family"]].drop_duplicates() if "family" in df.columns else pd.DataFrame()
    fam_of = {f"{w}/{s}": f"{w}/{f}" for w, s, f in shapes.itertuples(index=False)} if not shapes.empty else {}
    table = table.assign(fam=table["where"].map(lambda w: fam_of.get(w, w)))
    multi = table[table["workers"] > 1]
    for (fam, label), grp in multi.groupby(["fam", "label"], sort=False):
        best = grp.loc[grp["achieved"].idxmax()]
        kind = "loop speedup" if not math.isnan(best["loop"]) else "speedup"
        lo, hi = (best["loop_lo"], best["loop_hi"]) if kind == "loop speedup" else (best["lo"], best["hi"])
        parts = [
            f"best {kind} {best['achieved']:.2f}x (95% interval {lo:.2f}-{hi:.2f}) on {best['where']} "
            f"at {int(best['workers'])} workers"
        ]
        if not math.isnan(best["bound"]):
            parts.append(f"{best['of_bound']:.0%} of its bound {best['bound']:.2f}x")  # above it: the appendix
        workload, family = fam.split("/", 1)
        bp = be[(be["workload"] == workload) & (be["family"] == family) & (be["base_label"] == base_of.get(label))
                & (be["engine"] == engine_of_label.get(label, "python"))]  # fmt: skip
        if not bp.empty and ("[" not in label or label.endswith("[native]")):  # page 1's: no other interpreter
            parts.append(f"{param} {breakeven_text(bp['kind'].iloc[0], bp['x'].iloc[0])} (loop speedup crosses 1 "
                         f"at {int(bp['workers'].iloc[0])} workers)")  # fmt: skip
        engine = engine_of_label.get(label, "python")
        if not points.empty and ("[" not in label or label.endswith("[native]")):  # the model's: no other interpreter
            strategy, _, variant = base_of.get(label, label).partition("/")
            error = model_error(points, engine, strategy, variant or "default", param)
            if error is not None:
                parts.append(f"model {error.text()} (all its shapes)")
        out.append(f"{label} on {fam}: " + "; ".join(parts) + ".")
    if multi.empty:
        out.append("No counted parallel point at more than one worker.")
    else:
        best = multi.loc[multi["achieved"].idxmax()]
        lead = (
            "Best speedup of an exact strategy (counted points)"
            if best["achieved"] >= 1.0
            else "No counted parallel run beat sequential; the closest"
        )
        kind = "loop speedup" if not math.isnan(best["loop"]) else "speedup"
        end_to_end = ""
        if not math.isnan(best["speedup"]):
            end_to_end = (
                f"; end to end (what a user waits for) {best['speedup']:.2f}x, "
                f"95% interval {best['lo']:.2f}-{best['hi']:.2f}"
            )
        out.append(
            f"{lead}: {kind} {best['achieved']:.2f}x by {best['label']} on {best['where']} at "
            f"{int(best['workers'])} workers{end_to_end}."
        )
        above = multi[multi["achieved"] > 1.0]
        out.append(f"{len(above)} of {len(multi)} counted parallel (shape, strategy, workers) points beat sequential.")
    return out


def engine_of(df: pd.DataFrame) -> pd.Series:
    """Each row's engine (``python`` where the column is missing or empty)."""
    if "engine" not in df.columns:
        return pd.Series("python", index=df.index)
    return df["engine"].fillna("python").astype(str)


def engine_points(df: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """Mean counted loop speedup per (workload, family, engine, strategy/variant, granularity value).

    At the largest timed worker count of each (workload, engine); the baseline is left out.
    """
    cols = ["workload", "family", "engine", "base_label", "x", "speedup", "workers"]
    t = counted(df)
    if t.empty:
        return pd.DataFrame(columns=cols)
    y = "loop_speedup" if "loop_speedup" in t.columns else "speedup"
    loop = pd.to_numeric(t[y], errors="coerce").fillna(pd.to_numeric(t["speedup"], errors="coerce"))
    t = t.assign(engine=engine_of(t), base_label=base_label(t), _y=loop)
    out = points_at_largest_workers(t, param, by=("workload", "engine"), keys=("family", "base_label"), y="_y")
    out = out[out["x"] > 0]
    return out[cols].sort_values(["workload", "family", "engine", "base_label", "x"]).reset_index(drop=True)


def engine_breakevens(df: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """Per (workload, family, engine, strategy/variant) with two or more points: where it breaks even."""
    cols = ["workload", "family", "engine", "base_label", "kind", "x", "workers"]
    pts = engine_points(df, param)
    rows = []
    for (workload, family, engine, label), s in pts.groupby(["workload", "family", "engine", "base_label"]):
        if s["x"].nunique() < 2:
            continue
        kind, x = breakeven(s["x"].tolist(), s["speedup"].tolist())
        rows.append([workload, family, engine, label, kind, x, int(s["workers"].max())])
    return pd.DataFrame(rows, columns=cols)
