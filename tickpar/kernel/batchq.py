""":class:`BatchQueue`: an event queue whose operations can be deferred per thread; :class:`Deferred`: one share.

The primitive of strategies that run a batch of events in parallel and then commit what they scheduled in
an order of their choosing (tick-barrier).  Outside :meth:`BatchQueue.defer_to` it is a plain gem5 queue
(:class:`tickpar.kernel.gem5queue.EventQueue`).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

from mypy_extensions import mypyc_attr

from tickpar.kernel._interpreted import DeferTarget
from tickpar.kernel.eventkeys import PRIO_BITS, key_when
from tickpar.kernel.events import (
    Entry,
    Event,
    EventNotFound,
    Op,
    SchedulingError,
    Violation,
    forget_dup,
    is_live,
    lifo_ties,
    untyped,
)
from tickpar.kernel.gem5queue import EventQueue

__all__ = [
    "BatchQueue",
    "Deferred",
]


@mypyc_attr(allow_interpreted_subclasses=True)
class Deferred:
    """One worker's share of a batch in :class:`BatchQueue`'s deferred mode.

    What the kernel fills in while the worker's thread defers into it:

    * ``ops``: every insertion (an :data:`Op`), in call order;
    * ``execs``: ``(key, tie, first op index)`` per event run through
      :meth:`BatchQueue.run_entry`/:meth:`BatchQueue.run_op`;
    * ``violations``: ``(exec index, Violation)`` with ``checks=False``;
    * ``size_delta``: the change in queued events, for :meth:`EventQueue.commit`.

    :meth:`on_op` is the engine's hook (override it in a subclass, or pass
    ``on_op``): called for a deschedule (``op`` None) and for every insertion
    at a key ``<= limit_key`` (a zero-delay child of the batch), when the
    event's class is not ``plain_class``.  Insertions of ``plain_class``
    events (one-shot messages, which nobody else holds) above ``limit_key``
    are only logged.  ``owner`` is whatever the engine attaches, found again
    through :meth:`BatchQueue.deferring` on the worker's thread.
    """

    __slots__ = ("_hook", "execs", "limit_key", "ops", "owner", "plain_class", "size_delta", "violations", "watch")

    def __init__(
        self,
        limit_key: int,
        plain_class: type | None = None,
        on_op: Callable[[Event, Op | None], None] | None = None,
        owner: object = None,
    ) -> None:
        self.limit_key = limit_key
        self.plain_class = plain_class
        self._hook = on_op
        #: Whether the kernel calls :meth:`on_op` at all (a subclass that overrides it sets True).
        self.watch = on_op is not None or type(self).on_op is not Deferred.on_op
        self.owner = owner
        self.ops: list[Op] = []
        self.execs: list[tuple[int, Any, int]] = []
        self.violations: list[tuple[int, Violation]] = []
        self.size_delta = 0

    def on_op(self, event: Event, op: Op | None) -> None:
        """The engine's hook (see the class docstring); by default the ``on_op`` given, if any."""
        if self._hook is not None:
            self._hook(event, op)


