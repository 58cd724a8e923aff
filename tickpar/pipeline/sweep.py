"""The sweep: a config validated against the plugin registry and expanded into cells (what the Snakefile wires).

``config/config.schema.yaml`` is a skeleton; :func:`config_schema` fills in the
workload and strategy names, their parameters (types, ranges, choices, help
text), the order modes and the work modes from the plugin registry, so a new
plugin is configurable with no edit here.  :func:`load_sweep` validates a
config with ``snakemake.utils.validate`` (which also fills in the schema's
defaults), then resolves every cell with :func:`tickpar.runner.resolve_cell`,
so cross-checks of the plugins (``Workload.check_params``,
``Strategy.validate``) run before any job.  Every problem is one
:class:`SweepError` line naming the key, e.g.
``strategies.split.variants.bad.lock_key: 'x' is not one of ['name', 'component']``.

A *cell* is (workload, shape, strategy, variant, workers, seed, order, work, interpreter, engine):
``shape`` names a parameter set of the workload, ``variant`` an option set of
the strategy, ``interpreter`` the Python the cell's jobs run under (``default``, or
``freethreaded``: :mod:`tickpar.host.interpreters`; a sweep that asks for one that is
not available stops with a :class:`SweepError` saying how to get it), ``engine`` the engine
that runs it (``python``, or ``native``: the C++ replay, only for strategies and options it runs;
a ``sweep:`` list gives each sweep its own ``engines``).  Cells at
``workers`` are checked and timed; cells at ``check_workers`` are checked only.  Left out, and counted: cells above a
strategy's ``max_workers`` (sequential runs at 1 only), MPI cells with more
ranks than ``max_ranks`` (default: the usable cores), correctness-only cells
(check variants, check workers) on shapes derived by ``sweep:`` (they differ
from their base shape in one parameter, and the base shape has them), and on
derived shapes the cells at worker counts outside ``sweep.workers`` when it is
given (the baseline strategy's cells stay: every speedup needs them).  The golden sequential
record is computed once per (workload, shape, seed, order) and shared.

Files (relative to the working directory; see :class:`SweepCell`)::

    results/golden/{workload}/{shape}/{order}/s{seed}.json
    results/check/{workload}/{shape}/{strategy}/{variant}/{order}/{work}/{interpreter}/{engine}/w{workers}-s{seed}.json
    results/timing/...same.../w{workers}-s{seed}.json        (+ .pyperf.json beside it)
    results/timing/{workload}/{shape}.json                   (the shape's timing job: index of the above)
    results/logs/{check,timing,golden}/...same....log

``python -m tickpar.pipeline.sweep fallback --out F ...`` writes the record of a job
whose command died before writing one (the rule then exits 0).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tickpar.host.interpreters import DEFAULT as DEFAULT_INTERPRETER
from tickpar.host.interpreters import INTERPRETERS, InterpreterError, interpreter_python
from tickpar.host.paths import REPO_ROOT
from tickpar.kernel.eventq import ORDERS
from tickpar.kernel.params import ParamError, resolve
from tickpar.kernel.work import WORK_MODES
from tickpar.native import BUILD_HINT, ENGINES, NATIVE_STRATEGIES, NOT_TAKEN
from tickpar.native import available as native_available
from tickpar.perf.timing import write_fallback
from tickpar.plugins import BASELINE
from tickpar.plugins.registry import PluginError, Registry, get_registry

__all__ = [
    "BASELINE",
    "CHECK_PATTERN",
    "GOLDEN_PATTERN",
    "SCHEMA_PATH",
    "TIMING_GROUP_PATTERN",
    "TIMING_PATTERN",
    "Sweep",
    "SweepCell",
    "SweepError",
    "config_schema",
    "format_value",
    "load_sweep",
    "validate_config",
    "write_fallback",
]

SCHEMA_PATH = REPO_ROOT / "config" / "config.schema.yaml"
DEFAULT_VARIANT = "default"

_CELL_PART = "{workload}/{shape}/{strategy}/{variant}/{order}/{work}/{interpreter}/{engine}/w{workers}-s{seed}"
CHECK_PATTERN = f"results/check/{_CELL_PART}.json"
TIMING_PATTERN = f"results/timing/{_CELL_PART}.json"
#: One timing job per workload shape: its index of the cell records it wrote (rules/bench.smk).
TIMING_GROUP_PATTERN = "results/timing/{workload}/{shape}.json"
GOLDEN_PATTERN = "results/golden/{workload}/{shape}/{order}/s{seed}.json"
#: Snakemake wildcard constraints matching the patterns above.
WILDCARD_CONSTRAINTS = {
    "workload": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "shape": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "strategy": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "variant": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "order": r"[A-Za-z0-9_]+",
    "work": r"[A-Za-z0-9_-]+",
    "interpreter": r"[A-Za-z0-9_-]+",
    "engine": r"[a-z]+",
    "workers": r"\d+",
    "seed": r"\d+",
}


class SweepError(Exception):
    """A config that cannot run (the message is one line naming the key)."""


# ---------------------------------------------------------------- schema

_JSON_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}


def _param_schema(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"description": spec["help"]}
    if "choices" in spec:
        out["enum"] = list(spec["choices"]) + ([None] if spec.get("nullable") else [])
    else:
        kind = _JSON_TYPES[spec["type"]]
        out["type"] = [kind, "null"] if spec.get("nullable") else kind
        if "min" in spec:
            out["minimum"] = spec["min"]
        if "max" in spec:
            out["maximum"] = spec["max"]
    return out


def _table_schema(table: dict[str, dict[str, Any]], what: str) -> dict[str, Any]:
    return {
        "type": ["object", "null"],
        "additionalProperties": False,
        "x-what": what,
        "properties": {name: _param_schema(spec) for name, spec in table.items()},
    }


def config_schema(describe: dict[str, Any] | None = None, base: Path | str = SCHEMA_PATH) -> dict[str, Any]:
    """The full config schema: the skeleton with the registry's names and parameters filled in."""
    if describe is None:
        describe = get_registry().describe()
    schema = yaml.safe_load(Path(base).read_text())
    defs = schema["$defs"]
    defs["order"] = {"enum": list(ORDERS), "description": "tie order mode"}
    defs["work"] = {"enum": list(WORK_MODES), "description": "work model"}
    defs["interpreter"] = {"enum": list(INTERPRETERS), "description": "interpreter the cells run under"}
    defs["engine"] = {"enum": list(ENGINES), "description": "engine the cells run on (python, or the C++ replay)"}
    workloads = {}
    for name, entry in describe["workloads"].items():
        params = entry["params"]
        workloads[name] = {
            "type": "object",
            "description": entry["summary"],
            "additionalProperties": False,
            "x-what": f"workload {name} key",
            "required": ["shapes"],
            "properties": {
                "shapes": {
                    "type": "object",
                    "description": "shape name -> workload parameters (the rest keep their defaults)",
                    "minProperties": 1,
                    "propertyNames": {"$ref": "#/$defs/name"},
                    "additionalProperties": _table_schema(params, f"workload {name} parameter"),
                },
                "shape_engines": {
                    "type": "object",
                    "description": "declared shape name -> the engines that run it (default: every engine), e.g. "
                    "[python] for a shape at a work_us far above the native engine's sweep",
                    "propertyNames": {"$ref": "#/$defs/name"},
                    "additionalProperties": {
                        "type": "array",
                        "items": {"$ref": "#/$defs/engine"},
                        "minItems": 1,
                        "uniqueItems": True,
                    },
                },
                "check_shapes": {
                    "type": "object",
                    "description": "shapes that are only checked for correctness, never timed",
                    "propertyNames": {"$ref": "#/$defs/name"},
                    "additionalProperties": _table_schema(params, f"workload {name} parameter"),
                },
                "sweep": {
                    "type": ["object", "array"],
                    "description": "extra shapes: the base shape with one parameter set to each value "
                    "(named {base}.{param}{value}; the speedup-vs-granularity figure uses them); a list of "
                    "such sweeps gives each its own values, workers and engines",
                    "items": {"$ref": f"#/$defs/sweep_{name}"},
                    "minItems": 1,
                    "additionalProperties": False,
                    "x-what": f"workload {name} sweep key",
                    "required": ["base", "param", "values"],
                    "properties": {
                        "base": {"$ref": "#/$defs/name"},
                        "param": {"enum": sorted(params)},
                        "values": {"type": "array", "minItems": 1, "uniqueItems": True},
                        "workers": {
                            "type": "array",
                            "description": "worker counts timed on the derived shapes (default: the sweep's "
                            "workers); the baseline strategy's cells are always kept",
                            "items": {"type": "integer", "minimum": 1},
                            "minItems": 1,
                            "uniqueItems": True,
                        },
                        "engines": {
                            "type": "array",
                            "description": "engines that run the derived shapes (default: every engine of the "
                            "sweep); e.g. [native] for work_us below a microsecond, which Python cannot resolve",
                            "items": {"$ref": "#/$defs/engine"},
                            "minItems": 1,
                            "uniqueItems": True,
                        },
                        "params": {
                            **_table_schema(params, f"workload {name} parameter"),
                            "description": "more parameters fixed on every derived shape (named "
                            "{base}.{param}{value}.{key}{value}...), e.g. work_us on a held-out shape",
                        },
                        "held_out": {
                            "type": "boolean",
                            "description": "held-out validation shapes: timed at the sweep's workers only, never "
                            "fitted on (no overhead is fitted from them); prediction.csv's validation column says "
                            "held-out; a family of their own ({base}.{param}{value})",
                        },
                    },
                },
            },
        }
        sweep_schema = dict(workloads[name]["properties"]["sweep"])
        for key in ("items", "minItems"):
            sweep_schema.pop(key)
        sweep_schema["type"] = "object"
        defs[f"sweep_{name}"] = sweep_schema
    defs["workloads"] = {
        "type": "object",
        "description": "workload name -> shapes",
        "minProperties": 1,
        "additionalProperties": False,
        "x-what": "workload",
        "properties": workloads,
    }
    strategies = {}
    for name, entry in describe["strategies"].items():
        strategies[name] = {
            "type": ["object", "null"],
            "description": entry["summary"],
            "additionalProperties": False,
            "x-what": f"strategy {name} key",
            "properties": {
                "variants": {
                    "type": "object",
                    "description": "variant name -> strategy options (the rest keep their defaults)",
                    "minProperties": 1,
                    "propertyNames": {"$ref": "#/$defs/name"},
                    "additionalProperties": _table_schema(entry["options"], f"strategy {name} option"),
                },
                "check_variants": {
                    "type": "object",
                    "description": "variants that are only checked for correctness, never timed",
                    "propertyNames": {"$ref": "#/$defs/name"},
                    "additionalProperties": _table_schema(entry["options"], f"strategy {name} option"),
                },
                "timed": {"type": "boolean", "description": "false: correctness jobs only (default true)"},
                "workers": {
                    "type": "array",
                    "description": "worker counts for this strategy, checked and timed (default: the sweep's)",
                    "items": {"type": "integer", "minimum": 1, "maximum": 4096},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                "shapes": {
                    "type": "array",
                    "description": "run this strategy only on shapes with these names (default: every shape)",
                    "items": {"$ref": "#/$defs/name"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                "orders": {
                    "type": "array",
                    "description": "order modes for this strategy (default: the sweep's orders)",
                    "items": {"$ref": "#/$defs/order"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                "interpreters": {
                    "type": "array",
                    "description": "interpreters for this strategy (default: the sweep's interpreters)",
                    "items": {"$ref": "#/$defs/interpreter"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                "engines": {
                    "type": "array",
                    "description": "engines for this strategy (default: the sweep's engines); native needs the "
                    "strategy in tickpar.native.NATIVE_STRATEGIES, and its variants with options it takes",
                    "items": {"$ref": "#/$defs/engine"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
            },
        }
    defs["strategies"] = {
        "type": "object",
        "description": "strategy name -> variants",
        "minProperties": 1,
        "additionalProperties": False,
        "x-what": "strategy",
        "properties": strategies,
    }
    return schema


def _where(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _one_line(err: Any) -> str:
    """A jsonschema ValidationError as one line naming the key."""
    where = _where(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(k for k in err.instance if k not in allowed)
        what = err.schema.get("x-what", "key")
        key = f"{where}.{extra[0]}" if where else extra[0]
        return f"{key}: unknown {what} {extra[0]!r} (allowed: {', '.join(allowed) or 'none'})"
    if err.validator == "required":
        return f"{where or 'config'}: {err.message}"
    message = " ".join(str(err.message).split())
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{where or 'config'}: {message}"


def _defaults_validator(schema: dict[str, Any]) -> Any:
    """A Draft 2020-12 validator that fills in each property's ``default`` as it validates, as
    ``snakemake.utils.validate(..., set_default=True)`` does (the jsonschema FAQ's recipe): the same
    config comes out of both, and a machine without Snakemake (bench/scaling.py) can load a sweep."""
    from jsonschema import Draft202012Validator, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator: Any, properties: dict[str, Any], instance: Any, subschema: Any) -> Any:
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(name, sub["default"])
        yield from check_properties(validator, properties, instance, subschema)

    return validators.extend(Draft202012Validator, {"properties": set_defaults})(schema)


def validate_config(config: dict[str, Any], describe: dict[str, Any] | None = None) -> None:
    """Validate ``config`` in place (defaults filled in) against :func:`config_schema`; raise SweepError."""
    import jsonschema

    for section in ("strategies", "workloads"):  # `name:` with nothing after it means "defaults"
        table = config.get(section)
        if isinstance(table, dict):
            for key, value in table.items():
                if value is None:
                    table[key] = {}
    try:
        _defaults_validator(config_schema(describe)).validate(config)
    except jsonschema.ValidationError as exc:
        raise SweepError(_one_line(exc)) from None


# ---------------------------------------------------------------- cells


def format_value(value: Any) -> str:
    """A parameter value as the CLI's ``key=value`` expects it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, float) else repr(value)


@dataclass(frozen=True, eq=False)
class SweepCell:
    """One cell of the sweep, with the labels the report uses and the files the pipeline writes."""

    workload: str
    shape: str
    params: dict[str, Any]
    strategy: str
    variant: str
    options: dict[str, Any]
    workers: int
    seed: int
    order: str
    work: str
    timed: bool
    mpi: bool = False
    processes: bool = False
    family: str = ""
    expected: str | None = None
    #: The promised verdicts (``expected`` is their label: one verdict, ``not exact`` or ``one of ...``).
    promised: tuple[str, ...] = ()
    interpreter: str = DEFAULT_INTERPRETER
    #: The ``python`` that runs the cell's check and timing jobs (:func:`tickpar.host.interpreters.interpreter_python`).
    python: str = ""
    #: What the label adds to strategy/variant to tell cells apart in one figure: ``ft`` (the free-threaded
    #: interpreter), ``native`` (the native engine), the work mode (when the sweep has several).
    tags: tuple[str, ...] = ()
    #: ``python`` (the model itself) or ``native`` (the C++ replay of its event DAG, :mod:`tickpar.native`).
    engine: str = "python"
    #: On a held-out validation shape (a sweep with ``held_out: true``): predicted, never fitted on.
    held_out: bool = False

    @property
    def wildcards(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "shape": self.shape,
            "strategy": self.strategy,
            "variant": self.variant,
            "order": self.order,
            "work": self.work,
            "interpreter": self.interpreter,
            "engine": self.engine,
            "workers": self.workers,
            "seed": self.seed,
        }

    @property
    def key(self) -> str:
        return _CELL_PART.format(**self.wildcards)

    @property
    def check_cores(self) -> int:
        """Cores its correctness check claims: one per worker process, MPI rank or native thread, or per thread on
        a free-threaded interpreter; 1 for threads under the GIL, which keep about one core busy
        (oversubscribing a check only slows it; timing jobs claim every core)."""
        parallel = self.processes or self.mpi or self.engine == "native" or self.interpreter != DEFAULT_INTERPRETER
        return self.workers if parallel else 1

    @property
    def base_label(self) -> str:
        """Strategy and variant (``split/nochecks``; the default variant is just the name)."""
        return self.strategy if self.variant == DEFAULT_VARIANT else f"{self.strategy}/{self.variant}"

    @property
    def label(self) -> str:
        """The legends' name: :attr:`base_label` and the tags (``tick-barrier [ft, gil-hold]``)."""
        return f"{self.base_label} [{', '.join(self.tags)}]" if self.tags else self.base_label

    @property
    def check_path(self) -> str:
        return CHECK_PATTERN.format(**self.wildcards)

    @property
    def timing_path(self) -> str:
        return TIMING_PATTERN.format(**self.wildcards)

    @property
    def pyperf_path(self) -> str:
        return self.timing_path[: -len(".json")] + ".pyperf.json"

    @property
    def golden_key(self) -> tuple[str, str, str, int]:
        return (self.workload, self.shape, self.order, self.seed)

    @property
    def golden_path(self) -> str:
        return GOLDEN_PATTERN.format(workload=self.workload, shape=self.shape, order=self.order, seed=self.seed)

    def cli_args(self, *, golden: bool = False) -> list[str]:
        """``--workload ... --param k=v ... --strategy ...`` for ``tickpar check/time/golden``."""
        args = ["--workload", self.workload]
        for k, v in self.params.items():
            args += ["--param", f"{k}={format_value(v)}"]
        if golden:
            return [*args, "--seed", str(self.seed), "--order", self.order, "--work", "none"]
        args += ["--strategy", self.strategy]
        for k, v in self.options.items():
            args += ["--option", f"{k}={format_value(v)}"]
        args += ["--workers", str(self.workers), "--seed", str(self.seed), "--order", self.order, "--work", self.work]
        if self.engine != "python":
            args += ["--engine", self.engine]
        return args

    def timing_entry(self) -> dict[str, Any]:
        """What the timing job of its shape needs: the manifest row, the CLI options, the pyperf and golden files."""
        return {**self.row(), "cli_args": self.cli_args(), "pyperf_path": self.pyperf_path,
                "golden_path": self.golden_path, "python": self.python}  # fmt: skip

    def row(self) -> dict[str, Any]:
        """The manifest row (what the aggregate joins the records to)."""
        return {
            "cell": self.key,
            "workload": self.workload,
            "shape": self.shape,
            "family": self.family or self.shape,
            "strategy": self.strategy,
            "variant": self.variant,
            "label": self.label,
            "base_label": self.base_label,
            "workers": self.workers,
            "seed": self.seed,
            "order": self.order,
            "work": self.work,
            "interpreter": self.interpreter,
            "engine": self.engine,
            "held_out": self.held_out,
            "timed": self.timed,
            "mpi": self.mpi,
            "processes": self.processes,
            "expected_verdict": self.expected,
            "promised_verdicts": list(self.promised),
            "params": dict(self.params),
            "options": dict(self.options),
            "check_path": self.check_path,
            "timing_path": self.timing_path if self.timed else None,
        }


@dataclass
class Sweep:
    """The expanded sweep."""

    config: dict[str, Any]
    source: str
    cells: list[SweepCell]
    skipped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key = {c.key: c for c in self.cells}
        self.goldens: dict[tuple[str, str, str, int], SweepCell] = {}
        for c in self.cells:
            self.goldens.setdefault(c.golden_key, c)

    @property
    def timed(self) -> list[SweepCell]:
        return [c for c in self.cells if c.timed]

    @property
    def timing_groups(self) -> dict[tuple[str, str], list[SweepCell]]:
        """The timed cells by (workload, shape): each group is one timing job, timed in interleaved rounds."""
        groups: dict[tuple[str, str], list[SweepCell]] = {}
        for c in self.timed:
            groups.setdefault((c.workload, c.shape), []).append(c)
        return groups

    @property
    def timing_group_paths(self) -> list[str]:
        return [TIMING_GROUP_PATTERN.format(workload=w, shape=s) for w, s in self.timing_groups]

    def timing_group(self, wildcards: Mapping[str, Any]) -> list[SweepCell]:
        """The timed cells of the shape a timing job's wildcards name."""
        key = (str(wildcards["workload"]), str(wildcards["shape"]))
        try:
            return self.timing_groups[key]
        except KeyError:
            raise KeyError(f"no timed cells for {key} in the sweep in {self.source}") from None

    def cell(self, wildcards: Mapping[str, Any]) -> SweepCell:
        """The cell a rule's wildcards name (a KeyError names a file outside this sweep)."""
        key = _CELL_PART.format(**{k: wildcards[k] for k in WILDCARD_CONSTRAINTS})
        try:
            return self.by_key[key]
        except KeyError:
            raise KeyError(f"{key} is not a cell of the sweep in {self.source}") from None

    def golden(self, wildcards: Mapping[str, Any]) -> SweepCell:
        key = (str(wildcards["workload"]), str(wildcards["shape"]), str(wildcards["order"]), int(wildcards["seed"]))
        try:
            return self.goldens[key]
        except KeyError:
            raise KeyError(f"golden {key} is not part of the sweep in {self.source}") from None

    def manifest(self) -> list[dict[str, Any]]:
        return [c.row() for c in self.cells]

    def summary(self) -> str:
        """One line for the log: what will run, and what was left out and why."""
        text = (
            f"tickpar: sweep {self.source}: {len(self.cells)} cells ({len(self.timed)} timed), "
            f"{len(self.goldens)} golden runs"
        )
        if self.skipped:
            text += "; left out: " + ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return text


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
    #: Worker counts timed on it (None: all); from its sweep's ``workers``.
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


def native_takes(strategy: str, options: Mapping[str, Any]) -> bool:
    """Whether the native engine runs ``strategy`` with these (resolved) options (:data:`tickpar.native.NOT_TAKEN`)."""
    if strategy not in NATIVE_STRATEGIES:
        return False
    return all(options.get(k, v) == v for k, v in NOT_TAKEN.get(strategy, {}).items())


def expand(config: dict[str, Any], source: str = "config", registry: Registry | None = None) -> Sweep:
    """Expand a validated config into cells; every cross-check error is one SweepError line."""
    from tickpar.runner import cell_promise, resolve_cell

    registry = registry or get_registry()
    timing = config.get("timing", {})
    timing_on = timing.get("enabled", True)
    if timing_on and timing.get("processes", 2) * timing.get("values", 3) < 5:
        n = timing.get("processes", 2) * timing.get("values", 3)
        raise SweepError(f"timing: processes x values = {n}: pyperf needs at least 5 values per cell")
    if timing_on and timing.get("long_cell_s", 0) > 0 and timing.get("processes", 2) * timing.get("long_values", 2) < 4:
        n = timing.get("processes", 2) * timing.get("long_values", 2)
        raise SweepError(f"timing: processes x long_values = {n}: a long cell needs at least 4 values (an interval)")
    strategies = config["strategies"]
    if timing_on and BASELINE not in strategies:
        raise SweepError(f"strategies: {BASELINE!r} is required (the baseline of every speedup)")
    timed_workers = list(config["workers"])
    workers_all = timed_workers + [w for w in config.get("check_workers", []) if w not in timed_workers]
    max_ranks = _max_ranks(config)
    on_invalid = config.get("on_invalid_cell", "error")
    cells: list[SweepCell] = []
    skipped: dict[str, int] = {}

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

    variants: list[tuple[str, str, dict[str, Any], bool, list[str], list[str], list[str]]] = []
    only: dict[str, tuple[list[int] | None, set[str] | None]] = {}  # a strategy's own workers and shapes
    shape_names = {shp.name for _, shp in workload_shapes}
    sweep_engines = list(config.get("engines") or ["python"])
    for sname, sentry in strategies.items():
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
        engines = list(sentry.get("engines") or sweep_engines)
        if sentry.get("engines") and "native" in engines and sname not in NATIVE_STRATEGIES:
            raise SweepError(
                f"strategies.{sname}.engines: 'native' is not allowed for {sname}: the native engine runs "
                f"{', '.join(NATIVE_STRATEGIES)}"
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
                mine = [e for e in engines if e != "native" or native_takes(sname, options)]
                if len(mine) < len(engines):
                    why = "variants the native engine does not run (strategy or options), python only"
                    skipped[why] = skipped.get(why, 0) + 1
                if mine:
                    variants.append((sname, variant, options, variant_timed, orders, interpreters, mine))
    if any("native" in v[6] for v in variants) and not native_available():
        raise SweepError(f"engines: {BUILD_HINT}")

    if timing_on:
        base_orders = {o for s, _, _, _, orders, _, _ in variants if s == BASELINE for o in orders}
        base_interpreters = {i for s, _, _, _, _, interps, _ in variants if s == BASELINE for i in interps}
        base_engines = {e for s, _, _, _, _, _, engs in variants if s == BASELINE for e in engs}
        for sname, _, _, strategy_timed, orders, interps, engs in variants:
            missing = [o for o in orders if o not in base_orders]
            if strategy_timed and missing:
                raise SweepError(
                    f"strategies.{sname}.orders: {missing[0]!r} has no {BASELINE} baseline to compute speedups"
                    f" (add it to strategies.{BASELINE}.orders or to orders)"
                )
            missing = [i for i in interps if i not in base_interpreters]
            if strategy_timed and missing:
                raise SweepError(
                    f"strategies.{sname}.interpreters: {missing[0]!r} has no {BASELINE} baseline to compute"
                    f" speedups (add it to strategies.{BASELINE}.interpreters or to interpreters)"
                )
            missing = [e for e in engs if e not in base_engines]
            if strategy_timed and missing:
                raise SweepError(
                    f"strategies.{sname}.engines: {missing[0]!r} has no {BASELINE} baseline to compute"
                    f" speedups (add it to strategies.{BASELINE}.engines or to engines)"
                )
    # Every interpreter asked for must be there: one line saying how to get a missing one.
    pythons: dict[str, str] = {}
    for sname, _, _, _, _, interps, _ in variants:
        for interp in interps:
            if interp in pythons:
                continue
            try:
                pythons[interp] = interpreter_python(interp)
            except InterpreterError as exc:
                where = "interpreters" if interp in config.get("interpreters", ()) else f"strategies.{sname}"
                where += ".interpreters" if where.startswith("strategies") else ""
                raise SweepError(f"{where}: {exc}") from None
    several_work = len(config.get("work", ["gil-release"])) > 1

    for wname, shp in workload_shapes:
        shape, family, params, shape_timed, derived = shp.name, shp.family, shp.params, shp.timed, shp.derived
        for sname, variant, options, strategy_timed, orders, interps, engs in variants:
            scls = registry.strategy(sname)
            mpi = _uses_mpi(scls, options)
            processes = bool(scls().uses_processes(options))
            own_workers, own_shapes = only[sname]
            if own_shapes is not None and shape not in own_shapes:
                continue
            for workers in own_workers or workers_all:
                if scls.max_workers is not None and workers > scls.max_workers:
                    skipped["above max_workers"] = skipped.get("above max_workers", 0) + 1
                    continue
                if mpi and workers > max_ranks:
                    why = f"MPI cells above {max_ranks} ranks"
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
                timed_workers_here = workers in timed_workers or own_workers is not None
                if derived and not (strategy_timed and timed_workers_here):
                    # A sweep-derived shape differs from its base only in one parameter (work_us in the
                    # default sweep), which changes no digest: its correctness-only cells would repeat
                    # the base shape's verdicts. Its timed cells are still checked (and timed runs too).
                    why = "correctness-only on sweep-derived shapes"
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
                sweep_workers = shp.sweep_workers
                if derived and sname != BASELINE and sweep_workers and workers not in sweep_workers:
                    why = "on sweep-derived shapes outside sweep.workers"
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
                works = list(config.get("work", ["gil-release"]))
                for order, engine in itertools.product(orders, engs):
                    if shp.engines is not None and engine not in shp.engines:
                        why = (
                            "on sweep-derived shapes of another engine (sweep.engines)"
                            if derived
                            else "on shapes of another engine (shape_engines)"
                        )
                        skipped[why] = skipped.get(why, 0) + 1
                        continue
                    for work, interp in itertools.product(works, interps):
                        if engine == "native" and (interp != DEFAULT_INTERPRETER or work != works[0]):
                            # The C++ replay spins each event's work_us itself: one interpreter and work mode.
                            why = "native cells of other interpreters or work modes (the replay needs neither)"
                            skipped[why] = skipped.get(why, 0) + 1
                            continue
                        tags = (("ft",) if interp != DEFAULT_INTERPRETER else ()) + ((work,) if several_work else ())
                        tags += ("native",) if engine == "native" else ()
                        for seed in config["seeds"]:
                            try:
                                cell = resolve_cell(
                                    wname, params, sname, options, workers, seed, order, work, engine=engine
                                )
                            except ParamError as exc:
                                if on_invalid == "skip":
                                    why = "refused by their strategy"
                                    skipped[why] = skipped.get(why, 0) + 1
                                    continue
                                raise SweepError(
                                    f"strategies.{sname}.variants.{variant} with workloads.{wname}.shapes.{shape}"
                                    f" at workers={workers}: {exc} (or set on_invalid_cell: skip)"
                                ) from None
                            promise = cell_promise(cell)
                            cells.append(
                                SweepCell(
                                    workload=wname,
                                    shape=shape,
                                    params=cell.spec.params,
                                    strategy=sname,
                                    variant=variant,
                                    options=cell.options,
                                    workers=workers,
                                    seed=seed,
                                    order=order,
                                    work=work,
                                    timed=timing_on
                                    and strategy_timed
                                    and shape_timed
                                    and timed_workers_here,
                                    mpi=mpi,
                                    processes=processes,
                                    family=family,
                                    expected=promise.verdict,
                                    promised=tuple(promise.to_dict()["verdicts"]),
                                    interpreter=interp,
                                    python=pythons[interp],
                                    tags=tags,
                                    engine=engine,
                                    held_out=shp.held_out,
                                )
                            )
    if not cells:
        raise SweepError("the sweep has no cells (every combination was left out)")
    return Sweep(config, source, cells, skipped)


def load_sweep(config: dict[str, Any], source: str = "config") -> Sweep:
    """Validate ``config`` (in place, defaults filled in) and expand it; raise SweepError with one line."""
    try:
        describe = get_registry().describe()
    except PluginError as exc:
        raise SweepError(str(exc)) from None
    validate_config(config, describe)
    try:
        return expand(config, source)
    except PluginError as exc:  # pragma: no cover - the schema already names the plugins
        raise SweepError(str(exc)) from None


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A YAML config file as a dict (for tests and tools; the Snakefile uses Snakemake's loader)."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict):
        raise SweepError(f"{path}: not a mapping")
    return copy.deepcopy(data)


# ------------------------------------------------ fallback records (python -m tickpar.pipeline.sweep fallback)


def _tail(path: str | None, lines: int = 3) -> str:
    if not path or not Path(path).exists():
        return ""
    text = Path(path).read_text(errors="replace").strip().splitlines()
    return " | ".join(line.strip() for line in text[-lines:])


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tickpar.pipeline.sweep")
    sub = parser.add_subparsers(dest="command", required=True)
    fb = sub.add_parser("fallback", help="write the failure record of a job that wrote none")
    fb.add_argument("--out", required=True)
    fb.add_argument("--what", choices=("check", "timing", "golden"), required=True)
    fb.add_argument("--rc", type=int, required=True, help="the command's exit status")
    fb.add_argument("--log", help="the job's log (its last lines become the reason)")
    args = parser.parse_args(argv)
    kind = "timeout" if args.rc in (124, 137) else "crash"
    reason = f"the {args.what} command exited with status {args.rc} without a record"
    tail = _tail(args.log)
    if tail:
        reason += f": {tail}"
    write_fallback(args.out, kind, reason, args.what)
    print(f"tickpar: {args.out}: {kind} ({reason})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
