"""Machine instructions per PHOLD event, counted by valgrind: a noise-free companion to bench/engine.py.

Wall-clock figures on a shared 2-vCPU VM move by tens of percent from one
minute to the next; instruction counts do not (they are exact and repeat to a
few instructions per event).  For each implementation this runs one simulation
to ``end_tick / 2`` and one to ``end_tick`` under ``valgrind --tool=cachegrind``
and divides the difference in instructions by the difference in events, so
interpreter start-up, imports and model building cancel out and what is left is
the steady-state cost of one event.  With ``--cache-sim`` it also reports
simulated L1 data-cache misses per event.

    .venv/bin/python bench/instructions.py                 # the engine.py defaults, ~2 minutes
    .venv/bin/python bench/instructions.py --impl tickpar_sequential,heapq_bare --cache-sim

Instructions are not time (cache misses and branch mispredictions are not in
them), so read the ratios as the engine-overhead part of engine.py's ratios.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from phold_baselines import DEFAULT_SEED, IMPLEMENTATIONS, PholdParams

_COUNTERS = {"I": re.compile(r"I\s+refs:\s+([\d,]+)"), "D1": re.compile(r"D1\s+misses:\s+([\d,]+)")}
QUICKEN_RUNS = 10
QUICKEN_PARAMS = PholdParams(lps=4, population=2, end_tick=200)


def child(name: str, params: PholdParams, seed: int, cold: bool) -> None:
    """Run one simulation (after the same code warm-up as engine.py) and print its event count."""
    simulate = IMPLEMENTATIONS[name]
    if not cold:
        for _ in range(QUICKEN_RUNS):
            simulate(QUICKEN_PARAMS, seed)
    print(json.dumps({"events": simulate(params, seed).events}))


def parse_counters(valgrind_stderr: str) -> dict[str, int]:
    """The counters cachegrind printed (``I`` always, ``D1`` with the cache simulation)."""
    found = {}
    for key, pattern in _COUNTERS.items():
        match = pattern.search(valgrind_stderr)
        if match:
            found[key] = int(match.group(1).replace(",", ""))
    if "I" not in found:
        raise RuntimeError("no instruction count in valgrind's output:\n" + valgrind_stderr[-1000:])
    return found


def measure(name: str, params: PholdParams, seed: int, cold: bool, cache_sim: bool) -> dict[str, float]:
    """Per-event instructions (and D1 misses) of ``name``: the difference of a half-length and a full run."""
    runs = []
    for end_tick in (max(1, params.end_tick // 2), params.end_tick):
        p = replace(params, end_tick=end_tick)
        cmd = [
            "valgrind",
            "--tool=cachegrind",
            f"--cache-sim={'yes' if cache_sim else 'no'}",
            "--cachegrind-out-file=/dev/null",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            name,
            *_param_args(p),
            "--seed",
            str(seed),
            *(["--cold"] if cold else []),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        counters = parse_counters(done.stderr)
        counters["events"] = json.loads(done.stdout.strip().splitlines()[-1])["events"]
        runs.append(counters)
    events = runs[1]["events"] - runs[0]["events"]
    if events <= 0:
        raise SystemExit(f"{name}: no more events in the full run than in the half run (raise --end-tick)")
    return {key: (runs[1][key] - runs[0][key]) / events for key in runs[1] if key != "events"} | {"events": events}


def _param_args(params: PholdParams) -> list[str]:
    return [
        "--lps",
        str(params.lps),
        "--population",
        str(params.population),
        "--remote",
        str(params.remote),
        "--lookahead",
        str(params.lookahead),
        "--mean",
        str(params.mean),
        "--end-tick",
        str(params.end_tick),
    ]


def main(argv: list[str] | None = None) -> int:
    d = PholdParams()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lps", type=int, default=d.lps)
    parser.add_argument("--population", type=int, default=d.population)
    parser.add_argument("--remote", type=float, default=d.remote)
    parser.add_argument("--lookahead", type=int, default=d.lookahead)
    parser.add_argument("--mean", type=float, default=d.mean)
    parser.add_argument("--end-tick", type=int, default=d.end_tick)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--impl", default="tickpar_sequential,simpy_callbacks,heapq_bare")
    parser.add_argument("--cold", action="store_true", help="no code warm-up (see engine.py)")
    parser.add_argument("--cache-sim", action="store_true", help="also count simulated L1 data-cache misses")
    parser.add_argument("--child", metavar="IMPL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    params = PholdParams(args.lps, args.population, args.remote, args.lookahead, args.mean, args.end_tick)
    if args.child:
        child(args.child, params, args.seed, args.cold)
        return 0
    if shutil.which("valgrind") is None:
        print("instructions.py needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    names = list(IMPLEMENTATIONS) if args.impl == "all" else [n.strip() for n in args.impl.split(",")]
    unknown = [n for n in names if n not in IMPLEMENTATIONS]
    if unknown:
        print(f"unknown --impl {unknown}: choose from {', '.join(IMPLEMENTATIONS)}", file=sys.stderr)
        return 2
    print(f"PHOLD {params.describe()} seed={args.seed} code warm-up: {'no' if args.cold else 'yes'}")
    print(f"{'implementation':<20} {'instr/event':>12} {'D1 miss/event':>14}")
    results = {}
    for name in names:
        results[name] = r = measure(name, params, args.seed, args.cold, args.cache_sim)
        d1 = f"{r['D1']:.1f}" if "D1" in r else "-"
        print(f"{name:<20} {r['I']:>12,.0f} {d1:>14}", flush=True)
    tp = results.get("tickpar_sequential")
    if tp:
        for other in ("simpy_callbacks", "simpy_process", "heapq_bare"):
            if other in results:
                print(f"instructions {other}/tickpar: {results[other]['I'] / tp['I']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
