"""``partition_weights=windows``: the per-window profile, the window refinement and its partitions in runs.

The profile's windows are hand-counted on a tiny two-node workload; the refinement's
guarantees (whole groups, the cap, the lookahead) are checked on hand-built graphs;
on the sweep's ``wide`` shapes its window makespan is compared with ``events``'s from
the computed figures; ``conservative`` with it is exact against the sequential run,
and the native engine gets the same partition.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickpar.pdes.partition import partition, window_makespan, zero_latency_groups
from tickpar.runner import check_cell, resolve_cell

#: multicore's `wide` shape (config/config.yaml) at the free-threaded sweep's work_us (the brief's case).
MULTICORE_WIDE = {"cores": 16, "l2_banks": 8, "working_set_kib": 16, "think_cycles": 0, "link_latency": 2000,
                  "max_outstanding": 8, "requests_per_core": 16, "work_us": 300}  # fmt: skip
#: phold's `wide` shape.
PHOLD_WIDE = {"lps": 16, "population": 8, "mean": 200, "lookahead": 1000, "granularity": 500, "end_tick": 11000,
              "work_us": 300}  # fmt: skip
#: Small shapes for the exactness runs (a few thousand events).
SMALL = {
    "phold": {"lps": 8, "population": 3, "end_tick": 4000},
    "multicore": {"cores": 4, "requests_per_core": 30},
}
OPTIONS = {"partition": "auto", "sync": "window", "stall_s": 10.0}


# -- the profile ------------------------------------------------------------------------------------

# Two nodes joined by links of latency 10 (and a slower one of 25): node a fires at ticks
# 0, 3 and 12 and sends one message each to b (arriving at 10, 13 and 22 over the fast link),
# b fires once on its own at 40.  Events by tick: a@0 a@3 b@10 a@12 b@13 b@22 b@40.
# Windows of L = 10 from the first event: [0, 10): a a; [10, 20): b a b; [22, 32): b; [40, 50): b.
TWO_NODES = """
from tickpar.kernel.model import Component
from tickpar.plugins import Workload


class Node(Component):
    def __init__(self, model, name, fires):
        super().__init__(model, name)
        self.fires = fires
        self.out = None
        self.fired = 0
        self.got = 0
        self.tick_ev = self.event("tick", self.on_tick)

    def init(self):
        if self.fires:
            self.schedule(self.tick_ev, self.fires[0])

    def on_tick(self, _payload):
        self.fired += 1
        if self.out is not None:
            self.send(self.out, self.fired)
        if self.fired < len(self.fires):
            self.schedule(self.tick_ev, self.fires[self.fired])

    def on_msg(self, n):
        self.got += n

    def state(self):
        return (self.fired, self.got)


class TwoNodes(Workload):
    name = "test_two_nodes"
    summary = "a fires at 0, 3, 12 and messages b (latency 10); b fires at 40 (tests only)"
    params = {}

    def build(self, model, params):
        a = Node(model, "a", [0, 3, 12])
        b = Node(model, "b", [40])
        a.out = model.link(a, b, "on_msg", 10)
        model.link(b, a, "on_msg", 25)  # never used: only the smallest latency sets the windows
"""


@pytest.fixture
def two_nodes(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Register the ``test_two_nodes`` workload."""
    from tickpar.plugins.registry import get_registry

    path = tmp_path / "two_nodes_plugin.py"
    path.write_text(textwrap.dedent(TWO_NODES))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    return "test_two_nodes"


def test_window_profile_matches_hand_counted_windows(two_nodes: str) -> None:
    """Windows of the smallest link latency (10) from the first event, restarting at the next event after each."""
    from tickpar.pdes.plan import (
        component_event_counts,
        component_window_counts,
        partition_weights,
        partition_window_loads,
    )

    spec = resolve_cell(two_nodes, {}, "sequential", {}, 1, 1).spec
    model = spec.build_model(work="none")
    assert [c.name for c in model.components] == ["a", "b"]
    assert min(lat for _s, _d, lat in model.lookahead_graph()) == 10
    assert component_event_counts(spec) == (3, 4)
    # windows: [0, 10) a a | [10, 20) b a b | [22, 32) b | [40, 50) b
    assert component_window_counts(spec) == ((2, 1, 0, 0), (0, 2, 1, 1))
    assert partition_window_loads(spec, "windows") == [[2.0, 1.0, 0.0, 0.0], [0.0, 2.0, 1.0, 1.0]]
    assert partition_window_loads(spec, "events") is None and partition_window_loads(spec, "count") is None
    # Totals for every choice, as before: windows weighs by the same events.
    assert partition_weights(spec, "windows") == partition_weights(spec, "events") == [3.0, 4.0]
    with pytest.raises(ValueError, match=r"partition_weights='cost' is not allowed: one of events, count, windows"):
        partition_window_loads(spec, "cost")


