"""What ``tickpar trace-fit`` searches: per workload, the parameters it varies and their ladders.

A :class:`SearchSpace` holds one :class:`Axis` per searched parameter: an ordered ladder of values
(coordinate descent steps one rung up or down it) and the few rungs of the coarse grid (every
combination of the grid axes' rungs is tried first; an axis off the grid starts at its ``start``).
The run's length is not searched: :meth:`SearchSpace.run_length` sets it from the event budget, so
every candidate costs about the same and the statistics, which are means and ratios, compare across
lengths.

``multicore``: the grid is cores x think_cycles x link_latency (the core count sets the width, think
time how often a CPU issues and the link latency the lookahead), then the descent also moves the
working set (hits or misses: events per request), L2 banks, outstanding requests, the CPU clock (where
ticks fall) and same-tick port calls.  ``requests_per_core`` is the run length: a request costs about
:data:`MULTICORE_EVENTS_PER_REQUEST` events, plus one CPU tick per cycle of think time
(``think_cycles / 2`` on average).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MULTICORE_EVENTS_PER_REQUEST", "SPACES", "Axis", "SearchSpace"]

#: A multicore request's events besides think time: CPU tick, L1 request, its response, the CPU's
#: receive, and on a miss the crossbar, L2 and memory hops; a rough mean, only to size a run.
MULTICORE_EVENTS_PER_REQUEST = 6
MIN_REQUESTS_PER_CORE = 8  # shorter runs are all warm-up


@dataclass(frozen=True)
class Axis:
    """A searched parameter: its ladder of values (ordered), the grid's rungs and the value it starts at."""

    name: str
    ladder: tuple[Any, ...]
    grid: tuple[Any, ...] = ()
    start: Any = None

    def __post_init__(self) -> None:
        missing = [v for v in (*self.grid, self.start) if v is not None and v not in self.ladder]
        if missing or (not self.grid and self.start is None):
            raise ValueError(f"axis {self.name}: grid and start must be rungs of the ladder {self.ladder}")

    def neighbours(self, value: Any) -> list[Any]:
        """The rungs just below and just above ``value`` (those that exist)."""
        i = self.ladder.index(value)
        return [self.ladder[j] for j in (i - 1, i + 1) if 0 <= j < len(self.ladder)]


@dataclass(frozen=True)
class SearchSpace:
    """The search of one workload: its axes and how a candidate's run length follows from the budget."""

    workload: str
    axes: tuple[Axis, ...]
    length: Callable[[dict[str, Any], int], dict[str, Any]] = field(repr=False)
    length_params: tuple[str, ...] = ()

    def free(self, fixed: dict[str, Any]) -> tuple[Axis, ...]:
        """The axes the search moves: every axis but those ``fixed`` pins."""
        return tuple(a for a in self.axes if a.name not in fixed)

    def grid(self, fixed: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The coarse grid's points, in a fixed order (each a value per free axis)."""
        axes = self.free(fixed)
        on_grid = [a for a in axes if a.grid]
        for combo in itertools.product(*(a.grid for a in on_grid)):
            point = {a.name: a.start for a in axes if not a.grid}
            point.update(zip((a.name for a in on_grid), combo, strict=True))
            yield {a.name: point[a.name] for a in axes}

    def run_length(self, point: dict[str, Any], target_events: int) -> dict[str, Any]:
        """The run-length parameters for ``point`` (every parameter set) at about ``target_events`` events."""
        return self.length(point, target_events)


def _multicore_length(params: dict[str, Any], target_events: int) -> dict[str, Any]:
    per_request = MULTICORE_EVENTS_PER_REQUEST + params.get("think_cycles", 1) / 2
    requests = round(target_events / (params.get("cores", 4) * per_request))
    return {"requests_per_core": max(MIN_REQUESTS_PER_CORE, requests)}


MULTICORE = SearchSpace(
    "multicore",
    (
        Axis("cores", (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256), grid=(1, 2, 4, 8, 16, 32, 64)),
        Axis("think_cycles", (0, 1, 2, 4, 8, 16, 32, 64, 128, 256), grid=(0, 4, 32)),
        Axis("link_latency", (1, 2, 5, 10, 20, 50, 100, 200, 333, 500, 1000, 2000), grid=(1, 20, 500)),
        Axis("working_set_kib", (4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096), start=64),
        Axis("l2_banks", (1, 2, 4, 8, 16, 32), start=4),
        Axis("max_outstanding", (1, 2, 4, 8, 16, 32), start=4),
        Axis("clock", (250, 333, 500, 1000), start=500),
        Axis("direct_calls", (False, True), start=False),
    ),
    _multicore_length,
    ("requests_per_core",),
)

#: The workloads trace-fit can fit, by name.
SPACES: dict[str, SearchSpace] = {MULTICORE.workload: MULTICORE}
