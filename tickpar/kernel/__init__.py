"""Layer ``kernel``: gem5's event queue and the model API that workloads are written in.

Holds :mod:`~tickpar.kernel.eventq` (the queue, gem5's semantics), :mod:`~tickpar.kernel.eventkeys`
(the heap keys and tie encodings), :mod:`~tickpar.kernel.model` (components, links, events,
handlers' context), :mod:`~tickpar.kernel.statesave` (saving and restoring component state for
strategies that roll back), :mod:`~tickpar.kernel.digests` (the per-component running digests),
:mod:`~tickpar.kernel.params` (declared parameters and their one-line errors),
:mod:`~tickpar.kernel.work` (the synthetic work models) and :mod:`~tickpar.kernel.simloop`
(the single-queue set-up and ``simulate()`` limit every strategy shares); :mod:`~tickpar.kernel._interpreted`
holds what stays interpreted in the compiled build (:func:`kernel_build` says which build runs).

May import: nothing of tickpar.  The per-event hot path lives here: measure ``bench/engine.py``
before and after a change.
"""

from __future__ import annotations

__all__ = ["kernel_build"]


def kernel_build() -> str:
    """Which build of the kernel this process runs: ``"compiled"`` (mypyc, see setup.py) or ``"pure"``.

    Read from the event queue module itself (an extension module or Python source), so it cannot
    disagree with what runs.  ``tickpar run`` records it (field ``kernel``) and ``tickpar list`` shows it.
    """
    from importlib.machinery import EXTENSION_SUFFIXES

    from tickpar.kernel import eventq

    return "compiled" if (eventq.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES)) else "pure"
