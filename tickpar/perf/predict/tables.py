"""Per-shape bound records, the fits on 1-worker runs, and the prediction and model-error tables.

:func:`shape_bounds` writes one record per workload shape; :func:`bound_columns` joins them to the
sweep's summary; :func:`prediction_table` builds ``results/prediction.csv``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tickpar.perf.predict.bounds import critical_path
from tickpar.perf.predict.costs import PRESET_ENGINE, PRESETS, preset
from tickpar.perf.predict.dag import Dag
from tickpar.perf.predict.strategy_times import (
    MODELLED,
    PREDICT_WORKERS,
    least_cost_dag,
    partition_or_fallback,
    provenance,
    strategy_backend,
    strategy_time,
)
from tickpar.plugins import BASELINE, RunSpec

__all__ = [
    "BOUND_TOLERANCE",
    "PREDICTION_COLUMNS",
    "VALIDATION",
    "bound_columns",
    "fits_for",
    "measured_speedups",
    "model_rows",
    "one_worker_fits",
    "prediction_table",
    "shape_bounds",
]
PREDICTION_COLUMNS = (
    "workload", "shape", "strategy", "variant", "preset", "workers",
    "predicted_speedup", "measured_speedup", "rel_error", "order", "work",
    "bound", "model", "above_bound", "bound_sources", "model_sources", "engine",
    "validation", "measured_lo", "measured_hi", "above_bound_point",
)  # fmt: skip
"""``prediction.csv``'s columns.  ``model`` is ``predicted_speedup`` (the preset's overheads added) and
``rel_error`` its error; ``bound`` the zero-overhead limit under the strategy's own assignment, at the
preset's own event costs (``here``: the Python engine's; ``cxx``: the native engine's plus the work each event
asks for); ``above_bound`` whether the measured point exceeds it (a defect);
``bound_sources``/``model_sources``: JSON, where each figure comes from (:func:`provenance`); ``engine``
the engine whose measurements the row is checked against (:data:`PRESET_ENGINE`); ``validation``: what the
measured point is to the model (:data:`VALIDATION`); ``measured_lo``/``measured_hi``: the measured speedup's
95% interval (``loop_speedup_lo``/``_hi``, median over seeds); ``above_bound`` is judged with it: the whole
interval above the bound, while ``above_bound_point`` says only that the point estimate is."""
#: ``validation`` values: ``fit`` (a 1-worker point an overhead was fitted on: its error says nothing),
#: ``sweep`` (a point of the sweep the model predicts, never fitted on), ``held-out`` (a point on a held-out
#: shape: a sweep with ``held_out: true``, config/README.md), ``none`` (nothing measured).
VALIDATION = ("fit", "sweep", "held-out", "none")
SHAPE_FORMAT = "tickpar.shape-bounds/1"
#: A measured speedup counts as above its bound beyond this relative margin (float rounding only:
#: a point above its bound is a defect of the bound or of the measurement, never noise to allow for).
BOUND_TOLERANCE = 1e-9


# -- per shape ----------------------------------------------------------------------------------------
def shape_bounds(
    workload: str,
    shape: str,
    spec: RunSpec,
    cells: Sequence[Mapping[str, Any]],
    calibration: Mapping[str, Any],
    workers: Iterable[int] = PREDICT_WORKERS,
    calibration_file: str = "results/bounds/calibration.json",
    recordings: int = 3,
    presets: Sequence[str] = PRESETS,
) -> dict[str, Any]:
    """The bounds record of one shape: ideal, bound and model (predicted) speedups of each timed (strategy, variant).

    ``spec``: the shape's sequential spec (seed and order are replaced per
    cell).  ``cells``: ``{strategy, variant, options, order, work}`` per timed
    strategy variant at this shape.  The DAG is recorded ``recordings`` times
    and each event keeps its least cost (:func:`least_cost_dag`); ``calibration_file``
    names ``calibration`` in each row's ``model_sources``.  The record keeps the
    DAGs, the cells and each strategy's partition, so that :func:`model_rows` can
    price the model again with overheads fitted later (:func:`one_worker_fits`).
    ``presets``: the cost presets priced (``here`` alone for a sweep without the native engine, whose
    ``cxx`` calibration is missing); kept in the record, so that a later pricing prices the same.
    """
    unknown = [p for p in presets if p not in PRESETS]
    if unknown or "here" not in presets:
        raise ValueError(f"presets {list(presets)}: 'here' and any of {', '.join(PRESETS)}")
    from dataclasses import replace

    ps = sorted({int(p) for p in workers} | {1})
    started = time.perf_counter()
    dags: dict[str, Dag] = {}
    ideal: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str, str]] = set()
    kept: list[dict[str, Any]] = []
    unmodelled: list[str] = []
    fallback: dict[str, list[int]] = {}
    partitions: dict[str, dict[str, list[int] | None]] = {}
    for cell in cells:
        key = (str(cell["strategy"]), str(cell["variant"]), str(cell["order"]), str(cell["work"]))
        if key in seen:
            continue
        seen.add(key)
        order, work_mode = key[2], key[3]
        if order not in dags:
            dags[order] = least_cost_dag(replace(spec, order=order), recordings)
            here = preset("here", "threads", work_mode, calibration)
            priced = dags[order].with_work(here.work_per_call_s, here.work_per_us_s)
            cp = critical_path(priced)
            t1 = priced.t1_s
            for p in ps:
                ideal.append({"order": order, "work": work_mode, "workers": p,
                              "ideal_speedup": min(float(p), t1 / cp) if cp > 0 else float(p)})  # fmt: skip
        if key[0] not in MODELLED:
            unmodelled.append(key[0])
            continue
        options = dict(cell.get("options") or {})
        kept.append({"strategy": key[0], "variant": key[1], "order": order, "work": work_mode, "options": options})
        lp_of = partition_or_fallback(replace(spec, order=order), key[0], options, fallback)
        if lp_of is not None:
            partitions[_partition_key(key[0], key[1], order)] = {str(p): lp_of(p) for p in ps}
    record: dict[str, Any] = {
        "format": SHAPE_FORMAT,
        "workload": workload,
        "shape": shape,
        "spec": spec.to_dict(),
        "workers": ps,
        "calibration": dict(calibration),
        "calibration_file": calibration_file,
        "presets": list(presets),
        "cells": kept,
        "partitions": partitions,
        "dags": {order: dag.to_dict() for order, dag in dags.items()},
    }
    rows = model_rows(record, dags=dags)
    first = next(iter(dags.values()), None)
    return {
        **record,
        "events": len(first) if first is not None else 0,
        "components": len(first.components) if first is not None else 0,
        "seconds": time.perf_counter() - started,
        "ideal": ideal,
        "rows": rows,
        "unmodelled": sorted(set(unmodelled)),
        "partition_fallback": fallback,
        "recordings": recordings,
    }


def _partition_key(strategy: str, variant: str, order: str) -> str:
    return f"{strategy}|{variant}|{order}"


#: Strategies whose 1-worker run goes through the same per-event machinery as a parallel one, so that
#: its loop time minus the sequential one's, per event, is their ``o_event`` (:func:`one_worker_fits`).
#: Conservative runs one LP with its windows at P = 1.  Tick-barrier is not one: at P = 1 it serves every
#: bin with the plain loop (:func:`tickpar.perf.predict.bounds.tick_barrier_time`), which says nothing of the
#: per-event cost of a parallel batch; its ``o_event`` stays the calibration's.
FITTED_FROM_ONE_WORKER = ("conservative",)
#: ``(strategy, variant, order, work, engine)``: what a fit is keyed by.
FitKey = tuple[str, str, str, str, str]


def model_rows(
    record: Mapping[str, Any], fits: Mapping[FitKey, Mapping[str, Any]] | None = None,
    dags: Mapping[str, Dag] | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The bound and model rows of a shape record (:func:`shape_bounds`), the model priced with ``fits``.

    ``fits``: per ``(strategy, variant, order, work, engine)``, an ``o_event_s`` fitted from 1-worker
    runs (:func:`one_worker_fits`) that replaces the preset's own ``o_event`` (engine ``python``:
    preset ``here``; ``native``: ``cxx``), named in ``model_sources``.  The bound takes no fit: it has
    no overhead at all.
    """
    calibration = record["calibration"]
    calibration_file = str(record.get("calibration_file", "results/bounds/calibration.json"))
    ps = [int(p) for p in record["workers"]]
    dags = dict(dags) if dags is not None else {o: Dag.from_dict(d) for o, d in record["dags"].items()}
    rows: list[dict[str, Any]] = []
    for cell in record["cells"]:
        strategy, variant, order, work_mode = cell["strategy"], cell["variant"], cell["order"], cell["work"]
        options = cell.get("options") or {}
        dag = dags[order]
        backend = strategy_backend(strategy, options)
        parts = record.get("partitions", {}).get(_partition_key(strategy, variant, order))
        lp_of = (lambda p, parts=parts: parts.get(str(p))) if parts is not None else None
        for name in record.get("presets", PRESETS):
            costs = preset(name, backend, work_mode, calibration, strategy=strategy)
            fit = (fits or {}).get((strategy, variant, order, work_mode, PRESET_ENGINE[name]))
            if fit is not None:
                costs = replace(costs, overheads=replace(costs.overheads, o_event=float(fit["o_event_s"])))
            t1, predicted = strategy_time(dag, strategy, options, costs, ps, optimistic=False, partition=lp_of)
            # Each preset's own bound: ``here`` at the Python engine's costs, ``cxx`` at the native engine's (each
            # event its native cost plus the work it asks for: a gem5 trace at its run's own cost per event).
            bound = strategy_time(dag, strategy, options, costs, ps, optimistic=True, partition=lp_of)[1]
            sources = provenance(calibration_file, name, fit)
            for p in ps:
                rows.append(
                    {
                        "strategy": strategy,
                        "variant": variant,
                        "order": order,
                        "work": work_mode,
                        "preset": name,
                        "workers": p,
                        "predicted_speedup": t1 / predicted[p] if predicted[p] > 0 else float(p),
                        "bound_speedup": (t1 / bound[p] if bound[p] > 0 else float(p)) if bound else None,
                        "bound_sources": sources["bound"] if bound else None,
                        "model_sources": sources["model"],
                        "fitted": fit is not None,
                    }
                )
    return rows


