"""The report's failure pages: for each non-exact strategy, its shrunk cell, anatomy and timeline.

Driven by the config's ``failures`` section (config/README.md)::

    failures:
      budget_s: 4                 # shrink budget per strategy, seconds
      cells:                      # one failing cell per strategy to explain
        split: {workload: multicore, workers: 2, params: {...}, options: {...}, seed: 1}
      rates:                      # split's failure rate against preempt and against real threads
        workload: multicore
        params: {cores: 2, requests_per_core: 30}
        workers: 2
        preempt: [0.5, 0.1, 0.01]
        interleave_seeds: 12
        threads: {work: gil-release, params: {work_us: 20.0}, runs: 4}

For each cell: :func:`tickpar.pipeline.shrink.shrink` within the budget, then
:func:`tickpar.runner.explain` of the shrunk cell, a swimlane timeline
(:func:`timeline_figure`: one lane per worker against simulated ticks: the
pops, the handler, the failing operation) and an HTML page.  The rates are
measured, not assumed: each interleave seed (or each threads run) is one
``check_cell``, and the page gives the share of non-exact verdicts by kind.

Run from the pipeline (rules/failures.smk) or by hand::

    python -m tickpar.report.failures --config config/config.yaml --outdir results/report/failures
"""

from __future__ import annotations

import argparse
import html
import json
import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from tickpar.pipeline.shrink import ShrinkResult, command, shrink
from tickpar.plugins.registry import get_registry
from tickpar.runner import Cell, check_cell, explain, resolve_cell, write_json_atomic

__all__ = [
    "OUTDIR",
    "failure_rates",
    "main",
    "main_snakemake",
    "page",
    "pdf_pages",
    "rates",
    "rates_figure",
    "render",
    "timeline",
    "timeline_figure",
]

OUTDIR = "results/report/failures"
"""Where the pipeline writes the failure pages (rules/failures.smk), relative to its working directory."""
KIND_COLOURS = {"pop": "#4477aa", "handler": "#228833", "fail": "#cc3311", "other": "#777777"}
_OFFSET = {"pop": -0.27, "handler": -0.09, "other": 0.09, "fail": 0.27}  # within a worker's lane


def _cell(entry: dict[str, Any], strategy: str) -> Cell:
    return resolve_cell(
        entry["workload"],
        dict(entry.get("params") or {}),
        strategy,
        dict(entry.get("options") or {}),
        int(entry.get("workers", 2)),
        int(entry.get("seed", 1)),
        entry.get("order", "gem5"),
        entry.get("work", "none"),
    )


def _kind(step: dict[str, Any], last: bool) -> str:
    note = step["note"]
    if last:
        return "fail"
    if " pops " in note or note.startswith("the pop"):
        return "pop"
    if "starts" in note:
        return "handler"
    return "other"


