"""The traits a workload may declare: what decides which verdict a strategy can promise for it.

Its own module so that the contracts and the run specification can both name them without
importing each other.
"""

from __future__ import annotations

__all__ = ["TRAITS"]

#: The traits a workload may declare: what decides which verdict a strategy can promise for it.
#: Strategies read these (never a workload's name); ``tickpar list --json`` shows each workload's.
TRAITS: dict[str, str] = {
    "stored_ticks": "handlers schedule events at absolute ticks computed earlier and stored (busy-until, "
    "ready times, an event's own tick), not only at cur_tick + delay",
    "direct_calls": "handlers make same-tick direct calls into other components (Component.call)",
    "several_named_events": "one component processes events of several names (its own events and the "
    "messages it receives), so a lock per event name is not a lock per component",
    "many_events_per_tick": "events of several components share (tick, priority) bins all through the run",
    "zero_latency_links": "some link has latency 0 (a message arrives at the tick it was sent)",
    "long_run": "hundreds of events per component with several pending at once: a failure window that "
    "any handler can open is hit in practically every run (what a promised failure needs)",
}
