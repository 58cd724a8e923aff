"""Scaling on a many-core machine: the pipeline's checks, bounds, model and timing at 1 ... N workers, no Snakemake.

For a machine with more cores than the 2-core development one (a workstation, a cluster node), where
installing Snakemake is not wanted. Every step is the pipeline's own:

1. a golden record per (shape, order, seed) (``tickpar golden``) and one correctness check per cell
   (``tickpar check``), several at a time, each claiming its cores (``SweepCell.check_cores``, as the pipeline);
2. alone: the timing of every shape, one shape at a time (:func:`tickpar.perf.timing.measure_cells`:
   interleaved rounds of fresh pyperf processes, every timed run checked against the golden record,
   CPU availability probed around each round);
3. alone on the machine: the ``cxx`` calibration (``tickpar calibrate``, when there are native cells),
   the ``here`` calibration (``python -m tickpar.perf.predict.prediction calibrate``, sync measured up to the
   largest worker count), and each timed shape's bounds and model (``... prediction shape``);
4. ``summary.csv`` (:func:`tickpar.pipeline.aggregate.aggregate`), ``prediction.csv``
   (:func:`tickpar.perf.predict.prediction.prediction_table`) and ``model_error.csv``
   (:func:`tickpar.report.model_error.model_error_table`), rewritten after every timed shape so that a
   run cut short keeps what it measured, and ``scaling.csv``: one row per (shape, strategy variant,
   engine) and worker count, the measured loop speedup with its 95% interval beside the model and the bound.

Worker counts above the usable cores are left out (a speedup above the core count cannot be measured),
and so are those that ``--workers`` does not name. ``environment.json`` records the machine, the
interpreter, its GIL state and the tickpar version; every record carries its own environment too.

The default config times conservative's two schedules side by side on the native engine: ``window-threads``
(``schedule=static``, one LP per worker) and ``window-adaptive`` (``schedule=adaptive``: up to 8 LPs per
worker, 64 at most, handed out every window by their last window's cost; issue #48), on the balanced
``wide64`` shapes and on ``moving64`` (phold with a moving hot group); ``scaling.csv`` has a row per variant.

Run:  ``python bench/scaling.py --out-dir DIR [--config config/scaling.yaml] [--workers 1,2,4,8,16]``
(``--jobs``: checks at a time, default: usable cores / 4).  The default config takes about 8 minutes
on 16 cores.  ``--show DIR`` prints the table of an earlier run again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from tickpar.perf.predict.bounds import CALIBRATION_ENV
from tickpar.perf.predict.prediction import prediction_table
from tickpar.perf.timing import BASELINE_MAX_SPREAD, MAX_ROUND_SHIFT, TimingJob, measure_cells
from tickpar.pipeline.aggregate import aggregate, write_csv_atomic
from tickpar.pipeline.sweep import BASELINE, SweepCell, SweepError, format_value, load_config_file, load_sweep
from tickpar.report.model_error import model_error_table

#: Columns of scaling.csv, in order.
SCALING_COLUMNS = (
    "workload", "shape", "strategy", "variant", "order", "engine", "work", "workers", "loop_speedup",
    "loop_speedup_lo", "loop_speedup_hi", "speedup", "model", "bound", "rel_error", "above_bound", "verdict",
    "timed_exact", "contended", "cores", "cpu_model", "python", "gil", "work_model",
)  # fmt: skip


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def parse_workers(text: str | None) -> set[int] | None:
    """``--workers 1,2,4`` as a set; None when not given. A bad value is a one-line error (ValueError)."""
    if text is None:
        return None
    try:
        out = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise ValueError(f"--workers {text!r}: comma-separated integers >= 1, e.g. 1,2,4,8,16") from None
    if not out or min(out) < 1:
        raise ValueError(f"--workers {text!r}: comma-separated integers >= 1, e.g. 1,2,4,8,16")
    return out


def select_cells(cells: Iterable[SweepCell], cores: int, wanted: set[int] | None) -> tuple[list[SweepCell], list[str]]:
    """The cells to run: sequential always, others at worker counts within ``cores`` (and ``wanted``).

    Returns the kept cells and one line per worker count left out, saying why.
    """
    kept, dropped = [], {}
    for cell in cells:
        if cell.strategy == BASELINE:
            kept.append(cell)
        elif cell.workers > cores:
            dropped[cell.workers] = f"{cell.workers} workers: above the {cores} usable cores"
        elif wanted is not None and cell.workers not in wanted:
            dropped[cell.workers] = f"{cell.workers} workers: not in --workers"
        else:
            kept.append(cell)
    return kept, [dropped[w] for w in sorted(dropped)]


class CoreBudget:
    """At most ``cores`` claimed at a time (a job claiming more than all of them runs alone)."""

    def __init__(self, cores: int) -> None:
        self.cores = cores
        self.free = cores
        self._cond = threading.Condition()

    def run(self, claim: int, fn: Callable[[], Any]) -> Any:
        claim = min(claim, self.cores)
        with self._cond:
            self._cond.wait_for(lambda: self.free >= claim)
            self.free -= claim
        try:
            return fn()
        finally:
            with self._cond:
                self.free += claim
                self._cond.notify_all()


class Progress:
    """One line per step on stderr, with the time since the start."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def __call__(self, text: str) -> None:
        print(f"[{time.perf_counter() - self.started:7.1f} s] {text}", file=sys.stderr, flush=True)


