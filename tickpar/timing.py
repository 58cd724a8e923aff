"""pyperf timing of one cell: fresh worker processes, warm-ups, one whole simulation per value.

Two roles, one module:

* ``python -m tickpar.timing CELL-OPTIONS [pyperf options] -o FILE`` is a plain
  pyperf script: ``pyperf.Runner(loops=1)`` and ``bench_time_func``, whose
  function builds the model and runs the strategy once per loop and returns the
  seconds that took (model build included: process and MPI backends build their
  partitions inside ``Strategy.run``, so this is the only fair clock).  pyperf
  runs it in ``-p`` fresh worker processes, each with ``-w`` warm-ups and ``-n``
  values; the output is an ordinary pyperf JSON (``python -m pyperf show FILE``).
  CELL-OPTIONS are long options only (``--workload --param --strategy --option
  --workers --seed --order --work``) because pyperf owns ``-p -n -w -o``.
* :func:`measure` (``tickpar time``) is the pipeline's driver.  It runs that
  script in its own process group under a time limit (a hung strategy, its
  worker processes and MPI ranks are killed together), forwards the environment
  with ``--inherit-environ`` (pyperf strips it), works around ``-o`` refusing to
  overwrite (it writes a temporary file and renames it), and always writes a
  timing record: status ``ok`` with the values, or ``timeout``/``crash``/
  ``skipped`` with the reason.  A timing failure never fails the sweep.

Work calibration (``tickpar.work``) runs in each worker before the first value,
never inside a timed simulation.

# Timing record format history:
# tickpar.timing/1: first version (status, reason, cell, values, warmups, mean_s, stdev_s, median_s,
#   n_values, processes, pyperf_file, pyperf_metadata, wall_s, env, versions, created).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tickpar.oracle import FAILED_RUN
from tickpar.plugins import BASELINE

__all__ = ["TIMING_FORMAT", "add_cell_options", "bench", "cell_argv", "measure", "summarize"]

TIMING_FORMAT = "tickpar.timing/1"
#: Verdicts of the correctness job after which timing is pointless (the run does not finish).
SKIP_AFTER = FAILED_RUN


# ---------------------------------------------------------------- the pyperf script


def add_cell_options(parser: argparse.ArgumentParser) -> None:
    """The cell, as long options that cannot clash with pyperf's own."""
    group = parser.add_argument_group("tickpar cell")
    group.add_argument("--workload", required=True, help="workload name (see `tickpar list`)")
    group.add_argument("--param", action="append", metavar="K=V", help="workload parameter (repeatable)")
    group.add_argument("--strategy", default=BASELINE, help=f"strategy name (default: {BASELINE})")
    group.add_argument("--option", action="append", metavar="K=V", help="strategy option (repeatable)")
    group.add_argument("--workers", type=int, default=1, help="worker count (default 1)")
    group.add_argument("--seed", type=int, default=1, help="run seed (default 1)")
    group.add_argument("--order", default="gem5", help="tie order: gem5 or canonical")
    group.add_argument("--work", default="none", help="work model: gil-release, gil-hold or none")


def cell_argv(args: argparse.Namespace) -> list[str]:
    """The cell options again, as argv (what pyperf workers are given)."""
    out = ["--workload", args.workload]
    for item in args.param or []:
        out += ["--param", item]
    out += ["--strategy", args.strategy]
    for item in args.option or []:
        out += ["--option", item]
    out += ["--workers", str(args.workers), "--seed", str(args.seed), "--order", args.order, "--work", args.work]
    return out


def _cell_from(args: argparse.Namespace) -> Any:
    """The cell named by the worker's arguments: the CLI's own parsing and validation."""
    from tickpar.cli import _cell_from_args

    return _cell_from_args(args)


def bench(loops: int, cell: Any) -> float:
    """pyperf's time function: ``loops`` whole simulations of ``cell``, the seconds they took."""
    from tickpar.registry import get_registry

    strategy_cls = get_registry().strategy(cell.strategy)
    total = 0.0
    for _ in range(loops):
        strategy = strategy_cls()
        started = time.perf_counter()
        result = strategy.run(cell.spec, cell.workers, dict(cell.options))
        total += time.perf_counter() - started
        failure = result.record.failure
        if failure is not None:  # the worker dies; the driver records a crash with this line
            raise RuntimeError(f"run did not finish: {failure.get('kind')}: {failure.get('message')}")
    return total


def _script_main() -> None:
    import pyperf

    runner = pyperf.Runner(
        loops=1,
        program_args=("-m", "tickpar.timing"),
        add_cmdline_args=lambda cmd, args: cmd.extend(cell_argv(args)),
    )
    add_cell_options(runner.argparser)
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
    from tickpar.params import ParamError
    from tickpar.registry import PluginError
    from tickpar.work import calibrate

    try:
        cell = _cell_from(args)
    except (ParamError, PluginError) as exc:
        print(f"tickpar.timing: error: {exc}", file=sys.stderr)
        sys.exit(2)
    runner.metadata["tickpar_cell"] = json.dumps(cell.to_dict(), sort_keys=True, separators=(",", ":"))
    calibrate(cell.spec.work)  # once per worker, outside every timed value
    runner.bench_time_func(name, bench, cell)


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


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(text: str, lines: int = 3) -> str:
    rows = [r.strip() for r in text.strip().splitlines() if r.strip()]
    return " | ".join(rows[-lines:])


