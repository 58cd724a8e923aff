"""gem5's event queue (``src/sim/eventq.{hh,cc}``), modelled in Python.

This module holds only :class:`Event` and :class:`EventQueue`; the semantics are
those of gem5 v24 as recorded in ``shared/gem5-eventq.md`` and checked case by
case in ``tests/test_eventq.py``:

* Ticks are integers.  The queue orders events by ``(when, priority)``; a
  *smaller* priority number runs earlier within a tick.
* Ties within one ``(when, priority)`` bin:

  - ``order="gem5"``: LIFO by insertion, every insertion counting (schedule,
    reschedule, and the merge of asynchronous events).  gem5 keeps each bin
    as a stack; a heap keyed by ``(when, priority, -seq)`` is equivalent.
  - ``order="canonical"``: FIFO by a *source key* stamped on the event by
    whoever schedules it (source component id, then that source's sequence
    number).  A partitioned run reproduces this key exactly, which gem5's
    global insertion counter cannot be.

* ``schedule``/``reschedule`` refuse ``when < cur_tick`` (gem5's
  ``assert(when >= curTick())``), ``schedule`` refuses an event that is
  already scheduled, ``deschedule`` one that is not.  With ``checks=True`` the
  call raises :class:`SchedulingError` and changes nothing; with
  ``checks=False`` ("asserts commented out") it goes through and the queue
  appends a :class:`Violation` to :attr:`EventQueue.violations`.
* ``service_one`` pops the head, clears Scheduled before running it, and, if
  the event is not squashed, sets ``cur_tick`` to its ``when`` and calls
  ``process()``.  A squashed event neither runs nor advances ``cur_tick``.
  An exit event is returned to the caller, who stops its loop.

Implementation: a binary heap of ``(key, tie, event)`` tuples with lazy
deletion.  ``key`` packs ``(when, priority)`` into one int (one comparison on
the hot path); ``tie`` is unique per insertion and is also kept on the event
(``event._tie``), so an entry is live exactly when the two agree and an event
is scheduled exactly when ``event._tie is not None``.  Deschedule and
reschedule only forget the old entry; ``service_one`` skips such stale entries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from heapq import heappop, heappush

__all__ = [
    "ORDERS",
    "Event",
    "EventQueue",
    "Priority",
    "SchedulingError",
    "Violation",
]

ORDERS = ("gem5", "canonical")

# Priorities are int8 in gem5; packing them into the heap key needs them non-negative.
_PRIO_OFFSET = 128
_PRIO_BITS = 8
# Canonical tie = source id << _SRC_BITS | source sequence number.
_SRC_BITS = 40


class Priority(IntEnum):
    """gem5's named event priorities (eventq.hh:138-244); smaller runs first at one tick."""

    MINIMUM = -128
    """Lowest value: runs before anything else at its tick (``exitSimLoopNow``)."""
    DEBUG_ENABLE = -101
    """Debug switches take effect before the tick's other work."""
    DEBUG_BREAK = -100
    """Breakpoints fire before the tick's other work."""
    CPU_SWITCH = -31
    """CPU switch-over happens before CPU ticks."""
    DELAYED_WRITEBACK = -1
    """Writebacks complete before default events, and so before CPU ticks."""
    DEFAULT = 0
    """Everything without a reason to be elsewhere."""
    DVFS_UPDATE = 31
    """Frequency changes after default events of the tick."""
    SERIALIZE = 32
    """Checkpointing sees the tick's default work done."""
    CPU_TICK = 50
    """CPU ticks come after other associated CPU events (such as writebacks)."""
    CPU_EXIT = 64
    """CPU exit after CPU ticks."""
    STAT_EVENT = 90
    """Statistics dumps see the tick's work done."""
    PROGRESS_EVENT = 95
    """Progress and global sync (the quantum barrier) after stats."""
    SIM_EXIT = 100
    """``exitSimLoop`` exits after all other work of the tick."""
    MAXIMUM = 127
    """Highest value: runs after everything else at its tick."""


class SchedulingError(RuntimeError):
    """A gem5 event-queue assertion failed (``when >= curTick``, (not) scheduled).

    Attributes: ``op`` (``schedule``/``reschedule``/``deschedule``), ``event``,
    ``when`` (the requested tick, or the event's own for ``deschedule``),
    ``cur_tick`` (the queue's tick at the call) and ``reason`` (``past``,
    ``already-scheduled`` or ``not-scheduled``).
    """

    def __init__(self, op: str, event: Event, when: int, cur_tick: int, reason: str) -> None:
        self.op = op
        self.event = event
        self.when = when
        self.cur_tick = cur_tick
        self.reason = reason
        super().__init__(_describe(op, event, when, cur_tick, reason))


