"""Worker threads pinned to cores of their own for a parallel run (tickpar.host.affinity)."""

from __future__ import annotations

import os
import threading

import pytest

from tickpar.host import affinity
from tickpar.host.affinity import PIN_ENV, gil_disabled, pinned, pinning_requested, worker_cpus

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no thread affinity here")


def test_worker_cpus_are_the_allowed_cpus_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIN_ENV, "1")
    allowed = sorted(os.sched_getaffinity(0))
    assert worker_cpus(1) is None  # one worker: nothing to keep apart
    assert worker_cpus(len(allowed) + 1) is None  # fewer cores than threads: the scheduler shares them
    if len(allowed) >= 2:
        assert worker_cpus(2) == allowed[:2]


def test_pinning_follows_the_gil_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset: pinned where the GIL is off (threads that never sleep), not under the GIL; 0 and 1 decide."""
    monkeypatch.delenv(PIN_ENV, raising=False)
    assert pinning_requested() is gil_disabled()
    monkeypatch.setattr(affinity.sys, "_is_gil_enabled", lambda: False, raising=False)
    assert pinning_requested() is True
    monkeypatch.setattr(affinity.sys, "_is_gil_enabled", lambda: True, raising=False)
    assert pinning_requested() is False and worker_cpus(2) is None
    monkeypatch.setattr(affinity.sys, "_is_gil_enabled", lambda: False, raising=False)
    monkeypatch.setenv(PIN_ENV, "0")
    assert worker_cpus(2) is None
    monkeypatch.setattr(affinity.sys, "_is_gil_enabled", lambda: True, raising=False)
    monkeypatch.setenv(PIN_ENV, "1")
    assert pinning_requested() is True


def test_a_bad_pinning_switch_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIN_ENV, "yes")
    with pytest.raises(ValueError, match=r"TICKPAR_PIN_THREADS='yes' is not allowed: use 1"):
        worker_cpus(2)


def test_pinned_moves_the_calling_thread_only_and_restores_it() -> None:
    mask = os.sched_getaffinity(0)
    cpu = sorted(mask)[-1]
    seen: dict[str, set[int]] = {}

    def other() -> None:
        seen["other"] = os.sched_getaffinity(0)

    with pinned([cpu], 0):
        seen["inside"] = os.sched_getaffinity(0)
        t = threading.Thread(target=other)  # a thread started elsewhere keeps the process's mask...
        t.start()
        t.join()
    assert seen["inside"] == {cpu}
    assert os.sched_getaffinity(0) == mask  # ...and the caller gets its own back
    with pinned(None, 0):
        assert os.sched_getaffinity(0) == mask


@pytest.mark.parametrize(
    ("strategy", "options"),
    [
        ("tick-barrier", {"executor": "threads"}),
        ("conservative", {"backend": "threads", "sync": "window"}),
        ("split", {"executor": "threads", "lock_key": "component", "checks": False}),
    ],
)
def test_a_threaded_run_leaves_the_callers_mask_alone(
    strategy: str, options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PIN_ENV, "1")
    from tickpar.plugins.registry import get_registry
    from tickpar.runner import resolve_cell

    mask = os.sched_getaffinity(0)
    cell = resolve_cell("phold", {"lps": 4, "end_tick": 400}, strategy, options, 2, 1, "canonical")
    get_registry().strategy(strategy)().run(cell.spec, 2, dict(cell.options))
    assert os.sched_getaffinity(0) == mask