def _unfinished(path: str | Path | None) -> str | None:
    """The verdict of a correctness record whose run did not finish (crash, timeout, deadlock, or a
    raised causality error: ``failure`` is set), else None: timing such a cell would only repeat it."""
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    verdict = data.get("verdict") if isinstance(data.get("verdict"), dict) else {}
    kind = verdict.get("kind")
    if kind in SKIP_AFTER or data.get("failure") is not None:
        return kind or "crash"
    return None


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
    log: Any = None,
) -> dict[str, Any]:
    """Time ``cell`` with pyperf and write its timing record to ``out`` (always; never raises on failure).

    ``cell_args`` are the cell's long options (``--workload ...``) for the
    script; ``pyperf_out`` receives the pyperf JSON (default: ``out`` with
    ``.pyperf.json``); ``check``, a correctness record: when its run did not
    finish (crash, timeout, deadlock, raised causality) the cell is not timed
    (status ``skipped``).
    """
    from tickpar.envinfo import environment, versions
    from tickpar.runner import write_json_atomic

    out = Path(out)
    pyperf_out = Path(pyperf_out) if pyperf_out else out.with_name(out.name.removesuffix(".json") + ".pyperf.json")
    record: dict[str, Any] = {
        "format": TIMING_FORMAT,
        "status": "ok",
        "reason": "",
        "cell": cell.to_dict(),
        "strategy": cell.strategy,
        "workers": cell.workers,
        "processes": processes,
        "values_per_process": values,
        "warmups_per_process": warmups,
        "values": [],
        **summarize([]),
        "pyperf_file": None,
        "pyperf_metadata": {},
    }
    verdict = _unfinished(check)
    started = time.perf_counter()
    if verdict is not None:
        record.update(status="skipped", reason=f"not timed: the correctness run did not finish ({verdict})")
    else:
        inherit = [name for name in inherit_environ if name in os.environ]
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".tickpar-timing-", dir=out.parent) as tmp:
            tmp_json = Path(tmp, "pyperf.json")
            cmd = [
                sys.executable, "-m", "tickpar.timing", *cell_args,
                "--processes", str(processes), "--values", str(values), "--warmups", str(warmups),
                "--loops", "1", "--output", str(tmp_json), *extra_args,
            ]  # fmt: skip
            if inherit:
                cmd.append("--inherit-environ=" + ",".join(inherit))
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                output, _ = proc.communicate(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                output, _ = proc.communicate()
                timed_out = True
            text = output.decode(errors="replace")
            if log is not None:
                log.write(text)
            if timed_out:
                record.update(status="timeout", reason=f"pyperf run exceeded its {timeout:g} s limit")
            elif proc.returncode != 0 or not tmp_json.exists():
                record.update(status="crash", reason=f"pyperf exited with status {proc.returncode}: {_tail(text)}")
            else:
                _read_pyperf(tmp_json, record)
                os.replace(tmp_json, pyperf_out)
                record["pyperf_file"] = pyperf_out.name
    record["wall_s"] = time.perf_counter() - started
    record["env"] = environment()
    record["versions"] = versions()
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json_atomic(out, record)
    return record


def _read_pyperf(path: Path, record: dict[str, Any]) -> None:
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(path))
    bench_ = suite.get_benchmarks()[0]
    vals = list(bench_.get_values())
    record["values"] = vals
    record["warmups"] = [w for run in bench_.get_runs() for _, w in (run.warmups or ())]
    record["benchmark"] = bench_.get_name()
    record["pyperf_metadata"] = {
        k: v for k, v in bench_.get_metadata().items() if isinstance(v, (str, int, float, bool))
    }
    record.update(summarize(vals))


def add_cli_options(parser: argparse.ArgumentParser) -> None:
    """``tickpar time``'s own options (the cell options come from the CLI)."""
    parser.add_argument("--processes", type=int, default=2, help="pyperf -p: fresh worker processes (default 2)")
    parser.add_argument("--values", type=int, default=3, help="pyperf -n: values per process (default 3)")
    parser.add_argument("--warmups", type=int, default=1, help="pyperf -w: warm-ups per process (default 1)")
    parser.add_argument("--inherit-environ", default="", metavar="VARS", help="comma-separated variables for workers")
    parser.add_argument("--pyperf-arg", action="append", default=[], metavar="ARG", help="extra pyperf option")
    parser.add_argument("--pyperf-out", help="where the pyperf JSON goes (default: beside --out)")
    parser.add_argument("--check", help="correctness record: skip timing when its verdict is crash/timeout/deadlock")


def run_cli(args: argparse.Namespace, cell: Any) -> int:
    """``tickpar time``: 0 when timed, 1 when the record says it could not be (the record is written anyway)."""
    if args.processes < 1 or args.values < 1 or args.warmups < 0:
        raise ValueError("--processes and --values must be >= 1, --warmups >= 0")
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
            log=sys.stdout,
        )
    line = f"{cell.strategy} on {cell.spec.workload} (workers={cell.workers}, seed={cell.spec.seed}): "
    if record["status"] == "ok":
        stdev = record["stdev_s"] or 0.0
        print(line + f"{record['mean_s'] * 1e3:.2f} ms +- {stdev * 1e3:.2f} ms over {record['n_values']} values")
        return 0
    print(line + f"{record['status']}: {record['reason']}")
    return 1


def main(argv: Sequence[str] | None = None) -> None:
    """The pyperf script (``python -m tickpar.timing``)."""
    if argv is not None:
        sys.argv[1:] = list(argv)
    _script_main()


if __name__ == "__main__":
    main()
