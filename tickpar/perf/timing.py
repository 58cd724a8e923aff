"""pyperf timing of cells: fresh processes, interleaved rounds, every timed run checked, contention measured.

Two roles, one module:

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
  denominator of every speedup of its shape.  On the 2-core VM 7% of rounds spread
  more than 20% while the probe saw nothing; one baseline's 6.0-7.7 ms (a
  reference of 4.9-5.1 ms) made a 1-worker run look 1.28x faster.  Parallel
  cells are not judged so: their spread may be the strategy's own (Time Warp's
  rollbacks, the threads' interleaving).  A *slow process* is left out too, in any
  cell: a clean round all of whose loop values lie more than ``max_round_shift`` above
  every loop value of the cell's fastest round, contended ones included (:func:`slow_rounds`).
  Interference only adds time, so of two processes whose values do not overlap the
  faster one is the machine's speed.  On the 2-core VM a quarter to a half of fresh
  processes ran the same sequential loop 25-70% slower on every value, whatever the
  core, and with the address layout, hash seed and environment fixed; the CPU probe saw
  nothing.  Values that overlap, as a strategy's own run-to-run variation does, are
  never left out, and nor are cells with several threads per process
  (:func:`judged_for_slow_processes`: under the GIL a process's thread hand-offs settle into a
  pattern of its own).  After the rounds, a cell with a slow process is timed again, one
  fresh process at a time, within its ``retimes`` budget (:func:`_retime_slow_rounds`).
  The record lists them (``slow_rounds``, ``retime_reasons``).  pyperf's own ``load_avg_1min`` of the round is
  kept beside it.  Each pyperf run runs in its own process group under a time
  limit (a hung strategy, its worker processes and MPI ranks are killed
  together); a cell that times out or crashes is not run again.  Every cell
  gets a record: status ``ok``, ``timeout``, ``crash`` or ``skipped`` (its
  correctness run did not finish).  A timing failure never fails the sweep.

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
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tickpar.cellargs import add_cell_options, cell_argv, cell_from_args
from tickpar.host.affinity import PIN_ENV
from tickpar.host.orchestrator import paused
from tickpar.host.procgroup import kill_group
from tickpar.plugins import BASELINE
from tickpar.verify.oracle import FAILED_RUN

__all__ = [
    "BASELINE_MAX_SPREAD",
    "MAX_ROUND_SHIFT",
    "MIN_CPU_AVAILABLE",
    "ONE_THREAD_ENV",
    "RETIMES",
    "RETIME_WAIT_S",
    "TIMING_FORMAT",
    "TimingJob",
    "bench",
    "cpu_availability",
    "judged_for_slow_processes",
    "main_snakemake",
    "measure",
    "measure_cells",
    "slow_rounds",
    "summarize",
]

TIMING_FORMAT = "tickpar.timing/3"
#: Verdicts of the correctness job after which timing is pointless (the run does not finish).
SKIP_AFTER = FAILED_RUN
#: A round is contended when the CPU-availability probe before or after it gives less than this.
MIN_CPU_AVAILABLE = 0.9
#: A contended round is timed again, up to this many times per cell, before its values are lost.
RETIMES = 2
#: Seconds to wait before re-timing a contended round (a short burst of other load has passed).
RETIME_WAIT_S = 1.0
#: A sequential round whose loop values spread more than this (max / min - 1) is contended (module docstring).
BASELINE_MAX_SPREAD = 0.2
#: A round all of whose loop values exceed every loop value of the cell's fastest round by more than this share
#: was a slow process: it is left out (module docstring, :func:`slow_rounds`).
MAX_ROUND_SHIFT = 0.15
#: Thread-pool sizes forced to 1 in every timed process (the pyperf parent and, through ``--inherit-environ``,
#: its workers), whatever the caller's environment says.  tickpar's own default (``tickpar/__init__.py``) only
#: fills in an unset variable, and Snakemake sets ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` to a job's
#: ``threads`` (2 for a timing job): measured on a 2-core VM, a worker started with ``OPENBLAS_NUM_THREADS=2``
#: took 7.7-12 ms for the first 2 of 3 values of a native phold conservative cell at work_us 10 and
#: 8.3-8.9 ms for all of tick-barrier's, against 4.5-5.1 ms with 1 (numpy's BLAS thread spins beside the
#: cell's own threads).  No timed cell uses a threaded BLAS; the cell's own threads are what is measured.
ONE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
#: Spin time per core of one CPU-availability probe (seconds); at most _PROBE_TOTAL_S over all cores.
_PROBE_PER_CORE_S = 0.05
_PROBE_TOTAL_S = 0.8


# ---------------------------------------------------------------- the pyperf script (worker side)


@dataclass
class _TimedCell:
    """What a pyperf worker times, and where it reports each run's check."""

    cell: Any
    golden: Any = None  # OracleRecord
    runs_out: str | None = None
    warmups: int = 0
    calls: int = 0
    #: A native cell's spin-loop iterations per microsecond (the driver's one calibration; 0: the engine's own).
    spin: float = 0.0

    def note(self, result: Any, wall_s: float) -> None:
        """Check one run against the golden record; append its line to ``runs_out``."""
        from tickpar.verify.oracle import compare

        verdict = compare(self.golden, result.record).kind if self.golden is not None else None
        loop = result.stats.get("loop_s") if isinstance(result.stats, dict) else None
        if isinstance(loop, (int, float)) and not isinstance(loop, bool) and loop > 0:
            loop_s, source = float(loop), "stat"
        else:
            loop_s, source = wall_s, "run"
        line = {
            "call": self.calls,
            "warmup": self.calls < self.warmups,
            "wall_s": wall_s,
            "loop_s": loop_s,
            "loop_source": source,
            "verdict": verdict,
            "digest": result.record.digest,
        }
        self.calls += 1
        if self.runs_out:
            with open(self.runs_out, "a") as f:
                f.write(json.dumps(line) + "\n")


