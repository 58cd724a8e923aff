"""gem5's event queue (``src/sim/eventq.{hh,cc}``), modelled in Python.

This module holds :class:`EventQueue`; its events are :mod:`tickpar.kernel.events`, its subclasses for
engines :class:`~tickpar.kernel.batchq.BatchQueue` (a deferred mode for parallel engines) and
:class:`~tickpar.kernel.journalq.JournalQueue` (undo, for strategies that roll back); import them all from
:mod:`tickpar.kernel.eventq`.  The semantics are those of gem5 v24 as recorded in
``docs/explanation/gem5-eventq.md`` and checked case by case in ``tests/test_eventq.py``:

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
entry; serving skips such stale entries.  Nothing outside the queue modules reads
those fields: the model sends messages through :meth:`EventQueue.post` (stamp and
schedule in one call, the plain case inlined), and engines use the primitives below (:data:`Entry` and
:func:`entry_live`, :meth:`EventQueue.head`, :meth:`EventQueue.pop_bin`,
:meth:`EventQueue.put_back`, :meth:`EventQueue.serve_bin`,
:meth:`EventQueue.serve_until`, :meth:`EventQueue.commit`, and
:class:`BatchQueue`'s deferred mode with :class:`Deferred`, :data:`Op`,
:func:`op_key` and :func:`op_live`; :class:`JournalQueue`'s journal, undo and
repair for strategies that roll back).  ``debug_invariants=True`` runs
:meth:`EventQueue.check_invariants` after every commit.

This module is also compiled with mypyc in the optional compiled build (setup.py,
``TICKPAR_COMPILED=1``), from this same source.  What that asks of it: exception classes
stay non-native, the ``threading.local`` subclass lives in :mod:`tickpar.kernel._interpreted`,
:data:`Op` is typed ``Any`` (ops are known by identity, which a typed tuple would lose),
events hash by identity explicitly, and a call that must hand a subclass the caller's own
objects goes through ``untyped``.  ``tests/test_kernel_build.py`` fails on each of those
differences; ``make test-compiled`` runs the suite on the compiled build.
"""

from __future__ import annotations

from collections.abc import Iterable
from heapq import heappop, heappush
from typing import Any, ClassVar

from mypy_extensions import mypyc_attr

from tickpar.kernel.eventkeys import PRIO_BITS, UNSOURCED_BASE, key_when
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

__all__ = [
    "ORDERS",
    "EventQueue",
]

ORDERS = ("gem5", "canonical")


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
        #: or put back), so that serving a live head and inserting an event touch no counter, which would cost
        #: instructions on every event (docs/measurements/2026-12-04-kernel-hot-path.md).
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
        tie = next(lifo_ties)
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
        tie = next(lifo_ties)
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
            tie = next(lifo_ties)
            event._when = when
            event._tie = tie
            heappush(self._heap, (when * 256 + event._pkey, tie, event))
        else:
            untyped(self.schedule)(event, when)

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
            forget_dup(event, tie)
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
            if event._dups is not None and is_live(event, tie):
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
                if event._dups is not None and is_live(event, tie):
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
        forget_dup(event, tie)  # popped: the heap and the queue lose it together
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
            if event._tie == entry[1] or (event._dups is not None and is_live(event, entry[1])):
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
            if event._dups is not None and is_live(event, tie):
                forget_dup(event, tie)
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

    # -- primitives for strategies that run a whole bin at once -------------------------------
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
            if event._tie == entry[1] or (event._dups is not None and is_live(event, entry[1])):
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
            elif event._dups is not None and is_live(event, tie):
                forget_dup(event, tie)
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
                tie = next(lifo_ties)
                if event._tie is op:
                    event._tie = tie
                elif event._dups is None or not is_live(event, op):
                    continue
                else:
                    forget_dup(event, op)
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
                    seq = -next(lifo_ties)
                    tie = UNSOURCED_BASE + seq if source is None else source
                if event._tie is op:
                    event._tie = tie
                elif event._dups is None or not is_live(event, op):
                    continue
                else:
                    forget_dup(event, op)
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
        live = [(k, t, e) for (k, t, e) in self._heap if is_live(e, t)]
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
        return [e for (_k, t, e) in sorted(self._heap, key=lambda x: (x[0], x[1])) if is_live(e, t)]

    def __repr__(self) -> str:
        return f"<EventQueue {self.name} cur_tick={self.cur_tick} size={len(self)} order={self.order}>"


def _quicken_run_loop() -> None:
    """Let CPython 3.11 specialise :meth:`EventQueue.run` before the first real simulation.

    3.11 quickens a code object only after it has been *entered* about 8 times
    (loop iterations do not count), and a simulation enters ``run`` once: the
    whole event loop would otherwise run as generic, unspecialised bytecode
    (docs/measurements/2026-12-06-code-comments.md).  Running it on empty queues
    changes nothing else.  Later CPythons warm up on loop back-edges too.
    """
    for _ in range(10):
        EventQueue("warm-up").run()


EventQueue.tick_slot = vars(EventQueue)["cur_tick"]
# schedule() and post() pack keys as ``when * 256 + pkey`` (a specialised multiply): the layout must match.
assert 256 == 1 << PRIO_BITS


_quicken_run_loop()