def _counted(summary: pd.DataFrame) -> pd.DataFrame:
    """The timed cells that count (exact, ``timed_exact``, not ``contended``; default interpreter)."""
    df = summary
    keep = df["speedup"].notna() & (df.get("verdict", "exact") == "exact")
    if "interpreter" in df:
        keep &= df["interpreter"].fillna("default") == "default"
    if "timed_exact" in df:
        keep &= df["timed_exact"].astype("boolean").fillna(False).astype(bool)
    if "contended" in df:
        keep &= ~df["contended"].astype("boolean").fillna(False).astype(bool)
    kept = df[keep]
    # computed on the kept rows: a full-length Series assigned to an empty frame would give it every row back
    return kept.assign(engine=kept["engine"].fillna("python") if "engine" in kept else "python")


def one_worker_fits(summary: pd.DataFrame, workload: str) -> dict[FitKey, dict[str, Any]]:
    """``o_event`` per ``(strategy, variant, order, work, engine)`` of ``workload``, fitted from its 1-worker runs.

    For each counted 1-worker cell of a strategy in :data:`FITTED_FROM_ONE_WORKER`: ``(T1 - Tseq) /
    events``, the loop time (``time_loop_median_s``) it takes beyond its own sequential baseline's
    (``baseline_cell``: same shape, order, engine), per event, taken on the workload's shape whose
    baseline spends the least time per event: there the per-event overhead is the largest share of
    the loop (on a shape with 300 µs of work per event a 1% timing noise is 3 µs per event, more than
    the overhead itself).  Only 1-worker runs: the 2-worker points the model predicts are never
    fitted on.  A fit may be negative (the strategy's loop does less per event than the sequential one).
    """
    needed = {"workers", "time_loop_median_s", "baseline_cell", "events", "cell", "strategy"}
    if summary.empty or not needed <= set(summary.columns):
        return {}
    loop = dict(zip(summary["cell"], pd.to_numeric(summary["time_loop_median_s"], errors="coerce"), strict=True))
    df = _counted(summary)
    df = df[(df["workload"] == workload) & (df["workers"].astype(int) == 1)
            & df["strategy"].isin(FITTED_FROM_ONE_WORKER)]  # fmt: skip
    found: dict[FitKey, list[tuple[float, str]]] = {}
    for row in df.itertuples(index=False):
        mine, base = float(row.time_loop_median_s), loop.get(row.baseline_cell, math.nan)
        events = float(row.events or 0)
        if not (math.isfinite(mine) and math.isfinite(base) and events > 0):
            continue
        key = (str(row.strategy), str(row.variant), str(row.order), str(row.work), str(row.engine))
        found.setdefault(key, []).append((base / events, (mine - base) / events, str(row.shape)))
    out: dict[FitKey, dict[str, Any]] = {}
    for key, pts in found.items():
        per_event, value, shape = min(pts)  # the most engine-bound shape
        out[key] = {
            "o_event_s": float(value),
            "shapes": [shape],
            "source": f"fit: (T1 - Tseq) / events, {key[0]}/{key[1]} at 1 worker on {workload}/{shape} "
            f"(summary.csv time_loop_median_s, {key[4]} engine; of its 1-worker shapes the one with the least "
            f"sequential time per event, {per_event * 1e6:.3g} us)",
        }
    return out


