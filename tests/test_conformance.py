"""Promises hold: every registered strategy x every workload, built-in and generated, x workers x orders.

Each cell is checked by the oracle against the sequential run of the same spec
and its verdict must keep the strategy's promise for it
(``Strategy.promise(...).kept(verdict)``: one verdict, or a set of them where
the workload's traits let several come first).  Where a strategy promises
nothing (``None``), the cell must still end in a named verdict other than
``crash`` or ``timeout``.  A new strategy or workload file is picked up with no
edit here (ROSS's ROSS_TEST_SCHEDULERS, in pytest).

Besides the registered workloads, every strategy runs on the *generated family*
of ``tests/plugins/traitmix.py``: one bool parameter per trait switches it on or
off, and a ``sparse`` shape makes each failure window rare (a narrow stored-tick
window, tick events in bins of their own, direct calls into private passive
components), so a promise that only fits the built-ins fails here.  The fast
tier covers every pair of (trait, shape) values; the slow tier runs every
combination, and every choice of each strategy option that has choices.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tickpar.plugins.registry
from tickpar.kernel.eventq import ORDERS
from tickpar.kernel.params import ParamError, resolve
from tickpar.plugins import LONG_RUN_EVENTS, TRAITS, RunSpec
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, resolve_cell
from tickpar.verify.oracle import VERDICTS

WORKERS = (1, 2, 4)
FAMILY = Path(__file__).parent / "plugins"
#: The family's non-trait knobs that make every failure window rare.
SPARSE = {"window": "narrow", "tick_priority": 50, "callee": "private"}


def _cells() -> list[tuple[str, str, int, str]]:
    registry = get_registry()
    out = []
    for strategy, cls in sorted(registry.strategies.items()):
        for workload in sorted(registry.workloads):
            for workers in WORKERS:
                if cls.max_workers is not None and workers > cls.max_workers:
                    continue
                for order in ORDERS:
                    out.append((strategy, workload, workers, order))
    return out


def _assert_keeps_promise(cell: Any, seed_note: str = "") -> None:
    """Run ``cell`` against golden: its verdict keeps the promise, or is a named, finished one without one."""
    promise = get_registry().strategy(cell.strategy)().promise(cell.spec, cell.workers, cell.options)
    verdict, _outcome = check_cell(cell)
    assert verdict.kind in VERDICTS
    where = (
        f"{cell.strategy} {cell.options} workers={cell.workers} order={cell.spec.order} on {cell.spec.workload}"
        f" {cell.spec.params}{seed_note}"
    )
    if promise.verdict is None:
        assert verdict.kind not in {"crash", "timeout"}, f"{where}: {verdict.reason}"
    else:
        assert promise.kept(verdict.kind), (
            f"{where}: promised {promise.verdict} ({', '.join(promise.traits) or 'contract'}: {promise.because}),"
            f" got {verdict.kind}: {verdict.reason}"
        )


@pytest.mark.parametrize(("strategy", "workload", "workers", "order"), _cells())
def test_cell_keeps_its_promise(strategy: str, workload: str, workers: int, order: str) -> None:
    """The oracle's verdict keeps the strategy's promise for the cell (default params and options)."""
    _assert_keeps_promise(resolve_cell(workload, {}, strategy, {}, workers, seed=3, order=order))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("workload", sorted(get_registry().workloads))
def test_quantum_beyond_the_lookahead(workload: str, order: str) -> None:
    """``quantum`` at 10x the lookahead (relaxed): its promise if any, a named verdict, and errors against golden."""
    cell = resolve_cell(workload, {}, "quantum", {"quantum_ratio": 10}, 2, seed=3, order=order)
    promise = get_registry().strategy("quantum")().promise(cell.spec, 2, cell.options)
    verdict, outcome = check_cell(cell)
    kept = promise.kept(verdict.kind)
    assert kept if kept is not None else verdict.kind not in {"crash", "timeout"}, verdict.reason
    if verdict.kind == "causality" and "recorded_operations" in cell.spec.traits():
        return  # a replay cannot compute other values: the reordering fails gem5's assertion instead
    assert verdict.errors is not None and outcome.stats["late_events"] > 0


def test_sequential_is_exact_on_every_workload() -> None:
    """The reference itself: a second sequential run reproduces the golden digests."""
    for workload in get_registry().workloads:
        verdict, outcome = check_cell(resolve_cell(workload, {}, "sequential", {}, 1, seed=5))
        assert verdict.kind == "exact", (workload, verdict.reason)
        assert outcome.record.events > 0


def _structural_traits(model) -> set[str]:
    """The traits that the built model itself shows (the others describe dynamics: see plugins.TRAITS)."""
    found = set()
    if model.direct:
        found.add("direct_calls")
    if any(link.latency == 0 for link in model.links):
        found.add("zero_latency_links")
    names: dict[int, set[str]] = {}
    for comp in model.components:
        names.setdefault(comp.id, set()).update(comp.events)
    for link in model.links:
        names.setdefault(link.dst.id, set()).add(link.event_name)
    if any(len(v) > 1 for v in names.values()):
        found.add("several_named_events")
    return found


STRUCTURAL = {"direct_calls", "zero_latency_links", "several_named_events"}


@pytest.mark.parametrize("workload", sorted(get_registry().workloads))
def test_declared_traits_match_the_model(workload: str) -> None:
    """Each structural trait a workload declares is one its built model has, and the other way round."""
    cls = get_registry().workload(workload)
    variants = [{}]
    if "direct_calls" in cls.params:
        variants.append({"direct_calls": True})
    for given in variants:
        params = resolve(cls.params, given, "param")
        spec = RunSpec(workload, params, seed=1)
        traits = spec.traits()
        assert traits <= TRAITS.keys()
        assert traits & STRUCTURAL == _structural_traits(spec.build_model()), given
        if "long_run" in traits and not given:  # the threshold of TRAITS["long_run"], at the defaults
            record = check_cell(resolve_cell(workload, {}, "sequential", {}, 1, seed=1))[1].record
            assert record.events / len(record.components) >= LONG_RUN_EVENTS, (workload, record.events)


def test_promises_come_from_traits_not_names() -> None:
    """No strategy file names a workload; every promise's traits are traits the workload declares."""
    registry = get_registry()
    for strategy, cls in registry.strategies.items():
        source = open(registry.sources[("strategy", strategy)]).read()
        for workload in registry.workloads:
            assert f'"{workload}"' not in source and f"'{workload}'" not in source, (strategy, workload)
        for workload in registry.workloads:
            for workers in WORKERS:
                if cls.max_workers is not None and workers > cls.max_workers:
                    continue
                cell = resolve_cell(workload, {}, strategy, {}, workers, seed=1)
                promise = cls().promise(cell.spec, workers, cell.options)
                assert promise.verdict == cls().expected_verdict(cell.spec, workers, cell.options)
                assert set(promise.traits) <= cell.spec.traits(), (strategy, workload, promise)
                assert promise.because


