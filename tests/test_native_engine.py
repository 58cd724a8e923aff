"""The native engine (``native/``, module ``tickpar_native``) on DAGs built by hand.

Order semantics (gem5's LIFO bins, priorities, the canonical order), gem5's ``when >= curTick``
assert (on and off), each strategy's exactness against the native sequential replay, and the
prototype's failure.  Skipped where the extension is not built (``pip install ./native``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

tn = pytest.importorskip("tickpar_native", reason="the native engine is not built: pip install ./native")

S, R, RA, D = tn.SCHEDULE, tn.RESCHEDULE, tn.RESCHEDULE_ALWAYS, tn.DESCHEDULE
CLOCK, ABS = tn.CLOCK, tn.ABSOLUTE


@dataclass
class Builder:
    """A DAG by hand: objects, initial operations, and each object's occurrences in order."""

    ncomp: int
    objs: list[tuple[int, int, int, int]] = field(default_factory=list)  # (comp, name, prio, flags)
    init_ops: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # (kind, mode, target, value, src)
    occs: list[list[tuple[list[tuple[int, int, int, int, int]], float, list[tuple[int, int]]]]] = field(
        default_factory=list
    )

    def obj(self, comp: int, name: int | None = None, prio: int = 0, message: bool = False) -> int:
        self.objs.append((comp, len(self.objs) if name is None else name, prio, int(message)))
        self.occs.append([])
        return len(self.objs) - 1

    def init(self, kind: int, target: int, value: int, mode: int = ABS, source: int = -1) -> None:
        self.init_ops.append((kind, mode, target, value, source))

    def occ(
        self,
        obj: int,
        ops: list[tuple[int, int, int, int, int]] = (),  # type: ignore[assignment]
        work_us: float = 0.0,
        touches: list[tuple[int, int]] = (),  # type: ignore[assignment]
    ) -> None:
        self.occs[obj].append((list(ops), work_us, list(touches)))

    def build(self, end_tick: int | None = None, occ_seq: list[int] | None = None) -> tn.Dag:
        occ_off, ops_off, touch_off, work = [0], [len(self.init_ops)], [0], []
        ops = list(self.init_ops)
        tcomp: list[int] = []
        tname: list[int] = []
        for per_obj in self.occs:
            for o_ops, w, touches in per_obj:
                ops.extend(o_ops)
                ops_off.append(len(ops))
                tcomp.extend(c for c, _ in touches)
                tname.extend(n for _, n in touches)
                touch_off.append(len(tcomp))
                work.append(w)
            occ_off.append(len(work))
        return tn.make_dag(
            self.ncomp,
            [o[0] for o in self.objs],
            [o[1] for o in self.objs],
            [o[2] for o in self.objs],
            [o[3] for o in self.objs],
            occ_off,
            ops_off,
            touch_off,
            work,
            [o[0] for o in ops],
            [o[1] for o in ops],
            [o[2] for o in ops],
            [o[3] for o in ops],
            [o[4] for o in ops],
            tcomp,
            tname,
            end_tick,
            occ_seq or (),
        )


def order_of(builder: Builder, **kw: object) -> list[int]:
    """Names in service order, everything in component 0."""
    r = tn.run(builder.build(), trace=True, **kw)
    assert r.failure is None, r.failure
    return [name for _w, _p, name in r.trace(0)]


# -- gem5's order (docs/explanation/gem5-eventq.md §7) ---------------------------------------------
def test_same_key_is_lifo() -> None:
    b = Builder(1)
    for _ in range(3):
        b.init(S, b.obj(0), 100)
    assert order_of(b) == [2, 1, 0]


def test_priorities_then_tick() -> None:
    b = Builder(1)
    a, bb, c = b.obj(0, prio=0), b.obj(0, prio=-1), b.obj(0, prio=50)
    for o in (a, bb, c):
        b.init(S, o, 100)
    x, y = b.obj(0, prio=-128), b.obj(0, prio=127)
    b.init(S, x, 200)
    b.init(S, y, 199)
    assert order_of(b) == [bb, a, c, y, x]


