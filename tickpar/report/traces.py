"""The report's gem5 trace pages: a trace's profile and bounds beside the synthetic workloads, its verdicts.

One page per ``gem5trace`` shape of the sweep (rules/traces.smk), from

* the profiles ``results/traces/<workload>.<shape>.profile.json`` (:mod:`tickpar.gem5.profile`) of
  the trace and of every other workload shape in the config (phold's, multicore's: how gem5-like
  they are);
* ``results/summary.csv``: each strategy variant's verdict on the trace and its 2-worker loop
  speedup per engine, at the shape's ``work_us`` (the trace's replay cost);
* the check records ``results/check/gem5trace/<shape>/...``: split's anatomy, in gem5's event names.

:func:`write_page` writes the page's data (JSON), its HTML entry and its bounds figure;
:func:`pdf_pages` draws every page written for the PDF (a :class:`tickpar.report.render.Page`).
"""

from __future__ import annotations

import argparse
import html
import json
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

from tickpar.host.atomic import read_json_object
from tickpar.report.gem5_cost import gem5_like_cost
from tickpar.report.layout import draw_lines, draw_table, write_text
from tickpar.verify.anatomy import STEP_KEYS, format_steps

__all__ = ["OUTDIR", "fig_bounds", "fig_timeline", "page_data", "pdf_pages", "write_page"]

OUTDIR = "results/report/traces"
TOP_COMPONENTS = 15  # the busiest components a page lists
FOOTPRINT = (
    "Footprints are inferred from what each event schedules, reschedules or deschedules: a lower bound of the "
    "true footprint, so every bound here is an upper bound. A schedule with delay > 0 onto another component is "
    "replayed as a message (what lets a partitioned strategy cut there)."
)
PROFILE_ROWS = (
    ("events", "events"),
    ("event cost (us per event)", "cost.mean_us"),
    ("components", "components"),
    ("events per tick (mean)", "events_per_tick.mean"),
    ("zero-delay schedules across components", "zero_delay_cross_share"),
    ("median delay within a component (ticks)", "schedule_delay.within.q50"),
    ("median delay across components (ticks)", "schedule_delay.across.q50"),
    ("min delay across components (ticks)", "schedule_delay.across.q0"),
    ("critical path (events)", "critical_path"),
    ("available parallelism", "available_parallelism"),
    ("tick-barrier bound at 64", "bounds.tick-barrier.64"),
    ("conservative bound at 64", "bounds.conservative.64"),
)


def _get(profile: dict[str, Any], dotted: str) -> Any:
    value: Any = profile
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _fmt(value: Any, key: str) -> str:
    if value is None:
        return "-"
    if key == "zero_delay_cross_share":
        return f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return f"{value:,}"


