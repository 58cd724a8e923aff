"""gem5's event queue (``src/sim/eventq.{hh,cc}``), modelled in Python.

This module holds the kernel: :class:`Event`, :class:`EventQueue` and
:class:`BatchQueue` (an EventQueue with a deferred mode for parallel engines);
the semantics are those of gem5 v24 as recorded in ``shared/gem5-eventq.md``
and checked case by case in ``tests/test_eventq.py``:

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

* gem5's assertions: ``schedule``/``reschedule`` refuse ``when < cur_tick``
  (``assert(when >= curTick())``), ``schedule`` refuses an event that is
  already scheduled, ``deschedule`` one that is not, ``reschedule`` one that
  is not unless ``always``.  With ``checks=True`` the call raises
  :class:`SchedulingError` and changes nothing.  With ``checks=False`` the
  queue appends a :class:`Violation` to :attr:`EventQueue.violations` and then
  does what gem5 does with its asserts compiled out (``NDEBUG``):

  - a schedule or reschedule into the past inserts the event there; it runs
    next and ``cur_tick`` goes backwards (``setCurTick`` has no check);
  - ``reschedule`` of an unscheduled event without ``always`` inserts it
    (gem5's ``reschedule`` only asserts, then inserts);
  - ``schedule`` of an already-scheduled event inserts it **a second time**,
    so it runs twice.  gem5 links the same node into a second bin, which
    corrupts its intrusive list (undefined: depending on the bins, events
    between the two positions are skipped, or a same-key re-insertion makes
    the node its own successor and it runs forever).  tickpar keeps the queue
    well formed instead: the event holds two independent entries, each runs
    at its own ``(when, priority)`` (``when`` reads that entry's tick while it
    runs), and its Scheduled flag follows gem5's: cleared when the newest
    entry is served or removed, even while the older entry is still queued,
    which then still runs (as gem5's still-linked node does);
  - ``deschedule`` of an event that is not in the queue reaches gem5's
    ``remove()``, whose ``panic("event not found!")`` is never compiled out:
    :class:`EventNotFound` (verdict ``crash``).  An unflagged event that is
    still queued through a double schedule is found and removed.

* ``service_one`` pops the head, clears Scheduled before running it, and, if
  the event is not squashed, sets ``cur_tick`` to its ``when`` and calls
  ``process()``.  A squashed event neither runs nor advances ``cur_tick``.
  An exit event is returned to the caller, who stops its loop.

Implementation: a binary heap of ``(key, tie, event)`` tuples with lazy
deletion (key and tie encodings: :mod:`tickpar.kernel.eventkeys`).  ``tie`` is unique
per insertion and is also kept on the event (``event._tie``), so an entry is
live exactly when the two agree (or the entry is one of the event's
double-schedule duplicates) and an event is scheduled exactly when
``event._tie is not None``.  Deschedule and reschedule only forget the old
entry; serving skips such stale entries.  Nothing outside this module reads
those fields: the model sends messages through :meth:`EventQueue.post` (stamp and
schedule in one call, the plain case inlined), and engines use the primitives below (:data:`Entry` and
:func:`entry_live`, :meth:`EventQueue.head`, :meth:`EventQueue.pop_bin`,
:meth:`EventQueue.put_back`, :meth:`EventQueue.serve_bin`,
:meth:`EventQueue.serve_until`, :meth:`EventQueue.commit`, and
:class:`BatchQueue`'s deferred mode with :class:`Deferred`, :data:`Op`,
:func:`op_key` and :func:`op_live`; :class:`JournalQueue`'s journal, undo and
repair for engines that roll back).  ``debug_invariants=True`` runs
:meth:`EventQueue.check_invariants` after every commit.

This module is also compiled with mypyc in the optional compiled build (setup.py,
``TICKPAR_COMPILED=1``), from this same source.  What that asks of it: exception classes
stay non-native, the ``threading.local`` subclass lives in :mod:`tickpar.kernel._interpreted`,
:data:`Op` is typed ``Any`` (ops are known by identity, which a typed tuple would lose),
events hash by identity explicitly, and a call that must hand a subclass the caller's own
objects goes through ``_untyped``.  ``tests/test_kernel_build.py`` fails on each of those
differences; ``make test-compiled`` runs the suite on the compiled build.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from heapq import heapify, heappop, heappush
from typing import Any, ClassVar, TypeAlias

from mypy_extensions import mypyc_attr

from tickpar.kernel._interpreted import DeferTarget
from tickpar.kernel.eventkeys import PRIO_BITS, PRIO_OFFSET, UNSOURCED_BASE, canonical_source, key_when

__all__ = [
    "ORDERS",
    "BatchQueue",
    "Deferred",
    "Entry",
    "Event",
    "EventNotFound",
    "EventQueue",
    "JournalQueue",
    "Op",
    "Priority",
    "SchedulingError",
    "Undo",
    "Violation",
    "canonical_source",
    "entry_live",
    "op_key",
    "op_live",
]

ORDERS = ("gem5", "canonical")


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


@mypyc_attr(native_class=False)  # the compiled build: exceptions stay ordinary Python classes
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


@mypyc_attr(native_class=False)
class EventNotFound(RuntimeError):
    """gem5's ``panic("event not found!")`` in ``EventQueue::remove``: never compiled out.

    Raised (whatever ``checks`` says) when ``deschedule`` is asked to remove an
    event that is not in the queue; ``str()`` starts with gem5's message.
    Attributes: ``event`` (its name), ``when`` and ``cur_tick``.
    """

    MESSAGE = "event not found!"

    def __init__(self, event: Event, cur_tick: int) -> None:
        self.event = event.name
        self.when = event.when
        self.cur_tick = cur_tick
        super().__init__(f"{self.MESSAGE} (deschedule({self.event}, when={self.when}) with cur_tick={cur_tick})")


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
# The counter yields gem5-order ties directly, minus the insertion number (-1, -2, ...): the hot paths take
# ``next(_lifo_ties)`` with no negation (one int less to make per insertion); canonical order's unsourced
# ties use the insertion number itself, ``-tie``.  CPython 3.11 specialises a call of the builtin ``next``,
# not one of the bound ``__next__`` method-wrapper (measured: ~90 instructions less per insertion).
_lifo_ties = itertools.count(-1, -1)


@mypyc_attr(allow_interpreted_subclasses=True)  # model events subclass it in interpreted code
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
        "_dups",
        "_is_exit",
        "_managed",
        "_name",
        "_pkey",
        "_priority",
        "_special",
        "_squashed",
        "_stale",
        "_tie",
        "_when",
        "source",
    )

    def __lt__(self, other: object) -> bool:
        """Only for a heap whose ``(key, tie)`` collided: never in a run that keeps the kernel's rules.

        Heap entries are ``(key, tie, event)`` with a tie unique per insertion, so ``heapq`` never
        compares two events, except when threads race on one queue: a strategy's race (tick-barrier
        with ``lock_key=name`` on the free-threaded build, where two groups enter one component) can
        hand two insertions one tie.  Then the run must go on to the ``race`` its detector reports, not
        stop in a ``TypeError`` that hides it.  The order of the two is arbitrary, as racing is.
        """
        return id(self) < id(other)

    def __hash__(self) -> int:
        # Identity hashing, as object's: spelled out because the compiled build (mypyc) makes a class
        # that defines a comparison unhashable, and events live in sets and dict keys.
        return object.__hash__(self)

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
        self._pkey = priority + PRIO_OFFSET
        self._when = 0
        #: The tie of the event's entry (an int), a pending :data:`Op` during a deferred batch, or None.
        self._tie: Any = None
        #: The tie of the entry ``deschedule`` left behind in a heap (lazy deletion).
        self._stale: Any = None
        #: Ties of further live entries left by double schedules with ``checks=False`` (else None).
        self._dups: list[Any] | None = None
        self._squashed = False
        self._is_exit = is_exit
        self._managed = managed
        #: ``is_exit or managed`` (both fixed at construction): the serving loops test this one flag
        #: after ``process()`` instead of two, since almost no event is either.
        self._special = is_exit or managed
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


def _untyped(method: Any) -> Any:
    """``method`` as an untyped callable: in the compiled build, a call through it passes its arguments as
    they are (a native call of ``schedule(event, when: int)`` would make ``when`` a plain ``int`` copy)."""
    return method


def _is_live(event: Event, tie: Any) -> bool:
    """True when the entry (or pending op) ``tie`` of ``event`` is still one the queue will serve."""
    if _same(event._tie, tie):
        return True
    dups = event._dups
    return dups is not None and any(_same(d, tie) for d in dups)


def _same(held: Any, tie: Any) -> bool:
    # Ties are ints (compared by value); pending ops are compared by identity (two may be equal tuples).
    return held is tie or (tie.__class__ is int and held == tie)


def _forget_dup(event: Event, tie: Any) -> None:
    dups = event._dups
    assert dups is not None
    for i, d in enumerate(dups):
        if _same(d, tie):
            del dups[i]
            break
    if not dups:
        event._dups = None


Entry: TypeAlias = "tuple[int, Any, Event]"
"""One queue entry, as the heap holds it: ``(key, tie, event)`` (see :mod:`tickpar.kernel.eventkeys`).

