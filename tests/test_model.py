"""The model API: components, named events, links, direct calls, RNGs, binding, race detection, digests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tickpar.kernel.eventq import EventQueue, Priority, canonical_source
from tickpar.kernel.model import Component, Link, Model, ModelEvent, derive_seed
from tickpar.kernel.simloop import schedule_limit


class Node(Component):
    """A component that logs what it sees: its events, messages and direct calls."""

    def __init__(self, model: Model, name: str) -> None:
        super().__init__(model, name)
        self.log: list[tuple[Any, ...]] = []
        self.tick = self.event("tick", self.on_tick)
        self.out: Link | None = None
        self.plan: list[tuple[int, Any]] = []  # (when, payload) scheduled by init
        self.on_tick_do: Any = None

    def init(self) -> None:
        self.log.append(("init",))
        for when, payload in self.plan:
            self.schedule(self.event(f"e{when}_{len(self.events)}", self.on_tick), when, payload)

    def on_tick(self, payload: Any) -> None:
        self.log.append(("tick", self.cur_tick, self.when, payload))
        if self.on_tick_do is not None:
            self.on_tick_do(self, payload)

    def on_msg(self, payload: Any) -> None:
        self.log.append(("msg", self.cur_tick, payload))

    def poke(self, x: int) -> int:
        self.log.append(("poke", self.when, x))
        return 2 * x

    def state(self) -> tuple[Any, ...]:
        return (len(self.log),)


def simulate(model: Model, order: str = "gem5") -> EventQueue:
    """The sequential reference loop: one queue, start, the simulate() limit, gem5's doSimLoop."""
    q = EventQueue(order=order)
    model.bind(q)
    model.start()
    schedule_limit(q, model.end_tick)
    q.run()
    return q


# --- building --------------------------------------------------------------------------------------------------


def test_components_get_ids_in_creation_order() -> None:
    """Components are registered with consecutive ids in creation order and found by their hierarchical name."""
    model = Model(1)
    nodes = [Node(model, name) for name in ("system.cpu0", "system.cpu0.dcache", "system.mem")]
    assert [n.id for n in nodes] == [0, 1, 2]
    assert model.components == nodes
    assert model.by_name["system.cpu0.dcache"] is nodes[1]
    assert "system.mem" in repr(nodes[2]) and "id=2" in repr(nodes[2])


def test_duplicate_component_name_rejected() -> None:
    """A second component with the same name is a ValueError naming it."""
    model = Model(1)
    Node(model, "system.cpu0")
    with pytest.raises(ValueError, match=r"system\.cpu0"):
        Node(model, "system.cpu0")
    assert len(model.components) == 1


def test_named_events_belong_to_their_component() -> None:
    """Component.event(suffix, handler, priority) creates the event '<component>.<suffix>' owned by the component."""
    model = Model(1)
    cpu = Node(model, "system.cpu0")
    resp = cpu.event("respEvent", cpu.on_msg, Priority.CPU_TICK)
    assert isinstance(resp, ModelEvent)
    assert resp.name == "system.cpu0.respEvent" and resp.priority == Priority.CPU_TICK
    assert resp.component is cpu and cpu.events["system.cpu0.respEvent"] is resp
    assert cpu.tick.name == "system.cpu0.tick"  # several events per component
    with pytest.raises(ValueError, match="respEvent"):
        cpu.event("respEvent", cpu.on_tick)


def test_event_priority_at_or_above_sim_exit_rejected() -> None:
    """Model events and links must have priority below SIM_EXIT (the simulate() limit runs after them)."""
    model = Model(1)
    a, b = Node(model, "a"), Node(model, "b")
    assert a.event("late", a.on_tick, Priority.SIM_EXIT - 1).priority == 99
    for prio in (Priority.SIM_EXIT, Priority.MAXIMUM):
        with pytest.raises(ValueError, match="SIM_EXIT"):
            a.event(f"bad{int(prio)}", a.on_tick, prio)
        with pytest.raises(ValueError, match="SIM_EXIT"):
            model.link(a, b, "on_msg", 1, priority=prio)


def test_link_validation() -> None:
    """A link needs a latency >= 0 and an existing handler on the destination."""
    model = Model(1)
    a, b = Node(model, "a"), Node(model, "b")
    with pytest.raises(ValueError, match="-1"):
        model.link(a, b, "on_msg", -1)
    with pytest.raises(ValueError, match="no_such"):
        model.link(a, b, "no_such", 1)
    link = model.link(a, b, "on_msg", 0)
    assert link.event_name == "b.on_msgEvent" and link.latency == 0
    assert model.link(a, b, "on_msg", 3, event_name="b.port.recv").event_name == "b.port.recv"
    assert [lk.id for lk in model.links] == [0, 1]