def timeline_figure(steps: list[dict[str, Any]], title: str, path: Path) -> None:
    """:func:`timeline` written to ``path``."""
    fig = timeline(steps, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def timeline(steps: list[dict[str, Any]], title: str) -> plt.Figure:
    """Workers (lanes) against simulated ticks: pops, handler starts, the failing operation.

    A step at ``when`` with ``cur_tick`` elsewhere gets a line from ``when`` to
    ``cur_tick``: how far "now" had moved from the event's own tick.
    """
    lanes = sorted({s["worker"] for s in steps if s["worker"] is not None}, key=str)
    lane_of = {w: i for i, w in enumerate(lanes)}
    record_lane = len(lanes)
    fig, ax = plt.subplots(figsize=(9, 1.4 + 1.0 * (len(lanes) + 1)))
    for index, step in enumerate(steps):
        tick = step["when"] if step["when"] is not None else step["cur_tick"]
        if tick is None:
            continue
        kind = _kind(step, index == len(steps) - 1)
        y = lane_of.get(step["worker"], record_lane) + _OFFSET[kind]
        marker = {"pop": "v", "handler": "s", "fail": "X", "other": "o"}[kind]
        ax.scatter([tick], [y], marker=marker, s=90 if kind == "fail" else 50, color=KIND_COLOURS[kind], zorder=3)
        if step["cur_tick"] is not None and step["when"] is not None and step["cur_tick"] != step["when"]:
            ax.annotate(
                "",
                xy=(step["cur_tick"], y),
                xytext=(step["when"], y),
                arrowprops={"arrowstyle": "->", "color": KIND_COLOURS[kind], "alpha": 0.6},
            )
        label = f"step {step['step']}" if step["step"] is not None else ""
        if kind == "fail":
            label += f": {step['event']} at {step['when']}, cur_tick {step['cur_tick']}"
        ax.annotate(label, (tick, y), textcoords="offset points", xytext=(-6, 0), ha="right", va="center", fontsize=7)
    names = [f"worker {w}" for w in lanes]
    if any(s["worker"] is None for s in steps):
        names.append("record")
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlabel("simulated tick (arrow: from the event's when to cur_tick at that step)")
    ax.set_title(title, fontsize=10)
    handles = [
        plt.Line2D([], [], marker=m, linestyle="", color=KIND_COLOURS[k], label=lab)
        for k, m, lab in (("pop", "v", "pop"), ("handler", "s", "handler starts"), ("fail", "X", "failing step"))
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=3, fontsize=7, frameon=False)
    ticks = [t for s in steps for t in (s["when"], s["cur_tick"]) if t is not None]
    if ticks:
        span = max(ticks) - min(ticks) or 1
        ax.set_xlim(min(ticks) - 0.9 * span, max(ticks) + 0.1 * span)  # room for the labels on the left
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def failure_rates(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """split's verdicts over interleave seeds at each ``preempt`` (run seed 1), and over real-threads runs
    (run seeds 1, 2, ...: each a different model and a different timing)."""
    workload, workers = cfg["workload"], int(cfg.get("workers", 2))
    params = dict(cfg.get("params") or {})
    rows: list[dict[str, Any]] = []
    for preempt in cfg.get("preempt", [0.5, 0.1, 0.01]):
        for seed in range(int(cfg.get("interleave_seeds", 12))):
            options = {"preempt": float(preempt), "interleave_seed": seed}
            verdict, _ = check_cell(resolve_cell(workload, params, "split", options, workers, 1))
            rows.append({"executor": "interleave", "preempt": float(preempt), "run": seed, "verdict": verdict.kind})
    threads = cfg.get("threads")
    if threads:
        tparams = {**params, **(threads.get("params") or {})}
        for run in range(int(threads.get("runs", 4))):
            work = threads.get("work", "gil-release")
            cell = resolve_cell(workload, tparams, "split", {"executor": "threads"}, workers, run + 1, work=work)
            verdict, _ = check_cell(cell)
            rows.append({"executor": "threads", "preempt": None, "run": run, "verdict": verdict.kind})
    return rows


def _rate_table(rows: list[dict[str, Any]]) -> list[tuple[str, int, Counter[str]]]:
    groups: dict[str, Counter[str]] = {}
    for row in rows:
        label = f"interleave, preempt={row['preempt']:g}" if row["executor"] == "interleave" else "real threads"
        groups.setdefault(label, Counter())[row["verdict"]] += 1
    return [(label, sum(c.values()), c) for label, c in groups.items()]


def rates_figure(rows: list[dict[str, Any]], path: Path) -> None:
    """:func:`rates` written to ``path``."""
    fig = rates(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def rates(rows: list[dict[str, Any]]) -> plt.Figure:
    """Share of runs per verdict for each preempt value and for real threads (stacked bars)."""
    table = _rate_table(rows)
    kinds = sorted({k for _, _, c in table for k in c}, key=lambda k: (k != "exact", k))
    colours = {"exact": "#4c9f50", "diverged": "#f0a030", "causality": "#d64541", "race": "#8e44ad"}
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.5 * len(table)))
    left = [0.0] * len(table)
    for kind in kinds:
        shares = [c.get(kind, 0) / n for _, n, c in table]
        ax.barh(range(len(table)), shares, left=left, color=colours.get(kind, "#555555"), label=kind)
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.set_yticks(range(len(table)), [f"{label} ({n} runs)" for label, n, _ in table])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of runs")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), fontsize=7, ncols=len(kinds), frameon=False)
    ax.set_title("split: verdicts per preempt value and with real threads", fontsize=9)
    fig.tight_layout()
    return fig


def pdf_pages(_data: Any = None, outdir: str | Path = OUTDIR) -> list[plt.Figure]:
    """The failure pages for the PDF (a :class:`tickpar.report.Page`): per strategy whose page was made
    in ``outdir``, its shrunk cell and anatomy as text, and its timeline; then split's rates."""
    figs: list[plt.Figure] = []
    folder = Path(outdir)
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.name == "split_rates.json":
            continue
        data = json.loads(path.read_text())
        strategy = data["cell"]["strategy"]
        lines = [
            f"verdict {data['verdict']['kind']}: {data['verdict']['reason']}",
            f"shrunk ({data['tries']} cells, {data['elapsed_s']:.1f} s) from {data['size_before']['components']}"
            f" components, {data['size_before']['events']} events to {data['size']['components']} and"
            f" {data['size']['events']}:",
            data["command"],
            "",
            *(
                f"{s['step'] if s['step'] is not None else '-'}  {s['worker'] if s['worker'] is not None else ''}"
                f"  {s['event'] or ''}  when={s['when']} cur_tick={s['cur_tick']}: {s['note']}"
                for s in data["anatomy"]
            ),
        ]
        fig = plt.figure(figsize=(11, 8.5))
        fig.suptitle(f"{strategy}: the anatomy of its failure", fontsize=12)
        wrapped = [w for line in lines for w in (textwrap.wrap(line, 130) or [""])]
        fig.text(0.04, 0.92, "\n".join(wrapped), va="top", family="monospace", fontsize=7)
        figs.append(fig)
        figs.append(timeline(data["anatomy"], f"{strategy}: {data['verdict']['kind']}"))
    rates_path = folder / "split_rates.json"
    if rates_path.exists():
        figs.append(rates(json.loads(rates_path.read_text())["rows"]))
    return figs


def page(
    strategy: str,
    result: ShrinkResult,
    steps: list[dict[str, Any]],
    figure: Path,
    rows: list[dict[str, Any]] | None = None,
    rates_svg: Path | None = None,
) -> str:
    """One strategy's failure page (HTML, the figures inlined)."""
    esc = html.escape
    cell = result.cell
    promise = get_registry().strategy(strategy)().promise(cell.spec, cell.workers, cell.options)
    (c0, e0), (c1, e1) = result.size_before, result.size
    how = "a local minimum" if result.exhausted else "the budget ran out first"
    parts = [
        f"<h2>{esc(strategy)}: the anatomy of its failure</h2>",
        f"<p>Verdict <b>{esc(result.verdict.kind)}</b>: {esc(result.verdict.reason)}</p>",
        f"<p>Found on <code>{esc(command(result.original))}</code>; shrunk in {result.elapsed_s:.1f} s over"
        f" {result.tries} cells ({how}) from {c0} components and {e0} events (sequential run) to {c1} and {e1}:</p>",
        f"<pre>{esc(command(cell))}</pre>",
        f"<p>Promise for the shrunk cell: {esc(str(promise.verdict))}"
        f" ({esc(promise.because)}{'; traits ' + esc(', '.join(promise.traits)) if promise.traits else ''}).</p>",
        "<table border='1' cellspacing='0' cellpadding='3'><tr>"
        + "".join(f"<th>{k}</th>" for k in ("step", "worker", "event", "when", "cur_tick", "what happened"))
        + "</tr>",
    ]
    for s in steps:
        cells = (s["step"], s["worker"], s["event"], s["when"], s["cur_tick"], s["note"])
        parts.append("<tr>" + "".join(f"<td>{esc('' if v is None else str(v))}</td>" for v in cells) + "</tr>")
    parts.append("</table>")
    parts.append(figure.read_text())
    if rows and rates_svg is not None:
        parts.append("<h3>How likely is it?</h3><table border='1' cellspacing='0' cellpadding='3'>")
        parts.append("<tr><th>executor</th><th>runs</th><th>not exact</th><th>verdicts</th></tr>")
        for label, n, counts in _rate_table(rows):
            bad = n - counts.get("exact", 0)
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            parts.append(f"<tr><td>{esc(label)}</td><td>{n}</td><td>{bad / n:.0%}</td><td>{esc(kinds)}</td></tr>")
        parts.append("</table>")
        parts.append(rates_svg.read_text())
    return "<html><body>\n" + "\n".join(parts) + "\n</body></html>\n"


def render(failures: dict[str, Any], outdir: str | Path, strategies: Sequence[str] | None = None) -> list[Path]:
    """Shrink, explain and draw each configured strategy's cell; write its page; return the pages."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    budget = float(failures.get("budget_s", 4.0))
    cells = failures.get("cells") or {}
    written = []
    rows = None
    rates_svg = None
    if failures.get("rates") and "split" in cells and (strategies is None or "split" in strategies):
        rows = failure_rates(failures["rates"])
        write_json_atomic(outdir / "split_rates.json", {"rows": rows})
        rates_svg = outdir / "split_rates.svg"
        rates_figure(rows, rates_svg)
    for strategy, entry in cells.items():
        if strategies is not None and strategy not in strategies:
            continue
        result = shrink(_cell(entry, strategy), budget)
        steps = explain(result.cell, result.verdict, result.outcome.record)
        figure = outdir / f"{strategy}_timeline.svg"
        timeline_figure(steps, f"{strategy}: {result.verdict.kind} ({command(result.cell)[14:90]}...)", figure)
        write_json_atomic(outdir / f"{strategy}.json", {**result.to_dict(), "anatomy": steps})
        path = outdir / f"{strategy}.html"
        path.write_text(page(strategy, result, steps, figure, rows if strategy == "split" else None, rates_svg))
        written.append(path)
    return written


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/failures.py`` (the Snakemake ``script:`` object)."""
    pages = render(smk.params.failures, smk.params.outdir, [smk.wildcards.strategy])
    print(f"tickpar: failure pages: {', '.join(map(str, pages))}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tickpar.report.failures --config FILE --outdir DIR``: the failure pages without Snakemake."""
    import yaml

    parser = argparse.ArgumentParser(prog="python -m tickpar.report.failures")
    parser.add_argument("--config", required=True, help="a sweep config with a failures: section")
    parser.add_argument("--outdir", default="results/report/failures")
    parser.add_argument("--strategy", action="append", help="only this strategy's page (repeatable)")
    args = parser.parse_args(argv)
    failures = (yaml.safe_load(Path(args.config).read_text()) or {}).get("failures") or {}
    pages = render(failures, args.outdir, args.strategy)
    print(json.dumps([str(p) for p in pages]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
