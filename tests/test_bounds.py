"""tickpar.perf.predict.bounds: DAG recording and parent links, and each bound on hand-built DAGs with known answers."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest

from tickpar.cli import main
from tickpar.kernel.eventq import canonical_source
from tickpar.perf.predict.bounds import (
    BOUNDS,
    Dag,
    Overheads,
    balanced_partition,
    batched_makespans,
    bounds,
    calibrate_barrier,
    calibrate_event_cost,
    critical_path,
    default_workers,
    lpt_makespan,
    null_message_time,
    overheads,
    record_dag,
    tick_barrier_time,
    tick_batches,
    tick_groups,
    window_time,
)
from tickpar.runner import execute, resolve_cell

PS = (1, 2, 4, 8, 16)
ZERO = Overheads("zero")


def _dag(
    events: Sequence[tuple[int, int, float, int | None]],
    components: int,
    lookahead: Sequence[tuple[int, int, int]] = (),
    priorities: Sequence[int] | None = None,
) -> Dag:
    """A DAG from ``(component, when, cost, parent index or None)`` rows in processing order.

    Seq numbers are handed out as the model does: roots come from their own
    component's ``init()`` (seqs 1..r), then each event issues one seq per child.
    """
    counter = [0] * components
    root_source: dict[int, int] = {}
    for i, (comp, _when, _cost, parent) in enumerate(events):
        if parent is None:
            counter[comp] += 1
            root_source[i] = canonical_source(comp, counter[comp])
    children: dict[int, list[int]] = {}
    for i, (_comp, _when, _cost, parent) in enumerate(events):
        if parent is not None:
            children.setdefault(parent, []).append(i)
    source: dict[int, int] = dict(root_source)
    records = []
    for i, (comp, when, cost, _parent) in enumerate(events):
        first = counter[comp]
        for child in children.get(i, []):
            counter[comp] += 1
            source[child] = canonical_source(comp, counter[comp])
        prio = 0 if priorities is None else priorities[i]
        records.append((comp, when, prio, source[i], first, counter[comp], cost))
    return Dag.from_records(records, components, lookahead)


def _speedups(table: pd.DataFrame, bound: str) -> list[float]:
    rows = table[table["bound"] == bound].sort_values("workers")
    return rows["speedup"].tolist()


def test_find_parents_on_hand_built_records() -> None:
    """Parents come from the scheduler's seq range; init, direct-call and sourceless events are roots."""
    records = [
        (0, 0, 0, canonical_source(0, 1), 1, 3, 1.0),  # root (init seq 1); issues seqs 2, 3
        (1, 0, 0, None, 0, 0, 1.0),  # no source: root; issues nothing
        (1, 5, 0, canonical_source(0, 3), 0, 1, 1.0),  # parent 0 (seq 3); issues seq 1 of comp 1
        (0, 5, 0, canonical_source(0, 2), 3, 3, 1.0),  # parent 0 (seq 2); empty range
        (1, 7, 0, canonical_source(1, 1), 1, 1, 1.0),  # parent 2
        (0, 9, 0, canonical_source(0, 4), 3, 3, 1.0),  # seq 4 of comp 0 issued by no event: root
    ]
    dag = Dag.from_records(records, 2)
    assert dag.events["parent"].tolist() == [-1, -1, 0, 0, 2, -1]
    assert dag.roots() == 3


def test_from_records_rejects_events_out_of_processing_order() -> None:
    """A table whose ticks go backwards is not a sequential run."""
    with pytest.raises(ValueError, match="processing order"):
        Dag.from_records([(0, 5, 0, None, 0, 0, 1.0), (0, 4, 0, None, 0, 0, 1.0)], 1)


def test_chain_has_speedup_one_under_every_bound() -> None:
    """A chain (each event schedules the next, on alternating components) cannot be parallelised."""
    chain = [(i % 2, 10 * i, 1.0, None if i == 0 else i - 1) for i in range(6)]
    dag = _dag(chain, 2, [(0, 1, 10), (1, 0, 10)])
    table = bounds(dag, PS, ZERO)
    assert critical_path(dag) == pytest.approx(6.0)
    for bound in ("unconstrained", "causal", "tick-barrier"):
        assert _speedups(table, bound) == pytest.approx([1.0] * len(PS)), bound
    # Windows of the lookahead (10) hold one event each: no overlap either.
    assert _speedups(table, "conservative") == pytest.approx([1.0] * len(PS))


