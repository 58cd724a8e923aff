"""Native engine speed: sequential events/s at work 0 on a large multicore cell, and at ``work_us`` (default 1)
the best exact native strategy at 2 workers against native sequential on the sweep's ``wide`` shapes.

Each figure is the median of ``--repeats`` replays (the loop alone, ``loop_s``), one recorded DAG per shape,
sequential and parallel runs interleaved (side by side).  Usage::

    python bench/native_speedup.py [--work-us 1] [--repeats 3] [--big-cores 32 --big-requests 1500]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import yaml

from tickpar.native.engine import engine_args, recorded
from tickpar.runner import resolve_cell

VARIANTS = [  # (strategy, options, order)
    ("tick-barrier", {"lock_key": "component"}, "gem5"),
    ("conservative", {"sync": "window"}, "canonical"),
    ("quantum", {"quantum_ratio": 1}, "canonical"),
]


def loop_s(tn, dag, spec, strategy, workers, options):
    args = engine_args(spec, strategy, workers, options)
    out = tn.run(dag, strategy, workers, **args)
    assert out.failure is None, out.failure
    return out.stats["loop_s"], out


def main() -> None:
    import tickpar_native as tn

    ap = argparse.ArgumentParser()
    ap.add_argument("--work-us", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--big-cores", type=int, default=32)
    ap.add_argument("--big-requests", type=int, default=1500)
    a = ap.parse_args()
    config = yaml.safe_load(Path(__file__).resolve().parent.parent.joinpath("config/config.yaml").read_text())
    big = resolve_cell("multicore", {"cores": a.big_cores, "requests_per_core": a.big_requests}, "sequential", {}, 1, 1)
    _rec, dag = recorded(big.spec)
    rates = []
    for _ in range(max(a.repeats, 5)):
        t, out = loop_s(tn, dag, big.spec, "sequential", 1, {})
        rates.append(out.stats["executed"] / t)
    print(f"native sequential, multicore cores={a.big_cores} requests_per_core={a.big_requests}, work 0: "
          f"{int(out.stats['executed'])} events, median {statistics.median(rates) / 1e6:.2f} M events/s, "
          f"best {max(rates) / 1e6:.2f} M events/s")
    for workload, wconf in config["workloads"].items():
        params = dict(wconf["shapes"]["wide"], work_us=a.work_us)
        results = []
        for strategy, options, order in VARIANTS:
            seq = resolve_cell(workload, params, "sequential", {}, 1, 1, order)
            cell = resolve_cell(workload, params, strategy, options, 2, 1, order, engine="native")
            _rec, dag = recorded(cell.spec)
            ts, tp = [], []
            for _ in range(a.repeats):
                ts.append(loop_s(tn, dag, seq.spec, "sequential", 1, {})[0])
                tp.append(loop_s(tn, dag, cell.spec, strategy, 2, cell.options)[0])
            sp = statistics.median(ts) / statistics.median(tp)
            results.append((sp, strategy, order, statistics.median(ts), statistics.median(tp)))
            print(f"  {workload} wide work_us={a.work_us}: {strategy} ({order}) 2 workers: sequential "
                  f"{statistics.median(ts) * 1e3:.3f} ms, parallel {statistics.median(tp) * 1e3:.3f} ms, {sp:.2f}x")
        best = max(results)
        print(f"{workload} wide: best exact native strategy at 2 workers: {best[1]} ({best[2]}) {best[0]:.2f}x")


if __name__ == "__main__":
    main()
