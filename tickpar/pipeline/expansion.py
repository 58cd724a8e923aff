"""A validated config expanded into cells, every cross-check one :class:`~tickpar.pipeline.cells.SweepError` line.

:func:`expand` resolves each workload's shapes (declared, checked-only and derived by ``sweep:``) and each
strategy's variants against the plugin registry, checks that every timed cell has its baseline and its
interpreter, and lists the cells (:mod:`tickpar.pipeline.sweep` says which are left out, and counts them).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tickpar.host.interpreters import DEFAULT as DEFAULT_INTERPRETER
from tickpar.host.interpreters import InterpreterError, interpreter_python
from tickpar.kernel.params import ParamError, resolve
from tickpar.native import BUILD_HINT, NATIVE_STRATEGIES, NOT_TAKEN, python_takes
from tickpar.native import available as native_available
from tickpar.pipeline.cells import DEFAULT_VARIANT, Sweep, SweepCell, SweepError, format_value
from tickpar.plugins import BASELINE
from tickpar.plugins.registry import Registry, get_registry


def _max_ranks(config: dict[str, Any]) -> int:
    value = config.get("max_ranks", "auto")
    if value == "auto":
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return int(value)


def _uses_mpi(strategy_cls: type[Any], options: dict[str, Any]) -> bool:
    """MPI cells: the strategy's own ``uses_mpi(options)`` if it has one, else option ``backend: mpi``."""
    probe = getattr(strategy_cls, "uses_mpi", None)
    if callable(probe):
        return bool(probe(strategy_cls(), options))
    return options.get("backend") == "mpi"