# -- the generated family ------------------------------------------------------------------------------


def _pairwise(factors: int) -> list[tuple[int, ...]]:
    """Rows of 0/1 covering every pair of values of every two of ``factors`` binary factors (6 rows, up to 10
    factors: each factor's column is a distinct weight-3 word of length 6 starting with 0)."""
    words = [w for w in itertools.product((0, 1), repeat=6) if w[0] == 0 and sum(w) == 3]
    for columns in itertools.combinations(words, factors):
        if all(len({(a[r], b[r]) for r in range(6)}) == 4 for a, b in itertools.combinations(columns, 2)):
            return [tuple(c[r] for c in columns) for r in range(6)]
    raise ValueError(f"no 6-row pairwise cover for {factors} factors")


def _member(row: tuple[int, ...]) -> dict[str, Any]:
    """Family parameters from a row of bits: one per trait (in TRAITS order), then the sparse shape."""
    params: dict[str, Any] = {trait: bool(bit) for trait, bit in zip(TRAITS, row, strict=False)}
    if row[len(TRAITS)]:
        params.update(SPARSE)
    return params


def family_members(full: bool) -> list[dict[str, Any]]:
    """The fast tier: all off, all on (dense and sparse) and a pairwise cover; ``full``: every combination."""
    n = len(TRAITS) + 1
    rows = list(itertools.product((0, 1), repeat=n)) if full else [(0,) * n, (1,) * n, (1,) * (n - 1) + (0,)]
    rows += [] if full else [r for r in _pairwise(n) if r not in rows]
    return [_member(r) for r in rows]


def _member_id(params: dict[str, Any]) -> str:
    on = "+".join(t for t in TRAITS if params[t]) or "none"
    return on + ("/sparse" if params.get("window") == "narrow" else "")