def test_independent_events_in_one_tick_give_min_p_n() -> None:
    """n equal independent events of n components in one tick: speedup min(P, n) with zero overhead."""
    n = 8
    dag = _dag([(c, 5, 1.0, None) for c in range(n)], n, [(a, b, 10) for a in range(n) for b in range(n) if a != b])
    table = bounds(dag, PS, ZERO)
    expected = [float(min(p, n)) for p in PS]
    for bound in BOUNDS:
        assert _speedups(table, bound) == pytest.approx(expected), bound
    assert table["efficiency"].max() == pytest.approx(1.0)


def test_tick_barrier_batch_of_one_component_is_serial() -> None:
    """All of a batch's events belong to one component (one lock key): speedup 1 for any P."""
    dag = _dag([(0, 3, 1.0, None) for _ in range(6)], 2)
    table = bounds(dag, PS, ZERO, which=("tick-barrier", "component", "unconstrained"))
    assert _speedups(table, "tick-barrier") == pytest.approx([1.0] * len(PS))
    assert _speedups(table, "component") == pytest.approx([1.0] * len(PS))
    # Without the component constraint the six events are independent.
    assert _speedups(table, "unconstrained") == pytest.approx([1.0, 2.0, 4.0, 6.0, 6.0])


def test_tick_barrier_same_bin_child_runs_in_batch_in_its_parents_group() -> None:
    """A zero-delay child into the running bin runs inside the batch, after its parent, as the strategy runs it."""
    dag = _dag([(0, 4, 1.0, None), (1, 4, 1.0, 0), (2, 4, 1.0, None)], 3)
    batch, group, popped = tick_groups(dag)
    assert batch.tolist() == [0, 0, 0]
    assert group.tolist() == [0, 0, 2]  # the child joins component 0's group
    assert popped.tolist() == [True, False, True]
    table = bounds(dag, (1, 2, 4), Overheads("sync", 0.0, 0.5), which=("tick-barrier",))
    # P=1: the plain loop, 3 units, no barrier; P>=2: one batch of groups {2, 1}: 2 + 0.5.
    assert table["time_s"].tolist() == pytest.approx([3.0, 2.5, 2.5])
    assert table["syncs"].tolist() == [0, 1, 1]


def test_tick_barrier_child_at_an_earlier_priority_stays_in_the_batch() -> None:
    """A child at an earlier priority of the same tick runs before the rest of the bin: same batch."""
    dag = _dag([(0, 4, 1.0, None), (0, 4, 1.0, 0), (1, 4, 1.0, None), (1, 5, 1.0, None)], 2, priorities=[50, 0, 50, 0])
    assert tick_batches(dag).tolist() == [0, 0, 0, 1]


def test_tick_barrier_small_or_single_group_batches_run_the_plain_loop() -> None:
    """Below min_parallel popped events, or with one group, no barrier is paid and events cost their plain cost."""
    dag = _dag([(0, 1, 1.0, None), (1, 1, 1.0, None), (0, 2, 1.0, None), (0, 2, 1.0, None)], 2)
    costs = Overheads("sync", 0.25, 0.5)
    table = bounds(dag, (2,), costs, which=("tick-barrier",))
    # Batch 0: two groups of 1.25 -> 1.25 + 0.5; batch 1 (one group): plain 2.0.
    assert table["time_s"].tolist() == pytest.approx([3.75])
    strict = bounds(dag, (2,), costs, which=("tick-barrier",), min_parallel=3)
    assert strict["time_s"].tolist() == pytest.approx([4.0]) and strict["syncs"].tolist() == [0]


def test_tick_barrier_bound_is_below_any_schedule_and_lpt_predicts_above_it() -> None:
    """The optimistic batch time is max(largest group, work / P); LPT (the prediction) never beats it."""
    sizes = [3.0, 3.0, 2.0, 2.0, 2.0]
    dag = _dag([(c, 1, w, None) for c, w in enumerate(sizes)], len(sizes))
    cost = dag.events["cost_s"].to_numpy()
    bound = tick_barrier_time(dag, cost, (2,), ZERO, optimistic=True)
    lpt = tick_barrier_time(dag, cost, (2,), ZERO, optimistic=False)
    assert bound[2][0] == pytest.approx(6.0) and lpt[2][0] == pytest.approx(7.0)


