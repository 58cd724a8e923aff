"""Stress the exact thread strategies on real parallel threads: many runs, each checked bit for bit.

Races that the GIL hides (dict and heap updates, counters, lock tables shared by worker threads) show
up on a free-threaded interpreter; ``make test-ft`` runs this module there (docs/explanation/design.md §11).

Each run is one cell checked against its golden sequential run, on the sweep's ``wide`` shapes
(:data:`SHAPES`): a different seed per run and a different ``work_us`` per run (0, 1, 3, 10 µs in
turn), so that the threads meet at different points of their handlers (different interleavings).
Every run of a variant whose strategy promises ``exact`` for it must be ``exact``; ``split`` (no
promise on real threads) runs too, for its failure rate.  Under a GIL build the switch interval is
set very short (``switch_us``), so that the GIL also changes hands inside handlers::

    python -m tickpar.pipeline.stress                  # 20 runs per workload, 2 and 4 workers, gil-hold
    .venv-ft/bin/python -m tickpar.pipeline.stress --runs 5 --workers 2 --json out.json

Exit status 1 when a run of an exact variant was not exact.
"""

from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import platform
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tickpar.host.envinfo import gil_enabled
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, execute, golden_cell, resolve_cell

__all__ = ["SHAPES", "VARIANTS", "WORK_US", "StressVariant", "main", "stress", "summarise"]

#: The sweep's ``wide`` shapes (config/config.yaml), without ``work_us`` (set per run).
SHAPES: dict[str, dict[str, Any]] = {
    "phold": {"lps": 16, "population": 8, "mean": 200, "lookahead": 1000, "granularity": 500, "end_tick": 11000},
    "multicore": {
        "cores": 16, "l2_banks": 8, "working_set_kib": 16, "think_cycles": 0, "link_latency": 2000,
        "max_outstanding": 8, "requests_per_core": 16,
    },
}  # fmt: skip
WORK_US = (0.0, 1.0, 3.0, 10.0)


@dataclass(frozen=True)
class StressVariant:
    """A strategy with its options and order mode, as the stress runs it."""

    label: str
    strategy: str
    options: dict[str, Any] = field(default_factory=dict)
    order: str = "gem5"


#: The exact thread strategies (each promises ``exact`` on these shapes) and split on real threads.
VARIANTS = (
    StressVariant("tick-barrier", "tick-barrier", {"executor": "threads"}, "gem5"),
    StressVariant("conservative/window", "conservative", {"sync": "window", "backend": "threads", "stall_s": 20},
                  "canonical"),
    StressVariant("conservative/null-message", "conservative",
                  {"sync": "null-message", "backend": "threads", "stall_s": 20}, "canonical"),
    StressVariant("quantum/ratio1", "quantum", {"quantum_ratio": 1, "backend": "threads", "stall_s": 20}, "canonical"),
    StressVariant("split/name", "split", {"executor": "threads", "lock_key": "name", "checks": False, "stall_s": 10}),
    StressVariant("split/component", "split",
                  {"executor": "threads", "lock_key": "component", "checks": False, "stall_s": 10}),
)  # fmt: skip


def interpreter() -> dict[str, Any]:
    """The interpreter the stress runs on: version, free-threaded build, GIL state."""
    return {
        "python": platform.python_version(),
        "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "gil_enabled": gil_enabled(),
    }


def stress(
    *,
    runs: int = 20,
    workers: Sequence[int] = (2, 4),
    workloads: Sequence[str] = tuple(SHAPES),
    variants: Sequence[StressVariant] = VARIANTS,
    work: str = "gil-hold",
    work_us: Sequence[float] = WORK_US,
    seed0: int = 1,
    switch_us: float = 5.0,
    hang_s: float = 120.0,
    log: Any = None,
) -> dict[str, Any]:
    """Run every (workload, run, workers, variant) once; return the interpreter and one row per run.

    A row's ``must_be_exact`` is the strategy's own promise for the cell (``expected_verdict ==
    "exact"``).  A run that hangs past ``hang_s`` dumps every thread's stack and exits the process.
    """
    env = interpreter()
    saved_switch = sys.getswitchinterval()
    if env["gil_enabled"] and switch_us > 0:
        sys.setswitchinterval(switch_us * 1e-6)
    registry = get_registry()
    goldens: dict[tuple[Any, ...], Any] = {}
    rows: list[dict[str, Any]] = []
    try:
        for workload in workloads:
            for i in range(runs):
                seed = seed0 + i
                us = work_us[i % len(work_us)]
                params = {**SHAPES[workload], "work_us": us}
                for n in workers:
                    for v in variants:
                        cell = resolve_cell(workload, params, v.strategy, v.options, n, seed, v.order, work)
                        promise = registry.strategy(v.strategy)().expected_verdict(cell.spec, n, cell.options)
                        key = (workload, seed, v.order, us)
                        if key not in goldens:  # the work model changes no digest: the golden run does none
                            gcell = golden_cell(resolve_cell(workload, params, "sequential", {}, 1, seed, v.order))
                            out = execute(type(gcell)(gcell.spec.with_trace(True), gcell.strategy, gcell.options, 1))
                            if out.record.failure is not None:
                                raise RuntimeError(f"golden run of {workload} seed {seed} failed: {out.record.failure}")
                            goldens[key] = out.record
                        faulthandler.dump_traceback_later(hang_s, exit=True)
                        t0 = time.perf_counter()
                        try:
                            verdict, _ = check_cell(cell, goldens[key])
                        finally:
                            faulthandler.cancel_dump_traceback_later()
                        row = {
                            "variant": v.label, "strategy": v.strategy, "must_be_exact": promise == "exact",
                            "workload": workload, "workers": n, "seed": seed, "work_us": us,
                            "verdict": verdict.kind, "reason": verdict.reason, "seconds": time.perf_counter() - t0,
                        }  # fmt: skip
                        rows.append(row)
                        if log is not None and row["must_be_exact"] and verdict.kind != "exact":
                            print(f"  NOT EXACT: {v.label} {workload} n={n} seed={seed} work_us={us:g}: "
                                  f"{verdict.kind}: {verdict.reason}", file=log, flush=True)  # fmt: skip
    finally:
        sys.setswitchinterval(saved_switch)
    return {"interpreter": env, "work": work, "runs": runs, "rows": rows}


