"""The plan of a partitioned run: what every LP (thread, process or rank) must agree on.

:func:`make_plan` partitions a built model (:mod:`tickpar.pdes.partition`),
rejects direct calls across LPs (zero lookahead: they cannot be simulated
apart), finds the channels (the LP pairs that some link crosses) and fixes the
lookahead: the smallest positive latency of a link that crosses LPs, or the
caller's value (which may be larger, as gem5's ``sim_quantum`` may be: then it
is a claim that the run checks).  A :class:`Plan` is JSON-ready, so process and
MPI workers get it as data and rebuild the model themselves.

Weights (:data:`PARTITION_WEIGHTS`, :func:`partition_weights`): ``count`` balances
components (1 each); ``events`` balances each component's processed events in a
profiled prefix (:data:`PROFILE_EVENTS` events) of a work-free sequential run of
the same spec (:func:`component_event_counts`, cached per process), a pure
function of (workload, params, seed, order): so every process, rank and the
native engine compute the same partition, and a busy component (a crossbar, a
memory controller) weighs more than an idle one, as its events cost its LP more.

``windows`` (an option; ``events`` is the default, see below) balances the same events, and then what a
window-synchronised run actually waits for: each window lasts as long as its
busiest LP, so the run's time is the sum over windows of the busiest LP's
events in that window, and balanced totals can still leave one LP idle in one
window and the other in the next (docs/measurements/2026-12-06-code-comments.md).  The same
profiled run records each component's events per window
(:func:`component_window_counts`, :func:`partition_window_loads`), and the
partitioner refines its result to minimise that sum (the window makespan; see
:mod:`tickpar.pdes.partition`).  The windows must not depend on the partition
(one profile serves every ``P``), so they are those of the smallest positive
link latency ``L`` of the model: window ``k`` starts at the first event at or
after the end of window ``k - 1`` and spans ``L`` ticks.  A partition's real
lookahead is never below ``L`` (it is the smallest latency it cuts), so its
windows are these (when it cuts a link of latency ``L``: always on multicore
and phold, whose links have one latency) or coarser ones, each covering the
fine windows it overlaps, so that balancing every fine window balances them too
(a sum of per-window maxima bounds the maximum of the sums).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tickpar.kernel.model import Link, Model
from tickpar.kernel.params import Param
from tickpar.kernel.simloop import start_single_queue
from tickpar.pdes.partition import Partition, partition_model
from tickpar.plugins import LookaheadError, RunSpec

__all__ = [
    "DEFAULT_PARTITION_WEIGHTS",
    "PARTITION_WEIGHTS",
    "PARTITION_WEIGHTS_OPTION",
    "PROFILE_EVENTS",
    "Plan",
    "component_event_counts",
    "component_window_counts",
    "cut_links_below",
    "make_plan",
    "partition_weights",
    "partition_window_loads",
]

#: What a partition balances: ``events`` (per component, from a sequential run), ``count`` (components) or
#: ``windows`` (the events, then the busiest LP's events per conservative window).
PARTITION_WEIGHTS = ("events", "count", "windows")
#: The default of the partitioned strategies that offer the choice (``partition_weights``).
# events, not windows: windows' extra cut edges slow null-message runs and its refinement adds set-up, while
# window-threads gain nothing measurable (docs/measurements/2026-12-03-freethreaded.md). An option to compare.
DEFAULT_PARTITION_WEIGHTS = "events"
#: Events of the profiled prefix that :func:`component_event_counts` counts.
PROFILE_EVENTS = 20_000
#: The ``partition_weights`` option of every partitioned strategy (conservative, optimistic, quantum), once.
PARTITION_WEIGHTS_OPTION = Param(
    str,
    DEFAULT_PARTITION_WEIGHTS,
    "partition=auto balances events (per component, in a profiled prefix of a work-free sequential run "
    "of the same spec), count (components) or windows (those events, then the sum over lookahead windows "
    "of the busiest LP's events in each, what a window-synchronised run waits for)",
    choices=PARTITION_WEIGHTS,
)


@dataclass(frozen=True)
class _Profile:
    """What one profiled prefix recorded: events per component, in all and per window."""

    counts: tuple[int, ...]
    windows: tuple[tuple[int, ...], ...]
    """Per window (in tick order), the events of each component in it; windows without events left out."""


_PROFILES: dict[str, _Profile] = {}


def _profile(spec: RunSpec, events: int) -> _Profile:
    """The profiled prefix of ``spec`` (see :func:`component_event_counts`), cached per process."""
    plain = replace(spec, work="none", trace=False)
    key = json.dumps([plain.workload, plain.params, plain.seed, plain.order, events], sort_keys=True, default=str)
    if key not in _PROFILES:
        model, queue = start_single_queue(plain, work="none")
        comps = model.components
        span = _window_span(model)
        windows: list[tuple[int, ...]] = []
        # Counts at the start of the current window; init() calls count in the first one.
        opened = [0] * len(comps)
        end: int | None = None
        served = 0
        while served < events and not queue.empty():
            when = queue.next_tick()
            if span is not None and (end is None or when >= end):
                # The global minimum next-event tick after the last window: a new window starts there.
                opened = _close_window(comps, opened, windows)
                end = when + span
            served += 1
            if queue.service_one() is not None:  # the exit event: simulate()'s limit
                break
        _close_window(comps, opened, windows)
        _PROFILES[key] = _Profile(tuple(comp.count for comp in comps), tuple(windows))
    return _PROFILES[key]


def _window_span(model: Model) -> int | None:
    """The smallest positive latency of the model's coupling graph (``None``: no positive latency)."""
    return min((lat for _s, _d, lat in model.lookahead_graph() if lat > 0), default=None)


