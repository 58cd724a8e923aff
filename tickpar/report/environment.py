"""The environment page: CPU, cores, Python, GIL, work model and versions, the native engine's calibration (each
cost beside its floor, :func:`calibration_rows`), and the engine benchmark's table.

The engine benchmark's table gives tickpar's events/s beside its peers with the ratios; the project's own speed
goals are judged in ``bench/goals.py``, not here.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from tickpar.perf.predict.costs import calibration_figures, cxx_calibration
from tickpar.report import engine_bench
from tickpar.report.layout import CSS, draw_lines, draw_table, table_pages

__all__ = ["calibration_rows", "environment_html", "environment_rows", "pdf_pages"]


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


def calibration_rows(path: str | Path | None) -> list[tuple[str, str]]:
    """The native engine's calibration (``tickpar calibrate``, the cxx preset), each cost beside its floor
    (:func:`~tickpar.perf.predict.costs.calibration_figures`);
    none without the file (a sweep without the native engine)."""
    if path is None or not Path(path).is_file():
        return []
    cal = cxx_calibration(path)
    where = f"{cal['file']} ({cal.get('date', '?')}, {cal.get('machine', {}).get('cpu', '?')})"
    return [("native calibration", where), *((f"native {key}", text) for key, text in calibration_figures(cal))]


def environment_html(rows: list[tuple[str, str]], extra_html: str = "") -> str:
    """The environment page; ``extra_html`` (the engine benchmark's section) goes below the table."""
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>environment</title><style>{CSS}</style>"
        f"</head><body><h2>Environment</h2><table>{body}</table>{extra_html}</body></html>"
    )


#: Environment rows that share one PDF page with the engine benchmark; more get pages of their own.
_ENV_ROWS_WITH_ENGINE = 32

def engine_figure(fig: plt.Figure, top: float, record: dict[str, Any] | None) -> float:
    """The engine benchmark's section on ``fig`` from ``top`` down: heading, table, what failed."""
    fig.text(0.05, top, "Engine benchmark: tickpar and its peers (bench/engine.py)", fontsize=12, weight="bold",
             va="top")  # fmt: skip
    lines = engine_bench.page_lines(record)
    y = top - 0.03
    if record is not None and record.get("status") != "failed":
        y = draw_lines(fig, y, lines[:1]) - 0.005
        rows = [list(r) for r in engine_bench.table_rows(record)]
        if rows:
            y = draw_table(fig, y, rows, engine_bench.TABLE_COLUMNS, (0.24, 0.12, 0.34, 0.30)) - 0.015
        lines = lines[1:]
    return draw_lines(fig, y, lines)


def pdf_pages(environment: list[tuple[str, str]], engine: dict[str, Any] | None) -> list[plt.Figure]:
    """The environment table and, below it, the engine benchmark (on a page of its own after a long table)."""
    env = [[k, v] for k, v in environment]
    if len(env) > _ENV_ROWS_WITH_ENGINE:
        pages = table_pages("Environment", pd.DataFrame(environment, columns=["", "value"]), 60, (0.3, 0.7))
        fig = plt.figure(figsize=(8.27, 11.69))
        engine_figure(fig, 0.95, engine)
        return [*pages, fig]
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.text(0.07, 0.96, "Environment", fontsize=14, weight="bold", va="top")
    y = draw_table(fig, 0.92, env or [["(no cells)", ""]], ["", "value"], (0.3, 0.7)) - 0.03
    engine_figure(fig, y, engine)
    return [fig]
