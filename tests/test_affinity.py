"""Worker threads pinned to cores of their own for a parallel run (tickpar.host.affinity)."""

from __future__ import annotations

import contextlib
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


def test_pinning_is_the_default_whatever_the_gil(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, empty or 1: pinned, with the GIL on or off (tickpar.host.affinity says why); 0: never."""
    for gil_on in (True, False):
        monkeypatch.setattr(affinity.sys, "_is_gil_enabled", lambda on=gil_on: on, raising=False)
        assert gil_disabled() is not gil_on
        for value, pins in (("", True), (" ", True), ("1", True), ("0", False)):
            monkeypatch.setenv(PIN_ENV, value)
            assert pinning_requested() is pins, (gil_on, value)
            if len(os.sched_getaffinity(0)) >= 2:
                assert (worker_cpus(2) is not None) is pins
        monkeypatch.delenv(PIN_ENV, raising=False)
        assert pinning_requested() is True


def test_the_gil_handoff_calibration_pins_its_threads_as_the_strategies_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both threads of ``gil_handoff`` run on the CPUs ``worker_cpus(2)`` gives; unpinned with ``0``."""
    from tickpar.perf.predict import calibrate

    if len(os.sched_getaffinity(0)) < 2 or gil_disabled():
        pytest.skip("needs 2 CPUs and the GIL")
    seen: list[tuple[int, frozenset[int]]] = []
    real = affinity.pinned

    @contextlib.contextmanager
    def spying(cpus: list[int] | None, worker: int):  # type: ignore[no-untyped-def]
        with real(cpus, worker):
            seen.append((worker, frozenset(os.sched_getaffinity(0))))
            yield

    monkeypatch.setattr(affinity, "pinned", spying)
    monkeypatch.setattr(calibrate, "HANDOFF_OBJECTS", 1000)
    for value, expect in (("1", worker_cpus), ("0", lambda n: None)):
        monkeypatch.setenv(PIN_ENV, value)
        seen.clear()
        out = calibrate.gil_handoff(calls_us=(3.0,), budget_us=2_000.0, tries=1)
        assert len(out["excess_s"]) == 1
        cpus = expect(2)
        mask = frozenset(os.sched_getaffinity(0))
        assert {w for w, _ in seen} == {0, 1}
        for worker, where in seen:
            assert where == (frozenset({cpus[worker]}) if cpus else mask), (value, worker, where)


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
