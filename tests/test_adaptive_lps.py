"""Conservative's ``schedule=adaptive`` (issue #48): many small LPs handed to the workers every window by their
last window's cost, on the native engine; phold's moving load (``hotspot``); the adaptive schedule's bound and
model.  Exactness, stats and one-line errors only: timing is bench/adaptive_lps.py's (never asserted here)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tickpar import native
from tickpar.cli import main
from tickpar.kernel.params import ParamError
from tickpar.pdes.adaptive import MAX_LPS, default_lps_max, fine_plan, lookahead_groups
from tickpar.pdes.plan import make_plan, partition_weights
from tickpar.runner import cell_promise, check_cell, execute, resolve_cell

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TICKPAR_GEM5_TRACES", ROOT.parent / "shared" / "gem5-traces"))
needs_engine = pytest.mark.skipif(not native.available(), reason="the native engine is not built: pip install ./native")

#: config/adaptive.yaml's moving-load shape (work 0 here: the oracle does not need it)
MOVING = {"lps": 16, "population": 8, "mean": 200, "lookahead": 1000, "granularity": 500, "end_tick": 64000,
          "hotspot": 0.5}  # fmt: skip
SHAPES = {
    "phold": {"lps": 8, "population": 4, "end_tick": 4000, "granularity": 50},
    "multicore": {"cores": 4, "requests_per_core": 60},
    "moving": MOVING,
}
ADAPTIVE = {"sync": "window", "schedule": "adaptive"}
STATS = ("lps", "reassignments", "reassignments_per_window", "stolen_lps", "imbalance_mean", "imbalance_max",
         "imbalance_loop", "imbalance_per_window")  # fmt: skip


def workload_of(shape: str) -> str:
    return "phold" if shape == "moving" else shape


def trace_path(name: str) -> Path:
    shared = SHARED / f"{name}.events.txt.gz"
    return shared if shared.exists() else ROOT / "examples" / "gem5-traces" / f"{name}.events.txt.gz"


# -- exact in canonical order, with the same promise -----------------------------------------------------------
@needs_engine
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_adaptive_is_exact_in_canonical_order(shape: str, seed: int) -> None:
    cell = resolve_cell(workload_of(shape), SHAPES[shape], "conservative", ADAPTIVE, 2, seed, "canonical",
                        engine="native")  # fmt: skip
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "exact", verdict.reason
    static = resolve_cell(workload_of(shape), SHAPES[shape], "conservative", {"sync": "window"}, 2, seed, "canonical",
                          engine="native")  # fmt: skip
    assert cell_promise(cell).verdict == cell_promise(static).verdict == "exact"
    assert outcome.stats["schedule"] == "adaptive" and outcome.stats["lps"] >= 2


@needs_engine
@pytest.mark.parametrize("name", ["tg-random-2core", "memtest-2-2-1"])
def test_adaptive_is_exact_on_gem5_traces(name: str) -> None:
    path = trace_path(name)
    if not path.exists():
        pytest.skip(f"no trace {path}")
    for work_us in (0.0, 0.5):
        cell = resolve_cell("gem5trace", {"trace": str(path), "work_us": work_us}, "conservative", ADAPTIVE, 2, 1,
                            "canonical", engine="native")  # fmt: skip
        verdict, outcome = check_cell(cell)
        assert verdict.kind == "exact", verdict.reason
        assert outcome.stats["lps"] > 2


@needs_engine
def test_a_lookahead_claim_above_a_link_is_checked_as_the_static_schedule_checks_it() -> None:
    for options in ({"sync": "window", "lookahead": 50}, {**ADAPTIVE, "lookahead": 50}):
        params = {"lps": 8, "population": 4, "end_tick": 4000}  # arrivals 10 + Exp(100) ticks ahead: some below 50
        cell = resolve_cell("phold", params, "conservative", options, 2, 1, "canonical", engine="native")
        assert cell_promise(cell).verdict is None
        verdict, _ = check_cell(cell)
        assert verdict.kind == "causality" and "lookahead violation" in verdict.reason


@needs_engine
def test_static_is_exact_on_the_moving_load() -> None:
    for seed in (1, 2):
        cell = resolve_cell("phold", MOVING, "conservative", {"sync": "window"}, 2, seed, "canonical", engine="native")
        verdict, _ = check_cell(cell)
        assert verdict.kind == "exact", verdict.reason


@needs_engine
def test_every_replay_of_an_adaptive_run_agrees() -> None:
    # The schedule changes from window to window and replay to replay; the result must not (else: a race).
    cell = resolve_cell("phold", {**MOVING, "work_us": 0.5}, "conservative", ADAPTIVE, 2, 1, "canonical",
                        engine="native")  # fmt: skip
    record, stats = native.run_native(cell.spec, "conservative", 2, cell.options, replays=4)
    assert record.failure is None and not record.races and stats["replays"] == 4


# -- stats -----------------------------------------------------------------------------------------------------
@needs_engine
def test_both_schedules_report_lps_reassignments_steals_and_imbalance() -> None:
    spec_params = {**MOVING, "end_tick": 16000}
    static = execute(resolve_cell("phold", spec_params, "conservative", {}, 2, 1, "canonical", engine="native"))
    adaptive = execute(resolve_cell("phold", spec_params, "conservative", ADAPTIVE, 2, 1, "canonical",
                                    engine="native"))  # fmt: skip
    for outcome in (static, adaptive):
        assert all(key in outcome.stats for key in STATS), sorted(outcome.stats)
        windows = outcome.stats["windows"]
        per_window = outcome.stats["imbalance_per_window"]
        assert len(per_window) == windows and all(1.0 <= x <= 2.0 + 1e-9 for x in per_window)
        assert 1.0 <= outcome.stats["imbalance_mean"] <= outcome.stats["imbalance_max"] <= 2.0 + 1e-9
    assert static.stats["schedule"] == "static" and static.stats["lps"] == 2
    assert static.stats["reassignments"] == 0 and static.stats["stolen_lps"] == 0
    assert adaptive.stats["lps"] == 16 and len(adaptive.stats["events_per_lp"]) == 16
    assert sum(adaptive.stats["events_per_worker"]) == adaptive.stats["events"] == static.stats["events"]
    per_window = adaptive.stats["reassignments"] / adaptive.stats["windows"]
    assert adaptive.stats["reassignments_per_window"] == pytest.approx(per_window)


# -- options and their errors ----------------------------------------------------------------------------------
def test_the_python_engine_refuses_adaptive_with_one_line() -> None:
    with pytest.raises(ParamError, match=r"schedule=adaptive is taken by the native engine only.*schedule=static"):
        resolve_cell("phold", {}, "conservative", ADAPTIVE, 2, 1, "canonical")
    resolve_cell("phold", {}, "conservative", {"schedule": "static"}, 2, 1, "canonical")


def test_bad_schedule_and_lps_max_are_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ParamError, match="schedule='bogus' is not allowed: one of static, adaptive"):
        resolve_cell("phold", {}, "conservative", {"schedule": "bogus"}, 2, 1, "canonical", engine="native")
    with pytest.raises(ParamError, match=r"lps_max=1 is not allowed with workers=2"):
        resolve_cell("phold", {}, "conservative", {**ADAPTIVE, "lps_max": 1}, 2, 1, "canonical", engine="native")
    with pytest.raises(ParamError, match=r"lps_max=65 is out of range"):
        resolve_cell("phold", {}, "conservative", {**ADAPTIVE, "lps_max": 65}, 2, 1, "canonical", engine="native")
    with pytest.raises(ParamError, match="schedule=adaptive is not allowed with sync=null-message"):
        resolve_cell("phold", {}, "conservative", {"schedule": "adaptive", "sync": "null-message"}, 2, 1, "canonical")
    assert main(["check", "-w", "phold", "-s", "conservative", "-o", "schedule=adaptive", "-n", "2",
                 "--order", "canonical"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schedule=adaptive" in err[0] and "--engine native" in err[0]


def test_tickpar_list_shows_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "schedule=static" in out and "static, adaptive" in out and "lps_max=None" in out
    assert "hotspot=0.0" in out


@needs_engine
def test_the_engine_refuses_bad_lps_and_schedules() -> None:
    import tickpar_native as tn

    cell = resolve_cell("phold", SHAPES["phold"], "conservative", {}, 2, 1, "canonical", engine="native")
    _rec, dag = native.engine.recorded(cell.spec)
    with pytest.raises(ValueError, match="schedule=sometimes is not allowed: static or adaptive"):
        tn.run(dag, "conservative", 2, order="canonical", lp_of=[0] * 8, schedule="sometimes")
    with pytest.raises(ValueError, match="lps=65 is not allowed with schedule=adaptive"):
        tn.run(dag, "conservative", 2, order="canonical", lp_of=[0] * 8, schedule="adaptive", lps=65)
    with pytest.raises(ValueError, match="conservative only"):
        tn.run(dag, "quantum", 2, order="canonical", lp_of=[0] * 8, schedule="adaptive", lps=4)
    out = tn.run(dag, "conservative", 2, order="canonical", lp_of=[0, 1, 2, 3, 4, 5, 6, 9], lookahead=10,
                 schedule="adaptive", lps=8)  # fmt: skip
    assert out.failure is not None and "outside [0, 8)" in out.failure["message"]


# -- the fine partition ----------------------------------------------------------------------------------------
def _model_and_weights(workload: str, params: dict) -> tuple:
    spec = resolve_cell(workload, params, "sequential", {}, 1, 1, "canonical").spec
    return spec.build_model(work="none"), partition_weights(spec, "events")


def test_fine_plan_is_as_fine_as_the_coupling_allows() -> None:
    model, weights = _model_and_weights("phold", SHAPES["phold"])
    plan, _part = fine_plan(model, 2, default_lps_max(2), method="auto", order="canonical", weights=weights)
    assert plan.parts == 8 and sorted(plan.lp_of) == list(range(8)) and plan.lookahead == 10
    capped, _ = fine_plan(model, 2, 4, method="auto", order="canonical", weights=weights)
    assert capped.parts == 4 and set(capped.lp_of) == set(range(4))
    assert default_lps_max(2) == 16 and default_lps_max(100) == MAX_LPS
    # zero-latency coupling (same-tick port calls) keeps its components on one LP
    model, weights = _model_and_weights("multicore", {"cores": 4, "requests_per_core": 40, "direct_calls": True})
    plan, _ = fine_plan(model, 2, 16, method="auto", order="canonical", weights=weights)
    for a, b in model.direct:
        assert plan.lp_of[a.id] == plan.lp_of[b.id]
    assert plan.parts >= 2 and plan.parts == len(set(lookahead_groups(model, plan.lookahead)))


def test_fine_plan_never_shortens_the_static_lookahead() -> None:
    path = trace_path("tg-random-2core")
    if not path.exists():
        pytest.skip(f"no trace {path}")
    model, weights = _model_and_weights("gem5trace", {"trace": str(path)})
    static, _ = make_plan(model, 2, method="auto", order="canonical", sync="window", weights=weights)
    plan, part = fine_plan(model, 2, 16, method="auto", order="canonical", weights=weights)
    assert plan.parts > 2 and plan.lookahead is not None and plan.lookahead >= static.lookahead
    assert part.min_cut_latency is None or part.min_cut_latency >= static.lookahead


# -- phold's moving load ----------------------------------------------------------------------------------------
#: Global digests of phold as it was before ``hotspot`` (HEAD before issue #48): ``hotspot=0`` must keep them.
BEFORE_HOTSPOT = [
    (1, {}, "66d5392a5aa2b641"),
    (2, {"work_us": 2, "granularity": 50}, "731101a611314e1a"),
    (3, {"lps": 5, "remote": 0.7}, "cbcda7d49e0a0c67"),
]


@pytest.mark.parametrize(("seed", "params", "digest"), BEFORE_HOTSPOT)
def test_hotspot_zero_is_todays_phold(seed: int, params: dict, digest: str) -> None:
    for given in (params, {**params, "hotspot": 0.0}):
        record = execute(resolve_cell("phold", given, "sequential", {}, 1, seed)).record
        assert record.digest == digest


def test_the_hot_group_moves_across_the_model() -> None:
    params = {**MOVING, "end_tick": 32000}
    record = execute(resolve_cell("phold", params, "sequential", {}, 1, 1, "canonical", trace=True)).record
    assert record.traces is not None
    lps, period, size = 16, 32000 // 16, 2
    counts = np.zeros((16, lps))  # [phase][lp]: events received
    for name, rows in record.traces.items():
        lp = int(name.removeprefix("lp"))
        for row in rows:
            counts[min(15, int(row[0]) // period), lp] += 1
    hot_share = []
    for phase in range(2, 16):  # past the start-up (the initial events start where they are)
        # the group during this phase, and the one before it (events in flight arrive a hop later)
        group = {(phase + m) % lps for m in range(size)} | {(phase - 1 + m) % lps for m in range(size)}
        hot_share.append(counts[phase, sorted(group)].sum() / counts[phase].sum())
    assert min(hot_share) > 0.5, hot_share  # 3 of 16 LPs take most of each phase's events
    busiest = [int(np.argmax(counts[phase])) for phase in range(2, 16)]
    assert len(set(busiest)) >= 8  # ... and the busiest LP moves along


# -- the bound and the model -----------------------------------------------------------------------------------
def test_the_adaptive_schedule_is_priced_per_window() -> None:
    from tickpar.perf.predict.bounds import adaptive_window_time, window_time
    from tickpar.perf.predict.dag import record_dag
    from tickpar.perf.predict.strategy_times import strategy_partition

    spec = resolve_cell("phold", {**MOVING, "work_us": 1.0}, "sequential", {}, 1, 1, "canonical").spec
    dag = record_dag(spec, meter_work=True)
    cost = np.ones(len(dag))
    static = strategy_partition(spec, "conservative", {"schedule": "static"})
    fine = strategy_partition(spec, "conservative", {"schedule": "adaptive"})
    assert static is not None and fine is not None
    assert len(set(static(2))) == 2 and len(set(fine(2))) == 16
    t_static = window_time(dag, static(2), cost)[0]
    bound = adaptive_window_time(dag, fine(2), cost, 2)[0]
    model = adaptive_window_time(dag, fine(2), cost, 2, optimistic=False)[0]
    assert len(dag) / 2 <= bound <= model < t_static
    assert adaptive_window_time(dag, fine(2), cost, 1, optimistic=False)[0] == pytest.approx(len(dag))
    # the bound's shape: one window, LPs of 3, 2, 2, 1 on 2 workers -> max(3, 8 / 2) = 4; the model as LPT: 4
    tiny = _one_window_dag([3, 2, 2, 1])
    assert adaptive_window_time(tiny, [0, 1, 2, 3], np.ones(8), 2)[0] == 4.0
    assert adaptive_window_time(tiny, [0, 1, 2, 3], np.ones(8), 2, optimistic=False)[0] == 4.0


def _one_window_dag(events_per_lp: list[int]):  # type: ignore[no-untyped-def]
    import pandas as pd

    from tickpar.perf.predict.dag import Dag

    comps = [c for c, n in enumerate(events_per_lp) for _ in range(n)]
    n = len(comps)
    events = pd.DataFrame({"component": comps, "when": [0] * n, "priority": [0] * n, "source": [-1] * n,
                           "first": [0] * n, "last": [0] * n, "cost_s": [1.0] * n, "parent": [-1] * n,
                           "work_us": [0.0] * n, "work_calls": [0] * n})  # fmt: skip
    names = [f"c{c}" for c in range(len(events_per_lp))]
    edges = [(a, b, 100) for a in range(len(names)) for b in range(len(names)) if a != b]
    return Dag(events, names, edges, {})


def test_a_config_with_the_adaptive_variant_makes_native_cells_only() -> None:
    from tickpar.pipeline.sweep import load_config_file, load_sweep

    path = ROOT / "config" / "adaptive.yaml"
    sweep = load_sweep(load_config_file(str(path)), str(path))
    adaptive = [c for c in sweep.cells if c.variant == "window-adaptive"]
    assert adaptive and {c.engine for c in adaptive} == {"native"}
    assert any(c.shape == "moving" for c in adaptive)
    assert any(c.variant == "window-threads" and c.engine == "native" for c in sweep.cells)
