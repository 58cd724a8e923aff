"""multicore's clocked components and the output queues that own their long-lived send events.

:class:`PacketQueue` (a cache's ``cpuSidePort``/``memSidePort``) is gem5's ``PacketQueue``;
:class:`LayerQueue` (a crossbar layer) sends at stored ready times, unclamped (the package docstring,
"Three queue kinds own the long-lived events").
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from typing import Any

from tickpar.kernel.model import Component, Link, Model, ModelEvent

from .packets import Packet


class Clocked(Component):
    """A component with a clock period (gem5 ``ClockedObject``)."""

    def __init__(self, model: Model, name: str, period: int, work_us: float) -> None:
        super().__init__(model, name)
        self.period = period
        self.work_us = work_us

    def clock_edge(self, cycles: int = 0) -> int:
        """gem5 ``clockEdge(Cycles(n))``: ``cur_tick`` rounded up to the period, plus ``n`` periods."""
        p = self.period
        return -(-self.queue.cur_tick // p) * p + cycles * p


class PacketQueue:
    """gem5's ``PacketQueue``: a port's packets sorted by ready time, sent by one named ``sendEvent``.

    ``route(pkt)`` picks the link a packet leaves on.  ``gate(pkt)`` (optional,
    used with direct calls) returns a tick before which the peer will not take
    the packet; the send is then held until that tick.
    """

    __slots__ = ("deferrals", "entries", "event", "gate", "owner", "route", "sent", "seq")

    def __init__(
        self,
        owner: Clocked,
        port: str,
        route: Callable[[Packet], Link],
        gate: Callable[[Packet], int] | None = None,
    ) -> None:
        self.owner = owner
        self.route = route
        self.gate = gate
        self.entries: list[tuple[int, int, Packet]] = []
        self.seq = 0
        self.sent = 0
        self.deferrals = 0
        self.event: ModelEvent = owner.event(f"{port}.sendEvent", self.process_send_event)

    def sched_send_timing(self, pkt: Packet, when: int) -> None:
        """gem5 ``schedSendTiming``: insert by ready time (after equal ones); re-arm if it is first."""
        self.seq += 1
        entry = (when, self.seq, pkt)
        entries = self.entries
        if not entries or when >= entries[-1][0]:
            entries.append(entry)  # the common case: ready no earlier than the last one
        else:
            bisect.insort(entries, entry)
        if entries[0] is entry:
            self.sched_send_event(when)

    def sched_send_event(self, when: int) -> None:
        """gem5 ``schedSendEvent``: at least one tick ahead; schedule, or move the event earlier."""
        owner = self.owner
        when = max(when, owner.queue.cur_tick + 1)
        event = self.event
        if not event.scheduled:
            owner.schedule(event, when)
        elif when < event.when:
            owner.reschedule(event, when)

    def process_send_event(self, _payload: int) -> None:
        """gem5 ``sendDeferredPacket``: send the head packet, then re-arm for the next one."""
        owner = self.owner
        if owner.work_us:
            owner.work(owner.work_us)
        entries = self.entries
        if not entries:
            return  # a spurious wake-up: only an executor that runs one event twice gets here
        pkt = entries[0][2]
        if self.gate is not None:
            until = self.gate(pkt)
            if until > owner.queue.cur_tick:
                # The peer is busy (a refused tryTiming): hold the packet until it frees up.
                self.deferrals += 1
                owner.schedule(self.event, until)
                return
        entries.pop(0)
        self.sent += 1
        self.route(pkt).send(pkt)
        if entries:
            self.sched_send_event(entries[0][0])

    def save_state(self) -> tuple[Any, ...]:
        """What changes (for engines that roll back: saved with the owner, restored in place)."""
        return (self.entries[:], self.seq, self.sent, self.deferrals)

    def restore_state(self, saved: tuple[Any, ...]) -> None:
        self.entries, self.seq, self.sent, self.deferrals = saved

    def state(self) -> tuple[int, int, int]:
        return (self.sent, self.deferrals, len(self.entries))


class LayerQueue:
    """A crossbar layer's output: packets in FIFO order with strictly increasing ready times.

    The first packet of an empty queue is scheduled at its ready time; after a
    send, the event goes to the next packet's *stored* ready time without a
    ``cur_tick`` clamp (gem5 ``MemCtrl::processRespondEvent`` style).
    """

    __slots__ = ("entries", "event", "link", "owner", "sent")
    state_attrs = ("entries", "sent")

    def __init__(self, owner: Clocked, layer: str, link: Link) -> None:
        self.owner = owner
        self.link = link
        self.entries: deque[tuple[int, Packet]] = deque()
        self.sent = 0
        self.event: ModelEvent = owner.event(f"{layer}.sendEvent", self.process_send_event)

    def push(self, pkt: Packet, ready: int) -> None:
        entries = self.entries
        entries.append((ready, pkt))
        if len(entries) == 1:
            self.owner.schedule(self.event, ready)

    def process_send_event(self, _payload: int) -> None:
        owner = self.owner
        if owner.work_us:
            owner.work(owner.work_us)
        entries = self.entries
        if not entries:
            return  # a spurious wake-up (see PacketQueue.process_send_event)
        _ready, pkt = entries.popleft()
        self.sent += 1
        self.link.send(pkt)
        if entries:
            owner.schedule(self.event, entries[0][0])
