"""gem5's simulation-loop pieces every strategy shares: the one-queue set-up, the ``simulate()`` limit, its end key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from tickpar.kernel.eventq import Event, EventQueue, Priority
from tickpar.kernel.model import Model

__all__ = ["ModelSpec", "before_end", "end_key", "schedule_limit", "start_single_queue"]

Q = TypeVar("Q", bound=EventQueue)


class ModelSpec(Protocol):
    """What the loop needs of a run specification (:class:`tickpar.plugins.RunSpec` is one).

    A protocol, so the kernel names no layer above it.
    """

    order: str

    def build_model(
        self, *, work: str | None = None, detect_races: bool = False, record_dag: bool = False
    ) -> Model: ...


def start_single_queue(
    spec: ModelSpec,
    queue_class: type[Q] = EventQueue,  # type: ignore[assignment]
    *,
    checks: bool = True,
    debug_invariants: bool = False,
    detect_races: bool = False,
    record_dag: bool = False,
    work: str | None = None,
    prepare: Callable[[Model], None] | None = None,
) -> tuple[Model, Q]:
    """Build ``spec``'s model on one queue named ``main``, run every ``init()``, schedule the limit.

    The set-up of every strategy that runs the whole model on one queue
    (gem5's single-queue ``simulate()``): build, bind, ``Model.start``, then
    :func:`schedule_limit` for the workload's ``end_tick``.  ``queue_class``
    is an :class:`EventQueue` subclass taking ``(name, order=, checks=)``
    (and ``debug_invariants=`` when it is asked for).  ``work`` overrides the
    spec's work mode; ``prepare(model)`` runs after the build, before any
    ``init()`` (bounds uses it to meter the work instead of spending it).
    """
    model = spec.build_model(work=work, detect_races=detect_races, record_dag=record_dag)
    if prepare is not None:
        prepare(model)
    if debug_invariants:
        queue = queue_class("main", order=spec.order, checks=checks, debug_invariants=True)  # type: ignore[call-arg]
    else:
        queue = queue_class("main", order=spec.order, checks=checks)  # type: ignore[call-arg]
    model.bind(queue)
    model.start()
    schedule_limit(queue, model.end_tick)
    return model, queue


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
