"""Aggregate the sweep's records into ``results/summary.csv``: one tidy row per cell.

Inputs: the sweep's manifest (one row per cell from :meth:`tickpar.pipeline.sweep.Sweep.manifest`:
the labels and the record paths), each cell's correctness record (``tickpar check``)
and, for timed cells, its timing record (``tickpar time``).  A missing or
unreadable record becomes verdict ``missing`` / timing status ``missing``; it
never stops the aggregate.

Columns (see :data:`ID_COLUMNS` and :func:`cell_row`): the cell (workload, shape,
family, strategy, variant, label, base_label (strategy/variant without the label's
tags), workers, seed, order, work, ``interpreter``: ``default`` or ``freethreaded``,
and ``gil``: ``enabled`` or ``disabled``, as the cell's own process found it), every workload
parameter (``param_*``) and strategy option (``opt_*``), the verdict with the
strategy's own promise (``expected_verdict``: its label, one verdict, ``not exact`` or
``one of ...``; ``as_expected``: whether the verdict keeps it; ``promise_because``: its one-line why), the timing
(``time_mean_s``, ``time_stdev_s`` ... from the pyperf values, ``time_loop_mean_s``
and ``time_loop_median_s`` from the loop times, ``loop_source``: ``stat`` when the
strategy reported its own ``loop_s``, ``run`` when it is the in-process run),
the checks of the timing (``timed_exact``: every timed run's digests equal the
golden ones; ``n_contended``: values taken while the CPU-availability probe saw
another load, left out of speedups; ``contended``: all of them were, so the
cell has no speedup; ``n_retimed``: contended rounds that were timed again before
their values were given up, and ``retime_reasons``: why, one clause per re-time; ``cpu_available_min``,
``load_avg_1min``), the derived speed (``speedup`` with ``speedup_lo``/``speedup_hi``,
``loop_speedup`` with ``loop_speedup_lo``/``loop_speedup_hi``, ``efficiency``,
``events_per_s``, ``us_per_event``, ``overhead_us_per_event``), the strategy's
statistics flattened (``stat_*``: a list such as per-worker ``idle_s`` becomes
``stat_idle_s_sum`` and ``stat_idle_s_max``), and the environment (python, GIL
state, work model, cpu, cores, versions as ``ver_*``).

``speedup`` is the end-to-end speedup, what a user waits for: ``T_seq / T`` with
``T`` the mean of the cell's pyperf values (whole runs: model build and
process/rank start-up included) and ``T_seq`` that of the sequential cell with
the same workload, shape (so the same parameters), seed, order, work mode, interpreter and engine
(``engine``: ``python``, or ``native``, the C++ replay: each engine is its own baseline).
``loop_speedup`` is the same ratio of the loop times (the strategy's execution
alone).  Only usable values enter them (:func:`usable_values`): a cell whose
timed runs were not all exact gets no speedup, and values taken in a contended
round are left out (a cell with none left gets none).  Each interval is a
percentile bootstrap: both sides are resampled independently (``bootstrap``
times, with a fixed seed per cell, so the CSV is reproducible) and the ratio of
the resampled means is taken; the interval is the central ``confidence`` share
of those ratios.  The resampling has two levels, as the values do: the rounds
(each a fresh process) with replacement, then the values within each chosen
round (:attr:`UsableValues.rounds`).  A process's values share its speed, and that
varies from process to process, on every value
(docs/measurements/2026-12-04-timing-rules.md).  Resampling values alone would treat one
slow process's three values as three independent draws and give an interval too
narrow to judge a bound with.  It covers measurement noise only, not seed-to-seed
variation (each seed is its own row).  ``overhead_us_per_event`` is ``(T - T_seq) / events``:
at one worker it is the pure cost of the strategy's synchronisation and bookkeeping.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from tickpar.host.atomic import read_json_object
from tickpar.host.paths import publish
from tickpar.pipeline.sweep import BASELINE

__all__ = [
    "ID_COLUMNS",
    "UsableValues",
    "aggregate",
    "bootstrap_ratio",
    "cell_row",
    "flatten_stats",
    "speedup_columns",
    "usable_values",
    "write_csv_atomic",
]

ID_COLUMNS = [
    "cell", "workload", "shape", "family", "strategy", "variant", "label", "base_label",
    "workers", "seed", "order", "work", "interpreter", "engine", "gil", "timed", "mpi", "processes", "held_out",
]  # fmt: skip
_ENV_KEYS = (
    "python", "implementation", "gil_enabled", "free_threaded_build", "cpu_model", "cores",
    "usable_cores", "platform", "hostname", "git_sha", "slurm_job_id",
)  # fmt: skip


def flatten_stats(stats: Mapping[str, Any] | None, prefix: str = "stat_") -> dict[str, Any]:
    """A strategy's statistics as flat scalar columns."""
    out: dict[str, Any] = {}
    for key, value in (stats or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_stats(value, f"{name}_"))
        elif isinstance(value, (list, tuple)):
            if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                out[f"{name}_sum"] = float(sum(value))
                out[f"{name}_max"] = float(max(value))
            elif not value:
                out[f"{name}_sum"] = 0.0
                out[f"{name}_max"] = 0.0
            else:
                out[name] = json.dumps(value, default=str)
        elif value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = str(value)
    return out