def fits_for(summary: pd.DataFrame, workload: str) -> dict[FitKey, dict[str, Any]]:
    """The fits that price ``workload``'s shapes: its own (:func:`one_worker_fits`), and for a key it has no
    1-worker run of (a gem5 trace timed at 2 workers only, ``shape_workers``), another workload's, the first
    in name order that has one, its ``source`` saying so.  ``o_event`` is the strategy's own per-event cost on
    that engine, so every shape of the sweep is priced with the same overheads, whatever its workload."""
    own = one_worker_fits(summary, workload)
    borrowed: dict[FitKey, dict[str, Any]] = {}
    others = sorted({str(w) for w in summary["workload"]} - {workload}) if "workload" in summary else []
    for other in others:
        for key, fit in one_worker_fits(summary, other).items():
            if key not in own and key not in borrowed:
                borrowed[key] = {**fit, "source": f"{fit['source']}; borrowed: {workload} has no 1-worker run of "
                                 f"{key[0]}/{key[1]} on the {key[4]} engine"}  # fmt: skip
    return {**borrowed, **own}


def _records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every readable shape record."""
    out = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        if data.get("format") == SHAPE_FORMAT:
            out.append(data)
    return out


def _load_shapes(
    paths: Iterable[str | Path], summary: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(bound rows, ideal rows) of every readable shape record, keyed by workload and shape.

    With ``summary``, a record that keeps its DAGs is priced again with the overheads fitted from that
    workload's 1-worker runs (:func:`one_worker_fits`, :func:`model_rows`).
    """
    rows: list[dict[str, Any]] = []
    ideal: list[dict[str, Any]] = []
    fits: dict[str, dict[FitKey, dict[str, Any]]] = {}
    for data in _records(paths):
        where = {"workload": data["workload"], "shape": data["shape"]}
        mine = data["rows"]
        if summary is not None and "dags" in data and data.get("cells"):
            if data["workload"] not in fits:
                fits[data["workload"]] = fits_for(summary, data["workload"])
            if fits[data["workload"]]:
                mine = model_rows(data, fits[data["workload"]])
        rows += [{**where, **r} for r in mine]
        ideal += [{**where, **r} for r in data["ideal"]]
    return pd.DataFrame(rows), pd.DataFrame(ideal)


