"""Layer ``report``: the HTML/PDF report drawn from the pipeline's tables.

Holds :mod:`~tickpar.report.render` (the pages, :data:`~tickpar.report.render.PAGES`, the PDF),
:mod:`~tickpar.report.answer` (the answer page's table and findings, first in the report),
:mod:`~tickpar.report.gem5_cost` (the gem5-like cost per event, defined once),
:mod:`~tickpar.report.model_error` (the model's error, computed once),
:mod:`~tickpar.report.findings` and :mod:`~tickpar.report.environment` (their pages),
:mod:`~tickpar.report.appendix` (timing diagnostics and defects, last),
:mod:`~tickpar.report.speed` (speedup, bounds and break-even figures),
:mod:`~tickpar.report.failures` (the anatomy pages: shrunk cells and timelines),
:mod:`~tickpar.report.accuracy` (accuracy against speed) and :mod:`~tickpar.report.engine_bench`
(the engine benchmark against SimPy, desimpy, salabim and heapq, on the environment page).

May import: ``tickpar.pipeline`` and every layer below it.
"""
