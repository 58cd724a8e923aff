""":class:`JournalQueue`: an event queue that can take back what it did, for strategies that roll back (Time Warp).
"""

from __future__ import annotations

from collections.abc import Iterable
from heapq import heapify, heappop
from typing import Any, TypeAlias

from mypy_extensions import mypyc_attr

from tickpar.kernel.eventkeys import PRIO_BITS
from tickpar.kernel.events import Event
from tickpar.kernel.gem5queue import EventQueue

__all__ = [
    "JournalQueue",
    "Undo",
]


Undo: TypeAlias = "tuple[Event, int, Any, bool, Any, int | None]"
"""What :class:`JournalQueue` journals per operation: the event's queue state before it.

``(event, when, tie, squashed, stale tie, source)``: plain tuples, one per
schedule, reschedule, deschedule and served event.
"""


@mypyc_attr(allow_interpreted_subclasses=True)
class JournalQueue(EventQueue):
    """An :class:`EventQueue` that can take back what it did: the primitive of strategies that roll back (Time Warp).

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