def test_reschedule_to_same_key_goes_on_top() -> None:
    b = Builder(1)
    a, bb = b.obj(0), b.obj(0)
    b.init(S, a, 100)
    b.init(S, bb, 100)
    b.init(R, a, 100)
    assert order_of(b) == [a, bb]


def test_deschedule_and_reschedule_earlier() -> None:
    b = Builder(1)
    x, a, bb, y = b.obj(0), b.obj(0), b.obj(0), b.obj(0)
    b.init(S, x, 50)
    b.init(S, a, 500)
    b.init(S, bb, 300)
    b.init(S, y, 150)
    b.init(D, y, 0)
    b.init(R, a, 200)
    assert order_of(b) == [x, a, bb]


def test_zero_delay_child_runs_next() -> None:
    # X, Y pending at (100, 0), served X first; X schedules Z at (100, 0): X, Z, Y (case 24).
    b = Builder(1)
    x, y, z = b.obj(0), b.obj(0), b.obj(0)
    b.init(S, y, 100)
    b.init(S, x, 100)
    b.occ(x, [(S, CLOCK, z, 0, -1)])
    assert order_of(b) == [x, z, y]


def test_canonical_order_is_fifo_by_source_key() -> None:
    b = Builder(1)
    objs = [b.obj(0) for _ in range(3)]
    for o, seq in zip(objs, (3, 1, 2), strict=True):
        b.init(S, o, 100, source=(0 << 40) | seq)
    assert order_of(b, order="canonical") == [objs[1], objs[2], objs[0]]
    assert order_of(b, order="gem5") == [objs[2], objs[1], objs[0]]


def test_end_tick_runs_events_at_the_end_tick_and_stops() -> None:
    b = Builder(1)
    a, bb = b.obj(0, prio=99), b.obj(0)
    b.init(S, a, 100)
    b.init(S, bb, 101)
    r = tn.run(b.build(end_tick=100), trace=True)
    assert [n for _w, _p, n in r.trace(0)] == [a]
    assert r.cur_tick == 100 and r.final_tick == 100 and r.events == 1


def test_clock_and_stored_ticks_and_occurrences() -> None:
    # A ticks at clock + 10 three times; its second occurrence also schedules B at a stored tick.
    b = Builder(2)
    a, bb = b.obj(0), b.obj(1)
    b.init(S, a, 5)
    b.occ(a, [(S, CLOCK, a, 10, -1)])
    b.occ(a, [(S, CLOCK, a, 10, -1), (S, ABS, bb, 17, -1)])
    b.occ(a, [])
    r = tn.run(b.build(), trace=True)
    assert [w for w, _p, _n in r.trace(0)] == [5, 15, 25]
    assert r.trace(1) == [(17, 0, bb)]
    assert r.events == 4 and r.final_tick == 25


def test_direct_calls_are_recorded_in_the_peer() -> None:
    b = Builder(2)
    a = b.obj(0)
    b.init(S, a, 7)
    b.occ(a, [], touches=[(1, 99)])
    r = tn.run(b.build(), trace=True)
    assert r.trace(1) == [(7, tn.CALL_PRIORITY, 99)]
    assert r.counts.tolist() == [1, 0]  # a direct call is in the peer's digest and trace, never an event


def test_digest_matches_the_trace() -> None:
    import numpy as np

    b = Builder(1)
    for i in range(5):
        b.init(S, b.obj(0, prio=i - 2), 10 * i)
    r = tn.run(b.build(), trace=True)
    assert int(r.digests[0]) == tn.digest_trace(
        np.ascontiguousarray(r.trace_when), np.ascontiguousarray(r.trace_prio), np.ascontiguousarray(r.trace_name)
    )


# -- gem5's assert ---------------------------------------------------------------------------------
def _past_dag() -> tn.Dag:
    b = Builder(1)
    a, bb = b.obj(0), b.obj(0)
    b.init(S, a, 100)
    b.occ(a, [(S, ABS, bb, 99, -1)])
    return b.build()


def test_schedule_in_the_past_fails_the_assert() -> None:
    r = tn.run(_past_dag())
    assert r.failure is not None
    assert (r.failure["kind"], r.failure["op"], r.failure["when"], r.failure["cur_tick"], r.failure["reason"]) == (
        "causality", "schedule", 99, 100, "past",
    )  # fmt: skip


