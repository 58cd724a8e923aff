"""pyperf timing of cells: fresh processes, interleaved rounds, every timed run checked, contention measured.

Two roles, each in a module of its own; this module holds the front ends (``tickpar time``, the pipeline's
timing job, the pyperf script's entry point) and re-exports the public names of :mod:`~tickpar.perf.timing.worker`,
:mod:`~tickpar.perf.timing.driver`, :mod:`~tickpar.perf.timing.rules` and :mod:`~tickpar.host.probe`, which
were its own before (callers may keep importing them from here):

* ``python -m tickpar.perf.timing CELL-OPTIONS [--golden F] [--runs-out F] [pyperf options]``
  is a plain pyperf script: ``pyperf.Runner(loops=1)`` and ``bench_time_func``,
  whose function builds the model and runs the strategy once per loop and
  returns the seconds that took (model build and process/rank start-up
  included: what a user waits for).  Each worker also checks every run it
  times: its per-component digests against the golden record (``--golden``),
  and appends one JSON line per run to ``--runs-out``: the verdict, the wall
  time and the loop time (the strategy's own ``loop_s`` statistic when it
  reports one, e.g. a process backend timing the loop in its workers; else the
  wall time of the in-process run).  CELL-OPTIONS are long options only
  (:mod:`tickpar.cellargs`) because pyperf owns ``-p -n -w -o``.
* :func:`measure_cells` is the driver.  It times a list of cells in
  ``rounds`` interleaved rounds (as asv does): round ``r`` runs every cell once,
  as one fresh pyperf worker process with ``warmups`` warm-ups and ``values``
  values, the cells rotated by one place per round, so slow drift of the
  machine hits every cell alike.  Each round's values are added to the cell's
  pyperf file (``--append``: ``python -m pyperf show`` reads it).  Between
  consecutive runs it measures the machine's CPU availability
  (:func:`cpu_availability`: a short spin on each usable core, the fraction of
  the wall time it actually got), so each (cell, round) has a probe just before
  and just after it; a round below ``min_cpu_available`` on either is
  *contended*: its values are flagged in the record (``value_contended``,
  ``n_contended``) and the aggregate leaves them out of speedups.  A contended
  round is *re-timed* at once (after ``retime_wait_s``, with a fresh probe), up to
  ``retimes`` times per cell, before the cell loses those values: one unlucky
  probe (a burst of another process, an orchestrator polling its cluster) must
  not erase a cell's, or a whole shape's, speedup when its baseline is hit.  The
  record says how many rounds were re-timed and why (``n_retimed``,
  ``retime_reasons``); a cell whose rounds, re-times included, were all
  contended is ``contended``.  A round of the sequential baseline whose loop values
  spread more than ``baseline_max_spread`` (max / min - 1) is contended too: the run
  is deterministic, so the spread is the machine's, and the baseline is the
  denominator of every speedup of its shape (a spread the probe does not see happens).  Parallel
  cells are not judged so: their spread may be the strategy's own (Time Warp's
  rollbacks, the threads' interleaving).  A *slow process* is left out too, in any
  cell: a clean round all of whose loop values lie more than ``max_round_shift`` above
  every loop value of the cell's fastest round, contended ones included (:func:`slow_rounds`).
  Interference only adds time, so of two processes whose values do not overlap the
  faster one is the machine's speed (the CPU probe does not see a slow process).  Values
  that overlap, as a strategy's own run-to-run variation does, are
  never left out, and nor are cells with several threads per process
  (:func:`judged_for_slow_processes`: under the GIL a process's thread hand-offs settle into a
  pattern of its own).  After the rounds, a cell with a slow process is timed again, one
  fresh process at a time, within its ``retimes`` budget (:func:`retime_slow_rounds`).
  The record lists them (``slow_rounds``, ``retime_reasons``).  pyperf's own ``load_avg_1min`` of the round is
  kept beside it.  Each pyperf run runs in its own process group under a time
  limit (a hung strategy, its worker processes and MPI ranks are killed
  together); a cell that times out or crashes is not run again.  Every cell
  gets a record: status ``ok``, ``timeout``, ``crash`` or ``skipped`` (its
  correctness run did not finish).  A timed run that is not exact is a value with
  its verdict, whether it finished (``diverged``, ``race``) or stopped with one
  (``causality``, ``deadlock``: its value is the time until it stopped): the record
  is ``ok`` with ``timed_exact`` false, ``timed_verdicts`` counting them and its
  reason naming the first stop, and the aggregate leaves the cell out of speedups;
  only a run that crashes (anything else raised) ends the worker, as ``crash``, its
  reason the worker's own last line.  A timing failure never fails the sweep.

:func:`measure` (``tickpar time``) is :func:`measure_cells` for one cell, with
``processes`` rounds: the pipeline's timing stage (one job per workload shape,
after every correctness job; ``rules/bench.smk``) and a standalone ``tickpar
time`` with the same settings produce the same statistic.

Work calibration (``tickpar.kernel.work``) runs once in the driver (once per
interpreter: a cell of the sweep's ``freethreaded`` interpreter runs its pyperf
script under that ``python``, calibrated by one short process of it, and its
record's ``env`` is that interpreter's), after a first
CPU-availability probe has brought the cores up to speed, and every worker it
starts uses that rate (``--work-rate``; ``tickpar time --work-rate`` takes a
pipeline record's ``work_units_per_us`` to repeat exactly its work): every cell of a timing job does the
same work per event (separate calibrations in each process differ by a few
percent, which biased speedups by as much).  Nothing is calibrated inside a
timed simulation.

# Timing record format history:
# tickpar.timing/1: first version (status, reason, cell, values, warmups, mean_s, stdev_s, median_s,
#   n_values, processes, pyperf_file, pyperf_metadata, wall_s, env, versions, created).
# tickpar.timing/2: interleaved rounds (one fresh process per cell per round): rounds (per round:
#   values, loop_values, verdicts, cpu_available_before/after, load_avg_1min, contended),
#   value_contended, loop_values, loop_source, timed_exact, timed_verdicts, contended,
#   n_contended, cpu_available_min, load_avg_1min_max, loop_mean_s, loop_median_s, golden,
#   work_units_per_us (the driver's one calibration, used by every worker); mean_s, median_s, stdev_s,
#   min_s, max_s and the loop statistics leave contended values out (n_values still counts them all).
# tickpar.timing/3: contended rounds are re-timed: retimes (the budget per cell), n_retimed, retime_reasons
#   (one line per re-time: round, probe, share, threshold); per round: attempt (0: first timing, 1...: re-times)
#   and retimed (a later attempt replaced it). A re-time is one more entry in rounds.
#   Later, same format: python_executable (the interpreter the cell ran under; env is that interpreter's); per
#   round loop_spread (max / min - 1 of its loop values), unstable (a baseline round past baseline_max_spread) and
#   slow (a slow process, left out: contended too); slow_rounds (one line per slow round, why).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tickpar.cellargs import cell_argv
from tickpar.host.atomic import write_json_atomic
from tickpar.host.orchestrator import paused
from tickpar.host.probe import (  # re-exported (module docstring)
    cpu_availability,
)
from tickpar.perf.timing.driver import (  # re-exported (module docstring)
    ONE_THREAD_ENV,
    SKIP_AFTER,
    TIMING_FORMAT,
    TimingJob,
    check_wall_s,
    crash_record,
    measure,
    measure_cells,
    values_for,
    write_fallback,
)
from tickpar.perf.timing.rules import (  # re-exported (module docstring)
    BASELINE_MAX_SPREAD,
    MAX_ROUND_SHIFT,
    MIN_CPU_AVAILABLE,
    RETIME_WAIT_S,
    RETIMES,
    judged_for_slow_processes,
    slow_rounds,
    summarize,
)
from tickpar.perf.timing.worker import (  # re-exported (module docstring)
    bench,
    worker_main,
)

__all__ = [
    "BASELINE_MAX_SPREAD",
    "MAX_ROUND_SHIFT",
    "MIN_CPU_AVAILABLE",
    "ONE_THREAD_ENV",
    "RETIMES",
    "RETIME_WAIT_S",
    "SKIP_AFTER",
    "TIMING_FORMAT",
    "TimingJob",
    "bench",
    "check_wall_s",
    "cpu_availability",
    "judged_for_slow_processes",
    "main_snakemake",
    "measure",
    "measure_cells",
    "slow_rounds",
    "summarize",
    "values_for",
    "write_fallback",
]


# ---------------------------------------------------------------- front ends


def add_cli_options(parser: argparse.ArgumentParser) -> None:
    """``tickpar time``'s own options (the cell options come from :mod:`tickpar.cellargs`)."""
    parser.add_argument("--processes", type=int, default=2, help="fresh worker processes = rounds (default 2)")
    parser.add_argument("--values", type=int, default=3, help="pyperf -n: values per process (default 3)")
    parser.add_argument("--warmups", type=int, default=1, help="pyperf -w: warm-ups per process (default 1)")
    parser.add_argument("--inherit-environ", default="", metavar="VARS", help="comma-separated variables for workers")
    parser.add_argument("--pyperf-arg", action="append", default=[], metavar="ARG", help="extra pyperf option")
    parser.add_argument("--pyperf-out", help="where the pyperf JSON goes (default: beside --out)")
    parser.add_argument("--check", help="correctness record: skip timing when its verdict is crash/timeout/deadlock")
    parser.add_argument("--golden", help="golden record to check every timed run against (default: computed)")
    parser.add_argument(
        "--work-rate", type=float, default=None, metavar="U",
        help="work units per microsecond (default: calibrated once); a pipeline record's work_units_per_us "
        "gives exactly its work per event",
    )  # fmt: skip
    parser.add_argument(
        "--min-cpu-available", type=float, default=MIN_CPU_AVAILABLE, metavar="F",
        help=f"rounds whose CPU-availability probe gives less are flagged contended (default {MIN_CPU_AVAILABLE})",
    )  # fmt: skip
    parser.add_argument(
        "--retimes", type=int, default=RETIMES, metavar="N",
        help=f"re-time a contended round, up to N times per cell, before its values are lost (default {RETIMES})",
    )  # fmt: skip


