"""Global virtual time (GVT) for optimistic LPs: a consistent cut over FIFO channels, collected by LP 0.

GVT is a lower bound on the key of every event any LP will still process
or roll back to: no message, and no anti-message, below it can ever arrive
anywhere.  Events processed below it are *committed*: their saved state and
their messages are freed (fossil collection) and they count.

The algorithm is Chandy and Lamport's snapshot (1985) applied to Time Warp,
as Mattern's GVT algorithm (1993) does with colours, here with *markers*
because every tickpar transport is FIFO per (sender, receiver) pair:

1. LP 0 starts round ``r``: it takes its *cut* (the smallest key still to
   process, :attr:`MarkerGVT.local_min`) and sends ``(MARK, r)`` to every peer.
2. An LP takes its cut when it first sees a marker of round ``r`` and sends
   ``(MARK, r)`` to every peer.  Until the marker from peer ``p`` arrives,
   every message and anti-message from ``p`` was sent before ``p``'s cut and
   received after this LP's: it was *in the channel* at the cut, and its key
   is folded into the LP's value (:meth:`MarkerGVT.on_message`).
3. With every peer's marker in, the LP reports ``min(cut, channel keys)`` to
   LP 0 (``(REPORT, r, key)``); LP 0 takes the minimum of all ``n`` reports
   and sends ``(GVT, r, key)`` to every peer.

The cut's minimum is a valid GVT (the snapshot is consistent: every message
is either in its sender's future, in a channel, or in its receiver's
state), and later rounds never give less.  A round is at most ``n(n-1)``
markers, ``n - 1`` reports and ``n - 1`` GVT packets, and no LP ever waits
for one: markers and reports are handled between events.

Keys are ``(packed (when, priority) key, tie)`` tuples
(:mod:`tickpar.kernel.eventkeys`); :data:`INF` is "nothing left".  Under
canonical order the tie is the event's source key, the same in every LP;
the policy (:mod:`tickpar.pdes.timewarp`) passes :data:`MIN_TIE` where ties
are not comparable across LPs.  A message's key is never below the key of
the event that sent it when every link crossing LPs has a latency of at
least one tick; with a zero-latency link cut, LP 0 rounds GVT down to the
first key of its tick (``tick_only``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tickpar.kernel.eventkeys import PRIO_BITS
from tickpar.pdes.packets import GVT, MARK, REPORT

__all__ = ["INF", "MIN_TIE", "Key", "MarkerGVT"]

Key = tuple[Any, int]
"""``(packed key, tie)``; the packed key is an int, or ``math.inf`` in :data:`INF`."""
#: Below every tie a key can have (canonical source keys and unsourced ties are above it).
MIN_TIE = -(1 << 80)
#: The key of "nothing left": above every real key.
INF: Key = (math.inf, 0)


class MarkerGVT:
    """One LP's side of the GVT rounds (see the module docstring); LP 0 also collects and announces.

    ``send(dst, packet)`` sends to a peer; ``local_min()`` is the LP's cut: the
    smallest key it still has to process.  :attr:`value` is the last GVT
    this LP learnt (``(-1, MIN_TIE)`` before the first round).
    """

    def __init__(
        self,
        index: int,
        peers: list[int],
        send: Callable[[int, tuple[Any, ...]], None],
        local_min: Callable[[], Key],
        tick_only: bool = False,
    ) -> None:
        self.index = index
        self.peers = peers
        self.parts = len(peers) + 1
        self.send = send
        self.local_min = local_min
        self.tick_only = tick_only
        #: The last round whose cut this LP took (0: none yet).
        self.round = 0
        #: Peers whose marker of :attr:`round` has not arrived: their messages are in the channel.
        self.waiting: set[int] = set()
        #: This LP's value for :attr:`round`: its cut, lowered by the channel keys seen since.
        self.cut_min: Key = INF
        #: LP 0: the reports of the round being collected, by LP.
        self.reports: dict[int, Key] = {}
        #: LP 0: a round is being collected.
        self.collecting = False
        self.value: Key = (-1, MIN_TIE)
        #: Rounds completed (GVT values learnt).
        self.rounds = 0

    # -- the cut --------------------------------------------------------------------------------
    def start(self) -> Key | None:
        """LP 0: start the next round.  Returns the GVT when the round completes at once (no peers)."""
        self.collecting = True
        self.reports = {}
        return self._cut(self.round + 1)

    def _cut(self, r: int) -> Key | None:
        self.round = r
        self.cut_min = self.local_min()
        self.waiting = set(self.peers)
        for p in self.peers:
            self.send(p, (MARK, r))
        return self._report() if not self.waiting else None

    def on_mark(self, src: int, r: int) -> Key | None:
        """A peer's marker.  Returns the GVT when it completes LP 0's round."""
        if r > self.round:
            self._cut(r)
        self.waiting.discard(src)
        return self._report() if not self.waiting and r == self.round else None

    def on_message(self, src: int, key: Key) -> None:
        """A message or anti-message with ``key`` from ``src``: in the channel if ``src``'s marker is still due."""
        if key < self.cut_min and src in self.waiting:
            self.cut_min = key

    def _report(self) -> Key | None:
        self.waiting = set()
        if self.index == 0:
            return self.on_report(0, self.round, self.cut_min)
        self.send(0, (REPORT, self.round, self.cut_min))
        return None

    # -- LP 0 -----------------------------------------------------------------------------------
    def on_report(self, src: int, r: int, key: Key) -> Key | None:
        """LP 0: a report of round ``r``.  Returns the round's GVT (sent to every peer) once all are in."""
        self.reports[src] = key
        if len(self.reports) < self.parts:
            return None
        gvt = min(self.reports.values())
        if self.tick_only and gvt[0] != math.inf:
            gvt = ((gvt[0] >> PRIO_BITS) << PRIO_BITS, MIN_TIE)
        self.collecting = False
        self.reports = {}
        for p in self.peers:
            self.send(p, (GVT, r, gvt))
        self.learn(gvt)
        return gvt

    def learn(self, gvt: Key) -> None:
        """A round's GVT (announced by LP 0, or computed by it)."""
        if gvt > self.value:
            self.value = gvt
        self.rounds += 1
