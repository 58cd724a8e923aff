"""The ``conservative`` strategy: exact under canonical order on every sync x backend, and the ways it must fail.

Runs are small (a few thousand events).  Process runs fork two workers; MPI
runs start ``mpiexec -n 2`` (skipped when the environment has no mpiexec);
nothing here uses more than two workers at once.
"""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from tickpar.kernel.params import ParamError
from tickpar.pdes.errors import PromiseError, error_to_exception
from tickpar.pdes.lp import LogicalProcess
from tickpar.pdes.packets import CLOSE, DATA, READY
from tickpar.pdes.plan import make_plan
from tickpar.pdes.sync import sync_policy
from tickpar.pdes.transport import ThreadTransport
from tickpar.plugins import LookaheadError, RunSpec
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, execute, resolve_cell

PHOLD = {"lps": 8, "population": 3, "end_tick": 4000}
HAS_MPI = False
try:  # the strategy's own rule: the mpiexec next to this interpreter, and mpi4py
    import mpi4py  # noqa: F401

    HAS_MPI = (Path(__import__("sys").executable).parent / "mpiexec").exists()
except ImportError:
    pass
needs_mpi = pytest.mark.skipif(
    not HAS_MPI, reason="no mpiexec next to sys.executable or no mpi4py (pip install mpich mpi4py)"
)


def _strategy_module() -> Any:
    import sys

    return sys.modules[get_registry().strategy("conservative").__module__]


def _check(workload: str, params: dict[str, Any], workers: int, order: str = "canonical", **options: Any) -> Any:
    cell = resolve_cell(workload, params, "conservative", options, workers, seed=2, order=order)
    return check_cell(cell)


# A tiny workload for the failure paths and for quiescence without an end tick:
# tokens hop around a ring of nodes and stop after `hops` hops (the queue drains).
RING_PLUGIN = '''
from tickpar.kernel.model import Component
from tickpar.kernel.params import Param
from tickpar.plugins import Workload


class Node(Component):
    def __init__(self, model, name, index, params):
        super().__init__(model, name)
        self.index = index
        self.hops = params["hops"]
        self.fail_at = params["fail_at"]
        self.use_fast = params["zero_link"]
        self.use_call = params["direct"]
        self.out = None
        self.fast = None
        self.peer = None
        self.seen = 0
        self.poked = 0

    def init(self):
        if self.index % 2 == 0:
            self.send(self.out, 0)

    def on_msg(self, n):
        self.seen += 1
        if self.fail_at and self.cur_tick >= self.fail_at:
            raise ValueError("node failed on purpose")
        if self.use_call:
            self.call(self.peer, "poke", n)
        if n < self.hops:
            if self.use_fast and n == self.hops // 2:
                self.send(self.fast, n + 1)
            else:
                self.send(self.out, n + 1, self.rng.randrange(3))

    def poke(self, n):
        self.poked += n

    def state(self):
        return (self.seen, self.poked)


class Ring(Workload):
    name = "test_ring"
    summary = "tokens around a ring that stop after a number of hops (tests only)"
    params = {
        "nodes": Param(int, 6, "ring nodes", min=2, max=64),
        "hops": Param(int, 40, "hops per token", min=1, max=10**6),
        "latency": Param(int, 5, "ring link latency", min=1, max=1000),
        "zero_link": Param(bool, False, "also a zero-latency link to the next node, used once per token"),
        "direct": Param(bool, False, "a direct call into the next node on every message"),
        "fail_at": Param(int, 0, "raise in a handler from this tick on (0: never)", min=0),
        "end_tick": Param(int, None, "end tick (none: run until the queue drains)", min=1, nullable=True),
    }

    def build(self, model, params):
        nodes = [Node(model, f"ring.node{i}", i, params) for i in range(params["nodes"])]
        for i, node in enumerate(nodes):
            nxt = nodes[(i + 1) % len(nodes)]
            node.out = model.link(node, nxt, "on_msg", params["latency"])
            node.peer = nxt
            if params["zero_link"]:
                node.fast = model.link(node, nxt, "on_msg", 0, event_name=f"{nxt.name}.fastEvent")
            if params["direct"]:
                model.connect_direct(node, nxt)
        model.end_tick = params["end_tick"]
'''