:meth:`EventQueue.pop_bin` and :meth:`EventQueue.head` hand out the heap's own
tuples (a named tuple would cost ~1,300 more instructions per event of a
batch); :func:`entry_live` says whether one is still live.
"""


def entry_live(entry: Entry) -> bool:
    """True while nothing (deschedule, reschedule, serving) has retired this entry."""
    event = entry[2]
    return event._tie == entry[1] or (event._dups is not None and _is_live(event, entry[1]))


# Typed ``Any``, not ``tuple[Event, int, int | None]``: an op is known by identity (``event._tie is op``),
# and mypyc would unbox a typed tuple into a C struct and box a *new* tuple object at every use, so the
# compiled kernel's identity test would fail silently (tests/test_kernel_build.py holds it).
Op: TypeAlias = Any
"""One heap insertion deferred during a batch: a plain ``(event, when, source)`` tuple.

The op object itself marks its event as scheduled by it (``event._tie is op``)
until :meth:`EventQueue.commit` gives it its real tie.  Plain tuples, not a
named class: one is made per message a batch sends (a named tuple costs ~1,300
more instructions to build).  Read ops with :func:`op_key` and :func:`op_live`.
"""


def op_key(op: Op) -> int:
    """The packed ``(when, priority)`` key of a deferred insertion."""
    return (op[1] << PRIO_BITS) + op[0]._pkey


def op_live(op: Op) -> bool:
    """True while ``op`` is its event's pending insertion (or one of its double-schedule duplicates)."""
    return _is_live(op[0], op)


