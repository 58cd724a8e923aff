"""The traits a workload may declare: what decides which verdict a strategy can promise for it.

Its own module so that the contracts and the run specification can both name them without
importing each other.
"""

from __future__ import annotations

__all__ = ["LONG_RUN_EVENTS", "TRAITS"]

#: ``long_run``'s threshold: at least this many events per component on average (the conformance test
#: checks it of every workload that declares the trait at its defaults).
LONG_RUN_EVENTS = 100

#: The traits a workload may declare: what decides which verdict a strategy can promise for it.
#: Strategies read these (never a workload's name); ``tickpar list --json`` shows each workload's.
TRAITS: dict[str, str] = {
    "stored_ticks": "handlers schedule events at absolute ticks computed earlier and stored (busy-until, "
    "ready times, an event's own tick, a tick computed before a later read of cur_tick), not only at "
    "cur_tick + delay",
    "direct_calls": "handlers make same-tick direct calls into other components (Component.call)",
    "several_named_events": "one component processes events of several names (its own events, named "
    "<component>.<suffix>, and the messages it receives, named <dst>.<handler>Event unless the link gives "
    "event_name=), so a lock per event name is not a lock per component",
    "many_events_per_tick": "events of several components share (tick, priority) bins all through the run",
    "zero_latency_links": "some link has latency 0 (a message arrives at the tick it was sent)",
    "recorded_operations": "handlers re-issue operations recorded from another run (a gem5 trace replay) instead of "
    "deciding them: a run that reorders events may fail a gem5 assertion (a schedule of an event already "
    "scheduled) where a model would have computed other values",
    "long_run": f"at least {LONG_RUN_EVENTS} events per component on average, with two or more pending at "
    "once: a failure window that any handler can open is hit in practically every run (what lets a strategy "
    "promise 'not exact')",
}
