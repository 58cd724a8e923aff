"""The search of ``tickpar trace-fit``: the workload shape whose profile is nearest to a trace's.

:func:`fit_profile` searches the workload's :class:`SearchSpace` (:mod:`tickpar.gem5.fit.space`) in
two deterministic phases:

1. **grid**: every point of the coarse grid, in a fixed order;
2. **coordinate descent** from the grid's best point: each round tries, for every free parameter, the
   rung just below and just above its current value on its ladder, and moves to the best of those
   if it is nearer than the current point (ties: the first in axis order); it stops when no
   neighbour is nearer (``converged``) or when ``max_candidates`` runs are spent (``budget``).

A candidate is the workload run at the point's parameters, plus the fixed ones and the run length
for about ``max_events`` events (at most the trace's), with seed ``seed``, emitted as a stock trace,
imported and profiled (:func:`tickpar.gem5.profile.profile_workload`): the trace's own method.  Its
distance to the trace is :func:`tickpar.gem5.fit.statistics.distance`.  The fitted shape is the
nearest candidate, at the run length it was measured at: a synthetic run is not stationary (its
available parallelism and events per tick drift as it grows: docs/measurements/2026-12-06-trace-fit.md),
so a shape is only claimed at the length that was profiled.  Candidates run ``jobs`` at a time in
worker processes; each is deterministic, so the result does not depend on ``jobs`` or on timing.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from tickpar.gem5.fit.output import percent, shape_name
from tickpar.gem5.fit.space import SPACES, SearchSpace
from tickpar.gem5.fit.statistics import STATISTICS, TOLERANCE, Statistic, compare, distance, statistic_values

__all__ = [
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_EVENTS",
    "FitError",
    "fit_profile",
]

DEFAULT_MAX_CANDIDATES = 200
DEFAULT_MAX_EVENTS = 20_000
#: Why a statistic is out of the workload's reach by construction (beyond what the search found).
STRUCTURAL = {
    ("multicore", "zero_delay_cross_share"): (
        "multicore's components talk only over links of link_latency >= 1 tick, and its same-tick port calls "
        "(direct_calls) are calls, not events: it never schedules onto another component at delay 0"
    ),
}


class FitError(ValueError):
    """Bad input to the fit (an unknown workload, a bad budget, a bad fixed parameter)."""


Progress = Callable[[str], None]


def _stderr(line: str) -> None:
    print(f"trace-fit: {line}", file=sys.stderr, flush=True)


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True)


def _evaluate(job: tuple[str, dict[str, Any], int]) -> dict[str, Any]:
    """Profile one candidate (in a worker process): its statistics, its profile, or the error it raised."""
    from tickpar.gem5.profile import profile_workload

    workload, params, seed = job
    try:
        profile = profile_workload(workload, params, seed)
    except Exception as exc:  # a candidate the workload refuses is far away, not the end of the search
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"profile": profile}


class _Search:
    """The candidates evaluated so far (by parameters), what they are measured against, the budget, and the pool
    that runs them."""

    def __init__(self, space: SearchSpace, fixed: dict[str, Any], seed: int, events: int,
                 reference: dict[str, float | None], max_candidates: int, jobs: int,
                 progress: Progress | None) -> None:  # fmt: skip
        self.space, self.fixed, self.seed, self.events, self.reference = space, fixed, seed, events, reference
        self.max_candidates, self.progress = max_candidates, progress
        self.seen: dict[str, dict[str, Any]] = {}
        self.order: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.best = math.inf
        ctx = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None
        self.pool = ProcessPoolExecutor(jobs, mp_context=ctx) if jobs > 1 else None

    def params(self, point: dict[str, Any]) -> dict[str, Any]:
        """A point's run: its parameters, the pinned ones, and the run length for about ``events`` events."""
        every = {**point, **self.fixed}
        length = {k: v for k, v in self.space.run_length(every, self.events).items() if k not in self.fixed}
        return {**every, **length}

    def evaluate(self, points: list[dict[str, Any]], phase: str) -> list[dict[str, Any]]:
        """The candidates of ``points``, in their order: those run before are free, new ones run while the
        budget lasts (a point left out for want of budget is missing from the list)."""
        todo: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        for point in points:
            params = self.params(point)
            if _key(params) not in self.seen:
                todo.setdefault(_key(params), (point, params))
        batch = list(todo.values())[: max(self.max_candidates - len(self.order), 0)]
        jobs = [(self.space.workload, params, self.seed) for _, params in batch]
        results = self.pool.map(_evaluate, jobs) if self.pool else map(_evaluate, jobs)
        for (point, params), result in zip(batch, results, strict=True):
            self._record(point, params, phase, result)
        keys = [_key(self.params(p)) for p in points]
        return [self.seen[k] for k in dict.fromkeys(keys) if k in self.seen]

    def _record(self, point: dict[str, Any], params: dict[str, Any], phase: str, result: dict[str, Any]) -> None:
        profile = result.get("profile")
        stats = statistic_values(profile) if profile else {}
        cand = {
            "index": len(self.order),
            "phase": phase,
            "point": point,
            "params": params,
            "distance": distance(self.reference, stats) if profile else math.inf,
            "events": profile["events"] if profile else 0,
            "statistics": stats,
            "error": result.get("error"),
            "_profile": profile,
        }
        self.seen[_key(params)] = cand
        self.order.append(cand)
        self.best = min(self.best, cand["distance"])
        if self.progress:
            what = f"error {cand['error']}" if cand["error"] else f"distance {cand['distance']:.3f}"
            self.progress(
                f"[{len(self.order):>3}/{self.max_candidates}] {phase:>7} {_short(point)}"
                f" ({cand['events']:,} events): {what}, best {self.best:.3f}, {time.monotonic() - self.started:.0f} s"
            )

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown()


