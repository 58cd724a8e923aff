"""The named statistics of a parallelism profile that ``tickpar trace-fit`` matches, and the distance.

A profile is :func:`tickpar.gem5.profile.trace_profile`'s dict: a real run's, or a workload run's
emitted as a stock trace and imported (:func:`tickpar.gem5.profile.profile_workload`), so both sides
are measured by one method.  Each :class:`Statistic` names one figure of it:

========================  ========  ========================================================================
statistic                 weight    what it is
========================  ========  ========================================================================
events_per_tick           2         events per tick that holds any (mean)
zero_delay_cross_share    0.25      share of schedules made at delay 0 onto another component (floor 0.01)
delay_within_q25/50/75    0.1       quartiles of the schedule delay within one component, ticks (floor 1)
delay_across_q25/50/75    0.1       the same across components: the lookahead a partition can use
available_parallelism     2         events over the critical path
tick_barrier_2/16/64      0.5/2/1   tick-barrier's bound (ideal speedup) at 2, 16 and 64 workers
conservative_2/16/64      0.5/2/1   conservative's bound at 2, 16 and 64 workers
========================  ========  ========================================================================

The difference of one statistic is the log-ratio ``d = ln((fitted + floor) / (trace + floor))``: a
factor of 2 counts the same whichever way, and a floor keeps a share or a delay of 0 finite.  It is
squashed as ``c * tanh(d / c)`` with ``c = ln 4``, so a statistic the workload cannot get within a
factor of 4 of weighs as a constant instead of drowning the others (real runs park some events far
in the future: docs/measurements/2026-12-06-trace-fit.md).  The **distance** is the weighted root
mean square of the squashed differences; 0.1 is about 10% off on a typical statistic.  A statistic
missing on one side (a run with no schedule across components has no ``delay_across``) counts as
``c``; missing on both, it is left out.  The weights put the figures the answer rests on first:
available parallelism, events per tick and the bounds at 16 workers.  The coupling and the delays
weigh little: they say why the bounds are what they are, and the bounds are in already.  A
statistic is *reached* when the fitted value is within :data:`TOLERANCE` (25%) of the trace's,
``|(fitted + floor) / (trace + floor) - 1| <= 0.25``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["CLIP", "STATISTICS", "TOLERANCE", "Statistic", "compare", "distance", "statistic_values"]

#: Where a log-ratio stops growing (squashed by tanh): a factor of 4.
CLIP = math.log(4.0)
#: A statistic is reached when the fitted value is within this relative difference of the trace's.
TOLERANCE = 0.25


@dataclass(frozen=True)
class Statistic:
    """One named figure of a profile: where it is (a dotted path) and how much it counts."""

    name: str
    label: str
    path: str
    weight: float
    floor: float = 0.0  # added to both sides of the ratio: a share or a delay may be 0

    def value(self, profile: dict[str, Any]) -> float | None:
        """The statistic in ``profile``, or None where the profile does not have it."""
        value: Any = profile
        for key in self.path.split("."):
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return None if value is None else float(value)

    def log_ratio(self, trace: float | None, fitted: float | None) -> float | None:
        """``ln((fitted + floor) / (trace + floor))``; inf where one side is missing, None where both are."""
        if trace is None and fitted is None:
            return None
        if trace is None or fitted is None:
            return math.inf
        return math.log((fitted + self.floor) / (trace + self.floor))

    def relative_difference(self, trace: float | None, fitted: float | None) -> float | None:
        """``(fitted + floor) / (trace + floor) - 1``; None where either side is missing."""
        d = self.log_ratio(trace, fitted)
        return None if d is None or math.isinf(d) else math.expm1(d)


def _delays(side: str, where: str) -> list[Statistic]:
    return [
        Statistic(f"delay_{side}_q{q}", f"delay {where}, {label} (ticks)", f"schedule_delay.{side}.q{q}", 0.1, 1.0)
        for q, label in ((25, "25th percentile"), (50, "median"), (75, "75th percentile"))
    ]


def _bounds(strategy: str, key: str) -> list[Statistic]:
    weights = {2: 0.5, 16: 2.0, 64: 1.0}
    return [
        Statistic(f"{key}_{p}", f"{strategy} bound at {p} workers", f"bounds.{strategy}.{p}", w)
        for p, w in weights.items()
    ]


#: The statistics the distance is defined over, in the order they are printed.
STATISTICS: tuple[Statistic, ...] = (
    Statistic("events_per_tick", "events per tick (mean)", "events_per_tick.mean", 2.0),
    Statistic("zero_delay_cross_share", "zero-delay schedules across components", "zero_delay_cross_share", 0.25, 0.01),
    *_delays("within", "within a component"),
    *_delays("across", "across components"),
    Statistic("available_parallelism", "available parallelism", "available_parallelism", 2.0),
    *_bounds("tick-barrier", "tick_barrier"),
    *_bounds("conservative", "conservative"),
)


def statistic_values(profile: dict[str, Any]) -> dict[str, float | None]:
    """Every statistic of ``profile`` by name."""
    return {s.name: s.value(profile) for s in STATISTICS}


def _squashed(d: float) -> float:
    return CLIP if math.isinf(d) else CLIP * math.tanh(d / CLIP)


def distance(trace: dict[str, float | None], fitted: dict[str, float | None]) -> float:
    """The distance between two profiles' :func:`statistic_values` (module docstring)."""
    total = weights = 0.0
    for s in STATISTICS:
        d = s.log_ratio(trace.get(s.name), fitted.get(s.name))
        if d is None:
            continue
        total += s.weight * _squashed(d) ** 2
        weights += s.weight
    return math.sqrt(total / weights) if weights else 0.0


def compare(trace: dict[str, float | None], fitted: dict[str, float | None]) -> list[dict[str, Any]]:
    """Per statistic: its name, label, weight, both values, the relative difference and whether it is reached."""
    rows = []
    for s in STATISTICS:
        a, b = trace.get(s.name), fitted.get(s.name)
        rel = s.relative_difference(a, b)
        rows.append(
            {
                "name": s.name,
                "label": s.label,
                "weight": s.weight,
                "trace": a,
                "fitted": b,
                "relative_difference": rel,
                "reached": (a is None and b is None) or (rel is not None and abs(rel) <= TOLERANCE),
            }
        )
    return rows
