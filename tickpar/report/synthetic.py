"""The report's "Synthetic against real" page: each real gem5 run beside its fitted synthetic shape and the
sweep's own ``multicore`` shapes, and gem5's parallelism against the cores it simulates.

Made by rules/synthetic.smk from

* the fits ``results/synthetic/<run>.fit.json`` (``python -m tickpar.gem5.fit``: ``tickpar trace-fit``'s
  result, or ``{"run", "trace", "error"}`` where the run could not be fitted);
* the profiles ``results/traces/multicore.<shape>.profile.json`` of the config's ``multicore`` shapes
  (rules/traces.smk's profile job: each run emitted as a stock trace and profiled as a trace is);
* per run, how many cores the real system simulates (the config's ``synthetic.runs.<run>.simulated_cores``),
  which puts the run on the figure.

:func:`write_page` writes ``synthetic.json`` (the page's data), ``synthetic.html`` and the figure
``synthetic_cores.<fmt>``; :func:`pdf_pages` draws them for the PDF (render.py's "synthetic" page).
"""

from __future__ import annotations

import argparse
import html
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

from tickpar.gem5.fit import STATISTICS, TOLERANCE, distance, statistic_values
from tickpar.gem5.fit.output import percent
from tickpar.report.layout import draw_lines, draw_table, html_page, html_table, text_page, write_text

__all__ = ["FIGURE_SERIES", "fig_cores", "page_data", "pdf_pages", "run_table", "write_page"]

OUTDIR = "results/report"
#: The figure's lines: (label, dotted path in a profile), at 64 workers where a bound.
FIGURE_SERIES = (
    ("available parallelism", "available_parallelism"),
    ("optimistic bound", "bounds.optimistic.64"),
    ("tick-barrier bound", "bounds.tick-barrier.64"),
    ("conservative bound", "bounds.conservative.64"),
)
INTRO = (
    "Each real gem5 run's parallelism profile beside the multicore shape fitted to it (tickpar trace-fit: the "
    "shape nearest the run over the statistics below, weights in docs/how-to/gem5-traces.md) and beside the "
    "sweep's own multicore shapes. Every profile is measured one way: a synthetic run is emitted as a stock gem5 "
    "trace and profiled as the real one is. In brackets: the relative difference to the real run; ! marks one "
    f"more than {TOLERANCE:.0%} off. Bounds are ideal speedups at uniform event cost, upper bounds (footprints "
    "are inferred from schedules)."
)


def _get(profile: dict[str, Any], dotted: str) -> float | None:
    value: Any = profile
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return None if value is None else float(value)


def _load(folder: Path, pattern: str, suffix: str) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(folder.glob(pattern)) if folder.is_dir() else []:
        out[path.name.removesuffix(suffix)] = json.loads(path.read_text())
    return out


def _run_data(run: str, fit: dict[str, Any], shapes: dict[str, dict[str, Any]], cores: int | None) -> dict[str, Any]:
    """One run's part of the page: its statistics beside the fitted shape's and each sweep shape's."""
    if "error" in fit:
        return {"run": run, "simulated_cores": cores, "trace": fit.get("trace"), "error": fit["error"]}
    real = statistic_values(fit["trace_profile"])
    columns = {"fitted": statistic_values(fit["fitted_profile"])}
    columns.update({name: statistic_values(prof) for name, prof in shapes.items() if "error" not in prof})
    return {
        "run": run,
        "simulated_cores": cores,
        "trace": fit["trace"],
        "events": fit["trace_profile"]["events"],
        "shape_name": fit["name"],
        "shape": fit["shape"],
        "statistics": {"real": real, **columns},
        "distances": {name: distance(real, values) for name, values in columns.items()},
        "unreached": fit["unreached"],
        "search": {k: fit["search"][k] for k in ("evaluated", "events", "stopped", "seconds")},
        "figure": {
            side: {label: _get(prof, path) for label, path in FIGURE_SERIES}
            for side, prof in (("real", fit["trace_profile"]), ("fitted", fit["fitted_profile"]))
        },
    }


def page_data(fits: dict[str, dict[str, Any]], shapes: dict[str, dict[str, Any]],
              cores: dict[str, int | None]) -> dict[str, Any]:  # fmt: skip
    """Everything the page shows (JSON-ready): a part per run of ``cores`` (in its order; empty: every fit)."""
    names = list(cores) if cores else sorted(fits)
    runs = [_run_data(run, fits[run], shapes, cores.get(run)) for run in names if run in fits]
    return {"intro": INTRO, "shapes": sorted(shapes), "runs": runs}