@pytest.fixture
def ring(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Register the ``test_ring`` workload (also for spawned processes and MPI ranks, via TICKPAR_PLUGINS)."""
    path = tmp_path / "ring_plugin.py"
    path.write_text(textwrap.dedent(RING_PLUGIN))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    return "test_ring"


# -- exactness ------------------------------------------------------------------------------------
@pytest.mark.parametrize("sync", ["window", "null-message"])
@pytest.mark.parametrize("workers", [1, 2])
def test_threads_exact_on_phold(sync: str, workers: int) -> None:
    """Threads backend, both syncs, 1 and 2 workers: digests equal the sequential run's (canonical order)."""
    verdict, outcome = _check("phold", PHOLD, workers, sync=sync)
    assert verdict.kind == "exact", verdict.reason
    stats = outcome.stats
    assert stats["lps"] == workers and stats["backend"] == "threads" and stats["sync"] == sync
    assert sum(stats["partition_sizes"]) == PHOLD["lps"]
    assert stats["served"] == outcome.record.events
    assert len(stats["idle_s"]) == workers
    assert "lock_waits" not in stats  # LPs take no locks: a constant is no statistic
    assert 0 < stats["loop_s"] <= outcome.wall_s
    if workers == 2:
        assert stats["lookahead"] == 10
        assert stats["messages"] > 0 and stats["cut_edges"] > 0
        assert (stats["null_messages"] > 0) == (sync == "null-message")
        assert stats["batches"] > 10


@pytest.mark.parametrize("sync", ["window", "null-message"])
def test_processes_exact_on_phold(sync: str) -> None:
    """Processes backend (fork), 2 workers, both syncs: exact, and the same digest as the threads backend."""
    verdict, outcome = _check("phold", PHOLD, 2, sync=sync, backend="processes")
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["start_method"] == "fork"
    # Measured inside the workers, after the start barrier: less than the run with its forks and builds.
    assert 0 < outcome.stats["loop_s"] < outcome.wall_s
    threads = execute(resolve_cell("phold", PHOLD, "conservative", {"sync": sync}, 2, seed=2, order="canonical"))
    assert threads.record.digest == outcome.record.digest


def test_processes_one_worker_and_spawn() -> None:
    """One worker process is exact; so is the spawn start method (each process imports and builds afresh)."""
    small = {"lps": 4, "population": 2, "end_tick": 1500}
    verdict, _ = _check("phold", small, 1, backend="processes")
    assert verdict.kind == "exact", verdict.reason
    verdict, outcome = _check("phold", small, 2, backend="processes", start_method="spawn", sync="null-message")
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["start_method"] == "spawn"


@needs_mpi
@pytest.mark.parametrize("sync", ["window", "null-message"])
def test_mpi_exact_on_phold(sync: str) -> None:
    """MPI backend (mpiexec -n 2), both syncs: exact."""
    verdict, outcome = _check("phold", PHOLD, 2, sync=sync, backend="mpi")
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["mpiexec"].endswith("mpiexec")
    assert outcome.stats["messages"] > 0
    assert 0 < outcome.stats["loop_s"] < outcome.wall_s  # measured inside the ranks, after the start barrier


@needs_mpi
def test_mpi_one_rank() -> None:
    """A single rank runs the whole model: exact."""
    verdict, _ = _check("phold", {"lps": 4, "population": 2, "end_tick": 1500}, 1, backend="mpi")
    assert verdict.kind == "exact", verdict.reason


MULTICORE = {"cores": 2, "requests_per_core": 150, "l2_banks": 2, "mem_ctrls": 1}


@pytest.mark.parametrize(
    ("sync", "backend", "direct"),
    [("window", "threads", False), ("null-message", "threads", True), ("null-message", "processes", False)],
)
def test_exact_on_multicore(sync: str, backend: str, direct: bool) -> None:
    """The gem5-like memory system (no end tick: runs until it drains), with and without direct calls: exact."""
    if "multicore" not in get_registry().workloads:
        pytest.skip("workloads/multicore/ is not present")
    params = {**MULTICORE, "direct_calls": direct}
    verdict, outcome = _check("multicore", params, 2, sync=sync, backend=backend)
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["zero_latency_cut"] == 0


@pytest.mark.parametrize(("sync", "backend"), [("window", "threads"), ("null-message", "threads"),
                                               ("null-message", "processes")])
def test_quiescence_without_end_tick(ring: str, sync: str, backend: str) -> None:
    """Tokens that stop: the run ends when every queue is empty and nothing is in flight (Safra's token)."""
    verdict, outcome = _check(ring, {"nodes": 6, "hops": 30}, 2, sync=sync, backend=backend)
    assert verdict.kind == "exact", verdict.reason
    assert outcome.record.events == 3 * 31


def test_auto_partition_keeps_zero_latency_links_inside_an_lp(ring: str) -> None:
    """With zero-latency links around the whole ring, auto puts every node in one LP: exact, nothing cut."""
    verdict, outcome = _check(ring, {"nodes": 6, "hops": 20, "zero_link": True}, 2)
    assert verdict.kind == "exact", verdict.reason
    assert sorted(outcome.stats["partition_sizes"]) == [0, 6]
    assert outcome.stats["lookahead"] is None


# -- gem5 order ------------------------------------------------------------------------------------
GEM5_PHOLD = {"lps": 8, "population": 6, "granularity": 50, "end_tick": 6000}


def test_gem5_order_counts_cross_lp_tie_reorders() -> None:
    """Many-event ticks under gem5 order: 2 LPs see cross-LP ties and reorder some; 1 LP sees none."""
    cell = resolve_cell("phold", GEM5_PHOLD, "conservative", {}, 2, seed=2, order="gem5")
    assert get_registry().strategy("conservative")().expected_verdict(cell.spec, 2, cell.options) is None
    verdict, outcome = check_cell(cell)
    stats = outcome.stats
    assert stats["gem5_cross_lp_ties"] > 0
    assert 0 < stats["gem5_tie_reorders"] <= stats["gem5_cross_lp_ties"]
    # Reordered ties of PHOLD messages change hop counts: the oracle sees it.
    assert verdict.kind == "diverged"
    verdict1, outcome1 = _check("phold", GEM5_PHOLD, 1, order="gem5")
    assert verdict1.kind == "exact"
    assert outcome1.stats["gem5_cross_lp_ties"] == 0 and outcome1.stats["gem5_tie_reorders"] == 0
    canonical = _check("phold", GEM5_PHOLD, 2)[1].stats
    assert "gem5_tie_reorders" not in canonical


def test_gem5_stamps_reproduce_the_single_queue_order() -> None:
    """Self-check of the insertion stamps: on one LP (the single-queue run) every same-bin pair agrees with LIFO."""
    spec = RunSpec("phold", {**get_defaults("phold"), **GEM5_PHOLD}, 2, order="gem5")
    model = spec.build_model()
    plan, _part = make_plan(model, 1, method="auto", order="gem5", sync="window", stall_s=30.0)
    lp = LogicalProcess(plan, 0, model, ThreadTransport.group(1)[0], sync_policy(plan))
    lp.attach()
    lp.check_stamps = True
    model.start()
    result = lp.run()
    assert result.error is None
    assert lp.same_origin_ties > 100
    assert lp.stamp_disagreements == 0
    assert lp.cross_ties == 0


def test_gem5_window_order_is_deterministic_across_backends() -> None:
    """Under gem5 order the window sync merges messages in LP order: threads and processes agree exactly."""
    a = execute(resolve_cell("phold", GEM5_PHOLD, "conservative", {}, 2, seed=2, order="gem5"))
    b = execute(
        resolve_cell("phold", GEM5_PHOLD, "conservative", {"backend": "processes"}, 2, seed=2, order="gem5")
    )
    assert a.record.failure is None and b.record.failure is None
    assert a.record.digest == b.record.digest
    assert a.stats["gem5_tie_reorders"] == b.stats["gem5_tie_reorders"]


def get_defaults(workload: str) -> dict[str, Any]:
    return {k: p.default for k, p in get_registry().workload(workload).params.items()}


# -- failures -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("sync", "backend"), [("window", "threads"), ("null-message", "threads"),
                                               ("window", "processes")])