def _close_window(comps: Sequence[Any], opened: list[int], windows: list[tuple[int, ...]]) -> list[int]:
    """Append the events since ``opened`` (if any) to ``windows``; the counts now (the next window's start)."""
    now = [comp.count for comp in comps]
    delta = tuple(b - a for a, b in zip(opened, now, strict=True))
    if any(delta):
        windows.append(delta)
    return now


def component_event_counts(spec: RunSpec, events: int = PROFILE_EVENTS) -> tuple[int, ...]:
    """Events each component processed in the first ``events`` of a sequential run of ``spec`` with no work.

    A profiled prefix, as PDES engines profile the start of a run before they partition it: on
    the default sweep's shapes (about 1,000 events) the whole run, on a long run a bounded cost
    (tens of milliseconds) instead of a second whole simulation.  The run is the golden one's
    event sequence (work never changes which events run, so ``work`` and ``trace`` are dropped
    from the key); cached per process.
    """
    return _profile(spec, events).counts


def component_window_counts(spec: RunSpec, events: int = PROFILE_EVENTS) -> tuple[tuple[int, ...], ...]:
    """Per component, its events in each window of the profiled prefix of :func:`component_event_counts`.

    The same run (one profile per spec key).  The windows are partition-independent:
    the first starts at the first event's tick ``t0`` and spans ``[t0, t0 + L)``, with
    ``L`` the smallest positive link latency of the model (the smallest lookahead any
    partition can have); each next one starts at the first event tick at or after the
    previous one's end (the global minimum a window sync computes).  Windows without
    events are left out; a model with no positive latency has one window.  Each
    component's row sums to its count.
    """
    windows = _profile(spec, events).windows
    n = len(component_event_counts(spec, events))
    return tuple(tuple(row[c] for row in windows) for c in range(n))


def partition_weights(spec: RunSpec, weights: str) -> list[float] | None:
    """The component weights (totals) ``weights`` names for ``spec`` (``None``: unit weights).

    ``events`` and ``windows`` both give the events per component of the profiled prefix
    (``windows`` adds :func:`partition_window_loads`).
    """
    _check_weights(weights)
    if weights == "count":
        return None
    counts = component_event_counts(spec)
    # No events at all (an empty run): nothing to balance by, so balance components.
    return [float(c) for c in counts] if sum(counts) else None


def partition_window_loads(spec: RunSpec, weighted_by: str) -> list[list[float]] | None:
    """Per component, its events per window (:func:`component_window_counts`) for ``windows``; else ``None``."""
    _check_weights(weighted_by)
    if weighted_by != "windows" or not sum(component_event_counts(spec)):
        return None
    return [[float(x) for x in row] for row in component_window_counts(spec)]


def _check_weights(weights: str) -> None:
    if weights not in PARTITION_WEIGHTS:
        raise ValueError(f"partition_weights={weights!r} is not allowed: one of {', '.join(PARTITION_WEIGHTS)}")


