"""Layer ``perf``: how fast, and how fast it could be; two subpackages, one job each.

* :mod:`tickpar.perf.timing`: pyperf timing of cells in fresh processes (interleaved rounds, re-times,
  the contended/unstable/slow rules, the pyperf worker script).
* :mod:`tickpar.perf.predict`: the event DAG of a sequential run, cost presets, structural bounds, each
  strategy's modelled time, and the prediction tables.

The two are independent (an import-linter contract); both use :mod:`tickpar.host.probe`.

May import: ``tickpar.cellargs``, ``tickpar.runner`` and every layer below them.
"""