# --- running: context, links, calls ---------------------------------------------------------------------------


def test_handler_sees_cur_tick_when_and_payload() -> None:
    """A handler runs with cur_tick == when == the event's tick and gets the payload it was scheduled with."""
    model = Model(1)
    a = Node(model, "a")
    a.plan = [(30, 7), (12, (1, 2))]
    simulate(model)
    assert a.log == [("init",), ("tick", 12, 12, (1, 2)), ("tick", 30, 30, 7)]
    assert a.count == 2


def test_send_arrives_at_cur_tick_plus_latency_plus_delay() -> None:
    """send(link, payload, delay) is received at the sender's cur_tick + link latency + delay."""
    model = Model(1)
    a, b = Node(model, "a"), Node(model, "b")
    a.out = model.link(a, b, "on_msg", 5)
    a.plan = [(7, 0)]

    def fire(node: Node, payload: Any) -> None:
        assert node.out is not None
        node.send(node.out, "x3", delay=3)
        node.send(node.out, "x0")

    a.on_tick_do = fire
    simulate(model)
    assert b.log == [("init",), ("msg", 12, "x0"), ("msg", 15, "x3")]
    assert b.count == 2 and a.count == 1


def test_link_priority_orders_messages_within_a_tick() -> None:
    """A message carries its link's priority: at one tick, a priority -1 link is served before default events."""
    model = Model(1)
    a, b = Node(model, "a"), Node(model, "b")
    urgent = model.link(a, b, "on_msg", 10, priority=Priority.DELAYED_WRITEBACK)
    b.plan = [(10, "own")]
    a.plan = [(0, 0)]
    a.on_tick_do = lambda node, payload: node.send(urgent, "wb")
    simulate(model)
    assert b.log[1:] == [("msg", 10, "wb"), ("tick", 10, 10, "own")]


def test_direct_call_is_recorded_in_the_peer_digest() -> None:
    """Component.call runs the peer's method at the caller's tick, returns its result, and folds (when, method, args)
    into the peer's digest and trace (a call is no event: the peer's count is its own events); the peer's own
    `when` is restored afterwards."""

    def build(arg: int | None) -> tuple[Model, Node, Node, list[int]]:
        model = Model(1, trace=True)
        a, b = Node(model, "a"), Node(model, "b")
        model.connect_direct(a, b)
        results: list[int] = []
        a.plan = [(40, 0)]
        b.plan = [(10, 0)]
        if arg is not None:
            a.on_tick_do = lambda node, payload: results.append(node.call(b, "poke", arg))
        simulate(model)
        return model, a, b, results

    _, a3, b3, results = build(3)
    assert results == [6]
    assert ("poke", 40, 3) in b3.log
    assert b3.when == 10  # restored: b's last own event ran at 10
    assert b3.count == 1 and b3.trace is not None and b3.trace[-1] == (40, -129, "b:poke", (3,))
    _, a4, b4, _ = build(4)
    _, a_none, b_none, _ = build(None)
    assert b3.digest != b4.digest and b3.digest != b_none.digest
    assert a3.digest == a4.digest == a_none.digest  # the caller's digest holds only its own events


def test_direct_call_across_queues_is_flagged() -> None:
    """A direct call into a component bound to another event queue is recorded as a race on the peer."""
    model = Model(1)
    a, b = Node(model, "a"), Node(model, "b")
    queues = {a.name: EventQueue("q0"), b.name: EventQueue("q1")}
    model.bind(lambda comp: queues[comp.name])
    model.start()
    a.when = 5
    assert a.call(b, "poke", 1) == 2
    assert len(model.races) == 1
    race = model.races[0]
    assert race.component == "b" and race.event == "<direct call>" and "across event queues" in race.detail


def test_trace_lists_every_event_in_order() -> None:
    """With trace=True each component keeps (when, priority, event name, payload) for every event it processed."""
    model = Model(1, trace=True)
    a = Node(model, "a")
    a.plan = [(5, 1), (3, 2)]
    simulate(model)
    assert a.trace == [(3, 0, "a.e3_2", 2), (5, 0, "a.e5_1", 1)]
    assert Node(Model(1), "untraced").trace is None


# --- determinism --------------------------------------------------------------------------------------------------


def test_derive_seed_is_stable_and_distinct() -> None:
    """derive_seed(seed, name) is a 64-bit function of both inputs (same inputs, same seed)."""
    s = derive_seed(1, "lp0")
    assert s == derive_seed(1, "lp0")
    assert 0 <= s < 2**64
    assert len({s, derive_seed(2, "lp0"), derive_seed(1, "lp1"), derive_seed(0, "1lp0")}) == 4