def test_window_profile_rows_sum_to_the_event_counts() -> None:
    from tickpar.pdes.plan import component_event_counts, component_window_counts

    spec = resolve_cell("multicore", dict(MULTICORE_WIDE), "sequential", {}, 1, 1).spec
    rows = component_window_counts(spec)
    assert tuple(sum(row) for row in rows) == component_event_counts(spec)
    assert len({len(row) for row in rows}) == 1 and len(rows[0]) > 5


# -- the refinement on hand-built graphs ------------------------------------------------------------

# Four components in two zero-latency pairs {0, 1} and {2, 3}, plus 4 and 5; positive links of
# latency 5 and 9.  Windows: components 0 and 2 are busy in window 0, 4 and 5 in window 1.
EDGES = [(0, 1, 0), (1, 0, 0), (2, 3, 0), (1, 2, 5), (3, 4, 9), (4, 5, 9), (5, 0, 9)]
LOADS = [
    [4.0, 0.0, 1.0],
    [0.0, 1.0, 1.0],
    [4.0, 0.0, 1.0],
    [0.0, 1.0, 1.0],
    [0.0, 4.0, 1.0],
    [0.0, 4.0, 1.0],
]


def _totals(loads: list[list[float]]) -> list[float]:
    return [sum(row) for row in loads]


def _cap(n: int, edges: list[tuple[int, int, int]], weights: list[float], parts: int, imbalance: float) -> float:
    """The cap of ``auto``: the imbalance share, or the heaviest zero-latency group."""
    groups = zero_latency_groups(n, edges)
    heaviest = max(sum(w for c, w in enumerate(weights) if groups[c] == g) for g in set(groups))
    return max(math.ceil(sum(weights) / parts * (1 + imbalance) - 1e-9), heaviest)


@pytest.mark.parametrize("parts", [2, 3])
def test_window_refinement_keeps_groups_cap_and_lookahead(parts: int) -> None:
    weights = _totals(LOADS)
    by_events = partition(6, EDGES, parts, weights=weights)
    by_windows = partition(6, EDGES, parts, weights=weights, window_loads=LOADS)
    lp = by_windows.lp_of
    assert lp[0] == lp[1] and lp[2] == lp[3]  # zero-latency groups whole
    assert by_windows.zero_cut == ()
    assert max(by_windows.weights) <= max(_cap(6, EDGES, weights, parts, 0.2), max(by_events.weights))
    assert (by_windows.lookahead or math.inf) >= (by_events.lookahead or math.inf)
    assert by_windows.window_makespan == window_makespan(lp, LOADS, parts)
    assert by_windows.window_makespan is not None and by_events.window_makespan is None
    assert by_windows.window_makespan <= window_makespan(by_events.lp_of, LOADS, parts)
    assert by_windows.window_ideal == sum(weights) / parts
    assert set(lp) == set(range(parts)) and lp[0] == 0  # LPs named by their smallest component
    stats = by_windows.describe()
    assert stats["window_makespan"] == by_windows.window_makespan and stats["window_ideal"] == sum(weights) / parts


# Pairs {0, 1} and {2, 3} joined by zero latency, 4 and 5 alone, all of weight 6: {0, 1} and {2, 3} are
# coupled by three edges, 4 and 5 by two, {0, 1} and 4 by one, so the cut wants {0..3} | {4, 5}; but the
# pairs are busy in window 0 only and 4, 5 in window 1 only.
BUSY_EDGES = [(0, 1, 0), (2, 3, 0), (1, 2, 5), (2, 1, 5), (0, 3, 5), (4, 5, 5), (5, 4, 5), (0, 4, 5)]
BUSY_LOADS = [[3.0, 0.0], [3.0, 0.0], [3.0, 0.0], [3.0, 0.0], [0.0, 6.0], [0.0, 6.0]]


