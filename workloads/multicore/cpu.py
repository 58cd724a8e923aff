"""multicore's CPU: a clocked, trace-driven core issuing loads and stores from a seeded address stream."""

from __future__ import annotations

from typing import Any

from tickpar.kernel.eventq import Priority
from tickpar.kernel.model import Link, Model

from .packets import PRIVATE_SHIFT, READ_REQ, READ_RESP, REUSE_SLOTS, WRITE_REQ, Packet
from .ports import Clocked


class CPU(Clocked):
    """A clocked CPU (a trace-driven core): one memory op per active cycle, up to ``max_outstanding``.

    While it has requests left and room for them, ``tickEvent`` runs every
    cycle at ``CPU_TICK`` priority (after the tick's responses); between two
    memory ops it computes for ``[0, think_cycles]`` cycles.  When it runs out
    of room it stops ticking and a response wakes it at the next clock edge.
    """

    state_attrs = (
        "base", "size", "offset", "recent", "compute", "stalled_at", "last_tick", "issued", "completed",
        "outstanding", "loads", "stores", "latency_sum", "load_latency_sum", "latency_max", "ticks", "stall_cycles",
    )  # fmt: skip

    def __init__(self, model: Model, name: str, index: int, p: dict[str, Any]) -> None:
        super().__init__(model, name, p["clock"], p["work_us"])
        self.index = index
        self.requests = p["requests_per_core"]
        self.max_outstanding = p["max_outstanding"]
        self.think_cycles = p["think_cycles"]
        self.store_fraction = p["store_fraction"]
        self.jump_prob = p["jump_prob"]
        self.shared_fraction = p["shared_fraction"] if p["shared_kib"] else 0.0
        self.stride = p["stride"]
        self.private = ((index + 1) << PRIVATE_SHIFT, p["working_set_kib"] * 1024)
        self.shared = (0, p["shared_kib"] * 1024)
        self.reuse_prob = p["reuse_prob"]
        self.base, self.size = self.private
        self.offset = self.rng.randrange(self.size // 8) * 8
        # Where the last REUSE_SLOTS runs started: (base, size, offset); jumps may go back to one.
        self.recent: list[tuple[int, int, int]] = [(self.base, self.size, self.offset)]
        self.tick_event = self.event("tickEvent", self.tick, Priority.CPU_TICK)
        self.dcache_link: Link | None = None
        self.compute = 0
        self.stalled_at = -1
        self.last_tick = -1
        # statistics
        self.issued = 0
        self.completed = 0
        self.outstanding = 0
        self.loads = 0
        self.stores = 0
        self.latency_sum = 0
        self.load_latency_sum = 0
        self.latency_max = 0
        self.ticks = 0
        self.stall_cycles = 0

    def init(self) -> None:
        if self.requests:
            self.schedule(self.tick_event, self.clock_edge(0))

    def _next_address(self) -> int:
        """The next address: stride on, or jump back to a recent run's start, or to a fresh random word."""
        rng = self.rng
        if rng.random() < self.jump_prob:
            recent = self.recent
            if rng.random() < self.reuse_prob:
                self.base, self.size, self.offset = recent[rng.randrange(len(recent))]
            else:
                if self.shared_fraction and rng.random() < self.shared_fraction:
                    self.base, self.size = self.shared
                else:
                    self.base, self.size = self.private
                self.offset = rng.randrange(self.size // 8) * 8
                if len(recent) >= REUSE_SLOTS:
                    recent.pop(0)
                recent.append((self.base, self.size, self.offset))
        else:
            self.offset = (self.offset + self.stride) % self.size
        return self.base + self.offset

    def tick(self, _payload: int) -> None:
        if self.work_us:
            self.work(self.work_us)
        self.ticks += 1
        self.last_tick = now = self.queue.cur_tick
        if self.compute:
            self.compute -= 1
        else:
            addr = self._next_address()
            if self.rng.random() < self.store_fraction:
                cmd = WRITE_REQ
                self.stores += 1
            else:
                cmd = READ_REQ
                self.loads += 1
            self.issued += 1
            self.outstanding += 1
            self.dcache_link.send((cmd, addr, now))  # type: ignore[union-attr]
            if self.think_cycles:
                self.compute = self.rng.randint(0, self.think_cycles)
        if self.issued < self.requests:
            if self.compute or self.outstanding < self.max_outstanding:
                self.schedule(self.tick_event, self.clock_edge(1))
            else:
                self.stalled_at = now  # no room: stop ticking until a response arrives

    def recv_timing_resp(self, pkt: Packet) -> None:
        if self.work_us:
            self.work(self.work_us)
        # The response's arrival tick is this event's own tick: the CPU resumes at the first clock
        # edge at or after it -- an absolute tick from stored state, not a fresh read of cur_tick.
        arrived = self.when
        latency = arrived - pkt[2]
        self.latency_sum += latency
        if pkt[0] == READ_RESP:
            self.load_latency_sum += latency
        if latency > self.latency_max:
            self.latency_max = latency
        self.completed += 1
        self.outstanding -= 1
        if self.stalled_at >= 0:
            p = self.period
            when = -(-arrived // p) * p
            if when <= self.last_tick:
                when += p
            self.stall_cycles += (when - self.stalled_at) // self.period - 1
            self.stalled_at = -1
            self.schedule(self.tick_event, when)

    def state(self) -> tuple[int, ...]:
        return (
            self.issued,
            self.completed,
            self.outstanding,
            self.loads,
            self.stores,
            self.latency_sum,
            self.latency_max,
            self.ticks,
            self.stall_cycles,
            self.offset,
            self.load_latency_sum,
        )  # Multicore.stats reads it by position


CPU_LOADS, CPU_LOAD_LATENCY = 3, 10  # positions in CPU.state(), for Multicore.stats