@dataclass
class _NativeResult:
    """A native run as :func:`bench` reads a strategy's result."""

    record: Any
    stats: dict[str, Any]


def bench(loops: int, timed: _TimedCell) -> float:
    """pyperf's time function: ``loops`` whole simulations of the cell, the seconds they took."""
    from tickpar.plugins.registry import get_registry

    cell = timed.cell
    strategy_cls = get_registry().strategy(cell.strategy)
    total = 0.0
    for _ in range(loops):
        if cell.engine == "native":  # the C++ replay of the DAG recorded before the first value; loop_s: its loop
            from tickpar import native

            started = time.perf_counter()
            record, stats = native.run_native(cell.spec, cell.strategy, cell.workers, dict(cell.options), timed.spin)
            wall = time.perf_counter() - started
            result: Any = _NativeResult(record, stats)
        else:
            strategy = strategy_cls()
            started = time.perf_counter()
            result = strategy.run(cell.spec, cell.workers, dict(cell.options))
            wall = time.perf_counter() - started
        total += wall
        failure = result.record.failure
        if failure is not None:  # the worker dies; the driver records a crash with this line
            raise RuntimeError(f"run did not finish: {failure.get('kind')}: {failure.get('message')}")
        timed.note(result, wall)  # outside the timed interval
    return total


def _worker_options(parser: argparse.ArgumentParser) -> None:
    add_cell_options(parser, short=False)
    group = parser.add_argument_group("tickpar check")
    group.add_argument("--golden", help="golden record: every timed run's digests are compared with it")
    group.add_argument("--runs-out", help="append one JSON line per run (verdict, wall and loop time) to FILE")
    group.add_argument("--work-rate", type=float, help="work units per microsecond (default: calibrated here)")


def _worker_argv(args: argparse.Namespace) -> list[str]:
    out = cell_argv(args)
    if args.golden:
        out += ["--golden", args.golden]
    if args.runs_out:
        out += ["--runs-out", args.runs_out]
    if args.work_rate:
        out += ["--work-rate", repr(args.work_rate)]
    return out


def _load_golden(path: str) -> Any:
    """The golden record's digests, without its traces: the worker keeps nothing big in memory, which would
    slow its garbage collections and the fork of a process backend's workers, and so the timed runs."""
    from tickpar.verify.oracle import OracleRecord

    oracle = json.loads(Path(path).read_text())["oracle"]
    oracle.pop("traces", None)
    return OracleRecord.from_dict(oracle)


def _native_golden(path: str, cell: Any) -> Any:
    """The golden record with the digests an untraced native run reports (:func:`tickpar.native.untraced_golden`)."""
    from tickpar.native.engine import untraced_golden
    from tickpar.verify.oracle import OracleRecord

    return untraced_golden(OracleRecord.from_dict(json.loads(Path(path).read_text())["oracle"]), cell.spec)


def _script_main() -> None:
    import pyperf

    runner = pyperf.Runner(
        loops=1,
        program_args=("-m", "tickpar.perf.timing"),
        add_cmdline_args=lambda cmd, args: cmd.extend(_worker_argv(args)),
    )
    _worker_options(runner.argparser)
    args = runner.parse_args()
    runner.metadata["tickpar_strategy"] = args.strategy
    runner.metadata["tickpar_workers"] = args.workers
    runner.metadata["tickpar_work"] = args.work
    name = f"{args.workload}.{args.strategy}.w{args.workers}.s{args.seed}"
    if not args.worker:
        # The main process only spawns workers and collects their values: it needs no model and no
        # plugins (saves their import per cell); each worker resolves and validates the cell itself.
        runner.bench_time_func(name, bench, None)
        return
    from tickpar.kernel.params import ParamError
    from tickpar.kernel.work import calibrate, set_rate
    from tickpar.plugins.registry import PluginError

    try:
        cell = cell_from_args(args)
        if cell.engine == "native":
            golden = _native_golden(args.golden, cell) if args.golden else None
        else:
            golden = _load_golden(args.golden) if args.golden else None
    except (ParamError, PluginError, OSError, ValueError, KeyError) as exc:
        print(f"tickpar.perf.timing: error: {exc}", file=sys.stderr)
        sys.exit(2)
    runner.metadata["tickpar_cell"] = json.dumps(cell.to_dict(), sort_keys=True, separators=(",", ":"))
    if cell.engine == "native":
        # The DAG is recorded (and the partition planned) here, outside every value; the replay spins work_us
        # at the driver's one calibration of the spin loop (--work-rate), as Python cells share one work rate.
        from tickpar import native
        from tickpar.native.engine import recorded

        recorded(cell.spec)
        runner.metadata["tickpar_engine"] = "native"
        timed = _TimedCell(cell, golden, args.runs_out, args.warmups, spin=float(args.work_rate or 0.0))
        if args.work_rate:
            runner.metadata["tickpar_spin_per_us"] = args.work_rate
        native.require(cell.strategy, cell.options)
        runner.bench_time_func(name, bench, timed)
        return
    if args.work_rate and cell.spec.work != "none":
        set_rate(cell.spec.work, args.work_rate)  # the driver's one calibration: the same work in every cell
        runner.metadata["tickpar_work_rate"] = args.work_rate
    calibrate(cell.spec.work)  # once per worker, outside every timed value (a no-op after set_rate)
    runner.bench_time_func(name, bench, _TimedCell(cell, golden, args.runs_out, args.warmups))


