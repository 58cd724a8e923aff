"""Null-message synchronisation (Chandy–Misra–Bryant).

Each input channel has a clock: the sender's promise that it sends nothing
earlier.  An LP runs events with ``when < safe`` (``safe`` = the smallest input
clock; *strictly* below it, so a message at exactly ``safe`` is still in time),
one lookahead step beyond its head at a time, and after each step sends on each
output channel its messages and the promise ``min(next local event, safe) +
lookahead`` (a null message when there are no messages; sent only when the
promise grew).  With an ``end_tick`` an LP is done when ``safe >
end_tick`` and nothing of its own runs before the end; it then closes its
channels.  Without one, global quiescence is detected with Safra's token
algorithm (:mod:`tickpar.pdes.safra`); LP 0 then broadcasts ``STOP``.  Every LP
ends by sending ``CLOSE`` to every other LP and draining until it has a
``CLOSE`` from each, so no packet is left unreceived (MPI needs this to
finalise).

A message below its channel's clock, or a promise that would go backwards, is a
:class:`~tickpar.pdes.errors.PromiseError` (verdict ``causality``).  Under gem5
order the insertion order of messages depends on when they arrive, so results
may vary from run to run (gem5's own nondeterminism).
"""

from __future__ import annotations

from tickpar.kernel.simloop import before_end
from tickpar.pdes.errors import Aborted, PromiseError
from tickpar.pdes.lp import INF, LogicalProcess
from tickpar.pdes.packets import ABORT, CLOSE, DATA, STOP, TOKEN
from tickpar.pdes.plan import Plan
from tickpar.pdes.safra import SafraTermination
from tickpar.pdes.window import WindowSync
from tickpar.plugins import DeadlockError

__all__ = ["NullMessageSync"]


class NullMessageSync:
    """The null-message policy for one LP."""

    name = "null-message"
    #: A message sent less than the lookahead ahead is a LookaheadError (the promise would be broken).
    checks_lookahead = True

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.closed: set[int] = set()

    def run(self, lp: LogicalProcess) -> None:
        """Serve below the input clocks, promise, wait, until the end (or quiescence)."""
        if not lp.peers:
            WindowSync(self.plan).run(lp)  # alone: nothing to synchronise with
            return
        try:
            self._loop(lp)
        except Aborted:
            self.close(lp, aborting=True)
            raise
        except (DeadlockError, ConnectionError):
            raise
        except BaseException as exc:
            lp.fail(exc)
            self.abort(lp)
            return
        self.close(lp, aborting=False)

    def _loop(self, lp: LogicalProcess) -> None:
        q = lp.queue
        end = lp.end_tick
        lookahead = lp.lookahead
        clocks: dict[int, float] = dict.fromkeys(self.plan.inputs(lp.index), 0)
        outputs = self.plan.outputs(lp.index)
        last: dict[int, float] = dict.fromkeys(outputs, -1)
        safra = SafraTermination() if end is None else None
        stop = False
        while True:
            safe = min(clocks.values()) if clocks else INF
            # Serve up to ``safe`` one lookahead step at a time, promising after each step.  Promising
            # only after the whole stretch lets two LPs fall into lock-step: each serves two
            # lookaheads' worth while the other waits for its promise, which slowed the loop
            # (docs/measurements/2026-12-03-freethreaded.md).  A promise after each step lets the
            # partner start on it at once.
            # A step that ran nothing new (the head is past the end, or gem5-order ties hold it) ends
            # the stretch as one serve up to ``safe`` would have.
            while True:
                head = q.next_key()
                step = safe if head is None else min(safe, head[0] + lookahead)
                ran = lp.serve(step)
                if ran:
                    lp.rounds += 1
                key = q.next_key()
                self._promise(lp, min(key[0] if key is not None else INF, safe) + lookahead, outputs, last, safra)
                if step >= safe or not ran or key == head:
                    break
            passive = key is None or not before_end(key[0], key[1], end)
            if safra is None:
                if safe > end and passive:  # type: ignore[operator]
                    break
            elif passive and safra.passive(lp):
                break
            # wait for at least one packet, then take everything already here
            packet_src, packet = lp.wait()
            while True:
                kind = packet[0]
                if kind == DATA:
                    msgs = packet[1]
                    if msgs:
                        clock = clocks.get(packet_src, 0)
                        if msgs[0][1] < clock:
                            raise PromiseError(
                                f"LP {lp.index}: message for tick {msgs[0][1]} from LP {packet_src} "
                                f"below its promise {clock}"
                            )
                        lp.deliver(packet_src, msgs)
                        if safra is not None:
                            safra.received(len(msgs))
                    if packet_src in clocks:
                        if packet[2] < clocks[packet_src]:
                            raise PromiseError(
                                f"LP {lp.index}: promise from LP {packet_src} went back "
                                f"({clocks[packet_src]} -> {packet[2]})"
                            )
                        clocks[packet_src] = packet[2]
                elif kind == TOKEN:
                    if safra is not None:
                        safra.on_token(packet[1], packet[2])
                elif kind == STOP:
                    stop = True
                elif kind == ABORT:
                    raise Aborted
                elif kind == CLOSE:
                    self.closed.add(packet_src)
                    if packet_src in clocks:
                        clocks[packet_src] = INF
                nxt = lp.poll()
                if nxt is None:
                    break
                packet_src, packet = nxt
            if stop:
                break

    @staticmethod
    def _promise(
        lp: LogicalProcess, promise: float, outputs: list[int], last: dict[int, float], safra: SafraTermination | None
    ) -> None:
        """Send each output channel its messages and ``promise`` (a null message: none, and it grew)."""
        end = lp.end_tick
        for p in outputs:
            old = last[p]
            if lp.outbox[p] or (promise > old and not (end is not None and old > end)):
                if promise < old:
                    raise PromiseError(f"LP {lp.index}: promise to LP {p} went back ({old} -> {promise})")
                box = lp.take_outbox(p)
                lp.send(p, (DATA, box, promise))
                last[p] = promise
                if box:
                    if safra is not None:
                        safra.sent(len(box))
                else:
                    lp.null_messages += 1
        lp.out_min = INF

    def close(self, lp: LogicalProcess, aborting: bool) -> None:
        """Send CLOSE to every peer and drain until every peer's CLOSE is in."""
        for p in lp.peers:
            lp.send(p, (CLOSE,))
        while len(self.closed) < len(lp.peers):
            src, packet = lp.wait()
            if packet[0] == CLOSE:
                self.closed.add(src)
            elif packet[0] == DATA and packet[1] and not aborting and lp.error is None:
                raise RuntimeError(f"LP {lp.index}: data from LP {src} after termination")

    def abort(self, lp: LogicalProcess) -> None:
        """Tell every peer this LP failed (``lp.error``), then close."""
        for p in lp.peers:
            lp.send(p, (ABORT, lp.error))
        self.close(lp, aborting=True)

    def abandon(self, lp: LogicalProcess) -> None:
        """A peer aborted before the first round: close."""
        self.close(lp, aborting=True)