def test_zero_latency_link_across_lps_is_a_lookahead_violation(ring: str, sync: str, backend: str) -> None:
    """roundrobin splits a zero-latency link: the first message on it is verdict causality, 'lookahead violation'."""
    cell = resolve_cell(
        ring, {"nodes": 6, "hops": 20, "zero_link": True}, "conservative",
        {"partition": "roundrobin", "sync": sync, "backend": backend}, 2, seed=1, order="canonical",
    )
    assert get_registry().strategy("conservative")().expected_verdict(cell.spec, 2, cell.options) is None
    verdict, _ = check_cell(cell)
    assert verdict.kind == "causality"
    assert "lookahead violation" in verdict.reason


def test_lookahead_option_larger_than_a_link_is_checked() -> None:
    """A window larger than the true lookahead (gem5's sim_quantum set too large) is caught, not silently wrong."""
    with pytest.raises(LookaheadError, match="less than the lookahead 25"):
        execute_strategy("phold", PHOLD, 2, lookahead=25)
    # A smaller window than the lookahead is just slower.
    verdict, outcome = _check("phold", PHOLD, 2, lookahead=4)
    assert verdict.kind == "exact"
    assert outcome.stats["lookahead"] == 4


def execute_strategy(workload: str, params: dict[str, Any], workers: int, **options: Any) -> Any:
    cell = resolve_cell(workload, params, "conservative", options, workers, seed=2, order="canonical")
    return get_registry().strategy("conservative")().run(cell.spec, workers, cell.options)