def test_tick_barrier_keeps_a_batch_serial_below_the_native_hand_off() -> None:
    """The native engine's threshold: a batch whose plain cost x (1 - 1/P) is below per batch + per event x
    popped runs the plain loop (no barrier); at or above it, in parallel as before."""
    sizes = [3.0, 3.0, 2.0, 2.0, 2.0]  # one batch of 5 events, 12 s of plain cost: 6 s saved at P = 2
    dag = _dag([(c, 1, w, None) for c, w in enumerate(sizes)], len(sizes))
    cost = dag.events["cost_s"].to_numpy()
    costs = Overheads("sync", 0.0, 0.5)
    plain = tick_barrier_time(dag, cost, (1, 2), costs, optimistic=False)
    assert tick_barrier_time(dag, cost, (1, 2), costs, optimistic=False, handoff=(0.0, 0.0)) == plain
    assert tick_barrier_time(dag, cost, (2,), costs, optimistic=False, handoff=(1.0, 1.0))[2] == plain[2]  # 6 >= 6
    kept = tick_barrier_time(dag, cost, (2,), costs, optimistic=False, handoff=(1.5, 1.0))[2]  # 6 < 6.5
    assert kept == (pytest.approx(12.0), 0)
    assert plain[2][1] == 1 and plain[2][0] == pytest.approx(7.0 + 0.5)


def test_tick_barrier_batches_split_by_priority() -> None:
    """Same tick, different priority: separate batches, even for independent components."""
    dag = _dag([(0, 4, 1.0, None), (1, 4, 1.0, None)], 2, priorities=[0, 50])
    assert tick_batches(dag).tolist() == [0, 1]
    assert _speedups(bounds(dag, (1, 2), ZERO, which=("tick-barrier",)), "tick-barrier") == pytest.approx([1.0, 1.0])


def test_lpt_and_best_of_fewer_workers() -> None:
    """LPT's makespan on a classic instance, and per-batch makespans never grow with P."""
    assert lpt_makespan([3, 3, 2, 2, 2], 2) == 7
    assert lpt_makespan([3, 3, 2, 2, 2], 1) == 12
    assert lpt_makespan([5, 1], 4) == 5
    spans = batched_makespans([[3, 3, 2, 2, 2], [1.0]], [1, 2, 3, 8])
    assert spans == {1: 13.0, 2: 8.0, 3: 6.0, 8: 4.0}


def test_component_bound_is_the_heaviest_component() -> None:
    """A component's events are serial: 3 units on one component out of 4 caps speedup at 4/3."""
    dag = _dag([(0, 1, 1.0, None), (1, 1, 1.0, None), (0, 2, 1.0, None), (0, 3, 1.0, None)], 2)
    table = bounds(dag, (1, 2, 4), ZERO, which=("component", "unconstrained"))
    assert _speedups(table, "component") == pytest.approx([1.0, 4 / 3, 4 / 3])
    assert _speedups(table, "unconstrained") == pytest.approx([1.0, 2.0, 4.0])


def test_causal_adds_component_program_order() -> None:
    """A child on a busy component waits for that component's earlier event too."""
    # e0: c0 cost 2 (root); e1: c1 cost 1 (root); e2: c0 cost 1, child of e1.
    dag = _dag([(0, 0, 2.0, None), (1, 0, 1.0, None), (0, 1, 1.0, 1)], 2)
    assert critical_path(dag) == pytest.approx(2.0)
    assert critical_path(dag, component_order=True) == pytest.approx(3.0)
    assert critical_path(dag, o_event=0.5) == pytest.approx(3.0)  # e1 -> e2 with 0.5 each: 3.0; e0: 2.5
    table = bounds(dag, (4,), ZERO, which=("unconstrained", "causal"))
    assert _speedups(table, "unconstrained") == pytest.approx([2.0])
    assert _speedups(table, "causal") == pytest.approx([4 / 3])