def test_component_rng_depends_on_seed_and_name_only() -> None:
    """A component's RNG is seeded from (run seed, name): the same in any model with that seed, whatever the
    creation order, and different for another seed or name."""

    def draws(seed: int, names: list[str], which: str) -> list[float]:
        model = Model(seed)
        nodes = {name: Node(model, name) for name in names}
        return [nodes[which].rng.random() for _ in range(5)]

    base = draws(7, ["a", "b"], "a")
    assert base == draws(7, ["b", "a"], "a")
    assert base != draws(8, ["a", "b"], "a")
    assert base != draws(7, ["a", "b"], "b")


def test_canonical_order_ties_by_source_component_then_sequence() -> None:
    """Events scheduled through components carry (component id, sequence) keys: in canonical order same-tick
    events run by source component id, then by the order each component scheduled them; gem5 order is LIFO."""

    def run(order: str) -> list[tuple[str, Any]]:
        model = Model(1)
        served: list[tuple[str, Any]] = []
        nodes = [Node(model, f"n{i}") for i in range(3)]
        for node in nodes:
            node.plan = [(10, 1), (10, 2)]
            node.on_tick_do = lambda n, p: served.append((n.name, p))
        simulate(model, order)
        return served

    assert run("canonical") == [("n0", 1), ("n0", 2), ("n1", 1), ("n1", 2), ("n2", 1), ("n2", 2)]
    assert run("gem5") == [("n2", 2), ("n2", 1), ("n1", 2), ("n1", 1), ("n0", 2), ("n0", 1)]
    model = Model(1)
    Node(model, "w")
    node = Node(model, "x")
    probe = node.event("probe", node.on_tick)
    model.bind(EventQueue(order="canonical"))
    node.schedule(probe, 1)
    node.reschedule(probe, 2)
    assert probe.source == canonical_source(node.id, 2) == canonical_source(1, 2)


# --- binding and starting ---------------------------------------------------------------------------------------


def test_start_requires_bind_and_runs_once_in_id_order() -> None:
    """start() refuses unbound components, runs init() in id order (or only for the given components), once."""
    model = Model(1)
    nodes = [Node(model, f"n{i}") for i in range(3)]
    order: list[str] = []
    for n in nodes:
        n.init = lambda n=n: order.append(n.name)  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="n0"):
        model.start()
    assert order == []  # nothing ran, and the refused start does not count as the one start
    model.bind(EventQueue())
    model.start()
    assert order == ["n0", "n1", "n2"]
    order.clear()
    other = Model(1)
    subset = [Node(other, f"m{i}") for i in range(3)]
    for n in subset:
        n.init = lambda n=n: order.append(n.name)  # type: ignore[method-assign]
    other.bind(EventQueue())
    other.start([subset[2], subset[0]])
    assert order == ["m0", "m2"]
    with pytest.raises(RuntimeError, match="twice"):
        other.start()


def test_bind_with_a_function_places_components_on_queues() -> None:
    """bind(queue) puts every component on one queue; bind(function) on the queue the function picks."""
    model = Model(1)
    nodes = [Node(model, f"n{i}") for i in range(4)]
    queues = [EventQueue("q0"), EventQueue("q1")]
    model.bind(lambda comp: queues[comp.id % 2])
    assert [n.queue.name for n in nodes] == ["q0", "q1", "q0", "q1"]
    shared = EventQueue("main")
    model.bind(shared)
    assert all(n.queue is shared for n in nodes)


def test_lookahead_graph_takes_min_latency_and_zero_for_direct_calls() -> None:
    """lookahead_graph() gives (src, dst, min latency) per coupled pair, with 0 for direct-call pairs."""
    model = Model(1)
    a, b, c = Node(model, "a"), Node(model, "b"), Node(model, "c")
    model.link(a, b, "on_msg", 9)
    model.link(a, b, "on_msg", 4)
    model.link(b, c, "on_msg", 7)
    model.connect_direct(c, a)
    assert model.lookahead_graph() == [(0, 1, 4), (1, 2, 7), (2, 0, 0)]


# --- race detection --------------------------------------------------------------------------------------------------


def two_worker_model(detect_races: bool) -> tuple[Model, Node, list[str]]:
    """A model whose component 'shared' has two same-tick events; while worker w1 runs the first, it lets a
    simulated second worker w2 serve the next event (into the same component), as a broken strategy would."""
    model = Model(1, detect_races=detect_races)
    worker = ["w1"]
    model.worker_id = lambda: worker[0]
    shared = Node(model, "shared")
    shared.plan = [(10, "second"), (10, "first")]  # LIFO: "first" runs first

    def first_lets_w2_in(node: Node, payload: Any) -> None:
        if payload == "first":
            worker[0] = "w2"
            node.queue.service_one()  # w2 enters 'shared' while w1 is still inside
            worker[0] = "w1"

    shared.on_tick_do = first_lets_w2_in
    return model, shared, worker