@dataclass(frozen=True, slots=True)
class Violation:
    """One assertion that would have failed, recorded because the queue has ``checks=False``."""

    op: str
    event: str
    when: int
    cur_tick: int
    reason: str

    def describe(self) -> str:
        return _describe_parts(self.op, self.event, self.when, self.cur_tick, self.reason)


def _describe_parts(op: str, name: str, when: int, cur_tick: int, reason: str) -> str:
    if reason == "past":
        return f"{op}({name}, when={when}) with cur_tick={cur_tick}: when < cur_tick"
    return f"{op}({name}, when={when}) with cur_tick={cur_tick}: event {reason.replace('-', ' ')}"


def _describe(op: str, event: Event, when: int, cur_tick: int, reason: str) -> str:
    return _describe_parts(op, event.name, when, cur_tick, reason)


_instance_counter = itertools.count(1)
# Insertion numbers are process-wide, not per queue: an event descheduled on one queue and
# scheduled on another must never get a tie its stale entry in the first heap still carries.
# Within one queue they still increase with every insertion, which is all LIFO order needs.
_next_insertion = itertools.count(1).__next__


class Event:
    """A gem5 ``Event``: a tick, a priority, a name, and ``process()``.

    ``callback`` (optional) is called with no arguments by the default
    :meth:`process`; subclasses may override :meth:`process` instead.  ``name``
    defaults to gem5's ``Event_<n>`` (unique per object, so it says nothing
    about the owner).  ``is_exit`` marks an exit event: ``service_one`` returns
    it.  ``managed`` is gem5's AutoDelete: :meth:`release` is called when the
    queue is done with the event (after ``process()`` unless it rescheduled
    itself, on deschedule, when popped squashed; never for exit events).
    (gem5's ``acquire`` only counts references, which Python does for us.)
    """

    __slots__ = (
        "__weakref__",
        "_callback",
        "_is_exit",
        "_managed",
        "_name",
        "_pkey",
        "_priority",
        "_squashed",
        "_stale",
        "_tie",
        "_when",
        "source",
    )

    def __init__(
        self,
        callback: Callable[[], object] | None = None,
        name: str | None = None,
        priority: int = Priority.DEFAULT,
        *,
        is_exit: bool = False,
        managed: bool = False,
    ) -> None:
        priority = int(priority)
        if not Priority.MINIMUM <= priority <= Priority.MAXIMUM:
            raise ValueError(f"priority {priority} out of range: allowed -128..127 (int8, as in gem5)")
        self._callback = callback
        self._name = name if name is not None else f"Event_{next(_instance_counter)}"
        self._priority = priority
        self._pkey = priority + _PRIO_OFFSET
        self._when = 0
        self._tie: int | None = None
        #: The tie of the entry ``deschedule`` left behind in a heap (lazy deletion).
        self._stale: int | None = None
        self._squashed = False
        self._is_exit = is_exit
        self._managed = managed
        #: Canonical-order source key (``source_id << 40 | source_seq``), stamped
        #: by the scheduler of the event before each insertion; ``None`` means
        #: "no source" (such events are FIFO among themselves, before sourced ones).
        self.source: int | None = None

    # -- read-only state ---------------------------------------------------------
    @property
    def when(self) -> int:
        return self._when

    @property
    def priority(self) -> int:
        return self._priority

    @property
    def name(self) -> str:
        return self._name

    @property
    def scheduled(self) -> bool:
        return self._tie is not None

    @property
    def squashed(self) -> bool:
        return self._squashed

    @property
    def is_exit(self) -> bool:
        return self._is_exit

    @property
    def managed(self) -> bool:
        return self._managed

    # -- behaviour -----------------------------------------------------------------
    def squash(self) -> None:
        """Mark the event to be skipped when popped; it stays queued and ``scheduled``."""
        self._squashed = True

    def process(self) -> None:
        """Run the event (called by the queue with ``cur_tick == when``)."""
        if self._callback is not None:
            self._callback()

    def release(self) -> None:
        """gem5's ``releaseImpl``: the queue no longer holds this managed event."""

    def __repr__(self) -> str:
        state = "scheduled" if self._tie is not None else "idle"
        if self._squashed:
            state += ",squashed"
        return f"<Event {self._name} when={self._when} prio={self._priority} {state}>"


def canonical_source(source_id: int, seq: int) -> int:
    """The canonical tie key of the ``seq``-th insertion made by source ``source_id``."""
    return (source_id << _SRC_BITS) | seq