def _load_profiles(folder: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(folder.glob("*.profile.json")):
        out[path.name.removesuffix(".profile.json")] = json.loads(path.read_text())
    return out


def _first(group: pd.DataFrame, column: str) -> str:
    values = group[column].dropna().astype(str) if column in group else pd.Series(dtype=str)
    return values.iloc[0] if len(values) else ""


def _speedup(two: pd.DataFrame) -> str:
    """The best 2-worker loop speedup with its interval, or why there is none."""
    if two.empty:
        return "no 2-worker cell"
    measured = two[two["loop_speedup"].notna()] if "loop_speedup" in two else two[:0]
    if not measured.empty:
        best = measured.loc[measured["loop_speedup"].idxmax()]
        return f"{best['loop_speedup']:.2f}x [{best['loop_speedup_lo']:.2f}, {best['loop_speedup_hi']:.2f}]"
    if "contended" in two and two["contended"].astype(str).str.lower().eq("true").any():
        return "contended: no figure (appendix)"
    timed = two["timed"].astype(str).str.lower().eq("true").any() if "timed" in two else False
    return "no figure" if timed else "checked only"


def _strategy_rows(summary: pd.DataFrame, shape: str) -> list[dict[str, Any]]:
    """Per strategy variant and engine on the trace: its verdicts and its 2-worker loop speedup."""
    if summary.empty or "workload" not in summary.columns:
        return []
    rows = summary[(summary["workload"] == "gem5trace") & (summary["shape"].astype(str) == shape)]
    out = []
    for (label, engine), group in rows.groupby(["label", "engine"], sort=False):
        verdicts = "; ".join(
            f"w{w}: "
            + ", ".join(f"{v} x{n}" if n > 1 else str(v) for v, n in cell["verdict"].astype(str).value_counts().items())
            for w, cell in group.groupby("workers")
        )
        two = group[group["workers"] == 2]
        out.append(
            {
                "strategy": label,
                "engine": engine,
                "verdicts": verdicts,
                "promise": _first(group, "expected_verdict"),
                "speedup_2w": _speedup(two),
            }
        )
    return out


def _anatomies(checks: Path) -> list[dict[str, Any]]:
    """split's non-exact check records on the trace: verdict, reason and the first anatomy steps."""
    out = []
    for path in sorted(checks.rglob("*.json")) if checks.is_dir() else []:
        record = read_json_object(path)
        if record is None or record.get("strategy") != "split":
            continue
        if record.get("verdict", {}).get("kind") in (None, "exact"):
            continue
        anatomy = [{key: step.get(key) for key in STEP_KEYS} for step in (record.get("anatomy") or [])[:12]]
        steps = format_steps(anatomy).splitlines() if anatomy else []
        out.append(
            {
                "engine": record.get("engine", "python"),
                "verdict": record["verdict"]["kind"],
                "reason": record["verdict"].get("reason", ""),
                "steps": steps,
            }
        )
    return out


def cost_line(profile: dict[str, Any] | None) -> str:
    """Which event cost the trace's replay and bounds used, and where it came from (one line)."""
    cost = (profile or {}).get("cost")
    if cost:
        warn = f" Warning: {'; '.join(cost['warnings'])}" if cost.get("warnings") else ""
        return f"Event cost: {cost['description']}.{warn}"
    return "Event cost: the shape's work_us per event (no gem5 stats given: not the run's own cost)."


def page_data(shape: str, summary: pd.DataFrame, profiles: Path, checks: Path) -> dict[str, Any]:
    """Everything one trace page shows (JSON-ready)."""
    found = _load_profiles(profiles)
    mine = f"gem5trace.{shape}"
    order = [mine, *sorted(k for k in found if k != mine)]
    trace = found.get(mine) or {}
    return {
        "shape": shape,
        "cost": f"{cost_line(found.get(mine))} The report's gem5-like cost: {gem5_like_cost(summary).text()}.",
        "component_events": dict(list((trace.get("component_events") or {}).items())[:TOP_COMPONENTS]),
        "components": trace.get("components"),
        "events": trace.get("events"),
        "timeline": trace.get("timeline"),
        "profiles": {k: found[k] for k in order if k in found},
        "strategies": _strategy_rows(summary, shape),
        "split": _anatomies(checks),
        "footprint": FOOTPRINT,
    }


def profile_table(data: dict[str, Any]) -> pd.DataFrame:
    """The profile figures, a column per workload shape (the trace first)."""
    columns = {}
    for name, prof in data["profiles"].items():
        columns[name] = [_fmt(_get(prof, key), key) for _label, key in PROFILE_ROWS]
    return pd.DataFrame(columns, index=[label for label, _key in PROFILE_ROWS])


def fig_bounds(data: dict[str, Any]) -> plt.Figure:
    """Bounds against workers, a panel per workload shape (the trace first), a line per strategy."""
    profiles = data["profiles"]
    n = max(len(profiles), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), sharey=True, squeeze=False)
    for ax, (name, prof) in zip(axes[0], profiles.items(), strict=False):
        for strategy, row in prof.get("bounds", {}).items():
            ps = [int(p) for p in row]
            ax.plot(ps, [row[p] for p in row], marker="o", markersize=3, label=strategy)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)  # 1x to 64x: a trace's 1.1x and a synthetic shape's 40x both readable
        ax.set_xlabel("workers")
        ax.set_title(name, fontsize=9)
    axes[0][0].set_ylabel("ideal speedup (each event at its cost)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=max(len(labels), 1), fontsize=8, frameon=False)
    fig.suptitle(f"gem5 trace {data['shape']}: bounds against workers, beside the synthetic workloads", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 0.95))
    return fig


