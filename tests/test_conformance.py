"""Every registered strategy x every registered workload x workers {1, 2, 4} x both orders.

Each cell is checked by the oracle against the sequential run of the same spec
and must get the verdict the strategy promises for it
(``Strategy.expected_verdict``).  Where a strategy promises nothing
(``None``), the cell must still end in a named verdict other than ``crash``
or ``timeout``.  A new strategy or workload file is picked up with no edit
here (ROSS's ROSS_TEST_SCHEDULERS, in pytest).
"""

from __future__ import annotations

import pytest

from tickpar.kernel.eventq import ORDERS
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, resolve_cell
from tickpar.verify.oracle import VERDICTS

WORKERS = (1, 2, 4)


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


@pytest.mark.parametrize(("strategy", "workload", "workers", "order"), _cells())
def test_cell_gets_promised_verdict(strategy: str, workload: str, workers: int, order: str) -> None:
    """The oracle's verdict equals the strategy's promise for the cell (default params and options)."""
    cell = resolve_cell(workload, {}, strategy, {}, workers, seed=3, order=order)
    cls = get_registry().strategy(strategy)
    expected = cls().expected_verdict(cell.spec, workers, cell.options)
    verdict, _outcome = check_cell(cell)
    assert verdict.kind in VERDICTS
    if expected is None:
        assert verdict.kind not in {"crash", "timeout"}, verdict.reason
    else:
        assert verdict.kind == expected, verdict.reason


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("workload", sorted(get_registry().workloads))
def test_quantum_beyond_the_lookahead(workload: str, order: str) -> None:
    """``quantum`` at 10x the lookahead (relaxed): its promise if any, a named verdict, and errors against golden."""
    cell = resolve_cell(workload, {}, "quantum", {"quantum_ratio": 10}, 2, seed=3, order=order)
    expected = get_registry().strategy("quantum")().expected_verdict(cell.spec, 2, cell.options)
    verdict, outcome = check_cell(cell)
    assert verdict.kind == expected if expected else verdict.kind not in {"crash", "timeout"}, verdict.reason
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
    from tickpar.kernel.params import resolve
    from tickpar.plugins import TRAITS, RunSpec

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
