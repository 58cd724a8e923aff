"""Layer ``native``: the C++ engine's glue (the engine itself is the ``tickpar_native`` package in ``native/``).

Holds :mod:`~tickpar.native.record` (a Python sequential run that records the event DAG: per event
object and occurrence the operations, with clock-relative or stored ticks, the direct calls and the
work) and :mod:`~tickpar.native.engine` (a cell run on the native engine, its oracle record in
terms the Python golden run can be compared with, the options the engine does not take, and the
one-line error where the extension is not built) and :mod:`~tickpar.native.plugins` (native strategy plugins:
one ``.cpp`` file each, built against the engine's public C++ API, ``native/include/tickpar/strategy.hpp``).

May import: ``tickpar.builtin``, ``tickpar.pdes`` and every layer below them.
"""

from __future__ import annotations

from tickpar.native.engine import (
    BUILD_HINT,
    ENGINES,
    NATIVE_ONLY,
    NATIVE_STRATEGIES,
    NOT_TAKEN,
    RUNS_AS,
    available,
    calibrate,
    check_native_cell,
    native_golden,
    python_takes,
    replays_for,
    require,
    require_python,
    run_native,
)

__all__ = [
    "BUILD_HINT",
    "ENGINES",
    "NATIVE_ONLY",
    "NATIVE_STRATEGIES",
    "NOT_TAKEN",
    "RUNS_AS",
    "available",
    "calibrate",
    "check_native_cell",
    "native_golden",
    "python_takes",
    "replays_for",
    "require",
    "require_python",
    "run_native",
]