# ---------------------------------------------------------------- contention


def cpu_availability(per_core_s: float = _PROBE_PER_CORE_S, cores: Sequence[int] | None = None) -> dict[str, Any]:
    """The share of wall time a busy loop gets on each usable core (1.0: nobody else wants that core).

    The calling thread is pinned to each core in turn and spins for ``per_core_s``
    (shortened so that all cores together take at most 0.8 s); the CPU time it
    received over the wall time it spun is that core's availability.  Where the
    platform cannot pin threads, the probe spins unpinned once.  Returns
    ``{"min": ..., "per_core": {core: share}}``.
    """
    pinnable = hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")
    original = os.sched_getaffinity(0) if pinnable else None
    targets = list(cores) if cores is not None else (sorted(original) if original else [-1])
    spin = min(per_core_s, _PROBE_TOTAL_S / max(1, len(targets)))
    shares: dict[int, float] = {}
    try:
        for core in targets:
            if pinnable and core >= 0:
                os.sched_setaffinity(0, {core})
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            end = wall0 + spin
            while time.perf_counter() < end:
                pass
            wall = time.perf_counter() - wall0
            shares[core] = min(1.0, (time.thread_time() - cpu0) / wall) if wall > 0 else 1.0
    finally:
        if pinnable and original is not None:
            os.sched_setaffinity(0, original)
    return {"min": min(shares.values()), "per_core": shares}


# ---------------------------------------------------------------- the driver


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """Mean, stdev (None below 2 values), median, min and max of pyperf values (seconds)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n_values": 0, "mean_s": None, "stdev_s": None, "median_s": None, "min_s": None, "max_s": None}
    return {
        "n_values": len(vals),
        "mean_s": statistics.fmean(vals),
        "stdev_s": statistics.stdev(vals) if len(vals) >= 2 else None,
        "median_s": statistics.median(vals),
        "min_s": min(vals),
        "max_s": max(vals),
    }


def _tail(text: str, lines: int = 3) -> str:
    rows = [r.strip() for r in text.strip().splitlines() if r.strip()]
    return " | ".join(rows[-lines:])


def _check_record(path: str | Path | None) -> dict[str, Any] | None:
    """A correctness record as a dict, or None where there is none to read (no path, unreadable, not JSON)."""
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_wall_s(path: str | Path | None) -> float | None:
    """The wall time of a correctness record's run (``wall_s``), or None where there is none to read."""
    data = _check_record(path)
    wall = data.get("wall_s") if data is not None else None
    return float(wall) if isinstance(wall, int | float) and wall >= 0 else None


def values_for(job: TimingJob, values: int, long_cell_s: float, long_values: int) -> int:
    """Timed values per round for ``job``: ``long_values`` where its correctness run took ``long_cell_s`` or more.

    A value is one whole simulation: the longer it runs, the less it varies (a 4 ms scheduler tick
    or a cache refill is a smaller share of it), so a long cell needs fewer of them for the same
    interval, and its values are most of a timing job's clock. ``long_cell_s`` <= 0: every cell gets
    ``values``. Without a readable correctness record the cell gets ``values``.
    """
    if long_cell_s <= 0 or long_values >= values:
        return values
    wall = check_wall_s(job.check)
    return long_values if wall is not None and wall >= long_cell_s else values


def _unfinished(path: str | Path | None) -> str | None:
    """The verdict of a correctness record whose run did not finish (crash, timeout, deadlock, or a
    raised causality error: ``failure`` is set), else None: timing such a cell would only repeat it."""
    data = _check_record(path)
    if data is None:
        return None
    verdict = data.get("verdict") if isinstance(data.get("verdict"), dict) else {}
    kind = verdict.get("kind")
    if kind in SKIP_AFTER or data.get("failure") is not None:
        return kind or "crash"
    return None


@dataclass
class TimingJob:
    """One cell to time: the cell, its long options, where its record and pyperf file go, its checks."""

    cell: Any
    cell_args: list[str]
    out: Path
    pyperf_out: Path | None = None
    check: str | None = None
    golden: str | None = None
    record: dict[str, Any] = field(default_factory=dict)
    done: bool = False
    #: The interpreter the cell runs under (``python -m tickpar.perf.timing``); None: this one.
    python: str | None = None

    @classmethod
    def from_entry(cls, entry: dict[str, Any], *, golden: bool = True) -> TimingJob:
        """The job of a sweep cell (:meth:`tickpar.pipeline.sweep.SweepCell.timing_entry`); ``golden=False``: no
        correctness or golden record (the driver computes the golden record itself)."""
        from tickpar.runner import resolve_cell

        cell = resolve_cell(
            entry["workload"], entry["params"], entry["strategy"], entry["options"], entry["workers"],
            entry["seed"], entry["order"], entry["work"], engine=entry.get("engine", "python"),
        )  # fmt: skip
        checks = (entry["check_path"], entry["golden_path"]) if golden else (None, None)
        job = cls(cell, list(entry["cli_args"]), Path(entry["timing_path"]), Path(entry["pyperf_path"]), *checks)
        job.python = entry.get("python") or None
        return job

    @property
    def executable(self) -> str:
        """The ``python`` that runs this cell's pyperf workers."""
        return self.python or sys.executable

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.pyperf_out is None:
            self.pyperf_out = self.out.with_name(self.out.name.removesuffix(".json") + ".pyperf.json")
        self.pyperf_out = Path(self.pyperf_out)


