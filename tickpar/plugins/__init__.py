"""Layer ``plugins``: the plugin contracts and the registry that finds plugins.

Holds :mod:`~tickpar.plugins.contracts` (:class:`Workload`, :class:`Strategy`, :class:`Promise`,
:class:`StrategyResult`, the traits), :mod:`~tickpar.plugins.spec` (:class:`RunSpec`) and
:mod:`~tickpar.plugins.registry` (discovery of files and entry points).  Plugin authors import
from here: ``from tickpar.plugins import Strategy, Workload, RunSpec``.

May import: ``tickpar.verify``, ``tickpar.kernel``, ``tickpar.host``.  Modules of this package
import each other by their own names (``tickpar.plugins.contracts``), never through this face.
"""

from tickpar.plugins.contracts import (
    BASELINE,
    NOT_EXACT,
    PROMISABLE,
    STAT_KEYS,
    TRAITS,
    DeadlockError,
    LookaheadError,
    Promise,
    Strategy,
    StrategyResult,
    UnsavedStateError,
    Workload,
    base_stats,
)
from tickpar.plugins.spec import RunSpec
from tickpar.plugins.traits import LONG_RUN_EVENTS

__all__ = [
    "BASELINE",
    "LONG_RUN_EVENTS",
    "NOT_EXACT",
    "PROMISABLE",
    "STAT_KEYS",
    "TRAITS",
    "DeadlockError",
    "LookaheadError",
    "Promise",
    "RunSpec",
    "Strategy",
    "StrategyResult",
    "UnsavedStateError",
    "Workload",
    "base_stats",
]