def component_table(data: dict[str, Any]) -> pd.DataFrame:
    """The trace's busiest components: events and share of the run."""
    rows = data.get("component_events") or {}
    total = data.get("events") or sum(rows.values()) or 1
    return pd.DataFrame(
        {"component": list(rows), "events": [f"{n:,}" for n in rows.values()],
         "share": [f"{n / total:.1%}" for n in rows.values()]}
    )  # fmt: skip


def fig_timeline(data: dict[str, Any]) -> plt.Figure | None:
    """Events and active components per lookahead window with work, over simulated time (None: no timeline)."""
    timeline = data.get("timeline")
    if not timeline or not timeline.get("spans"):
        return None
    spans = timeline["spans"]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    starts = [sp["start"] for sp in spans]
    ax.plot(starts, [sp["events"] for sp in spans], marker="o", markersize=3, label="events per busy window")
    ax.plot(starts, [sp["components"] for sp in spans], marker="s", markersize=3,
            label="active components per busy window")  # fmt: skip
    ax.set_xlabel("simulated time (ticks)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(
        f"gem5 trace {data['shape']}: parallelism over simulated time (windows of the lookahead, "
        f"{timeline['window_ticks']:,} ticks; {timeline['windows_per_span']:,} windows a point)", fontsize=9
    )
    fig.tight_layout()
    return fig


def page_html(data: dict[str, Any], figure: str | None, timeline: str | None = None) -> str:
    """The trace page's HTML entry."""
    strategies = pd.DataFrame(data["strategies"])
    parts = [
        f"<h1>gem5 trace {html.escape(data['shape'])}</h1>",
        f"<p>{html.escape(data.get('cost', ''))}</p>",
        f"<p>{html.escape(data['footprint'])}</p>",
        "<h2>Profile, beside the synthetic workloads</h2>",
        profile_table(data).to_html(escape=True),
    ]
    if figure:
        parts.append(f"<p>Bounds against workers: <code>{html.escape(figure)}</code></p>")
    comps = component_table(data)
    if not comps.empty:
        parts.append(f"<h2>Events per component ({len(comps)} busiest of {data.get('components')})</h2>")
        parts.append(comps.to_html(index=False, escape=True))
    if timeline:
        parts.append(f"<p>Parallelism over simulated time: <code>{html.escape(timeline)}</code></p>")
    parts.append("<h2>Verdicts and 2-worker loop speedup at the trace's replay cost</h2>")
    parts.append(strategies.to_html(index=False, escape=True) if not strategies.empty else "<p>no cells</p>")
    for run in data["split"]:
        parts.append(f"<h2>split ({html.escape(run['engine'])}): {html.escape(run['verdict'])}</h2>")
        parts.append(f"<p>{html.escape(run['reason'])}</p><pre>{html.escape(chr(10).join(run['steps']))}</pre>")
    return "<html><body>" + "\n".join(parts) + "</body></html>\n"


def write_page(
    shape: str, summary: str | Path, profiles: str | Path, checks: str | Path, outdir: str | Path = OUTDIR,
    fmt: str = "svg",
) -> dict[str, Path]:  # fmt: skip
    """Write ``<outdir>/<shape>.json``, ``.html`` and the bounds figure ``.<fmt>``; return their paths."""
    table = pd.read_csv(summary) if Path(summary).exists() else pd.DataFrame()
    data = page_data(shape, table, Path(profiles), Path(checks))
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / f"{shape}.json", "html": out / f"{shape}.html", "figure": out / f"{shape}.{fmt}"}
    fig = fig_bounds(data)
    fig.savefig(paths["figure"], bbox_inches="tight")
    plt.close(fig)
    timeline = fig_timeline(data)
    if timeline is not None:
        paths["timeline"] = out / f"{shape}.timeline.{fmt}"
        timeline.savefig(paths["timeline"], bbox_inches="tight")
        plt.close(timeline)
    write_text(paths["json"], json.dumps(data, indent=1) + "\n")
    timeline_name = paths["timeline"].name if "timeline" in paths else None
    write_text(paths["html"], page_html(data, paths["figure"].name, timeline_name))
    return paths


