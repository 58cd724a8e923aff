"""Real speedup on this machine: 2 workers against ``sequential``, same workload and seed, in one run.

For each workload shape and each parallel configuration (strategy, options,
work mode), every cell runs ``--repeat`` times in a fresh process
(:func:`tickpar.runner.execute_isolated`, so no run inherits another's warm
state), the sequential reference of the same (workload, params, seed, work
mode) runs as often, and the speedup is the ratio of median wall times.  Wall
time is the strategy's whole ``run``: model build, process or rank start-up,
synchronisation and work, since that is what a user waits for.  Each cell is
also checked for correctness by its digest against the sequential run.

Configurations (issue: ``work_us >= 200``):

* ``tick-barrier`` with threads and ``work=gil-release`` (threads only overlap
  where the work releases the GIL);
* ``conservative`` with ``backend=threads`` (gil-release), ``processes`` and
  ``mpi`` (gil-hold: processes do not share a GIL), window sync, canonical order.

``--breakeven`` then sweeps ``work_us`` down a grid and reports, per
configuration, the smallest ``work_us`` at which the speedup reaches 1.0
(linear interpolation between grid points; "never" or "< min" otherwise).

Run:  ``.venv/bin/python bench/speedup.py [--repeat 3] [--breakeven] [--out results/speedup.json]``.
Nothing here is asserted: figures are for the closing note and bench/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from tickpar.runner import Cell, execute_isolated, resolve_cell, write_json_atomic

#: (label, workload, params) shapes with parallelism to find: many events per tick.
SHAPES: list[tuple[str, str, dict[str, Any]]] = [
    ("phold-g100", "phold", {"lps": 16, "population": 4, "granularity": 100, "end_tick": 16_000}),
    ("multicore-8", "multicore", {"cores": 8, "requests_per_core": 150}),
]


@dataclass(frozen=True)
class Config:
    label: str
    strategy: str
    options: dict[str, Any]
    work: str
    order: str = "gem5"


CONFIGS: list[Config] = [
    Config("tick-barrier/threads", "tick-barrier", {"executor": "threads"}, "gil-release"),
    Config("conservative/threads", "conservative", {"backend": "threads"}, "gil-release", "canonical"),
    Config("conservative/processes", "conservative", {"backend": "processes"}, "gil-hold", "canonical"),
    Config("conservative/mpi", "conservative", {"backend": "mpi"}, "gil-hold", "canonical"),
]


def _median_wall(cell: Cell, repeat: int, timeout: float) -> tuple[float, str, str]:
    """Median wall seconds over ``repeat`` fresh-process runs, the digest, and a failure kind ('' if none)."""
    walls = []
    digest = ""
    for _ in range(repeat):
        outcome = execute_isolated(cell, timeout)
        if outcome.record.failure is not None:
            return float("nan"), "", outcome.record.failure["kind"]
        walls.append(outcome.wall_s)
        digest = outcome.record.digest
    return statistics.median(walls), digest, ""


def measure(
    shape: tuple[str, str, dict[str, Any]], config: Config, work_us: float, repeat: int, seed: int, timeout: float
) -> dict[str, Any]:
    label, workload, params = shape
    params = {**params, "work_us": work_us}
    seq = resolve_cell(workload, params, "sequential", {}, 1, seed, config.order, config.work)
    par = resolve_cell(workload, params, config.strategy, config.options, 2, seed, config.order, config.work)
    seq_s, seq_digest, _ = _median_wall(seq, repeat, timeout)
    par_s, par_digest, failure = _median_wall(par, repeat, timeout)
    return {
        "shape": label,
        "config": config.label,
        "work": config.work,
        "order": config.order,
        "work_us": work_us,
        "sequential_s": seq_s,
        "parallel_s": par_s,
        "speedup": seq_s / par_s if par_s == par_s and par_s > 0 else float("nan"),
        "exact": (not failure) and par_digest == seq_digest,
        "failure": failure,
    }


def breakeven(points: list[tuple[float, float]]) -> str:
    """Smallest work_us where speedup reaches 1.0, interpolated on a grid sorted by work_us."""
    points = sorted(p for p in points if p[1] == p[1])
    if not points:
        return "n/a"
    if points[0][1] >= 1.0:
        return f"<= {points[0][0]:g}"
    for (w0, s0), (w1, s1) in itertools.pairwise(points):
        if s0 < 1.0 <= s1:
            return f"{w0 + (1.0 - s0) * (w1 - w0) / (s1 - s0):.0f}"
    return f"> {points[-1][0]:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs per cell (median)")
    parser.add_argument("--work-us", type=float, default=200.0, help="work per event for the main table")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--breakeven", action="store_true", help="also sweep work_us for the break-even point")
    parser.add_argument("--grid", default="0,10,30,100,200", help="work_us grid for --breakeven")
    parser.add_argument("--configs", default=",".join(c.label for c in CONFIGS), help="comma-separated labels")
    parser.add_argument("--shapes", default=",".join(s[0] for s in SHAPES), help="comma-separated labels")
    parser.add_argument("--timeout", type=float, default=300.0, help="per-run limit, seconds")
    parser.add_argument("--out", help="write all measurements as JSON")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat {args.repeat} is not allowed: an int >= 1")
    wanted = set(args.configs.split(","))
    configs = [c for c in CONFIGS if c.label in wanted]
    shapes = [s for s in SHAPES if s[0] in set(args.shapes.split(","))]
    if not configs or not shapes:
        parser.error("no configuration or shape selected: see --configs/--shapes defaults")
    if (os.cpu_count() or 1) < 2:
        print("warning: fewer than 2 cores; speedups will be below 1", file=sys.stderr)
    grid = sorted({float(x) for x in args.grid.split(",")} | {args.work_us}) if args.breakeven else [args.work_us]
    rows = []
    started = time.perf_counter()
    for shape in shapes:
        for config in configs:
            for work_us in grid:
                row = measure(shape, config, work_us, args.repeat, args.seed, args.timeout)
                rows.append(row)
                print(
                    f"{row['shape']:<12} {row['config']:<24} work_us={work_us:<6g} seq {row['sequential_s']:.3f} s  "
                    f"par {row['parallel_s']:.3f} s  speedup {row['speedup']:.2f}  "
                    f"{'exact' if row['exact'] else 'NOT exact ' + row['failure']}",
                    flush=True,
                )
    print(f"\nspeedup at work_us={args.work_us:g}, 2 workers ({time.perf_counter() - started:.0f} s):")
    for shape in shapes:
        for config in configs:
            main_row = next(
                r
                for r in rows
                if r["shape"] == shape[0] and r["config"] == config.label and r["work_us"] == args.work_us
            )
            line = f"  {shape[0]:<12} {config.label:<24} {main_row['speedup']:.2f}x"
            if args.breakeven:
                pts = [
                    (r["work_us"], r["speedup"]) for r in rows if r["shape"] == shape[0] and r["config"] == config.label
                ]
                line += f"   break-even work_us: {breakeven(pts)}"
            print(line)
    if args.out:
        write_json_atomic(args.out, {"rows": rows, "cores": os.cpu_count(), "created": time.strftime("%F %T")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
