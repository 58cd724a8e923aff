"""``phold``: PHOLD as ROSS defines it (models/phold/phold.c), in integer ticks.

``lps`` logical processes each start with ``population`` events.  Every event
received sends exactly one new event, so the population stays constant: with
probability ``remote`` to a uniformly chosen *other* LP, otherwise to itself,
``lookahead + floor(Exp(mean))`` ticks later (ROSS: ``tw_rand_exponential(mean)
+ lookahead``).  ``granularity`` rounds arrival ticks up to a multiple of
itself, which turns PHOLD's one-event ticks into many-event ticks (the shape
that tick-synchronous strategies need).  Each event does ``work_us`` of
synthetic work.  The run stops at ``end_tick``.

A moving load (``hotspot``, 0 to 1; 0, the default, is the PHOLD above, draw for draw): with
``hotspot > 0`` every event draws once more before PHOLD's own draws, and with probability
``hotspot`` sends its new event to the *hot group* instead, to a member drawn uniformly.  The hot group is
``max(1, lps // 8)`` consecutive LPs (wrapping past the last LP to LP 0) starting at LP
``(t // (end_tick // lps)) % lps``, where ``t`` is the sending event's tick: it moves one LP along
every ``end_tick // lps`` ticks (at least 1), so it passes over each LP once in the run.  The other
events follow PHOLD's rule.  An event on a hot LP mostly stays there (its own hot share plus the
self-sends), so the load follows the group, a hop behind it: with 16 LPs, ``remote=0.25``,
``hotspot=0.5`` and ``end_tick=64000`` (config/adaptive.yaml's ``moving``), the group's 2 LPs
receive most of the events while it sits on them (docs/measurements/2026-12-06-adaptive-lps.md).  A partition
fixed before the run, balanced over the whole run, then leaves one worker most of the load in most
windows (those in which the group sits on its LPs); a schedule that follows the load
(``conservative``'s ``schedule=adaptive`` on the native engine) can balance each window.

Links: every LP has a link to every LP (itself included) with latency
``lookahead``, so the lookahead between any two LPs is exactly ``lookahead``.

Statistics (:meth:`Phold.stats`): ``events_processed`` (events the LPs
received before the end) and ``mean_hops`` (the mean hop count of those
events: how many times an event of the population had been forwarded).
"""

from __future__ import annotations

from typing import Any

from tickpar.kernel.model import Component, Link, Model
from tickpar.kernel.params import Param, ParamError
from tickpar.plugins import Workload
from tickpar.verify.oracle import OracleRecord


