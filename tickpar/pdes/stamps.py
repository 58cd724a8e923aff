"""gem5-order tie accounting: insertion stamps, and the order a single queue would have inserted in.

Under ``order=gem5`` LP queues are :class:`CountingQueue`\\ s, which stamp every
insertion with where it was made: the ``(when, priority)`` and execution id of
the event that was running (its *parent*), the insertion's number within that
execution, and up to :data:`STAMP_DEPTH` levels of the parent's own stamp.  From
two stamps :func:`inserted_earlier` tells the order in which a single queue
would have made the two insertions (parents in one bin run LIFO, so each
ancestor level flips the order).  When an event is served and the next one in
its ``(when, priority)`` bin was queued before it and came from another LP,
that is a *cross-LP tie*; it is a *reorder* when the single queue would have
inserted the served one first (gem5 serves a bin LIFO, so it would have served
the other first), and *unresolved* when the stamps run out of levels.  The
counts are taken along the parallel run's own trajectory
(:meth:`tickpar.pdes.lp.LogicalProcess.serve`).
"""

from __future__ import annotations

from tickpar.kernel.eventq import Event, EventQueue

__all__ = ["STAMP_DEPTH", "CountingQueue", "Stamp", "inserted_earlier"]

#: Ancestor levels kept per insertion stamp (deeper ties are reported as unresolved).
STAMP_DEPTH = 8

Stamp = tuple[int, int, int, int, tuple[tuple[int, int, int, int], ...]]
"""``(parent when, parent priority, parent execution id, k, ancestors)``: where an insertion was made.

``k`` numbers the insertions made while the parent ran; ``ancestors`` are the
parent's own ``(when, priority, execution id, k)`` levels, nearest first.  At
``init`` (before anything runs) the parent is ``(-1, -1, -1)`` and ``k`` is the
event's canonical source key, which orders init insertions as
``Model.start`` does (component id, then the component's own sequence).
"""


def inserted_earlier(a: Stamp, b: Stamp) -> bool | None:
    """Whether the single-queue run makes insertion ``a`` before ``b``; ``None`` when the stamps cannot tell.

    Insertions are ordered by their parents' execution order; parents in the
    same ``(when, priority)`` bin run LIFO (gem5), i.e. in the reverse of their
    own insertion order, hence the flip at each ancestor level.
    """
    flip = False
    levels_a = ((a[0], a[1], a[2], a[3]), *a[4])
    levels_b = ((b[0], b[1], b[2], b[3]), *b[4])
    for x, y in zip(levels_a, levels_b, strict=False):
        if x[0] != y[0] or x[1] != y[1]:
            return ((x[0], x[1]) < (y[0], y[1])) != flip
        if x[2] == y[2]:
            if x[3] == y[3]:
                return None
            return (x[3] < y[3]) != flip
        flip = not flip
    return None


class CountingQueue(EventQueue):
    """An :class:`EventQueue` that stamps every insertion with where it was made (see :data:`Stamp`).

    ``meta`` maps a queued event (by ``id``) to ``(stamp, origin lp, insertion
    number)``.  The LP calls :meth:`enter` before serving each event; a
    message delivered from another LP carries the sender's stamp
    (:attr:`incoming`).
    """

    __slots__ = ("_ins", "_k", "base", "incoming", "lp", "meta")

    def __init__(self, name: str, order: str, lp: int) -> None:
        super().__init__(name, order=order)
        self.lp = lp
        #: (when, priority, execution id, ancestors) of the running event; None during init.
        self.base: tuple[int, int, int, tuple[tuple[int, int, int, int], ...]] | None = None
        self.incoming: tuple[Stamp, int] | None = None
        self.meta: dict[int, tuple[Stamp, int, int]] = {}
        self._ins = 0
        self._k = 0

    def stamp(self, source: int | None) -> Stamp:
        """The stamp of an insertion made now (by the running event, or at init)."""
        base = self.base
        if base is None:
            return (-1, -1, -1, source if source is not None else -1, ())
        self._k += 1
        return (base[0], base[1], base[2], self._k, base[3])

    def enter(self, stamp: Stamp | None, when: int, priority: int, exec_id: int) -> None:
        """The event about to run: its own insertion ``stamp`` becomes its children's first ancestor."""
        if stamp is None:
            anc: tuple[tuple[int, int, int, int], ...] = ()
        else:
            anc = ((stamp[0], stamp[1], stamp[2], stamp[3]), *stamp[4][: STAMP_DEPTH - 2])
        self.base = (when, priority, exec_id, anc)
        self._k = 0

    def _note(self, event: Event) -> None:
        self._ins += 1
        incoming = self.incoming
        if incoming is not None:
            self.meta[id(event)] = (incoming[0], incoming[1], self._ins)
        else:
            self.meta[id(event)] = (self.stamp(event.source), self.lp, self._ins)

    def schedule(self, event: Event, when: int) -> None:
        super().schedule(event, when)
        self._note(event)

    def reschedule(self, event: Event, when: int, always: bool = False) -> None:
        super().reschedule(event, when, always)
        self._note(event)

