"""The optimistic (Time Warp) page: speedup and efficiency against work per event and against lookahead.

Drawn from ``results/summary.csv``: the timed, exact cells of ``optimistic``
beside those of ``conservative`` on the same shapes, at the largest worker
count both were timed at.  Two columns of panels:

* against the work per event (``param_work_us``, log axis) on the shape
  families the sweep varies it on;
* against the lookahead (``stat_lookahead``: the smallest latency of a link
  crossing LPs, log axis) at one work per event (the value shared by the most
  (workload, lookahead) pairs), so a lookahead-starved shape sits beside the
  wide ones.

Rows: the speedup over sequential (1.0 marked); Time Warp's efficiency
(``stat_efficiency``: committed / processed events, optimistic only); and the
mean rollback length (``stat_rollback_mean_length``: events undone per
rollback), which says where the efficiency went.  :func:`optimism_findings`
turns the same points into sentences for the findings page.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from tickpar.report.speed import empty_figure

__all__ = ["OPTIMISTIC", "fig_optimism", "optimism_findings", "optimism_points"]

OPTIMISTIC = "optimistic"
#: The strategies drawn: Time Warp and the conservative family it is compared with.
BESIDE = (OPTIMISTIC, "conservative")
_MARKERS = ("o", "s", "^", "D", "v", "P")


def _num(df: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(df[col], errors="coerce") if col in df.columns else pd.Series(math.nan, index=df.index)


def optimism_points(df: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """One row per timed, exact optimistic or conservative cell at the workers both share, with the figures used."""
    cols = ["workload", "family", "shape", "label", "strategy", "workers", "x", "lookahead", "speedup", "lo", "hi",
            "tw_efficiency", "rollbacks", "mean_length", "max_length", "rolled_back", "committed"]  # fmt: skip
    if df.empty or "strategy" not in df.columns or OPTIMISTIC not in set(df["strategy"]):
        return pd.DataFrame(columns=cols)
    sub = df[df["strategy"].isin(BESIDE) & (df["verdict"] == "exact")].copy()
    sub = sub[pd.to_numeric(sub.get("speedup"), errors="coerce").notna()] if "speedup" in sub else sub.iloc[0:0]
    if sub.empty:
        return pd.DataFrame(columns=cols)
    opt_workers = set(sub.loc[sub["strategy"] == OPTIMISTIC, "workers"])
    shared = opt_workers & set(sub.loc[sub["strategy"] != OPTIMISTIC, "workers"]) or opt_workers
    if not shared:
        return pd.DataFrame(columns=cols)
    sub = sub[sub["workers"] == max(shared)]
    out = pd.DataFrame(
        {
            "workload": sub["workload"].astype(str),
            "family": sub["family"].astype(str),
            "shape": sub["shape"].astype(str),
            "label": sub["label"].astype(str),
            "strategy": sub["strategy"].astype(str),
            "workers": sub["workers"].astype(int),
            "x": _num(sub, f"param_{param}"),
            "lookahead": _num(sub, "stat_lookahead"),
            "speedup": _num(sub, "speedup"),
            "lo": _num(sub, "speedup_lo"),
            "hi": _num(sub, "speedup_hi"),
            "tw_efficiency": _num(sub, "stat_efficiency"),
            "rollbacks": _num(sub, "stat_rollbacks"),
            "mean_length": _num(sub, "stat_rollback_mean_length"),
            "max_length": _num(sub, "stat_rollback_max_length"),
            "rolled_back": _num(sub, "stat_rolled_back"),
            "committed": _num(sub, "stat_committed"),
        }
    )
    return out.reset_index(drop=True)


def _lookahead_work(pts: pd.DataFrame) -> float | None:
    """The work per event of the lookahead panels: the one shared by the most (workload, lookahead) pairs."""
    have = pts.dropna(subset=["x", "lookahead"])
    if have.empty:
        return None
    counts = have.groupby("x").apply(lambda g: len(set(zip(g["workload"], g["lookahead"], strict=True))))
    best = counts.max()
    return float(max(x for x, n in counts.items() if n == best))


def _draw(ax: Any, pts: pd.DataFrame, xcol: str, ycol: str, groups: list[str], palette: dict[str, Any],
          markers: dict[str, str]) -> None:
    for keys, s in pts.groupby(groups, sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        workload, label = keys[0], keys[-1]
        s = s.dropna(subset=[xcol, ycol]).sort_values(xcol)
        if s.empty:
            continue
        colour = palette.get(label)
        ax.plot(s[xcol], s[ycol], marker=markers.get(workload, "o"), color=colour, lw=1.2, ms=5,
                label=f"{label} ({workload})")  # fmt: skip
        if ycol == "speedup":
            lo = (s["speedup"] - s["lo"]).clip(lower=0).fillna(0)
            hi = (s["hi"] - s["speedup"]).clip(lower=0).fillna(0)
            ax.errorbar(s[xcol], s["speedup"], yerr=[lo, hi], fmt="none", ecolor=colour, capsize=2, lw=0.8)


def fig_optimism(df: pd.DataFrame, palette: dict[str, Any], param: str = "work_us") -> plt.Figure:
    """The page (see the module docstring): 3 rows (speedup, Time Warp efficiency, rollback length) x 2 axes."""
    title = "Optimistic (Time Warp) beside conservative: speedup, efficiency and rollbacks"
    pts = optimism_points(df, param)
    if pts.empty:
        return empty_figure(title, "needs timed, exact optimistic cells (strategies.optimistic in the sweep)")
    markers = {w: _MARKERS[i % len(_MARKERS)] for i, w in enumerate(dict.fromkeys(pts["workload"]))}
    varied = pts.groupby(["workload", "family"])["x"].transform("nunique") > 1
    by_work = pts[varied & (pts["x"] > 0)]
    work = _lookahead_work(pts)
    by_la = pts[(pts["x"] == work) & (pts["lookahead"] > 0)] if work is not None else pts.iloc[0:0]
    workers = int(pts["workers"].iloc[0])
    fig, axes = plt.subplots(3, 2, figsize=(11, 9.5), sharex="col")
    rows = (("speedup", "speedup vs sequential"), ("tw_efficiency", "Time Warp efficiency\n(committed / processed)"),
            ("mean_length", "mean rollback length\n(events undone per rollback)"))  # fmt: skip
    panels = ((by_work, "x", ["workload", "family", "label"], f"{param} per event (log scale)"),
              (by_la, "lookahead", ["workload", "label"], "lookahead: smallest latency crossing LPs, ticks (log)"))
    for c, (data, xcol, groups, xlabel) in enumerate(panels):
        for r, (ycol, ylabel) in enumerate(rows):
            ax = axes[r][c]
            shown = data if ycol == "speedup" else data[data["strategy"] == OPTIMISTIC]
            if shown.dropna(subset=[xcol, ycol]).empty:
                ax.text(0.5, 0.5, "no points", ha="center", va="center", color="#777777", transform=ax.transAxes)
            else:
                _draw(ax, shown, xcol, ycol, groups, palette, markers)
                ax.set_xscale("log")
                xs = sorted(shown[xcol].dropna().unique())
                ax.set_xticks(xs, [f"{x:g}" for x in xs])
                ax.minorticks_off()
            if ycol == "speedup":
                ax.axhline(1.0, color="black", ls="--", lw=1)
                ax.set_ylim(bottom=0)
            elif ycol == "tw_efficiency":
                ax.set_ylim(0, 1.05)
            else:
                ax.set_ylim(bottom=0)
            ax.set_ylabel(ylabel)
            if r == len(rows) - 1:
                ax.set_xlabel(xlabel)
    axes[0][0].set_title("against work per event")
    axes[0][1].set_title(f"against lookahead (work_us {work:g})" if work is not None else "against lookahead")
    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8, frameon=False,
                   bbox_to_anchor=(0.5, -0.06))  # fmt: skip
    fig.suptitle(f"{title} ({workers} workers)", y=0.995)
    fig.tight_layout()
    return fig


def _fmt(v: float, digits: int = 2) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def optimism_findings(df: pd.DataFrame, param: str = "work_us") -> list[str]:
    """Per shape where both ran: the best optimistic variant against the best conservative one, with why."""
    pts = optimism_points(df, param)
    out: list[str] = []
    if pts.empty:
        return out
    for (workload, shape), grp in pts.groupby(["workload", "shape"], sort=False):
        opt = grp[grp["strategy"] == OPTIMISTIC].sort_values("speedup", ascending=False)
        cons = grp[grp["strategy"] != OPTIMISTIC].sort_values("speedup", ascending=False)
        if opt.empty or cons.empty:
            continue
        o, c = opt.iloc[0], cons.iloc[0]
        ratio = o["speedup"] / c["speedup"] if c["speedup"] else math.nan
        la = "" if np.isnan(o["lookahead"]) else f", lookahead {o['lookahead']:g}"
        x = "" if np.isnan(o["x"]) else f"{param} {o['x']:g}"
        why = (f"Time Warp efficiency {_fmt(o['tw_efficiency'])}, {int(o['rollbacks'] or 0)} rollbacks of mean "
               f"length {_fmt(o['mean_length'], 1)} (longest {_fmt(o['max_length'], 0)})")  # fmt: skip
        verb = "faster than" if ratio > 1 else "slower than"
        out.append(
            f"Optimistic on {workload}/{shape} ({x}{la}, {int(o['workers'])} workers): {o['label']} "
            f"{_fmt(o['speedup'])}x, {verb} {c['label']} {_fmt(c['speedup'])}x "
            f"({(ratio - 1) * 100:+.0f}%); {why}."
        )
    return out