def _short(point: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items())


def _descend(search: _Search, start: dict[str, Any]) -> tuple[dict[str, Any], int, str]:
    """Coordinate descent from ``start``: returns the final candidate, the moves made and why it stopped."""
    current = start
    moves = 0
    axes = search.space.free(search.fixed)
    while True:
        neighbours = []
        for axis in axes:
            for value in axis.neighbours(current["point"][axis.name]):
                neighbours.append({**current["point"], axis.name: value})
        if not neighbours:
            return current, moves, "converged"
        done = search.evaluate(neighbours, "descent")
        best = min(done, key=lambda c: c["distance"], default=None)  # min keeps the first of equals
        if best is not None and best["distance"] < current["distance"] - 1e-12:
            current = best
            moves += 1
            continue
        return current, moves, "budget" if len(done) < len(neighbours) else "converged"


def _closest(stat: Statistic, trace: float | None, candidates: list[dict[str, Any]]) -> str:
    """What the search found nearest on ``stat`` alone, as a clause."""
    closest = None
    for cand in candidates:
        rel = stat.relative_difference(trace, cand["statistics"].get(stat.name))
        if rel is not None and (closest is None or abs(rel) < abs(closest[0])):
            closest = (rel, cand["point"])
    if closest is not None and abs(closest[0]) <= TOLERANCE:
        return (
            f"a searched shape reaches it alone ({percent(closest[0])} at {_short(closest[1])}) but not together "
            "with the other statistics: the distance traded it for them"
        )
    nearest = percent(closest[0]) if closest else "none"
    return f"no searched shape comes within {TOLERANCE:.0%} of it (the nearest: {nearest})"


