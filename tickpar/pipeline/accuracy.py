"""Accuracy against speed: ``results/summary.csv`` -> ``results/accuracy.csv``.

A relaxed strategy (``quantum`` beyond the lookahead) trades exactness for
speed; this table says how much of each.  One row per (workload, shape,
strategy, variant, order, workers), over the seeds of the sweep:

==================  ===========================================================
``quantum_ratio``   the quantum as a multiple of the partition's lookahead (the
                    strategy's statistic ``quantum_ratio``; empty for strategies
                    without a quantum)
``speedup``         mean over seeds of the cell's speedup (empty when not timed);
                    for a timed run that is not exact, which summary.csv gives
                    no speedup, the baseline's median time over this cell's:
                    the speed of an approximate answer, which is the point here
``error_<figure>``  mean over seeds of the absolute relative error against the
                    golden run (a fraction: 0.05 is 5%), one column per error
                    figure of :func:`tickpar.verify.oracle.errors`: ``final_tick``,
                    ``events`` and each statistic the workload declares
``max_error``       the largest of the row's error columns
``seeds``           seeds with errors; ``verdict``: the worst verdict over them
``late_events``     mean late events per run (``quantum``'s statistic), if any
==================  ===========================================================

Rows come from every checked cell whose run finished (it has errors) except
the sequential baseline; strategies that are exact have 0 in every error
column.  :func:`thresholds` says, per workload shape, the smallest quantum
ratio whose error passes each level (1% and 15% by default: the anchors'
claims are par-gem5's single-digit percent and parti-gem5's under 15%).

    python -m tickpar.pipeline.accuracy results/summary.csv --out results/accuracy.csv
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tickpar.pipeline.aggregate import write_csv_atomic
from tickpar.plugins import BASELINE
from tickpar.verify.oracle import MISSING, worst_verdict

__all__ = ["COLUMNS", "ERROR_PREFIX", "LEVELS", "accuracy_table", "main", "thresholds"]

ERROR_PREFIX = "error_"
#: The leading columns of accuracy.csv (then one ``error_<figure>`` column per error figure, then the rest).
COLUMNS = ("workload", "shape", "strategy", "variant", "quantum_ratio", "workers", "speedup")
#: Error levels the report draws and :func:`thresholds` reports (fractions).
LEVELS = (0.01, 0.15)
_GROUP = ("workload", "shape", "strategy", "variant", "order", "workers")


def _error_columns(df: pd.DataFrame) -> list[str]:
    """``error_final_tick``, ``error_events`` first, then the statistics' columns in table order."""
    cols = [c for c in df.columns if c.startswith(ERROR_PREFIX)]
    first = [c for c in (f"{ERROR_PREFIX}final_tick", f"{ERROR_PREFIX}events") if c in cols]
    return first + [c for c in cols if c not in first]


def accuracy_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The accuracy table of a summary (see the module docstring); empty when nothing has errors."""
    errors = _error_columns(summary)
    rest = ["max_error", "order", "seeds", "verdict", "late_events"]
    if summary.empty or not errors:
        return pd.DataFrame(columns=[*COLUMNS, *rest])
    df = summary[summary["strategy"] != BASELINE].copy()
    df = df[df[errors].notna().any(axis=1)]
    for col in errors:
        df[col] = pd.to_numeric(df[col], errors="coerce").abs()
    for col in ("speedup", "stat_quantum_ratio", "stat_late_events"):
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df.columns else math.nan
    if {"cell", "time_median_s", "baseline_cell"} <= set(summary.columns):
        times = pd.to_numeric(summary.set_index("cell")["time_median_s"], errors="coerce")
        mine = pd.to_numeric(df["time_median_s"], errors="coerce")
        approximate = df["speedup"].isna() & mine.notna() & df["baseline_cell"].notna()
        if approximate.any():
            base = pd.to_numeric(df.loc[approximate, "baseline_cell"].map(times), errors="coerce")
            df.loc[approximate, "speedup"] = (base / mine[approximate]).astype(float)
    rows: list[dict[str, Any]] = []
    for key, group in df.groupby(list(_GROUP), sort=False, dropna=False):
        row: dict[str, Any] = dict(zip(_GROUP, key, strict=True))
        row["quantum_ratio"] = group["stat_quantum_ratio"].mean()
        row["speedup"] = group["speedup"].mean()
        for col in errors:
            row[col] = group[col].mean()
        row["max_error"] = max((row[c] for c in errors if not pd.isna(row[c])), default=math.nan)
        row["seeds"] = len(group)
        row["verdict"] = worst_verdict(group["verdict"].astype(str)) if "verdict" in group else MISSING
        row["late_events"] = group["stat_late_events"].mean()
        rows.append(row)
    if not rows:  # only the baseline ran, or no parallel cell finished with errors
        return pd.DataFrame(columns=[*COLUMNS, *errors, *rest])
    out = pd.DataFrame(rows)
    return out[[*COLUMNS, *errors, *rest]].sort_values(
        ["workload", "shape", "strategy", "workers", "quantum_ratio", "variant"], kind="stable", na_position="first"
    ).reset_index(drop=True)


def thresholds(table: pd.DataFrame, levels: Sequence[float] = LEVELS) -> pd.DataFrame:
    """Per (workload, shape, strategy, workers) with quantum ratios: where ``max_error`` first exceeds each level.

    Columns: workload, shape, strategy, workers, level, ``within`` (the largest
    ratio swept whose error stays at or below the level with every smaller ratio
    also below it; NaN if even the smallest passes it) and ``passes`` (the
    smallest ratio whose error is above the level; NaN if none is).
    """
    rows: list[dict[str, Any]] = []
    q = table[table["quantum_ratio"].notna()] if not table.empty else table
    for key, group in q.groupby(["workload", "shape", "strategy", "workers"], sort=False):
        by_ratio = group.groupby("quantum_ratio")["max_error"].max().sort_index()
        for level in levels:
            above = by_ratio[by_ratio > level]
            passes = float(above.index[0]) if not above.empty else math.nan
            below = by_ratio[by_ratio.index < passes] if not above.empty else by_ratio
            within = float(below.index[-1]) if not below.empty else math.nan
            rows.append(dict(zip(("workload", "shape", "strategy", "workers"), key, strict=True),
                             level=level, within=within, passes=passes))  # fmt: skip
    return pd.DataFrame(rows, columns=["workload", "shape", "strategy", "workers", "level", "within", "passes"])


def build(summary: str | Path, out: str | Path) -> pd.DataFrame:
    """Read ``summary``, write the accuracy table to ``out`` (atomically), return it."""
    table = accuracy_table(pd.read_csv(summary))
    write_csv_atomic(table, out)
    return table


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/accuracy.py`` (the Snakemake ``script:`` object)."""
    table = build(smk.input.summary, smk.output.accuracy)
    print(f"tickpar: {smk.output.accuracy}: {len(table)} rows")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tickpar.pipeline.accuracy", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("summary", help="results/summary.csv")
    parser.add_argument("--out", default="results/accuracy.csv")
    args = parser.parse_args(argv)
    table = build(args.summary, args.out)
    print(f"{args.out}: {len(table)} rows")
    limits = thresholds(table)
    if not limits.empty:
        print(limits.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
