"""The ``multicore`` workload: a gem5-like memory system, built as a pure function of (params, seed)."""

from __future__ import annotations

import sys
from collections import Counter, deque
from types import ModuleType
from typing import Any

import pytest

from tickpar.cli import main
from tickpar.kernel.eventq import EventQueue, Priority, SchedulingError
from tickpar.kernel.model import Model
from tickpar.plugins.registry import get_registry
from tickpar.runner import Cell, check_cell, execute, resolve_cell


def _module() -> ModuleType:
    return sys.modules[get_registry().workload("multicore").__module__]


def _cell(seed: int = 1, order: str = "gem5", **params: Any) -> Cell:
    return resolve_cell("multicore", params, "sequential", {}, 1, seed, order)


def _model(seed: int = 1, **params: Any) -> Model:
    return _cell(seed, **params).spec.build_model()


def _serve(model: Model, queue: EventQueue | None = None) -> EventQueue:
    """Run ``model`` to the end on one queue (gem5 order), as the sequential strategy does."""
    if queue is None:
        queue = EventQueue("main")
    model.bind(queue)
    model.start()
    while not queue.empty():
        queue.service_one()
    return queue


def test_defaults_run_between_1k_and_50k_events() -> None:
    """The default cell is a small run: between 1,000 and 50,000 events, no failure."""
    outcome = execute(_cell())
    assert outcome.record.failure is None
    assert 1_000 <= outcome.record.events <= 50_000


def test_same_seed_same_digest_other_seed_other_digest() -> None:
    """The model is a pure function of (params, seed): equal seeds agree, different seeds differ."""
    first = execute(_cell(seed=5)).record
    again = execute(_cell(seed=5)).record
    other = execute(_cell(seed=6)).record
    assert first.digest == again.digest
    assert first.components == again.components
    assert first.digest != other.digest


