"""Layer ``report``: the HTML/PDF report drawn from the pipeline's tables.

Holds :mod:`~tickpar.report.render` (the pages, :data:`~tickpar.report.render.PAGES`, findings,
environment, the PDF), :mod:`~tickpar.report.speed` (speedup, bounds and break-even figures),
:mod:`~tickpar.report.failures` (the anatomy pages: shrunk cells and timelines),
:mod:`~tickpar.report.accuracy` (accuracy against speed) and :mod:`~tickpar.report.engine_bench`
(the engine benchmark against SimPy, desimpy, salabim and heapq, and the speed goals, on the
environment page).

May import: ``tickpar.pipeline`` and every layer below it.
"""
