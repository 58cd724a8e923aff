"""Helpers shared by tests: round-figure calibrations (Python and native) and a small DAG."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tickpar.kernel.eventq import canonical_source

if TYPE_CHECKING:  # conftest imports this module: nothing here may need pandas (the free-threaded venv)
    from tickpar.perf.predict.dag import Dag

#: A fixed native-engine calibration (``tickpar calibrate``'s format) for the ``cxx`` preset in tests:
#: deterministic figures, and no measurement per test.
CXX_CALIBRATION = {
    "format": "tickpar.calibration/1", "mutex_ns": 20.0, "barrier_ns": 500.0, "message_ns": 150.0, "event_ns": 80.0,
    "tb_batch_ns": 5000.0, "tb_event_ns": 50.0, "pingpong_ns": 100.0, "heap_ns": 40.0,
    "machine": {"cpu": "test fixture", "cores": 2},
    "date": "2026-01-01T00:00:00+0000",
}  # fmt: skip
#: A calibration record as `calibrate` writes it, with round figures (no measuring in tests).
CALIBRATION = {
    "cores": 2,
    "o_event_s": 1e-6,
    "work": {"gil-release": [1e-6, 1e-6], "gil-hold": [0.0, 1e-6]},
    "sync_model": {"threads": [5e-5, 1e-5], "processes": [4e-5, 1e-5], "mpi": [4e-5, 1e-5]},
    "o_msg_s": {"threads": 5e-7, "processes": 2e-6, "mpi": 2e-6},
}


def independent_dag(n: int, engine: float, work_us: float) -> Dag:
    """n independent events of n components in one tick, each ``engine`` s of engine cost and ``work_us`` of work."""
    from tickpar.perf.predict.dag import Dag

    records = [(c, 5, 0, canonical_source(c, 1), 1, 1, engine, work_us, 1) for c in range(n)]
    lookahead = [(a, b, 10) for a in range(n) for b in range(n) if a != b]
    return Dag.from_records(records, n, lookahead)