def test_conservative_windows_of_the_lookahead() -> None:
    """Two LPs, lookahead 10: windows [0,10) and [12,22) give time max(2,1) + max(1,1) = 3 for 5 units."""
    events = [(0, 0, 1.0, None), (1, 0, 1.0, None), (0, 5, 1.0, None), (0, 12, 1.0, None), (1, 15, 1.0, None)]
    dag = _dag(events, 2, [(0, 1, 10), (1, 0, 10)])
    costs = Overheads("sync", 0.0, 0.5)
    given = bounds(dag, (1, 2), costs, partition=lambda p: [0, min(1, p - 1)], which=("conservative",))
    # P=1: one LP, nothing crosses, one window: 5 + 0.5. P=2: 3 + 2 * 0.5 = 4.
    assert given["time_s"].tolist() == pytest.approx([5.5, 4.0])
    params = json.loads(given["params"].iloc[1])
    assert params["lookahead"] == 10 and params["windows"] == 2 and params["lps"] == 2
    default = bounds(dag, (1, 2), ZERO, which=("conservative",))
    assert _speedups(default, "conservative") == pytest.approx([1.0, 5 / 3])
    with pytest.raises(ValueError, match="at most 1"):
        bounds(dag, (1,), ZERO, partition=lambda p: [0, 1], which=("conservative",))


def test_zero_latency_coupling_stays_in_one_lp() -> None:
    """Components coupled by direct calls (latency 0) are never split across LPs by the default partition."""
    dag = _dag([(c, 0, 1.0, None) for c in range(4)], 4, [(0, 1, 0), (1, 2, 5), (2, 3, 5), (3, 0, 5)])
    part = balanced_partition(dag, 4)
    assert part[0] == part[1]
    assert len(set(part)) == 3


def test_phold_dag_parents_are_causal() -> None:
    """On a real PHOLD run every parent precedes its child, by at least the lookahead, on the scheduling component."""
    params = {"end_tick": 3000}
    spec = resolve_cell("phold", params, "sequential", {}, 1, 7).spec
    dag = record_dag(spec)
    ev = dag.events
    reference = execute(resolve_cell("phold", params, "sequential", {}, 1, 7))
    assert len(dag) == reference.record.events
    lookahead = spec.params["lookahead"]
    parents = ev["parent"].tolist()
    child_count: dict[int, int] = {}
    for i, p in enumerate(parents):
        if p < 0:
            continue
        assert p < i
        assert ev["when"].iat[p] + lookahead <= ev["when"].iat[i]
        assert (ev["when"].iat[p], ev["priority"].iat[p]) <= (ev["when"].iat[i], ev["priority"].iat[i])
        assert ev["source"].iat[i] >> 40 == ev["component"].iat[p]  # the parent's component scheduled it
        child_count[p] = child_count.get(p, 0) + 1
    assert max(child_count.values()) == 1  # PHOLD: each event sends exactly one
    lps, population = spec.params["lps"], spec.params["population"]
    assert 0 < dag.roots() <= lps * population
    assert sorted(dag.lookahead) == sorted((a, b, lookahead) for a in range(lps) for b in range(lps))


@pytest.fixture(scope="module")
def phold_dag() -> Dag:
    """A small PHOLD DAG with many-event ticks (granularity 20), shared by the table tests."""
    return record_dag(resolve_cell("phold", {"end_tick": 2000, "granularity": 20}, "sequential", {}, 1, 3).spec)


def test_bounds_monotone_and_capped_without_overhead(phold_dag: Dag) -> None:
    """Zero overhead: every bound is non-decreasing in P and at most P; the constrained ones sit below."""
    table = bounds(phold_dag, default_workers(64), ZERO)
    assert set(table["bound"]) == set(BOUNDS)
    for bound in BOUNDS:
        rows = table[table["bound"] == bound].sort_values("workers")
        s = rows["speedup"].tolist()
        assert all(b >= a - 1e-9 for a, b in itertools.pairwise(s)), (bound, s)
        assert all(v <= p + 1e-9 for v, p in zip(s, rows["workers"], strict=True)), (bound, s)
        assert s[0] == pytest.approx(1.0)
    by = table.pivot(index="workers", columns="bound", values="speedup")
    assert (by["causal"] <= by["unconstrained"] + 1e-9).all()
    assert (by["causal"] <= by["component"] + 1e-9).all()
    assert (by["tick-barrier"] <= by["component"] + 1e-9).all()