def run_cli(args: argparse.Namespace, cell: Any) -> int:
    """``tickpar time``: 0 when timed, 1 when the record says it could not be (the record is written anyway)."""
    if not 0.0 <= args.min_cpu_available <= 1.0:
        raise ValueError(f"--min-cpu-available {args.min_cpu_available} is not allowed: a share in [0, 1]")
    if args.retimes < 0:
        raise ValueError(f"--retimes {args.retimes} is not allowed: a count >= 0")
    if args.work_rate is not None and not args.work_rate > 0:
        raise ValueError(f"--work-rate {args.work_rate} is not allowed: units per microsecond > 0")
    with tempfile.TemporaryDirectory(prefix="tickpar-time-") as tmp:
        out = args.out or str(Path(tmp, "timing.json"))
        record = measure(
            cell,
            cell_argv(args),
            out,
            args.pyperf_out,
            processes=args.processes,
            values=args.values,
            warmups=args.warmups,
            timeout=args.timeout,
            inherit_environ=[v for v in args.inherit_environ.split(",") if v],
            extra_args=args.pyperf_arg,
            check=args.check,
            golden=args.golden,
            min_cpu_available=args.min_cpu_available,
            work_rate=args.work_rate,
            retimes=args.retimes,
            log=sys.stdout,
        )
    print(_summary_line(cell, record))
    return 0 if record["status"] == "ok" else 1