@mypyc_attr(allow_interpreted_subclasses=True)
class BatchQueue(EventQueue):
    """An :class:`EventQueue` whose schedule/reschedule/deschedule can be deferred, per thread.

    Outside :meth:`defer_to` it is a plain gem5 queue.  While a thread defers
    into a :class:`Deferred`, its operations check gem5's assertions against
    ``cur_tick`` and the event's state at once (as the sequential run would:
    ``scheduled``, ``when`` and Squashed change immediately, so
    check-then-act code sees what it would see sequentially), but the heap is
    not touched: insertions become :data:`Op` records, handed over with
    :meth:`commit` after the batch in the order the engine chooses.  Entries
    taken with :meth:`pop_bin` still count as scheduled until they run, so a
    handler may reschedule or deschedule them.
    """

    __slots__ = ("_defer_fast", "_target")

    def __init__(
        self, name: str = "main", order: str = "gem5", checks: bool = True, debug_invariants: bool = False
    ) -> None:
        super().__init__(name, order=order, checks=checks, debug_invariants=debug_invariants)
        self._target = DeferTarget()
        # post()'s fast paths, as in EventQueue: only where schedule is this class's own.
        own = type(self).schedule is BatchQueue.schedule
        self._post_fast = own and not self._canonical
        self._defer_fast = own

    def defer_to(self, sink: Deferred | None) -> None:
        """Defer the calling thread's operations into ``sink`` (``None``: back to the plain queue)."""
        self._target.sink = sink

    def deferring(self) -> Deferred | None:
        """The calling thread's sink, or ``None`` outside deferred mode."""
        return self._target.sink

    def _dfail(self, d: Deferred, op: str, event: Event, when: int, reason: str) -> None:
        if self.checks:
            raise SchedulingError(op, event, when, self.cur_tick, reason)
        d.violations.append((len(d.execs) - 1, Violation(op, event._name, when, self.cur_tick, reason)))

    def _deferred_insert(self, d: Deferred, event: Event, when: int) -> None:
        op: Op = (event, when, event.source)
        event._tie = op
        d.ops.append(op)
        if d.watch and (event.__class__ is not d.plain_class or (when << PRIO_BITS) + event._pkey <= d.limit_key):
            d.on_op(event, op)

    def schedule(self, event: Event, when: int) -> None:
        d = self._target.sink
        if d is None:
            EventQueue.schedule(self, event, when)
            return
        if when < self.cur_tick:
            self._dfail(d, "schedule", event, when, "past")
        old = event._tie
        if old is not None:
            self._dfail(d, "schedule", event, when, "already-scheduled")
        if self._canonical and event.source is not None:
            self._refuse_reused_source(event, event.source)
        if old is not None:
            self._keep_duplicate(event, old)
        d.size_delta += 1
        event._when = when
        # _deferred_insert, inlined: one call less per message a batch sends.
        op: Op = (event, when, event.source)
        event._tie = op
        d.ops.append(op)
        if d.watch and (event.__class__ is not d.plain_class or (when << PRIO_BITS) + event._pkey <= d.limit_key):
            d.on_op(event, op)

    def post(self, event: Event, when: Any, source: int | None) -> None:
        """:meth:`EventQueue.post`, deferred or not: ``event.source = source`` then :meth:`schedule`.

        Both of :meth:`schedule`'s paths inlined for the plain case (see
        :meth:`EventQueue.post`): a batch engine's messages go through here.
        """
        event.source = source
        d = self._target.sink
        if d is None:
            if self._post_fast and event._tie is None and when >= self.cur_tick:
                tie = next(lifo_ties)
                event._when = when
                event._tie = tie
                heappush(self._heap, (when * 256 + event._pkey, tie, event))
            else:
                untyped(self.schedule)(event, when)
            return
        if (
            self._defer_fast
            and event._tie is None
            and when >= self.cur_tick
            and (not self._canonical or (event._stale is None and event._dups is None))
        ):
            # The deferred schedule() with every assertion passing and no reused canonical key to refuse.
            d.size_delta += 1
            event._when = when
            op: Op = (event, when, source)
            event._tie = op
            d.ops.append(op)
            if d.watch and (event.__class__ is not d.plain_class or (when << PRIO_BITS) + event._pkey <= d.limit_key):
                d.on_op(event, op)
        else:
            untyped(self.schedule)(event, when)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        d = self._target.sink
        if d is None:
            EventQueue.reschedule(self, event, when, always)
            return
        if when < self.cur_tick:
            self._dfail(d, "reschedule", event, when, "past")
        if event._tie is None:
            if not always:
                self._dfail(d, "reschedule", event, when, "not-scheduled")
            d.size_delta += 1
        if self._canonical and event.source is not None:
            self._refuse_reused_source(event, event.source)
        event._squashed = False
        event._when = when
        self._deferred_insert(d, event, when)

    def deschedule(self, event: Event) -> None:
        d = self._target.sink
        if d is None:
            EventQueue.deschedule(self, event)
            return
        tie = event._tie
        if tie is None:
            self._dfail(d, "deschedule", event, event._when, "not-scheduled")
            if event._dups is None:
                raise EventNotFound(event, self.cur_tick)
            tie = event._dups[-1]
            forget_dup(event, tie)
        if d.watch and event.__class__ is not d.plain_class:
            d.on_op(event, None)
        event._tie = None if event._tie is tie else event._tie
        # A pending op would have been in the heap with its source key as tie (canonical order).
        event._stale = tie[2] if tie.__class__ is tuple else tie
        event._squashed = False
        d.size_delta -= 1
        if event._managed:
            event.release()

    def run_entry(self, d: Deferred, entry: Entry) -> bool:
        """Run a :meth:`pop_bin` entry on the calling (deferring) thread if it is still live.

        Returns whether it ran (an entry a handler descheduled or rescheduled
        is not live any more); the run is logged in ``d.execs``.  Exit events
        are not for batches: one would run like any other event here.
        """
        event = entry[2]
        tie = entry[1]
        if event._tie == tie:
            event._tie = None
        elif event._dups is not None and is_live(event, tie):
            forget_dup(event, tie)
            d.execs.append((entry[0], tie, len(d.ops)))
            d.size_delta -= 1
            self._execute_duplicate(event, key_when(entry[0]))
            return True
        else:
            return False
        d.execs.append((entry[0], tie, len(d.ops)))
        d.size_delta -= 1
        # execute_popped, inlined (the per-event path of a batch)
        if event._squashed:
            event._squashed = False
        else:
            event.process()
        if event._managed and event._tie is None and event._dups is None:
            event.release()
        return True

    def run_op(self, d: Deferred, op: Op, key: int, tie: int) -> bool:
        """Run a deferred insertion now (a zero-delay child) if it is still live; logged in ``d`` at ``(key, tie)``.

        Returns whether it ran.
        """
        event = op[0]
        if event._tie is op:
            event._tie = None
            d.execs.append((key, tie, len(d.ops)))
            d.size_delta -= 1
            self.execute_popped(event)
            return True
        if event._dups is None or not is_live(event, op):
            return False
        forget_dup(event, op)
        d.execs.append((key, tie, len(d.ops)))
        d.size_delta -= 1
        self._execute_duplicate(event, op[1])
        return True