def _short(text: Any, limit: int = 300) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def cell_row(
    entry: Mapping[str, Any], check: Mapping[str, Any] | None, timing: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One summary row: the manifest entry joined with its records (without speedup, see :func:`aggregate`)."""
    row: dict[str, Any] = {k: entry.get(k) for k in ID_COLUMNS}
    row["interpreter"] = entry.get("interpreter") or "default"
    row["base_label"] = entry.get("base_label") or entry.get("label")
    for k, v in (entry.get("params") or {}).items():
        row[f"param_{k}"] = v
    for k, v in (entry.get("options") or {}).items():
        row[f"opt_{k}"] = v
    expected = entry.get("expected_verdict")
    row["expected_verdict"] = expected
    promise = (check or {}).get("promise") or {}  # tickpar check: the promise and the traits it rests on
    row["promise_trait"] = ("+".join(promise.get("traits") or []) or "contract") if expected else None
    row["promise_because"] = _short(promise.get("because"), 200) or None  # the promise's one-line why
    verdict = (check or {}).get("verdict") or {}
    kind = verdict.get("kind") if check is not None else "missing"
    row["verdict"] = kind or "missing"
    row["verdict_reason"] = _short(verdict.get("reason") if check is not None else "no correctness record")
    # A gem5 trace replayed at its run's own cost (gem5trace's gem5_stats): which cost, from where (Workload.describe)
    cost = ((check or {}).get("workload_info") or {}).get("event_cost")
    row["event_cost_us"] = cost.get("mean_us") if isinstance(cost, dict) else None
    row["event_cost"] = _short(cost.get("description")) if isinstance(cost, dict) else None
    # The promise may be a set of verdicts (its label in expected_verdict); older manifests name one.
    promised = entry.get("promised_verdicts") or ([expected] if expected else [])
    row["as_expected"] = (row["verdict"] in promised) if promised else None
    check = check or {}
    row["events"] = check.get("events")
    row["final_tick"] = check.get("final_tick")
    row["digest"] = check.get("digest")
    row["check_wall_s"] = check.get("wall_s")
    if timing is None and entry.get("timed"):
        timing = {"status": "missing", "reason": "no timing record"}
    timing = timing or {}
    row["timing_status"] = timing.get("status") if entry.get("timed") else "not timed"
    row["timing_reason"] = _short(timing.get("reason"))
    row["n_values"] = timing.get("n_values", 0) if entry.get("timed") else 0
    for key in ("mean_s", "stdev_s", "median_s", "min_s"):
        row[f"time_{key}"] = timing.get(key)
    row["time_loop_mean_s"] = timing.get("loop_mean_s")
    row["time_loop_median_s"] = timing.get("loop_median_s")
    row["loop_source"] = timing.get("loop_source")
    row["timed_exact"] = timing.get("timed_exact") if entry.get("timed") else None
    flags = [bool(f) for f in timing.get("value_contended") or []]
    row["contended"] = (bool(flags) and all(flags)) if entry.get("timed") else None
    row["n_contended"] = sum(flags)
    row["n_retimed"] = int(timing.get("n_retimed") or 0) if entry.get("timed") else 0
    row["retime_reasons"] = _short("; ".join(timing.get("retime_reasons") or []), 500)
    row["slow_rounds"] = _short("; ".join(timing.get("slow_rounds") or []), 500)  # slow processes, left out
    row["cpu_available_min"] = timing.get("cpu_available_min")
    row["load_avg_1min"] = timing.get("load_avg_1min_max")
    row["timing_work_units_per_us"] = timing.get("work_units_per_us")
    env = check.get("env") or timing.get("env") or {}
    for key in _ENV_KEYS:
        row[key] = env.get(key)
    gil = env.get("gil_enabled")
    row["gil"] = None if gil is None else ("enabled" if gil else "disabled")
    work_model = check.get("work_model") or {}
    row["work_model"] = work_model.get("mode", entry.get("work"))
    row["engine"] = entry.get("engine") or check.get("engine") or "python"  # python or native (the C++ replay)
    row["work_units_per_us"] = work_model.get("units_per_us")
    row["work_unit"] = work_model.get("unit")
    row.update(flatten_stats(check.get("stats")))
    row.update(flatten_stats(check.get("errors"), "error_"))  # relative errors against golden (oracle.errors)
    for name, version in (check.get("versions") or timing.get("versions") or {}).items():
        row[f"ver_{name}"] = version
    return row


def _resampled_means(
    values: np.ndarray, groups: Sequence[int] | None, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``resamples`` bootstrap means of ``values``: rounds (``groups``) with replacement, then values within them.

    Without groups, or with one round, the values alone are resampled.
    """
    labels = np.asarray(groups) if groups is not None else np.zeros(values.size, dtype=int)
    rounds = [values[labels == g] for g in dict.fromkeys(labels.tolist())]
    if len(rounds) < 2:
        return rng.choice(values, size=(resamples, values.size), replace=True).mean(axis=1)
    # each round's resampled sums (values within it), then whole rounds drawn with replacement
    sums = np.stack([rng.choice(r, size=(resamples, r.size), replace=True).sum(axis=1) for r in rounds])
    sizes = np.asarray([r.size for r in rounds], dtype=float)
    chosen = rng.integers(0, len(rounds), size=(resamples, len(rounds)))
    picked = np.take_along_axis(sums.T, chosen, axis=1).sum(axis=1)
    return picked / sizes[chosen].sum(axis=1)


def bootstrap_ratio(
    base: Sequence[float],
    values: Sequence[float],
    resamples: int,
    confidence: float,
    seed: int,
    base_groups: Sequence[int] | None = None,
    groups: Sequence[int] | None = None,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of mean(base) / mean(values); NaNs below two values on either side.

    ``base_groups``/``groups``: each value's round (its process); where a side has two rounds or more, its
    rounds are resampled, then the values within them (module docstring).
    """
    b = np.asarray(base, dtype=float)
    v = np.asarray(values, dtype=float)
    if b.size < 2 or v.size < 2:
        return (math.nan, math.nan)
    for name, labels, side in (("base_groups", base_groups, b), ("groups", groups, v)):
        if labels is not None and len(labels) != side.size:
            raise ValueError(f"{name}: {len(labels)} labels for {side.size} values")
    rng = np.random.default_rng(seed)
    bm = _resampled_means(b, base_groups, resamples, rng)
    vm = _resampled_means(v, groups, resamples, rng)
    ratios = bm / vm
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(ratios, [tail, 1.0 - tail])
    return (float(lo), float(hi))


class UsableValues(NamedTuple):
    """A timing record's values that may enter a speedup (:func:`usable_values`)."""

    values: list[float]
    """End-to-end values (whole runs)."""
    loops: list[float]
    """The strategy's loop time of the same runs."""
    rounds: list[int] | None
    """Each value's process: its index in the record's ``rounds`` (None: a record without rounds)."""


def usable_values(timing: Mapping[str, Any] | None) -> UsableValues | None:
    """The (end-to-end, loop) values of a timing record that may enter a speedup, with their rounds, or None.

    None when the record is not ``ok`` or its timed runs were not all exact
    (``timed_exact`` false); values taken in a contended round are left out
    (``value_contended``).  Records without loop values (format 1) use the
    end-to-end values for both.  ``rounds`` says which process took each value
    (an entry of ``rounds``; a re-time is a process of its own).
    """
    if not timing or timing.get("status") != "ok" or not timing.get("values"):
        return None
    if timing.get("timed_exact") is False:
        return None
    vals = [float(x) for x in timing["values"]]
    loops = [float(x) for x in timing.get("loop_values") or vals]
    flags = list(timing.get("value_contended") or [False] * len(vals))
    if not len(vals) == len(loops) == len(flags):
        return None
    keep = [i for i, contended in enumerate(flags) if not contended]
    if not keep:
        return None
    labels = [i for i, r in enumerate(timing.get("rounds") or []) for _ in r.get("values") or []]
    rounds = [labels[i] for i in keep] if len(labels) == len(vals) else None
    return UsableValues([vals[i] for i in keep], [loops[i] for i in keep], rounds)


def _ratio(
    name: str, base: Sequence[float] | None, mine: Sequence[float] | None, resamples: int, confidence: float, seed: int,
    base_rounds: Sequence[int] | None = None, rounds: Sequence[int] | None = None,
) -> dict[str, float]:  # fmt: skip
    if not base or not mine:
        return {name: math.nan, f"{name}_lo": math.nan, f"{name}_hi": math.nan}
    lo, hi = bootstrap_ratio(base, mine, resamples, confidence, seed, base_rounds, rounds)
    return {name: float(np.mean(base)) / float(np.mean(mine)), f"{name}_lo": lo, f"{name}_hi": hi}


def _rounds_of(side: Sequence[Any] | None) -> Sequence[int] | None:
    return side[2] if side is not None and len(side) > 2 else None


def speedup_columns(
    base: Sequence[Any] | None,
    mine: Sequence[Any] | None,
    resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, float]:
    """``speedup`` and ``loop_speedup`` with their intervals (``_lo``, ``_hi``) from two :func:`usable_values`
    results, the baseline's and the cell's (``(values, loops)`` pairs work too: values resampled alone);
    NaN where either side has none."""
    groups = (_rounds_of(base), _rounds_of(mine))
    out = _ratio("speedup", base[0] if base else None, mine[0] if mine else None, resamples, confidence, seed,
                 *groups)  # fmt: skip
    loop = _ratio("loop_speedup", base[1] if base else None, mine[1] if mine else None, resamples, confidence,
                  seed + 1, *groups)  # fmt: skip
    return {**out, **loop}


def _seed_of(cell: str) -> int:
    return int.from_bytes(hashlib.sha256(cell.encode()).digest()[:8], "little")


def _is_default_baseline(entry: Mapping[str, Any], defaults: Mapping[str, Any] | None) -> bool:
    return defaults is None or dict(entry.get("options") or {}) == dict(defaults)


def aggregate(
    manifest: Iterable[Mapping[str, Any]],
    *,
    bootstrap: int = 2000,
    confidence: float = 0.95,
    load: Any = read_json_object,
) -> pd.DataFrame:
    """The summary table of a sweep (one row per manifest entry, in manifest order)."""
    entries = list(manifest)
    rows: list[dict[str, Any]] = []
    values: dict[str, list[float]] = {}
    loop_values: dict[str, list[float]] = {}
    rounds: dict[str, list[int] | None] = {}
    for entry in entries:
        check = load(entry.get("check_path"))
        timing = load(entry.get("timing_path")) if entry.get("timed") else None
        rows.append(cell_row(entry, check, timing))
        clean = usable_values(timing)
        if clean is not None:
            values[entry["cell"]], loop_values[entry["cell"]], rounds[entry["cell"]] = clean
    df = pd.DataFrame(rows)
    if df.empty:
        return df

    try:
        from tickpar.plugins.registry import get_registry

        defaults = {k: p.default for k, p in get_registry().strategy(BASELINE).options.items()}
    except Exception:  # the baseline plugin is missing: any sequential cell will do
        defaults = None

    def group_key(entry: Mapping[str, Any]) -> tuple[Any, ...]:  # a speedup's baseline: same interpreter, engine
        same = ("workload", "shape", "seed", "order", "work")
        return (*(entry[k] for k in same), entry.get("interpreter", "default"), entry.get("engine", "python"))

    baselines: dict[tuple[Any, ...], str] = {}
    for entry in entries:
        if entry["strategy"] != BASELINE or entry["cell"] not in values:
            continue
        key = group_key(entry)
        if key not in baselines or _is_default_baseline(entry, defaults):
            baselines[key] = entry["cell"]

    speed: list[dict[str, Any]] = []
    for entry, row in zip(entries, rows, strict=True):
        base_cell = baselines.get(group_key(entry))
        out: dict[str, Any] = {"baseline_cell": base_cell}
        mine = values.get(entry["cell"])
        base = values.get(base_cell) if base_cell else None
        events = row.get("events") or 0
        mean = float(np.mean(mine)) if mine else math.nan
        out["events_per_s"] = events / mean if mine and events else math.nan
        out["us_per_event"] = mean / events * 1e6 if mine and events else math.nan
        base_pair = (base, loop_values[base_cell], rounds[base_cell]) if base and base_cell else None
        mine_pair = (mine, loop_values[entry["cell"]], rounds[entry["cell"]]) if mine else None
        out.update(speedup_columns(base_pair, mine_pair, bootstrap, confidence, _seed_of(entry["cell"])))
        out["efficiency"] = out["speedup"] / entry["workers"]
        if mine and base and events:
            out["overhead_us_per_event"] = (mean - float(np.mean(base))) / events * 1e6
        else:
            out["overhead_us_per_event"] = math.nan
        speed.append(out)
    df = pd.concat([df, pd.DataFrame(speed)], axis=1)
    return _order_columns(df)


def _order_columns(df: pd.DataFrame) -> pd.DataFrame:
    first = [c for c in ID_COLUMNS if c in df.columns]
    params = sorted(c for c in df.columns if c.startswith("param_"))
    opts = sorted(c for c in df.columns if c.startswith("opt_"))
    core = [
        "expected_verdict", "verdict", "as_expected", "events", "final_tick",
        "timing_status", "timed_exact", "contended", "n_contended", "n_retimed", "retime_reasons", "slow_rounds",
        "cpu_available_min", "load_avg_1min",
        "n_values", "time_mean_s", "time_stdev_s", "time_median_s", "time_min_s", "time_loop_mean_s",
        "time_loop_median_s", "loop_source", "speedup", "speedup_lo", "speedup_hi", "loop_speedup",
        "loop_speedup_lo", "loop_speedup_hi", "efficiency", "events_per_s", "us_per_event",
        "overhead_us_per_event", "baseline_cell",
    ]  # fmt: skip
    core = [c for c in core if c in df.columns]
    stats = sorted(c for c in df.columns if c.startswith("stat_"))
    vers = sorted(c for c in df.columns if c.startswith("ver_"))
    env = [c for c in (*_ENV_KEYS, "work_model", "work_units_per_us", "work_unit") if c in df.columns]
    taken = set(first + params + opts + core + stats + vers + env)
    rest = [c for c in df.columns if c not in taken]
    return df[first + params + opts + core + rest + stats + env + vers]


def write_csv_atomic(df: pd.DataFrame, path: str | Path) -> None:
    """Write ``df`` as CSV through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        df.to_csv(tmp, index=False)
        publish(tmp, path)  # 0644 under the usual umask, as every other output (mkstemp makes 0600)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/aggregate.py`` (the Snakemake ``script:`` object)."""
    settings = smk.params.report
    df = aggregate(smk.params.manifest, bootstrap=settings["bootstrap"], confidence=settings["confidence"])
    if not df.empty:  # ideal_speedup, bound_speedup: from the shapes' bounds records (rules/bounds.smk)
        from tickpar.perf.predict.prediction import bound_columns

        df = bound_columns(df, list(getattr(smk.input, "bounds", [])))
    write_csv_atomic(df, smk.output.summary)
    counts = df["verdict"].value_counts().to_dict() if not df.empty else {}
    timed = int((df["timing_status"] == "ok").sum()) if not df.empty else 0
    print(f"tickpar: {smk.output.summary}: {len(df)} cells, verdicts {counts}, {timed} timed")
