"""multicore's caches: the private L1 data caches and the banks of the shared L2."""

from __future__ import annotations

from typing import Any

from tickpar.kernel.model import Component, Link, Model

from .packets import (
    LINE_BYTES,
    LINE_SHIFT,
    PAGE_LINES,
    READ_EX_REQ,
    READ_REQ,
    READ_RESP,
    WRITE_REQ,
    WRITEBACK_DIRTY,
    Packet,
)
from .ports import Clocked, PacketQueue
from .tags import TagArray

L1_HITS, L1_MISSES = 0, 1  # positions in L1Cache.state(), for Multicore.stats


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