def summarise(result: dict[str, Any]) -> tuple[list[str], int]:
    """The table (one line per variant, workload and worker count) and the number of non-exact exact runs."""
    counts: dict[tuple[str, str, int], collections.Counter[str]] = collections.defaultdict(collections.Counter)
    exact_of: dict[str, bool] = {}
    for r in result["rows"]:
        counts[(r["variant"], r["workload"], r["workers"])][r["verdict"]] += 1
        exact_of[r["variant"]] = exact_of.get(r["variant"], True) and r["must_be_exact"]
    env = result["interpreter"]
    lines = [
        f"Python {env['python']}, free-threaded build: {env['free_threaded_build']}, "
        f"GIL {'enabled' if env['gil_enabled'] else 'disabled'}; work {result['work']}",
        f"{'variant':28} {'promise':8} {'workload':10} {'n':>2} {'runs':>5} {'exact':>6} {'failure rate':>12}"
        "  verdicts",
    ]
    bad = 0
    for (variant, workload, workers), c in sorted(counts.items()):
        total = sum(c.values())
        failed = total - c["exact"]
        if exact_of[variant]:
            bad += failed
        lines.append(
            f"{variant:28} {'exact' if exact_of[variant] else '-':8} {workload:10} {workers:>2} {total:>5} "
            f"{c['exact']:>6} {failed / total:>12.0%}  " + ", ".join(f"{k} {n}" for k, n in sorted(c.items()))
        )
    return lines, bad


def main(argv: Sequence[str] | None = None) -> int:
    doc = (__doc__ or "").splitlines()
    p = argparse.ArgumentParser(prog="python -m tickpar.pipeline.stress", description=doc[0] if doc else None)
    p.add_argument("--runs", type=int, default=20, help="runs per workload, variant and worker count (default 20)")
    p.add_argument("--workers", type=int, nargs="+", default=[2, 4], help="worker counts (default 2 4)")
    p.add_argument("--workloads", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    p.add_argument("--work", default="gil-hold", choices=("gil-hold", "gil-release", "none"))
    p.add_argument("--work-us", type=float, nargs="+", default=list(WORK_US), help="work per event, per run in turn")
    p.add_argument("--seed0", type=int, default=1, help="the first run's seed (default 1)")
    p.add_argument("--no-split", action="store_true", help="leave split (no promise on real threads) out")
    p.add_argument("--only", nargs="+", metavar="LABEL", help="only these variants (labels of VARIANTS)")
    p.add_argument("--switch-us", type=float, default=5.0, help="GIL builds: switch interval in µs (0: leave it)")
    p.add_argument("--hang-s", type=float, default=120.0, help="a run longer than this dumps stacks and exits")
    p.add_argument("--json", help="write every run's row to this file")
    args = p.parse_args(argv)
    variants = [
        v for v in VARIANTS
        if not (args.no_split and v.strategy == "split") and (not args.only or v.label in args.only)
    ]  # fmt: skip
    if not variants:
        p.error(f"no variant left: labels are {', '.join(v.label for v in VARIANTS)}")
    t0 = time.perf_counter()
    result = stress(
        runs=args.runs, workers=args.workers, workloads=args.workloads, variants=variants, work=args.work,
        work_us=args.work_us, seed0=args.seed0, switch_us=args.switch_us, hang_s=args.hang_s, log=sys.stdout,
    )  # fmt: skip
    result["seconds"] = round(time.perf_counter() - t0, 1)
    lines, bad = summarise(result)
    print("\n".join(lines))
    print(f"{len(result['rows'])} runs in {result['seconds']} s; non-exact runs of exact variants: {bad}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