def _new_record(job: TimingJob, rounds: int, values: int, warmups: int) -> dict[str, Any]:
    cell = job.cell
    return {
        "format": TIMING_FORMAT,
        "status": "ok",
        "reason": "",
        "cell": cell.to_dict(),
        "strategy": cell.strategy,
        "workers": cell.workers,
        "processes": rounds,
        "values_per_process": values,
        "warmups_per_process": warmups,
        "golden": job.golden or "computed by the timing driver",
        "rounds": [],
        "values": [],
        "loop_values": [],
        "value_contended": [],
        "warmups": [],
        "retimes": 0,
        "n_retimed": 0,
        "retime_reasons": [],
        **summarize([]),
        "pyperf_file": None,
        "pyperf_metadata": {},
        "work_units_per_us": None,
        "worker_env": dict(ONE_THREAD_ENV),
        "python_executable": job.executable,
    }


def _compute_golden(job: TimingJob, tmp: Path, index: int) -> str:
    """A golden record for ``job`` computed here (its sequential run, no work): for a standalone ``tickpar time``."""
    from tickpar.runner import execute, golden_cell, make_record, write_json_atomic

    cell = golden_cell(job.cell)
    # A native cell's timed runs are checked against the golden traces (folded as the engine folds them).
    cell = replace(cell, spec=replace(cell.spec, work="none", trace=job.cell.engine == "native"))
    outcome = execute(cell)
    if outcome.record.failure is not None:
        raise RuntimeError(f"golden sequential run failed: {outcome.record.failure.get('message')}")
    path = tmp / f"cell{index}.golden.json"
    record = make_record(cell, outcome)
    if cell.spec.trace:
        record["oracle"] = outcome.record.to_dict(with_traces=True)
    write_json_atomic(path, record)
    return str(path)


def _work_rate(mode: str, python: str | None = None) -> float:
    """The calibration of ``mode`` (once per timing job and interpreter): every worker it starts uses it.

    Under this interpreter it is this process's own; under another one (a free-threaded ``python``,
    whose loop runs at its own speed) one short process of that interpreter calibrates it.
    """
    if python is None or python == sys.executable:
        from tickpar.kernel.work import calibrate

        return calibrate(mode)
    code = f"from tickpar.kernel.work import calibrate; print(repr(calibrate({mode!r})))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return float(out.stdout.strip())


_ENV_OF: dict[str, dict[str, Any]] = {}