def test_window_refinement_splits_what_is_busy_at_once() -> None:
    """Totals balance either way; only the windows tell the two busy groups apart (hand-counted makespans)."""
    weights = _totals(BUSY_LOADS)
    by_events = partition(6, BUSY_EDGES, 2, weights=weights)
    assert by_events.lp_of == (0, 0, 0, 0, 1, 1) and by_events.cut_edges == 1
    assert window_makespan(by_events.lp_of, BUSY_LOADS, 2) == 12 + 12
    by_windows = partition(6, BUSY_EDGES, 2, weights=weights, window_loads=BUSY_LOADS)
    assert by_windows.lp_of == (0, 0, 1, 1, 0, 1)
    assert by_windows.window_makespan == 6 + 6 == by_windows.window_ideal
    assert by_windows.weights == (12.0, 12.0) and by_windows.lookahead == 5


def test_window_refinement_is_deterministic_and_validates() -> None:
    weights = _totals(LOADS)
    first = partition(6, EDGES, 2, weights=weights, window_loads=LOADS)
    assert all(partition(6, EDGES, 2, weights=weights, window_loads=LOADS) == first for _ in range(3))
    with pytest.raises(ValueError, match="window loads given for 5 components, not 6"):
        partition(6, EDGES, 2, weights=weights, window_loads=LOADS[:5])
    with pytest.raises(ValueError, match="unequal lengths"):
        partition(6, EDGES, 2, weights=weights, window_loads=[*LOADS[:5], [1.0]])


def test_window_refinement_never_cuts_below_the_lookahead() -> None:
    """A chain whose only cheap cut has the largest latency: balancing windows must not cut the short link."""
    # 0 -1- 1 -50- 2 -1- 3: the latency-50 cut is the only one that keeps the lookahead at 50.
    edges = [(0, 1, 1), (1, 2, 50), (2, 3, 1)]
    loads = [[3.0, 0.0], [0.0, 3.0], [3.0, 0.0], [0.0, 3.0]]
    part = partition(4, edges, 2, weights=_totals(loads), window_loads=loads)
    assert part.lookahead == 50 and part.lp_of == (0, 0, 1, 1)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(min_value=2, max_value=12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from([0, 0, 1, 2, 5, 9])),
                max_size=30,
            ),
            st.integers(min_value=2, max_value=4),
            st.lists(st.lists(st.integers(0, 6), min_size=4, max_size=4), min_size=n, max_size=n),
        )
    )
)
def test_window_refinement_properties_on_random_graphs(
    case: tuple[int, list[tuple[int, int, int]], int, list[list[int]]],
) -> None:
    """Groups whole, within the cap, the lookahead kept and the window makespan never above events's."""
    n, edges, parts, raw = case
    loads = [[float(x) for x in row] for row in raw]
    weights = _totals(loads)
    if not sum(weights):
        weights = [1.0] * n
    by_events = partition(n, edges, parts, weights=weights)
    by_windows = partition(n, edges, parts, weights=weights, window_loads=loads)
    assert by_windows.zero_cut == ()
    groups = zero_latency_groups(n, edges)
    assert all(by_windows.lp_of[c] == by_windows.lp_of[groups[c]] for c in range(n))
    assert max(by_windows.weights) <= max(_cap(n, edges, weights, parts, 0.2), max(by_events.weights)) + 1e-9
    assert (by_windows.lookahead or math.inf) >= (by_events.lookahead or math.inf)
    assert by_windows.window_makespan is not None
    assert by_windows.window_makespan <= window_makespan(by_events.lp_of, loads, parts)


# -- the sweep's shapes -------------------------------------------------------------------------------


