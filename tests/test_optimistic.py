"""The ``optimistic`` strategy (Time Warp) and its kernel primitives: state saving, the journaling queue, GVT.

Runs are small (a few thousand events) and use at most two workers; the
conformance suite runs the strategy on every workload with default
parameters.
"""

from __future__ import annotations

import copy
import random
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tickpar.kernel.eventq import Event, EventQueue, JournalQueue
from tickpar.kernel.model import Component, Model
from tickpar.kernel.params import ParamError
from tickpar.kernel.statesave import (
    REBASE_WORDS,
    TrackedRandom,
    restore_rng,
    restore_value,
    rng_tracking_works,
    save_rng,
    save_value,
    saved_bytes,
)
from tickpar.pdes.gvt import INF, MarkerGVT
from tickpar.pdes.packets import GVT, MARK, REPORT
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, resolve_cell

PHOLD = {"lps": 8, "population": 3, "end_tick": 4000}
MULTICORE = {"cores": 4, "requests_per_core": 60}
STAT_NAMES = ("processed", "committed", "rolled_back", "efficiency", "rollbacks", "rollback_lengths",
              "anti_messages", "gvt_rounds", "peak_saved")  # fmt: skip


def _check(workload: str, params: dict[str, Any], workers: int = 2, order: str = "canonical", **options: Any) -> Any:
    cell = resolve_cell(workload, params, "optimistic", options, workers, seed=2, order=order)
    return check_cell(cell)


# -- the journaling queue ---------------------------------------------------------------------------------
def _pending(q: EventQueue) -> list[tuple[str, int, int, Any]]:
    return [(e.name, e.when, e.priority, e.source) for e in q.pending()]


def test_journal_queue_undo_puts_the_queue_back() -> None:
    """Served events and every schedule, reschedule and deschedule they made are taken back, in order."""
    rng = random.Random(7)
    q = JournalQueue("j", order="canonical")
    events: list[Event] = []
    for i in range(12):  # each runs body(itself)
        events.append(Event((lambda i=i: body(events[i])), name=f"e{i}", priority=rng.choice([0, 50, -1])))
    seq = [0]

    def stamp(ev: Event) -> None:
        seq[0] += 1
        ev.source = seq[0]

    def body(me: Event) -> None:
        for _ in range(3):
            other = rng.choice(events)
            when = q.cur_tick + rng.randrange(0, 40)
            stamp(other)
            if other.scheduled and rng.random() < 0.3:
                q.deschedule(other)
            elif other.scheduled:
                q.reschedule(other, when)
            else:
                q.schedule(other, when)

    for ev in events[:6]:
        stamp(ev)
        q.schedule(ev, rng.randrange(0, 30))
    for _round in range(25):
        before = _pending(q)
        tick = q.cur_tick
        journal: list[Any] = []
        q.journal = journal
        for _ in range(rng.randrange(1, 4)):
            if q.empty():
                break
            q.serve_next()
        q.journal = None
        q.undo(journal)
        q.repair([u[0] for u in journal])
        q.cur_tick = tick
        assert _pending(q) == before
        assert not q.check_invariants()
        if q.empty():
            break
        q.serve_next()  # go on for real


def test_journal_queue_repair_drops_entries_a_reused_source_would_revive() -> None:
    """After an undo, an event scheduled again with the same source key at another tick runs once, there."""
    q = JournalQueue("j", order="canonical")
    ran: list[int] = []
    ev = Event(lambda: ran.append(q.cur_tick), name="ev")
    journal: list[Any] = []
    q.journal = journal
    ev.source = 5
    q.schedule(ev, 100)
    q.journal = None
    q.undo(journal)
    q.repair([ev])
    assert not ev.scheduled and q.empty()
    ev.source = 5  # a re-execution issues the same source key
    q.schedule(ev, 50)
    q.run()
    assert ran == [50]


# -- state saving -------------------------------------------------------------------------------------------
def test_tracked_rng_restores_by_coasting_forward() -> None:
    """A save is a base state and the words drawn since; restoring draws them again (across rebases too)."""
    assert rng_tracking_works()
    rng = random.Random(99)
    saves = []
    for i in range(400):
        saves.append((save_rng(rng), rng.getstate()))
        [rng.random, lambda: rng.getrandbits(70), lambda: rng.randrange(10**6), lambda: rng.gauss(0, 1)][i % 4]()
    assert type(rng) is TrackedRandom
    assert REBASE_WORDS < 400  # so the saves span several base states
    for saved, state in reversed(saves[::37]):
        restore_rng(rng, saved)
        assert rng.getstate() == state