class EventQueue:
    """One gem5 ``EventQueue``: its own ``cur_tick`` and a (when, priority)-ordered queue.

    ``order`` is ``"gem5"`` or ``"canonical"`` (see the module docstring).
    ``checks=False`` turns the assertions into recorded :attr:`violations`.
    ``cur_tick`` is a plain attribute, as gem5's ``setCurTick`` is a plain
    store with no monotonicity check; model code reads it as "now".
    """

    __slots__ = ("_canonical", "_heap", "_size", "checks", "cur_tick", "name", "order", "violations")

    def __init__(self, name: str = "main", order: str = "gem5", checks: bool = True) -> None:
        if order not in ORDERS:
            raise ValueError(f"order {order!r} is not allowed: choose one of {', '.join(ORDERS)}")
        self.name = name
        self.order = order
        self.checks = bool(checks)
        self.cur_tick = 0
        self.violations: list[Violation] = []
        self._heap: list[tuple[int, int, Event]] = []
        self._size = 0
        self._canonical = order == "canonical"

    # -- assertions ------------------------------------------------------------------
    def _fail(self, op: str, event: Event, when: int, reason: str) -> None:
        """Raise (checks on) or record (checks off) one failed gem5 assertion."""
        if self.checks:
            raise SchedulingError(op, event, when, self.cur_tick, reason)
        self.violations.append(Violation(op, event._name, when, self.cur_tick, reason))

    def _next_tie(self, event: Event) -> int:
        # gem5: LIFO among equal keys, so later insertions get smaller ties.
        seq = _next_insertion()
        if self._canonical:
            source = event.source
            if source is None:
                return seq - (1 << 62)
            if source == event._tie or source == event._stale:
                # The old entry would look live again: the scheduler must stamp a new key.
                raise ValueError(f"{event._name}: canonical source key reused on reinsertion")
            return source
        return -seq

    # -- gem5 API ----------------------------------------------------------------------
    def schedule(self, event: Event, when: int) -> None:
        """gem5 ``schedule``: queue ``event`` at tick ``when`` (>= ``cur_tick``)."""
        if when < self.cur_tick:
            self._fail("schedule", event, when, "past")
        old = event._tie
        if old is not None:
            self._fail("schedule", event, when, "already-scheduled")
        # Inline of _next_tie: this is the hottest call after service_one.
        seq = _next_insertion()
        if self._canonical:
            tie = event.source
            if tie is None:
                tie = seq - (1 << 62)
            elif tie == old or tie == event._stale:
                # An old entry with this tie is still in a heap and would look live again.
                raise ValueError(f"{event._name}: canonical source key reused on reinsertion")
        else:
            tie = -seq
        if old is None:
            self._size += 1
        event._when = when
        event._tie = tie
        heappush(self._heap, ((when << _PRIO_BITS) + event._pkey, tie, event))

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        """gem5 ``reschedule``: move ``event`` to ``when``; with ``always`` it may be unscheduled."""
        if when < self.cur_tick:
            self._fail("reschedule", event, when, "past")
        if event._tie is None and not always:
            self._fail("reschedule", event, when, "not-scheduled")
        tie = self._next_tie(event)  # before any change: it may refuse a reused canonical key
        if event._tie is None:
            self._size += 1
        event._squashed = False
        event._when = when
        event._tie = tie
        heappush(self._heap, ((when << _PRIO_BITS) + event._pkey, tie, event))

    def deschedule(self, event: Event) -> None:
        """gem5 ``deschedule``: take a scheduled event out; clears Squashed and Scheduled."""
        if event._tie is None:
            self._fail("deschedule", event, event._when, "not-scheduled")
            return
        event._stale = event._tie
        event._tie = None
        event._squashed = False
        self._size -= 1
        if event._managed:
            event.release()

    def service_one(self) -> Event | None:
        """gem5 ``serviceOne``: pop the head and run it; return it if it is an exit event.

        The caller guarantees ``not empty()`` (as in gem5); an empty queue raises
        ``IndexError``.
        """
        heap = self._heap
        while True:
            _key, tie, event = heappop(heap)
            if event._tie == tie:
                break
        event._tie = None
        self._size -= 1
        if event._squashed:
            # gem5 (eventq.cc:246-248): only clear the flag; cur_tick does not move.
            event._squashed = False
        else:
            self.cur_tick = event._when
            event.process()
            if event._is_exit:
                return event
        if event._managed and event._tie is None:
            event.release()
        return None

    def run(self) -> Event | None:
        """gem5's ``doSimLoop``: ``service_one`` until an exit event runs (returned) or the queue empties.

        The body is ``service_one`` inlined, one Python call less per event:
        this loop is the sequential reference's whole engine.
        """
        heap = self._heap
        while self._size:
            _key, tie, event = heappop(heap)
            if event._tie != tie:
                continue  # stale entry of a descheduled or rescheduled event
            event._tie = None
            self._size -= 1
            if event._squashed:
                event._squashed = False
            else:
                self.cur_tick = event._when
                event.process()
                if event._is_exit:
                    return event
            if event._managed and event._tie is None:
                event.release()
        return None

    def service_events(self, when: int) -> None:
        """gem5 ``serviceEvents``: service every head with ``when <= when``, then set ``cur_tick``.

        As in gem5 (eventq.hh), the value ``serviceOne`` returns is ignored: an exit
        event is serviced like any other and does not stop the loop.
        """
        while self._size and self.next_tick() <= when:
            self.service_one()
        self.cur_tick = when

    def empty(self) -> bool:
        """True when no event (squashed ones included) is queued."""
        return self._size == 0

    def __len__(self) -> int:
        return self._size

    def _drop_stale_head(self) -> None:
        heap = self._heap
        while heap and heap[0][2]._tie != heap[0][1]:
            heappop(heap)

    def peek(self) -> Event | None:
        """The head event (squashed or not), or ``None`` when empty."""
        self._drop_stale_head()
        return self._heap[0][2] if self._heap else None

    def next_tick(self) -> int:
        """The head's ``when`` (a squashed head counts); ``IndexError`` when empty."""
        self._drop_stale_head()
        return self._heap[0][2]._when

    def next_key(self) -> tuple[int, int] | None:
        """The head's ``(when, priority)``, or ``None`` when empty."""
        self._drop_stale_head()
        if not self._heap:
            return None
        head = self._heap[0][2]
        return head._when, head._priority

    # -- primitives for strategies that split popping from executing -----------------
    def pop_next(self, advance: bool = True) -> Event:
        """Remove the head without running it (the prototype's ``popNextEvent``).

        Clears Scheduled (as serviceOne does before ``process()``); with
        ``advance`` sets ``cur_tick`` to the event's ``when`` *even if it is
        squashed*, which is what the prototype did and gem5 does not.
        """
        heap = self._heap
        while True:
            _key, tie, event = heappop(heap)
            if event._tie == tie:
                break
        event._tie = None
        self._size -= 1
        if advance:
            self.cur_tick = event._when
        return event

    def execute_popped(self, event: Event) -> Event | None:
        """Run an event taken by :meth:`pop_next` (the prototype's ``executePoppedEvent``).

        Does not touch ``cur_tick``.  Squashed events are skipped (and the flag
        cleared); an exit event is returned; managed events are released.
        """
        if event._squashed:
            event._squashed = False
        else:
            event.process()
            if event._is_exit:
                return event
        if event._managed and event._tie is None:
            event.release()
        return None

    def set_cur_tick(self, when: int) -> None:
        """gem5 ``setCurTick``: a plain store, no monotonicity check."""
        self.cur_tick = when

    # -- invariants (gem5 debugVerify) -------------------------------------------------------
    def check_invariants(self) -> list[str]:
        """Problems with the queue's state, as gem5's ``debugVerify`` reports them; [] if none."""
        problems = []
        live = [(k, t, e) for (k, t, e) in self._heap if e._tie == t]
        if len(live) != self._size:
            problems.append(f"queue size {self._size} but {len(live)} live entries")
        seen: set[int] = set()
        for key, _tie, event in live:
            if id(event) in seen:
                problems.append(f"Node already seen: {event.name}")
            seen.add(id(event))
            if event._when < self.cur_tick:
                problems.append(f"time goes backwards!: {event.name} at {event._when} < cur_tick {self.cur_tick}")
            if key != (event._when << _PRIO_BITS) + event._pkey:
                problems.append(f"priority inverted!: {event.name} key does not match (when, priority)")
        return problems

    def pending(self) -> list[Event]:
        """Queued events in service order (for tests and debugging; O(n log n))."""
        return [e for (_k, _t, e) in sorted(self._heap, key=lambda x: (x[0], x[1])) if e._tie == _t]

    def __repr__(self) -> str:
        return f"<EventQueue {self.name} cur_tick={self.cur_tick} size={self._size} order={self.order}>"


def _quicken_run_loop() -> None:
    """Let CPython 3.11 specialise :meth:`EventQueue.run` before the first real simulation.

    3.11 quickens a code object only after it has been *entered* about 8 times
    (loop iterations do not count), and a simulation enters ``run`` once: the
    whole event loop would otherwise run as generic, unspecialised bytecode
    (measured: ~12% more instructions per event).  Running it on empty queues
    changes nothing else.  Later CPythons warm up on loop back-edges too.
    """
    for _ in range(10):
        EventQueue("warm-up").run()


_quicken_run_loop()