def _environment_of(python: str | None) -> dict[str, Any]:
    """``{"env": ..., "versions": ...}`` of the interpreter that ran the cell (asked once per interpreter)."""
    from tickpar.host.envinfo import environment, versions

    if python is None or python == sys.executable:
        return {"env": environment(), "versions": versions()}
    if python not in _ENV_OF:
        try:
            out = subprocess.run(
                [python, "-m", "tickpar.host.envinfo"], capture_output=True, text=True, timeout=60, check=True
            )
            _ENV_OF[python] = json.loads(out.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            return {"env": {"python_executable": python, "error": str(exc)}, "versions": {}}
    return _ENV_OF[python]


def _read_runs(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _time_round(
    job: TimingJob,
    index: int,
    round_no: int,
    tmp: Path,
    *,
    values: int,
    warmups: int,
    timeout: float | None,
    inherit: Sequence[str],
    extra_args: Sequence[str],
    min_cpu_available: float,
    log: Any,
    before: dict[str, Any] | None = None,
    rate: float = 0.0,
    attempt: int = 0,
    baseline_max_spread: float = BASELINE_MAX_SPREAD,
) -> dict[str, Any]:
    """One fresh pyperf worker process for ``job``: its values join the job's record.

    ``before`` is a probe taken just before (the previous run's ``after``: nothing ran in between);
    returns the probe taken just after.  ``attempt`` > 0: a re-time of a contended round."""
    import pyperf

    record = job.record
    appended = tmp / f"cell{index}.pyperf.json"
    runs_out = tmp / f"cell{index}.r{round_no}.a{attempt}.runs.jsonl"
    golden = job.golden or _compute_golden(job, tmp, index)
    job.golden = golden
    record["work_units_per_us"] = rate
    cmd = [
        job.executable, "-m", "tickpar.perf.timing", *job.cell_args, "--golden", golden, "--runs-out", str(runs_out),
        *(["--work-rate", repr(rate)] if rate else []),
        "--processes", "1", "--values", str(values), "--warmups", str(warmups),
        "--loops", "1", "--append", str(appended), *extra_args,
    ]  # fmt: skip
    if inherit:
        cmd.append("--inherit-environ=" + ",".join(inherit))
    before = before or cpu_availability()
    env = {**os.environ, **ONE_THREAD_ENV}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        output, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        output, _ = proc.communicate()
        timed_out = True
    after = cpu_availability()
    text = output.decode(errors="replace")
    if log is not None:
        again = f" (re-time {attempt})" if attempt else ""
        log.write(f"--- {job.out} round {round_no}{again}\n{text}")
    if timed_out:
        job.done = True
        record.update(status="timeout", reason=f"pyperf run exceeded its {timeout:g} s limit (round {round_no})")
        return after
    if proc.returncode != 0 or not appended.exists():
        job.done = True
        record.update(status="crash", reason=f"pyperf exited with status {proc.returncode}: {_tail(text)}")
        return after
    bench_ = pyperf.BenchmarkSuite.load(str(appended)).get_benchmarks()[0]
    run = bench_.get_runs()[-1]
    vals = [float(v) for v in run.values]
    lines = [line for line in _read_runs(runs_out) if not line["warmup"]]
    if len(lines) != len(vals):
        job.done = True
        record.update(status="crash", reason=f"round {round_no}: {len(vals)} values but {len(lines)} checked runs")
        return after
    load = run.get_metadata().get("load_avg_1min")
    loops = [float(line["loop_s"]) for line in lines]
    spread = max(loops) / min(loops) - 1.0 if len(loops) >= 2 and min(loops) > 0 else 0.0
    unstable = job.cell.strategy == BASELINE and baseline_max_spread > 0 and spread > baseline_max_spread
    contended = min(before["min"], after["min"]) < min_cpu_available or unstable
    record["rounds"].append(
        {
            "round": round_no,
            "attempt": attempt,
            "retimed": False,
            "values": vals,
            "loop_values": loops,
            "loop_spread": spread,
            "unstable": unstable,
            "verdicts": [line["verdict"] for line in lines],
            "loop_source": lines[0]["loop_source"] if lines else None,
            "cpu_available_before": before["min"],
            "cpu_available_after": after["min"],
            "load_avg_1min": load,
            "contended": contended,
        }
    )
    record["warmups"] += [w for _, w in (run.warmups or ())]
    return after


def judged_for_slow_processes(cell: Any) -> bool:
    """Whether the slow-process rule (:func:`slow_rounds`) applies to ``cell``: where each process runs one
    thread of simulation (one worker, or Python LPs in processes or MPI ranks), so that its speed is the
    machine's.  Threads are not judged: under the GIL two threads' hand-offs settle into a pattern per
    process, which is the strategy's own behaviour (on the 2-core VM, phold ``wide.work_us10``'s thread
    cells ran a whole process at 8.5-15 ms or at 21-27 ms, every CPU probe 1.0), and the rule would keep
    only the lucky processes."""
    if int(cell.workers) <= 1:
        return True
    return cell.engine == "python" and str(dict(cell.options).get("backend")) in ("processes", "mpi")


def _fastest_round(rounds: Sequence[dict[str, Any]]) -> tuple[int, list[float]] | None:
    """The round with the least mean loop value, contended ones included (contention only adds time), slow
    processes already found left out; ``None`` when no round has values."""
    timed = [(i, r["loop_values"]) for i, r in enumerate(rounds) if r["loop_values"] and not r.get("slow")]
    return min(timed, key=lambda item: statistics.fmean(item[1])) if timed else None


def slow_rounds(rounds: Sequence[dict[str, Any]], max_shift: float = MAX_ROUND_SHIFT) -> list[int]:
    """Indices of the uncontended rounds that were slow processes: every loop value above every loop value of
    the fastest round (the least mean) by more than ``max_shift`` (0: none).

    The fastest round may be a contended one: contention only adds time, so a contended round that still
    ran faster than every value of a clean one shows that the clean one's process was slow.  On the 2-core
    VM a multicore baseline's contended round ran 5.2-5.5 ms and both clean rounds 7.4-7.8 ms; taking only
    clean rounds as the reference, the 7.6 ms baseline made a 1-worker run look 1.56x faster."""
    fastest = _fastest_round(rounds)
    if max_shift <= 0 or fastest is None:
        return []
    ceiling = max(fastest[1]) * (1.0 + max_shift)
    return [
        i for i, r in enumerate(rounds)
        if i != fastest[0] and not r["contended"] and r["loop_values"] and min(r["loop_values"]) > ceiling
    ]  # fmt: skip


def _leave_out_slow_rounds(record: dict[str, Any], max_shift: float) -> list[int]:
    """Mark the slow processes :func:`slow_rounds` finds (contended, ``slow``) and say why in ``slow_rounds``.

    Returns the rounds newly marked; the ones found before (and re-timed) keep their lines."""
    rounds = record["rounds"]
    slow = slow_rounds(rounds, max_shift)
    found = _fastest_round(rounds)
    fastest = found[1] if found is not None else []
    record.setdefault("slow_rounds", [])
    for i in slow:
        r = rounds[i]
        r["contended"] = r["slow"] = True
        record["slow_rounds"].append(
            f"round {r['round']}" + (f" (re-time {r['attempt']})" if r.get("attempt") else "")
            + f": loop {min(r['loop_values']) * 1e3:.3g}-{max(r['loop_values']) * 1e3:.3g} ms, every value more than"
            f" {max_shift:.0%} above the fastest round's {min(fastest) * 1e3:.3g}-{max(fastest) * 1e3:.3g} ms"
            " (a slow process)"
        )
    return slow


def _finish(job: TimingJob, tmp: Path, index: int, started: float, max_round_shift: float = MAX_ROUND_SHIFT,
            ) -> dict[str, Any]:  # fmt: skip
    """Fold the rounds into the record's summary fields; move the pyperf file; write the record."""
    import pyperf

    from tickpar.runner import write_json_atomic

    record = job.record
    rounds = record["rounds"]
    _leave_out_slow_rounds(record, max_round_shift if judged_for_slow_processes(job.cell) else 0.0)
    for r in rounds:
        record["values"] += r["values"]
        record["loop_values"] += r["loop_values"]
        record["value_contended"] += [r["contended"]] * len(r["values"])
    verdicts = [v for r in rounds for v in r["verdicts"]]
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[str(v)] = counts.get(str(v), 0) + 1
    record["timed_verdicts"] = counts
    record["timed_exact"] = all(v == "exact" for v in verdicts) if verdicts else None
    record["loop_source"] = next((r["loop_source"] for r in rounds if r["loop_source"]), None)
    # Contended: no value was taken without contention (none can enter a speedup); n_contended: values left out.
    record["contended"] = bool(rounds) and all(r["contended"] for r in rounds)
    record["n_contended"] = sum(record["value_contended"])
    avail = [x for r in rounds for x in (r["cpu_available_before"], r["cpu_available_after"])]
    record["cpu_available_min"] = min(avail) if avail else None
    loads = [r["load_avg_1min"] for r in rounds if isinstance(r["load_avg_1min"], (int, float))]
    record["load_avg_1min_max"] = max(loads) if loads else None
    # The statistics leave contended values out, as speedups do (all values when every one was contended).
    keep = [i for i, flag in enumerate(record["value_contended"]) if not flag] or list(range(len(record["values"])))
    record.update(summarize([record["values"][i] for i in keep]), n_values=len(record["values"]))
    loop = summarize([record["loop_values"][i] for i in keep])
    record["loop_mean_s"], record["loop_median_s"] = loop["mean_s"], loop["median_s"]
    appended = tmp / f"cell{index}.pyperf.json"
    if rounds and appended.exists():
        bench_ = pyperf.BenchmarkSuite.load(str(appended)).get_benchmarks()[0]
        record["benchmark"] = bench_.get_name()
        record["pyperf_metadata"] = {
            k: v for k, v in bench_.get_metadata().items() if isinstance(v, (str, int, float, bool))
        }
        job.pyperf_out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(appended, job.pyperf_out)
        record["pyperf_file"] = job.pyperf_out.name
    if record["status"] == "ok" and record["timed_exact"] is False:
        record["reason"] = "timed runs not exact: " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items()))
    record["wall_s"] = time.perf_counter() - started
    where = _environment_of(job.python)
    record["env"] = where["env"]
    record["versions"] = where["versions"]
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json_atomic(job.out, record)
    return record