def test_save_value_copies_containers_and_restores_objects_in_place() -> None:
    class Port:
        state_attrs = ("entries", "sent")

        def __init__(self) -> None:
            self.entries = [(1, 2)]
            self.sent = 0

    port = Port()
    value = {"a": [1, 2, [3]], "port": port, "s": {4}}
    saved = save_value(value)
    value["a"][2].append(9)
    value["s"].add(5)
    port.entries.append((3, 4))
    port.sent = 7
    back = restore_value(saved)
    assert back["a"] == [1, 2, [3]] and back["s"] == {4}
    assert back["port"] is port and port.entries == [(1, 2)] and port.sent == 0
    assert saved_bytes(saved) > 0

    class Opaque:
        pass

    with pytest.raises(TypeError, match="holds a Opaque, which declares no state"):
        save_value([Opaque()], "thing")


def test_component_save_restores_kernel_fields_and_declared_state() -> None:
    class Counter(Component):
        state_attrs = ("n", "seen")

        def __init__(self, model: Model) -> None:
            super().__init__(model, "c")
            self.n = 0
            self.seen: list[int] = []
            self.tick_event = self.event("tick", lambda p: None)

    model = Model(3, trace=True)
    c = Counter(model)
    print_before = c.fingerprint()
    saved = c.save()
    c.n, c.count, c.digest, c.when = 5, 3, 1234, 77
    c.seen.append(1)
    c.rng.random()
    c.trace.append((1, 0, "x", 0))  # type: ignore[union-attr]
    c.tick_event.payload = 42
    c.restore(saved)
    assert c.fingerprint() == print_before


def test_tag_array_undo_log_restores_any_earlier_save() -> None:
    """multicore's incremental tag-array saves: restoring a save undoes every later access, insert and dirty bit."""
    from tickpar.plugins.registry import get_registry

    multicore = __import__(get_registry().workload("multicore").__module__, fromlist=["TagArray"])
    tags = multicore.TagArray(8, 2)
    rng = random.Random(3)
    copies = []
    saves = []
    for step in range(300):
        if step % 7 == 0:
            saves.append(tags.save_state())
            copies.append((copy.deepcopy(tags.ways), set(tags.dirty)))
        line = rng.randrange(40)
        if tags.access(line):
            if rng.random() < 0.5:
                tags.dirty.add(line)
        else:
            tags.insert(line, rng.random() < 0.3)
    for k in (30, 12, 11, 3, 0):
        tags.restore_state(saves[k])
        assert (tags.ways, tags.dirty) == copies[k]
        del saves[k + 1 :], copies[k + 1 :]
        saves[k] = tags.save_state()  # a restored save is used up: save again at the same point


# -- GVT ------------------------------------------------------------------------------------------------------
def test_marker_gvt_counts_messages_in_the_channels() -> None:
    """Three LPs over FIFO channels: a message sent before its sender's cut and received after the
    receiver's is in the channel, and GVT is at most its key."""
    channels: dict[tuple[int, int], list[Any]] = {(a, b): [] for a in range(3) for b in range(3) if a != b}
    mins = {0: (50, 0), 1: (80, 0), 2: INF}
    lps: list[MarkerGVT] = []
    for i in range(3):
        peers = [p for p in range(3) if p != i]
        lps.append(MarkerGVT(i, peers, lambda dst, pkt, i=i: channels[(i, dst)].append(pkt), lambda i=i: mins[i]))
    channels[(2, 1)].append(("msg", (30, 7)))  # LP 2 sent a message at key 30 before any cut
    assert lps[0].start() is None
    result = None

    def deliver(a: int, b: int) -> None:
        nonlocal result
        pkt = channels[(a, b)].pop(0)
        if pkt[0] == "msg":
            lps[b].on_message(a, pkt[1])
        elif pkt[0] == MARK:
            got = lps[b].on_mark(a, pkt[1])
            result = got or result
        elif pkt[0] == REPORT:
            got = lps[b].on_report(a, pkt[1], pkt[2])
            result = got or result
        elif pkt[0] == GVT:
            lps[b].learn(pkt[2])

    deliver(0, 1)  # LP 1 cuts (its message from LP 2 is still in the channel)
    deliver(0, 2)  # LP 2 cuts
    for a, b in [(1, 0), (1, 2), (2, 0), (2, 1), (2, 1), (1, 0), (2, 0)]:
        if channels[(a, b)]:
            deliver(a, b)
    while any(channels.values()):
        for key, pkts in channels.items():
            if pkts:
                deliver(*key)
    assert result == (30, 7)
    assert all(lp.value == (30, 7) for lp in lps)


