"""The GIL's hand-off cost between two threads, where neither the GIL floor nor ``work_overlap`` sees it.

Each of two threads loops: hold the GIL for ``p`` µs (the ``gil-hold`` work model's pure-Python
loop, standing in for an event's engine and handler code), then make one ``gil-release`` work call
of ``r`` µs (a SHA-256 that drops the GIL). This is what a thread strategy's worker does per event
under the GIL. The prediction model (tickpar/perf/predict/prediction.py) prices such a run as the larger of
the per-thread work and the *GIL floor*, the sum of both threads' GIL-held parts
(``max(p + r, 2 p)`` per iteration here). Its ``work_overlap`` calibration times two threads that
both only hash, so it never measures a thread that must take the GIL back from one running Python.

Printed per ``(p, r)``: the time per iteration alone and beside the second thread, the model's floor
``max(p + r, 2 p)``, and the excess over it per iteration: about one wake-up of the waiting thread per
hand-off (a futex wake of a halted vCPU), which the calibration now prices as ``gil_handoff``
(docs/measurements/2026-12-03-gil-handoff.md has the figures). Usage::

    python bench/gil_handoff.py [--pairs 5:10,10:10,20:10,10:30,20:30,10:100,20:100,30:300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import threading
import time

from tickpar.kernel.work import make_work

DEFAULT_PAIRS = "5:10,10:10,20:10,10:30,20:30,10:100,20:100,30:300"


def _loop(hold, work, p_us: float, r_us: float, n: int) -> None:
    for _ in range(n):
        hold(p_us)
        work(r_us)


def per_iteration(p_us: float, r_us: float, n: int, threads: int, repeats: int) -> float:
    """Best of ``repeats``: wall seconds per iteration of one thread, with ``threads`` threads looping at once."""
    work, _ = make_work("gil-release")
    hold, _ = make_work("gil-hold")  # the work model's own calibrated pure-Python loop
    best = float("inf")
    for _ in range(repeats):
        others = [threading.Thread(target=_loop, args=(hold, work, p_us, r_us, n)) for _ in range(threads - 1)]
        started = time.perf_counter()
        for t in others:
            t.start()
        _loop(hold, work, p_us, r_us, n)
        for t in others:
            t.join()
        best = min(best, (time.perf_counter() - started) / n)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", default=DEFAULT_PAIRS, help="p:r pairs in µs (GIL held, then GIL released)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    try:
        pairs = [tuple(float(x) for x in pair.split(":")) for pair in args.pairs.split(",")]
        if any(len(pair) != 2 or min(pair) <= 0 for pair in pairs):
            raise ValueError
    except ValueError:
        raise SystemExit(f"--pairs {args.pairs!r}: comma-separated p:r pairs of positive µs, e.g. 10:30") from None
    print(f"{'p us':>5} {'r us':>6} {'alone us':>9} {'beside us':>10} {'floor us':>9} {'excess us':>10}")
    for p, r in pairs:
        n = max(50, int(100_000 / (p + r)))
        alone = per_iteration(p, r, n, 1, args.repeats)
        beside = per_iteration(p, r, n, 2, args.repeats)
        floor = max(alone, alone - r * 1e-6 + p * 1e-6)  # max(p + r, 2 p), with this machine's own p + r
        us = [x * 1e6 for x in (alone, beside, floor, beside - floor)]
        print(f"{p:5.0f} {r:6.0f} {us[0]:9.1f} {us[1]:10.1f} {us[2]:9.1f} {us[3]:10.1f}")


if __name__ == "__main__":
    main()