def bound_columns(summary: pd.DataFrame, paths: Iterable[str | Path]) -> pd.DataFrame:
    """``summary`` with ``ideal_speedup`` and ``bound_speedup`` (preset ``here``) per cell, NaN where unknown.

    Native-engine rows get neither beyond one worker (both are priced at the Python engine's costs).
    At one worker ``bound_speedup`` is 1 for every strategy, a plugin's included: with nothing
    running beside anything, no schedule beats the sequential work.  Beyond one worker it is NaN
    for a strategy this module has no structural model of (not in :data:`MODELLED`: a plugin; the
    shape record lists it under ``unmodelled``), which is what an empty cell in the summary means.
    """
    out = summary.copy()
    out["ideal_speedup"] = math.nan
    out["bound_speedup"] = math.nan
    if not out.empty and "workers" in out.columns:
        out.loc[out["workers"].astype(int) == 1, "bound_speedup"] = 1.0
    rows, ideal = _load_shapes(paths)
    if out.empty or rows.empty:
        return out
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers"]
    here = rows[rows["preset"] == "here"][[*keys, "bound_speedup"]].drop_duplicates(keys)
    ideal = ideal[["workload", "shape", "order", "work", "workers", "ideal_speedup"]].drop_duplicates(
        ["workload", "shape", "order", "work", "workers"]
    )
    base = out.drop(columns=["ideal_speedup", "bound_speedup"])
    base["_row"] = np.arange(len(base))
    base["workers"] = base["workers"].astype(int)
    merged = base.merge(here, on=keys, how="left").merge(
        ideal, on=["workload", "shape", "order", "work", "workers"], how="left"
    )
    merged = merged.sort_values("_row")
    bound = np.array(merged["bound_speedup"], dtype=np.float64)  # a copy: pandas may hand out a read-only view
    one = base["workers"].to_numpy() == 1
    bound[one & np.isnan(bound)] = 1.0  # one worker: 1 for every strategy, modelled or not
    ideal_v = merged["ideal_speedup"].to_numpy(dtype=np.float64).copy()
    if "engine" in base.columns:  # the bound and the ideal are priced at this machine's Python costs
        native = (base["engine"].fillna("python") == "native").to_numpy()
        bound[native & ~one] = math.nan
        ideal_v[native] = math.nan
    out["bound_speedup"] = bound
    out["ideal_speedup"] = ideal_v
    return out


