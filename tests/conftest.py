"""Shared fixtures: a fresh event queue, a log, and a plugin environment isolated from the caller's.

Hypothesis keeps its files (example database, constants cache) in a temporary folder,
not in the repository, so the suite writes nothing outside temporary directories.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import CXX_CALIBRATION  # tests/helpers.py (this folder is on sys.path for conftest)
from hypothesis.configuration import set_hypothesis_home_dir

import tickpar.plugins.registry
from tickpar.kernel.eventq import EventQueue

_HYPOTHESIS_HOME = Path(tempfile.mkdtemp(prefix="tickpar-hypothesis-"))
set_hypothesis_home_dir(_HYPOTHESIS_HOME)

_CALIBRATION_FILE = _HYPOTHESIS_HOME / "calibration.json"
_CALIBRATION_FILE.write_text(json.dumps(CXX_CALIBRATION))
os.environ.setdefault("TICKPAR_CALIBRATION", str(_CALIBRATION_FILE))


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HYPOTHESIS_HOME, ignore_errors=True)


@pytest.fixture
def log() -> list[object]:
    """A list that events append to, in the order they run."""
    return []


@pytest.fixture
def queue() -> EventQueue:
    """A fresh gem5-order queue with assertions on, ``cur_tick`` 0."""
    return EventQueue()


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No TICKPAR_PLUGINS / TICKPAR_BLOCKED from outside, and the process-wide registry restored afterwards."""
    monkeypatch.delenv("TICKPAR_PLUGINS", raising=False)
    monkeypatch.delenv("TICKPAR_BLOCKED", raising=False)
    # The very registry object is put back (a re-discovery would be another object, and slower).
    saved = tickpar.plugins.registry.swap_registry(None)
    tickpar.plugins.registry.swap_registry(saved)
    try:
        yield monkeypatch
    finally:
        tickpar.plugins.registry.swap_registry(saved)
