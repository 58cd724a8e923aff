"""Stress the exact thread strategies on real parallel threads: many runs, each checked bit for bit.

Each run is one cell checked against its golden sequential run: a different seed per run, and a
different ``work_us`` per run (0, 1, 3, 10 µs in turn), so that the threads meet at different points
of their handlers (different interleavings). Every run of an exact strategy must be ``exact``;
``split`` (which promises nothing on real threads) is run too, to measure its failure rate.

    python tools/stress.py                       # 20 runs per workload, 2 and 4 workers, gil-hold
    python tools/stress.py --runs 5 --workers 2 --json out.json

Under a GIL build, ``sys.setswitchinterval`` is set very short (``--switch-us``), so that the GIL
changes hands inside handlers too. Exit status 1 when an exact strategy had a non-exact run.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import sys
import sysconfig
import time
from dataclasses import dataclass
from typing import Any

from tickpar.runner import check_cell, execute, golden_cell, resolve_cell

#: The sweep's `wide` shapes (config/config.yaml), without work_us (set per run).
SHAPES: dict[str, dict[str, Any]] = {
    "phold": {"lps": 16, "population": 8, "mean": 200, "lookahead": 1000, "granularity": 500, "end_tick": 11000},
    "multicore": {
        "cores": 16, "l2_banks": 8, "working_set_kib": 16, "think_cycles": 0, "link_latency": 2000,
        "max_outstanding": 8, "requests_per_core": 16,
    },
}
WORK_US = (0, 1, 3, 10)


@dataclass(frozen=True)
class Variant:
    label: str
    strategy: str
    options: dict[str, Any]
    order: str
    exact: bool  # every run must be exact


VARIANTS = (
    Variant("tick-barrier", "tick-barrier", {"executor": "threads"}, "gem5", True),
    Variant("conservative/window/threads", "conservative",
            {"sync": "window", "backend": "threads", "stall_s": 20}, "canonical", True),
    Variant("conservative/null-message/threads", "conservative",
            {"sync": "null-message", "backend": "threads", "stall_s": 20}, "canonical", True),
    Variant("quantum/ratio1/threads", "quantum", {"quantum_ratio": 1, "backend": "threads", "stall_s": 20},
            "canonical", True),
    Variant("split/name", "split", {"executor": "threads", "lock_key": "name", "checks": False, "stall_s": 10},
            "gem5", False),
    Variant("split/component", "split",
            {"executor": "threads", "lock_key": "component", "checks": False, "stall_s": 10}, "gem5", False),
)


def interpreter() -> dict[str, Any]:
    check = getattr(sys, "_is_gil_enabled", None)
    return {
        "python": sys.version.split()[0],
        "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "gil_enabled": bool(check()) if check is not None else True,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    env = interpreter()
    if env["gil_enabled"] and args.switch_us > 0:
        sys.setswitchinterval(args.switch_us * 1e-6)
    variants = [v for v in VARIANTS if (args.split or v.exact) and (not args.only or v.label in args.only)]
    goldens: dict[tuple[Any, ...], Any] = {}
    rows: list[dict[str, Any]] = []
    for workload in args.workloads:
        for i in range(args.runs):
            seed = args.seed0 + i
            work_us = args.work_us[i % len(args.work_us)]
            params = {**SHAPES[workload], "work_us": work_us}
            for workers in args.workers:
                for v in variants:
                    cell = resolve_cell(workload, params, v.strategy, v.options, workers, seed, v.order, args.work)
                    key = (workload, seed, v.order, work_us)
                    if key not in goldens:  # the work model changes no digest: the golden run does none
                        gcell = resolve_cell(workload, params, "sequential", {}, 1, seed, v.order, "none")
                        traced = golden_cell(type(gcell)(gcell.spec.with_trace(True), "sequential", {}, 1))
                        out = execute(traced)
                        if out.record.failure is not None:
                            raise RuntimeError(f"golden run failed: {out.record.failure}")
                        goldens[key] = out.record
                    faulthandler.dump_traceback_later(args.hang_s, exit=True)  # a hang: stacks, then exit
                    t0 = time.perf_counter()
                    verdict, _outcome = check_cell(cell, goldens[key])
                    faulthandler.cancel_dump_traceback_later()
                    rows.append({
                        "variant": v.label, "must_be_exact": v.exact, "workload": workload, "workers": workers,
                        "seed": seed, "work_us": work_us, "verdict": verdict.kind, "reason": verdict.reason,
                        "seconds": round(time.perf_counter() - t0, 4),
                    })
                    if args.verbose or (v.exact and verdict.kind != "exact"):
                        print(f"  {v.label} {workload} n={workers} seed={seed} work_us={work_us}: "
                              f"{verdict.kind} {verdict.reason}", flush=True)
    return {"interpreter": env, "work": args.work, "runs_per_workload": args.runs, "rows": rows}


def summarise(result: dict[str, Any]) -> tuple[list[str], int]:
    counts: dict[tuple[str, str, int], collections.Counter[str]] = collections.defaultdict(collections.Counter)
    exact_of: dict[str, bool] = {}
    for r in result["rows"]:
        counts[(r["variant"], r["workload"], r["workers"])][r["verdict"]] += 1
        exact_of[r["variant"]] = r["must_be_exact"]
    env = result["interpreter"]
    lines = [
        f"interpreter: Python {env['python']}, free-threaded build {env['free_threaded_build']}, "
        f"GIL {'enabled' if env['gil_enabled'] else 'disabled'}; work {result['work']}",
        f"{'variant':36} {'workload':10} {'n':>2} {'runs':>5} {'exact':>6} {'failure rate':>12}  verdicts",
    ]
    bad = 0
    for (variant, workload, workers), c in sorted(counts.items()):
        total = sum(c.values())
        failed = total - c["exact"]
        if exact_of[variant]:
            bad += failed
        lines.append(
            f"{variant:36} {workload:10} {workers:>2} {total:>5} {c['exact']:>6} {failed / total:>12.0%}  "
            + ", ".join(f"{k} {n}" for k, n in sorted(c.items()))
        )
    return lines, bad


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="runs per workload, variant and worker count (default 20)")
    p.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    p.add_argument("--workloads", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    p.add_argument("--work", default="gil-hold", choices=("gil-hold", "gil-release", "none"))
    p.add_argument("--work-us", type=float, nargs="+", default=list(WORK_US),
                   help="work per event, in turn per run (default: 0 1 3 10)")
    p.add_argument("--seed0", type=int, default=1, help="the first run's seed (default 1)")
    p.add_argument("--no-split", dest="split", action="store_false", help="leave split (no promise) out")
    p.add_argument("--only", nargs="+", help="only these variant labels")
    p.add_argument("--switch-us", type=float, default=5.0, help="GIL builds: switch interval in µs (0: leave it)")
    p.add_argument("--hang-s", type=float, default=120.0, help="a run longer than this dumps stacks and exits")
    p.add_argument("--json", help="write every run's verdict to this file")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    result = run(args)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    lines, bad = summarise(result)
    print("\n".join(lines))
    print(f"{len(result['rows'])} runs in {result['seconds']} s; non-exact runs of exact strategies: {bad}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