def test_direct_call_across_lps_is_rejected_before_running(ring: str) -> None:
    """A direct call cannot cross LPs: roundrobin on a ring with calls raises LookaheadError up front."""
    params = {"nodes": 4, "hops": 10, "direct": True}
    cell = resolve_cell(ring, params, "conservative", {"partition": "roundrobin"}, 2, seed=1, order="canonical")
    assert get_registry().strategy("conservative")().expected_verdict(cell.spec, 2, cell.options) == "causality"
    with pytest.raises(LookaheadError, match=r"direct call ring\.node0 -> ring\.node1 crosses LPs"):
        execute_strategy(ring, params, 2, partition="roundrobin")
    # auto keeps callers with callees: exact.
    verdict, _ = _check(ring, params, 2)
    assert verdict.kind == "exact"


@pytest.mark.parametrize(("sync", "backend"), [("window", "threads"), ("null-message", "threads"),
                                               ("null-message", "processes")])
def test_handler_crash_stops_every_lp(ring: str, sync: str, backend: str) -> None:
    """A handler that raises in one LP ends the run as a crash naming it, and no LP is left waiting."""
    outcome = execute(
        resolve_cell(ring, {"nodes": 6, "hops": 200, "fail_at": 300}, "conservative",
                     {"sync": sync, "backend": backend, "stall_s": 20.0}, 2, seed=1, order="canonical")
    )
    assert outcome.record.failure is not None
    assert outcome.record.failure["kind"] == "crash"
    assert "node failed on purpose" in outcome.record.failure["message"]
    assert threading.active_count() == 1