def _summary_line(cell: Any, record: dict[str, Any]) -> str:
    line = f"{cell.strategy} on {cell.spec.workload} (workers={cell.workers}, seed={cell.spec.seed}): "
    if record["status"] != "ok":
        return line + f"{record['status']}: {record['reason']}"
    stdev = record["stdev_s"] or 0.0
    line += (
        f"median {record['median_s'] * 1e3:.2f} ms, mean {record['mean_s'] * 1e3:.2f} ms +- {stdev * 1e3:.2f} ms"
        f" over {record['n_values']} values; loop median {record['loop_median_s'] * 1e3:.2f} ms"
        f" ({record['loop_source']}); timed runs {'exact' if record['timed_exact'] else _not_exact(record)}"
        f"; CPU available >= {record['cpu_available_min']:.2f}"
    )
    if record["n_retimed"]:
        line += f"; {record['n_retimed']} contended round(s) re-timed"
    if record["n_contended"]:
        line += f" (CONTENDED: {record['n_contended']} of {record['n_values']} values, left out of speedups)"
    return line


def _not_exact(record: dict[str, Any]) -> str:
    """``NOT exact (causality x6)``: the timed runs' verdicts other than exact (the record's ``timed_verdicts``)."""
    counts = {k: n for k, n in (record.get("timed_verdicts") or {}).items() if k != "exact"}
    return "NOT exact" + (" (" + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())) + ")" if counts else "")


