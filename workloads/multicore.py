"""``multicore``: a gem5-like memory system, CPUs to DRAM, in integer ticks (1 tick = 1 ps).

The system, with gem5's component names::

    system.cpu<i>             clocked CPU: loads/stores from a seeded address stream (tickEvent, CPU_TICK)
    system.cpu<i>.dcache      private L1: set-associative tag array with LRU, MSHRs, dirty writebacks
    system.xbar               crossbar: one request layer per L2 bank, one response layer per L1
    system.l2.bank<b>         shared L2 banks, line-interleaved, set-associative, a busy-until tag port
    system.mem_ctrl<m>        memory controllers, page-interleaved: banks with open rows and
                              busy-until ticks, one data bus

Every message goes through a :meth:`Model.link` with ``link_latency`` ticks
(>= 1, the lookahead); what a component adds (lookup latency, layer
occupancy, DRAM timing) it adds inside itself, as gem5 does.  Payloads are
tuples of ints: ``(cmd, addr, issue_tick)`` between a CPU and its L1,
``(cmd, line, core)`` between an L1 and an L2 bank, ``(cmd, line, bank)``
between an L2 bank and a memory controller.

**How components pick ticks.**  As in gem5, both ways:

* relative to ``cur_tick``: :meth:`Clocked.clock_edge` (``clockEdge(n)``:
  ``cur_tick`` rounded up to the clock period, plus ``n`` periods), e.g. the
  CPU's next tick, an L1 hit's ready time;
* at absolute ticks computed earlier and stored: a packet's ready time set
  on arrival, a crossbar layer's, an L2 tag port's, a DRAM bank's and a data
  bus's busy-until, and the tick a response arrived at (its event's own
  ``when``), from which a stalled CPU resumes at the next clock edge.

Three queue kinds own the long-lived events:

* :class:`PacketQueue` (caches' ``cpuSidePort``/``memSidePort``) is gem5's
  ``PacketQueue``: packets sorted by ready time; ``schedSendEvent`` does
  ``when = max(when, cur_tick + 1)``, then ``schedule``, or ``reschedule``
  when a new packet is ready before the event's current tick (a fill that
  overtakes queued hits), so both calls are on the hot path;
* :class:`LayerQueue` (the crossbar's layers) and the memory controller's
  response queue hold packets whose ready times strictly increase (each one
  starts after the previous one's busy-until), so after sending one the
  event is scheduled at the next packet's *stored* ready time, unclamped,
  as gem5's ``MemCtrl::processRespondEvent`` does with
  ``respQueue.front()->readyTime``.

In a sequential run (or any correct one) a stored tick used this way is never
behind ``cur_tick``, and ``when == cur_tick`` in every handler; a strategy that
moves ``cur_tick`` past the running event (the split prototype: another
worker's pop) turns the CPU's resume edge, a layer's or the memory
controller's next send into a schedule in the past.

``direct_calls`` adds same-tick port calls (:meth:`Component.call`): on a
miss an L1 does a functional probe of the L2 bank's tag array, and before
sending on its memory side it asks the crossbar's request layer
``tryTiming``-style how long it is busy, holding the packet until then.

``warm_caches`` (on by default) starts from tag arrays that hold the working
sets, as after restoring a checkpoint, so a short run already shows
steady-state hits, misses, dirty writebacks and DRAM traffic.

The caches are not coherent (the shared region may be dirty in several L1s):
this is a timing model for the event loop, not a memory-consistency model.
The run ends when every CPU has issued ``requests_per_core`` requests and
every response has arrived: the queue drains (``end_tick`` is ``None``).

State for strategies that roll back (``optimistic``): every component
declares its ``state_attrs``; the port queues restore in place, the tag arrays
keep an undo log (:class:`LoggedTagArray`, switched to on the first save) and
the crossbar saves its layers in one tuple (see ``workloads/README.md``).

Statistics (:meth:`Multicore.stats`): ``sim_ticks`` (simulated time until the
last CPU has all its requests answered: the latest CPU's last response),
``mean_load_latency`` (ticks from a load's issue to its response reaching the
CPU, over every load) and ``l1_hit_rate`` (L1 hits over L1 lookups).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from typing import Any

from tickpar.kernel.eventq import Priority
from tickpar.kernel.model import Component, Link, Model, ModelEvent
from tickpar.kernel.params import Param, ParamError
from tickpar.plugins import Workload
from tickpar.verify.oracle import OracleRecord

__all__ = [
    "CPU",
    "Crossbar",
    "L1Cache",
    "L2Bank",
    "LayerQueue",
    "LoggedTagArray",
    "MemCtrl",
    "Multicore",
    "PacketQueue",
    "TagArray",
]

LINE_BYTES = 64
LINE_SHIFT = 6
PAGE_LINES = 64  # lines per DRAM page / row-interleaving unit (4 KiB)
REUSE_SLOTS = 8  # run starts a CPU remembers for temporal locality
PRIVATE_SHIFT = 36  # CPU i's private region starts at (i + 1) << 36; the shared one at 0

# Packet commands (gem5 MemCmd names).
READ_REQ = 1
WRITE_REQ = 2
READ_RESP = 3
WRITE_RESP = 4
READ_EX_REQ = 5
WRITEBACK_DIRTY = 6

Packet = tuple[int, ...]


class UndoSegment(list):  # type: ignore[type-arg]
    """The changes a :class:`LoggedTagArray` made after one save: ``(set, old ways or None, ((line, was
    dirty), ...))`` each; ``next`` is the segment of the following save."""

    __slots__ = ("next",)

    def __init__(self) -> None:
        super().__init__()
        self.next: UndoSegment | None = None


class TagArray:
    """A set-associative tag array with true LRU replacement and dirty bits.

    Lines are line addresses (``addr >> 6``); the set is
    ``(line // interleave) % sets``, so a bank that only sees every
    ``interleave``-th line still uses all of its sets.  Each set is a list in
    LRU order: index 0 is least recently used.
    """

    __slots__ = ("_saved_log", "assoc", "dirty", "interleave", "sets", "ways")

    def __init__(self, sets: int, assoc: int, interleave: int = 1) -> None:
        if sets < 1 or assoc < 1 or interleave < 1:
            raise ValueError(f"tag array needs sets, assoc, interleave >= 1 (got {sets}, {assoc}, {interleave})")
        self.sets = sets
        self.assoc = assoc
        self.interleave = interleave
        self.ways: list[list[int]] = [[] for _ in range(sets)]
        self.dirty: set[int] = set()
        #: The newest segment of :class:`LoggedTagArray`'s undo log (engines that roll back); None until a save.
        self._saved_log: UndoSegment | None = None

    def set_of(self, line: int) -> list[int]:
        return self.ways[(line // self.interleave) % self.sets]

    def access(self, line: int) -> bool:
        """Timing lookup: True on a hit, which also makes the line most recently used."""
        ways = self.ways[(line // self.interleave) % self.sets]
        if line in ways:
            if ways[-1] != line:
                ways.remove(line)
                ways.append(line)
            return True
        return False

    def probe(self, line: int) -> bool:
        """Functional lookup: True if present; LRU order unchanged."""
        return line in self.ways[(line // self.interleave) % self.sets]

    def insert(self, line: int, dirty: bool) -> tuple[int, bool]:
        """Insert ``line`` as most recently used; returns ``(victim, victim_dirty)``, victim -1 if none.

        ``line`` must not be present (callers look it up first).
        """
        ways = self.ways[(line // self.interleave) % self.sets]
        victim, victim_dirty = -1, False
        if len(ways) >= self.assoc:
            victim = ways.pop(0)
            if victim in self.dirty:
                self.dirty.discard(victim)
                victim_dirty = True
        ways.append(line)
        if dirty:
            self.dirty.add(line)
        return victim, victim_dirty

    def save_state(self) -> UndoSegment:
        """A mark in an undo log (for engines that roll back): incremental, since copying every set at
        every save is costly (docs/measurements/2026-12-02-small-costs.md).  The first save turns this array into a
        :class:`LoggedTagArray` in place, which logs each set and each line's dirty bit before changing them;
        runs that never save never pay for it.

        The log is a chain of segments, one per save, each linked to the next (newer) one; a save returns
        its segment, and only the saves still held keep their part of the chain alive."""
        if self.__class__ is TagArray:
            self.__class__ = LoggedTagArray
        segment = UndoSegment()
        current = self._saved_log
        if current is not None:
            current.next = segment
        self._saved_log = segment
        return segment

    def restore_state(self, segment: UndoSegment) -> None:
        """Undo every change logged since the save that returned ``segment``, newest first."""
        chain = []
        seg: UndoSegment | None = segment
        while seg is not None:
            chain.append(seg)
            seg = seg.next
        ways, dirty = self.ways, self.dirty
        for seg in reversed(chain):
            for set_index, old_ways, lines in reversed(seg):
                if old_ways is not None:
                    ways[set_index] = old_ways
                for line, was_dirty in lines:
                    if was_dirty:
                        dirty.add(line)
                    else:
                        dirty.discard(line)
        segment.clear()
        segment.next = None
        self._saved_log = segment

    def lru_order(self, line: int) -> list[int]:
        """The lines of ``line``'s set, least recently used first (for tests and debugging)."""
        return list(self.set_of(line))

    def state(self) -> tuple[int, int, int]:
        """(valid lines, dirty lines, a checksum of the contents in LRU order)."""
        valid = 0
        check = 0
        for index, ways in enumerate(self.ways):
            for pos, line in enumerate(ways):
                valid += 1
                check = (check * 1_000_003 + line * 31 + pos * 7 + index) % ((1 << 61) - 1)
        return (valid, len(self.dirty), check)


class LoggedTagArray(TagArray):
    """A :class:`TagArray` that logs what it changes (see :meth:`TagArray.save_state`).

    ``access`` logs the set (when the line moves) and the line's dirty bit
    (callers set it right after a hit: ``tags.dirty.add(line)``); ``insert``
    logs the set and the dirty bits of the line and of its victim.
    """

    __slots__ = ()

    def access(self, line: int) -> bool:
        index = (line // self.interleave) % self.sets
        ways = self.ways[index]
        if line in ways:
            log = self._saved_log
            if ways[-1] != line:
                log.append((index, ways[:], ((line, line in self.dirty),)))  # type: ignore[union-attr]
                ways.remove(line)
                ways.append(line)
            else:
                log.append((index, None, ((line, line in self.dirty),)))  # type: ignore[union-attr]
            return True
        return False

    def insert(self, line: int, dirty: bool) -> tuple[int, bool]:
        index = (line // self.interleave) % self.sets
        ways = self.ways[index]
        if len(ways) >= self.assoc:
            victim = ways[0]
            lines = ((line, line in self.dirty), (victim, victim in self.dirty))
        else:
            lines = ((line, line in self.dirty),)
        self._saved_log.append((index, ways[:], lines))  # type: ignore[union-attr]
        return TagArray.insert(self, line, dirty)


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


_CPU_LOADS, _CPU_LOAD_LATENCY = 3, 10  # positions in CPU.state()
_L1_HITS, _L1_MISSES = 0, 1  # positions in L1Cache.state()


class L1Cache(Clocked):
    """A private, write-back, write-allocate, non-blocking L1 data cache (gem5 ``Cache``)."""

    state_attrs = (
        "tags", "mshrs", "cpu_side", "mem_side", "hits", "misses", "mshr_hits", "evictions", "writebacks",
        "probes", "probe_hits",
    )  # fmt: skip

    def __init__(self, model: Model, name: str, index: int, p: dict[str, Any]) -> None:
        super().__init__(model, name, p["clock"], p["work_us"])
        self.index = index
        lines = p["l1_kib"] * 1024 // LINE_BYTES
        self.tags = TagArray(lines // p["l1_assoc"], p["l1_assoc"])
        self.latency = p["l1_latency"]
        self.l2_banks = p["l2_banks"]
        self.direct = p["direct_calls"]
        self.mshrs: dict[int, list[Packet]] = {}
        self.cpu_link: Link | None = None
        self.mem_link: Link | None = None
        self.xbar: Component | None = None
        self.banks: list[Component] = []
        self.cpu_side = PacketQueue(self, "cpuSidePort", self._to_cpu)
        self.mem_side = PacketQueue(self, "memSidePort", self._to_mem, self._xbar_busy if self.direct else None)
        self.hits = 0
        self.misses = 0
        self.mshr_hits = 0
        self.evictions = 0
        self.writebacks = 0
        self.probes = 0
        self.probe_hits = 0

    def _to_cpu(self, _pkt: Packet) -> Link:
        return self.cpu_link  # type: ignore[return-value]

    def _to_mem(self, _pkt: Packet) -> Link:
        return self.mem_link  # type: ignore[return-value]

    def _xbar_busy(self, pkt: Packet) -> int:
        """Same-tick call into the crossbar: until when is this packet's request layer busy?"""
        return self.call(self.xbar, "req_layer_busy_until", pkt[1] % self.l2_banks)  # type: ignore[arg-type]

    def recv_timing_req(self, pkt: Packet) -> None:
        """A request from the CPU: look the line up (``l1_latency`` cycles), hit or allocate an MSHR."""
        if self.work_us:
            self.work(self.work_us)
        cmd, addr, issued = pkt
        line = addr >> LINE_SHIFT
        ready = self.clock_edge(self.latency)
        if self.tags.access(line):
            self.hits += 1
            if cmd == WRITE_REQ:
                self.tags.dirty.add(line)
            self.cpu_side.sched_send_timing((cmd + 2, addr, issued), ready)  # READ/WRITE_RESP
            return
        self.misses += 1
        targets = self.mshrs.get(line)
        if targets is not None:
            self.mshr_hits += 1
            targets.append(pkt)
            return
        self.mshrs[line] = [pkt]
        if self.direct:
            self.probes += 1
            self.probe_hits += self.call(self.banks[line % self.l2_banks], "functional_probe", line)
        self.mem_side.sched_send_timing((READ_EX_REQ if cmd == WRITE_REQ else READ_REQ, line, self.index), ready)

    def recv_timing_resp(self, pkt: Packet) -> None:
        """A fill from L2: insert the line (evicting the LRU way), answer every MSHR target."""
        if self.work_us:
            self.work(self.work_us)
        line = pkt[1]
        targets = self.mshrs.pop(line)
        dirty = False
        for target in targets:
            if target[0] == WRITE_REQ:
                dirty = True
                break
        ready = self.clock_edge(1)
        tags = self.tags
        if tags.access(line):
            if dirty:
                tags.dirty.add(line)
        else:
            victim, victim_dirty = tags.insert(line, dirty)
            if victim >= 0:
                self.evictions += 1
                if victim_dirty:
                    self.writebacks += 1
                    self.mem_side.sched_send_timing((WRITEBACK_DIRTY, victim, self.index), ready)
        for cmd, addr, issued in targets:
            self.cpu_side.sched_send_timing((cmd + 2, addr, issued), ready)

    def state(self) -> tuple[Any, ...]:
        return (
            self.hits,
            self.misses,
            self.mshr_hits,
            self.evictions,
            self.writebacks,
            self.probes,
            self.probe_hits,
            len(self.mshrs),
            self.tags.state(),
            self.cpu_side.state(),
            self.mem_side.state(),
        )


class Crossbar(Clocked):
    """The crossbar (gem5 ``NoncoherentXBar``): a request layer per L2 bank, a response layer per L1.

    A packet starts on its layer at the later of the next crossbar clock edge
    and the layer's busy-until, occupies it one cycle (a header) or two (a
    line of data), and leaves ``xbar_latency`` cycles after it started.
    """

    state_attrs = ("req_busy", "resp_busy", "req_wait", "resp_wait", "requests", "responses")

    def __init__(self, model: Model, name: str, p: dict[str, Any]) -> None:
        super().__init__(model, name, p["xbar_clock"], p["work_us"])
        self.latency = p["xbar_latency"]
        self.l2_banks = p["l2_banks"]
        self.req_busy = [0] * p["l2_banks"]
        self.resp_busy = [0] * p["cores"]
        self.req_layers: list[LayerQueue] = []
        self.resp_layers: list[LayerQueue] = []
        self.req_wait = 0
        self.resp_wait = 0
        self.requests = 0
        self.responses = 0

    def recv_timing_req(self, pkt: Packet) -> None:
        if self.work_us:
            self.work(self.work_us)
        bank = pkt[1] % self.l2_banks
        edge = self.clock_edge(0)
        busy = self.req_busy[bank]
        start = busy if busy > edge else edge
        self.req_wait += start - edge
        cycles = 2 if pkt[0] == WRITEBACK_DIRTY else 1
        self.req_busy[bank] = start + cycles * self.period
        self.requests += 1
        self.req_layers[bank].push(pkt, start + self.latency * self.period)

    def recv_timing_resp(self, pkt: Packet) -> None:
        if self.work_us:
            self.work(self.work_us)
        core = pkt[2]
        edge = self.clock_edge(0)
        busy = self.resp_busy[core]
        start = busy if busy > edge else edge
        self.resp_wait += start - edge
        self.resp_busy[core] = start + 2 * self.period
        self.responses += 1
        self.resp_layers[core].push(pkt, start + self.latency * self.period)

    def save_state(self) -> tuple[Any, ...]:
        """The declared counters and every layer's packets (one tuple per layer: cheaper than a save per layer)."""
        layers = [(tuple(q.entries), q.sent) for q in self.req_layers]
        layers += [(tuple(q.entries), q.sent) for q in self.resp_layers]
        return (super().save_state(), layers)

    def restore_state(self, saved: tuple[Any, ...]) -> None:
        own, layers = saved
        super().restore_state(own)
        for q, (entries, sent) in zip(self.req_layers + self.resp_layers, layers, strict=True):
            q.entries = deque(entries)
            q.sent = sent

    def req_layer_busy_until(self, bank: int) -> int:
        """Direct call (gem5 ``tryTiming``): the tick the request layer to ``bank`` is busy until."""
        return self.req_busy[bank]

    def state(self) -> tuple[Any, ...]:
        return (
            self.requests,
            self.responses,
            self.req_wait,
            self.resp_wait,
            tuple(self.req_busy),
            tuple(self.resp_busy),
            tuple(q.sent for q in self.req_layers),
            tuple(q.sent for q in self.resp_layers),
        )


class L2Bank(Clocked):
    """One bank of the shared L2: a busy-until tag port (one access per cycle), MSHRs, writebacks."""

    state_attrs = (
        "tags", "busy_until", "mshrs", "cpu_side", "mem_side", "hits", "misses", "mshr_hits", "writebacks_in",
        "writebacks_out", "evictions", "port_wait", "functional_probes",
    )  # fmt: skip

    def __init__(self, model: Model, name: str, index: int, p: dict[str, Any]) -> None:
        super().__init__(model, name, p["clock"], p["work_us"])
        self.index = index
        lines = p["l2_kib"] * 1024 // LINE_BYTES
        self.tags = TagArray(lines // p["l2_assoc"], p["l2_assoc"], p["l2_banks"])
        self.latency = p["l2_latency"]
        self.mem_ctrls = p["mem_ctrls"]
        self.busy_until = 0
        self.mshrs: dict[int, list[int]] = {}
        self.xbar_link: Link | None = None
        self.mem_links: list[Link] = []
        self.cpu_side = PacketQueue(self, "cpuSidePort", self._to_xbar)
        self.mem_side = PacketQueue(self, "memSidePort", self._to_mem)
        self.hits = 0
        self.misses = 0
        self.mshr_hits = 0
        self.writebacks_in = 0
        self.writebacks_out = 0
        self.evictions = 0
        self.port_wait = 0
        self.functional_probes = 0

    def _to_xbar(self, _pkt: Packet) -> Link:
        return self.xbar_link  # type: ignore[return-value]

    def _to_mem(self, pkt: Packet) -> Link:
        return self.mem_links[(pkt[1] // PAGE_LINES) % self.mem_ctrls]

    def _start(self) -> int:
        """Claim the tag port: the later of the next edge and the stored busy-until."""
        edge = self.clock_edge(0)
        start = self.busy_until if self.busy_until > edge else edge
        self.port_wait += start - edge
        self.busy_until = start + self.period
        return start

    def _insert(self, line: int, dirty: bool, ready: int) -> None:
        victim, victim_dirty = self.tags.insert(line, dirty)
        if victim >= 0:
            self.evictions += 1
            if victim_dirty:
                self.writebacks_out += 1
                self.mem_side.sched_send_timing((WRITEBACK_DIRTY, victim, self.index), ready)

    def recv_timing_req(self, pkt: Packet) -> None:
        if self.work_us:
            self.work(self.work_us)
        cmd, line, core = pkt
        start = self._start()
        if cmd == WRITEBACK_DIRTY:
            self.writebacks_in += 1
            if self.tags.access(line):
                self.tags.dirty.add(line)
            else:
                self._insert(line, True, start + self.period)
            return
        ready = start + self.latency * self.period
        if self.tags.access(line):
            self.hits += 1
            self.cpu_side.sched_send_timing((READ_RESP, line, core), ready)
            return
        self.misses += 1
        targets = self.mshrs.get(line)
        if targets is not None:
            self.mshr_hits += 1
            targets.append(core)
            return
        self.mshrs[line] = [core]
        self.mem_side.sched_send_timing((READ_REQ, line, self.index), ready)

    def recv_timing_resp(self, pkt: Packet) -> None:
        """A fill from memory: one tag-port cycle, then answer every waiting L1 a cycle later."""
        if self.work_us:
            self.work(self.work_us)
        line = pkt[1]
        ready = self._start() + self.period
        if not self.tags.access(line):
            self._insert(line, False, ready)
        for core in self.mshrs.pop(line):
            self.cpu_side.sched_send_timing((READ_RESP, line, core), ready)

    def functional_probe(self, line: int) -> int:
        """Direct call from an L1 (gem5 functional access): 1 if ``line`` is here; LRU unchanged."""
        self.functional_probes += 1
        return 1 if self.tags.probe(line) else 0

    def state(self) -> tuple[Any, ...]:
        return (
            self.hits,
            self.misses,
            self.mshr_hits,
            self.writebacks_in,
            self.writebacks_out,
            self.evictions,
            self.port_wait,
            self.functional_probes,
            self.busy_until,
            len(self.mshrs),
            self.tags.state(),
            self.cpu_side.state(),
            self.mem_side.state(),
        )


class MemCtrl(Component):
    """A memory controller (gem5 ``MemCtrl`` + DRAM, simplified), timed in ticks.

    Lines map to pages of 64 lines; pages interleave over controllers, then
    over the controller's banks; the rest of the page number is the row.  An
    access starts at the later of now and its bank's busy-until, takes
    ``mem_row_hit`` ticks if the bank has that row open, else ``mem_row_miss``,
    then waits for the data bus (busy-until) and holds it ``mem_burst`` ticks.
    Read responses leave in bus order at their stored ready times
    (``respondEvent``).
    """

    state_attrs = (
        "bank_busy", "open_row", "bus_busy", "resp_queue", "reads", "writes", "row_hits", "row_misses", "bank_wait",
        "bus_wait",
    )  # fmt: skip

    def __init__(self, model: Model, name: str, index: int, p: dict[str, Any]) -> None:
        super().__init__(model, name)
        self.index = index
        self.work_us = p["work_us"]
        self.ctrls = p["mem_ctrls"]
        self.banks = p["mem_banks"]
        self.row_hit = p["mem_row_hit"]
        self.row_miss = p["mem_row_miss"]
        self.burst = p["mem_burst"]
        self.bank_busy = [0] * self.banks
        self.open_row = [-1] * self.banks
        self.bus_busy = 0
        self.resp_queue: deque[tuple[int, Packet]] = deque()
        self.respond_event = self.event("respondEvent", self.process_respond_event)
        self.l2_links: list[Link] = []
        self.reads = 0
        self.writes = 0
        self.row_hits = 0
        self.row_misses = 0
        self.bank_wait = 0
        self.bus_wait = 0

    def recv_timing_req(self, pkt: Packet) -> None:
        if self.work_us:
            self.work(self.work_us)
        cmd, line, _bank = pkt
        rest = (line // PAGE_LINES) // self.ctrls
        bank = rest % self.banks
        row = rest // self.banks
        now = self.queue.cur_tick
        busy = self.bank_busy[bank]
        start = busy if busy > now else now
        self.bank_wait += start - now
        if self.open_row[bank] == row:
            self.row_hits += 1
            done = start + self.row_hit
        else:
            self.row_misses += 1
            self.open_row[bank] = row
            done = start + self.row_miss
        self.bank_busy[bank] = done
        data = self.bus_busy if self.bus_busy > done else done
        self.bus_wait += data - done
        self.bus_busy = ready = data + self.burst
        if cmd == WRITEBACK_DIRTY:
            self.writes += 1
            return
        self.reads += 1
        self.resp_queue.append((ready, (READ_RESP, line, pkt[2])))
        if len(self.resp_queue) == 1:
            self.schedule(self.respond_event, ready)

    def process_respond_event(self, _payload: int) -> None:
        """gem5 ``processRespondEvent``: send the head response, then wait for the next stored ready time."""
        if self.work_us:
            self.work(self.work_us)
        queue = self.resp_queue
        if not queue:
            return  # a spurious wake-up (see PacketQueue.process_send_event)
        _ready, pkt = queue.popleft()
        self.l2_links[pkt[2]].send(pkt)
        if queue:
            # The stored ready time, as gem5 does: no clamp against cur_tick.
            self.schedule(self.respond_event, queue[0][0])

    def state(self) -> tuple[Any, ...]:
        return (
            self.reads,
            self.writes,
            self.row_hits,
            self.row_misses,
            self.bank_wait,
            self.bus_wait,
            self.bus_busy,
            tuple(self.bank_busy),
            tuple(self.open_row),
            len(self.resp_queue),
        )


class Multicore(Workload):
    name = "multicore"
    summary = "gem5-like memory system: clocked CPUs, private L1s, crossbar, banked L2, DRAM controllers"
    params = {
        "cores": Param(int, 4, "CPUs, each with a private L1 data cache", min=1, max=256),
        "requests_per_core": Param(
            int, 1000, "loads+stores each CPU issues; the run ends when all are answered", min=1, max=10**7
        ),
        "max_outstanding": Param(int, 4, "requests a CPU may have in flight before it stalls", min=1, max=256),
        "think_cycles": Param(
            int, 1, "CPU cycles of computation after each memory op, uniform in [0, think_cycles]", min=0, max=10**4
        ),
        "store_fraction": Param(float, 0.3, "fraction of memory ops that are stores", min=0.0, max=1.0),
        "stride": Param(int, 8, "bytes between consecutive addresses of a sequential run", min=1, max=1 << 20),
        "jump_prob": Param(
            float, 0.1, "probability that an access jumps to a random word instead of striding on", min=0.0, max=1.0
        ),
        "reuse_prob": Param(
            float,
            0.7,
            "probability that a jump goes back to one of the last 8 run starts (temporal locality)",
            min=0.0,
            max=1.0,
        ),
        "working_set_kib": Param(int, 64, "private working set per CPU, KiB", min=1, max=1 << 20),
        "shared_kib": Param(int, 256, "region shared by all CPUs, KiB (0: none)", min=0, max=1 << 20),
        "shared_fraction": Param(float, 0.2, "fraction of jumps that land in the shared region", min=0.0, max=1.0),
        "clock": Param(int, 500, "CPU, L1 and L2 clock period in ticks (1 tick = 1 ps: 500 = 2 GHz)", min=1, max=10**9),
        "xbar_clock": Param(int, 1000, "crossbar clock period in ticks (1000 = 1 GHz)", min=1, max=10**9),
        "link_latency": Param(
            int,
            500,
            "latency of every port-to-port link in ticks: the lookahead between components (500 = 1 CPU cycle)",
            min=1,
            max=10**9,
        ),
        "l1_kib": Param(int, 32, "L1 data cache size per CPU, KiB", min=1, max=1 << 20),
        "l1_assoc": Param(int, 4, "L1 associativity (ways per set, LRU)", min=1, max=1024),
        "l1_latency": Param(
            int,
            4,
            "L1 hit latency (tag+data), in clock periods (cycles); fills answer 1 cycle after arrival",
            min=1,
            max=10**6,
        ),
        "l2_banks": Param(int, 4, "shared L2 banks, line-interleaved", min=1, max=256),
        "l2_kib": Param(int, 64, "size of each L2 bank, KiB", min=1, max=1 << 24),
        "l2_assoc": Param(int, 8, "L2 associativity (ways per set, LRU)", min=1, max=1024),
        "l2_latency": Param(
            int,
            10,
            "L2 hit latency, in clock periods (cycles); fills answer 1 cycle after the tag port frees",
            min=1,
            max=10**6,
        ),
        "xbar_latency": Param(int, 2, "crossbar forwarding latency, in crossbar clock periods", min=1, max=10**6),
        "mem_ctrls": Param(int, 2, "memory controllers, interleaved by 4 KiB page", min=1, max=64),
        "mem_banks": Param(int, 8, "DRAM banks per controller, each with an open row and a busy-until", min=1, max=256),
        "mem_row_hit": Param(int, 14_000, "DRAM access latency on an open row, ticks", min=1, max=10**9),
        "mem_row_miss": Param(
            int, 42_000, "DRAM access latency on a row miss (precharge+activate), ticks", min=1, max=10**9
        ),
        "mem_burst": Param(int, 3_333, "data-bus occupancy per 64-byte burst, ticks", min=1, max=10**9),
        "warm_caches": Param(
            bool, True, "start with tag arrays holding the working sets (as after a checkpoint); false: cold"
        ),
        "direct_calls": Param(
            bool, False, "add same-tick port calls: L1 -> L2 functional probe, L1 -> crossbar layer tryTiming"
        ),
        "work_us": Param(float, 0.0, "synthetic work per event, microseconds", min=0.0, max=1e6),
    }
    statistics = {
        "sim_ticks": "simulated time until every CPU has all its requests answered, ticks",
        "mean_load_latency": "mean ticks from a load's issue to its response at the CPU",
        "l1_hit_rate": "L1 hits over L1 lookups",
    }

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """Stored ticks (layers, DRAM responses, a CPU's resume edge) and several event names per cache
        always; direct calls with ``direct_calls``; CPUs ticking on shared clock edges from two cores;
        a long run from 1000 requests in all (cores x requests_per_core: thousands of events, several in
        flight; tests/test_split.py checks split's promised failure at that size over interleavings)."""
        traits = {"stored_ticks", "several_named_events"}
        if params["direct_calls"]:
            traits.add("direct_calls")
        if params["cores"] >= 2:
            traits.add("many_events_per_tick")
        if params["cores"] * params["requests_per_core"] >= 1000:
            traits.add("long_run")
        return frozenset(traits)

    def check_params(self, params: dict[str, Any]) -> None:
        what = "workload multicore parameter"
        for level in ("l1", "l2"):
            kib, assoc = params[f"{level}_kib"], params[f"{level}_assoc"]
            lines = kib * 1024 // LINE_BYTES
            if lines % assoc:
                raise ParamError(
                    f"{what} {level}_assoc={assoc} does not divide {level}_kib={kib} ({lines} lines of 64 bytes):"
                    f" choose an associativity that divides {lines}"
                )
        if params["shared_fraction"] > 0 and params["shared_kib"] == 0:
            raise ParamError(
                f"{what} shared_kib=0 leaves no shared region for shared_fraction={params['shared_fraction']}:"
                " set shared_kib >= 1 or shared_fraction=0"
            )
        if params["mem_row_hit"] > params["mem_row_miss"]:
            raise ParamError(
                f"{what} mem_row_hit={params['mem_row_hit']} is not allowed: at most mem_row_miss"
                f" ({params['mem_row_miss']})"
            )

    def build(self, model: Model, params: dict[str, Any]) -> None:
        p = params
        lat = p["link_latency"]
        cpus = [CPU(model, f"system.cpu{i}", i, p) for i in range(p["cores"])]
        l1s = [L1Cache(model, f"system.cpu{i}.dcache", i, p) for i in range(p["cores"])]
        xbar = Crossbar(model, "system.xbar", p)
        banks = [L2Bank(model, f"system.l2.bank{b}", b, p) for b in range(p["l2_banks"])]
        ctrls = [MemCtrl(model, f"system.mem_ctrl{m}", m, p) for m in range(p["mem_ctrls"])]
        for cpu, l1 in zip(cpus, l1s, strict=True):
            cpu.dcache_link = model.link(
                cpu, l1, "recv_timing_req", lat, event_name=f"{l1.name}.cpuSidePort.recvTimingReq"
            )
            l1.cpu_link = model.link(
                l1, cpu, "recv_timing_resp", lat, event_name=f"{cpu.name}.dcachePort.recvTimingResp"
            )
            l1.mem_link = model.link(
                l1, xbar, "recv_timing_req", lat, event_name=f"{xbar.name}.cpuSidePort{l1.index}.recvTimingReq"
            )
            to_l1 = model.link(xbar, l1, "recv_timing_resp", lat, event_name=f"{l1.name}.memSidePort.recvTimingResp")
            xbar.resp_layers.append(LayerQueue(xbar, f"respLayer{l1.index}", to_l1))
        for bank in banks:
            to_bank = model.link(
                xbar, bank, "recv_timing_req", lat, event_name=f"{bank.name}.cpuSidePort.recvTimingReq"
            )
            xbar.req_layers.append(LayerQueue(xbar, f"reqLayer{bank.index}", to_bank))
            bank.xbar_link = model.link(
                bank, xbar, "recv_timing_resp", lat, event_name=f"{xbar.name}.memSidePort{bank.index}.recvTimingResp"
            )
            for ctrl in ctrls:
                bank.mem_links.append(
                    model.link(bank, ctrl, "recv_timing_req", lat, event_name=f"{ctrl.name}.port.recvTimingReq")
                )
                ctrl.l2_links.append(
                    model.link(
                        ctrl, bank, "recv_timing_resp", lat, event_name=f"{bank.name}.memSidePort.recvTimingResp"
                    )
                )
        if p["direct_calls"]:
            for l1 in l1s:
                l1.xbar = xbar
                l1.banks = banks
                model.connect_direct(l1, xbar)
                for bank in banks:
                    model.connect_direct(l1, bank)
        if p["warm_caches"]:
            _warm(cpus, l1s, banks, p)
        model.end_tick = None

    def stats(self, record: OracleRecord) -> dict[str, float]:
        # Components by the names build() gives them: system.cpu<i> and system.cpu<i>.dcache.
        cpus = [e for name, e in record.components.items() if name.startswith("system.cpu") and name.count(".") == 1]
        l1s = [e for name, e in record.components.items() if name.startswith("system.cpu") and name.endswith(".dcache")]
        loads = sum(e["state"][_CPU_LOADS] for e in cpus)
        hits = sum(e["state"][_L1_HITS] for e in l1s)
        lookups = hits + sum(e["state"][_L1_MISSES] for e in l1s)
        return {
            "sim_ticks": float(max((e["last_tick"] or 0 for e in cpus), default=0)),
            "mean_load_latency": sum(e["state"][_CPU_LOAD_LATENCY] for e in cpus) / loads if loads else 0.0,
            "l1_hit_rate": hits / lookups if lookups else 0.0,
        }


def _warm(cpus: list[CPU], l1s: list[L1Cache], banks: list[L2Bank], p: dict[str, Any]) -> None:
    """Functional warm-up, as after restoring a checkpoint: fill the tag arrays with the working sets.

    Each L1 gets the first lines of its CPU's private region (dirty with
    probability ``store_fraction``, drawn from the L1's own RNG); the L2 banks
    get the regions' first lines round robin (shared region first), until
    the L2 is full.  Cost: one insert per cache line of capacity.
    """
    for cpu, l1 in zip(cpus, l1s, strict=True):
        base = cpu.private[0] >> LINE_SHIFT
        lines = min(cpu.private[1] // LINE_BYTES, l1.tags.sets * l1.tags.assoc)
        for k in range(lines):
            l1.tags.insert(base + k, l1.rng.random() < p["store_fraction"])
    regions = ([cpus[0].shared] if p["shared_kib"] else []) + [cpu.private for cpu in cpus]
    spans = [(base >> LINE_SHIFT, size // LINE_BYTES) for base, size in regions]
    budget = len(banks) * banks[0].tags.sets * banks[0].tags.assoc
    longest = max(n for _, n in spans)
    inserted = 0
    for k in range(longest):
        for first, n in spans:
            if k < n:
                line = first + k
                tags = banks[line % len(banks)].tags
                if not tags.probe(line):
                    tags.insert(line, False)
                inserted += 1
                if inserted >= budget:
                    return
