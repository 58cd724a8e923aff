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
        #: Packets of a later round from a fast peer (only non-empty queues are kept).
        self._early: dict[int, deque[tuple[Any, ...]]] = {}
        #: This LP's next tick after the last exchange (what :meth:`LogicalProcess.local_next` would say).
        self.head: float = INF

    def window_end(self, gmin: float) -> float:
        """The tick below which the window that starts at the global minimum ``gmin`` runs events."""
        return gmin + self.lookahead

    def run(self, lp: LogicalProcess) -> None:
        """Windows until nothing is left before the end anywhere."""
        exchange = self.exchange if lp.peers else None
        window_end = self.window_end
        serve = lp.serve
        while True:
            try:
                if exchange is None:
                    gmin = self.head = lp.local_next()
                else:
                    gmin = exchange(lp)
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
                ran = serve(window_end(gmin), self.head)
            except BaseException as exc:
                lp.fail(exc)
                self.abort(lp)
                return
            lp.windows += 1
            if ran:
                lp.rounds += 1

    def exchange(self, lp: LogicalProcess) -> float:
        """One barrier round: send every peer its messages and my next time; deliver; the global minimum.

        Also sets :attr:`head`, this LP's next tick after the deliveries.

        The hot path of every window, written for few bytecodes (it runs once
        per window per LP): no per-peer method calls beyond the transport's.
        """
        head = mine = lp.local_next()
        if lp.out_min < mine:
            mine = lp.out_min
        lp.out_min = INF
        peers = lp.peers
        outbox = lp.outbox
        send = lp.transport.send
        sent = 0
        for p in peers:
            box = outbox[p]
            if box:
                outbox[p] = []
                sent += len(box)
                send(p, (DATA, box, mine))
            else:
                send(p, (DATA, (), mine))  # never the outbox itself: threads pass packets by reference
        lp.messages += sent
        lp.packets += len(peers)
        gmin = mine
        aborted = False
        for src, packet in self.gather(lp):
            if packet[0] == ABORT:
                aborted = True
                continue
            if packet[1]:
                first = lp.deliver(src, packet[1])
                if first < head:
                    head = first
            if packet[2] < gmin:
                gmin = packet[2]
        if aborted:
            raise Aborted
        self.head = head
        return gmin

    def gather(self, lp: LogicalProcess) -> list[tuple[int, tuple[Any, ...]]]:
        """One packet from every peer, in LP order (a fast peer's next-round packet waits for the next round)."""
        early = self._early
        peers = lp.peers
        if not early and len(peers) == 1:
            return [lp.wait()]
        got: dict[int, tuple[Any, ...]] = {}
        for p in list(early):
            queued = early[p]
            got[p] = queued.popleft()
            if not queued:
                del early[p]
        while len(got) < len(peers):
            src, packet = lp.wait()
            if src in got:
                early.setdefault(src, deque()).append(packet)
            else:
                got[src] = packet
        return [(p, got[p]) for p in peers]

    def abort(self, lp: LogicalProcess) -> None:
        """Tell every peer in place of this round's packet (``lp.error``), and take theirs."""
        for p in lp.peers:
            lp.send(p, (ABORT, lp.error))
        if lp.peers:
            self.gather(lp)

    def abandon(self, lp: LogicalProcess) -> None:
        """A peer aborted before the first round: nothing more to exchange."""
        return None