def measure_cells(
    jobs: Sequence[TimingJob],
    *,
    rounds: int = 2,
    values: int = 3,
    warmups: int = 1,
    timeout: float | None = 300.0,
    inherit_environ: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    min_cpu_available: float = MIN_CPU_AVAILABLE,
    work_rate: float | None = None,
    retimes: int = RETIMES,
    retime_wait_s: float = RETIME_WAIT_S,
    long_cell_s: float = 0.0,
    long_values: int = 2,
    log: Any = None,
    baseline_max_spread: float = BASELINE_MAX_SPREAD,
    max_round_shift: float = MAX_ROUND_SHIFT,
) -> list[dict[str, Any]]:
    """Time ``jobs`` in ``rounds`` interleaved rounds; write every job's record (never raises on a cell's failure).

    ``timeout`` limits one pyperf run (one cell, one round).  A job whose
    ``check`` record says its run did not finish is not timed (status ``skipped``).
    ``work_rate``: work units per microsecond for every worker (default: one
    calibration here, after a CPU-availability probe has brought the cores up to speed).
    A contended round is timed again at once, after ``retime_wait_s`` seconds and a fresh
    probe, up to ``retimes`` times per cell (:func:`_retime_while_contended`).
    A cell whose correctness run took ``long_cell_s`` or more gets ``long_values`` values per
    round instead of ``values`` (:func:`values_for`; its record's ``values_per_process``).
    ``baseline_max_spread``: a sequential round whose loop values spread more than this is
    contended (module docstring; 0: never).  ``max_round_shift``: a round every value of which is
    more than this above the fastest round's is a slow process, left out (:func:`slow_rounds`; 0: never).
    """
    if baseline_max_spread < 0:
        raise ValueError(f"baseline_max_spread {baseline_max_spread}: must be >= 0 (0: never judged)")
    if max_round_shift < 0:
        raise ValueError(f"max_round_shift {max_round_shift}: must be >= 0 (0: never judged)")
    if rounds < 1 or values < 1 or warmups < 0 or long_values < 1:
        raise ValueError("--processes, --values and the long cells' values must be >= 1, --warmups >= 0")
    if retimes < 0 or retime_wait_s < 0:
        raise ValueError("--retimes and the wait before a re-time must be >= 0")
    # pyperf gives its workers a clean environment; the thread-pinning switch and the one-thread pools
    # (ONE_THREAD_ENV, set for every worker by _time_round) must reach them too
    inherit = [name for name in (*inherit_environ, PIN_ENV) if name in os.environ]
    inherit = list(dict.fromkeys([*inherit, *ONE_THREAD_ENV]))
    started = time.perf_counter()
    per_job = {id(job): values_for(job, values, long_cell_s, long_values) for job in jobs}
    for job in jobs:
        job.record = _new_record(job, rounds, per_job[id(job)], warmups)
        job.record["retimes"] = retimes
        verdict = _unfinished(job.check)
        if verdict is not None:
            job.done = True
            job.record.update(status="skipped", reason=f"not timed: the correctness run did not finish ({verdict})")
    parent = Path(jobs[0].out).parent if jobs else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tickpar-timing-", dir=parent) as tmp_name:
        tmp = Path(tmp_name)
        indexed = list(enumerate(jobs))
        probe: dict[str, Any] | None = cpu_availability()  # the last probe, while nothing has run since
        # One calibration per (interpreter, work mode): a free-threaded build runs the gil-hold loop at its own
        # speed, so each interpreter's cells do work_us of its own time per event.
        modes = {(job.python, job.cell.spec.work) for job in jobs if job.cell.engine == "python"}
        rates = {key: 0.0 if key[1] == "none" else work_rate or _work_rate(key[1], key[0]) for key in modes}
        if any(job.cell.engine == "native" for job in jobs):  # native cells: one calibration of the C++ spin loop
            from tickpar.native.engine import spin_rate

            rates[("native", "spin")] = spin_rate()
        def settings_of(job: TimingJob) -> dict[str, Any]:
            return dict(
                values=per_job[id(job)], warmups=warmups, timeout=timeout, inherit=inherit,
                extra_args=extra_args, min_cpu_available=min_cpu_available, log=log,
                rate=rates[_rate_key(job)], baseline_max_spread=baseline_max_spread,
            )  # fmt: skip

        for round_no in range(rounds):
            shift = round_no % len(indexed) if indexed else 0
            for index, job in indexed[shift:] + indexed[:shift]:  # rotated: no cell always first
                if job.done:
                    continue
                try:
                    settings = settings_of(job)
                    probe = _time_round(job, index, round_no, tmp, before=probe, **settings)
                    probe = _retime_while_contended(
                        job, index, round_no, tmp, probe, retimes=retimes, wait_s=retime_wait_s, **settings
                    )
                except Exception as exc:  # a broken golden or pyperf file is this cell's result, not the job's
                    probe = None
                    job.done = True
                    job.record.update(status="crash", reason=f"{type(exc).__name__}: {exc}")
        for index, job in indexed:  # then every slow process is timed again, within the same re-time budget
            try:
                _retime_slow_rounds(job, index, tmp, max_round_shift, retimes=retimes, **settings_of(job))
            except Exception as exc:
                job.done = True
                job.record.update(status="crash", reason=f"{type(exc).__name__}: {exc}")
        records = []
        for index, job in enumerate(jobs):
            try:
                records.append(_finish(job, tmp, index, started, max_round_shift))
            except Exception as exc:  # an unreadable pyperf file: this cell's record says so, the others stand
                records.append(_crash_record(job, f"{type(exc).__name__} while writing the record: {exc}"))
        return records