@pytest.mark.parametrize("order", ["gem5", "canonical"])
def test_check_is_exact_for_sequential(order: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar check -w multicore` gives verdict exact for the sequential strategy in both orders."""
    assert main(["check", "-w", "multicore", "--order", order]) == 0
    assert "verdict: exact" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("assignment", "named"),
    [
        ("l1_assoc=3", "l1_assoc=3"),
        ("l2_assoc=7", "l2_assoc=7"),
        ("shared_kib=0", "shared_kib=0"),
        ("mem_row_hit=50000", "mem_row_hit=50000"),
        ("cores=0", "cores"),
        ("link_latency=0", "link_latency"),
        ("nonsense=1", "nonsense"),
    ],
)
def test_bad_params_are_rejected_with_one_line(assignment: str, named: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Inconsistent or out-of-range params exit 2 with one line naming the parameter."""
    assert main(["run", "-w", "multicore", "-p", assignment]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert named in err


def test_consistent_overrides_are_accepted() -> None:
    """A non-default but consistent combination (no shared region, 3-way L1 of 48 KiB) resolves."""
    cell = _cell(shared_kib=0, shared_fraction=0.0, l1_kib=48, l1_assoc=3)
    assert cell.spec.params["l1_assoc"] == 3


def test_tag_array_evicts_the_least_recently_used_way() -> None:
    """In one set, a hit makes a line most recent; a fill then evicts the least recently used one."""
    tags = _module().TagArray(sets=4, assoc=2)
    a, b, c = 0, 4, 8  # all map to set 0
    assert tags.insert(a, dirty=False) == (-1, False)
    assert tags.insert(b, dirty=True) == (-1, False)
    assert tags.lru_order(a) == [a, b]
    assert tags.access(a)  # a becomes most recent, b is now LRU
    assert tags.lru_order(a) == [b, a]
    assert tags.insert(c, dirty=False) == (b, True)  # b was dirty: the caller must write it back
    assert not tags.access(b)
    assert tags.lru_order(a) == [a, c]
    assert tags.insert(1, dirty=False) == (-1, False)  # another set is unaffected


def test_tag_array_probe_leaves_lru_order_alone() -> None:
    """A functional probe reports presence without changing which way is evicted next."""
    tags = _module().TagArray(sets=1, assoc=2)
    tags.insert(10, dirty=False)
    tags.insert(11, dirty=False)
    assert tags.probe(10) and not tags.probe(12)
    assert tags.insert(12, dirty=False) == (10, False)


def test_tag_array_interleave_uses_every_set() -> None:
    """A bank that sees every 4th line spreads those lines over all its sets."""
    tags = _module().TagArray(sets=4, assoc=1, interleave=4)
    for line in (0, 4, 8, 12):
        assert tags.insert(line, dirty=False) == (-1, False)
    assert tags.state()[0] == 4


def test_components_have_gem5_hierarchical_names() -> None:
    """Components are named system.cpuN, system.cpuN.dcache, system.xbar, system.l2.bankB, system.mem_ctrlM."""
    model = _model(cores=3, l2_banks=2, mem_ctrls=2)
    names = {c.name for c in model.components}
    assert names == {
        "system.cpu0",
        "system.cpu1",
        "system.cpu2",
        "system.cpu0.dcache",
        "system.cpu1.dcache",
        "system.cpu2.dcache",
        "system.xbar",
        "system.l2.bank0",
        "system.l2.bank1",
        "system.mem_ctrl0",
        "system.mem_ctrl1",
    }


def test_caches_own_several_named_port_events() -> None:
    """An L1 and an L2 bank each own a cpuSidePort and a memSidePort sendEvent; the crossbar one per layer."""
    model = _model(cores=2, l2_banks=3)
    l1 = model.by_name["system.cpu1.dcache"]
    assert {"system.cpu1.dcache.cpuSidePort.sendEvent", "system.cpu1.dcache.memSidePort.sendEvent"} <= set(l1.events)
    bank = model.by_name["system.l2.bank2"]
    assert {"system.l2.bank2.cpuSidePort.sendEvent", "system.l2.bank2.memSidePort.sendEvent"} <= set(bank.events)
    assert len(model.by_name["system.xbar"].events) == 2 + 3  # a response layer per L1, a request layer per bank


def test_cpu_tick_events_have_cpu_tick_priority_and_responses_default() -> None:
    """Every system.cpuN.tickEvent runs at CPU_TICK; every link delivers at DEFAULT priority."""
    model = _model(cores=4)
    for i in range(4):
        event = model.by_name[f"system.cpu{i}"].events[f"system.cpu{i}.tickEvent"]
        assert event.priority == Priority.CPU_TICK
    assert {link.priority for link in model.links} == {Priority.DEFAULT}


def test_every_link_has_positive_latency() -> None:
    """Messages between components cross links of >= 1 tick, so a lookahead exists."""
    model = _model(link_latency=1)
    assert model.links
    assert min(link.latency for link in model.links) == 1
    assert all(lat >= 1 for _, _, lat in model.lookahead_graph())


def test_all_requests_are_answered_and_the_queue_drains() -> None:
    """With no end tick, the run stops when every CPU has all its responses and nothing is queued."""
    model = _model(cores=3, requests_per_core=200)
    assert model.end_tick is None
    queue = _serve(model)
    assert queue.empty()
    for i in range(3):
        issued, completed, outstanding, loads, stores = model.by_name[f"system.cpu{i}"].state()[:5]
        assert issued == completed == loads + stores == 200
        assert outstanding == 0


def test_caches_hit_miss_and_write_back() -> None:
    """The default run has L1 hits and misses, dirty L1 writebacks, L2 hits and misses, and DRAM reads."""
    model = _model()
    _serve(model)
    l1 = [c.state() for c in model.components if c.name.endswith(".dcache")]
    l2 = [c.state() for c in model.components if c.name.startswith("system.l2.")]
    mem = [c.state() for c in model.components if c.name.startswith("system.mem_ctrl")]
    assert sum(s[0] for s in l1) > sum(s[1] for s in l1) > 0  # hits > misses > 0
    assert sum(s[4] for s in l1) > 0  # dirty writebacks
    assert sum(s[0] for s in l2) > 0 and sum(s[1] for s in l2) > 0
    assert sum(s[0] for s in mem) > 0


def test_cold_caches_miss_more_than_warm_ones() -> None:
    """warm_caches=false starts from empty tag arrays, so the L1s miss more often."""

    def l1_misses(model: Model) -> int:
        _serve(model)
        return sum(c.state()[1] for c in model.components if c.name.endswith(".dcache"))

    assert l1_misses(_model(warm_caches=False)) > l1_misses(_model(warm_caches=True))


def test_many_events_share_a_tick() -> None:
    """CPUs tick on the same clock edges: some tick holds at least one event per CPU."""
    model = _model(cores=8, requests_per_core=100)
    queue = EventQueue("main")
    model.bind(queue)
    model.start()
    per_tick: Counter[int] = Counter()
    while not queue.empty():
        queue.service_one()
        per_tick[queue.cur_tick] += 1
    assert max(per_tick.values()) >= 8


class _CountingQueue(EventQueue):
    """An event queue that counts schedule/reschedule calls by event name."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        super().__init__("main")
        self.calls: Counter[tuple[str, str]] = Counter()

    def schedule(self, event: Any, when: int) -> None:
        self.calls[("schedule", event.name)] += 1
        super().schedule(event, when)

    def reschedule(self, event: Any, when: int, always: bool = False) -> None:
        self.calls[("reschedule", event.name)] += 1
        super().reschedule(event, when, always)


def test_components_use_both_schedule_and_reschedule() -> None:
    """Port send events are scheduled, and moved earlier with reschedule when a packet overtakes the head."""
    queue = _CountingQueue()
    _serve(_model(), queue)
    scheduled = sum(n for (op, _), n in queue.calls.items() if op == "schedule")
    rescheduled = {name for (op, name) in queue.calls if op == "reschedule"}
    assert scheduled > 1_000
    assert rescheduled
    assert all(name.endswith("Port.sendEvent") for name in rescheduled)


def test_direct_calls_are_declared_made_and_exact() -> None:
    """direct_calls=true declares L1->crossbar and L1->L2 couplings, makes the calls, and stays exact."""
    model = _model(direct_calls=True)
    assert model.direct
    assert any(lat == 0 for _, _, lat in model.lookahead_graph())
    assert not _model().direct
    _serve(model)
    probes = sum(c.state()[5] for c in model.components if c.name.endswith(".dcache"))
    assert probes > 0
    cell = _cell(direct_calls=True)
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "exact"
    assert outcome.record.digest != execute(_cell()).record.digest


def test_payloads_and_state_are_ints_and_tuples() -> None:
    """Payloads and final states hold only ints and tuples (hash-stable across processes)."""

    def ints_only(value: Any) -> bool:
        if isinstance(value, tuple):
            return all(ints_only(v) for v in value)
        return isinstance(value, int) and not isinstance(value, bool)

    spec = _cell(requests_per_core=100).spec.with_trace()
    model = spec.build_model()
    _serve(model)
    for comp in model.components:
        assert ints_only(comp.state()), comp.name
        assert comp.trace is not None
        assert all(ints_only(payload) for _, _, _, payload in comp.trace), comp.name


def test_popping_ahead_schedules_in_the_past() -> None:
    """A dispatcher that pops one event ahead of the one it runs (split, two workers) trips when >= cur_tick.

    The running handler then sees the popped event's cur_tick; a tick it takes
    from stored state -- the CPU's resume edge from the response's arrival
    tick, a crossbar layer's or a memory controller's stored ready time -- is
    now in the past.
    """
    model = _model()
    queue = EventQueue("main")
    model.bind(queue)
    model.start()
    popped: deque[Any] = deque()
    with pytest.raises(SchedulingError) as info:
        while popped or not queue.empty():
            while len(popped) < 2 and not queue.empty():
                popped.append(queue.pop_next(advance=True))
            queue.execute_popped(popped.popleft())
    err = info.value
    assert err.reason == "past" and err.when < err.cur_tick
    name = err.event.name
    assert name.endswith(("tickEvent", "respondEvent")) or (name.startswith("system.xbar.") and "Layer" in name)
