"""Bounds and predictions: how fast a strategy could be on a workload's event DAG, and how fast it would be.

:mod:`~tickpar.perf.predict.dag` (the event DAG of a sequential run), :mod:`~tickpar.perf.predict.costs`
(cost presets, the sync cost), :mod:`~tickpar.perf.predict.calibrate` (the Python microbenchmarks),
:mod:`~tickpar.perf.predict.bounds` (structural bounds and their table),
:mod:`~tickpar.perf.predict.strategy_times` (each strategy's time under a preset),
:mod:`~tickpar.perf.predict.tables` (shape records, fits, prediction table), :mod:`~tickpar.perf.predict.handoff`
(the GIL hand-off per strategy) and :mod:`~tickpar.perf.predict.prediction` (the ``here`` calibration record
and the command line, ``python -m tickpar.perf.predict.prediction``).

Imports nothing of :mod:`tickpar.perf.timing` (an import-linter contract): predicting never times a cell.
"""
