"""The options every partitioned strategy (conservative, optimistic, quantum) declares: one declaration each.

:func:`placement_options` gives ``backend`` (each strategy's own backends and help), ``partition`` and
``partition_weights``; :func:`process_options` gives ``start_method`` and ``stall_s``.  A strategy spreads
them into its ``options`` where they belong in its list.
"""

from __future__ import annotations

from collections.abc import Sequence

from tickpar.kernel.params import Param
from tickpar.pdes.launch import START_METHODS
from tickpar.pdes.partition import METHODS
from tickpar.pdes.plan import PARTITION_WEIGHTS_OPTION

__all__ = ["placement_options", "process_options"]


def placement_options(backends: Sequence[str], backend_help: str) -> dict[str, Param]:
    """``backend`` (one of ``backends``, ``threads`` by default), ``partition`` and ``partition_weights``."""
    return {
        "backend": Param(str, "threads", backend_help, choices=tuple(backends)),
        "partition": Param(str, "auto", "auto (graph partitioner), roundrobin or linear (by component id)",
                           choices=METHODS),
        "partition_weights": PARTITION_WEIGHTS_OPTION,
    }  # fmt: skip


def process_options(waiting: str) -> dict[str, Param]:
    """``start_method`` (processes backend) and ``stall_s``: ``waiting`` says who waits for what, e.g. "an LP
    waiting longer than this for a packet"."""
    return {
        "start_method": Param(str, "fork", "backend=processes: multiprocessing start method", choices=START_METHODS),
        "stall_s": Param(float, 120.0, f"{waiting} is a deadlock (0: no limit)", min=0.0, max=86400.0),
    }
