"""Layer ``pipeline``: what runs over many cells, for the Snakefile.

Holds :mod:`~tickpar.pipeline.sweep` (config validation and expansion into cells, job records),
:mod:`~tickpar.pipeline.aggregate` (``summary.csv``: verdicts, timings, speedups, bounds),
:mod:`~tickpar.pipeline.accuracy` (``accuracy.csv`` for relaxed strategies) and
:mod:`~tickpar.pipeline.shrink` (delta-debugging a failing cell to the smallest that still fails).

May import: ``tickpar.perf`` and every layer below it.
"""