def _rate_key(job: TimingJob) -> tuple[str | None, str]:
    return ("native", "spin") if job.cell.engine == "native" else (job.python, job.cell.spec.work)


def _contention_reason(entry: dict[str, Any], threshold: float, max_spread: float = BASELINE_MAX_SPREAD) -> str:
    """Why a round was contended, in words: which probe, the share it saw, the threshold; or the baseline's spread."""
    low = [
        f"CPU available {entry[f'cpu_available_{when}']:.2f} {when} it"
        for when in ("before", "after")
        if entry[f"cpu_available_{when}"] < threshold
    ]
    why = [f"{' and '.join(low)} (< {threshold:.2f})"] if low else []
    if entry.get("unstable"):
        why.append(f"sequential loop values spread {entry['loop_spread']:.0%} (> {max_spread:.0%})")
    again = f" (re-time {entry['attempt']})" if entry.get("attempt") else ""
    return f"round {entry['round']}{again}: {'; '.join(why) or 'contended'}"


def _retime_while_contended(
    job: TimingJob,
    index: int,
    round_no: int,
    tmp: Path,
    probe: dict[str, Any],
    *,
    retimes: int,
    wait_s: float,
    **settings: Any,
) -> dict[str, Any]:
    """Time the round just taken again while it was contended and the cell has re-times left.

    Each re-time is one more fresh pyperf process (one more entry in ``rounds``, with its
    ``attempt``); the contended attempt stays in the record, flagged, and is marked ``retimed``.
    The record counts the re-times (``n_retimed``) and says why each was needed
    (``retime_reasons``).  Returns the last probe.
    """
    record = job.record
    while not job.done and record["rounds"] and record["n_retimed"] < retimes:
        last = record["rounds"][-1]
        if last["round"] != round_no or not last["contended"]:
            break
        last["retimed"] = True
        record["n_retimed"] += 1
        record["retime_reasons"].append(_contention_reason(
            last, settings["min_cpu_available"], settings.get("baseline_max_spread", BASELINE_MAX_SPREAD)))  # fmt: skip
        log = settings.get("log")
        if log is not None:
            log.write(f"--- {job.out} round {round_no} contended: {record['retime_reasons'][-1]}; re-timing\n")
        time.sleep(wait_s)
        probe = _time_round(
            job, index, round_no, tmp, before=cpu_availability(), attempt=last["attempt"] + 1, **settings
        )
    return probe