def _cell(value: float | None, name: str, real: float | None = None) -> str:
    if value is None:
        return "-"
    if name == "zero_delay_cross_share":
        text = f"{value:.1%}"
    elif name.startswith("delay_"):
        text = f"{value:,.0f}"
    else:
        text = f"{value:,.2f}"
    if real is None:
        return text
    stat = next(s for s in STATISTICS if s.name == name)
    rel = stat.relative_difference(real, value)
    if rel is None:
        return text
    mark = " !" if abs(rel) > TOLERANCE else ""
    return f"{text} ({percent(rel)}){mark}"


def run_table(run: dict[str, Any]) -> pd.DataFrame:
    """A run's statistics: a row per statistic (and the distance), a column per profile, the real run first."""
    stats = run["statistics"]
    real = stats["real"]
    columns = {"real run": [_cell(real[s.name], s.name) for s in STATISTICS]}
    for name, values in stats.items():
        if name == "real":
            continue
        label = f"fitted ({run['shape_name']})" if name == "fitted" else name
        columns[label] = [_cell(values[s.name], s.name, real[s.name]) for s in STATISTICS]
    table = pd.DataFrame(columns, index=[f"{s.label} [{s.weight:g}]" for s in STATISTICS])
    distances = ["-"] + [f"{run['distances'][n]:.3f}" for n in stats if n != "real"]
    table.loc["distance to the real run"] = distances
    return table


def fig_cores(data: dict[str, Any]) -> plt.Figure | None:
    """Available parallelism and each strategy's bound at 64 workers against simulated cores: the real runs
    (solid) and their fitted shapes (dashed); None without a run that says its simulated cores."""
    runs = sorted((r for r in data["runs"] if r.get("simulated_cores") and "figure" in r),
                  key=lambda r: r["simulated_cores"])  # fmt: skip
    if not runs:
        return None
    fig = plt.figure(figsize=(11.69, 8.27))  # a full PDF page: its caption goes at the foot
    ax = fig.add_axes((0.08, 0.2, 0.6, 0.72))
    xs = [r["simulated_cores"] for r in runs]
    for i, (label, _path) in enumerate(FIGURE_SERIES):
        colour = f"C{i}"
        for side, style, marker, face in (("real", "-", "o", colour), ("fitted", "--", "s", "none")):
            ys = [r["figure"][side][label] for r in runs]
            ax.plot(xs, ys, style, marker=marker, color=colour, markerfacecolor=face, markersize=6,
                    label=f"{label}, {'real gem5 run' if side == 'real' else 'fitted multicore'}")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("cores the real gem5 run simulates")
    ax.set_ylabel("events / critical path; ideal speedup at 64 workers")
    ax.set_title("gem5's parallelism against simulated cores (solid), fitted synthetic shapes (dashed)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(0.7, 0.92), fontsize=8,
               frameon=False)  # fmt: skip
    return fig


def page_html(data: dict[str, Any], figure: str | None) -> str:
    """The page's HTML entry: the figure's numbers, then per run its table, its fitted shape and what it misses."""
    parts = ["<h1>Synthetic against real</h1>", f"<p>{html.escape(data['intro'])}</p>"]
    if figure:
        parts.append(f"<p>Figure: <code>{html.escape(figure)}</code> (gem5's parallelism against simulated cores)</p>")
        parts.append(html_table(figure_table(data)))
    for run in data["runs"]:
        parts.append(f"<h2>{html.escape(run['run'])}</h2>")
        if "error" in run:
            parts.append(f"<p>not fitted: {html.escape(run['error'])}</p>")
            continue
        parts.append(f"<p>{html.escape(_run_note(run))}</p>")
        parts.append(html_table(run_table(run)))
        parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in _unreached_lines(run)) + "</ul>")
    return html_page("Synthetic against real", "\n".join(parts))