def _figures(workload: str, params: dict[str, Any], workers: int, weighted_by: str) -> tuple[float, Any, Any]:
    """(window makespan on the windows profile, the partition, the lookahead) of ``conservative``'s plan."""
    from strategies.conservative import plan_for
    from tickpar.pdes.plan import partition_window_loads

    options = {**OPTIONS, "partition_weights": weighted_by}
    spec = resolve_cell(workload, dict(params), "conservative", options, workers, 1, "canonical").spec
    plan, part = plan_for(spec.build_model(work="none"), spec, workers, options)
    loads = partition_window_loads(spec, "windows")
    assert loads is not None
    return window_makespan(plan.lp_of, loads, workers), part, plan


@pytest.mark.parametrize(("workload", "params"), [("multicore", MULTICORE_WIDE), ("phold", PHOLD_WIDE)])
def test_windows_beats_events_on_wide_shapes(workload: str, params: dict[str, Any]) -> None:
    """The window makespan with windows is below events's on multicore wide (2 LPs), never above it on phold's."""
    by_events, part_e, plan_e = _figures(workload, params, 2, "events")
    by_windows, part_w, plan_w = _figures(workload, params, 2, "windows")
    if workload == "multicore":
        assert by_windows < by_events
    assert by_windows <= by_events
    assert part_w.window_makespan == by_windows and part_w.window_ideal is not None
    assert by_windows >= part_w.window_ideal
    assert part_w.weighted_by == "windows" and part_w.describe()["partition_weighted_by"] == "windows"
    assert part_e.window_makespan is None and "window_makespan" not in part_e.describe()
    assert plan_w.lookahead >= plan_e.lookahead
    # The cap of auto on the event totals.
    assert max(part_w.weights) <= math.ceil(sum(part_w.weights) / 2 * 1.2)


# -- runs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("workload", ["phold", "multicore"])
@pytest.mark.parametrize("workers", [2, 4])
def test_conservative_with_windows_is_exact(workload: str, workers: int) -> None:
    options = {**OPTIONS, "backend": "threads", "partition_weights": "windows"}
    cell = resolve_cell(workload, dict(SMALL[workload]), "conservative", options, workers, seed=2, order="canonical")
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["partition_weighted_by"] == "windows"
    assert outcome.stats["window_makespan"] >= outcome.stats["window_ideal"] > 0


def test_default_partition_weights_is_events() -> None:
    from strategies.conservative import Conservative
    from tickpar.pdes.plan import DEFAULT_PARTITION_WEIGHTS

    assert DEFAULT_PARTITION_WEIGHTS == "events"
    assert Conservative.options["partition_weights"].default == "events"


@pytest.mark.parametrize("strategy", ["conservative", "quantum"])
@pytest.mark.parametrize("weighted_by", ["windows", "events"])
def test_native_engine_gets_the_python_partition(strategy: str, weighted_by: str) -> None:
    pytest.importorskip("tickpar_native", reason="the native engine is not built: pip install ./native")
    from tickpar.native.engine import engine_args
    from tickpar.plugins.registry import get_registry

    options = {**OPTIONS, "partition_weights": weighted_by}
    if strategy == "quantum":
        options = {"partition": "auto", "stall_s": 10.0, "partition_weights": weighted_by, "quantum_ratio": 1}
    cell = resolve_cell("multicore", dict(MULTICORE_WIDE), strategy, options, 2, 1, "canonical")
    native = engine_args(cell.spec, strategy, 2, cell.options)["lp_of"]
    impl = get_registry().strategy(strategy)
    model = cell.spec.build_model(work="none")
    if strategy == "conservative":
        from strategies.conservative import plan_for

        plan, _part = plan_for(model, cell.spec, 2, cell.options)
    else:
        plan, _part = impl.plan_for(model, cell.spec, 2, cell.options)  # type: ignore[attr-defined]  # quantum's own
    assert native == list(plan.lp_of)


def test_prediction_uses_the_strategys_partition() -> None:
    from strategies.conservative import plan_for
    from tickpar.perf.predict.prediction import strategy_partition

    options = {**OPTIONS, "partition_weights": "windows"}
    cell = resolve_cell("multicore", dict(MULTICORE_WIDE), "conservative", options, 2, 1, "canonical")
    lp_of = strategy_partition(cell.spec, "conservative", cell.options)
    assert lp_of is not None
    plan, _part = plan_for(cell.spec.build_model(work="none"), cell.spec, 2, cell.options)
    assert lp_of(2) == list(plan.lp_of)