def test_checks_off_counts_the_violation_and_goes_on() -> None:
    r = tn.run(_past_dag(), checks=False, trace=True)
    assert r.failure is None
    assert r.violations_total == 1 and r.violations[0]["reason"] == "past"
    assert [w for w, _p, _n in r.trace(0)] == [100, 99]  # cur_tick goes backwards, as gem5 with NDEBUG


def test_reschedule_and_deschedule_asserts() -> None:
    b = Builder(1)
    a = b.obj(0)
    b.init(R, a, 10)
    assert tn.run(b.build()).failure["reason"] == "not-scheduled"
    b = Builder(1)
    a = b.obj(0)
    b.init(S, a, 10)
    b.init(S, a, 20)
    assert tn.run(b.build()).failure["reason"] == "already-scheduled"
    r = tn.run(b.build(), checks=False, trace=True)
    assert [w for w, _p, _n in r.trace(0)] == [10, 20]  # a double schedule runs twice
    b = Builder(1)
    a = b.obj(0)
    b.init(D, a, 0)
    assert tn.run(b.build(), checks=False).failure["kind"] == "crash"  # gem5's panic: event not found!


# -- strategies against the sequential replay -----------------------------------------------------
def synthetic(
    ncomp: int = 8,
    population: int = 4,
    hops: int = 40,
    lookahead: int = 100,
    granularity: int = 1,
    p_self: float = 0.3,
    work_us: float = 0.0,
    seed: int = 1,
    end_tick: int | None = None,
) -> Builder:
    """A PHOLD-like DAG: message chains hopping between components.

    A hop to another component is ``lookahead + Exp`` ticks ahead, from the clock; a hop to the same
    component is 1-3 ticks ahead at a *stored* tick (rounded up to ``granularity``).  Priorities 0 and
    -1; every operation has a unique canonical source key.
    """
    rng = random.Random(seed)
    b = Builder(ncomp)
    seq = [0] * ncomp
    g = granularity

    def up(t: int) -> int:
        return -(-t // g) * g

    for c in range(ncomp):
        for _ in range(population):
            comp, tick = c, up(rng.randrange(lookahead))
            first = b.obj(comp, name=comp, prio=rng.choice((0, -1)), message=True)
            seq[c] += 1
            b.init(S, first, tick, ABS, (c << 40) | seq[c])
            cur = first
            for _h in range(hops):
                if rng.random() < p_self:
                    dst, nxt, mode = comp, up(tick + rng.randint(1, 3)), ABS
                else:
                    dst = rng.randrange(ncomp)
                    nxt, mode = up(tick + lookahead + int(rng.expovariate(1 / 50))), CLOCK
                obj = b.obj(dst, name=dst, prio=rng.choice((0, -1)), message=True)
                seq[comp] += 1
                value = nxt if mode == ABS else nxt - tick
                b.occ(cur, [(S, mode, obj, value, (comp << 40) | seq[comp])], work_us=work_us)
                cur, comp, tick = obj, dst, nxt
            b.occ(cur, [], work_us=work_us)
    return b


def traces(r: tn.Replay, ncomp: int) -> list[list[tuple[int, int, int]]]:
    return [r.trace(c) for c in range(ncomp)]


@pytest.mark.parametrize("order", ["gem5", "canonical"])
@pytest.mark.parametrize("granularity", [1, 50])
def test_tick_barrier_is_exact(order: str, granularity: int) -> None:
    b = synthetic(granularity=granularity, seed=granularity)
    dag = b.build()
    golden = tn.run(dag, order=order, trace=True)
    assert golden.failure is None and golden.events > 1000
    for workers in (1, 2, 3):
        r = tn.run(dag, "tick-barrier", workers, order=order, trace=True, lock_key="component")
        assert r.failure is None and not r.races
        assert traces(r, b.ncomp) == traces(golden, b.ncomp)
        if workers > 1 and granularity > 1:
            assert r.stats["parallel_batches"] > 0


def test_tick_barrier_runs_zero_delay_children_in_their_group() -> None:
    # A bin of two components' events; each schedules a child at the same key: gem5 runs it next.
    b = Builder(2)
    objs = [b.obj(c) for c in (0, 1, 0, 1)]
    kids = [b.obj(c) for c in (0, 1, 0, 1)]
    for o in objs:
        b.init(S, o, 10)
    for o, k in zip(objs, kids, strict=True):
        b.occ(o, [(S, CLOCK, k, 0, -1)])
    dag = b.build()
    golden = tn.run(dag, trace=True)
    r = tn.run(dag, "tick-barrier", 2, trace=True, lock_key="component")
    assert traces(r, 2) == traces(golden, 2)
    assert r.stats["local_children"] == 4


def test_tick_barrier_by_name_reports_a_race() -> None:
    b = Builder(1)
    x, y = b.obj(0, name=1), b.obj(0, name=2)
    b.init(S, x, 10)
    b.init(S, y, 10)
    r = tn.run(b.build(), "tick-barrier", 2, lock_key="name")
    assert r.races_total >= 1


@pytest.mark.parametrize("strategy", ["conservative", "quantum"])
def test_partitioned_strategies_are_exact_in_canonical_order(strategy: str) -> None:
    b = synthetic(seed=3, end_tick=3000)
    dag = b.build(end_tick=3000)
    golden = tn.run(dag, order="canonical", trace=True)
    assert golden.failure is None
    for workers in (1, 2, 4):
        lp_of = [c % workers for c in range(b.ncomp)]
        kw = {"lookahead": 100} if strategy == "conservative" else {"quantum": 100}
        r = tn.run(dag, strategy, workers, order="canonical", trace=True, lp_of=lp_of, **kw)
        assert r.failure is None, r.failure
        assert traces(r, b.ncomp) == traces(golden, b.ncomp)
        assert r.cur_tick <= 3000


# method="thread": a replay stuck in native code ignores the signal method; the thread method ends the process.
@pytest.mark.timeout(60, method="thread")
@pytest.mark.parametrize("strategy", ["tick-barrier", "conservative"])
def test_more_workers_than_cores_sleep_at_the_barriers_and_stay_exact(strategy: str) -> None:
    """With more threads than cores both stay exact and finish.  Conservative's window barrier falls asleep
    (spin, yield, then futex) and every sleeper must be woken: a lost wake-up would hang it past the timeout.
    Events of 300 us keep the waits far longer than the spinning and yielding, so its threads do sleep.
    Tick-barrier's helpers spin and yield only; it runs here for exactness with the cores oversubscribed."""
    import os

    workers = 2 * len(os.sched_getaffinity(0)) + 1
    order = "gem5" if strategy == "tick-barrier" else "canonical"
    b = synthetic(population=2, hops=8, granularity=50, seed=5, end_tick=3000, work_us=300.0)
    dag = b.build(end_tick=3000)
    golden = tn.run(dag, order=order, trace=True)
    assert golden.failure is None and golden.events > 50
    if strategy == "tick-barrier":
        kw: dict[str, object] = {"lock_key": "component"}
    else:
        kw = {"lookahead": 100, "lp_of": [c % workers for c in range(b.ncomp)]}
    for _ in range(3):
        r = tn.run(dag, strategy, workers, order=order, trace=True, **kw)
        assert r.failure is None and not r.races, r.failure
        assert traces(r, b.ncomp) == traces(golden, b.ncomp)


def test_conservative_refuses_a_message_below_the_lookahead() -> None:
    b = synthetic(seed=4)
    r = tn.run(b.build(), "conservative", 2, order="canonical", lp_of=[c % 2 for c in range(b.ncomp)], lookahead=500)
    assert r.failure is not None and r.failure["kind"] == "causality" and r.failure["reason"] == "lookahead"


def test_quantum_beyond_the_lookahead_clamps_late_events() -> None:
    b = synthetic(seed=5, p_self=0.0)  # clock-relative ticks only: a stored one behind a clamped clock fails the assert
    dag = b.build()
    golden = tn.run(dag, order="canonical", trace=True)
    lp_of = [c % 2 for c in range(b.ncomp)]
    r = tn.run(dag, "quantum", 2, order="canonical", trace=True, lp_of=lp_of, quantum=1000)
    assert r.failure is None and r.stats["late_events"] > 0
    assert traces(r, b.ncomp) != traces(golden, b.ncomp)
    r = tn.run(dag, "quantum", 2, order="canonical", lp_of=lp_of, quantum=1000, late="error")
    assert r.failure is not None and r.failure["kind"] == "causality"


def test_split_with_one_worker_is_exact() -> None:
    b = synthetic(seed=6)
    dag = b.build()
    golden = tn.run(dag, trace=True)
    r = tn.run(dag, "split", 1, trace=True)
    assert r.failure is None and traces(r, b.ncomp) == traces(golden, b.ncomp)


def test_split_with_two_workers_fails() -> None:
    # Stored ticks a few ticks ahead, and work that keeps handlers running while the other worker pops.
    b = synthetic(ncomp=4, population=16, hops=60, p_self=0.5, work_us=5.0, seed=7)
    dag = b.build()
    golden = tn.run(dag, trace=True)
    failed = 0
    for _ in range(3):
        r = tn.run(dag, "split", 2, trace=True, lock_key="name")
        if r.failure is not None or r.races or traces(r, b.ncomp) != traces(golden, b.ncomp):
            failed += 1
        if r.failure is not None:
            assert r.failure["kind"] == "causality" and r.failure["when"] < r.failure["cur_tick"]
    assert failed >= 2


def test_work_spin_is_calibrated() -> None:
    # How long a spin takes is the benchmark's business (tickpar calibrate reports its accuracy): no
    # wall-clock bound here, the machines are shared.  The rate exists and a spin returns.
    assert tn.spin_rate() > 0
    tn.spin(0.0)
    tn.spin(10.0)


def test_calibrate_reports_the_contract_keys() -> None:
    got = tn.calibrate(0.05)
    for key in ("mutex_ns", "barrier_ns", "message_ns", "event_ns", "pingpong_ns", "heap_ns", "heap_ns_pending64"):
        assert got[key] > 0


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        tn.make_dag(1, [0], [0], [0], [0], [0, 1], [0], [0], [], [], [], [], [], [])  # one occurrence, none given
    with pytest.raises(ValueError):
        tn.run(Builder(1).build(), "optimistic")


@pytest.mark.parametrize("strategy", ["split", "tick-barrier", "conservative", "quantum"])
def test_threads_are_pinned_for_the_run_and_the_callers_mask_comes_back(strategy: str) -> None:
    # Pinning each thread to its own core (where there are enough) keeps a replay that follows an idle
    # spell from sharing its parent's core; the caller's own CPU set must be unchanged afterwards.
    import os

    b = synthetic(seed=5, end_tick=3000)
    dag = b.build(end_tick=3000)
    mask = os.sched_getaffinity(0)
    kw: dict = {"lp_of": [c % 2 for c in range(b.ncomp)], "order": "canonical"}
    if strategy == "conservative":
        kw["lookahead"] = 100
    elif strategy == "quantum":
        kw["quantum"] = 100
    else:
        kw = {"lock_key": "component", "checks": False}
    r = tn.run(dag, strategy, 2, **kw)
    assert os.sched_getaffinity(0) == mask
    assert r.stats["pinned"] == (1.0 if len(mask) >= 2 else 0.0)
    assert r.stats["spawn_s"] > 0 and r.stats["loop_s"] > 0


# -- the engine at gem5's costs (issue #38): replays, the kept threads, the hand-off threshold, the layout --


def test_replays_repeat_the_run_on_the_same_result() -> None:
    b = synthetic(seed=8, granularity=50)
    dag = b.build()
    once = tn.run(dag, "tick-barrier", 2, lock_key="component")
    again = tn.run(dag, "tick-barrier", 2, lock_key="component", replays=4)
    assert again.failure is None and not again.races
    assert again.stats["replays"] == 4 and "replays" not in once.stats
    assert list(again.digests) == list(once.digests) and list(again.counts) == list(once.counts)
    assert again.stats["loop_s"] > 0


def test_a_failed_run_is_not_replayed() -> None:
    b = synthetic(seed=4)
    r = tn.run(b.build(), "conservative", 2, order="canonical", lp_of=[c % 2 for c in range(b.ncomp)],
               lookahead=500, replays=5)  # fmt: skip
    assert r.failure is not None and r.failure["reason"] == "lookahead"
    assert r.stats["replays"] == 1


def test_replays_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^replays=0 is not allowed: it must be >= 1$"):
        tn.run(Builder(1).build(), replays=0)


def test_a_replay_keeps_the_threads_of_the_last_one() -> None:
    # Creating threads costs 100+ us: the second replay with as many threads borrows the first one's.
    b = synthetic(seed=9, granularity=50)
    dag = b.build()
    tn.run(dag, "tick-barrier", 2, lock_key="component")
    r = tn.run(dag, "tick-barrier", 2, lock_key="component")
    assert r.stats["threads_created"] == 0


@pytest.mark.timeout(60, method="thread")
def test_a_forked_child_starts_threads_of_its_own() -> None:
    # The parent's kept threads do not exist in a forked child: it must start its own, not wait for them.
    import multiprocessing

    b = synthetic(seed=9, granularity=50)
    tn.run(b.build(), "tick-barrier", 2, lock_key="component")  # the parent now keeps a thread
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        created = pool.apply(_child_replay, ())
    assert created == 1


def _child_replay() -> float:
    b = synthetic(seed=9, granularity=50)
    r = tn.run(b.build(), "tick-barrier", 2, lock_key="component")
    assert r.failure is None
    return float(r.stats["threads_created"])


def test_tick_barrier_keeps_bins_too_small_to_pay_serial_and_stays_exact() -> None:
    b = synthetic(granularity=50, seed=10, work_us=0.05)
    dag = b.build()
    golden = tn.run(dag, trace=True)
    every = tn.run(dag, "tick-barrier", 2, lock_key="component", trace=True)
    none = tn.run(dag, "tick-barrier", 2, lock_key="component", trace=True, min_batch_ns=1e9)
    some = tn.run(dag, "tick-barrier", 2, lock_key="component", trace=True, min_batch_ns=0, batch_event_ns=60.0)
    for r in (every, none, some):
        assert r.failure is None and not r.races
        assert traces(r, b.ncomp) == traces(golden, b.ncomp)
    assert every.stats["parallel_batches"] > 0 and every.stats["small_batches"] == 0
    assert none.stats["parallel_batches"] == 0 and none.stats["small_batches"] > 0
    # 0.05 us of work per member saves 25 ns of it on the other thread: less than 60 ns per member.
    assert some.stats["parallel_batches"] == 0


def test_tick_barrier_threshold_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match=r"^min_batch_ns=-1\.0+ is not allowed"):
        tn.run(Builder(1).build(), "tick-barrier", 2, min_batch_ns=-1.0)