def sweeps_of(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A workload's ``sweep:`` as a list (one object, a list of them, or none)."""
    sweep = entry.get("sweep")
    if not sweep:
        return []
    return [dict(s) for s in (sweep if isinstance(sweep, list) else [sweep])]


@dataclass
class _Shape:
    name: str
    family: str
    params: dict[str, Any]
    timed: bool
    #: Engines that run it (None: every engine of the sweep); from its sweep's ``engines``.
    engines: set[str] | None = None
    #: Worker counts timed on it (None: all); from its sweep's ``workers``, or, declared, its ``shape_workers``
    #: (checked and timed).
    sweep_workers: set[int] | None = None
    #: Made by a sweep (from a base shape), not declared.
    derived: bool = False
    #: A held-out validation shape (its sweep's ``held_out``): predicted, never fitted on.
    held_out: bool = False


def _shapes(name: str, entry: dict[str, Any]) -> list[_Shape]:
    """The declared shapes, the sweep-derived ones (each sweep of a list its own), the check-only ones.

    One derived shape made by two sweeps (e.g. work_us 10 in a Python and in a native sweep) is one
    shape, run by the union of their engines at the union of their workers."""
    shapes = [_Shape(shape, shape, dict(params or {}), True) for shape, params in entry["shapes"].items()]
    for shape, engines in (entry.get("shape_engines") or {}).items():
        if shape not in entry["shapes"]:
            allowed = ", ".join(entry["shapes"])
            raise SweepError(f"workloads.{name}.shape_engines.{shape}: not a declared shape of {name} ({allowed})")
        next(s for s in shapes if s.name == shape).engines = set(engines)
    for shape, workers in (entry.get("shape_workers") or {}).items():
        if shape not in entry["shapes"]:
            allowed = ", ".join(entry["shapes"])
            raise SweepError(f"workloads.{name}.shape_workers.{shape}: not a declared shape of {name} ({allowed})")
        next(s for s in shapes if s.name == shape).sweep_workers = set(workers)
    sweeps = sweeps_of(entry)
    where = "sweep" if not isinstance(entry.get("sweep"), list) else None
    declared = {s.name for s in shapes} | set(entry.get("check_shapes") or {})
    derived_by: dict[str, _Shape] = {}
    for i, sweep in enumerate(sweeps):
        at = where or f"sweep[{i}]"
        base = sweep["base"]
        if base not in entry["shapes"]:
            allowed = ", ".join(entry["shapes"])
            raise SweepError(f"workloads.{name}.{at}.base: {base!r} is not a shape of {name} (shapes: {allowed})")
        engines = set(sweep["engines"]) if sweep.get("engines") else None
        workers = set(sweep["workers"]) if sweep.get("workers") else None
        fixed = dict(sweep.get("params") or {})
        if sweep["param"] in fixed:
            raise SweepError(f"workloads.{name}.{at}.params: {sweep['param']!r} is the swept param, not a fixed one")
        held_out = bool(sweep.get("held_out", False))
        for value in sweep["values"]:
            family = f"{base}.{sweep['param']}{format_value(value)}"
            derived = family + "".join(f".{k}{format_value(v)}" for k, v in fixed.items())
            family = family if held_out else base
            if derived in declared:
                raise SweepError(f"workloads.{name}.{at}: derived shape {derived!r} clashes with a declared shape")
            if derived in derived_by:
                seen = derived_by[derived]
                seen.engines = None if seen.engines is None or engines is None else seen.engines | engines
                seen.sweep_workers = (
                    None if seen.sweep_workers is None or workers is None else seen.sweep_workers | workers
                )
                continue
            params = {**(entry["shapes"][base] or {}), **fixed, sweep["param"]: value}
            derived_by[derived] = _Shape(derived, family, params, True, engines, workers, True, held_out)
            shapes.append(derived_by[derived])
    for shape, params in (entry.get("check_shapes") or {}).items():
        if shape in entry["shapes"]:
            raise SweepError(f"workloads.{name}.check_shapes.{shape}: also declared under shapes")
        shapes.append(_Shape(shape, shape, dict(params or {}), False))
    return shapes


def native_takes(strategy: str, options: Mapping[str, Any], registry: Registry | None = None) -> bool:
    """Whether the native engine runs ``strategy`` with these (resolved) options: a built-in of
    :data:`~tickpar.native.NATIVE_STRATEGIES` (but for :data:`tickpar.native.NOT_TAKEN`), or a native plugin."""
    if strategy not in NATIVE_STRATEGIES:
        cls = (registry or get_registry()).strategies.get(strategy)
        return cls is not None and "native" in cls.engines
    return all(options.get(k, v) == v for k, v in NOT_TAKEN.get(strategy, {}).items())


class _Variant(NamedTuple):
    """One strategy variant of the sweep, with the orders, interpreters and engines its cells run at."""

    strategy: str
    variant: str
    options: dict[str, Any]
    timed: bool
    orders: list[str]
    interpreters: list[str]
    engines: list[str]


def expand(config: dict[str, Any], source: str = "config", registry: Registry | None = None) -> Sweep:
    """Expand a validated config into cells; every cross-check error is one SweepError line."""
    registry = registry or get_registry()
    timing_on = _check_timing(config.get("timing", {}))
    if timing_on and BASELINE not in config["strategies"]:
        raise SweepError(f"strategies: {BASELINE!r} is required (the baseline of every speedup)")
    skipped: dict[str, int] = {}
    workload_shapes = _resolved_shapes(config, registry)
    variants, only = _variants(config, registry, {shp.name for _, shp in workload_shapes}, skipped)
    if any("native" in v.engines for v in variants) and not native_available():
        raise SweepError(f"engines: {BUILD_HINT}")
    if timing_on:
        _check_baselines(variants)
    out = _Cells(config, timing_on, _pythons(config, variants), skipped)
    for wname, shp in workload_shapes:
        for v in variants:
            scls = registry.strategy(v.strategy)
            mpi = _uses_mpi(scls, v.options)
            processes = bool(scls().uses_processes(v.options))
            own_workers, own_shapes = only[v.strategy]
            if own_shapes is not None and shp.name not in own_shapes:
                continue
            out.add(wname, shp, v, scls, own_workers, mpi, processes)
    if not out.cells:
        raise SweepError("the sweep has no cells (every combination was left out)")
    return Sweep(config, source, out.cells, skipped)


def _check_timing(timing: Mapping[str, Any]) -> bool:
    """Whether the sweep is timed; raise SweepError where pyperf would get too few values per cell."""
    timing_on = bool(timing.get("enabled", True))
    if timing_on and timing.get("processes", 2) * timing.get("values", 3) < 5:
        n = timing.get("processes", 2) * timing.get("values", 3)
        raise SweepError(f"timing: processes x values = {n}: pyperf needs at least 5 values per cell")
    if timing_on and timing.get("long_cell_s", 0) > 0 and timing.get("processes", 2) * timing.get("long_values", 2) < 4:
        n = timing.get("processes", 2) * timing.get("long_values", 2)
        raise SweepError(f"timing: processes x long_values = {n}: a long cell needs at least 4 values (an interval)")
    return timing_on


def _resolved_shapes(config: dict[str, Any], registry: Registry) -> list[tuple[str, _Shape]]:
    """Every workload's shapes, declared and derived, with their parameters resolved and checked."""
    workload_shapes: list[tuple[str, _Shape]] = []
    for wname, wentry in config["workloads"].items():
        wcls = registry.workload(wname)
        for shp in _shapes(wname, wentry):
            try:
                shp.params = resolve(wcls.params, shp.params, f"workload {wname} parameter")
                wcls().check_params(shp.params)
            except ParamError as exc:
                section = "shapes" if shp.timed else "check_shapes"
                raise SweepError(f"workloads.{wname}.{section}.{shp.name}: {exc}") from None
            workload_shapes.append((wname, shp))
    return workload_shapes


def _variants(
    config: dict[str, Any], registry: Registry, shape_names: set[str], skipped: dict[str, int]
) -> tuple[list[_Variant], dict[str, tuple[list[int] | None, set[str] | None]]]:
    """Every strategy's variants with their options resolved, and each strategy's own workers and shapes."""
    variants: list[_Variant] = []
    only: dict[str, tuple[list[int] | None, set[str] | None]] = {}  # a strategy's own workers and shapes
    sweep_engines = list(config.get("engines") or ["python"])
    for sname, sentry in config["strategies"].items():
        scls = registry.strategy(sname)
        sentry = sentry or {}
        for shape in sentry.get("shapes") or ():
            if shape not in shape_names:
                raise SweepError(
                    f"strategies.{sname}.shapes: {shape!r} is not a shape of any workload "
                    f"(shapes: {', '.join(sorted(shape_names))})"
                )
        only[sname] = (sentry.get("workers"), set(sentry["shapes"]) if sentry.get("shapes") else None)
        orders = list(sentry.get("orders") or config.get("orders", ["gem5"]))
        interpreters = list(sentry.get("interpreters") or config.get("interpreters", [DEFAULT_INTERPRETER]))
        # By default the sweep's engines; a strategy that runs on none of them (a native plugin in a Python
        # sweep) gets its own, so that naming it is enough to sweep it.
        own = list(scls.engines)
        engines = list(sentry.get("engines") or (sweep_engines if set(sweep_engines) & set(own) else own))
        for engine in engines if sentry.get("engines") else ():
            if engine not in own:
                raise SweepError(
                    f"strategies.{sname}.engines: {engine!r} is not allowed for {sname}: it runs on {', '.join(own)}"
                )
        timed_variants = sentry.get("variants") or ({} if sentry.get("check_variants") else {DEFAULT_VARIANT: {}})
        check_variants = sentry.get("check_variants") or {}
        for variant in set(timed_variants) & set(check_variants):
            raise SweepError(f"strategies.{sname}.check_variants.{variant}: also declared under variants")
        sections = (("variants", timed_variants, True), ("check_variants", check_variants, False))
        for section, table, variant_timed in sections:
            for variant, given in table.items():
                try:
                    options = resolve(scls.options, given, f"strategy {sname} option")
                except ParamError as exc:
                    raise SweepError(f"strategies.{sname}.{section}.{variant}: {exc}") from None
                variant_timed = variant_timed and bool(sentry.get("timed", True))
                # Native cells only where the engine runs the strategy with these options; the rest are counted.
                # Python cells only where the strategy has a Python run: a native plugin has none (nothing left out).
                offered = [e for e in engines if e == "native" or e in own]
                mine = [e for e in offered if e != "native" or native_takes(sname, options, registry)]
                if len(mine) < len(offered):
                    why = "variants the native engine does not run (strategy or options), python only"
                    skipped[why] = skipped.get(why, 0) + 1
                if "python" in mine and not python_takes(sname, options):  # e.g. conservative schedule=adaptive
                    mine.remove("python")
                    why = "variants the Python engine does not run (options only the native engine takes), native only"
                    skipped[why] = skipped.get(why, 0) + 1
                if mine:
                    variants.append(_Variant(sname, variant, options, variant_timed, orders, interpreters, mine))
    return variants, only


def _check_baselines(variants: Sequence[_Variant]) -> None:
    """Every timed variant's orders, interpreters and engines have a baseline cell: raise SweepError if not."""
    keys = ("orders", "interpreters", "engines")
    have = {key: {x for v in variants if v.strategy == BASELINE for x in getattr(v, key)} for key in keys}
    for v in variants:
        for key in keys:
            missing = [x for x in getattr(v, key) if x not in have[key]]
            if v.timed and missing:
                raise SweepError(
                    f"strategies.{v.strategy}.{key}: {missing[0]!r} has no {BASELINE} baseline to compute speedups"
                    f" (add it to strategies.{BASELINE}.{key} or to {key})"
                )


def _pythons(config: dict[str, Any], variants: Sequence[_Variant]) -> dict[str, str]:
    """Every interpreter asked for, by name: its python.  A missing one is one line saying how to get it."""
    pythons: dict[str, str] = {}
    for v in variants:
        for interp in v.interpreters:
            if interp in pythons:
                continue
            try:
                pythons[interp] = interpreter_python(interp)
            except InterpreterError as exc:
                where = "interpreters" if interp in config.get("interpreters", ()) else f"strategies.{v.strategy}"
                where += ".interpreters" if where.startswith("strategies") else ""
                raise SweepError(f"{where}: {exc}") from None
    return pythons


class _Cells:
    """The cells of a sweep as :func:`expand` adds them, and the count of those left out (by why)."""

    def __init__(self, config: dict[str, Any], timing_on: bool, pythons: dict[str, str], skipped: dict[str, int]):
        self.config, self.timing_on, self.pythons, self.skipped = config, timing_on, pythons, skipped
        self.cells: list[SweepCell] = []
        self.timed_workers = list(config["workers"])
        self.workers_all = self.timed_workers + [
            w for w in config.get("check_workers", []) if w not in self.timed_workers
        ]
        self.max_ranks = _max_ranks(config)
        self.works = list(config.get("work", ["gil-release"]))
        self.several_work = len(self.works) > 1

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def _left_out(self, shp: _Shape, v: _Variant, scls: Any, workers: int, timed_here: bool, mpi: bool) -> str | None:
        """Why the cells of ``v`` at ``workers`` on ``shp`` are left out (None: they are not)."""
        if scls.max_workers is not None and workers > scls.max_workers:
            return "above max_workers"
        if mpi and workers > self.max_ranks:
            return f"MPI cells above {self.max_ranks} ranks"
        if shp.derived and not (v.timed and timed_here):
            # A sweep-derived shape differs from its base only in one parameter (work_us in the default sweep),
            # which changes no digest: its correctness-only cells would repeat the base shape's verdicts. Its
            # timed cells are still checked (and timed runs too).
            return "correctness-only on sweep-derived shapes"
        if v.strategy != BASELINE and shp.sweep_workers and workers not in shp.sweep_workers:
            return "on sweep-derived shapes outside sweep.workers" if shp.derived else "outside shape_workers"
        return None

    def add(
        self, wname: str, shp: _Shape, v: _Variant, scls: Any, own_workers: list[int] | None, mpi: bool,
        processes: bool,
    ) -> None:  # fmt: skip
        """The cells of variant ``v`` on workload ``wname``'s shape ``shp``, at every worker count, order,
        engine, work mode, interpreter and seed that is not left out."""
        for workers in own_workers or self.workers_all:
            timed_here = workers in self.timed_workers or own_workers is not None
            why = self._left_out(shp, v, scls, workers, timed_here, mpi)
            if why is not None:
                self.skip(why)
                continue
            for order, engine in itertools.product(v.orders, v.engines):
                if shp.engines is not None and engine not in shp.engines:
                    self.skip(
                        "on sweep-derived shapes of another engine (sweep.engines)"
                        if shp.derived
                        else "on shapes of another engine (shape_engines)"
                    )
                    continue
                for work, interp in itertools.product(self.works, v.interpreters):
                    if engine == "native" and (interp != DEFAULT_INTERPRETER or work != self.works[0]):
                        # The C++ replay spins each event's work_us itself: one interpreter and work mode.
                        self.skip("native cells of other interpreters or work modes (the replay needs neither)")
                        continue
                    tags = (("ft",) if interp != DEFAULT_INTERPRETER else ()) + ((work,) if self.several_work else ())
                    tags += ("native",) if engine == "native" else ()
                    timed = self.timing_on and v.timed and shp.timed and timed_here
                    for seed in self.config["seeds"]:
                        where = _Where(workers, seed, order, work, engine, interp, tags, timed, mpi, processes)
                        self._add_one(wname, shp, v, where)

    def _add_one(self, wname: str, shp: _Shape, v: _Variant, at: _Where) -> None:
        from tickpar.runner import cell_promise, resolve_cell

        try:
            cell = resolve_cell(wname, shp.params, v.strategy, v.options, at.workers, at.seed, at.order, at.work,
                                engine=at.engine)  # fmt: skip
        except ParamError as exc:
            if self.config.get("on_invalid_cell", "error") == "skip":
                self.skip("refused by their strategy")
                return
            raise SweepError(
                f"strategies.{v.strategy}.variants.{v.variant} with workloads.{wname}.shapes.{shp.name}"
                f" at workers={at.workers}: {exc} (or set on_invalid_cell: skip)"
            ) from None
        promise = cell_promise(cell)
        self.cells.append(
            SweepCell(
                workload=wname, shape=shp.name, params=cell.spec.params, strategy=v.strategy, variant=v.variant,
                options=cell.options, workers=at.workers, seed=at.seed, order=at.order, work=at.work,
                timed=at.timed, mpi=at.mpi, processes=at.processes, family=shp.family, expected=promise.verdict,
                promised=tuple(promise.to_dict()["verdicts"]), interpreter=at.interp,
                python=self.pythons[at.interp], tags=at.tags, engine=at.engine, held_out=shp.held_out,
            )
        )  # fmt: skip


class _Where(NamedTuple):
    """Where in the sweep one cell is: everything about it that is not its workload, shape or variant."""

    workers: int
    seed: int
    order: str
    work: str
    engine: str
    interp: str
    tags: tuple[str, ...]
    timed: bool
    mpi: bool
    processes: bool