def test_bad_options_are_one_line_errors() -> None:
    """Unknown sync/backend/partition, lookahead 0, and too many MPI ranks: one-line ParamError each."""
    bad = [
        ({"sync": "optimistic"}, 2),
        ({"backend": "gpu"}, 2),
        ({"partition": "metis"}, 2),
        ({"lookahead": 0}, 2),
        ({"start_method": "forkserver"}, 2),
        ({"stall_s": -1}, 2),
        ({"nope": 1}, 2),
    ]
    for options, workers in bad:
        with pytest.raises(ParamError) as err:
            resolve_cell("phold", PHOLD, "conservative", options, workers, seed=1)
        assert "\n" not in str(err.value)
    if HAS_MPI:
        import os

        too_many = len(os.sched_getaffinity(0)) + 1
        with pytest.raises(ParamError, match=r"^workers=\d+ is not allowed for backend=mpi .*oversubscribe=true"):
            resolve_cell("phold", PHOLD, "conservative", {"backend": "mpi"}, too_many, seed=1)
        # Explicitly allowed: validates (not run here: it would oversubscribe the machine).
        resolve_cell("phold", PHOLD, "conservative", {"backend": "mpi", "oversubscribe": True}, too_many, seed=1)


def test_expected_verdicts() -> None:
    """exact under canonical (auto partition), nothing promised under gem5 order."""
    strategy = get_registry().strategy("conservative")()
    canonical = resolve_cell("phold", PHOLD, "conservative", {}, 2, seed=1, order="canonical")
    gem5 = resolve_cell("phold", PHOLD, "conservative", {}, 2, seed=1, order="gem5")
    assert strategy.expected_verdict(canonical.spec, 2, canonical.options) == "exact"
    assert strategy.expected_verdict(gem5.spec, 2, gem5.options) is None
    rr = resolve_cell("phold", PHOLD, "conservative", {"partition": "roundrobin"}, 2, seed=1, order="canonical")
    assert strategy.expected_verdict(rr.spec, 2, rr.options) == "exact"


# -- broken promises (null-message sync) -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("second", "reason"),
    [("message", "message for tick 10 from LP 1 below its promise 50"), ("promise", "promise from LP 1 went back")],
)
def test_broken_promise_is_causality(second: str, reason: str) -> None:
    """A peer that sends below what it promised, or promises less than before: PromiseError in the receiver,
    reported as a lookahead error (verdict causality), and the LP still closes its channels."""
    spec = RunSpec("phold", {**get_defaults("phold"), **PHOLD}, 2, order="canonical")
    model = spec.build_model()
    plan, _part = make_plan(model, 2, method="auto", order="canonical", sync="null-message", stall_s=10.0)
    link = next(k for k in model.links if plan.lp_of[k.src.id] == 1 and plan.lp_of[k.dst.id] == 0)
    transports = ThreadTransport.group(2)
    lp = LogicalProcess(plan, 0, model, transports[0], sync_policy(plan))
    lp.attach()
    # What LP 1 "sent": ready, a promise of 50, then the broken packet, then its close.
    broken = (DATA, [(link.id, 10, 0, link.src.id)], 60) if second == "message" else (DATA, [], 40)
    for packet in [(READY,), (DATA, [], 50), broken, (CLOSE,)]:
        transports[1].send(0, packet)
    result = lp.run()
    assert result.error is not None and result.error["kind"] == "lookahead"
    assert reason in result.error["message"]
    assert isinstance(error_to_exception(result.error), LookaheadError)
    assert isinstance(lp.exception, PromiseError)


def test_null_message_serves_one_lookahead_step_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each serve covers at most one lookahead beyond the LP's head, and a promise follows it: a
    # serve up to the whole safe horizon lets two LPs fall into lock-step (nullmsg.py says why).
    calls: list[tuple[float, float]] = []
    original = LogicalProcess.serve

    def serve(self: LogicalProcess, limit: float, head: float | None = None) -> bool:
        key = self.queue.next_key()
        if key is not None:
            calls.append((key[0] + self.lookahead, limit))
        return original(self, limit, head)

    monkeypatch.setattr(LogicalProcess, "serve", serve)
    verdict, _ = _check("phold", {**PHOLD, "lookahead": 10, "mean": 30}, 2, sync="null-message", backend="threads")
    assert verdict.kind == "exact", verdict.reason
    assert calls and all(limit <= bound for bound, limit in calls)