def _tables_page(data: dict[str, Any]) -> plt.Figure:
    """A trace's first PDF page: the cost and footprint notes, its profile and its verdicts, as tables."""
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.07, 0.97, f"gem5 trace {data['shape']}", fontsize=14, weight="bold", va="top")
    y = draw_lines(fig, 0.94, [data.get("cost", ""), data["footprint"]], width=110) - 0.01
    table = profile_table(data)
    fig.text(0.05, y, "Profile, beside the synthetic workloads", fontsize=10, weight="bold", va="top")
    cells = [[label, *row] for label, row in zip(table.index, table.values.tolist(), strict=True)]
    width = 0.34
    rest = (1 - width) / max(len(table.columns), 1)
    y = draw_table(fig, y - 0.02, cells, ["", *table.columns], [width] + [rest] * len(table.columns)) - 0.02
    strategies = pd.DataFrame(data["strategies"])
    fig.text(0.05, y, "Verdicts and 2-worker loop speedup at the trace's replay cost", fontsize=10, weight="bold",
             va="top")  # fmt: skip
    if not strategies.empty:
        cols = list(strategies.columns)
        y = draw_table(fig, y - 0.02, strategies.astype(str).values.tolist(), cols,
                       [0.22, 0.08, 0.3, 0.22, 0.18][: len(cols)]) - 0.02  # fmt: skip
    comps = component_table(data)
    if not comps.empty and y > 0.3:
        fig.text(0.05, y, f"Events per component ({len(comps)} busiest of {data.get('components')})", fontsize=10,
                 weight="bold", va="top")  # fmt: skip
        y = draw_table(fig, y - 0.02, comps.values.tolist(), list(comps.columns), [0.7, 0.15, 0.15]) - 0.02
    for run in data["split"][:1]:
        if y < 0.15:
            break
        lines = [f"split ({run['engine']}): {run['verdict']}: {run['reason']}", *run["steps"][:8]]
        fig.text(0.05, y, "\n".join(textwrap.shorten(line, 150) for line in lines), fontsize=6, family="monospace",
                 va="top")  # fmt: skip
    return fig


def pdf_pages(_data: Any = None, outdir: str | Path = OUTDIR) -> list[plt.Figure]:
    """The trace pages for the PDF: per trace page written in ``outdir``, its tables and its figures."""
    figs: list[plt.Figure] = []
    folder = Path(outdir)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = read_json_object(path)
        if data is None or "shape" not in data:
            continue
        figs.append(_tables_page(data))
        figs.append(fig_bounds(data))
        timeline = fig_timeline(data)
        if timeline is not None:
            figs.append(timeline)
    return figs


def main(argv: list[str] | None = None) -> int:
    """``python -m tickpar.report.traces --shape S --summary CSV --profiles DIR --checks DIR [--outdir DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m tickpar.report.traces", description=main.__doc__)
    parser.add_argument("--shape", required=True)
    parser.add_argument("--summary", required=True)
    parser.add_argument("--profiles", required=True)
    parser.add_argument("--checks", required=True)
    parser.add_argument("--outdir", default=OUTDIR)
    parser.add_argument("--format", default="svg", choices=("svg", "png"))
    args = parser.parse_args(argv)
    paths = write_page(args.shape, args.summary, args.profiles, args.checks, args.outdir, args.format)
    print(f"gem5 trace page {args.shape}: {', '.join(str(p) for p in paths.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
