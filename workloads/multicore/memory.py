"""multicore's memory controllers: DRAM banks with open rows and busy-until ticks, one data bus."""

from __future__ import annotations

from collections import deque
from typing import Any

from tickpar.kernel.model import Component, Link, Model

from .packets import PAGE_LINES, READ_RESP, WRITEBACK_DIRTY, Packet


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