@mypyc_attr(allow_interpreted_subclasses=True)
class EventQueue:
    """One gem5 ``EventQueue``: its own ``cur_tick`` and a (when, priority)-ordered queue.

    ``order`` is ``"gem5"`` or ``"canonical"`` (see the module docstring).
    ``checks=False`` turns the assertions into recorded :attr:`violations` and
    gem5's compiled-out behaviour.  ``debug_invariants`` runs
    :meth:`check_invariants` after every :meth:`commit` and raises on a
    problem.  ``cur_tick`` is a plain attribute, as gem5's ``setCurTick`` is a
    plain store with no monotonicity check; model code reads it as "now".
    """

    __slots__ = (
        "_canonical",
        "_heap",
        "_offset",
        "_post_fast",
        "checks",
        "cur_tick",
        "debug_invariants",
        "name",
        "order",
        "violations",
    )

    #: The slot descriptor that stores ``cur_tick``, for subclasses that turn reads of
    #: ``cur_tick`` into a property (split's interleave executor) and still need the value.
    tick_slot: ClassVar[Any]

    def __init__(
        self, name: str = "main", order: str = "gem5", checks: bool = True, debug_invariants: bool = False
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"order {order!r} is not allowed: choose one of {', '.join(ORDERS)}")
        self.name = name
        self.order = order
        self.checks = bool(checks)
        self.debug_invariants = bool(debug_invariants)
        self.cur_tick = 0
        self.violations: list[Violation] = []
        self._heap: list[tuple[int, Any, Event]] = []
        #: Queued events (double-scheduled ones once per entry) minus heap entries: ``len`` is ``len(heap) +
        #: _offset``.  Kept by the rare operations (a stale entry made or dropped, an entry taken out of the heap
        #: or put back), so that serving a live head and inserting an event touch no counter: in PHOLD a
        #: counter on those paths cost 3% of the instructions per event.
        self._offset = 0
        self._canonical = order == "canonical"
        #: Whether :meth:`post` may insert by itself: gem5 order, and ``schedule`` is this class's own (a
        #: subclass that overrides ``schedule`` to count, journal, stamp or defer gets its ``schedule`` called).
        self._post_fast = not self._canonical and type(self).schedule is EventQueue.schedule

    # -- assertions ------------------------------------------------------------------
    def _fail(self, op: str, event: Event, when: int, reason: str) -> None:
        """Raise (checks on) or record (checks off) one failed gem5 assertion."""
        if self.checks:
            raise SchedulingError(op, event, when, self.cur_tick, reason)
        self.violations.append(Violation(op, event._name, when, self.cur_tick, reason))

    def _refuse_reused_source(self, event: Event, tie: Any) -> None:
        """Canonical order: a source key an entry of this event still carries would make it look live again."""
        if tie == event._tie or tie == event._stale or (event._dups is not None and tie in event._dups):
            raise ValueError(f"{event._name}: canonical source key reused on reinsertion")

    def _next_tie(self, event: Event) -> int:
        # gem5: LIFO among equal keys, so later insertions get smaller ties.
        tie = next(_lifo_ties)
        if self._canonical:
            source = event.source
            if source is None:
                return UNSOURCED_BASE - tie
            self._refuse_reused_source(event, source)
            return source
        return tie

    @staticmethod
    def _keep_duplicate(event: Event, old: Any) -> None:
        """checks=False double schedule: the old entry stays live beside the new one (gem5 links it twice)."""
        if event._dups is None:
            event._dups = [old]
        else:
            event._dups.append(old)

    # -- gem5 API ----------------------------------------------------------------------
    def schedule(self, event: Event, when: int) -> None:
        """gem5 ``schedule``: queue ``event`` at tick ``when`` (>= ``cur_tick``)."""
        if when < self.cur_tick:
            self._fail("schedule", event, when, "past")
        old = event._tie
        if old is not None:
            self._fail("schedule", event, when, "already-scheduled")
        # Inline of _next_tie: this is the hottest call after service_one.
        tie = next(_lifo_ties)
        if self._canonical:
            source = event.source
            if source is None:
                tie = UNSOURCED_BASE - tie
            else:
                tie = source
                if tie == old or tie == event._stale or event._dups is not None:
                    self._refuse_reused_source(event, tie)
        if old is not None:
            self._keep_duplicate(event, old)  # the old entry stays queued beside the new one
        event._when = when
        event._tie = tie
        heappush(self._heap, (when * 256 + event._pkey, tie, event))  # see post()

    def post(self, event: Event, when: Any, source: int | None) -> None:
        """Stamp ``event.source = source``, then ``schedule(event, when)``: one call for a message send.

        The primitive :meth:`tickpar.kernel.model.Link.send` delivers through: the same
        semantics as those two steps in every case (gem5's assertions, violations with
        ``checks=False``, canonical source keys, the insertion number it uses up), and a
        subclass that overrides ``schedule`` (journaling, deferring, stamping, counting)
        gets its ``schedule`` called.  What it saves is only work: in the plain case (gem5
        order, this class's ``schedule``, ``when >= cur_tick``, the event not scheduled,
        as a recycled one-shot message never is) it inserts without a second call and
        without the branches for double schedules.  (``when`` is typed ``Any`` so that the
        compiled build hands a subclass's ``schedule`` the very object it got, an ``int``
        subclass such as the recorder's marked ticks included, not a plain ``int`` copy.)
        """
        event.source = source
        if self._post_fast and event._tie is None and when >= self.cur_tick:
            # schedule()'s plain path, inlined: one Python call less per message.  ``when * 256`` is
            # ``when << PRIO_BITS`` (asserted below the class) as an operation 3.11 specialises for ints.
            tie = next(_lifo_ties)
            event._when = when
            event._tie = tie
            heappush(self._heap, (when * 256 + event._pkey, tie, event))
        else:
            _untyped(self.schedule)(event, when)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        """gem5 ``reschedule``: move ``event`` to ``when``; with ``always`` it may be unscheduled."""
        if when < self.cur_tick:
            self._fail("reschedule", event, when, "past")
        if event._tie is None and not always:
            self._fail("reschedule", event, when, "not-scheduled")
        tie = self._next_tie(event)  # before any change: it may refuse a reused canonical key
        if event._tie is not None:
            self._offset -= 1  # its entry stays in the heap, stale
        event._squashed = False
        event._when = when
        event._tie = tie
        heappush(self._heap, ((when << PRIO_BITS) + event._pkey, tie, event))

    def deschedule(self, event: Event) -> None:
        """gem5 ``deschedule``: take a scheduled event out; clears Squashed and Scheduled."""
        tie = event._tie
        if tie is None:
            self._fail("deschedule", event, event._when, "not-scheduled")
            dups = event._dups
            if dups is None:
                raise EventNotFound(event, self.cur_tick)
            tie = dups[-1]  # found: a double schedule left it queued without its Scheduled flag
            _forget_dup(event, tie)
        else:
            event._tie = None
        event._stale = tie
        event._squashed = False
        self._offset -= 1  # its entry stays in the heap, stale
        if event._managed:
            event.release()

    def service_one(self) -> Event | None:
        """gem5 ``serviceOne``: pop the head and run it; return it if it is an exit event.

        The caller guarantees ``not empty()`` (as in gem5); an empty queue raises
        ``IndexError``.
        """
        heap = self._heap
        while True:
            key, tie, event = heappop(heap)
            if event._tie == tie:
                break
            if event._dups is not None and _is_live(event, tie):
                return self._serve_duplicate(key, tie, event)
            self._offset += 1  # a stale entry dropped
        event._tie = None
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
        while heap:  # stale entries left at the end are dropped on the way: the same as stopping before them
            key, tie, event = heappop(heap)
            if event._tie != tie:
                # A stale entry of a descheduled or rescheduled event, or a double schedule's duplicate.
                if event._dups is not None and _is_live(event, tie):
                    done = self._serve_duplicate(key, tie, event)
                    if done is not None:
                        return done
                else:
                    self._offset += 1
                continue
            event._tie = None
            if event._squashed:
                event._squashed = False
                if event._managed and event._tie is None:
                    event.release()
            else:
                self.cur_tick = event._when
                event.process()
                if event._special:  # is_exit or managed: one test on the common path instead of two
                    if event._is_exit:
                        return event
                    if event._tie is None:
                        event.release()
        return None

    def _serve_duplicate(self, key: int, tie: Any, event: Event) -> Event | None:
        """Serve the older entry of a double-scheduled event at its own tick (see the module docstring)."""
        _forget_dup(event, tie)  # popped: the heap and the queue lose it together
        when = key_when(key)
        if not event._squashed:
            self.cur_tick = when
        return self._execute_duplicate(event, when)

    def _execute_duplicate(self, event: Event, when: int) -> Event | None:
        """``execute_popped`` for an older entry: ``when`` reads the entry's own tick while it runs."""
        primary, primary_when = event._tie, event._when
        event._when = when
        try:
            return self.execute_popped(event)
        finally:
            if primary is not None and event._tie is primary:
                event._when = primary_when  # the newer entry is still queued at its own tick

    def service_events(self, when: int) -> None:
        """gem5 ``serviceEvents``: service every head with ``when <= when``, then set ``cur_tick``.

        As in gem5 (eventq.hh), the value ``serviceOne`` returns is ignored: an exit
        event is serviced like any other and does not stop the loop.
        """
        while not self.empty() and self.next_tick() <= when:
            self.service_one()
        self.cur_tick = when

    def empty(self) -> bool:
        """True when no event (squashed ones included) is queued."""
        return len(self._heap) + self._offset == 0

    def __len__(self) -> int:
        return len(self._heap) + self._offset

    def _live_head(self) -> Entry | None:
        heap = self._heap
        while heap:
            entry = heap[0]
            event = entry[2]
            if event._tie == entry[1] or (event._dups is not None and _is_live(event, entry[1])):
                return entry
            heappop(heap)
            self._offset += 1
        return None

    def peek(self) -> Event | None:
        """The head event (squashed or not), or ``None`` when empty."""
        head = self._live_head()
        return head[2] if head is not None else None

    def next_tick(self) -> int:
        """The head's ``when`` (a squashed head counts); ``IndexError`` when empty."""
        head = self._live_head()
        if head is None:
            raise IndexError("next_tick() of an empty event queue")
        return key_when(head[0])

    def next_key(self) -> tuple[int, int] | None:
        """The head's ``(when, priority)``, or ``None`` when empty."""
        head = self._live_head()
        if head is None:
            return None
        return key_when(head[0]), head[2]._priority

    # -- primitives for strategies that split popping from executing -----------------
    def pop_next(self, advance: bool = True) -> Event:
        """Remove the head without running it (the prototype's ``popNextEvent``).

        Clears Scheduled (as serviceOne does before ``process()``); with
        ``advance`` sets ``cur_tick`` to the event's ``when`` *even if it is
        squashed*, which is what the prototype did and gem5 does not.
        """
        heap = self._heap
        while True:
            key, tie, event = heappop(heap)
            if event._tie == tie:
                event._tie = None
                break
            if event._dups is not None and _is_live(event, tie):
                _forget_dup(event, tie)
                event._when = key_when(key)
                break
            self._offset += 1
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
        if event._managed and event._tie is None and event._dups is None:
            event.release()
        return None

    def set_cur_tick(self, when: int) -> None:
        """gem5 ``setCurTick``: a plain store, no monotonicity check."""
        self.cur_tick = when

    # -- primitives for engines that run a whole bin at once -------------------------------
    def head(self) -> Entry | None:
        """The live head entry (not removed), or ``None`` when empty."""
        return self._live_head()

    def pop_bin(self) -> list[Entry]:
        """Take every live entry of the head ``(when, priority)`` bin out of the heap, in service order.

        The events stay scheduled (and counted in ``len``): an engine runs them
        with :meth:`BatchQueue.run_entry`, or gives them back with
        :meth:`put_back`.  Stale entries met on the way are dropped.
        """
        heap = self._heap
        head = self._live_head()
        if head is None:
            return []
        key = head[0]
        out = []
        while heap and heap[0][0] == key:
            entry = heappop(heap)
            self._offset += 1  # a live entry out of the heap stays queued; a stale one is dropped
            event = entry[2]
            if event._tie == entry[1] or (event._dups is not None and _is_live(event, entry[1])):
                out.append(entry)
        return out

    def put_back(self, entries: Iterable[Entry]) -> None:
        """Return entries taken by :meth:`pop_bin`: same keys, same ties, so the same order as before."""
        heap = self._heap
        for entry in entries:
            heappush(heap, entry)
            self._offset -= 1

    def serve_bin(self, entries: list[Entry]) -> Event | None:
        """Serve entries taken by :meth:`pop_bin` exactly as ``service_one`` would have served them.

        Whatever their handlers insert that the queue would serve before the
        next entry (gem5's LIFO puts a same-key insertion first) is served
        first; entries descheduled or rescheduled meanwhile are skipped.  An
        exit event stops it and is returned, with the remaining entries put
        back.  Cheaper than :meth:`put_back` then :meth:`serve_until`: no
        second trip through the heap.
        """
        heap = self._heap
        for i, entry in enumerate(entries):
            key, tie, event = entry
            while heap:
                head = self._live_head()
                if head is None or head[0] > key or (head[0] == key and head[1] > tie):
                    break
                done = self.service_one()
                if done is not None:
                    self.put_back(entries[i:])
                    return done
            if event._tie == tie:
                event._tie = None
            elif event._dups is not None and _is_live(event, tie):
                _forget_dup(event, tie)
                self._offset -= 1  # out of the heap since pop_bin: now out of the queue too
                when = key_when(key)
                if not event._squashed:
                    self.cur_tick = when
                done = self._execute_duplicate(event, when)
                if done is not None:
                    self.put_back(entries[i + 1 :])
                    return done
                continue
            else:
                continue  # descheduled or rescheduled by an earlier event
            self._offset -= 1
            if event._squashed:
                event._squashed = False
            else:
                self.cur_tick = event._when
                event.process()
                if event._is_exit:
                    self.put_back(entries[i + 1 :])
                    return event
            if event._managed and event._tie is None and event._dups is None:
                event.release()
        return None

    def serve_until(self, key: int) -> Event | None:
        """``service_one`` while the head's packed key (:func:`~tickpar.kernel.eventkeys.pack_key`) is ``<= key``.

        Returns the exit event that stopped it, or ``None`` when the head is
        past ``key`` or the queue is empty.
        """
        while self._heap:
            head = self._live_head()
            if head is None or head[0] > key:
                return None
            done = self.service_one()
            if done is not None:
                return done
        return None

    def commit(self, ops: Iterable[Op], size_delta: int = 0, ties: Iterable[int] | None = None) -> int:
        """Make deferred insertions real, in the given order; returns how many were inserted.

        Each op gets the tie its insertion has in this position (gem5: the next
        insertion number; canonical: its source key), or the matching value of
        ``ties`` when given.  Only ops still live get a heap entry; the others
        (overridden by a later op, descheduled, or already run by the engine)
        still use up their insertion number, as in the sequential run.
        ``size_delta`` is the change in queued events the deferred operations
        made (:attr:`Deferred.size_delta`, summed).
        """
        heap = self._heap
        inserted = 0
        if ties is None and not self._canonical:
            # gem5 order, the common case: the next insertion numbers, LIFO.
            for op in ops:
                event, when, _source = op
                tie = next(_lifo_ties)
                if event._tie is op:
                    event._tie = tie
                elif event._dups is None or not _is_live(event, op):
                    continue
                else:
                    _forget_dup(event, op)
                    self._keep_duplicate(event, tie)
                heappush(heap, ((when << PRIO_BITS) + event._pkey, tie, event))
                inserted += 1
        else:
            tie_iter = iter(ties) if ties is not None else None
            for op in ops:
                event, when, source = op
                if tie_iter is not None:
                    tie = next(tie_iter)
                else:
                    seq = -next(_lifo_ties)
                    tie = UNSOURCED_BASE + seq if source is None else source
                if event._tie is op:
                    event._tie = tie
                elif event._dups is None or not _is_live(event, op):
                    continue
                else:
                    _forget_dup(event, op)
                    self._keep_duplicate(event, tie)
                heappush(heap, ((when << PRIO_BITS) + event._pkey, tie, event))
                inserted += 1
        self._offset += size_delta - inserted
        if self.debug_invariants:
            problems = self.check_invariants()
            if problems:
                raise AssertionError(f"{self.name}: queue invariants broken after commit: {'; '.join(problems)}")
        return inserted

    # -- invariants (gem5 debugVerify) -------------------------------------------------------
    def check_invariants(self) -> list[str]:
        """Problems with the queue's state, as gem5's ``debugVerify`` reports them; [] if none."""
        problems = []
        live = [(k, t, e) for (k, t, e) in self._heap if _is_live(e, t)]
        if len(live) != len(self):
            problems.append(f"queue size {len(self)} but {len(live)} live entries")
        seen: set[int] = set()
        for key, tie, event in live:
            if event._tie != tie:
                continue  # a double schedule's older entry: the event is legitimately queued twice
            if id(event) in seen:
                problems.append(f"Node already seen: {event.name}")
            seen.add(id(event))
            if event._when < self.cur_tick:
                problems.append(f"time goes backwards!: {event.name} at {event._when} < cur_tick {self.cur_tick}")
            if key != (event._when << PRIO_BITS) + event._pkey:
                problems.append(f"priority inverted!: {event.name} key does not match (when, priority)")
        return problems

    def pending(self) -> list[Event]:
        """Queued events in service order (for tests and debugging; O(n log n))."""
        return [e for (_k, t, e) in sorted(self._heap, key=lambda x: (x[0], x[1])) if _is_live(e, t)]

    def __repr__(self) -> str:
        return f"<EventQueue {self.name} cur_tick={self.cur_tick} size={len(self)} order={self.order}>"


