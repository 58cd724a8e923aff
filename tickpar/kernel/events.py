"""gem5's events as the queue sees them: :class:`Event`, priorities, the scheduling errors, heap entries and ops.

What :mod:`tickpar.kernel.gem5queue` (the queue) and its subclasses (:mod:`tickpar.kernel.batchq`,
:mod:`tickpar.kernel.journalq`) hold and hand out; the semantics are described in
:mod:`tickpar.kernel.gem5queue`.  Import these names from :mod:`tickpar.kernel.eventq`, which gathers the
queue's whole API in one place.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeAlias

from mypy_extensions import mypyc_attr

from tickpar.kernel.eventkeys import PRIO_BITS, PRIO_OFFSET

__all__ = [
    "Entry",
    "Event",
    "EventNotFound",
    "Op",
    "Priority",
    "SchedulingError",
    "Violation",
    "entry_live",
    "forget_dup",
    "is_live",
    "lifo_ties",
    "op_key",
    "op_live",
    "untyped",
]


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
# ``next(lifo_ties)`` with no negation (one int less to make per insertion); canonical order's unsourced
# ties use the insertion number itself, ``-tie``.  CPython 3.11 specialises a call of the builtin ``next``,
# not one of the bound ``__next__`` method-wrapper (docs/measurements/2026-12-04-kernel-hot-path.md).
lifo_ties = itertools.count(-1, -1)


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


def untyped(method: Any) -> Any:
    """``method`` as an untyped callable: in the compiled build, a call through it passes its arguments as
    they are (a native call of ``schedule(event, when: int)`` would make ``when`` a plain ``int`` copy)."""
    return method


def is_live(event: Event, tie: Any) -> bool:
    """True when the entry (or pending op) ``tie`` of ``event`` is still one the queue will serve."""
    if _same(event._tie, tie):
        return True
    dups = event._dups
    return dups is not None and any(_same(d, tie) for d in dups)


def _same(held: Any, tie: Any) -> bool:
    # Ties are ints (compared by value); pending ops are compared by identity (two may be equal tuples).
    return held is tie or (tie.__class__ is int and held == tie)


def forget_dup(event: Event, tie: Any) -> None:
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
tuples (a named tuple costs instructions on every event of a batch:
docs/measurements/2026-12-06-code-comments.md); :func:`entry_live` says whether one is still live.
"""


def entry_live(entry: Entry) -> bool:
    """True while nothing (deschedule, reschedule, serving) has retired this entry."""
    event = entry[2]
    return event._tie == entry[1] or (event._dups is not None and is_live(event, entry[1]))


# Typed ``Any``, not ``tuple[Event, int, int | None]``: an op is known by identity (``event._tie is op``),
# and mypyc would unbox a typed tuple into a C struct and box a *new* tuple object at every use, so the
# compiled kernel's identity test would fail silently (tests/test_kernel_build.py holds it).
Op: TypeAlias = Any
"""One heap insertion deferred during a batch: a plain ``(event, when, source)`` tuple.

The op object itself marks its event as scheduled by it (``event._tie is op``)
until :meth:`EventQueue.commit` gives it its real tie.  Plain tuples, not a
named class: one is made per message a batch sends, and a named tuple costs
more to build (docs/measurements/2026-12-06-code-comments.md).  Read ops with :func:`op_key` and :func:`op_live`.
"""


def op_key(op: Op) -> int:
    """The packed ``(when, priority)`` key of a deferred insertion."""
    return (op[1] << PRIO_BITS) + op[0]._pkey


def op_live(op: Op) -> bool:
    """True while ``op`` is its event's pending insertion (or one of its double-schedule duplicates)."""
    return is_live(op[0], op)