class PholdLP(Component):
    """One PHOLD logical process; the payload is the event's hop count."""

    #: What a handler changes (for engines that roll back; the RNG and digest are the kernel's).
    state_attrs = ("received", "sent_remote", "hop_sum")

    def __init__(self, model: Model, name: str, index: int, params: dict[str, Any]) -> None:
        super().__init__(model, name)
        self.index = index
        self.population = params["population"]
        self.remote = params["remote"]
        self.lookahead = params["lookahead"]
        self.rate = 1.0 / params["mean"]
        self.granularity = params["granularity"]
        self.work_us = params["work_us"]
        #: The moving load (module docstring): the share of sends to the hot group, its size and its period.
        self.hotspot = params.get("hotspot", 0.0)  # a spec from before the parameter existed: plain PHOLD
        self.hot_size = max(1, params["lps"] // 8)
        self.hot_period = max(1, params["end_tick"] // params["lps"])
        self.out: list[Link] = []
        #: The link to itself (``out[index]``), set once the links are built.
        self.home: Link | None = None
        self.received = 0
        self.sent_remote = 0
        self.hop_sum = 0
        if not self.work_us and self.granularity == 1 and not self.hotspot:
            self.on_event = self._on_event_plain  # links bind their handler when built: this one

    def _on_event_plain(self, hops: int) -> None:
        """:meth:`on_event` without work, granularity rounding or hotspot: the same draws, the same state."""
        self.received += 1
        self.hop_sum += hops
        rng = self.rng
        # One load of `remote` instead of two, and the self-link (3 of 4 events here) as one attribute
        # (set by Phold.build) instead of out[index]: PHOLD's handler is part of the engine benchmark.
        remote = self.remote
        if remote and rng.random() < remote:
            out = self.out
            other = rng.randrange(len(out) - 1)
            link = out[other + (other >= self.index)]
            self.sent_remote += 1
        else:
            link = self.home
        link.send(hops + 1, int(rng.expovariate(self.rate)))

    def _delay(self) -> int:
        """Ticks beyond the link latency: the exponential part, then rounding to the granularity."""
        delay = int(self.rng.expovariate(self.rate))
        g = self.granularity
        if g > 1:
            arrival = self.cur_tick + self.lookahead + delay
            delay += -arrival % g
        return delay

    def _pick(self) -> Link:
        lps = len(self.out)
        if lps > 1 and self.rng.random() < self.remote:
            other = self.rng.randrange(lps - 1)
            return self.out[other + (other >= self.index)]
        return self.out[self.index]

    def init(self) -> None:
        for _ in range(self.population):
            self.send(self.out[self.index], 0, self._delay())

    def on_event(self, hops: int) -> None:
        # _pick() and _delay() inlined: PHOLD is the engine benchmark, so its handler stays lean.
        self.received += 1
        self.hop_sum += hops
        if self.work_us:
            self.work(self.work_us)
        rng = self.rng
        out = self.out
        if self.hotspot and rng.random() < self.hotspot:
            link = out[self._hot_member(rng.randrange(self.hot_size))]
            self.sent_remote += link is not out[self.index]
        elif self.remote and rng.random() < self.remote:
            other = rng.randrange(len(out) - 1)
            link = out[other + (other >= self.index)]
            self.sent_remote += 1
        else:
            link = out[self.index]
        delay = int(rng.expovariate(self.rate))
        g = self.granularity
        if g > 1:
            delay += -(self.queue.cur_tick + self.lookahead + delay) % g
        link.send(hops + 1, delay)

    def _hot_member(self, member: int) -> int:
        """The index of the hot group's ``member``-th LP now (module docstring: it moves with the tick)."""
        lps = len(self.out)
        return (self.queue.cur_tick // self.hot_period + member) % lps

    def state(self) -> tuple[int, ...]:
        return (self.received, self.sent_remote, self.hop_sum)  # Phold.stats reads it by position


_RECEIVED, _HOP_SUM = 0, 2  # positions in PholdLP.state()


class Phold(Workload):
    name = "phold"
    summary = "ROSS PHOLD: constant population of events hopping between LPs with exponential delays"
    params = {
        "lps": Param(int, 16, "number of logical processes", min=1, max=256),
        "population": Param(int, 4, "initial events per LP (stays constant)", min=1, max=10_000),
        "remote": Param(float, 0.25, "fraction of events sent to a random other LP", min=0.0, max=1.0),
        "lookahead": Param(int, 10, "minimum increment in ticks (link latency)", min=1, max=10**9),
        "mean": Param(float, 100.0, "mean of the exponential part of the increment, ticks", min=1e-3, max=1e9),
        "granularity": Param(int, 1, "round arrival ticks up to a multiple of this", min=1, max=10**9),
        "end_tick": Param(int, 20_000, "stop the simulation at this tick", min=1, max=10**15),
        "work_us": Param(float, 0.0, "synthetic work per event, microseconds", min=0.0, max=1e6),
        "hotspot": Param(float, 0.0, "share of sends to a hot group of max(1, lps // 8) LPs that moves one LP "
                         "along every end_tick // lps ticks (0: plain PHOLD)", min=0.0, max=1.0),
    }
    statistics = {
        "events_processed": "events the LPs received before the end",
        "mean_hops": "mean hop count of the received events",
    }

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """Every arrival is ``cur_tick + lookahead + delay`` (no stored ticks), one event name per LP.

        ``many_events_per_tick`` when ``granularity`` rounds arrivals onto shared ticks (and there are
        several LPs); ``long_run`` when each LP gets ~100 events or more (population x end_tick over the
        mean increment) with several events pending at once.
        """
        traits = set()
        if params["granularity"] > 1 and params["lps"] > 1:
            traits.add("many_events_per_tick")
        per_lp = params["population"] * params["end_tick"] / (params["lookahead"] + params["mean"])
        if per_lp >= 100 and params["lps"] * params["population"] > 1:
            traits.add("long_run")
        return frozenset(traits)

    def check_params(self, params: dict[str, Any]) -> None:
        if params["remote"] > 0 and params["lps"] < 2:
            raise ParamError(f"workload phold parameter remote={params['remote']} needs lps >= 2 (lps=1)")

    def build(self, model: Model, params: dict[str, Any]) -> None:
        lps = [PholdLP(model, f"lp{i}", i, params) for i in range(params["lps"])]
        for src in lps:
            for dst in lps:
                src.out.append(model.link(src, dst, "on_event", params["lookahead"], event_name=f"{dst.name}.msgEvent"))
            src.home = src.out[src.index]
        model.end_tick = params["end_tick"]

    def stats(self, record: OracleRecord) -> dict[str, float]:
        states = [entry["state"] for entry in record.components.values()]
        received = sum(state[_RECEIVED] for state in states)
        hops = sum(state[_HOP_SUM] for state in states)
        return {"events_processed": float(received), "mean_hops": hops / received if received else 0.0}
