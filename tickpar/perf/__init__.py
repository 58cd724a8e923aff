"""Layer ``perf``: how fast, and how fast it could be.

Holds :mod:`~tickpar.perf.timing` (pyperf timing of cells in fresh processes, contention probes,
the fallback record of a job that died), :mod:`~tickpar.perf.bounds` (the event DAG of a sequential
run and the speedup bounds it allows) and :mod:`~tickpar.perf.prediction` (the cost presets and
the predicted scaling).

May import: ``tickpar.cellargs``, ``tickpar.runner`` and every layer below them.
"""
