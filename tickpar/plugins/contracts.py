"""The plugin contracts: :class:`Workload` and :class:`Strategy`, and what passes between them.

Lifecycle of one run (``tickpar run``/``check`` and the pipeline do exactly this):

1. The CLI resolves the workload's parameters and the strategy's options
   against their declared :class:`~tickpar.kernel.params.Param` tables, then calls
   :meth:`Strategy.validate` for cross-checks (bad input -> one-line
   :class:`~tickpar.kernel.params.ParamError`).
2. It builds a :class:`RunSpec` (workload, params, seed, order, work mode,
   trace): everything needed to rebuild the model in any process.
3. :meth:`Strategy.run` gets the spec, the worker count and the options.  It
   builds the model with :meth:`RunSpec.build_model` (once, or once per
   process/rank for its own partition), binds components to queues, calls
   ``model.start()``, executes, and returns a :class:`StrategyResult`: the
   oracle record (:func:`tickpar.verify.oracle.collect`/``merge``) and its statistics.
4. The runner adds the workload's declared statistics to the record
   (:meth:`RunSpec.statistics`, from :meth:`Workload.stats`), and the oracle
   compares the record with the sequential run of the same spec: a verdict
   from the digests, and relative errors of the final tick, the event count
   and each statistic (:func:`tickpar.verify.oracle.errors`).
5. ``tickpar check`` judges the verdict against :meth:`Strategy.promise`,
   decided before the run from the strategy's contract and the workload's
   traits (:meth:`RunSpec.traits`): :meth:`Promise.kept`, exit status 3 when
   broken.

A workload's ``build()`` or ``stats()`` that raises is the plugin's bug, not a
verdict: :class:`~tickpar.plugins.registry.PluginCodeError`, one line naming
its file and line (bad input, exit status 2).

A strategy may raise :class:`~tickpar.kernel.eventq.SchedulingError` (verdict
``causality``), :class:`DeadlockError` (``deadlock``) or anything else
(``crash``); the runner turns each into that cell's verdict.  A strategy that
sets ``err.partial`` (an :class:`~tickpar.verify.oracle.OracleRecord` of what it
processed) on a ``SchedulingError`` gets those counts in the failure record.
Given a non-exact verdict, :meth:`Strategy.anatomy` may say how it came about
(:mod:`tickpar.verify.anatomy` falls back on the record alone).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tickpar.kernel.model import Model
from tickpar.kernel.params import Param, ParamError
from tickpar.plugins.traits import TRAITS
from tickpar.verify.oracle import OracleRecord, Verdict

if TYPE_CHECKING:  # only for annotations: the spec module imports this one
    from tickpar.plugins.spec import RunSpec

__all__ = [
    "BASELINE",
    "NOT_EXACT",
    "PROMISABLE",
    "STAT_KEYS",
    "TRAITS",
    "DeadlockError",
    "LookaheadError",
    "Promise",
    "Strategy",
    "StrategyResult",
    "UnsavedStateError",
    "Workload",
    "base_stats",
]


#: The strategy every result is compared with and every speedup is relative to.
BASELINE = "sequential"


class DeadlockError(RuntimeError):
    """The strategy stopped with events left and no worker able to make progress."""


class LookaheadError(RuntimeError):
    """An event crossed logical processes with less latency than the lookahead (verdict ``causality``)."""


class UnsavedStateError(RuntimeError):
    """A handler changed state that its component's saved state leaves out (verdict ``unsaved-state``).

    Found by a strategy that rolls back, running an event, rolling it back
    and running it again (``optimistic`` with ``rollback_check``).
    Attributes: ``component``, ``event`` (its name), ``when`` and ``detail``.
    """

    def __init__(self, component: str, event: str, when: int, detail: str) -> None:
        self.component = component
        self.event = event
        self.when = when
        self.detail = detail
        super().__init__(f"component {component}, event {event} at tick {when}: {detail}")


class Workload(abc.ABC):
    """A workload plugin: builds a model as a pure function of (params, seed).

    Class attributes: ``name`` (CLI/config name), ``summary`` (one line),
    ``params`` (the declared parameters), ``declared_traits`` (names from
    :data:`TRAITS` that hold for every params; override :meth:`traits` when
    they depend on the params), ``statistics`` (the named statistics
    :meth:`stats` returns, each with a one-line description; none by
    default); ``plugin_kind`` is how the registry tells a workload class
    (inherited, never set by a plugin).  Building must not depend on
    anything but the params and ``model.seed``: process and MPI backends call
    :meth:`build` in every process and rely on getting the same model.
    """

    plugin_kind: ClassVar[str] = "workload"
    name: ClassVar[str]
    summary: ClassVar[str]
    params: ClassVar[dict[str, Param]] = {}
    declared_traits: ClassVar[frozenset[str]] = frozenset()
    statistics: ClassVar[dict[str, str]] = {}

    def check_params(self, params: dict[str, Any]) -> None:
        """Cross-parameter checks on resolved params; raise ParamError with one line."""
        return None

    def traits(self, params: dict[str, Any]) -> frozenset[str]:
        """The traits (names from :data:`TRAITS`) of the model built from ``params`` (resolved)."""
        return frozenset(self.declared_traits)

    def describe(self, params: dict[str, Any]) -> dict[str, Any]:
        """What a run of resolved ``params`` spends or reads beyond its params, for its record
        (``workload_info``; e.g. a replayed gem5 run's own event cost and where it came from)."""
        return {}

    @abc.abstractmethod
    def build(self, model: Model, params: dict[str, Any]) -> None:
        """Create the components and links of ``model`` and set ``model.end_tick``."""

    def stats(self, record: OracleRecord) -> dict[str, float]:
        """The declared :attr:`statistics` of a finished run, computed from its record.

        ``record.components[name]`` holds each component's ``count`` (events
        it processed), ``last_tick`` (the tick of its last event, ``None``
        without events) and ``state`` (its final :meth:`Component.state`,
        tuples as lists), whichever strategy, process or rank ran it.  The
        values are not part of any digest: the oracle compares them with the
        golden run's as relative errors (how far off a relaxed strategy is).
        Return exactly the declared names.
        """
        return {}


#: Statistics every strategy reports (others may be added freely).
STAT_KEYS = (
    "events",
    "batches",
    "mean_events_per_batch",
    "lock_waits",
    "messages",
    "null_messages",
    "idle_s",
)


def base_stats(workers: int) -> dict[str, Any]:
    """A stats dict with every :data:`STAT_KEYS` entry at its neutral value."""
    return {
        "events": 0,
        "batches": 0,
        "mean_events_per_batch": 0.0,
        "lock_waits": 0,
        "messages": 0,
        "null_messages": 0,
        "idle_s": [0.0] * workers,
    }


#: The verdicts a promise may name: a crash is a bug and a timeout the harness's limit, never a design's outcome.
PROMISABLE = ("exact", "diverged", "causality", "race", "deadlock")
#: ``Promise("not exact")``: the run ends in one of these named failures, whichever comes first, never ``exact``.
NOT_EXACT = frozenset({"diverged", "causality", "race", "deadlock"})


@dataclass(frozen=True, init=False)
class Promise:
    """What a strategy promises for a cell, and what the promise rests on.

    ``Promise(verdict, traits, because)``: ``verdict`` is one verdict
    (``"exact"``, ``"causality"``, ...), a collection of verdicts when the
    workload's traits allow several to come first (the run ends in one of
    them, whichever the interleaving reaches first), ``"not exact"`` (any of
    :data:`NOT_EXACT`), or ``None``: no promise.  Only :data:`PROMISABLE`
    verdicts may be promised.  ``traits``: the workload traits it rests on
    (empty when it comes from the strategy's contract alone, e.g. one
    worker).  ``because``: one line for people, saying why each verdict can
    come first.

    After construction ``verdicts`` is the promised set (empty: no promise)
    and ``verdict`` its label: the verdict's name for one, ``"not exact"``,
    ``"one of causality, diverged, race"`` (in :data:`~tickpar.verify.oracle.VERDICTS`
    order) or ``None``.  :meth:`kept` judges a verdict against it.
    """

    verdict: str | None
    traits: tuple[str, ...]
    because: str
    verdicts: frozenset[str]

    def __init__(
        self, verdict: str | Iterable[str] | None, traits: Iterable[str] = (), because: str = ""
    ) -> None:
        if verdict is None:
            verdicts: frozenset[str] = frozenset()
        elif isinstance(verdict, str):
            verdicts = NOT_EXACT if verdict == "not exact" else frozenset({verdict})
        else:
            verdicts = frozenset(verdict)
        unknown = sorted(verdicts - set(PROMISABLE))
        if unknown:
            raise ValueError(f"a promise of {unknown[0]!r} is not allowed: verdicts are {', '.join(PROMISABLE)}")
        if verdict is not None and not verdicts:
            raise ValueError("a promise of no verdict: give None (no promise) instead")
        object.__setattr__(self, "verdicts", verdicts)
        object.__setattr__(self, "verdict", _label(verdicts))
        object.__setattr__(self, "traits", tuple(traits))
        object.__setattr__(self, "because", because)

    def kept(self, kind: str) -> bool | None:
        """Whether a cell's verdict ``kind`` keeps the promise (``None``: nothing was promised)."""
        return kind in self.verdicts if self.verdicts else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the label, the verdicts (sorted as :data:`PROMISABLE`), traits and reason."""
        return {
            "verdict": self.verdict,
            "verdicts": [v for v in PROMISABLE if v in self.verdicts],
            "traits": list(self.traits),
            "because": self.because,
        }


def _label(verdicts: frozenset[str]) -> str | None:
    if not verdicts:
        return None
    if verdicts == NOT_EXACT:
        return "not exact"
    ordered = [v for v in PROMISABLE if v in verdicts]
    return ordered[0] if len(ordered) == 1 else "one of " + ", ".join(ordered)


@dataclass
class StrategyResult:
    """What :meth:`Strategy.run` returns: the oracle record and the strategy's statistics."""

    record: OracleRecord
    stats: dict[str, Any] = field(default_factory=dict)


class Strategy(abc.ABC):
    """A strategy plugin: executes a model, sequentially or in parallel.

    Class attributes:

    * ``name``, ``summary``: CLI/config name and one line for ``tickpar list``.
    * ``options``: declared options (validated before :meth:`run`); a strategy
      with several backends declares ``backend`` here.
    * ``orders``: the order modes in which the strategy promises ``exact``.
    * ``max_workers``: ``None`` or an upper bound (e.g. 1 for ``sequential``).
    * ``engines``: the engines that run it: ``python`` (this class's :meth:`run`) and ``native`` (the C++
      engine's strategy of the same name, built in or a native plugin: ``tickpar list`` shows them).
    * ``plugin_kind``: how the registry tells a strategy class (inherited, never set by a plugin).
    """

    plugin_kind: ClassVar[str] = "strategy"
    name: ClassVar[str]
    summary: ClassVar[str]
    options: ClassVar[dict[str, Param]] = {}
    orders: ClassVar[tuple[str, ...]] = ("gem5", "canonical")
    max_workers: ClassVar[int | None] = None
    engines: ClassVar[tuple[str, ...]] = ("python",)

    def validate(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> None:
        """Cross-checks of workers/options against the spec; raise ParamError with one line."""
        if workers < 1:
            raise ParamError(f"workers={workers} is not allowed: an int >= 1")
        if self.max_workers is not None and workers > self.max_workers:
            raise ParamError(f"workers={workers} is not allowed for {self.name}: at most {self.max_workers}")

    def expected_verdict(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> str | None:
        """The label of what this strategy promises for the cell (:attr:`Promise.verdict`): ``exact``
        by default when the order mode is one it guarantees, else ``None`` (no promise).

        Override this or :meth:`promise` (not both): each one derives from the other.  Judge a
        verdict with ``promise(...).kept(kind)``: a promise may be a set of verdicts.  A promise reads
        the workload's traits (``spec.traits()``), never its name.
        """
        if type(self).promise is not Strategy.promise:
            return self.promise(spec, workers, options).verdict
        return "exact" if spec.order in self.orders else None

    def promise(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> Promise:
        """What the strategy promises for the cell and what it rests on: :meth:`expected_verdict`,
        from the contract, unless overridden (then :meth:`expected_verdict` is derived from it)."""
        verdict = self.expected_verdict(spec, workers, options)
        because = f"{self.name}'s contract" if verdict is not None else f"{self.name} promises nothing here"
        return Promise(verdict, (), because)

    def anatomy(
        self, spec: RunSpec, workers: int, options: dict[str, Any], verdict: Verdict
    ) -> list[dict[str, Any]] | None:
        """The steps ``{worker, step, event, when, cur_tick, note}`` that led to ``verdict`` (not exact),
        ending at the failing operation, or ``None`` (then the record alone explains it).  A
        deterministic strategy may replay the cell with a recorder; a measured run never pays for it."""
        return None

    def uses_processes(self, options: dict[str, Any]) -> bool:
        """True when this run uses worker processes or ranks rather than threads (for scheduling)."""
        return options.get("backend") in {"processes", "mpi"}

    @abc.abstractmethod
    def run(self, spec: RunSpec, workers: int, options: dict[str, Any]) -> StrategyResult:
        """Execute ``spec`` with ``workers`` workers and return the record and statistics."""
