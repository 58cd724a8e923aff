"""The native engine at gem5's event costs: its floors, its sequential speed and its 2-worker loop speedups.

1. The floors and costs, from the engine's own calibration (``tickpar calibrate``'s figures): a cache line's
   round trip between two pinned threads (``pingpong_ns``), each sync cost as a multiple of it, and the
   replay's cost per event (``event_ns``) beside a plain binary heap's pop + push (``heap_ns``).
2. Native sequential events/s at work 0 on a large multicore cell.
3. At ``--work-us`` (default 0.3) on the sweep's ``wide`` shapes: tick-barrier, conservative (windows; the
   static schedule, then ``schedule=adaptive``) and quantum at 2 workers against native sequential, each the
   median of ``--repeats`` calls, sequential and parallel interleaved (side by side).  A call replays the
   recorded DAG ``--replays`` times on the same threads (``tickpar_native.run(replays=...)``) and its time is
   the mean loop per replay (``loop_s``), so a sample lasts milliseconds, not the 0.1-0.4 ms of one replay.
   Every run is checked: it must not fail and its digests must equal the sequential run's.

The goals (issue #38) are printed beside the figures, judged, never asserted: on a shared machine a figure
moves from run to run.  Usage::

    python bench/native_speedup.py [--work-us 0.3] [--repeats 5] [--replays 20] [--big-cores 32 --big-requests 1500]

``--before DIR`` instead compares two builds of the engine in one run (issue #49: sequential and tick-barrier on
the public API must keep their loop speedups within 5%): DIR holds a ``tickpar_native`` package built from an
earlier commit (``git worktree add /tmp/before REV && pip install --no-deps --target DIR /tmp/before/native``).
Rounds alternate between the two builds, each round a fresh process that replays sequential and tick-barrier (2
workers) on each wide shape at ``--work-us``; it prints, per shape and build, the median sequential loop and
tick-barrier's loop speedup over the rounds, and after/before::

    python bench/native_speedup.py --before /tmp/native-before [--rounds 6] [--work-us 0.3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tickpar.native.engine import calibrate, engine_args, recorded, tick_barrier_handoff
from tickpar.perf.predict.costs import calibration_figures
from tickpar.runner import resolve_cell

VARIANTS = [  # (strategy, options, order)
    ("tick-barrier", {"lock_key": "component"}, "gem5"),
    ("conservative", {"sync": "window"}, "canonical"),
    ("conservative", {"sync": "window", "schedule": "adaptive"}, "canonical"),  # issue #48: LPs handed out per window
    ("quantum", {"quantum_ratio": 1}, "canonical"),
]

#: Issue #38's targets at 2 workers on each workload's wide shape: {work_us: (best exact strategy, tick-barrier)}.
GOALS: dict[float, tuple[float, float | None]] = {0.3: (1.5, 1.2), 0.1: (1.3, None)}
#: Issue #38: native sequential events/s at work 0 on the large multicore cell.
SEQUENTIAL_GOAL_EPS = 15e6


def replay(tn: Any, dag: Any, spec: Any, strategy: str, workers: int, options: dict[str, Any], replays: int) -> Any:
    """One call of ``replays`` replays; refuses a failed run."""
    out = tn.run(dag, strategy, workers, replays=replays, **engine_args(spec, strategy, workers, options))
    if out.failure is not None or out.races:
        raise SystemExit(f"native_speedup.py: {strategy} failed: {out.failure or out.races[0]}")
    return out


def judged(value: float, goal: float | None) -> str:
    return "" if goal is None else f"  (goal >= {goal:g}x: {'met' if value >= goal else 'NOT met'})"


def one_round(work_us: float, repeats: int, replays: int) -> dict[str, dict[str, float]]:
    """Per wide shape: the median sequential loop and tick-barrier's (2 workers), seconds, with this process's
    engine (what ``--round`` prints for ``--before``)."""
    import tickpar_native as tn

    config = yaml.safe_load(Path(__file__).resolve().parent.parent.joinpath("config/config.yaml").read_text())
    out: dict[str, dict[str, float]] = {}
    for workload, wconf in config["workloads"].items():
        if "wide" not in (wconf.get("shapes") or {}):
            continue
        params = dict(wconf["shapes"]["wide"], work_us=work_us)
        seq = resolve_cell(workload, params, "sequential", {}, 1, 1, "gem5", engine="native")
        cell = resolve_cell(workload, params, "tick-barrier", {"lock_key": "component"}, 2, 1, "gem5", engine="native")
        _rec, dag = recorded(cell.spec)
        ts, tp = [], []
        for _ in range(repeats):
            s = replay(tn, dag, seq.spec, "sequential", 1, {}, replays)
            p = replay(tn, dag, cell.spec, "tick-barrier", 2, cell.options, replays)
            if list(p.digests) != list(s.digests):
                raise SystemExit(f"native_speedup.py: {workload} tick-barrier: digests differ from sequential's")
            ts.append(s.stats["loop_s"])
            tp.append(p.stats["loop_s"])
        out[workload] = {"sequential_s": statistics.median(ts), "tick_barrier_s": statistics.median(tp)}
    return out


def compare_builds(before: str, rounds: int, work_us: float, repeats: int, replays: int) -> None:
    """Alternate rounds (fresh processes) between the engine in ``before`` and this one; print the medians."""
    if not Path(before, "tickpar_native", "__init__.py").is_file():
        raise SystemExit(f"native_speedup.py: --before {before}: no tickpar_native package there")
    builds = {"before": before, "after": None}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"before": [], "after": []}
    for i in range(rounds):
        for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
            env = dict(os.environ)
            if builds[name] is not None:
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [builds[name], env.get("PYTHONPATH", "")]))
            argv = [sys.executable, __file__, "--round", "--work-us", str(work_us), "--repeats", str(repeats),
                    "--replays", str(replays)]  # fmt: skip
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"native_speedup.py: a {name} round failed: {done.stderr.strip()[-300:]}")
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"{rounds} rounds per build, alternating, work_us={work_us}, {repeats} calls x {replays} replays per "
          "figure (tick-barrier by component, 2 workers, gem5 order)")  # fmt: skip
    for workload in runs["after"][0]:
        figures = {}
        for name in ("before", "after"):
            seq = statistics.median(r[workload]["sequential_s"] for r in runs[name])
            speedups = [r[workload]["sequential_s"] / r[workload]["tick_barrier_s"] for r in runs[name]]
            figures[name] = (seq, statistics.median(speedups))
            print(f"  {workload} wide, {name:6s}: sequential loop {seq * 1e3:.3f} ms, tick-barrier loop speedup "
                  f"{figures[name][1]:.3f}x (rounds {min(speedups):.3f}-{max(speedups):.3f})")  # fmt: skip
        (sb, pb), (sa, pa) = figures["before"], figures["after"]
        print(f"  {workload} wide, after/before: sequential loop {sa / sb:.3f}, tick-barrier loop speedup "
              f"{pa / pb:.3f}  (goal: within 5%: {'met' if abs(pa / pb - 1) <= 0.05 else 'NOT met'})")


def main() -> None:
    import tickpar_native as tn

    ap = argparse.ArgumentParser()
    ap.add_argument("--work-us", type=float, default=0.3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--replays", type=int, default=20, help="replays per call (1: the single replay of older runs)")
    ap.add_argument("--big-cores", type=int, default=32)
    ap.add_argument("--big-requests", type=int, default=1500)
    ap.add_argument("--no-calibration", action="store_true", help="skip the floors (about 3 s)")
    ap.add_argument("--before", help="compare with the tickpar_native package in this folder (module docstring)")
    ap.add_argument("--rounds", type=int, default=6, help="with --before: rounds per build (fresh processes)")
    ap.add_argument("--round", action="store_true", help=argparse.SUPPRESS)  # one round, JSON on stdout
    a = ap.parse_args()
    if a.repeats < 1 or a.replays < 1 or a.rounds < 1:
        raise SystemExit(f"native_speedup.py: --repeats {a.repeats}, --replays {a.replays} and --rounds {a.rounds} "
                         "must be >= 1")  # fmt: skip
    if a.round:
        print(json.dumps(one_round(a.work_us, a.repeats, a.replays)))
        return
    if a.before:
        compare_builds(a.before, a.rounds, a.work_us, a.repeats, a.replays)
        return

    if not a.no_calibration:
        cal = calibrate(0.5)
        print("floors and costs (tickpar calibrate, budget 0.5):")
        for key, text in calibration_figures(cal):
            print(f"  {key:12s} {text}")
    per_batch, per_event = tick_barrier_handoff()
    print(f"tick-barrier hands a bin out when its work saves more than {per_batch:.0f} ns + {per_event:.1f} ns per "
          "event (this process's fit)")  # fmt: skip

    config = yaml.safe_load(Path(__file__).resolve().parent.parent.joinpath("config/config.yaml").read_text())
    big = resolve_cell("multicore", {"cores": a.big_cores, "requests_per_core": a.big_requests}, "sequential", {}, 1, 1)
    _rec, dag = recorded(big.spec)
    rates = []
    for _ in range(max(a.repeats, 5)):
        out = replay(tn, dag, big.spec, "sequential", 1, {}, 1)
        rates.append(out.stats["executed"] / out.stats["loop_s"])
    seq_eps = statistics.median(rates)
    print(f"native sequential, multicore cores={a.big_cores} requests_per_core={a.big_requests}, work 0: "
          f"{int(out.stats['executed'])} events, median {seq_eps / 1e6:.2f} M events/s, "
          f"best {max(rates) / 1e6:.2f} M events/s  (goal >= {SEQUENTIAL_GOAL_EPS / 1e6:g} M: "
          f"{'met' if seq_eps >= SEQUENTIAL_GOAL_EPS else 'NOT met'})")  # fmt: skip

    best_goal, tb_goal = GOALS.get(a.work_us, (None, None))
    for workload, wconf in config["workloads"].items():
        if "wide" not in (wconf.get("shapes") or {}):  # e.g. gem5trace: a shape per gem5 run, none of them wide
            continue
        params = dict(wconf["shapes"]["wide"], work_us=a.work_us)
        results = []
        for strategy, options, order in VARIANTS:
            seq = resolve_cell(workload, params, "sequential", {}, 1, 1, order, engine="native")
            cell = resolve_cell(workload, params, strategy, options, 2, 1, order, engine="native")
            _rec, dag = recorded(cell.spec)
            ts, tp = [], []
            for _ in range(a.repeats):
                s = replay(tn, dag, seq.spec, "sequential", 1, {}, a.replays)
                p = replay(tn, dag, cell.spec, strategy, 2, cell.options, a.replays)
                if list(p.digests) != list(s.digests):
                    raise SystemExit(f"native_speedup.py: {workload} {strategy}: digests differ from sequential's")
                ts.append(s.stats["loop_s"])
                tp.append(p.stats["loop_s"])
            sp = statistics.median(ts) / statistics.median(tp)
            name = strategy + (" adaptive" if options.get("schedule") == "adaptive" else "")
            results.append((sp, name, order))
            extra = ""
            if strategy == "tick-barrier":
                st = p.stats
                extra = (f" [{st['parallel_batches']:.0f} bins out, {st['small_batches']:.0f} kept serial]"
                         + judged(sp, tb_goal))  # fmt: skip
            print(f"  {workload} wide work_us={a.work_us}: {name} ({order}) 2 workers: sequential "
                  f"{statistics.median(ts) * 1e3:.3f} ms, parallel {statistics.median(tp) * 1e3:.3f} ms, "
                  f"{sp:.2f}x{extra}")  # fmt: skip
        best = max(results)
        print(f"{workload} wide: best exact native strategy at 2 workers: {best[1]} ({best[2]}) {best[0]:.2f}x"
              + judged(best[0], best_goal))


if __name__ == "__main__":
    main()
