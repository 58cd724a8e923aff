"""Layer ``plugins``: the plugin contracts and the registry that finds plugins.

Holds :mod:`~tickpar.plugins.contracts` (:class:`Workload`, :class:`Strategy`, :class:`Promise`,
:class:`StrategyResult`, the traits), :mod:`~tickpar.plugins.spec` (:class:`RunSpec`),
:mod:`~tickpar.plugins.registry` (discovery of files and entry points) and
:mod:`~tickpar.plugins.native_declaration` (a native strategy plugin's declaration as a strategy
class).  Plugin authors import
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
from tickpar.plugins.native_declaration import strategy_classes as _native_strategy_classes
from tickpar.plugins.registry import SOURCE_LOADERS as _SOURCE_LOADERS
from tickpar.plugins.spec import RunSpec
from tickpar.plugins.traits import LONG_RUN_EVENTS

_SOURCE_LOADERS[".cpp"] = _native_strategy_classes  # native strategy plugins (tickpar.plugins.native_declaration)

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
