"""gem5's own multi-core runs (../shared/gem5-traces, stock Event traces): imported and replayed event for event.

Per shared trace: the import's events are the ``executed`` lines less gem5's exit events (named), in the
profile and in the replay on both engines; the replay is sequentially sound in both order modes; native
conservative (window, canonical) is exact at 2 workers with no work and at the run's own event cost; every
other strategy keeps its promise; split's failures name gem5's events.  The four largest runs are slow tests.
"""

from __future__ import annotations

import gzip
import os
from functools import cache
from pathlib import Path

import pytest

from tickpar import native
from tickpar.gem5 import import_trace
from tickpar.gem5.profile import trace_profile
from tickpar.runner import cell_promise, check_cell, execute, resolve_cell

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TICKPAR_GEM5_TRACES", ROOT.parent / "shared" / "gem5-traces"))
STOCK = sorted(SHARED.glob("*.events.txt.gz")) if SHARED.is_dir() else []
LARGE = ("tg-random-16core", "tg-random-32core", "tg-random-64core", "garnet-mesh-64node")
#: where a test runs parallel strategies, the fast suite takes these two (a tree of caches, a TestBoard)
QUICK = ("tg-random-2core", "memtest-2-2-1")
needs_native = pytest.mark.skipif(not native.available(), reason="the native engine is not built")


def stem(path: Path) -> str:
    return path.name.split(".")[0]


def runs(small_only: bool = False, quick: bool = False) -> list:
    """The shared stock traces as test parameters, the large ones left out or marked slow (``quick``: all
    but :data:`QUICK`)."""
    out = []
    for path in STOCK:
        large = stem(path) in LARGE
        if large and small_only:
            continue
        slow = large or (quick and stem(path) not in QUICK)
        out.append(pytest.param(path, id=stem(path), marks=[pytest.mark.slow] if slow else []))
    return out or [pytest.param(None, marks=pytest.mark.skip(reason=f"no shared gem5 traces in {SHARED}"))]


@cache
def executed_lines(path: Path) -> int:
    with gzip.open(path, "rt") as lines:
        return sum(1 for line in lines if " executed @ " in line)


def untraced_stats(path: Path) -> str:
    return str(path.with_name(f"{stem(path)}.untraced.stats.txt"))


@pytest.mark.parametrize("path", runs())
def test_events_are_the_executed_lines_less_gem5s_exit_events(path: Path) -> None:
    trace = import_trace(path)
    assert len(trace.exit_events) == 1
    name, tick = trace.exit_events[0]
    assert name.startswith("Event_") and tick == trace.end_tick
    assert trace.events == executed_lines(path) - len(trace.exit_events)
    assert trace_profile(trace, workers=(1, 2))["events"] == trace.events


@pytest.mark.parametrize("path", runs())
@pytest.mark.parametrize("engine", ["python", pytest.param("native", marks=needs_native)])
@pytest.mark.parametrize("order", ["gem5", "canonical"])
def test_the_replay_runs_exactly_the_traces_events(path: Path, engine: str, order: str) -> None:
    trace = import_trace(path)
    cell = resolve_cell("gem5trace", {"trace": str(path)}, "sequential", {}, 1, 1, order=order, engine=engine)
    record = execute(cell).record
    assert record.failure is None, record.failure
    assert record.events == trace.events
    assert record.final_tick == trace.end_tick


@needs_native
@pytest.mark.parametrize("path", runs(quick=True))
@pytest.mark.parametrize("cost", ["none", "own"])
def test_native_conservative_is_exact_at_two_workers(path: Path, cost: str) -> None:
    params = {"trace": str(path)}
    if cost == "own":
        params["gem5_stats"] = untraced_stats(path)
    cell = resolve_cell("gem5trace", params, "conservative", {"sync": "window"}, 2, 1, order="canonical",
                        engine="native")  # fmt: skip
    verdict, _outcome = check_cell(cell)
    assert verdict.kind == "exact", verdict.reason


@pytest.mark.parametrize("path", runs(small_only=True, quick=True))
@pytest.mark.parametrize(
    ("engine", "strategy", "order"),
    [
        pytest.param("native", "tick-barrier", "gem5", marks=needs_native),
        pytest.param("native", "split", "gem5", marks=needs_native),
        ("python", "tick-barrier", "gem5"),
        ("python", "quantum", "canonical"),
    ],
)  # fmt: skip
def test_every_strategy_keeps_its_promise_at_the_runs_own_cost(
    path: Path, engine: str, strategy: str, order: str
) -> None:
    params = {"trace": str(path), "gem5_stats": untraced_stats(path)}
    cell = resolve_cell("gem5trace", params, strategy, {}, 2, 1, order=order, engine=engine)
    verdict, _outcome = check_cell(cell)
    promise = cell_promise(cell)
    # exit status 0 or 1: kept, or no promise (split on real threads promises nothing); never broken (3)
    assert promise.kept(verdict.kind) is not False, (verdict.kind, verdict.reason, promise.to_dict())


@pytest.mark.parametrize("path", [p for p in runs(small_only=True, quick=True) if p.id in (QUICK[0], None)][:1])
def test_splits_failures_over_five_seeds_name_gem5s_events(path: Path) -> None:
    seen = []
    for seed in range(1, 6):
        cell = resolve_cell("gem5trace", {"trace": str(path)}, "split", {}, 2, seed)
        verdict, _outcome = check_cell(cell)
        assert cell_promise(cell).kept(verdict.kind) is not False
        if verdict.kind != "exact":
            assert "wrapped_function_event" in verdict.reason or "board." in verdict.reason, verdict.reason
            seen.append(verdict.kind)
    assert seen, "split never failed on a real multi-core run in 5 seeds"