EventQueue.tick_slot = vars(EventQueue)["cur_tick"]
# schedule() and post() pack keys as ``when * 256 + pkey`` (a specialised multiply): the layout must match.
assert 256 == 1 << PRIO_BITS


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
                tie = next(_lifo_ties)
                event._when = when
                event._tie = tie
                heappush(self._heap, (when * 256 + event._pkey, tie, event))
            else:
                _untyped(self.schedule)(event, when)
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
            _untyped(self.schedule)(event, when)

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
            _forget_dup(event, tie)
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
        elif event._dups is not None and _is_live(event, tie):
            _forget_dup(event, tie)
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
        if event._dups is None or not _is_live(event, op):
            return False
        _forget_dup(event, op)
        d.execs.append((key, tie, len(d.ops)))
        d.size_delta -= 1
        self._execute_duplicate(event, op[1])
        return True


Undo: TypeAlias = "tuple[Event, int, Any, bool, Any, int | None]"
"""What :class:`JournalQueue` journals per operation: the event's queue state before it.

``(event, when, tie, squashed, stale tie, source)``: plain tuples, one per
schedule, reschedule, deschedule and served event.
"""


@mypyc_attr(allow_interpreted_subclasses=True)
class JournalQueue(EventQueue):
    """An :class:`EventQueue` that can take back what it did: the primitive of engines that roll back (Time Warp).

    While :attr:`journal` is a list, every ``schedule``, ``reschedule`` and
    ``deschedule`` first appends the event's queue state as it was (an
    :data:`Undo` record), and :meth:`serve_next` journals the event it serves.
    :meth:`undo` puts a journal's states back, newest first; :meth:`repair`
    then makes the heap agree with the events again: entries no event holds any
    more go (so a source key that a re-execution issues again can never meet
    an old entry), and every event put back as scheduled gets its entry back.
    With :attr:`journal` ``None`` (the default) it is a plain queue.

    What the queue state is: an event's ``when``, whether it is scheduled and
    with which tie, its Squashed flag, and its stamped ``source`` (under
    canonical order the tie of a scheduled event is its source, which is how
    ``undo`` restores a source that the component overwrote before calling
    ``reschedule``).  Payloads belong to the model (see
    :meth:`tickpar.kernel.model.Component.save`).  ``checks`` must be on: a
    double schedule (``checks=False``) cannot be taken back.  Served events are
    not released (a managed event may be served again after an undo), and exit
    events run like any other: the engine decides where to stop.
    """

    __slots__ = ("journal",)

    def __init__(self, name: str = "main", order: str = "gem5", debug_invariants: bool = False) -> None:
        super().__init__(name, order=order, checks=True, debug_invariants=debug_invariants)
        #: Where operations are journaled (a list), or ``None``: not journaled.
        self.journal: list[Undo] | None = None

    def schedule(self, event: Event, when: int) -> None:
        journal = self.journal
        if journal is not None:
            journal.append((event, event._when, event._tie, event._squashed, event._stale, event.source))
        EventQueue.schedule(self, event, when)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        journal = self.journal
        if journal is not None:
            journal.append((event, event._when, event._tie, event._squashed, event._stale, event.source))
        EventQueue.reschedule(self, event, when, always)

    def deschedule(self, event: Event) -> None:
        journal = self.journal
        if journal is not None:
            journal.append((event, event._when, event._tie, event._squashed, event._stale, event.source))
        EventQueue.deschedule(self, event)

    def serve_next(self) -> Event:
        """Pop the live head, journal it (when :attr:`journal` is a list), set ``cur_tick`` and run it.

        ``service_one`` without release or exit handling; a squashed head is
        only unsquashed (``cur_tick`` stays).  The caller guarantees ``not
        empty()``; returns the event served.
        """
        heap = self._heap
        while True:
            _key, tie, event = heappop(heap)
            if event._tie == tie:
                break
            self._offset += 1
        journal = self.journal
        if journal is not None:
            journal.append((event, event._when, tie, event._squashed, event._stale, event.source))
        event._tie = None
        if event._squashed:
            event._squashed = False
        else:
            self.cur_tick = event._when
            event.process()
        return event

    def undo(self, journal: list[Undo]) -> None:
        """Put back the queue states ``journal`` recorded, newest first; call :meth:`repair` after the last one."""
        canonical = self._canonical
        for event, when, tie, squashed, stale, source in reversed(journal):
            event._when = when
            event._tie = tie
            event._squashed = squashed
            event._stale = stale
            # A scheduled event's canonical tie is its source (the component stamps a new one before
            # calling reschedule, so the journaled source may already be the new one).
            event.source = tie if canonical and tie is not None and tie >= 0 else source

    def repair(self, restored: Iterable[Event] = ()) -> None:
        """Rebuild the heap from the events: drop every entry no event holds; give each ``restored``
        event that is scheduled its entry back.  O(queue size)."""
        heap = []
        held: set[int] = set()
        for entry in self._heap:
            key, tie, event = entry
            if event._tie == tie and key == (event._when << PRIO_BITS) + event._pkey and id(event) not in held:
                heap.append(entry)
                held.add(id(event))
        for event in restored:
            if event._tie is not None and id(event) not in held:
                heap.append(((event._when << PRIO_BITS) + event._pkey, event._tie, event))
                held.add(id(event))
        heapify(heap)
        self._heap = heap
        self._offset = 0


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