# -- the strategy ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("workload", "params", "options"),
    [
        ("phold", PHOLD, {}),
        ("phold", PHOLD, {"window": 30}),
        ("phold", PHOLD, {"backend": "processes"}),
        ("multicore", MULTICORE, {}),
        ("multicore", {**MULTICORE, "direct_calls": True}, {"window": 1000}),
        ("multicore", MULTICORE, {"backend": "processes", "window": 2000}),
    ],
)
def test_exact_with_statistics(workload: str, params: dict[str, Any], options: dict[str, Any]) -> None:
    verdict, outcome = _check(workload, params, **options)
    assert verdict.kind == "exact", verdict.reason
    stats = outcome.stats
    assert all(name in stats for name in STAT_NAMES)
    assert 0 < stats["efficiency"] <= 1
    assert stats["processed"] - stats["rolled_back"] == stats["committed"]
    if not params.get("direct_calls"):  # a direct call counts as an event of its callee in the record
        assert stats["committed"] == outcome.record.events
    assert sum(count for _n, count in stats["rollback_lengths"]) == stats["rollbacks"]
    assert sum(n * count for n, count in stats["rollback_lengths"]) == stats["rolled_back"]
    assert set(stats["peak_saved"]) == {"snapshots", "bytes"}


def test_default_phold_rolls_back_and_stays_exact() -> None:
    """Unbounded optimism on threads: LPs run ahead of each other, stragglers roll them back."""
    verdict, outcome = _check("phold", {}, 2)
    assert verdict.kind == "exact", verdict.reason
    stats = outcome.stats
    assert stats["rollbacks"] > 0 and stats["anti_messages"] > 0 and stats["rolled_back"] > 0
    assert 0 < stats["efficiency"] < 1


def test_one_worker_saves_nothing() -> None:
    verdict, outcome = _check("multicore", MULTICORE, 1)
    assert verdict.kind == "exact"
    assert outcome.stats["rollbacks"] == 0 and outcome.stats["efficiency"] == 1.0


@pytest.mark.parametrize(
    ("workload", "params"),
    [("phold", {"lps": 4, "population": 2, "end_tick": 1500}), ("multicore", {"cores": 2, "requests_per_core": 30}),
     ("multicore", {"cores": 2, "requests_per_core": 30, "direct_calls": True})],
)  # fmt: skip
def test_rollback_check_passes_on_builtin_workloads(workload: str, params: dict[str, Any]) -> None:
    verdict, _ = _check(workload, params, rollback_check=True)
    assert verdict.kind == "exact", verdict.reason


LEAKY_PLUGIN = '''
from tickpar.kernel.model import Component
from tickpar.kernel.params import Param
from tickpar.plugins import Workload

COUNTER = [0]


class Leaky(Component):
    state_attrs = ("seen",)

    def __init__(self, model, name, how):
        super().__init__(model, name)
        self.how = how
        self.seen = 0
        self.hidden = 0
        self.out = None

    def init(self):
        self.send(self.out, 0)

    def on_msg(self, n):
        self.seen += 1
        if self.how == "attribute":
            self.hidden += 1
            extra = self.hidden % 2
        else:
            COUNTER[0] += 1
            extra = COUNTER[0] % 2
        if n < 20:
            self.send(self.out, n + 1, extra)

    def state(self):
        return (self.seen, self.hidden)


class LeakyPair(Workload):
    name = "test_leaky"
    summary = "two components with state their saves leave out (tests only)"
    params = {"how": Param(str, "attribute", "what escapes", choices=("attribute", "module"))}

    def build(self, model, params):
        a = Leaky(model, "leaky.a", params["how"])
        b = Leaky(model, "leaky.b", params["how"])
        a.out = model.link(a, b, "on_msg", 3)
        b.out = model.link(b, a, "on_msg", 3)
'''


