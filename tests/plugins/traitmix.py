"""``traitmix``: a generated family of workloads, one parameter per trait, each switching it on or off.

The conformance suite (``tests/test_conformance.py``) runs every strategy on this family, so a
promise must hold on every combination of traits, not only on the built-in workloads.  Each
parameter named after a trait of :data:`tickpar.plugins.TRAITS` switches that trait, and nothing
else: :meth:`TraitMix.traits` returns exactly the switched-on ones, and the built model has each
structural trait exactly when it is on (checked by the conformance suite).

``nodes`` nodes (an even number; node ``i``'s partner is ``i ^ 1``) pass ``population`` tokens each
to a random node (itself included); a node's state folds every token it receives in order, so any
reordering shows in its digest.

* ``stored_ticks``: a node forwards through a busy output port: a token waits in a FIFO and the
  port's send event is scheduled at a stored tick, ``max(busy_until, its own event's tick)``
  (gem5's PacketQueue; ``window=narrow``: ``busy_until`` while the port is busy, else
  ``cur_tick``, so a moved clock is seldom past it); the tick event (below) repeats from its own
  event's tick.  Off: every tick is ``cur_tick + delay``.
* ``several_named_events``: each node has a periodic ``tickEvent`` (and, with stored ticks, a
  ``fwdEvent``) beside the messages it receives.  Off: the port event takes the messages' name
  (``<node>.msg``) and there is no tick event: one event name per node.
  ``tick_priority`` other than 0 keeps the tick events out of the messages' bins.
* ``direct_calls``: each received token probes the partner with a same-tick port call whose
  answer changes the token's delay (``callee=private``: a passive component of its own instead,
  which no other node's events ever reach).
* ``zero_latency_links``: the links between partners have latency 0 (the others ``latency``).
* ``many_events_per_tick``: every tick is a multiple of ``granularity``, so the nodes' events
  share bins all through the run.  Off: node ``i``'s events are all at ticks ``= i (mod nodes)``,
  so no bin ever holds two nodes' events.
* ``long_run``: runs to ``long_end`` (~200 events per node with several tokens pending at once);
  off: to ``short_end`` (a few events per node).

Handlers keep their node's invariants whatever order they run in (a port event finding its FIFO
empty does nothing, as gem5's send events check their queue).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from tickpar.kernel.model import Component, Link, Model
from tickpar.kernel.params import Param, ParamError
from tickpar.plugins import TRAITS, Workload
from tickpar.verify.oracle import OracleRecord

_MOD = (1 << 61) - 1


class Node(Component):
    """One node: receives tokens, folds them into its state, forwards them (directly or through its port)."""

    def __init__(self, model: Model, name: str, index: int, p: dict[str, Any]) -> None:
        super().__init__(model, name)
        self.index = index
        self.nodes = p["nodes"]
        self.population = p["population"]
        self.stored = p["stored_ticks"]
        self.narrow = p["window"] == "narrow"
        self.direct = p["direct_calls"]
        self.many = p["many_events_per_tick"]
        self.granularity = p["granularity"]
        self.rate = 1.0 / p["mean"]
        self.period = p["period"] * (self.granularity if self.many else self.nodes)
        self.service = p["service"] * (self.granularity if self.many else self.nodes)
        self.out: list[Link] = []
        self.partner: Component | None = None
        self.fifo: deque[int] = deque()
        self.busy_until = 0
        self.received = self.acc = self.probes = self.probe_acc = self.ticks = self.sent = 0
        several = p["several_named_events"]
        self.port = None
        if self.stored:
            # Without several_named_events the port event has the messages' name: one name per node.
            self.port = self.event("fwdEvent" if several else "msg", self.on_port)
        self.tick = self.event("tickEvent", self.on_tick, p["tick_priority"]) if several else None

    # -- where ticks go ---------------------------------------------------------------------------
    def _align(self, arrival: int, dst: int) -> int:
        """Ticks to add to ``arrival`` so that it lands on the destination's ticks."""
        if self.many:
            return -arrival % self.granularity
        return (dst - arrival) % self.nodes

    def _send(self, hops: int, extra: int) -> None:
        rng = self.rng
        dst = rng.randrange(self.nodes)
        link = self.out[dst]
        delay = int(rng.expovariate(self.rate)) + extra
        delay += self._align(self.cur_tick + link.latency + delay, dst)
        self.sent += 1
        link.send(hops, delay)

    def _port_tick(self) -> int:
        """When the port can send next: a stored tick (busy_until, or this event's own tick)."""
        if self.narrow:
            return self.busy_until if self.busy_until > self.when else self.cur_tick
        return max(self.busy_until, self.when)

    def init(self) -> None:
        for _ in range(self.population):
            self._send(0, 0)
        if self.tick is not None:
            first = 0 if self.many else self.index
            self.schedule(self.tick, first + self.period)

    # -- handlers -----------------------------------------------------------------------------------
    def on_msg(self, hops: int) -> None:
        self.received += 1
        self.acc = (self.acc * 1_000_003 + hops * 7919 + self.index + 1) % _MOD
        extra = 0
        if self.direct:
            assert self.partner is not None
            extra = self.call(self.partner, "probe", hops & 0xFF)
        if self.port is None:
            self._send(hops + 1, extra)
            return
        self.fifo.append(hops + 1)
        if not self.port.scheduled:  # gem5's schedSendEvent: check, then act
            self.schedule(self.port, self._port_tick())

    def on_port(self, _payload: int) -> None:
        try:
            hops = self.fifo.popleft()
        except IndexError:
            return  # nothing to send (as gem5's send events check their queue)
        self._send(hops, 0)
        self.busy_until = self.when + self.service  # a stored tick: from this event's own tick
        if self.fifo and not self.port.scheduled:  # type: ignore[union-attr]
            self.schedule(self.port, self.busy_until)  # type: ignore[arg-type]

    def on_tick(self, _payload: int) -> None:
        self.ticks += 1
        self.acc = (self.acc * 31 + self.ticks) % _MOD
        if self.port is not None and self.fifo and not self.port.scheduled:
            self.schedule(self.port, self._port_tick())
        base = self.when if self.stored else self.cur_tick
        self.schedule(self.tick, base + self.period)  # type: ignore[arg-type]

    def probe(self, value: int) -> int:
        return _probe(self, value)

    def state(self) -> tuple[int, ...]:
        return (self.received, self.acc, self.probes, self.probe_acc, self.ticks, self.sent, len(self.fifo))


