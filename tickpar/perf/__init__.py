"""Layer ``perf``: how fast, and how fast it could be.

Timing (pyperf timing of cells in fresh processes): :mod:`~tickpar.perf.timing` (front ends; re-exports
the rest), :mod:`~tickpar.perf.timing_driver` (interleaved rounds, re-times, records),
:mod:`~tickpar.perf.timing_rules` (contended, unstable and slow rounds), :mod:`~tickpar.perf.timing_worker`
(the pyperf script) and :mod:`~tickpar.perf.probe` (CPU availability).

Bounds and prediction: :mod:`~tickpar.perf.dag` (the event DAG of a sequential run),
:mod:`~tickpar.perf.costs` (cost presets, the sync cost), :mod:`~tickpar.perf.calibrate` (the Python
microbenchmarks), :mod:`~tickpar.perf.bounds` (structural bounds and their table),
:mod:`~tickpar.perf.model` (each strategy's time), :mod:`~tickpar.perf.tables` (shape records, fits,
prediction table), :mod:`~tickpar.perf.handoff` (the GIL hand-off per strategy) and
:mod:`~tickpar.perf.prediction` (the ``here`` calibration record and the command line).  ``bounds``,
``prediction`` and ``timing`` re-export the names of the modules below them that callers use.

May import: ``tickpar.cellargs``, ``tickpar.runner`` and every layer below them.
"""