def test_race_detected_when_two_workers_are_inside_one_component() -> None:
    """With detect_races=True, a second worker entering a component that another worker is inside is a Race naming
    the component, the event, the tick and both workers."""
    model, shared, _ = two_worker_model(detect_races=True)
    simulate(model)
    assert [p for (_, _, _, p) in shared.log[1:]] == ["first", "second"]
    assert len(model.races) == 1
    race = model.races[0]
    assert race.component == "shared" and race.event.startswith("shared.e10") and race.when == 10
    assert "w2" in race.detail and "w1" in race.detail
    assert shared.occupant is None  # released after both left


def test_no_race_without_detection_or_with_one_worker() -> None:
    """Without detect_races the guard is absent; with it, one worker (even re-entering) is never a race."""
    model, _, _ = two_worker_model(detect_races=False)
    simulate(model)
    assert model.races == []

    model = Model(1, detect_races=True)
    a, b = Node(model, "a"), Node(model, "b")
    model.connect_direct(a, b)
    a.plan = [(5, 0)]
    b.plan = [(5, 1)]
    a.on_tick_do = lambda node, payload: node.call(b, "poke", payload)
    simulate(model)
    assert model.races == [] and ("poke", 5, 0) in b.log


def test_race_detected_on_direct_call_into_busy_component() -> None:
    """A direct call made by worker w2 into a component that worker w1 is inside is a race on the callee."""
    model = Model(1, detect_races=True)
    worker = ["w1"]
    model.worker_id = lambda: worker[0]
    a, b = Node(model, "a"), Node(model, "b")
    model.connect_direct(b, a)
    a.plan = [(5, 0)]

    def w2_calls_in(node: Node, payload: Any) -> None:
        worker[0] = "w2"  # w1 is inside a; a simulated w2, running b, calls into a
        b.when = node.when
        assert b.call(a, "poke", 9) == 18
        worker[0] = "w1"

    a.on_tick_do = w2_calls_in
    simulate(model)
    assert len(model.races) == 1
    race = model.races[0]
    assert race.component == "a" and race.event == "<direct call>" and race.when == 5
    assert "w2" in race.detail and "w1" in race.detail


# --- digests across processes -------------------------------------------------------------------------------------


def test_digests_identical_across_hash_seeds(tmp_path: Path) -> None:
    """The same cell run in two processes with different PYTHONHASHSEED gives the same digests (digests hash only
    ints, floats and tuples)."""
    records = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"run{hash_seed}.json"
        env = {k: v for k, v in os.environ.items() if k not in ("TICKPAR_PLUGINS", "TICKPAR_BLOCKED")}
        env["PYTHONHASHSEED"] = hash_seed
        proc = subprocess.run(
            [sys.executable, "-m", "tickpar", "run", "-w", "phold", "-p", "lps=6", "--out", str(out)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        records.append(json.loads(out.read_text()))
    first, second = records
    assert first["digest"] and first["digest"] == second["digest"]
    assert first["oracle"]["components"] == second["oracle"]["components"]
    assert first["events"] == second["events"] > 0


# --- ownership primitives -----------------------------------------------------------------------------------------


def test_claim_and_release_say_who_is_inside() -> None:
    """claim() takes a free component (returns None), reports the holder otherwise; release() frees it."""
    model = Model(1)
    node = Node(model, "n")
    assert node.occupant is None
    assert node.claim("w1") is None and node.occupant == "w1"
    assert node.claim("w1") == "w1"  # already held by the claimant
    assert node.claim("w2") == "w1" and node.occupant == "w1"  # refused: w1 stays inside
    node.release()
    assert node.occupant is None and node.claim("w2") is None


def test_call_guard_replaces_the_worker_check_for_direct_calls() -> None:
    """With Model.call_guard set, every direct call goes through it, and the worker-occupancy check is skipped."""
    model = Model(1, detect_races=True)
    a, b = Node(model, "a"), Node(model, "b")
    model.connect_direct(a, b)
    a.plan = [(5, 0)]
    a.on_tick_do = lambda node, payload: node.call(b, "poke", 3)
    seen: list[tuple[str, str, str]] = []
    model.call_guard = lambda caller, peer, method: seen.append((caller.name, peer.name, method))
    b.claim("someone else")  # the default check would call this a race
    simulate(model)
    assert seen == [("a", "b", "poke")] and ("poke", 5, 3) in b.log
    assert model.races == [] and b.occupant == "someone else"
