"""What ``tickpar trace-fit`` prints: the fitted shape as YAML, and the trace's statistics beside the fit's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["percent", "shape_name", "shape_yaml", "summary_lines", "table_lines"]


def shape_name(trace: str | Path | None) -> str:
    """A config shape name for the fit of ``trace``: ``fit-`` and the file's stem (``tg-random-16core``)."""
    name = Path(str(trace or "trace")).name
    for suffix in (".gz", ".txt", ".events", ".event", ".insert-log", ".log"):
        name = name.removesuffix(suffix)
    name = re.sub(r"[^A-Za-z0-9_.+-]", "-", name).strip("-.") or "trace"
    return f"fit-{name}"[:64]


def shape_yaml(result: dict[str, Any]) -> str:
    """``NAME: {param: value, ...}``: one line to paste under ``workloads.<workload>.shapes:``."""
    return yaml.safe_dump({result["name"]: result["shape"]}, default_flow_style=None, sort_keys=False, width=10_000)


def _value(value: float | None, name: str) -> str:
    if value is None:
        return "-"
    if name == "zero_delay_cross_share":
        return f"{value:.1%}"
    if name.startswith("delay_"):
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The statistics, trace beside fitted, with the relative difference (``!`` marks one not reached)."""
    width = max(len(r["label"]) for r in rows)
    lines = [f"{'statistic':<{width}}  {'weight':>6}  {'trace':>14}  {'fitted':>14}  difference"]
    for r in rows:
        rel = r["relative_difference"]
        diff = "-" if rel is None else f"{rel:+.1%}"
        mark = "" if r["reached"] else "  !"
        lines.append(
            f"{r['label']:<{width}}  {r['weight']:>6g}  {_value(r['trace'], r['name']):>14}  "
            f"{_value(r['fitted'], r['name']):>14}  {diff}{mark}"
        )
    return lines


def percent(rel: float | None) -> str:
    """A relative difference as a signed percentage ("missing" for None; never "-0%")."""
    if rel is None:
        return "missing"
    return "+0%" if abs(rel) < 0.005 else f"{rel:+.0%}"


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Everything ``tickpar trace-fit`` prints on stdout."""
    s = result["search"]
    prof = result["trace_profile"]
    fixed = f"; fixed: {', '.join(f'{k}={v}' for k, v in s['fixed'].items())}" if s["fixed"] else ""
    lines = [
        f"trace: {result['trace']} ({prof.get('format', '?')}): {prof['events']:,} events in "
        f"{prof['components']} components",
        f"search: {s['method']} over {', '.join(s['axes'])}{fixed}",
        f"  {s['evaluated']} of at most {s['max_candidates']} runs ({s['grid_points']} grid points, "
        f"{s['descent_moves']} descent moves, {s['stopped']}), about {s['events']:,} events each, seed "
        f"{result['seed']}, {s['seconds']:.0f} s",
        f"fitted {result['workload']} shape (paste under workloads.{result['workload']}.shapes:):",
        shape_yaml(result).rstrip("\n"),
        "",
        *table_lines(result["statistics"]),
        f"distance {result['distance']:.3f} (weighted RMS of the log-ratios, each squashed at a factor of 4)",
    ]
    if result["unreached"]:
        lines.append(f"not reached (more than {result['tolerance']:.0%} off):")
        lines.extend(f"  {u['label']}: {percent(u['relative_difference'])}: {u['why']}" for u in result["unreached"])
    else:
        lines.append(f"every statistic within {result['tolerance']:.0%} of the trace's")
    return lines
