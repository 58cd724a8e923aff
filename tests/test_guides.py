"""The plugin guides' examples are real plugins: load them and check them like any other."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tickpar.plugins.registry import REPO_ROOT, get_registry, plugin_files
from tickpar.runner import check_cell, resolve_cell

FAMILY = Path(__file__).parent / "plugins"


def _examples(guide: Path) -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.S)
    assert blocks, f"{guide} has no python example"
    return blocks


@pytest.fixture
def guide_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every python block of both guides as a plugin file, and the generated trait family beside them."""
    for kind in ("strategies", "workloads"):
        for i, block in enumerate(_examples(REPO_ROOT / kind / "README.md")):
            (tmp_path / f"guide_{kind}_{i}.py").write_text(block)
    monkeypatch.setenv("TICKPAR_PLUGINS", os.pathsep.join([str(tmp_path), str(FAMILY)]))
    get_registry(refresh=True)
    yield
    monkeypatch.delenv("TICKPAR_PLUGINS")
    get_registry(refresh=True)


def test_guide_plugins_are_discovered(guide_plugins: None) -> None:
    """Dropping the examples in a plugin folder registers them, with no other edit, and none is broken."""
    registry = get_registry()
    assert {"popexec-example", "batch-example"} <= set(registry.strategies)
    assert "pingpong-example" in registry.workloads
    assert registry.broken == {}


def test_guide_strategy_is_exact_on_every_workload(guide_plugins: None) -> None:
    """The example strategy (pop, then execute, one worker) matches sequential everywhere."""
    for workload in get_registry().workloads:
        verdict, _ = check_cell(resolve_cell(workload, {}, "popexec-example", {}, 1, seed=2))
        assert verdict.kind == "exact", (workload, verdict.reason)


#: Family members (tests/plugins/traitmix.py) where the batch example is exact, and where a zero-delay child
#: into another component or a direct call makes it only promise "exact or diverged (or causality)".
BATCH_MEMBERS = [
    {"many_events_per_tick": True, "long_run": True, "several_named_events": True, "stored_ticks": True},
    {"many_events_per_tick": True, "long_run": True, "zero_latency_links": True},
    {"many_events_per_tick": True, "long_run": True, "direct_calls": True, "stored_ticks": True},
    {"many_events_per_tick": True, "direct_calls": True, "callee": "private", "window": "narrow"},
]


@pytest.mark.parametrize("order", ["gem5", "canonical"])
def test_guide_batch_engine_keeps_its_promise(guide_plugins: None, order: str) -> None:
    """The worked batch engine is exact on the built-in workloads (many-event bins included) and keeps its
    trait-based promise on members of the generated family."""
    cells = [
        resolve_cell("multicore", {"requests_per_core": 250}, "batch-example", {}, 1, seed=2, order=order),
        resolve_cell("phold", {"granularity": 50}, "batch-example", {}, 1, seed=2, order=order),
        *(resolve_cell("traitmix", m, "batch-example", {}, 1, seed=2, order=order) for m in BATCH_MEMBERS),
    ]
    strategy = get_registry().strategy("batch-example")()
    for cell in cells:
        promise = strategy.promise(cell.spec, 1, cell.options)
        verdict, outcome = check_cell(cell)
        assert promise.kept(verdict.kind), (cell.spec.params, promise, verdict.reason)
        if cell.spec.workload != "traitmix":
            assert verdict.kind == "exact" and outcome.stats["mean_events_per_batch"] > 1.0


def test_guide_workload_runs_under_sequential(guide_plugins: None) -> None:
    """The example workload builds, runs and is deterministic."""
    verdict, outcome = check_cell(resolve_cell("pingpong-example", {}, "sequential", {}, 1, seed=2))
    assert verdict.kind == "exact"
    assert outcome.record.events > 100


#: The contract headings every strategy module's docstring opens its paragraphs with, in this order.
CONTRACT_LABELS = ("Sync:", "Lookahead:", "Ownership:", "Determinism:", "Promise:")


def test_every_strategy_file_states_its_contract() -> None:
    """Every strategy file (or package ``__init__.py``) the registry's folder scan finds has the five contract
    labels, each at the start of a line of its module docstring, in order."""
    strategies = REPO_ROOT / "strategies"
    files = [p for p in plugin_files() if strategies in (p.parent, p.parent.parent)]
    assert files, "the folder scan found no strategy file"
    for path in files:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        starts = [re.search(rf"^{re.escape(label)}", doc, flags=re.M) for label in CONTRACT_LABELS]
        missing = [label for label, m in zip(CONTRACT_LABELS, starts, strict=True) if m is None]
        assert not missing, f"{path.name}: docstring lacks {', '.join(missing)}"
        positions = [m.start() for m in starts if m is not None]
        assert positions == sorted(positions), f"{path.name}: contract labels out of order"
