"""Quantum synchronisation: gem5's ``sim_quantum`` barrier at fixed boundaries, and par-gem5's relaxed causality.

gem5's multi-queue mode schedules a ``GlobalSyncEvent`` every ``simQuantum``
ticks: every queue serves its events up to the boundary, all threads meet at a
barrier, and each queue then inserts the events the other queues sent it
during the quantum (``asyncInsert`` during it, ``handleAsyncInsertions`` at
the barrier).  :class:`QuantumSync` is that, on the window machinery of
:class:`~tickpar.pdes.window.WindowSync`: the windows end at the multiples of
the quantum ``Q`` (``sync_args["quantum"]``), the boundary of the quantum that
holds the global next event time (empty quanta are skipped: nothing would run
in them), and at the barrier every LP's clock is set to the boundary, as
gem5's queues are at the sync event's tick.

Where gem5 differs: its ``GlobalSyncEvent`` runs at ``Progress_Event_Pri``
(95) in the boundary tick, so gem5 serves the boundary tick's events of lower
priority before the barrier; here the boundary tick belongs wholly to the next
quantum (``when < boundary`` runs), which keeps the exactness argument below
free of priorities.  Messages are inserted in LP order (gem5: in the order
they reached the async list), so a run is deterministic.

With ``Q`` no larger than the smallest latency of a link crossing LPs, a
message sent at ``t >= kQ`` arrives at ``>= (k+1)Q``, the boundary: it is
inserted before its receiver runs anything at its tick, and the run is
exactly the conservative window's (exact in canonical order).  With a larger
``Q`` a message can arrive for a tick its receiver has already passed (a
*late* event: ``when`` below the boundary).  ``sync_args["late"]`` says what
then happens:

``clamp`` (par-gem5's relaxed causality)
    the event is scheduled at the receiver's current tick, the boundary;
    the policy counts late events and their lateness (boundary - when) in
    ticks: ``late_events``, ``lateness_total_ticks``, ``lateness_max_ticks``;
``error`` (gem5's ``assert(when >= curTick())``)
    the insertion is a :class:`~tickpar.kernel.eventq.SchedulingError` (verdict
    ``causality``) naming the event, its ``when`` and the boundary.

The sink never raises a lookahead violation (``checks_lookahead`` is false):
crossing LPs faster than the quantum is what this policy measures.
"""

from __future__ import annotations

from typing import Any

from tickpar.kernel.model import Link
from tickpar.pdes.lp import INF, LogicalProcess
from tickpar.pdes.plan import Plan
from tickpar.pdes.window import WindowSync

__all__ = ["LATE_MODES", "QuantumSync"]

#: What happens to an event that reaches its queue behind the queue's clock.
LATE_MODES = ("clamp", "error")


class QuantumSync(WindowSync):
    """gem5's quantum barrier for one LP; ``sync_args``: ``quantum`` (ticks, or None: one quantum) and ``late``."""

    name = "quantum"
    checks_lookahead = False

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan)
        args = plan.sync_args
        quantum = args.get("quantum")
        self.quantum: int | None = None if quantum is None else int(quantum)
        self.late = args.get("late", "clamp")
        if self.late not in LATE_MODES:
            raise ValueError(f"late={self.late!r} is not allowed: one of {', '.join(LATE_MODES)}")
        #: Every LP's clock at the last barrier: the boundary of the quantum just served.
        self.boundary = 0
        self.late_events = 0
        self.lateness_total = 0
        self.lateness_max = 0

    def window_end(self, gmin: float) -> float:
        """The next multiple of the quantum above ``gmin`` (the end of the quantum that holds it)."""
        if self.quantum is None:
            return INF
        self.boundary = (int(gmin) // self.quantum + 1) * self.quantum
        return self.boundary

    def run(self, lp: LogicalProcess) -> None:
        if self.late == "clamp":
            lp.admit = self.admit
        super().run(lp)

    def exchange(self, lp: LogicalProcess) -> float:
        """The barrier: clocks to the boundary, then the messages of the quantum are inserted (asyncInsert)."""
        queue = lp.queue
        # gem5: every queue is at the sync event's tick; but never past simulate()'s limit, which a
        # quantum longer than the rest of the run would overshoot (the limit event is still to come).
        clock = self.boundary if lp.end_tick is None else min(self.boundary, lp.end_tick)
        if clock > queue.cur_tick:
            queue.set_cur_tick(clock)
        gmin = super().exchange(lp)
        # Nothing can run before the boundary any more (late events were moved to it).
        return gmin if gmin == INF else max(gmin, self.boundary)

    def admit(self, link: Link, when: int) -> int:
        """``LogicalProcess.admit`` hook (late=clamp): a late event is moved to the boundary, and counted."""
        boundary = self.boundary
        if when >= boundary:
            return when
        lateness = boundary - when
        self.late_events += 1
        self.lateness_total += lateness
        if lateness > self.lateness_max:
            self.lateness_max = lateness
        return boundary

    def stats(self) -> dict[str, Any]:
        """This LP's late events (as a receiver) and their lateness in ticks."""
        return {
            "late_events": self.late_events,
            "lateness_total_ticks": self.lateness_total,
            "lateness_max_ticks": self.lateness_max,
        }