def test_overheads_only_lower_the_bounds(phold_dag: Dag) -> None:
    """With per-event and per-barrier costs every row is at most its zero-overhead twin, and monotone if o_sync is."""
    ps = default_workers(16)
    zero = bounds(phold_dag, ps, ZERO).set_index(["bound", "workers"])["speedup"]
    for costs in (overheads("cxx"), Overheads("heavy", 1e-6, 2e-5), Overheads("grow", 1e-7, {1: 1e-6, 16: 1e-3})):
        table = bounds(phold_dag, ps, costs)
        got = table.set_index(["bound", "workers"])["speedup"]
        assert (got <= zero + 1e-12).all(), costs
        # At P=1 every bound pays o_event, except tick-barrier, which runs the plain loop there.
        one = table[(table["workers"] == 1) & (table["bound"] != "tick-barrier")]
        assert (one["speedup"] < 1.0).all()
        if isinstance(costs.o_sync, float):  # constant sync cost
            for bound in BOUNDS:
                rows = table[table["bound"] == bound].sort_values("workers")
                if bound == "tick-barrier":  # its P=1 pays no barrier: monotone from P=2 on
                    rows = rows[rows["workers"] > 1]
                s = rows["speedup"].tolist()
                assert all(b >= a - 1e-9 for a, b in itertools.pairwise(s)), (bound, s)


def test_dag_round_trips_through_json(phold_dag: Dag, tmp_path: Path) -> None:
    """A saved DAG loads back identical and gives the same table."""
    path = tmp_path / "dag.json"
    phold_dag.save(path)
    back = Dag.load(path)
    pd.testing.assert_frame_equal(back.events, phold_dag.events)
    assert back.components == phold_dag.components
    assert back.lookahead == phold_dag.lookahead
    pd.testing.assert_frame_equal(bounds(back, PS, ZERO), bounds(phold_dag, PS, ZERO))


def test_overhead_presets_and_calibration() -> None:
    """Presets carry the documented costs; calibration measures positive costs; sync falls back to fewer workers."""
    assert overheads("zero").o_event == 0.0 and overheads("zero").sync(8) == 0.0
    cxx = overheads("cxx")  # from the calibration file tests/conftest.py names
    assert cxx.o_event == pytest.approx(20e-9) and cxx.sync(1) == 0.0
    assert cxx.sync(64) == pytest.approx(6 * 500e-9) and cxx.o_msg == pytest.approx(150e-9)
    assert cxx.source.endswith("calibration.json")
    assert calibrate_event_cost(2000, 1) > 0
    assert calibrate_barrier(2, rounds=5) > 0
    table = Overheads("t", 0.0, {1: 1.0, 4: 3.0})
    assert (table.sync(1), table.sync(3), table.sync(4), table.sync(9)) == (1.0, 1.0, 3.0, 3.0)
    with pytest.raises(ValueError, match="not allowed"):
        overheads("fast")
    assert default_workers(64) == [1, 2, 4, 8, 16, 32, 64]
    assert default_workers(6) == [1, 2, 4, 6]


