"""Window synchronisation (YAWNS; gem5's ``sim_quantum`` barrier placed at the global next event time).

Every round each LP sends every other LP one packet ``(DATA, messages, local
next time)``, where the local next time is the smaller of its queue head (if it
runs before the end) and the messages it sent; from the ``n`` values every LP
computes the same global minimum ``T`` and runs the events with ``when <
window_end(T)``, where :meth:`WindowSync.window_end` is ``T + lookahead``.  A
message sent from an event at ``t >= T`` arrives at ``>= t + lookahead >= T +
lookahead``: in the next window, inserted before its receiver runs anything at
its tick, so the canonical order is reproduced exactly.  The run ends when ``T``
is infinite (nothing before the end anywhere, nothing in flight: every message
has been delivered at the barrier).

Under gem5 order messages are inserted at the barrier in LP order, as gem5's
``handleAsyncInsertions`` does, so the result is deterministic.

A policy with other window ends (gem5's fixed quantum boundaries, a quantum
larger than the lookahead) subclasses :class:`WindowSync` and overrides
:meth:`~WindowSync.window_end` (and sets ``checks_lookahead`` and the LP's
``admit`` hook as its contract needs).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from tickpar.pdes.errors import Aborted
from tickpar.pdes.lp import INF, LogicalProcess
from tickpar.pdes.packets import ABORT, DATA
from tickpar.pdes.plan import Plan
from tickpar.plugins import DeadlockError

__all__ = ["WindowSync"]


class WindowSync:
    """The window (barrier) policy for one LP; one instance per LP (it keeps the LP's early packets)."""

    name = "window"
    #: A message sent less than the lookahead ahead is a LookaheadError (the window's correctness condition).
    checks_lookahead = True

    def __init__(self, plan: Plan) -> None:
        self.lookahead: float = INF if plan.lookahead is None else plan.lookahead
        self._early: dict[int, deque[tuple[Any, ...]]] = {}

    def window_end(self, gmin: float) -> float:
        """The tick below which the window that starts at the global minimum ``gmin`` runs events."""
        return gmin + self.lookahead

    def run(self, lp: LogicalProcess) -> None:
        """Windows until nothing is left before the end anywhere."""
        while True:
            try:
                gmin = self.exchange(lp) if lp.peers else lp.local_next()
            except (Aborted, DeadlockError, ConnectionError):
                raise
            except BaseException as exc:
                # A delivery failed after this round was complete: tell the peers in the next one.
                lp.fail(exc)
                self.abort(lp)
                return
            if gmin == INF:
                return
            try:
                n = lp.serve(lp.bound(self.window_end(gmin)))
            except BaseException as exc:
                lp.fail(exc)
                self.abort(lp)
                return
            lp.windows += 1
            if n:
                lp.rounds += 1

    def exchange(self, lp: LogicalProcess) -> float:
        """One barrier round: send every peer its messages and my next time; deliver; the global minimum."""
        mine = lp.local_next()
        if lp.out_min < mine:
            mine = lp.out_min
        for p in lp.peers:
            lp.send(p, (DATA, lp.take_outbox(p), mine))
        lp.out_min = INF
        got = self.gather(lp)
        aborted = False
        gmin = mine
        for src in lp.peers:
            packet = got[src]
            if packet[0] == ABORT:
                aborted = True
                continue
            if packet[1]:
                lp.deliver(src, packet[1])
            if packet[2] < gmin:
                gmin = packet[2]
        if aborted:
            raise Aborted
        return gmin

    def gather(self, lp: LogicalProcess) -> dict[int, tuple[Any, ...]]:
        """One packet from every peer (a fast peer's next-round packet waits for the next round)."""
        early = self._early
        got: dict[int, tuple[Any, ...]] = {}
        for p in lp.peers:
            if early.get(p):
                got[p] = early[p].popleft()
        while len(got) < len(lp.peers):
            src, packet = lp.wait()
            if src in got:
                early.setdefault(src, deque()).append(packet)
            else:
                got[src] = packet
        return got

    def abort(self, lp: LogicalProcess) -> None:
        """Tell every peer in place of this round's packet (``lp.error``), and take theirs."""
        for p in lp.peers:
            lp.send(p, (ABORT, lp.error))
        if lp.peers:
            self.gather(lp)

    def abandon(self, lp: LogicalProcess) -> None:
        """A peer aborted before the first round: nothing more to exchange."""
        return None