def _retime_slow_rounds(
    job: TimingJob, index: int, tmp: Path, max_shift: float, *, retimes: int, **settings: Any
) -> None:
    """Time a cell again, one fresh process at a time, while it has a slow process (:func:`slow_rounds`) and
    re-times left: a slow process is the machine's, as a contended round is, and is left out of the cell.

    The slow round stays in the record, marked ``slow``, ``contended`` and ``retimed``; ``retime_reasons``
    says which it was.  On the 2-core VM a quarter to a half of fresh processes run every value 25-70%
    slower, with the address layout, the hash seed and the environment fixed (``setarch -R``,
    ``PYTHONHASHSEED``): whatever backs a process's memory, not the process itself."""
    record = job.record
    if not judged_for_slow_processes(job.cell):
        return
    while not job.done and record["n_retimed"] < retimes:
        slow = _leave_out_slow_rounds(record, max_shift)
        if not slow:
            return
        for i in slow:
            record["rounds"][i]["retimed"] = True
        first = record["rounds"][slow[0]]
        record["n_retimed"] += 1
        record["retime_reasons"].append(record["slow_rounds"][-len(slow)])
        log = settings.get("log")
        if log is not None:
            log.write(f"--- {job.out} a slow process: {record['retime_reasons'][-1]}; re-timing\n")
        attempt = 1 + max(r["attempt"] for r in record["rounds"] if r["round"] == first["round"])
        _time_round(job, index, first["round"], tmp, before=cpu_availability(), attempt=attempt, **settings)


def write_fallback(out: str | Path, kind: str, reason: str, what: str) -> dict[str, Any]:
    """The record of a job (check, golden or timing) whose command died before writing one (so the sweep goes on)."""
    from tickpar.runner import RECORD_FORMAT, write_json_atomic

    if what == "timing":
        record: dict[str, Any] = {"format": TIMING_FORMAT, "status": kind, "reason": reason, "values": []}
    else:
        record = {
            "format": RECORD_FORMAT,
            "verdict": {"kind": kind, "reason": reason, "divergence": None},
            "failure": {"kind": kind, "message": reason},
        }
    record["fallback"] = True
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json_atomic(out, record)
    return record


def _crash_record(job: TimingJob, reason: str) -> dict[str, Any]:
    return write_fallback(job.out, "crash", reason, "timing")


def measure(
    cell: Any,
    cell_args: Sequence[str],
    out: str | Path,
    pyperf_out: str | Path | None = None,
    *,
    processes: int = 2,
    values: int = 3,
    warmups: int = 1,
    timeout: float | None = 300.0,
    inherit_environ: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    check: str | Path | None = None,
    golden: str | Path | None = None,
    min_cpu_available: float = MIN_CPU_AVAILABLE,
    work_rate: float | None = None,
    retimes: int = RETIMES,
    retime_wait_s: float = RETIME_WAIT_S,
    log: Any = None,
    baseline_max_spread: float = BASELINE_MAX_SPREAD,
    max_round_shift: float = MAX_ROUND_SHIFT,
) -> dict[str, Any]:
    """Time one cell (``processes`` rounds of one fresh process each) and write its record to ``out``.

    ``cell_args`` are the cell's long options (``--workload ...``);
    ``pyperf_out`` receives the pyperf JSON (default: ``out`` with
    ``.pyperf.json``); ``check``, a correctness record (a cell whose run did not
    finish is not timed); ``golden``, the golden record every timed run is
    checked against (default: computed here, a sequential run of the cell).
    """
    job = TimingJob(
        cell, list(cell_args), Path(out), Path(pyperf_out) if pyperf_out else None,
        str(check) if check else None, str(golden) if golden else None,
    )  # fmt: skip
    return measure_cells(
        [job], rounds=processes, values=values, warmups=warmups, timeout=timeout, inherit_environ=inherit_environ,
        extra_args=extra_args, min_cpu_available=min_cpu_available, work_rate=work_rate, retimes=retimes,
        retime_wait_s=retime_wait_s, log=log, baseline_max_spread=baseline_max_spread,
        max_round_shift=max_round_shift,
    )[0]  # fmt: skip


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
        f" ({record['loop_source']}); timed runs {'exact' if record['timed_exact'] else 'NOT exact'}"
        f"; CPU available >= {record['cpu_available_min']:.2f}"
    )
    if record["n_retimed"]:
        line += f"; {record['n_retimed']} contended round(s) re-timed"
    if record["n_contended"]:
        line += f" (CONTENDED: {record['n_contended']} of {record['n_values']} values, left out of speedups)"
    return line


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
            records = [_crash_record(job, f"the timing job failed: {type(exc).__name__}: {exc}") for job in jobs]
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
        from tickpar.runner import write_json_atomic

        write_json_atomic(smk.output[0], index)
        log.write(f"tickpar: timed {len(jobs)} cells in {settings['processes']} interleaved rounds\n")


def main(argv: Sequence[str] | None = None) -> None:
    """The pyperf script (``python -m tickpar.perf.timing``)."""
    if argv is not None:
        sys.argv[1:] = list(argv)
    _script_main()


if __name__ == "__main__":
    main()
