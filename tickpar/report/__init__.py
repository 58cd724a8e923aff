"""Layer ``report``: the HTML/PDF report drawn from the pipeline's tables.

Holds :mod:`~tickpar.report.render` (the pages, :data:`~tickpar.report.render.PAGES`, findings,
environment, the PDF), :mod:`~tickpar.report.speed` (speedup, bounds and break-even figures),
:mod:`~tickpar.report.failures` (the anatomy pages: shrunk cells and timelines) and
:mod:`~tickpar.report.accuracy` (accuracy against speed).

May import: ``tickpar.pipeline`` and every layer below it.
"""
