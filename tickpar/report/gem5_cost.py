"""The gem5-like cost per event: what every page of the report means by "gem5-like", defined here once.

With real gem5 runs in the sweep (workload :data:`TRACE_WORKLOAD` replayed at its run's own cost: ``gem5_stats``,
the summary's ``event_cost_us``, from the check records' ``workload_info.event_cost``: the untraced run's host time
over its events), the gem5-like cost is the median of those runs' own costs, with their range.  Without such runs
it is :data:`DEFAULT_US`, a round figure of the same order as the example runs' own costs (their table:
``examples/gem5-traces/README.md``); the page that quotes it says that it is the default.

Page 1 reads the native engine's first speedup column and its model at the swept work per event nearest this
cost, and names it in the column's header (:mod:`tickpar.report.answer`); the findings quote the same text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

__all__ = ["DEFAULT_US", "TRACE_WORKLOAD", "Gem5Cost", "gem5_like_cost"]

TRACE_WORKLOAD = "gem5trace"
#: µs per event when the sweep replays no real gem5 run at its own cost: the order of the example runs' own costs,
#: rounded (a definition, not a measurement; the measured ones come from the runs themselves when there are any).
DEFAULT_US = 1.0


@dataclass(frozen=True)
class Gem5Cost:
    """The gem5-like cost per event (µs), and where it comes from."""

    us: float
    low: float  # the real runs' smallest and largest own cost (both ``us`` for the default)
    high: float
    runs: tuple[str, ...]  # the real runs it was taken from (none: the default)

    def text(self) -> str:
        """``1.4 µs per event (the median own cost of 3 real gem5 runs, 0.89-2.2 µs)``, or the default's."""
        if not self.runs:
            return (f"{self.us:g} µs per event (the default: no real gem5 run at its own cost in this sweep; "
                    "examples/gem5-traces/README.md lists the example runs' own costs)")  # fmt: skip
        many = f"the median own cost of {len(self.runs)} real gem5 runs, {self.low:.2g}-{self.high:.2g} µs"
        return f"{self.us:.2g} µs per event ({many if len(self.runs) > 1 else 'the own cost of the real gem5 run'})"


def gem5_like_cost(df: pd.DataFrame) -> Gem5Cost:
    """THE gem5-like cost of a sweep (the module docstring): the median of its real runs' own cost per event, one
    figure per run (gem5-trace shape), else :data:`DEFAULT_US`."""
    if df.empty or "event_cost_us" not in df.columns or "workload" not in df.columns:
        return Gem5Cost(DEFAULT_US, DEFAULT_US, DEFAULT_US, ())
    runs = df[df["workload"].astype(str) == TRACE_WORKLOAD].assign(
        _us=pd.to_numeric(df["event_cost_us"], errors="coerce")
    )
    per_run = runs.dropna(subset=["_us"]).groupby("shape", sort=True)["_us"].first()
    per_run = per_run[per_run.map(lambda v: math.isfinite(v) and v > 0)]
    if per_run.empty:
        return Gem5Cost(DEFAULT_US, DEFAULT_US, DEFAULT_US, ())
    return Gem5Cost(float(per_run.median()), float(per_run.min()), float(per_run.max()),
                    tuple(str(s) for s in per_run.index))  # fmt: skip
