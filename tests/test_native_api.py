"""The native engine's public C++ API (native/include/tickpar/), exercised by a plugin of the tests' own:
messages between workers in rounds (Mailboxes, SpinBarrier), hand-off slots (HandoffSlot), the option readers,
stats and stat lists, and the crew (tests/data/native/api_probe.cpp).  The built-ins' registration:
tests/test_native_plugins.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("tickpar_native")

import tickpar.plugins.registry
from tickpar.runner import execute, resolve_cell

PROBE = Path(__file__).parent / "data" / "native" / "api_probe.cpp"


@pytest.fixture(scope="module")
def probe_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("api-probe")
    shutil.copy(PROBE, folder / PROBE.name)
    return folder


@pytest.fixture
def probe(probe_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TICKPAR_PLUGINS", str(probe_folder))
    tickpar.plugins.registry.get_registry(refresh=True)
    yield probe_folder
    monkeypatch.delenv("TICKPAR_PLUGINS")
    tickpar.plugins.registry.get_registry(refresh=True)


@pytest.mark.parametrize("workers", [1, 3])
def test_messages_barrier_slots_options_and_stats_reach_the_record(probe: Path, workers: int) -> None:
    options = {"rounds": 4, "scale": 2.25, "flag": True, "label": "yz"}
    cell = resolve_cell("phold", {}, "api-probe", options, workers, 1, "gem5", "none", engine="native")
    outcome = execute(cell)
    assert outcome.record.failure is None
    stats = outcome.stats
    # every worker sends w + 1 to every worker in each of 4 rounds: each receives 4 * (1 + ... + P)
    per_worker = 4 * workers * (workers + 1) // 2
    assert stats["received_per_worker"] == [per_worker] * workers
    assert stats["messages_received"] == per_worker * workers
    # worker w > 0 answers generation 1 with 100 + w
    assert stats["handed"] == sum(100 + w for w in range(1, workers))
    assert (stats["scale"], stats["flag"], stats["label_length"]) == (2.25, 1.0, 2.0)
    assert stats["loop_s"] > 0 and outcome.record.events > 0


def test_the_option_defaults_are_passed_when_a_cell_gives_none(probe: Path) -> None:
    cell = resolve_cell("phold", {}, "api-probe", {}, 2, 1, "gem5", "none", engine="native")
    stats = execute(cell).stats
    assert (stats["scale"], stats["flag"], stats["label_length"]) == (1.5, 0.0, 1.0)
    assert stats["received_per_worker"] == [3 * 3, 3 * 3]  # rounds=3 by default, 1 + 2 each round


def test_a_native_only_strategy_runs_natively_without_being_told(probe: Path) -> None:
    """``--engine`` left out (``engine=None``): python where the strategy has it, else its one engine."""
    assert resolve_cell("phold", {}, "api-probe", {}, 1, 1, engine=None).engine == "native"
    assert resolve_cell("phold", {}, "sequential", {}, 1, 1, engine=None).engine == "python"