@dataclass(frozen=True)
class Plan:
    """The partition and synchronisation settings shared by all LPs (JSON-ready)."""

    parts: int
    lp_of: tuple[int, ...]
    lookahead: int | None
    """Ticks; ``None``: no link crosses LPs (each LP runs to the end on its own)."""
    end_tick: int | None
    sync: str
    """The name of the synchronisation policy (:data:`tickpar.pdes.sync.SYNCS`)."""
    order: str
    channels: tuple[tuple[int, int], ...]
    """``(src lp, dst lp)`` pairs that some link crosses."""
    stall_s: float = 120.0
    sync_args: dict[str, Any] = field(default_factory=dict)
    """Settings of the synchronisation policy beyond the lookahead (JSON values)."""

    def inputs(self, lp: int) -> list[int]:
        """The LPs that send to ``lp``."""
        return sorted({s for s, d in self.channels if d == lp})

    def outputs(self, lp: int) -> list[int]:
        """The LPs that ``lp`` sends to."""
        return sorted({d for s, d in self.channels if s == lp})

    def members(self, lp: int) -> list[int]:
        """Component ids of ``lp``, ascending."""
        return [c for c, p in enumerate(self.lp_of) if p == lp]

    def to_dict(self) -> dict[str, Any]:
        return {
            "parts": self.parts,
            "lp_of": list(self.lp_of),
            "lookahead": self.lookahead,
            "end_tick": self.end_tick,
            "sync": self.sync,
            "order": self.order,
            "channels": [list(c) for c in self.channels],
            "stall_s": self.stall_s,
            "sync_args": dict(self.sync_args),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            int(data["parts"]),
            tuple(int(x) for x in data["lp_of"]),
            None if data["lookahead"] is None else int(data["lookahead"]),
            None if data["end_tick"] is None else int(data["end_tick"]),
            data["sync"],
            data["order"],
            tuple((int(a), int(b)) for a, b in data["channels"]),
            float(data["stall_s"]),
            dict(data.get("sync_args", {})),
        )


def make_plan(
    model: Model,
    parts: int,
    *,
    method: str,
    order: str,
    sync: str,
    lookahead: int | None = None,
    stall_s: float = 120.0,
    sync_args: dict[str, Any] | None = None,
    weights: Sequence[float] | None = None,
    weighted_by: str = "count",
    window_loads: Sequence[Sequence[float]] | None = None,
) -> tuple[Plan, Partition]:
    """Partition ``model`` into ``parts`` LPs by ``method`` and fix everything the LPs must agree on.

    ``weights``: per component id, what the partition balances (:func:`partition_weights`;
    ``None``: 1 each); ``weighted_by`` names them in the partition's statistics.
    ``window_loads``: per component id, its events per window (:func:`partition_window_loads`):
    ``auto`` then also minimises the window makespan.

    ``lookahead``: ticks per window/promise; ``None`` takes the smallest
    positive latency of a link crossing LPs (1 when only zero-latency links
    are cut: the smallest positive increment, which the run then checks).
    Raises :class:`~tickpar.plugins.LookaheadError` for a direct call across LPs.
    """
    part = partition_model(model, parts, method, weights=weights, window_loads=window_loads)
    part = replace(part, weighted_by=weighted_by if weights else "count")
    lp_of = part.lp_of
    for a, b in model.direct:
        if lp_of[a.id] != lp_of[b.id]:
            raise LookaheadError(
                f"direct call {a.name} -> {b.name} crosses LPs {lp_of[a.id]} and {lp_of[b.id]} "
                f"(zero lookahead; partition={part.method})"
            )
    channels = sorted(
        {(lp_of[link.src.id], lp_of[link.dst.id]) for link in model.links if lp_of[link.src.id] != lp_of[link.dst.id]}
    )
    if lookahead is None:
        lookahead = part.lookahead
        if lookahead is None and part.min_cut_latency is not None:
            lookahead = 1
    plan = Plan(
        parts=parts,
        lp_of=lp_of,
        lookahead=lookahead if channels else None,
        end_tick=model.end_tick,
        sync=sync,
        order=order,
        channels=tuple(channels),
        stall_s=float(stall_s),
        sync_args=dict(sync_args or {}),
    )
    return plan, part


def cut_links_below(model: Model, plan: Plan) -> list[Link]:
    """Links crossing LPs with a latency below the plan's lookahead (a violation if a message takes one)."""
    if plan.lookahead is None:
        return []
    lp_of = plan.lp_of
    return [link for link in model.links if lp_of[link.src.id] != lp_of[link.dst.id] and link.latency < plan.lookahead]
