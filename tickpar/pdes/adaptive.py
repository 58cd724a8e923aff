"""The partition of ``conservative``'s ``schedule=adaptive``: many small LPs, handed to the workers every window.

``schedule=static`` (the default) runs one LP per worker, partitioned before the run
(:func:`tickpar.pdes.plan.make_plan` with ``parts = workers``).  ``schedule=adaptive`` (the native engine,
``native/src/adaptive.hpp``) partitions the model into ``K >= P`` LPs and, every window, hands them to the
``P`` workers by the time each took in the previous window, largest first (LPT), idle workers stealing
whole LPs, as Unison (EuroSys'24) does for ns-3.  This module makes its partition (:func:`fine_plan`):

1. the *static* partition for ``P`` workers fixes the lookahead ``L`` (its smallest positive cut latency; a
   ``lookahead`` option is a claim that both schedules check and that the fine plan keeps, not a floor);
2. the *groups*: components joined by an edge of latency below ``L`` (a direct call or a zero-latency link
   always) merged, the finest split whose cut edges all have latency ``>= L``, so that the fine partition's
   windows are no shorter than the static one's (cutting every positive latency would give a gem5 trace's
   1-tick links a 1-tick window);
3. ``K = min(groups, lps_max)``, at least ``P``; ``lps_max`` defaults to :func:`default_lps_max`
   (``8 x P``, at most :data:`MAX_LPS`, which is the engine's limit: one bit per LP in a window's masks);
4. the plan: :func:`~tickpar.pdes.plan.make_plan` with ``K`` parts (the partitioner's own cut and balance),
   kept when its lookahead is at least ``L``; else the groups packed into ``K`` LPs, heaviest first into the
   lightest (LPT on the same weights), which cuts only edges of latency ``>= L``.

A pure function of the spec, the worker count and the options, like the static plan: every process and the
bounds compute the same partition.  The result is the static strategy's run with ``K`` workers, event for
event (each LP's window is the same computation on whichever worker runs it), so it is exact in canonical
order under the same conditions and keeps the same promise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tickpar.kernel.model import Model
from tickpar.kernel.params import ParamError
from tickpar.pdes.partition import Partition
from tickpar.pdes.plan import Plan, make_plan

__all__ = [
    "MAX_LPS",
    "SCHEDULES",
    "default_lps_max",
    "fine_plan",
    "lookahead_groups",
    "lps_max_of",
    "schedule_of",
]

#: ``conservative``'s ``schedule`` option: one LP per worker fixed before the run, or many LPs handed out per window.
SCHEDULES = ("static", "adaptive")
#: The most LPs ``schedule=adaptive`` runs (the native engine's masks hold one bit per LP).
MAX_LPS = 64


def default_lps_max(workers: int) -> int:
    """``lps_max`` when the option is not given: ``8 x workers``, at most :data:`MAX_LPS`."""
    return min(MAX_LPS, 8 * max(1, workers))


def schedule_of(options: Mapping[str, Any]) -> str:
    """The ``schedule`` option (``static`` when absent)."""
    return str(options.get("schedule") or "static")


def lps_max_of(options: Mapping[str, Any], workers: int) -> int:
    """The ``lps_max`` option, or its default for ``workers``; a value below ``workers`` is one line of error."""
    given = options.get("lps_max")
    value = default_lps_max(workers) if given is None else int(given)
    if value < workers:
        raise ParamError(
            f"strategy conservative option lps_max={value} is not allowed with workers={workers}: "
            f"schedule=adaptive runs at least one LP per worker (lps_max from {workers} to {MAX_LPS})"
        )
    return value


def lookahead_groups(model: Model, lookahead: int | None) -> list[int]:
    """Group of each component (named by its smallest member) when edges below ``lookahead`` are merged.

    ``None`` (nothing crosses in the static plan): every coupled pair merged, whatever its latency.
    """
    n = len(model.components)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for src, dst, latency in model.lookahead_graph():
        if src != dst and (lookahead is None or latency < lookahead):
            a, b = find(src), find(dst)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(c) for c in range(n)]


def _packed(
    model: Model, groups: Sequence[int], weights: Sequence[float] | None, parts: int, weighted_by: str
) -> Partition:
    """The groups packed into ``parts`` LPs by LPT on their weights (LPs named by their smallest component)."""
    weight: dict[int, float] = {}
    for comp, g in enumerate(groups):
        weight[g] = weight.get(g, 0.0) + (1.0 if weights is None else float(weights[comp]))
    loads = [0.0] * parts
    home: dict[int, int] = {}
    for g in sorted(weight, key=lambda g: (-weight[g], g)):
        p = min(range(parts), key=lambda i: (loads[i], i))
        home[g] = p
        loads[p] += weight[g]
    first: dict[int, int] = {}
    for g in groups:
        first.setdefault(home[g], len(first))
    lp_of = tuple(first[home[g]] for g in groups)
    edges = model.lookahead_graph()
    cut = [(s, d, lat) for s, d, lat in edges if s != d and lp_of[s] != lp_of[d]]
    positive = [lat for _s, _d, lat in cut if lat > 0]
    per_lp = [0.0] * parts
    for comp, p in enumerate(lp_of):
        per_lp[p] += 1.0 if weights is None else float(weights[comp])
    return Partition(
        lp_of=lp_of,
        parts=parts,
        method="auto",
        lookahead=min(positive) if positive else None,
        min_cut_latency=min((lat for _s, _d, lat in cut), default=None),
        zero_cut=tuple(sorted((s, d) for s, d, lat in cut if lat == 0)),
        cut_edges=len({(s, d) for s, d, _ in cut}),
        edges=len({(s, d) for s, d, _ in edges if s != d}),
        sizes=tuple(lp_of.count(p) for p in range(parts)),
        weights=tuple(per_lp),
        weighted_by=weighted_by if weights else "count",
    )


def _keeps(part: Partition, floor: int | None) -> bool:
    """Whether ``part`` cuts no edge below ``floor`` (``None``: no edge at all)."""
    if floor is None:
        return part.cut_edges == 0
    return part.min_cut_latency is None or part.min_cut_latency >= floor


def fine_plan(
    model: Model,
    workers: int,
    lps_max: int,
    *,
    method: str,
    order: str,
    lookahead: int | None = None,
    stall_s: float = 120.0,
    weights: Sequence[float] | None = None,
    weighted_by: str = "count",
    window_loads: Sequence[Sequence[float]] | None = None,
) -> tuple[Plan, Partition]:
    """The plan of a ``schedule=adaptive`` run: ``K`` LPs (module docstring), ``workers <= K <= lps_max``.

    At one worker the lookahead floor is the 2-worker static plan's (one LP cuts nothing), so that a
    1-worker run has the LPs a 2-worker one has.  Raises :class:`~tickpar.plugins.LookaheadError` where
    the plan does (a direct call across LPs of a ``roundrobin`` or ``linear`` partition).
    """
    common: dict[str, Any] = {"method": method, "order": order, "sync": "window", "lookahead": lookahead,
                              "stall_s": stall_s, "weights": weights, "weighted_by": weighted_by,
                              "window_loads": window_loads}  # fmt: skip
    static = make_plan(model, workers, **common)
    reference = static[1] if workers > 1 else make_plan(model, 2, **common)[1]
    # The static partition's own lookahead (its smallest positive cut latency), not a ``lookahead`` claim: a
    # claim above a link's latency is checked, as the static schedule checks it, never merged away.
    floor = reference.lookahead if reference.lookahead is not None or reference.min_cut_latency is None else 1
    groups = lookahead_groups(model, floor)
    parts = max(workers, min(lps_max, len(set(groups))))
    if parts == workers:
        return static
    plan, part = make_plan(model, parts, **common)
    if method != "auto" or _keeps(part, floor):
        return plan, part
    # The partitioner traded lookahead for balance at K parts: pack the lookahead-keeping groups instead.
    part = _packed(model, groups, weights, parts, weighted_by)
    lp_of = part.lp_of
    channels = sorted({(lp_of[link.src.id], lp_of[link.dst.id]) for link in model.links
                       if lp_of[link.src.id] != lp_of[link.dst.id]})  # fmt: skip
    look = lookahead if lookahead is not None else part.lookahead
    if look is None and part.min_cut_latency is not None:
        look = 1
    return replace(plan, lp_of=lp_of, lookahead=look if channels else None, channels=tuple(channels)), part