def _probe(target: Node | Probe, value: int) -> int:
    """A same-tick port call: fold ``value`` into the target's state, answer with a small extra delay."""
    target.probes += 1
    target.probe_acc = (target.probe_acc * 131 + value + 1) % _MOD
    return target.probe_acc % 3


class Probe(Component):
    """A passive component (``callee=private``): only direct calls enter it, it has no events."""

    def __init__(self, model: Model, name: str) -> None:
        super().__init__(model, name)
        self.probes = self.probe_acc = 0

    def probe(self, value: int) -> int:
        return _probe(self, value)

    def state(self) -> tuple[int, ...]:
        return (0, self.probes, self.probe_acc)


class TraitMix(Workload):
    name = "traitmix"
    summary = "a generated family: one bool parameter per trait switches it on or off (conformance tests)"
    params = {
        **{trait: Param(bool, False, f"switch the trait on: {TRAITS[trait]}") for trait in TRAITS},
        "nodes": Param(int, 4, "nodes (even: node i's partner is i ^ 1)", min=2, max=64),
        "population": Param(int, 3, "tokens per node (several pending at once)", min=1, max=1000),
        "latency": Param(int, 5, "latency of every link (but the partners' with zero_latency_links)", min=1, max=10**6),
        "mean": Param(float, 12.0, "mean of a token's exponential extra delay, ticks", min=0.001, max=1e9),
        "granularity": Param(int, 16, "with many_events_per_tick, every tick is a multiple of this", min=2, max=10**6),
        "period": Param(int, 4, "tick event period, in granules (or in rounds of nodes)", min=1, max=10**6),
        "service": Param(int, 1, "port busy time per token, in granules (or in rounds of nodes)", min=1, max=10**6),
        "window": Param(
            str,
            "wide",
            "stored_ticks: the port is scheduled at max(busy_until, its own tick) (wide), or at busy_until only "
            "while the port is busy, else at cur_tick (narrow: a moved clock is seldom past a stored tick)",
            choices=("wide", "narrow"),
        ),
        "tick_priority": Param(
            int, 0, "priority of the tick event (not 0: never in a bin with the messages)", min=-100, max=99
        ),
        "callee": Param(
            str,
            "partner",
            "direct_calls: into the partner node, or into a private passive component of each node (never in a bin)",
            choices=("partner", "private"),
        ),
        "short_end": Param(int, 120, "end tick without long_run", min=1, max=10**12),
        "long_end": Param(int, 1200, "end tick with long_run", min=1, max=10**12),
    }
    statistics = {"received": "tokens the nodes received before the end"}

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """Exactly the traits switched on."""
        return frozenset(trait for trait in TRAITS if params[trait])

    def check_params(self, params: dict[str, Any]) -> None:
        if params["nodes"] % 2:
            raise ParamError(f"workload traitmix parameter nodes={params['nodes']} is not allowed: an even number")

    def build(self, model: Model, params: dict[str, Any]) -> None:
        nodes = [Node(model, f"mix.n{i}", i, params) for i in range(params["nodes"])]
        private = params["direct_calls"] and params["callee"] == "private"
        for src in nodes:
            src.partner = Probe(model, f"{src.name}.probe") if private else nodes[src.index ^ 1]
            for dst in nodes:
                partners = dst.index == src.index ^ 1
                latency = 0 if partners and params["zero_latency_links"] else params["latency"]
                src.out.append(model.link(src, dst, "on_msg", latency, event_name=f"{dst.name}.msg"))
            if params["direct_calls"]:
                model.connect_direct(src, src.partner)
        model.end_tick = params["long_end"] if params["long_run"] else params["short_end"]

    def stats(self, record: OracleRecord) -> dict[str, float]:
        return {"received": float(sum(entry["state"][0] for entry in record.components.values()))}
