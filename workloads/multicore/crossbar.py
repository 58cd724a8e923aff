"""multicore's crossbar: a request layer per L2 bank, a response layer per L1."""

from __future__ import annotations

from collections import deque
from typing import Any

from tickpar.kernel.model import Model

from .packets import WRITEBACK_DIRTY, Packet
from .ports import Clocked, LayerQueue


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
