"""The interpreters side by side: the default CPython and a free-threaded one.

Pages of :mod:`tickpar.report.render`:

* ``interpreters``: speedup at the largest timed worker count against the work per event (the
  granularity parameter, log scale), one panel per (interpreter, work mode), one row per workload
  shape family: ``gil-hold`` work serialises threads under the GIL and runs in parallel on the
  free-threaded build; ``gil-release`` work overlaps under both.
* ``ft_cost``: the free-threaded build's single-thread cost: its sequential events/s over the
  default build's, per shape (same workload, parameters, seed, order and work mode), against the
  work per event. Below 1 the free-threaded interpreter is slower on one thread (CPython 3.13t
  does not specialise bytecode, and its reference counts are atomic where objects are shared).

Only counted points (exact, timed runs exact, not contended: :func:`tickpar.report.speed.counted`)
make the speedup panels and the findings; a speedup is always against the sequential run of the
same interpreter (:mod:`tickpar.pipeline.aggregate`).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from tickpar.plugins import BASELINE
from tickpar.report.speed import base_label, counted, empty_figure, points_at_largest_workers, timed

__all__ = ["cost_table", "fig_ft_cost", "fig_interpreters", "interpreter_findings", "interpreter_points"]

DEFAULT = "default"
FREETHREADED = "freethreaded"


def _interpreter(df: pd.DataFrame) -> pd.Series:
    if "interpreter" not in df.columns:
        return pd.Series(DEFAULT, index=df.index)
    return df["interpreter"].fillna(DEFAULT).astype(str)


def _panel_order(keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
    rank = {DEFAULT: 0, FREETHREADED: 1}
    return sorted(set(keys), key=lambda k: (rank.get(k[0], 2), k[0], k[1]))


def interpreter_points(df: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """Mean counted speedup per (workload, family, strategy/variant, interpreter, work, granularity value).

    At the largest timed worker count of each workload; the baseline is left out.
    """
    t = counted(df)
    t = t.assign(interpreter=_interpreter(t), base_label=base_label(t)) if not t.empty else t
    return points_at_largest_workers(t, param, by=("workload",), keys=("family", "base_label", "interpreter", "work"))


def fig_interpreters(df: pd.DataFrame, param: str = "work_us") -> plt.Figure:
    """Speedup vs work per event: rows = workload families, columns = (interpreter, work mode)."""
    title = f"Speedup vs {param} per interpreter and work mode (largest timed worker count)"
    pts = interpreter_points(df, param)
    pts = pts[pts["x"] > 0]
    if pts.empty:
        return empty_figure(title, f"needs counted parallel points with {param} > 0 (timed cells of an exact strategy)")
    pts = pts.assign(
        row=pts["workload"] + "/" + pts["family"] + " (" + pts["workers"].astype(str) + " workers)",
        col=pts["interpreter"] + ", " + pts["work"],
    )
    rows = list(dict.fromkeys(pts["row"]))
    order = _panel_order(list(zip(pts["interpreter"], pts["work"], strict=True)))
    cols = [f"{i}, {w}" for i, w in order]
    labels = list(dict.fromkeys(pts["base_label"]))
    palette = dict(zip(labels, sns.color_palette("tab10" if len(labels) <= 10 else "tab20", len(labels)), strict=False))
    fig, axes = plt.subplots(
        len(rows), len(cols), figsize=(3.3 * len(cols) + 1.8, 2.8 * len(rows)), squeeze=False, sharey="row"
    )
    for i, row in enumerate(rows):
        for j, col in enumerate(cols):
            ax = axes[i][j]
            sub = pts[(pts["row"] == row) & (pts["col"] == col)]
            for label, s in sub.groupby("base_label", sort=False):
                ax.plot(s["x"], s["speedup"], marker="o", color=palette[label], lw=1.4, label=label)
            workers = int(sub["workers"].max()) if not sub.empty else None
            ax.axhline(1.0, color="black", ls="--", lw=1)
            if workers:
                ax.axhline(workers, color="#999999", ls=":", lw=1)
            ax.set_xscale("log")
            ax.minorticks_off()
            xs = sorted(pts[pts["row"] == row]["x"].unique())
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
            ax.set_ylim(bottom=0)
            ax.set_title(f"{col}\n{row}" if i == 0 else row, fontsize=8)
            ax.set_xlabel(f"{param} per event" if i == len(rows) - 1 else "")
            ax.set_ylabel("speedup vs sequential" if j == 0 else "")
            if sub.empty:
                ax.text(0.5, 0.5, "no counted point", transform=ax.transAxes, ha="center", color="#777777")
    handles = [plt.Line2D([], [], color=palette[lab], marker="o", label=lab) for lab in labels]
    handles += [
        plt.Line2D([], [], color="black", ls="--", label="sequential (1x)"),
        plt.Line2D([], [], color="#999999", ls=":", label="y = workers"),
    ]
    fig.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def cost_table(df: pd.DataFrame, param: str = "work_us") -> pd.DataFrame:
    """Sequential events/s per interpreter and their ratio (free-threaded over default), per shape and work mode.

    Mean over seeds and orders of the sequential strategy's default variant (``events_per_s`` of its
    timed, exact cells); only shapes timed under both interpreters.
    """
    cols = ["workload", "shape", "family", "work", "x", "default_eps", "freethreaded_eps", "ratio"]
    t = timed(df)
    if t.empty or "events_per_s" not in t.columns:
        return pd.DataFrame(columns=cols)
    t = t.assign(interpreter=_interpreter(t), base_label=base_label(t))
    t = t[(t["base_label"] == BASELINE) & (t["verdict"] == "exact")]
    t = t.assign(eps=pd.to_numeric(t["events_per_s"], errors="coerce")).dropna(subset=["eps"])
    if t.empty:
        return pd.DataFrame(columns=cols)
    xcol = f"param_{param}"
    t = t.assign(x=pd.to_numeric(t[xcol], errors="coerce") if xcol in t.columns else math.nan)
    keys = ["workload", "shape", "family", "work", "x"]
    piv = t.pivot_table(index=keys, columns="interpreter", values="eps", aggfunc="mean", dropna=False)
    if DEFAULT not in piv.columns or FREETHREADED not in piv.columns:
        return pd.DataFrame(columns=cols)
    piv = piv[[DEFAULT, FREETHREADED]].dropna().reset_index()
    piv = piv.rename(columns={DEFAULT: "default_eps", FREETHREADED: "freethreaded_eps"})
    piv["ratio"] = piv["freethreaded_eps"] / piv["default_eps"]
    return piv[cols].sort_values(["workload", "family", "work", "x"]).reset_index(drop=True)


def fig_ft_cost(df: pd.DataFrame, param: str = "work_us") -> plt.Figure:
    """The free-threaded build's sequential events/s over the default build's, against the work per event."""
    title = "Free-threaded build, one thread: sequential events/s over the default build's"
    table = cost_table(df, param)
    if table.empty:
        return empty_figure(
            title, "needs timed sequential cells under both interpreters (interpreters: [default, freethreaded])"
        )
    table = table.assign(panel=table["workload"] + "/" + table["family"])
    panels = list(dict.fromkeys(table["panel"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2), squeeze=False, sharey=True)
    works = list(dict.fromkeys(table["work"]))
    colours = dict(zip(works, sns.color_palette("Set2", len(works)), strict=False))
    for ax, panel in zip(axes[0], panels, strict=True):
        sub = table[table["panel"] == panel]
        for work, s in sub.groupby("work", sort=False):
            s = s.sort_values("x")
            ax.plot(s["x"].clip(lower=1e-3), s["ratio"], marker="o", color=colours[work], label=work)
            for x, r in zip(s["x"], s["ratio"], strict=True):
                ax.annotate(f"{r:.2f}", (max(x, 1e-3), r), textcoords="offset points", xytext=(0, 5), fontsize=7,
                            ha="center")  # fmt: skip
        ax.axhline(1.0, color="black", ls="--", lw=1)
        xs = sorted(sub["x"].dropna().unique())
        if xs and min(xs) > 0:
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.set_ylim(0, max(1.1, float(table["ratio"].max()) * 1.15))
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel(f"{param} per event")
    axes[0][0].set_ylabel("free-threaded / default (events/s)")
    axes[0][-1].legend(title="work", fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def interpreter_findings(df: pd.DataFrame, param: str = "work_us") -> list[str]:
    """Sentences: the single-thread cost, and per work mode and workload the best speedup under each interpreter."""
    if df.empty or FREETHREADED not in set(_interpreter(df)):
        return []
    out: list[str] = []
    cost = cost_table(df, param)
    if not cost.empty:
        lo, hi = cost.loc[cost["ratio"].idxmin()], cost.loc[cost["ratio"].idxmax()]
        out.append(
            f"Free-threaded build on one thread: {cost['ratio'].min():.2f}-{cost['ratio'].max():.2f} of the default "
            f"build's sequential events/s (lowest on {lo['workload']}/{lo['shape']} with {lo['work']} work, "
            f"{param}={lo['x']:g}; highest on {hi['workload']}/{hi['shape']}, {param}={hi['x']:g})."
        )
    pts = interpreter_points(df, param)
    if pts.empty:
        out.append("No counted parallel point to compare the interpreters' speedups.")
        return out
    for (workload, work), grp in pts.groupby(["workload", "work"], sort=False):
        xmax = grp["x"].max()
        at = grp[grp["x"] == xmax]
        parts = []
        for interp in (DEFAULT, FREETHREADED):
            sub = at[at["interpreter"] == interp]
            if sub.empty:
                parts.append(f"{interp}: no counted point")
                continue
            best = sub.loc[sub["speedup"].idxmax()]
            parts.append(f"{interp} {best['speedup']:.2f}x ({best['base_label']})")
        workers = int(at["workers"].max())
        out.append(
            f"{workload}, {work} work at {param}={xmax:g}, {workers} workers, best exact speedup: "
            + ", ".join(parts)
            + "."
        )
    return out
