"""gem5's simulation-loop pieces that every strategy shares: the ``simulate()`` limit and its end key."""

from __future__ import annotations

from tickpar.eventq import Event, EventQueue, Priority

__all__ = ["before_end", "end_key", "schedule_limit"]


def schedule_limit(queue: EventQueue, end_tick: int | None) -> Event | None:
    """gem5's ``simulate(max_tick)`` limit: an exit event at ``(end_tick, SIM_EXIT)``.

    Model events have priorities below ``SIM_EXIT`` (the model API enforces
    it), so every model event at ``end_tick`` runs and none after it.
    """
    if end_tick is None:
        return None
    limit = Event(name="simulate.limit_event", priority=Priority.SIM_EXIT, is_exit=True)
    queue.schedule(limit, end_tick)
    return limit


def end_key(end_tick: int | None) -> tuple[int, int] | None:
    """The ``(when, priority)`` at which a run stops: events strictly below it run."""
    return None if end_tick is None else (end_tick, int(Priority.SIM_EXIT))


def before_end(when: int, priority: int, end_tick: int | None) -> bool:
    """True when an event at ``(when, priority)`` runs before the ``simulate()`` limit."""
    return end_tick is None or when < end_tick or (when == end_tick and priority < Priority.SIM_EXIT)
