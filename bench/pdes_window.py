"""The cost of one conservative window, beyond the events it runs: valgrind instructions, and cProfile.

A window of ``conservative`` (``sync=window``) is: every LP computes its next
time, sends each peer its messages and that time, gathers one packet from each
peer, delivers, takes the global minimum, and serves its events below the
window's end.  Everything but serving the events is the per-window cost that
decides where the strategy breaks even.  Two measures, both noise-free enough
for a shared machine (wall-clock is not):

* ``instructions`` (default): under ``valgrind --tool=cachegrind``, one run to
  ``end_tick / 2`` and one to ``end_tick``, for ``conservative`` and for
  ``sequential``; the per-window cost is ``(ΔI_conservative - ΔI_sequential) /
  Δwindows`` (both LPs' threads together: valgrind counts every thread), so
  start-up, model build and the events themselves cancel out.
* ``profile``: cProfile in every LP thread of one run; the own time of the
  synchronisation functions per window, and the time blocked in the transport.

    .venv/bin/python bench/pdes_window.py                       # phold lps=16 granularity=100 lookahead=100
    .venv/bin/python bench/pdes_window.py --workload multicore --scale requests_per_core --scale-default 400
    .venv/bin/python bench/pdes_window.py --mode profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tickpar.kernel.params import parse_assignments
from tickpar.plugins.registry import get_registry
from tickpar.runner import resolve_cell

DEFAULT_PARAMS = {"lps": 16, "granularity": 100, "lookahead": 100, "work_us": 0.0}
SYNC_FUNCTIONS = ("run", "exchange", "gather", "wait", "send", "recv", "take_outbox", "deliver", "local_next", "bound")


def run_once(workload: str, params: dict[str, Any], strategy: str, options: dict[str, Any], workers: int) -> dict:
    cell = resolve_cell(workload, params, strategy, options, workers, seed=1, order="canonical")
    result = get_registry().strategy(strategy)().run(cell.spec, workers, dict(cell.options))
    return {"events": result.record.events, "windows": result.stats.get("windows", 0)}


def _instructions(args: argparse.Namespace, params: dict[str, Any], strategy: str, size: int) -> dict:
    cmd = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        sys.executable, str(Path(__file__).resolve()), "--child", strategy, "--workload", args.workload,
        "--workers", str(args.workers), "--switch-interval", str(args.switch_interval),
        *[a for k, v in {**params, args.scale: size}.items() for a in ("--param", f"{k}={v}")],
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError("no instruction count in valgrind's output:\n" + done.stderr[-1000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["I"] = int(found.group(1).replace(",", ""))
    return out


def instructions(args: argparse.Namespace, params: dict[str, Any]) -> None:
    end = int(params.pop(args.scale, args.scale_default))
    delta: dict[str, dict[str, float]] = {}
    for strategy in ("conservative", "sequential"):
        half, full = (_instructions(args, params, strategy, e) for e in (end // 2, end))
        delta[strategy] = {k: full[k] - half[k] for k in full}
    cons, seq = delta["conservative"], delta["sequential"]
    windows = cons["windows"]
    print(f"{args.workload} {params} {args.scale} {end // 2} -> {end}, {args.workers} LPs (threads, window)")
    print(f"  instructions per event: sequential {seq['I'] / seq['events']:,.0f}, "
          f"conservative {cons['I'] / cons['events']:,.0f}")  # fmt: skip
    if windows:
        print(f"  windows {windows:,.0f}, events {cons['events']:,.0f} ({cons['events'] / windows:.1f} per window)")
        print(f"  per-window cost beyond the events: {(cons['I'] - seq['I']) / windows:,.0f} instructions")


def profile(args: argparse.Namespace, params: dict[str, Any]) -> None:
    from tickpar.pdes.lp import LogicalProcess

    profiles: dict[int, cProfile.Profile] = {}
    original = LogicalProcess.run

    def run(self: LogicalProcess) -> Any:
        prof = profiles[self.index] = cProfile.Profile()
        prof.enable()
        try:
            return original(self)
        finally:
            prof.disable()

    LogicalProcess.run = run  # type: ignore[method-assign]
    try:
        out = run_once(args.workload, params, "conservative", {"sync": "window"}, args.workers)
    finally:
        LogicalProcess.run = original  # type: ignore[method-assign]
    windows = out["windows"]
    print(f"{args.workload} {params}: {out['events']} events, {windows} windows; µs per window (cProfile own time)")
    for index, prof in sorted(profiles.items()):
        stats = pstats.Stats(prof, stream=io.StringIO())
        rows = []
        for (file, _line, func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
            if file == "~":  # a builtin: only the transport's queue operations
                if "_queue.SimpleQueue" in func:
                    rows.append((tt, func.split("'")[1]))
            elif func in SYNC_FUNCTIONS and "tickpar/pdes/" in file:
                rows.append((tt, f"{Path(file).stem}.{func}"))
        total = stats.total_tt  # type: ignore[attr-defined]
        blocked = sum(tt for tt, name in rows if name == "get")
        sync = sum(tt for tt, name in rows if name != "get")
        print(f"  LP {index}: total {total / windows * 1e6:,.1f}, blocked in get {blocked / windows * 1e6:,.1f}, "
              f"sync functions {sync / windows * 1e6:,.1f}: "
              + ", ".join(f"{name} {tt / windows * 1e6:.1f}" for tt, name in sorted(rows, reverse=True)))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workload", default="phold")
    parser.add_argument("--param", action="append", metavar="K=V", help="workload parameter (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--mode", choices=("instructions", "profile"), default="instructions")
    parser.add_argument("--scale", default="end_tick", help="the parameter halved for the short run (instructions)")
    parser.add_argument("--scale-default", type=int, default=20000, help="its full value when --param leaves it out")
    parser.add_argument("--switch-interval", type=float, default=1.0,
                        help="GIL switch interval (s) in the measured run (see the module docstring)")
    parser.add_argument("--child", metavar="STRATEGY", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    params = parse_assignments(args.param, "--param")
    if args.workload == "phold" and not args.param:
        params = dict(DEFAULT_PARAMS)
    if args.child:
        sys.setswitchinterval(args.switch_interval)
        options = {"sync": "window"} if args.child == "conservative" else {}
        workers = args.workers if args.child == "conservative" else 1
        print(json.dumps(run_once(args.workload, params, args.child, options, workers)))
        return 0
    if args.mode == "profile":
        profile(args, params)
    else:
        instructions(args, params)
    return 0


if __name__ == "__main__":
    sys.exit(main())
