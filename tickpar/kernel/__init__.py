"""Layer ``kernel``: gem5's event queue and the model API that workloads are written in.

Holds :mod:`~tickpar.kernel.eventq` (the queue, gem5's semantics), :mod:`~tickpar.kernel.eventkeys`
(the heap keys and tie encodings), :mod:`~tickpar.kernel.model` (components, links, events,
handlers' context), :mod:`~tickpar.kernel.statesave` (saving and restoring component state for
engines that roll back), :mod:`~tickpar.kernel.digests` (the per-component running digests),
:mod:`~tickpar.kernel.params` (declared parameters and their one-line errors),
:mod:`~tickpar.kernel.work` (the synthetic work models) and :mod:`~tickpar.kernel.simloop`
(the single-queue set-up and ``simulate()`` limit every strategy shares).

May import: nothing of tickpar.  The per-event hot path lives here: measure ``bench/engine.py``
before and after a change.
"""