@pytest.fixture
def leaky(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> str:
    path = tmp_path / "leaky_plugin.py"
    path.write_text(textwrap.dedent(LEAKY_PLUGIN))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    return "test_leaky"


@pytest.mark.parametrize(("how", "says"), [("attribute", "attribute 'hidden'"), ("module", "running it again")])
@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_rollback_check_names_the_component_and_event(leaky: str, how: str, says: str, backend: str) -> None:
    """Undeclared state (an attribute left out of state_attrs, a module-level counter) is a named verdict."""
    verdict, outcome = _check(leaky, {"how": how}, rollback_check=True, backend=backend)
    assert verdict.kind == "unsaved-state", verdict.reason
    assert re.match(r"component leaky\.(a|b), event leaky\.\1\.on_msgEvent at tick 3: ", verdict.reason)
    assert says in verdict.reason
    failure = outcome.record.failure
    assert failure["component"] in {"leaky.a", "leaky.b"} and failure["event"] == failure["component"] + ".on_msgEvent"


def test_promises_and_bad_options() -> None:
    cls = get_registry().strategy("optimistic")
    cell = resolve_cell("phold", PHOLD, "optimistic", {}, 2, seed=1, order="canonical")
    assert cls().expected_verdict(cell.spec, 2, cell.options) == "exact"
    cell = resolve_cell("phold", PHOLD, "optimistic", {}, 2, seed=1, order="gem5")
    assert cls().expected_verdict(cell.spec, 2, cell.options) is None
    with pytest.raises(ParamError, match="window"):
        resolve_cell("phold", PHOLD, "optimistic", {"window": -1}, 2, seed=1)
    with pytest.raises(ParamError, match="backend"):
        resolve_cell("phold", PHOLD, "optimistic", {"backend": "mpi"}, 2, seed=1)


def test_roundrobin_partition_is_exact() -> None:
    """Another partition (more links cut, more stragglers): still the sequential run's digests."""
    verdict, outcome = _check("multicore", {"cores": 2, "requests_per_core": 40}, partition="roundrobin")
    assert verdict.kind == "exact", verdict.reason
    assert outcome.stats["messages"] > 0


# -- the report page ---------------------------------------------------------------------------------------
def _sweep() -> Any:
    from factories import make_summary, summary_row

    rows = []

    def row(shape: str, family: str, label: str, work: float, lookahead: int, speedup: float, **stats: Any) -> None:
        rows.append(summary_row(
            label, 2, speedup, shape=shape, family=family, order="canonical", timed=True,
            speedup_lo=speedup * 0.95, speedup_hi=speedup * 1.05, param_work_us=work, stat_lookahead=lookahead,
            **{f"stat_{k}": v for k, v in stats.items()},
        ))  # fmt: skip

    for work, opt, cons in ((10, 0.5, 0.6), (300, 1.6, 1.7), (1000, 1.8, 1.85)):
        shape = "wide" if work == 10 else f"wide.work_us{work}"
        row(shape, "wide", "optimistic/unbounded", work, 1000, opt, efficiency=0.95, rollbacks=3,
            rollback_mean_length=4.0, rollback_max_length=9)  # fmt: skip
        row(shape, "wide", "conservative/window-threads", work, 1000, cons)
    row("starved", "starved", "optimistic/unbounded", 300, 20, 1.5, efficiency=0.9, rollbacks=5,
        rollback_mean_length=6.0, rollback_max_length=20)  # fmt: skip
    row("starved", "starved", "conservative/window-threads", 300, 20, 1.1)
    return make_summary(rows, prepare=True)


def test_optimism_page_and_findings() -> None:
    """The page draws speedup, efficiency and rollback length against work and lookahead; findings compare."""
    import matplotlib.pyplot as plt

    from tickpar.report.optimism import fig_optimism, optimism_findings, optimism_points

    df = _sweep()
    pts = optimism_points(df)
    assert set(pts["strategy"]) == {"optimistic", "conservative"} and len(pts) == 8
    fig = fig_optimism(df, {"optimistic/unbounded": "C0", "conservative/window-threads": "C1"})
    assert len([ax for ax in fig.axes if ax.has_data()]) == 6
    plt.close(fig)
    text = " ".join(optimism_findings(df))
    assert "Optimistic on phold/starved (work_us 300, lookahead 20, 2 workers): optimistic/unbounded 1.50x" in text
    assert "faster than conservative/window-threads 1.10x (+36%)" in text
    assert "5 rollbacks of mean length 6.0 (longest 20)" in text
    assert "slower than conservative/window-threads 1.70x" in text


# -- stragglers and errors while speculating ------------------------------------------------------------------
STRAGGLER_PLUGIN = '''
import time

from tickpar.kernel.model import Component
from tickpar.kernel.params import Param
from tickpar.plugins import Workload


class Slow(Component):
    state_attrs = ()

    def __init__(self, model, name, delay_s):
        super().__init__(model, name)
        self.delay_s = delay_s
        self.out = None
        self.tick_event = self.event("tick", self.on_tick)

    def init(self):
        self.schedule(self.tick_event, 10)

    def on_tick(self, _):
        time.sleep(self.delay_s)  # the other LP runs far ahead meanwhile
        self.send(self.out, 1)  # arrives at tick 15: a straggler there


class Fast(Component):
    state_attrs = ("ticks", "flag")

    def __init__(self, model, name, fail_at):
        super().__init__(model, name)
        self.fail_at = fail_at
        self.ticks = 0
        self.flag = False
        self.tick_event = self.event("tick", self.on_tick)

    def init(self):
        self.schedule(self.tick_event, 11)

    def on_tick(self, _):
        self.ticks += 1
        if self.when == 50 and not self.flag:
            raise RuntimeError("no message yet")  # only while speculating: the message comes at tick 15
        if self.when == self.fail_at:
            raise RuntimeError("a real failure")
        if self.when < 100:
            self.schedule(self.tick_event, self.when + 1)

    def on_msg(self, n):
        self.flag = True

    def state(self):
        return (self.ticks, self.flag)


class Straggler(Workload):
    name = "test_straggler"
    summary = "one LP runs far ahead of a slow one and raises on a state a straggler will change (tests only)"
    params = {
        "delay_s": Param(float, 0.3, "how long the slow LP sleeps before sending", min=0.0),
        "fail_at": Param(int, 0, "tick at which the fast component really fails (0: never)", min=0),
    }

    def build(self, model, params):
        slow = Slow(model, "straggler.slow", params["delay_s"])
        fast = Fast(model, "straggler.fast", params["fail_at"])
        slow.out = model.link(slow, fast, "on_msg", 5)
        model.end_tick = 200
'''


@pytest.fixture
def straggler(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> str:
    path = tmp_path / "straggler_plugin.py"
    path.write_text(textwrap.dedent(STRAGGLER_PLUGIN))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    get_registry(refresh=True)
    return "test_straggler"


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_a_straggler_rolls_back_and_an_error_while_speculating_is_held(straggler: str, backend: str) -> None:
    """The fast LP runs to tick 50 and raises there on a state the straggler at tick 15 changes: the error is
    held, the straggler rolls the LP back, the event runs again and succeeds."""
    verdict, outcome = _check(straggler, {}, backend=backend)
    assert verdict.kind == "exact", verdict.reason
    stats = outcome.stats
    assert stats["held_errors"] >= 1 and stats["rollbacks"] >= 1 and stats["stragglers"] >= 1
    assert stats["rolled_back"] >= 30  # ticks 15 ... 49 at least


def test_a_real_error_is_raised_once_gvt_passes_it(straggler: str) -> None:
    """The same LP really fails at tick 60 (as the sequential run does): held, then raised once GVT passes it."""
    from tickpar.runner import execute

    cell = resolve_cell(straggler, {"fail_at": 60, "delay_s": 0.1}, "optimistic", {}, 2, seed=2, order="canonical")
    failure = execute(cell).record.failure
    assert failure is not None and failure["kind"] == "crash" and "a real failure" in failure["message"], failure