def figure_table(data: dict[str, Any]) -> pd.DataFrame:
    """The figure's numbers: a row per run on it, real and fitted per series."""
    rows = []
    for run in sorted((r for r in data["runs"] if r.get("simulated_cores") and "figure" in r),
                      key=lambda r: r["simulated_cores"]):  # fmt: skip
        row: dict[str, Any] = {"run": run["run"], "simulated cores": run["simulated_cores"]}
        for label, _path in FIGURE_SERIES:
            for side in ("real", "fitted"):
                value = run["figure"][side][label]
                row[f"{label} ({side})"] = "-" if value is None else f"{value:,.2f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _run_note(run: dict[str, Any]) -> str:
    shape = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in run["shape"].items())
    s = run["search"]
    return (
        f"{run['trace']}: {run['events']:,} events. Fitted shape {run['shape_name']}: {{{shape}}} "
        f"({s['evaluated']} candidates of about {s['events']:,} events, {s['stopped']})."
    )


def _unreached_lines(run: dict[str, Any]) -> list[str]:
    if not run["unreached"]:
        return [f"every statistic within {TOLERANCE:.0%} of the real run's"]
    out = []
    for u in run["unreached"]:
        out.append(f"not reached: {u['label']} ({percent(u['relative_difference'])}): {u['why']}")
    return out


def write_page(fits: str | Path, profiles: str | Path, cores: dict[str, int | None], outdir: str | Path = OUTDIR,
               fmt: str = "svg", workload: str = "multicore") -> dict[str, Path]:  # fmt: skip
    """Write ``<outdir>/synthetic.json``, ``synthetic.html`` and ``synthetic_cores.<fmt>``; return their paths.

    ``fits``: the folder of ``<run>.fit.json``; ``profiles``: that of ``<workload>.<shape>.profile.json``.
    """
    shapes = _load(Path(profiles), f"{workload}.*.profile.json", ".profile.json")
    data = page_data(_load(Path(fits), "*.fit.json", ".fit.json"), shapes, cores)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "synthetic.json", "html": out / "synthetic.html", "figure": out / f"synthetic_cores.{fmt}"}
    fig = fig_cores(data) or text_page("gem5's parallelism against simulated cores", ["no run says its cores"])
    fig.savefig(paths["figure"], bbox_inches="tight")
    plt.close(fig)
    write_text(paths["json"], json.dumps(data, indent=1) + "\n")
    write_text(paths["html"], page_html(data, paths["figure"].name))
    return paths


def _table_page(title: str, note: list[str], table: pd.DataFrame) -> plt.Figure:
    fig = plt.figure(figsize=(11.69, 8.27))
    fig.text(0.05, 0.95, title, fontsize=14, weight="bold", va="top")
    y = draw_lines(fig, 0.91, note, width=150)
    t = table.reset_index(names="statistic [weight]")
    widths = [0.34] + [0.66 / (len(t.columns) - 1)] * (len(t.columns) - 1)
    draw_table(fig, y - 0.01, t.astype(str).values.tolist(), list(t.columns), widths, height=0.028 * (len(t) + 1))
    return fig


def pdf_pages(_data: Any = None, path: str | Path = f"{OUTDIR}/synthetic.json") -> list[plt.Figure]:
    """The page for the PDF, when rules/synthetic.smk made it: the figure, then a table page per run."""
    source = Path(path)
    if not source.is_file():
        return []
    data = json.loads(source.read_text())
    figs: list[plt.Figure] = []
    fig = fig_cores(data)
    if fig is not None:
        figs.append(fig)
    figs.append(_table_page("Synthetic against real: the figure's numbers", [data["intro"]], figure_table(data)))
    for run in data["runs"]:
        if "error" in run:
            figs.append(text_page(f"Synthetic against real: {run['run']}", [f"not fitted: {run['error']}"]))
            continue
        note = [_run_note(run), *_unreached_lines(run)]
        figs.append(_table_page(f"Synthetic against real: {run['run']}", note, run_table(run)))
    return figs


def main(argv: list[str] | None = None) -> int:
    """``python -m tickpar.report.synthetic --fits DIR --profiles DIR --cores JSON [--outdir DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m tickpar.report.synthetic", description=main.__doc__)
    parser.add_argument("--fits", required=True, help="the folder of <run>.fit.json")
    parser.add_argument("--profiles", required=True, help="the folder of <workload>.<shape>.profile.json")
    parser.add_argument("--cores", default="{}", help="run -> simulated cores (or null), a JSON object, in page order")
    parser.add_argument("--workload", default="multicore")
    parser.add_argument("--outdir", default=OUTDIR)
    parser.add_argument("--format", default="svg", choices=("svg", "png"))
    args = parser.parse_args(argv)
    paths = write_page(args.fits, args.profiles, json.loads(args.cores), args.outdir, args.format, args.workload)
    print(f"synthetic against real: {', '.join(str(p) for p in paths.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