@pytest.mark.parametrize("strategy", ["sequential", "tick-barrier", "conservative", "split"])
def test_the_dag_in_run_order_replays_the_same(strategy: str) -> None:
    # occ_seq only lays the DAG out (any order of the occurrences must replay the same events).
    b = synthetic(seed=11, granularity=50, end_tick=3000)
    n = sum(len(per_obj) for per_obj in b.occs)
    shuffled = list(range(n))
    random.Random(3).shuffle(shuffled)
    order = "canonical" if strategy == "conservative" else "gem5"
    kw: dict[str, object] = {"order": order, "trace": True}
    if strategy == "conservative":
        kw.update(lookahead=100, lp_of=[c % 2 for c in range(b.ncomp)])
    elif strategy == "tick-barrier":
        kw["lock_key"] = "component"
    workers = 1 if strategy == "split" else 2
    plain = tn.run(b.build(end_tick=3000), strategy, workers, **kw)
    laid = tn.run(b.build(end_tick=3000, occ_seq=shuffled), strategy, workers, **kw)
    assert plain.failure is None and laid.failure is None
    assert traces(laid, b.ncomp) == traces(plain, b.ncomp) and laid.events == plain.events


def test_occ_seq_needs_one_entry_per_occurrence() -> None:
    b = synthetic(seed=12)
    with pytest.raises(ValueError, match=r"^occ_seq has 2 entries for \d+ occurrences"):
        b.build(occ_seq=[0, 1])
