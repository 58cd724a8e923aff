"""tickpar: which ways of running a gem5-style event loop in parallel are correct, and how fast.

The layers, bottom to top (each imports only those below it; import-linter holds this, see
``[tool.importlinter]`` in pyproject.toml):

* :mod:`tickpar.host`: the machine and processes (paths, environment, process groups);
* :mod:`tickpar.kernel`: gem5's event queue and the model API;
* :mod:`tickpar.verify`: the oracle (records, verdicts) and failure anatomy;
* :mod:`tickpar.plugins`: the plugin contracts and the registry;
* :mod:`tickpar.pdes`: the partitioned engines' machinery (LPs, sync, transports, launch);
* :mod:`tickpar.runner`: one cell, run and checked;
* :mod:`tickpar.cellargs`: a cell as command-line options;
* :mod:`tickpar.perf`: timing, bounds, prediction;
* :mod:`tickpar.pipeline`: sweep, aggregation, accuracy, shrinking;
* :mod:`tickpar.report`: the report;
* :mod:`tickpar.cli`: the ``tickpar`` command.

Modules moved into the layers in 0.2 (``tickpar.oracle`` is now ``tickpar.verify.oracle``, ...):
importing an old name fails with one line that names the new one.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

# numpy's OpenBLAS starts a thread per core that spins for a while after start-up, beside a timed
# cell's own threads, and slowed a native cell's first values (docs/measurements/2026-12-03-native-timing.md).
# No cell needs a threaded BLAS, so tickpar asks for one BLAS thread before anything imports numpy
# (a value the user set wins).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.2.0"

#: Old module -> where it lives now (the layers of 0.2).
MOVED: dict[str, str] = {
    "tickpar.envinfo": "tickpar.host.envinfo",
    "tickpar.procgroup": "tickpar.host.procgroup",
    "tickpar.orchestrator": "tickpar.host.orchestrator",
    "tickpar.progress": "tickpar.host.progress",
    "tickpar.eventkeys": "tickpar.kernel.eventkeys",
    "tickpar.eventq": "tickpar.kernel.eventq",
    "tickpar.digests": "tickpar.kernel.digests",
    "tickpar.model": "tickpar.kernel.model",
    "tickpar.params": "tickpar.kernel.params",
    "tickpar.work": "tickpar.kernel.work",
    "tickpar.simloop": "tickpar.kernel.simloop",
    "tickpar.oracle": "tickpar.verify.oracle",
    "tickpar.anatomy": "tickpar.verify.anatomy",
    "tickpar.registry": "tickpar.plugins.registry",
    "tickpar.timing": "tickpar.perf.timing",
    "tickpar.bounds": "tickpar.perf.bounds",
    "tickpar.prediction": "tickpar.perf.prediction",
    "tickpar.sweep": "tickpar.pipeline.sweep",
    "tickpar.aggregate": "tickpar.pipeline.aggregate",
    "tickpar.accuracy": "tickpar.pipeline.accuracy",
    "tickpar.shrink": "tickpar.pipeline.shrink",
    "tickpar.report_speed": "tickpar.report.speed",
    "tickpar.report_failures": "tickpar.report.failures",
    "tickpar.report_accuracy": "tickpar.report.accuracy",
}


class _MovedModuleHint(importlib.abc.MetaPathFinder):
    """Turns an import of a module that moved into a one-line error naming its new place."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        new = MOVED.get(fullname)
        if new is not None:
            raise ModuleNotFoundError(f"{fullname} moved to {new} in tickpar 0.2: import it from there", name=fullname)
        return None


if not any(isinstance(f, _MovedModuleHint) for f in sys.meta_path):
    sys.meta_path.append(_MovedModuleHint())
