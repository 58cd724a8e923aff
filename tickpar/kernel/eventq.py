"""The kernel's event queue API in one import: gem5's queue, its events, and its two subclasses for engines.

:class:`EventQueue` (gem5's ``src/sim/eventq.{hh,cc}``, its semantics described in
:mod:`tickpar.kernel.gem5queue`), :class:`Event` and the rest of :mod:`tickpar.kernel.events`,
:class:`BatchQueue`/:class:`Deferred` (:mod:`tickpar.kernel.batchq`: deferred operations for engines
that run a batch in parallel) and :class:`JournalQueue` (:mod:`tickpar.kernel.journalq`: undo for
strategies that roll back).  These names lived in this module before it was split by job; they are all
re-exported here, and ``from tickpar.kernel.eventq import ...`` stays the way to import them.
:func:`tickpar.kernel.kernel_build` reads this module's file to tell the compiled build from the pure one.
"""

from __future__ import annotations

from tickpar.kernel.batchq import (  # re-exported (module docstring)
    BatchQueue,
    Deferred,
)
from tickpar.kernel.eventkeys import canonical_source
from tickpar.kernel.events import (  # re-exported (module docstring)
    Entry,
    Event,
    EventNotFound,
    Op,
    Priority,
    SchedulingError,
    Violation,
    entry_live,
    op_key,
    op_live,
)
from tickpar.kernel.gem5queue import (  # re-exported (module docstring)
    ORDERS,
    EventQueue,
)
from tickpar.kernel.journalq import (  # re-exported (module docstring)
    JournalQueue,
    Undo,
)

__all__ = [
    "ORDERS",
    "BatchQueue",
    "Deferred",
    "Entry",
    "Event",
    "EventNotFound",
    "EventQueue",
    "JournalQueue",
    "Op",
    "Priority",
    "SchedulingError",
    "Undo",
    "Violation",
    "canonical_source",
    "entry_live",
    "op_key",
    "op_live",
]