def _measure_logged(jobs: Sequence[TimingJob], settings: dict[str, Any], log: Any) -> list[dict[str, Any]]:
    return measure_cells(
        jobs,
        rounds=settings["processes"],
        values=settings["values"],
        warmups=settings["warmups"],
        timeout=settings["timeout_s"],
        inherit_environ=settings["inherit_environ"],
        extra_args=settings["extra_args"],
        min_cpu_available=settings["min_cpu_available"],
        retimes=settings.get("retimes", RETIMES),
        retime_wait_s=settings.get("retime_wait_s", RETIME_WAIT_S),
        long_cell_s=settings.get("long_cell_s", 0.0),
        long_values=settings.get("long_values", 2),
        log=log,
        baseline_max_spread=settings.get("baseline_max_spread", BASELINE_MAX_SPREAD),
        max_round_shift=settings.get("max_round_shift", MAX_ROUND_SHIFT),
    )


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/timing.py``: time one workload shape's cells in interleaved rounds."""
    settings = smk.params.timing
    jobs = [TimingJob.from_entry(entry) for entry in smk.params.cells]
    with open(smk.log[0], "w") as log:
        stopped = False
        try:
            # Snakemake's main process keeps a core busy even with nothing to schedule: stop it while the
            # clock runs (tickpar/host/orchestrator.py). The watchdog continues it whatever happens to this job.
            with paused(os.getppid(), settings.get("pause_orchestrator", True)) as stopped:
                log.write(f"tickpar: orchestrator (pid {os.getppid()}) {'paused' if stopped else 'not paused'}\n")
                log.flush()
                records = _measure_logged(jobs, settings, log)
        except Exception as exc:  # every cell still gets a record, and the sweep goes on to the report
            log.write(f"tickpar: timing job failed: {type(exc).__name__}: {exc}\n")
            records = [crash_record(job, f"the timing job failed: {type(exc).__name__}: {exc}") for job in jobs]
        index = {
            "format": TIMING_FORMAT,
            "orchestrator_paused": stopped,
            "cells": [
                {
                    "timing_path": str(job.out),
                    "status": rec["status"],
                    "median_s": rec.get("median_s"),
                    "timed_exact": rec.get("timed_exact"),
                    "contended": rec.get("contended"),
                    "n_retimed": rec.get("n_retimed", 0),
                }
                for job, rec in zip(jobs, records, strict=True)
            ],
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_json_atomic(smk.output[0], index)
        log.write(f"tickpar: timed {len(jobs)} cells in {settings['processes']} interleaved rounds\n")


def main(argv: Sequence[str] | None = None) -> None:
    """The pyperf script (``python -m tickpar.perf.timing``)."""
    if argv is not None:
        sys.argv[1:] = list(argv)
    worker_main()

