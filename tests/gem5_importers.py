"""Both gem5 importers on one input: the Python importer and the native port must give the same ImportedTrace.

:func:`compare` imports with both and asserts the same result, field by field (:func:`snapshot`), or the
same :class:`~tickpar.gem5.TraceError` text (on bad input the port stops and the Python importer words the
error: a port that stops where the Python importer reads on fails here, with the port's bug named).
tests/test_gem5_native_import.py uses it directly, and tests/test_gem5_import.py's ``import_trace`` fixture runs
every test of that file through it too (its ``both`` parameter).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tickpar.gem5 import TraceError
from tickpar.gem5 import importer as importer_mod
from tickpar.gem5.names import ComponentRules, load_mapping

python_import = importer_mod.import_trace


def snapshot(trace: importer_mod.ImportedTrace) -> dict[str, Any]:
    """Every field of an ImportedTrace, in a form that compares exactly (rules with their key order)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(trace):
        value = getattr(trace, f.name)
        if f.name == "rules":
            value = list(value.items())
        elif f.name == "reader":
            value = dataclasses.asdict(value)
        elif isinstance(value, list):
            assert all(type(v) is type(value[0]) for v in value), f.name  # plain ints/strs, not numpy scalars
        out[f.name] = value
    return out


def outcome(call: Callable[[], importer_mod.ImportedTrace]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except TraceError as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def compare(
    path: str | Path,
    fmt: str = "auto",
    components: str | Path | None = None,
    events: int = 0,
    *,
    native_expected: bool = True,
) -> importer_mod.ImportedTrace:
    """Import with both; assert the same result (or the same error); return the Python one (or raise its error)."""
    rules = ComponentRules(load_mapping(components) if components else ())

    def native() -> importer_mod.ImportedTrace:
        trace = importer_mod.import_native(path, fmt, int(events), required=True)
        if trace is None:
            assert not native_expected, f"the native importer deferred to Python on {path}"
            return python_import(path, fmt, components, events)
        importer_mod.assign_components(trace, rules)
        return trace

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TICKPAR_GEM5_IMPORTER", "python")
        py = outcome(lambda: python_import(path, fmt, components, events))
    nat = outcome(native)
    assert nat[0] == py[0], (nat, py)
    if py[0] == "error":
        assert nat[1] == py[1]
        raise TraceError(py[1].split(": ", 1)[1])
    assert snapshot(nat[1]) == snapshot(py[1])
    return py[1]
