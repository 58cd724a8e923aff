"""The pyperf worker side of timing: ``python -m tickpar.perf.timing CELL-OPTIONS ...``.

A plain pyperf script (``pyperf.Runner(loops=1)`` and ``bench_time_func``) whose function builds the model,
runs the strategy once per loop and returns the seconds that took, checking every run it times against the
golden record and logging one JSON line per run (:mod:`tickpar.perf.timing` describes the whole).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickpar.cellargs import add_cell_options, cell_argv, cell_from_args

__all__ = [
    "CRASHES",
    "STOP_PREFIX",
    "bench",
]

#: Failure kinds that end a timing worker (the cell's record is a crash); every other verdict is recorded as one.
CRASHES = ("crash", "timeout")
#: The first words of the line a worker prints on stderr before it dies (the driver's crash reason quotes it).
STOP_PREFIX = "tickpar.perf.timing: stopped:"


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
    #: A native cell's replays per value (tickpar.native.replays_for): a value is their mean.
    replays: int = 1

    def note(self, result: Any, wall_s: float) -> None:
        """Check one run against the golden record; append its line to ``runs_out``."""
        from tickpar.verify.oracle import compare

        failure = result.record.failure
        if self.golden is not None:
            verdict = compare(self.golden, result.record).kind
        else:  # no golden record: a run that did not finish still says how it stopped
            verdict = str(failure.get("kind") or "crash") if failure is not None else None
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
        if failure is not None:  # the run stopped early: how, in a line (its value is the time until then)
            line["failure"] = str(failure.get("message") or failure.get("kind") or "")[:300]
        self.calls += 1
        if self.runs_out:
            with open(self.runs_out, "a") as f:
                f.write(json.dumps(line) + "\n")


@dataclass
class _NativeResult:
    """A native run, or a run that raised, as :func:`bench` reads a strategy's result."""

    record: Any
    stats: dict[str, Any]


def bench(loops: int, timed: _TimedCell) -> float:
    """pyperf's time function: ``loops`` whole simulations of the cell, the seconds they took."""
    from tickpar.plugins.registry import PluginError, get_registry
    from tickpar.runner import failure_of

    cell = timed.cell
    strategy_cls = get_registry().strategy(cell.strategy)
    total = 0.0
    for _ in range(loops):
        if cell.engine == "native":  # the C++ replay of the DAG recorded before the first value; loop_s: its loop
            from tickpar import native

            started = time.perf_counter()
            record, stats = native.run_native(
                cell.spec, cell.strategy, cell.workers, dict(cell.options), timed.spin, timed.replays
            )
            wall = (time.perf_counter() - started) / timed.replays  # per replay, as loop_s is
            result: Any = _NativeResult(record, stats)
        else:
            strategy = strategy_cls()
            started = time.perf_counter()
            try:
                result = strategy.run(cell.spec, cell.workers, dict(cell.options))
            except PluginError:
                raise
            except Exception as err:  # the run stopped (causality, deadlock, ...): its verdict, as check gives it
                result = _NativeResult(failure_of(err, cell), {})
            wall = time.perf_counter() - started
        total += wall
        failure = result.record.failure
        if failure is not None and failure.get("kind", "crash") in CRASHES:  # the worker dies: the driver records
            message = f"run did not finish: {failure.get('kind')}: {failure.get('message')}"  # a crash, with this line
            print(f"{STOP_PREFIX} {message}", file=sys.stderr, flush=True)
            raise RuntimeError(message)
        # A run that stopped with a verdict (causality, deadlock, ...) is noted like any run that is not exact:
        # the driver records the cell with its verdicts (timed_exact false), not as a crash.
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


def worker_main() -> None:
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
        native.require(cell.strategy, cell.options)
        spin = float(args.work_rate or 0.0)
        replays = native.replays_for(cell.spec, cell.strategy, cell.workers, dict(cell.options), spin)
        timed = _TimedCell(cell, golden, args.runs_out, args.warmups, spin=spin, replays=replays)
        runner.metadata["tickpar_replays"] = replays
        if args.work_rate:
            runner.metadata["tickpar_spin_per_us"] = args.work_rate
        runner.bench_time_func(name, bench, timed)
        return
    if args.work_rate and cell.spec.work != "none":
        set_rate(cell.spec.work, args.work_rate)  # the driver's one calibration: the same work in every cell
        runner.metadata["tickpar_work_rate"] = args.work_rate
    calibrate(cell.spec.work)  # once per worker, outside every timed value (a no-op after set_rate)
    runner.bench_time_func(name, bench, _TimedCell(cell, golden, args.runs_out, args.warmups))
