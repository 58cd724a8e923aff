"""The Python and the native (C++) engine side by side: the report page ``engines``.

* Top: loop speedup (the strategy's execution alone: for a native cell the replay loop) at the largest
  timed worker count against the work per event (µs, log axis), one panel per (workload family,
  engine), one line per strategy/variant, each engine against its own sequential run
  (:mod:`tickpar.pipeline.aggregate`); a diamond on the 1.0 line marks each line's break-even
  (:func:`tickpar.report.speed.breakeven`, interpolated in log work).
* Bottom: the native ``split`` (real threads, the prototype in C++) over its check cells: verdict
  counts per (shape, variant, workers) over seeds, and each run's first violation.

Only counted points (:func:`tickpar.report.speed.counted`) make the lines and the findings.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from tickpar.report.speed import (
    breakeven_text,
    empty_figure,
    engine_breakevens,
    engine_of,
    engine_points,
)

__all__ = ["engine_breakevens", "engine_findings", "engine_points", "fig_engines", "native_split_runs"]

ENGINE_ORDER = ("python", "native")


def native_split_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The native ``split`` check cells (real threads): where, variant, workers, seed, verdict, its first violation."""
    cols = ["where", "variant", "workers", "seed", "verdict", "reason"]
    if df.empty or "strategy" not in df.columns:
        return pd.DataFrame(columns=cols)
    t = df[(df["strategy"] == "split") & (engine_of(df) == "native")]
    if t.empty:
        return pd.DataFrame(columns=cols)
    where = t["workload"].astype(str) + "/" + t["shape"].astype(str)
    reason = t["verdict_reason"].fillna("") if "verdict_reason" in t.columns else pd.Series("", index=t.index)
    out = pd.DataFrame(
        {"where": where, "variant": t["variant"], "workers": t["workers"].astype(int), "seed": t["seed"],
         "verdict": t["verdict"].astype(str), "reason": reason.astype(str)}
    )  # fmt: skip
    return out.sort_values(["where", "variant", "workers", "seed"]).reset_index(drop=True)


def fig_engines(df: pd.DataFrame, param: str = "work_us") -> plt.Figure:
    """Speedup vs work per event, per engine side by side, break-even marked; native split's verdicts below."""
    title = f"Python and native engines: loop speedup vs {param} (largest timed worker count), break-even ◆"
    pts = engine_points(df, param)
    runs = native_split_runs(df)
    if pts.empty and runs.empty:
        return empty_figure(title, "needs native cells: engines: [python, native] in the config (make native first)")
    pts = pts.assign(row=pts["workload"] + "/" + pts["family"])
    rows = list(dict.fromkeys(pts["row"])) or ["(no counted point)"]
    engines = [e for e in ENGINE_ORDER if e in set(pts["engine"])] or list(ENGINE_ORDER)
    labels = list(dict.fromkeys(pts["base_label"]))
    palette = dict(zip(labels, sns.color_palette("tab10" if len(labels) <= 10 else "tab20", len(labels)), strict=False))
    extra = 1 if not runs.empty else 0
    fig = plt.figure(figsize=(4.2 * len(engines) + 2.0, 3.0 * (len(rows) + extra) + 0.5))
    grid = fig.add_gridspec(len(rows) + extra, len(engines))
    be = engine_breakevens(df, param)
    for i, row in enumerate(rows):
        for j, engine in enumerate(engines):
            ax = fig.add_subplot(grid[i, j])
            sub = pts[(pts["row"] == row) & (pts["engine"] == engine)]
            for label, s in sub.groupby("base_label", sort=False):
                ax.plot(s["x"], s["speedup"], marker="o", color=palette[label], lw=1.4, label=label)
                hit = be[(be["workload"] + "/" + be["family"] == row) & (be["engine"] == engine)
                         & (be["base_label"] == label) & (be["kind"] == "at")]  # fmt: skip
                for x in hit["x"]:
                    ax.scatter([x], [1.0], marker="D", s=45, color=palette[label], edgecolor="black", zorder=6)
            ax.axhline(1.0, color="black", ls="--", lw=1)
            ax.set_xscale("log")
            ax.minorticks_off()
            xs = sorted(sub["x"].unique())
            if xs:
                ax.set_xticks(xs, [f"{x:g}" for x in xs])
                workers = int(sub["workers"].max())
                ax.set_title(f"{engine} engine: {row} ({workers} workers)", fontsize=9)
            else:
                ax.set_title(f"{engine} engine: {row}", fontsize=9)
                ax.text(0.5, 0.5, "no counted point", transform=ax.transAxes, ha="center", color="#777777")
            ax.set_ylim(bottom=0)
            ax.set_xlabel(f"{param} per event (µs, log scale)")
            ax.set_ylabel("loop speedup vs own sequential" if j == 0 else "")
    if labels:
        handles = [plt.Line2D([], [], color=palette[lab], marker="o", label=lab) for lab in labels]
        handles.append(plt.Line2D([], [], color="black", marker="D", ls="none", label="break-even"))
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8, frameon=False)
    if not runs.empty:
        ax = fig.add_subplot(grid[len(rows), :])
        ax.axis("off")
        lines = ["Native split (real threads) over its check cells: verdicts over seeds, first violation of each run"]
        for (where, variant, workers), grp in runs.groupby(["where", "variant", "workers"], sort=False):
            counts = ", ".join(f"{v} {n}" for v, n in grp["verdict"].value_counts().items())
            lines.append(f"{where} split/{variant} at {workers} workers, {len(grp)} runs: {counts}")
            for r in grp.itertuples():
                if r.verdict != "exact":
                    lines.append(textwrap.shorten(f"   seed {r.seed}: {r.verdict}: {r.reason}", 140))
        ax.text(0.0, 1.0, "\n".join(lines[:16]), va="top", ha="left", fontsize=7.5, family="monospace",
                transform=ax.transAxes)  # fmt: skip
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def engine_findings(df: pd.DataFrame, param: str = "work_us") -> list[str]:
    """Sentences: break-even per strategy and engine, and native split's failures (the model's error is
    :func:`tickpar.report.model_error.model_error`'s, quoted once)."""
    if df.empty or "native" not in set(engine_of(df)):
        return []
    out: list[str] = []
    be = engine_breakevens(df, param)
    for (workload, family, label), grp in be.groupby(["workload", "family", "base_label"], sort=False):
        parts = [
            f"{r.engine} {breakeven_text(r.kind, r.x)} ({r.workers} workers)"
            for r in grp.sort_values("engine", key=lambda s: s.map(ENGINE_ORDER.index)).itertuples()
        ]
        out.append(f"Break-even of {label} on {workload}/{family} ({param} per event, µs): " + "; ".join(parts) + ".")
    if be.empty:
        out.append(f"No strategy has counted points at two {param} values on both engines: no break-even to compare.")
    runs = native_split_runs(df)
    if not runs.empty:
        bad = runs[runs["verdict"] != "exact"]
        counts = ", ".join(f"{v} {n}" for v, n in runs["verdict"].value_counts().items())
        first = (
            f"; the first: {bad.iloc[0]['where']} seed {bad.iloc[0]['seed']}: {bad.iloc[0]['reason']}"
            if len(bad)
            else ""
        )
        out.append(f"Native split (real threads): {len(bad)} of {len(runs)} checked runs not exact ({counts}){first}.")
    return out