def measured_speedups(summary: pd.DataFrame) -> pd.DataFrame:
    """Timed points that count: exact, ``timed_exact`` and not ``contended`` where those columns exist.

    One row per (workload, shape, strategy, variant, order, work, workers): the
    median over seeds of ``loop_speedup`` where the summary has it, else of
    ``speedup`` (column ``measured``; ``measure`` says which; ``measured_lo``/``measured_hi``
    the medians of its interval's ends), per ``engine``
    (:data:`PRESET_ENGINE`: ``here`` is checked against the Python engine's runs, ``cxx``
    against the native engine's).  Only the default interpreter's cells: the model's
    ``here`` costs are that interpreter's.
    """
    if summary.empty or "speedup" not in summary:
        return pd.DataFrame()
    df = _counted(summary)
    column = "loop_speedup" if "loop_speedup" in df and df["loop_speedup"].notna().any() else "speedup"
    df = df.assign(
        measured_lo=pd.to_numeric(df[f"{column}_lo"], errors="coerce") if f"{column}_lo" in df else math.nan,
        measured_hi=pd.to_numeric(df[f"{column}_hi"], errors="coerce") if f"{column}_hi" in df else math.nan,
    )
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers", "engine"]
    out = df.groupby(keys, as_index=False).agg(
        measured=(column, "median"), measured_lo=("measured_lo", "median"), measured_hi=("measured_hi", "median")
    )
    out["measure"] = column
    return out


def prediction_table(summary: pd.DataFrame, paths: Iterable[str | Path]) -> pd.DataFrame:
    """``results/prediction.csv``: predicted speedup per preset and P, with the measured point where there is one.

    The model is priced with the overheads fitted from the summary's 1-worker runs
    (:func:`one_worker_fits`) where the shape record keeps its DAGs.
    """
    rows, _ = _load_shapes(paths, summary if not summary.empty else None)
    if rows.empty:
        return pd.DataFrame(columns=list(PREDICTION_COLUMNS))
    rows = rows[rows["strategy"] != BASELINE].copy()
    rows["engine"] = rows["preset"].map(PRESET_ENGINE).fillna("python")  # cxx: against the native engine's runs
    measured = measured_speedups(summary)
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers", "engine"]
    if not measured.empty:
        rows = rows.merge(measured[[*keys, "measured", "measured_lo", "measured_hi"]], on=keys, how="left")
    else:
        rows["measured"] = rows["measured_lo"] = rows["measured_hi"] = math.nan
    rows["measured_speedup"] = rows["measured"]
    rows["rel_error"] = (rows["predicted_speedup"] - rows["measured_speedup"]) / rows["measured_speedup"]
    for column in ("bound_speedup", "bound_sources", "model_sources", "fitted"):
        if column not in rows:
            rows[column] = None  # a shape record written before the column existed
    rows["model"] = rows["predicted_speedup"]
    rows["bound"] = pd.to_numeric(rows["bound_speedup"], errors="coerce")
    limit = rows["bound"] * (1 + BOUND_TOLERANCE)
    rows["above_bound_point"] = rows["measured_speedup"] > limit
    # Judged with the interval: where it is unknown, the point itself.
    low = rows["measured_lo"].where(rows["measured_lo"].notna(), rows["measured_speedup"])
    rows["above_bound"] = low > limit
    held: set[tuple[str, str]] = set()
    if not summary.empty and "held_out" in summary:
        flag = summary["held_out"].astype("boolean").fillna(False).astype(bool)
        held = set(zip(summary.loc[flag, "workload"], summary.loc[flag, "shape"], strict=True))
    is_held = pd.Series([(w, s) in held for w, s in zip(rows["workload"], rows["shape"], strict=True)],
                        index=rows.index)  # fmt: skip
    fitted = rows["fitted"].astype("boolean").fillna(False).astype(bool) & (rows["workers"].astype(int) == 1)
    rows["validation"] = np.where(
        rows["measured_speedup"].isna(), "none", np.where(fitted, "fit", np.where(is_held, "held-out", "sweep"))
    )
    return rows[list(PREDICTION_COLUMNS)].reset_index(drop=True)
