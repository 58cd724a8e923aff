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

This module holds the schema, validation and loading; the cells and their files are
:mod:`~tickpar.pipeline.cells` and the expansion :mod:`~tickpar.pipeline.expansion`, whose public
names, once this module's, are re-exported here (``from tickpar.pipeline.sweep import SweepCell`` works).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from tickpar.host.interpreters import INTERPRETERS
from tickpar.host.paths import REPO_ROOT
from tickpar.kernel.eventq import ORDERS
from tickpar.kernel.work import WORK_MODES
from tickpar.native import ENGINES
from tickpar.perf.timing import write_fallback
from tickpar.pipeline.cells import (  # re-exported (module docstring)
    CHECK_PATTERN,
    DEFAULT_VARIANT,
    GOLDEN_PATTERN,
    TIMING_GROUP_PATTERN,
    TIMING_PATTERN,
    WILDCARD_CONSTRAINTS,
    Sweep,
    SweepCell,
    SweepError,
    format_value,
)
from tickpar.pipeline.expansion import expand, native_takes, sweeps_of  # re-exported (module docstring)
from tickpar.plugins import BASELINE
from tickpar.plugins.registry import PluginError, get_registry

__all__ = [
    "BASELINE",
    "CHECK_PATTERN",
    "DEFAULT_VARIANT",
    "GOLDEN_PATTERN",
    "SCHEMA_PATH",
    "TIMING_GROUP_PATTERN",
    "TIMING_PATTERN",
    "WILDCARD_CONSTRAINTS",
    "Sweep",
    "SweepCell",
    "SweepError",
    "config_schema",
    "expand",
    "format_value",
    "load_sweep",
    "native_takes",
    "sweeps_of",
    "validate_config",
    "write_fallback",
]

SCHEMA_PATH = REPO_ROOT / "config" / "config.schema.yaml"


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
    """The full config schema: the skeleton (``config/config.schema.yaml``) with the registry's names and
    parameters filled in: its ``workload_entry`` and ``strategy_entry`` once per plugin."""
    if describe is None:
        describe = get_registry().describe()
    schema = yaml.safe_load(Path(base).read_text())
    defs = schema["$defs"]
    workload_entry, strategy_entry = defs.pop("workload_entry"), defs.pop("strategy_entry")
    defs["order"] = {"enum": list(ORDERS), "description": "tie order mode"}
    defs["work"] = {"enum": list(WORK_MODES), "description": "work model"}
    defs["interpreter"] = {"enum": list(INTERPRETERS), "description": "interpreter the cells run under"}
    defs["engine"] = {"enum": list(ENGINES), "description": "engine the cells run on (python, or the C++ replay)"}
    workloads = {}
    for name, entry in describe["workloads"].items():
        workloads[name] = _workload_schema(workload_entry, name, entry)
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
    strategies = {name: _strategy_schema(strategy_entry, name, entry) for name, entry in describe["strategies"].items()}
    defs["strategies"] = {
        "type": "object",
        "description": "strategy name -> variants",
        "minProperties": 1,
        "additionalProperties": False,
        "x-what": "strategy",
        "properties": strategies,
    }
    return schema


def _workload_schema(template: dict[str, Any], name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The schema's ``workload_entry`` filled in for workload ``name`` (its summary and parameter table)."""
    params = entry["params"]
    out = copy.deepcopy(template)
    out["description"] = entry["summary"]
    out["x-what"] = f"workload {name} key"
    props = out["properties"]
    props["shapes"]["additionalProperties"] = _table_schema(params, f"workload {name} parameter")
    props["check_shapes"]["additionalProperties"] = _table_schema(params, f"workload {name} parameter")
    sweep = props["sweep"]
    sweep["items"] = {"$ref": f"#/$defs/sweep_{name}"}
    sweep["x-what"] = f"workload {name} sweep key"
    sweep["properties"]["param"] = {"enum": sorted(params)}
    described = sweep["properties"]["params"]["description"]
    sweep["properties"]["params"] = {**_table_schema(params, f"workload {name} parameter"), "description": described}
    return out


def _strategy_schema(template: dict[str, Any], name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The schema's ``strategy_entry`` filled in for strategy ``name`` (its summary and option table)."""
    out = copy.deepcopy(template)
    out["description"] = entry["summary"]
    out["x-what"] = f"strategy {name} key"
    for key in ("variants", "check_variants"):
        out["properties"][key]["additionalProperties"] = _table_schema(entry["options"], f"strategy {name} option")
    return out


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


def use_plugin_paths(paths: Any) -> None:
    """The config's ``plugins``: plugin files or folders (relative to the working directory) that discovery
    finds as if they were on ``TICKPAR_PLUGINS``, in this process and in every job it starts (which inherit the
    variable); the registry is refreshed.  A path that does not exist is a :class:`SweepError` naming it."""
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise SweepError(f"plugins: {paths!r} is not allowed: a list of plugin files or folders")
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise SweepError(f"plugins: {missing[0]!r} does not exist (from {Path.cwd()}): a plugin file or folder")
    present = [p for p in os.environ.get("TICKPAR_PLUGINS", "").split(os.pathsep) if p]
    wanted = [str(Path(p).resolve()) for p in paths]
    os.environ["TICKPAR_PLUGINS"] = os.pathsep.join(dict.fromkeys([*wanted, *present]))
    get_registry(refresh=True)


def load_sweep(config: dict[str, Any], source: str = "config") -> Sweep:
    """Validate ``config`` (in place, defaults filled in) and expand it; raise SweepError with one line.  The
    config's ``plugins`` are made discoverable first (:func:`use_plugin_paths`)."""
    try:
        if config.get("plugins"):
            use_plugin_paths(config["plugins"])
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
