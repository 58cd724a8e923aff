"""Conservative's adaptive schedule against the static one (issue #48): native engine, 2 workers, one run.

For each shape, native sequential, static conservative (window, one LP per worker) and adaptive conservative
(``schedule=adaptive``: up to 8 LPs per worker, handed out every window by their last window's cost, largest
first, idle workers stealing whole LPs) are replayed side by side, ``--repeats`` times (interleaved, static
and adaptive taking turns to go first: a machine's noise hits all three alike), each call at least
``--replays`` replays on the same threads, more where a replay is short, so that a call lasts at least
``--min-call-ms`` (its time: the mean loop per replay, ``loop_s``).  Every run is checked: no failure, and
its digests equal the sequential run's.  The loop speedup of each variant is the median sequential loop over
its median loop; the figure that decides is adaptive's over static's.

Shapes: ``moving`` (config/adaptive.yaml: phold with half of its sends to a hot group of 2 of 16 LPs that
moves one LP along every 4 windows) and the default sweep's balanced ``wide`` shapes (config/config.yaml:
phold and multicore), all at ``--work-us`` (default 1 µs per event).  The goals (issue #48), judged, never
asserted: on ``moving`` adaptive at least 1.3x static's loop speedup; on the balanced shapes within 5% of it.
Then the per-window imbalance of both variants on ``moving`` (per window, the busiest worker's busy time over
the mean: 1.0 is balanced, 2.0 one worker did everything), window by window, from the last repeat's call.

The machine's load average is printed before and after: on a shared machine the figures are provisional.
Usage::

    python bench/adaptive_lps.py [--work-us 1] [--repeats 5] [--replays 10] [--min-call-ms 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from tickpar.native.engine import engine_args, recorded
from tickpar.runner import resolve_cell

ROOT = Path(__file__).resolve().parent.parent
#: (label, config file, workload, shape): the moving load, then the balanced shapes.
SHAPES = [
    ("phold moving", "config/adaptive.yaml", "phold", "moving"),
    ("phold wide", "config/config.yaml", "phold", "wide"),
    ("multicore wide", "config/config.yaml", "multicore", "wide"),
]
VARIANTS = {"static": {"sync": "window"}, "adaptive": {"sync": "window", "schedule": "adaptive"}}
#: Issue #48's goals at 2 workers: adaptive over static on the moving load, and on the balanced shapes.
MOVING_GOAL = 1.3
BALANCED_GOAL = 0.95


def shape_params(config: str, workload: str, shape: str) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / config).read_text())
    try:
        return dict(data["workloads"][workload]["shapes"][shape])
    except (KeyError, TypeError):
        raise SystemExit(f"adaptive_lps.py: {config} has no {workload} shape {shape!r}") from None


def replay(tn: Any, dag: Any, cell: Any, replays: int) -> Any:
    """One call of ``replays`` replays; refuses a failed run."""
    args = engine_args(cell.spec, cell.strategy, cell.workers, cell.options)
    out = tn.run(dag, cell.strategy, cell.workers, replays=replays, **args)
    if out.failure is not None or out.races:
        raise SystemExit(f"adaptive_lps.py: {cell.strategy} {cell.options} failed: {out.failure or out.races[0]}")
    return out


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def measure(tn: Any, label: str, params: dict[str, Any], repeats: int, replays: int, min_call_s: float
            ) -> dict[str, Any]:  # fmt: skip
    workload = "multicore" if label.startswith("multicore") else "phold"
    seq = resolve_cell(workload, params, "sequential", {}, 1, 1, "canonical", engine="native")
    cells = {name: resolve_cell(workload, params, "conservative", options, 2, 1, "canonical", engine="native")
             for name, options in VARIANTS.items()}  # fmt: skip
    _rec, dag = recorded(seq.spec)
    once = min(float(replay(tn, dag, seq, 1).stats["loop_s"]) for _ in range(3))
    replays = max(replays, math.ceil(min_call_s / max(once, 1e-9)))
    times: dict[str, list[float]] = {"sequential": [], **{name: [] for name in VARIANTS}}
    last: dict[str, Any] = {}
    for repeat in range(repeats):
        s = replay(tn, dag, seq, replays)
        times["sequential"].append(float(s.stats["loop_s"]))
        turn = list(cells.items())
        for name, cell in turn if repeat % 2 == 0 else reversed(turn):
            out = replay(tn, dag, cell, replays)
            if list(out.digests) != list(s.digests):
                raise SystemExit(f"adaptive_lps.py: {label} {name}: digests differ from sequential's")
            times[name].append(float(out.stats["loop_s"]))
            last[name] = out.stats
    median = {name: statistics.median(values) for name, values in times.items()}
    result: dict[str, Any] = {"label": label, "params": params, "events": int(s.stats["executed"]),
                              "replays": replays, "sequential_ms": median["sequential"] * 1e3,
                              "times_s": times}  # fmt: skip
    for name in VARIANTS:
        st = last[name]
        result[name] = {
            "loop_ms": median[name] * 1e3,
            "loop_speedup": median["sequential"] / median[name],
            "lps": int(st["lps"]),
            "windows": int(st["windows"]),
            "reassignments_per_window": float(st["reassignments_per_window"]),
            "stolen_lps": int(st["stolen_lps"]),
            "imbalance_mean": float(st["imbalance_mean"]),
            "imbalance_loop": float(st["imbalance_loop"]),
            "imbalance_per_window": [float(x) for x in st["imbalance_per_window"]],
        }
    result["ratio"] = result["adaptive"]["loop_speedup"] / result["static"]["loop_speedup"]
    return result


def main(argv: list[str] | None = None) -> int:
    import tickpar_native as tn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work-us", type=float, default=1.0, help="work per event, microseconds (default 1)")
    ap.add_argument("--repeats", type=int, default=5, help="calls per variant (medians of these; default 5)")
    ap.add_argument("--replays", type=int, default=10, help="replays per call, at least (default 10)")
    ap.add_argument("--min-call-ms", type=float, default=20.0,
                    help="more replays where a call would be shorter than this (default 20 ms)")
    ap.add_argument("--json", help="also write every figure here")
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.replays < 1 or a.work_us < 0:
        ap.error(f"--repeats {a.repeats} and --replays {a.replays} must be >= 1, --work-us {a.work_us} >= 0")
    before = load_average()
    print(f"load average before: {before}")
    results = []
    for label, config, workload, shape in SHAPES:
        params = {**shape_params(config, workload, shape), "work_us": a.work_us}
        r = measure(tn, label, params, a.repeats, a.replays, a.min_call_ms / 1e3)
        results.append(r)
        goal = MOVING_GOAL if shape == "moving" else BALANCED_GOAL
        verdict = "met" if r["ratio"] >= goal else "NOT met"
        st, ad = r["static"], r["adaptive"]
        print(f"{label} ({r['events']} events, work_us={a.work_us:g}), 2 workers, medians of {a.repeats} x "
              f"{r['replays']} replays: sequential {r['sequential_ms']:.3f} ms; static {st['loop_speedup']:.2f}x "
              f"({st['lps']} LPs, imbalance mean {st['imbalance_mean']:.2f}, loop {st['imbalance_loop']:.2f}); "
              f"adaptive {ad['loop_speedup']:.2f}x ({ad['lps']} LPs, {ad['reassignments_per_window']:.1f} "
              f"reassignments and {ad['stolen_lps'] / max(1, ad['windows']):.1f} steals per window, imbalance "
              f"mean {ad['imbalance_mean']:.2f}, loop {ad['imbalance_loop']:.2f}); adaptive / static "
              f"{r['ratio']:.2f}  (goal >= {goal:g}: {verdict})")  # fmt: skip
    moving = results[0]
    print("per-window imbalance on phold moving (busiest worker's time over the mean; last call's first replay):")
    print(f"  {'window':>6} {'static':>7} {'adaptive':>8}")
    st_w, ad_w = moving["static"]["imbalance_per_window"], moving["adaptive"]["imbalance_per_window"]
    for i in range(max(len(st_w), len(ad_w))):
        a_s = f"{st_w[i]:.2f}" if i < len(st_w) else "-"
        a_a = f"{ad_w[i]:.2f}" if i < len(ad_w) else "-"
        print(f"  {i:>6} {a_s:>7} {a_a:>8}")
    after = load_average()
    print(f"load average after: {after}")
    if a.json:
        Path(a.json).write_text(json.dumps({"load_before": before, "load_after": after, "work_us": a.work_us,
                                            "repeats": a.repeats, "replays": a.replays, "shapes": results},
                                           indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