def _run_logged(argv: Sequence[str], log: Path, limit: float, env: Mapping[str, str] | None = None) -> int:
    """Run ``argv`` with its output in ``log``; its exit status (124 when it ran past ``limit`` seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        out.write("$ " + shlex.join(argv) + "\n")
        out.flush()
        try:
            return subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=limit,
                                  env={**os.environ, **(env or {})}, check=False).returncode  # fmt: skip
        except subprocess.TimeoutExpired:
            out.write(f"\nkilled after {limit:.0f} s\n")
            return 124


def _fallback(what: str, rc: int, log: Path, out: Path) -> None:
    """The pipeline's fallback record for a command that died without writing one."""
    subprocess.run([sys.executable, "-m", "tickpar.pipeline.sweep", "fallback", "--what", what, "--rc", str(rc),
                    "--log", str(log), "--out", str(out)], check=False)  # fmt: skip


def _written(path: Path) -> bool:
    return path.exists() and path.stat().st_size > 0


def check_cells(sweep: Any, cells: Sequence[SweepCell], root: Path, jobs: int, say: Progress,
                resume: bool = False) -> None:  # fmt: skip
    """Golden records, then one ``tickpar check`` per cell, ``jobs`` at a time within the usable cores
    (``resume``: those already written are kept)."""
    timeout = float(sweep.config.get("timeout_s", 60))
    limit = 2 * timeout + 60
    goldens = {c.golden_key: sweep.goldens[c.golden_key] for c in cells
               if not (resume and _written(root / c.golden_path))}  # fmt: skip
    todo = [c for c in cells if not (resume and _written(root / c.check_path))]
    budget = CoreBudget(usable_cores())

    def golden(cell: SweepCell) -> None:
        out, log = root / cell.golden_path, root / "logs" / cell.golden_path.replace(".json", ".log")
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "tickpar", "golden", *cell.cli_args(golden=True), "--out", str(out)]
        rc = _run_logged(argv, log, limit)
        if not out.exists() or out.stat().st_size == 0:
            _fallback("golden", rc, log, out)

    def check(cell: SweepCell) -> None:
        out, log = root / cell.check_path, root / "logs" / cell.check_path.replace(".json", ".log")
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [cell.python or sys.executable, "-m", "tickpar", "check", *cell.cli_args(), "--timeout",
                str(format_value(timeout)), "--golden", str(root / cell.golden_path), "--out", str(out)]  # fmt: skip
        rc = budget.run(cell.check_cores, lambda: _run_logged(argv, log, limit))
        if not out.exists() or out.stat().st_size == 0:
            _fallback("check", rc, log, out)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(golden, goldens.values()))
        say(f"{len(goldens)} golden records")
        list(pool.map(check, todo))
    verdicts: dict[str, int] = {}
    for cell in cells:
        try:
            kind = json.loads((root / cell.check_path).read_text()).get("verdict", {}).get("kind") or "missing"
        except (OSError, ValueError):
            kind = "missing"
        verdicts[kind] = verdicts.get(kind, 0) + 1
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(verdicts.items()))
    say(f"{len(cells)} checks ({len(cells) - len(todo)} kept from before): {kinds}")