def _unreached(workload: str, rows: list[dict[str, Any]], candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The statistics more than TOLERANCE off, each with how far and why (as far as the search can tell)."""
    out = []
    stats = {s.name: s for s in STATISTICS}
    zero = next((r for r in rows if r["name"] == "zero_delay_cross_share"), {})
    for row in rows:
        if row["reached"]:
            continue
        s = stats[row["name"]]
        why = STRUCTURAL.get((workload, s.name))
        if why is None:
            why = _closest(s, row["trace"], candidates)
            coupled = (zero.get("trace") or 0) > 0 and not zero.get("fitted")
            if s.name.startswith("conservative") and (row["relative_difference"] or 0) > 0 and coupled:
                why = (
                    f"the trace makes {zero['trace']:.1%} of its schedules onto other components at delay 0; the "
                    f"bound merges each pair so coupled into one logical process, which lowers it, and {workload} "
                    f"makes no such schedules; {why}"
                )
        out.append({"name": s.name, "label": s.label, "relative_difference": row["relative_difference"], "why": why})
    return out


def _check(workload: str, max_candidates: int, max_events: int, jobs: int) -> None:
    if workload not in SPACES:
        raise FitError(f"--workload {workload!r} is not allowed: trace-fit searches {', '.join(sorted(SPACES))}")
    for flag, value, least in (("--max-candidates", max_candidates, 1), ("--max-events", max_events, 100),
                               ("--jobs", jobs, 1)):  # fmt: skip
        if value < least:
            raise FitError(f"{flag} {value} is not allowed: an int >= {least}")


def fit_profile(
    trace_profile: dict[str, Any],
    workload: str = "multicore",
    *,
    fixed: dict[str, Any] | None = None,
    seed: int = 1,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    max_events: int = DEFAULT_MAX_EVENTS,
    jobs: int = 1,
    name: str | None = None,
    progress: Progress | None = _stderr,
) -> dict[str, Any]:
    """Search ``workload``'s shapes for the profile nearest ``trace_profile``; the whole result, JSON-ready.

    ``fixed``: parameters pinned (left out of the search, given to every candidate); ``max_events``:
    about how many events a candidate runs (at most the trace's); ``name``: the fitted shape's name
    (default ``fit-<trace file stem>``); ``progress``: called with a line per candidate (None:
    quiet).  The result's keys are listed in docs/reference/cli.md (``trace-fit``).
    """
    from tickpar.kernel.params import ParamError, resolve
    from tickpar.plugins.registry import get_registry

    _check(workload, max_candidates, max_events, jobs)
    space = SPACES[workload]
    cls = get_registry().workload(workload)
    try:
        resolved = resolve(cls.params, fixed or {}, f"workload {workload} parameter")
    except ParamError as exc:
        raise FitError(str(exc)) from None
    pinned = {k: resolved[k] for k in (fixed or {})}
    trace_stats = statistic_values(trace_profile)
    events = max(100, min(max_events, int(trace_profile["events"])))
    started = time.monotonic()
    search = _Search(space, pinned, seed, events, trace_stats, max_candidates, jobs, progress)
    try:
        grid = list(space.grid(pinned))
        search.evaluate(grid, "grid")
        start = min(search.order, key=lambda c: c["distance"])  # min keeps the first of equals
        best, moves, stopped = _descend(search, start)
    finally:
        search.close()
    if math.isinf(best["distance"]):
        raise FitError(f"every candidate failed: the first error was {search.order[0]['error']}")
    rows = compare(trace_stats, best["statistics"])
    fitted = dict(best["_profile"])
    candidates = [{k: v for k, v in c.items() if k != "_profile"} for c in search.order]
    order = [a.name for a in space.axes] + list(space.length_params) + list(pinned)
    shape = {k: best["params"][k] for k in dict.fromkeys(order) if k in best["params"]}
    return {
        "trace": trace_profile.get("trace"),
        "name": name or shape_name(trace_profile.get("trace")),
        "workload": workload,
        "seed": seed,
        "shape": shape,
        "params": fitted.get("params", best["params"]),
        "distance": best["distance"],
        "tolerance": TOLERANCE,
        "statistics": rows,
        "unreached": _unreached(workload, rows, candidates),
        "search": {
            "method": "grid, then coordinate descent",
            "fixed": pinned,
            "axes": {a.name: list(a.ladder) for a in space.free(pinned)},
            "grid_axes": {a.name: list(a.grid) for a in space.free(pinned) if a.grid},
            "max_candidates": max_candidates,
            "events": events,
            "grid_points": len(grid),
            "evaluated": len(search.order),
            "descent_moves": moves,
            "stopped": stopped,
            "seconds": round(time.monotonic() - started, 1),
            "candidates": candidates,
        },
        "trace_profile": trace_profile,
        "fitted_profile": fitted,
    }