def test_cli_bounds_writes_the_tidy_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar bounds` prints the speedup table and writes one CSV row per (bound, workers)."""
    out = tmp_path / "b.csv"
    dag_out = tmp_path / "dag.json"
    argv = ["bounds", "-w", "phold", "-p", "end_tick=1000", "--workers-max", "8", "--overheads", "zero"]
    rc = main([*argv, "--out", str(out), "--dag-out", str(dag_out)])
    assert rc == 0
    assert "unconstrained" in capsys.readouterr().out
    table = pd.read_csv(out)
    assert len(table) == len(BOUNDS) * 4
    assert sorted(set(table["workers"])) == [1, 2, 4, 8]
    assert len(Dag.load(dag_out)) > 0


def test_each_native_cost_is_shown_as_a_multiple_of_its_floor() -> None:
    """Sync costs against pingpong_ns, event_ns against heap_ns; a floor the file lacks reads n/a, never a crash."""
    from tickpar.perf.predict.costs import beside_floor, calibration_figures

    cal = {"pingpong_ns": 80.0, "heap_ns": 20.0, "barrier_ns": 96.0, "mutex_ns": 16.0, "message_ns": 40.0,
           "tb_batch_ns": 8000.0, "event_ns": 50.0}  # fmt: skip
    assert beside_floor(cal, "barrier_ns") == "96.0 ns = 1.2 x pingpong"
    assert beside_floor(cal, "mutex_ns") == "16.0 ns = 0.20 x pingpong"
    assert beside_floor(cal, "tb_batch_ns") == "8000.0 ns = 100.0 x pingpong"
    assert beside_floor(cal, "event_ns") == "50.0 ns = 2.5 x heap"
    assert beside_floor(cal, "pingpong_ns") == "80.0 ns"
    assert [k for k, _ in calibration_figures(cal)] == ["pingpong_ns", "heap_ns", "mutex_ns", "barrier_ns",
                                                       "message_ns", "tb_batch_ns", "tb_event_ns",
                                                       "event_ns"]  # fmt: skip
    assert beside_floor({**cal, "tb_event_ns": 40.0}, "tb_event_ns") == "40.0 ns = 0.50 x pingpong"
    assert beside_floor(cal, "tb_event_ns") == "n/a"  # a file before the per-event fit
    old = {k: v for k, v in cal.items() if k not in ("pingpong_ns", "heap_ns", "tb_batch_ns")}
    assert beside_floor(old, "barrier_ns") == "96.0 ns = n/a x pingpong"
    assert beside_floor(old, "event_ns") == "50.0 ns = n/a x heap"
    assert beside_floor(old, "pingpong_ns") == beside_floor(old, "tb_batch_ns") == "n/a"
    assert beside_floor({**cal, "pingpong_ns": 0.0}, "message_ns") == "40.0 ns = n/a x pingpong"


@pytest.mark.parametrize("floors", [True, False], ids=["current", "older file"])
def test_cli_bounds_cxx_prints_each_cost_beside_its_floor(
    floors: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tickpar bounds --overheads cxx` lists the calibration's costs as multiples of pingpong_ns and heap_ns;
    a file from before those floors (or tb_batch_ns) still prices the bounds and shows n/a."""
    from helpers import CXX_CALIBRATION

    cal = dict(CXX_CALIBRATION)
    if not floors:
        cal = {k: v for k, v in cal.items() if k not in ("pingpong_ns", "heap_ns", "tb_batch_ns")}
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(cal))
    argv = ["bounds", "-w", "phold", "-p", "end_tick=1000", "--workers-max", "4", "--overheads", "cxx"]
    assert main([*argv, "--calibration", str(path)]) == 0
    out = capsys.readouterr().out
    if floors:  # the fixture: pingpong 100 ns, heap 40 ns
        for line in ("pingpong_ns 100.0 ns", "barrier_ns 500.0 ns = 5.0 x pingpong", "mutex_ns 20.0 ns = 0.20 x "
                     "pingpong", "message_ns 150.0 ns = 1.5 x pingpong", "tb_batch_ns 5000.0 ns = 50.0 x pingpong",
                     "event_ns 80.0 ns = 2.0 x heap"):  # fmt: skip
            assert f"  {line}\n" in out, line
    else:
        assert "  pingpong_ns n/a\n" in out and "  barrier_ns 500.0 ns = n/a x pingpong\n" in out
        assert "  tb_batch_ns n/a\n" in out and "  event_ns 80.0 ns = n/a x heap\n" in out
    assert "unconstrained" in out


@pytest.mark.parametrize(
    "extra",
    [
        ["--overheads", "fast"],
        ["--workers-max", "0"],
        ["--o-sync", "-1"],
        ["-p", "lps=0"],
        ["--order", "lifo"],
    ],
)
def test_cli_bounds_bad_input_is_one_line_exit_2(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Bad input: exit status 2 and a single error line on stderr."""
    assert main(["bounds", "-w", "phold", "--overheads", "zero", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tickpar: error:")


def test_multicore_dag_records_each_event_as_it_was_scheduled() -> None:
    """multicore reschedules its own events from their handlers and recycles messages: the DAG keeps the fired tick."""
    params = {"cores": 2, "requests_per_core": 10}
    spec = resolve_cell("multicore", params, "sequential", {}, 1, 1).spec
    dag = record_dag(spec)
    reference = execute(resolve_cell("multicore", params, "sequential", {}, 1, 1))
    assert len(dag) == reference.record.events
    ev = dag.events
    assert ev["when"].is_monotonic_increasing
    parents = ev["parent"].to_numpy()
    linked = parents >= 0
    assert linked.mean() > 0.5  # most events have a recorded parent
    assert (ev["when"].to_numpy()[parents[linked]] <= ev["when"].to_numpy()[linked]).all()
    table = bounds(dag, (1, 2, 4), ZERO)
    assert set(table["bound"]) == set(BOUNDS)
    assert (table["speedup"] <= table["workers"] + 1e-9).all()


def test_metered_work_is_recorded_per_event_and_added_back() -> None:
    """meter_work records each event's requested work instead of spending it; with_work charges it."""
    spec = resolve_cell("phold", {"end_tick": 600, "work_us": 7}, "sequential", {}, 1, 2).spec
    dag = record_dag(spec, meter_work=True)
    ev = dag.events
    assert (ev["work_us"] == 7 * ev["work_calls"]).all() and ev["work_calls"].sum() == len(dag)
    heavy = dag.with_work(1e-6, 1e-6)
    assert heavy.t1_s == pytest.approx(dag.t1_s + len(dag) * 8e-6)
    assert dag.meta["work_metered"] is True


def test_null_message_time_chains_each_lp_and_pays_messages() -> None:
    """Two LPs: each LP's events are serial; a child on another LP waits for its parent plus o_msg."""
    dag = _dag([(0, 0, 1.0, None), (1, 0, 1.0, None), (1, 10, 1.0, 0), (0, 12, 1.0, None)], 2, [(0, 1, 10), (1, 0, 10)])
    cost = dag.events["cost_s"].to_numpy()
    assert null_message_time(dag, [0, 1], cost) == pytest.approx(2.0)
    assert null_message_time(dag, [0, 1], cost, o_msg=0.5) == pytest.approx(2.5)
    assert null_message_time(dag, [0, 0], cost, o_msg=0.5) == pytest.approx(4.0)


@pytest.mark.parametrize("workload", ["phold", "multicore"])
def test_cli_bounds_works_on_every_workload(workload: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar bounds` on each workload's defaults (shortened) prints every bound."""
    small = {"phold": ["-p", "end_tick=500"], "multicore": ["-p", "requests_per_core=10"]}[workload]
    assert main(["bounds", "-w", workload, *small, "--workers-max", "4", "--overheads", "zero"]) == 0
    out = capsys.readouterr().out
    assert all(b in out for b in BOUNDS)


@pytest.mark.parametrize("workload,params", [("phold", {"end_tick": 2000, "granularity": 20}),
                                             ("multicore", {"cores": 4, "requests_per_core": 10})])  # fmt: skip
def test_tick_barrier_model_batches_as_the_strategy_does(workload: str, params: dict[str, int]) -> None:
    """The bound's parallel batches and groups are the ones the strategy runs (its own statistics)."""
    cell = resolve_cell(workload, params, "tick-barrier", {"executor": "inline"}, 2, 1)
    stats = execute(cell).stats
    dag = record_dag(cell.spec)
    batch, group, popped = tick_groups(dag)
    frame = pd.DataFrame({"b": batch, "g": group, "p": popped})
    per = frame.groupby("b").agg(groups=("g", "nunique"), popped=("p", "sum"))
    parallel = per[(per["groups"] > 1) & (per["popped"] >= 2)]
    assert len(parallel) == stats["parallel_batches"]
    assert int(parallel["groups"].sum()) == stats["groups"]
    cost = dag.events["cost_s"].to_numpy()
    assert tick_barrier_time(dag, cost, (2,), ZERO)[2][1] == stats["parallel_batches"]


def test_window_model_has_the_strategys_windows() -> None:
    """conservative sync=window on PHOLD: the bound's windows and lookahead are those the strategy ran."""
    cell = resolve_cell("phold", {"end_tick": 2000}, "conservative", {"sync": "window"}, 2, 1, "canonical")
    stats = execute(cell).stats
    dag = record_dag(cell.spec)
    _span, windows, lookahead = window_time(dag, balanced_partition(dag, 2), dag.events["cost_s"].to_numpy())
    assert (windows, lookahead) == (stats["windows"], stats["lookahead"])