def bounds_cells(cells: Sequence[SweepCell]) -> list[dict[str, Any]]:
    """The ``--cells`` of ``prediction shape``: each strategy variant, order and work mode once."""
    variants = [{"strategy": c.strategy, "variant": c.variant, "options": c.options, "order": c.order, "work": c.work}
                for c in cells]  # fmt: skip
    return list({json.dumps(v, sort_keys=True): v for v in variants}.values())


def calibrate(cells: Sequence[SweepCell], root: Path, say: Progress, resume: bool = False) -> Path:
    """The ``cxx`` (native cells only) and ``here`` calibrations, alone on the machine; the ``here`` file
    (``resume``: a calibration already written is kept)."""
    here, native = root / "bounds" / "calibration.json", root / "calibration.json"
    cores = max([c.workers for c in cells] + [2])
    steps: list[tuple[str, list[str], Path]] = []
    if any(c.engine == "native" for c in cells):
        steps.append(("cxx", [sys.executable, "-m", "tickpar.cli", "calibrate", "--budget", "0.5", "--out",
                              str(native)], native))  # fmt: skip
    steps.append(("here", [sys.executable, "-m", "tickpar.perf.predict.prediction", "calibrate", "--cores", str(cores),
                           "--out", str(here)], here))  # fmt: skip
    for name, argv, out in steps:
        if resume and _written(out):
            say(f"calibration {name}: kept from before")
            continue
        rc = _run_logged(argv, root / "logs" / f"calibrate-{name}.log", 1800)
        say(f"calibration {name}: " + ("ok" if rc == 0 and out.exists() else f"FAILED (exit {rc}, see logs)"))
    return here


def shape_bounds(workload: str, shape: str, cells: Sequence[SweepCell], calibration: Path, root: Path,
                 workers: Sequence[int]) -> Path:  # fmt: skip
    """One shape's bounds and model (``prediction shape``), alone on the machine; the record's path."""
    first = min(cells, key=lambda c: c.seed)
    out = root / "bounds" / workload / f"{shape}.json"
    argv = [sys.executable, "-m", "tickpar.perf.predict.prediction", "shape", "--workload", workload, "--shape", shape,
            "--seed", str(first.seed)]  # fmt: skip
    for key, value in first.params.items():
        argv += ["--param", f"{key}={format_value(value)}"]
    argv += ["--cells", json.dumps(bounds_cells(cells), sort_keys=True), "--workers", ",".join(map(str, workers)),
             "--calibration", str(calibration), "--out", str(out)]  # fmt: skip
    native_cal = root / "calibration.json"
    env = {"TICKPAR_CALIBRATION": str(native_cal)} if native_cal.exists() else {}
    _run_logged(argv, root / "logs" / "bounds" / workload / f"{shape}.log", 900, env)
    return out


