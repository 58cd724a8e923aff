"""The plugin guides' examples are real plugins: load them and check them like any other."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tickpar.plugins.registry import REPO_ROOT, get_registry, plugin_files
from tickpar.runner import check_cell, resolve_cell


def _example(guide: Path) -> str:
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.S)
    assert blocks, f"{guide} has no python example"
    return blocks[0]


@pytest.fixture
def guide_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for kind in ("strategies", "workloads"):
        (tmp_path / f"guide_{kind}.py").write_text(_example(REPO_ROOT / kind / "README.md"))
    monkeypatch.setenv("TICKPAR_PLUGINS", str(tmp_path))
    get_registry(refresh=True)
    yield
    monkeypatch.delenv("TICKPAR_PLUGINS")
    get_registry(refresh=True)


def test_guide_plugins_are_discovered(guide_plugins: None) -> None:
    """Dropping the two examples in a plugin folder registers them, with no other edit."""
    registry = get_registry()
    assert "popexec-example" in registry.strategies
    assert "pingpong-example" in registry.workloads


def test_guide_strategy_is_exact_on_every_workload(guide_plugins: None) -> None:
    """The example strategy (pop, then execute, one worker) matches sequential everywhere."""
    for workload in get_registry().workloads:
        verdict, _ = check_cell(resolve_cell(workload, {}, "popexec-example", {}, 1, seed=2))
        assert verdict.kind == "exact", (workload, verdict.reason)


def test_guide_workload_runs_under_sequential(guide_plugins: None) -> None:
    """The example workload builds, runs and is deterministic."""
    verdict, outcome = check_cell(resolve_cell("pingpong-example", {}, "sequential", {}, 1, seed=2))
    assert verdict.kind == "exact"
    assert outcome.record.events > 100


#: The contract headings every strategy module's docstring opens its paragraphs with, in this order.
CONTRACT_LABELS = ("Sync:", "Lookahead:", "Ownership:", "Determinism:", "Promise:")


def test_every_strategy_file_states_its_contract() -> None:
    """Every strategy file the registry's folder scan finds has the five contract labels, each at the
    start of a line of its module docstring, in order."""
    files = [p for p in plugin_files() if p.parent.name == "strategies"]
    assert files, "the folder scan found no strategy file"
    for path in files:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        starts = [re.search(rf"^{re.escape(label)}", doc, flags=re.M) for label in CONTRACT_LABELS]
        missing = [label for label, m in zip(CONTRACT_LABELS, starts, strict=True) if m is None]
        assert not missing, f"{path.name}: docstring lacks {', '.join(missing)}"
        positions = [m.start() for m in starts if m is not None]
        assert positions == sorted(positions), f"{path.name}: contract labels out of order"