@pytest.fixture(scope="module")
def family() -> Iterator[None]:
    """The family's plugin folder on TICKPAR_PLUGINS, and the process-wide registry restored afterwards."""
    # The very registry object is put back (a re-discovery would be another object, and slower).
    saved = tickpar.plugins.registry.swap_registry(None)
    tickpar.plugins.registry.swap_registry(saved)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TICKPAR_PLUGINS", os.pathsep.join(filter(None, [os.environ.get("TICKPAR_PLUGINS"), str(FAMILY)])))
        get_registry(refresh=True)
        try:
            yield
        finally:
            tickpar.plugins.registry.swap_registry(saved)


def _strategies() -> list[str]:
    return sorted(get_registry().strategies)


def _family_cells(strategy: str, params: dict[str, Any], options: dict[str, Any]) -> Iterator[Any]:
    cls = get_registry().strategy(strategy)
    for workers in WORKERS:
        if cls.max_workers is not None and workers > cls.max_workers:
            continue
        for order in ORDERS:
            try:
                yield resolve_cell("traitmix", params, strategy, options, workers, seed=1, order=order)
            except ParamError:
                continue  # a combination the strategy refuses as bad input


@pytest.mark.parametrize("params", family_members(full=False), ids=_member_id)
@pytest.mark.parametrize("strategy", _strategies())
def test_family_keeps_promises(family: None, strategy: str, params: dict[str, Any]) -> None:
    """Every strategy keeps its promise on a pairwise cover of the family, at 1, 2 and 4 workers, both orders."""
    for cell in _family_cells(strategy, params, {}):
        _assert_keeps_promise(cell)


@pytest.mark.slow
@pytest.mark.parametrize("params", family_members(full=True), ids=_member_id)
@pytest.mark.parametrize("strategy", _strategies())
def test_whole_family_keeps_promises(family: None, strategy: str, params: dict[str, Any]) -> None:
    """Every combination of traits and shape, for every strategy (default options)."""
    for cell in _family_cells(strategy, params, {}):
        _assert_keeps_promise(cell)


def _option_variants(strategy: str) -> list[dict[str, Any]]:
    """Each value of each option declared with choices, one at a time (the others at their defaults), except
    those that start processes or ranks (their promise is the threads backend's, at much higher cost)."""
    cls = get_registry().strategy(strategy)
    out = []
    for name, param in sorted(cls.options.items()):
        for value in param.choices or ():
            options = {name: value}
            if value != param.default and not cls().uses_processes(resolve(cls.options, options, "option")):
                out.append(options)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("strategy", _strategies())
def test_family_keeps_promises_under_every_option_choice(family: None, strategy: str) -> None:
    """The pairwise cover again under each other choice of each option (lock keys, executors, syncs, ...)."""
    for options in _option_variants(strategy):
        for params in family_members(full=False):
            for cell in _family_cells(strategy, params, options):
                _assert_keeps_promise(cell, f" options {options}")


def test_family_traits_are_true(family: None) -> None:
    """The family declares exactly the traits switched on, and its runs have them: the structural ones in
    the built model, ``long_run`` as 100+ events per component, ``many_events_per_tick`` as bins shared by
    several components (and none without it)."""
    for params in family_members(full=False):
        spec = resolve_cell("traitmix", params, "sequential", {}, 1, seed=1).spec
        on = {t for t in TRAITS if params[t]}
        assert spec.traits() == on
        assert on & STRUCTURAL == _structural_traits(spec.build_model()), params
        traced = resolve_cell("traitmix", params, "sequential", {}, 1, seed=1, trace=True)
        _verdict, outcome = check_cell(traced)
        record = outcome.record
        nodes = [name for name in record.components if not name.endswith(".probe")]
        per_node = record.events / len(nodes)
        assert (per_node >= LONG_RUN_EVENTS) == params["long_run"], (params, per_node)
        bins: dict[tuple[int, int], set[str]] = {}
        for name, trace in (record.traces or {}).items():
            for when, priority, _event, _payload in trace:
                if priority > -129:  # events, not direct calls
                    bins.setdefault((when, priority), set()).add(name)
        shared = sum(len(v) > 1 for v in bins.values()) / len(bins)
        if params["many_events_per_tick"]:
            assert shared > 0.3, (params, shared)
        else:
            assert shared == 0, (params, shared)