def time_shape(cells: Sequence[SweepCell], root: Path, timing: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Time one shape's cells as the pipeline's timing job does (records under ``root``)."""
    jobs = []
    for cell in cells:
        entry = cell.timing_entry()
        entry.update({key: str(root / entry[key])
                      for key in ("timing_path", "pyperf_path", "check_path", "golden_path")})  # fmt: skip
        jobs.append(TimingJob.from_entry(entry))
    return measure_cells(
        jobs,
        rounds=int(timing.get("processes", 2)),
        values=int(timing.get("values", 3)),
        warmups=int(timing.get("warmups", 1)),
        timeout=float(timing.get("timeout_s", 300)),
        inherit_environ=list(timing.get("inherit_environ") or []),
        min_cpu_available=float(timing.get("min_cpu_available", 0.9)),
        retimes=int(timing.get("retimes", 2)),
        long_cell_s=float(timing.get("long_cell_s", 0.0)),
        long_values=int(timing.get("long_values", 2)),
        baseline_max_spread=float(timing.get("baseline_max_spread", BASELINE_MAX_SPREAD)),
        max_round_shift=float(timing.get("max_round_shift", MAX_ROUND_SHIFT)),
    )


def write_tables(sweep: Any, cells: Sequence[SweepCell], root: Path, bounds: Sequence[Path]) -> pd.DataFrame:
    """summary.csv, prediction.csv, model_error.csv and scaling.csv under ``root``; the scaling table."""
    manifest = []
    for cell in cells:
        row = cell.row()
        row["check_path"] = str(root / row["check_path"])
        row["timing_path"] = str(root / row["timing_path"]) if row["timing_path"] else None
        manifest.append(row)
    report = sweep.config.get("report") or {}
    native_calibration = root / "calibration.json"
    if native_calibration.exists():  # the cxx preset's costs: this run's calibration, as the pipeline's rules pass it
        os.environ[CALIBRATION_ENV] = str(native_calibration)
    summary = aggregate(manifest, bootstrap=int(report.get("bootstrap", 2000)),
                        confidence=float(report.get("confidence", 0.95)))  # fmt: skip
    write_csv_atomic(summary, root / "summary.csv")
    prediction = prediction_table(summary, [str(p) for p in bounds if p.exists()])
    write_csv_atomic(prediction, root / "prediction.csv")
    param = str(report.get("granularity_param", "work_us"))
    write_csv_atomic(model_error_table(summary, prediction, param), root / "model_error.csv")
    table = scaling_table(summary, prediction)
    write_csv_atomic(table, root / "scaling.csv")
    return table


def scaling_table(summary: pd.DataFrame, prediction: pd.DataFrame) -> pd.DataFrame:
    """One row per timed parallel cell: the measured loop speedup beside the model and the bound at its P."""
    if summary.empty:
        return pd.DataFrame(columns=list(SCALING_COLUMNS))
    df = summary[summary["strategy"] != BASELINE].copy()
    # what ran it, from each cell's own records (the machine and interpreter that timed it)
    df["cores"] = df["usable_cores"] if "usable_cores" in df else math.nan
    keys = ["workload", "shape", "strategy", "variant", "order", "work", "workers", "engine"]
    if not prediction.empty:
        pred = prediction[[*keys, "model", "bound", "rel_error", "above_bound"]].drop_duplicates(keys)
        df = df.merge(pred, on=keys, how="left")
    for column in SCALING_COLUMNS:
        if column not in df:
            df[column] = math.nan
    # rel_error in prediction.csv is against the median over seeds; here one seed: the cell's own point
    df["rel_error"] = (df["model"] - df["loop_speedup"]) / df["loop_speedup"]
    df = df.sort_values(["workload", "shape", "engine", "strategy", "variant", "workers"])
    return df[list(SCALING_COLUMNS)].reset_index(drop=True)


def _fmt(value: Any, digits: int = 2) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(number) else f"{number:.{digits}f}"


def show(table: pd.DataFrame) -> str:
    """The scaling table as text: one line per cell."""
    lines = [f"{'shape':<30} {'strategy':<34} {'engine':<7} {'P':>3}  {'loop speedup [95% CI]':<22} "
             f"{'model':>6} {'bound':>6}  verdict"]  # fmt: skip
    for row in table.itertuples(index=False):
        interval = f"{_fmt(row.loop_speedup)} [{_fmt(row.loop_speedup_lo)}, {_fmt(row.loop_speedup_hi)}]"
        flags = str(row.verdict) + ("" if row.timed_exact is True or row.timed_exact == 1 else ", timed runs not exact")
        flags += ", contended" if row.contended is True or row.contended == 1 else ""
        flags += ", ABOVE BOUND" if row.above_bound is True or row.above_bound == 1 else ""
        where, what = f"{row.workload}/{row.shape}", f"{row.strategy}/{row.variant}"
        lines.append(f"{where:<30} {what:<34} {row.engine:<7} {int(row.workers):>3}  {interval:<22} "
                     f"{_fmt(row.model):>6} {_fmt(row.bound):>6}  {flags}")  # fmt: skip
    return "\n".join(lines)


def _environment(root: Path) -> dict[str, Any]:
    from tickpar.host.envinfo import environment

    env = environment()
    env["usable_cores"] = usable_cores()
    (root / "environment.json").write_text(json.dumps(env, indent=1, default=str))
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/scaling.yaml", help="the sweep to run (default %(default)s)")
    parser.add_argument("--out-dir", help="where every record and table goes (created; required unless --show)")
    parser.add_argument("--workers", help="comma-separated worker counts to keep (default: all within the cores)")
    parser.add_argument("--jobs", type=int, help="correctness checks at a time (default: usable cores / 4, at least 1)")
    parser.add_argument("--resume", action="store_true",
                        help="keep what --out-dir already holds (records, calibrations, bounds); run the rest")
    parser.add_argument("--model-first", action="store_true",
                        help="calibrate and compute the bounds before timing (default: after it)")
    parser.add_argument("--show", metavar="DIR", help="print the scaling table of an earlier run and stop")
    args = parser.parse_args(argv)
    if args.show:
        path = Path(args.show) / "scaling.csv"
        if not path.exists():
            parser.error(f"--show {args.show}: no scaling.csv there")
        print(show(pd.read_csv(path)))
        return 0
    if not args.out_dir:
        parser.error("--out-dir is required (where the records and tables go)")
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: must be >= 1")
    try:
        wanted = parse_workers(args.workers)
        config = load_config_file(args.config)
        sweep = load_sweep(config, args.config)
    except (ValueError, OSError, SweepError) as exc:
        parser.error(str(exc))
    say = Progress()
    root = Path(args.out_dir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    env = _environment(root)
    cores = usable_cores()
    cells, dropped = select_cells(sweep.timed, cores, wanted)
    say(f"{args.config}: {len(cells)} timed cells on {cores} usable cores ({env.get('cpu_model', '?')}), "
        f"Python {sys.version.split()[0]}, GIL {'on' if env.get('gil_enabled', True) else 'off'}")  # fmt: skip
    for line in dropped:
        say(f"left out: {line}")
    check_cells(sweep, cells, root, args.jobs or max(1, cores // 4), say, args.resume)
    groups: dict[tuple[str, str], list[SweepCell]] = {}
    for cell in cells:
        groups.setdefault((cell.workload, cell.shape), []).append(cell)
    # By default the measured speedups first, then what predicts them: a run cut short keeps its measurements
    # (the tables are rewritten after every shape). Calibration and bounds run alone on the machine too.
    bounds: list[Path] = []

    def model() -> None:
        calibration = calibrate(cells, root, say, args.resume)
        predict_at = sorted({1, 2, 4, 8, 16, 32, 64} | {c.workers for c in cells})
        for (workload, shape), mine in groups.items():
            path = root / "bounds" / workload / f"{shape}.json"
            if not (args.resume and _written(path)):
                shape_bounds(workload, shape, mine, calibration, root, predict_at)
            bounds.append(path)
            say(f"bounds {workload}/{shape}: " + ("ok" if path.exists() else "FAILED (see logs/bounds)"))

    if args.model_first:
        model()
    table = write_tables(sweep, cells, root, bounds)
    for (workload, shape), mine in groups.items():
        if args.resume and all(_written(root / c.timing_path) for c in mine):
            say(f"timed {workload}/{shape}: kept from before")
            continue
        records = time_shape(mine, root, sweep.config.get("timing") or {})
        ok = sum(1 for r in records if r.get("status") == "ok" and r.get("timed_exact"))
        say(f"timed {workload}/{shape}: {ok} of {len(records)} cells ok and exact")
        table = write_tables(sweep, cells, root, bounds)
    if not args.model_first:
        model()
    table = write_tables(sweep, cells, root, bounds)
    print(show(table))
    say(f"tables: {root}/scaling.csv, summary.csv, prediction.csv, model_error.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
