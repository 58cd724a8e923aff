"""Plugin discovery: one registry, two sources, one rule.

Sources, in this order:

1. Files: every ``*.py`` (not starting with ``_``) in the checkout's
   ``strategies/`` and ``workloads/`` folders (when tickpar runs from a
   checkout: :data:`CHECKOUT`), plus the files and folders listed in the
   ``TICKPAR_PLUGINS`` environment variable (``os.pathsep`` separated; a
   folder contributes its ``*.py`` files).  A file may define strategies,
   workloads, or both.
2. Installed packages exposing the entry-point groups ``tickpar.strategies``
   and ``tickpar.workloads`` (the object is a Strategy/Workload subclass or a
   module defining some, or a package whose modules define some).  tickpar's
   own built-in plugins are installed this way: the checkout's folders become
   the packages ``tickpar.builtin.strategies`` and ``tickpar.builtin.workloads``
   (pyproject.toml), so a non-editable install finds them without a checkout.  An entry point whose
   module is a file already found in step 1 (an editable install of the
   checkout) counts once.

The rule: a name registered twice is a :class:`PluginError` naming both
sources and both files, unless both are one file (the same path, or an identical
copy: a checkout's ``strategies/`` on ``TICKPAR_PLUGINS`` over an installed
tickpar), which is one plugin; so is a plugin that fails to import or lacks ``name``/``summary``,
and so is a registry with no strategy or no workload (saying where it looked).
Names listed in ``TICKPAR_BLOCKED`` (comma separated) are skipped.

Plugin classes are recognised by the ``plugin_kind`` that their base class
(:class:`tickpar.plugins.Strategy` or :class:`~tickpar.plugins.Workload`)
declares, so discovery needs no import of the plugin contracts
(:class:`~tickpar.plugins.spec.RunSpec` imports this module to build models).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import pkgutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tickpar.host.paths import CHECKOUT, REPO_ROOT
from tickpar.kernel.params import Param

#: A Strategy or Workload subclass.  Discovery tells them by ``plugin_kind`` and names no contract
#: class, so the contracts (and the run specification that looks workloads up here) stay above it.
PluginClass = type[Any]

__all__ = ["CHECKOUT", "ENTRY_POINT_GROUPS", "REPO_ROOT", "PluginError", "Registry", "get_registry", "plugin_files"]

#: Plugin kind -> its folder in the checkout (scanned in this order).
PLUGIN_FOLDERS = {"workload": "workloads", "strategy": "strategies"}
ENTRY_POINT_GROUPS = {"strategy": "tickpar.strategies", "workload": "tickpar.workloads"}


class PluginError(Exception):
    """A plugin that cannot be registered (one line, naming the plugin and its source)."""


@dataclass
class Registry:
    """Discovered strategies and workloads, by name."""

    strategies: dict[str, PluginClass] = field(default_factory=dict)
    workloads: dict[str, PluginClass] = field(default_factory=dict)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)

    def strategy(self, name: str) -> PluginClass:
        try:
            return self.strategies[name]
        except KeyError:
            allowed = ", ".join(sorted(self.strategies))
            raise PluginError(f"unknown strategy {name!r}: choose one of {allowed}") from None

    def workload(self, name: str) -> PluginClass:
        try:
            return self.workloads[name]
        except KeyError:
            allowed = ", ".join(sorted(self.workloads))
            raise PluginError(f"unknown workload {name!r}: choose one of {allowed}") from None

    def add(self, kind: str, cls: type[Any], source: str) -> None:
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"{kind} class {cls.__name__} from {source} has no 'name'")
        if not isinstance(getattr(cls, "summary", None), str):
            raise PluginError(f"{kind} {name!r} from {source} has no 'summary'")
        params = cls.options if kind == "strategy" else cls.params
        for pname, spec in params.items():
            if not isinstance(spec, Param):
                raise PluginError(f"{kind} {name!r} from {source}: {pname!r} is not a Param")
        table = self.strategies if kind == "strategy" else self.workloads
        if name in table and table[name] is not cls:
            first, again = _class_file(table[name]), _class_file(cls)
            if first is not None and again is not None and _same_file(first, again):
                return  # one file reached twice (a folder and an installed copy of it): one plugin
            raise PluginError(
                f"{kind} name {name!r} registered twice: by {self.sources[(kind, name)]}"
                f" ({first or 'unknown file'}) and by {source} ({again or 'unknown file'})"
            )
        table[name] = cls
        self.sources[(kind, name)] = source

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of every plugin (``tickpar list --json``)."""

        def params(table: dict[str, Param]) -> dict[str, Any]:
            return {k: v.describe() for k, v in table.items()}

        return {
            "strategies": {
                name: {
                    "summary": cls.summary,
                    "options": params(cls.options),
                    "orders": list(cls.orders),
                    "max_workers": cls.max_workers,
                    "source": self.sources[("strategy", name)],
                }
                for name, cls in sorted(self.strategies.items())
            },
            "workloads": {
                name: {
                    "summary": cls.summary,
                    "params": params(cls.params),
                    "source": self.sources[("workload", name)],
                }
                for name, cls in sorted(self.workloads.items())
            },
        }


def _class_file(cls: type[Any]) -> Path | None:
    """The file that defines ``cls`` (None for a class without one)."""
    module = sys.modules.get(cls.__module__)
    where = getattr(module, "__file__", None)
    return Path(where).resolve() if where else None


def _same_file(a: Path, b: Path) -> bool:
    """One plugin file: the same path, or an identical copy (a checkout's file and its installed copy)."""
    if a == b:
        return True
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _load_file(path: Path) -> ModuleType:
    module_name = "tickpar_plugin_" + "_".join(path.with_suffix("").parts[-2:]).replace("-", "_")
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot load plugin file {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before exec so dataclasses/pickling inside the plugin can find it.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a broken plugin must not take the whole CLI down with a traceback
        del sys.modules[module_name]
        raise PluginError(f"plugin file {path} failed to import: {type(exc).__name__}: {exc}") from None
    return module


def _plugin_classes(obj: Any) -> Iterable[tuple[str, type[Any]]]:
    if inspect.isclass(obj):
        candidates = [obj]
    else:
        candidates = [v for v in vars(obj).values() if inspect.isclass(v) and v.__module__ == obj.__name__]
    for cls in candidates:
        kind = getattr(cls, "plugin_kind", None)
        if kind in ENTRY_POINT_GROUPS and not inspect.isabstract(cls):
            yield kind, cls


def _py_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def plugin_files() -> list[Path]:
    """The plugin files of source 1: the checkout's folders, then ``TICKPAR_PLUGINS``."""
    files: list[Path] = []
    if CHECKOUT is not None:
        for name in PLUGIN_FOLDERS.values():
            if (CHECKOUT / name).is_dir():
                files.extend(_py_files(CHECKOUT / name))
    for item in filter(None, os.environ.get("TICKPAR_PLUGINS", "").split(os.pathsep)):
        path = Path(item)
        if path.is_dir():
            files.extend(_py_files(path))
        elif path.is_file():
            files.append(path)
        else:
            raise PluginError(f"TICKPAR_PLUGINS entry {item!r} is neither a file nor a folder")
    return files


def _module_file(module: str) -> Path | None:
    """The file that would be imported for ``module`` (None when it cannot be told without importing it)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    return Path(spec.origin).resolve()


def _entry_point_objects(ep: importlib.metadata.EntryPoint, scanned: set[Path]) -> list[tuple[str, Any]]:
    """``(source, object)`` pairs of one entry point: its object and, for a package, each of its modules.

    Modules whose file is already in ``scanned`` are left out: the same file,
    found through an editable install of this checkout, counts once.
    """
    if ep.attr is None and _module_file(ep.module) in scanned:
        return []
    try:
        obj = ep.load()
    except Exception as exc:
        raise PluginError(f"entry point {ep.name} ({ep.group}) failed to load: {exc}") from None
    found = [(f"entry point {ep.value}", obj)]
    if inspect.ismodule(obj) and hasattr(obj, "__path__"):
        for info in sorted(pkgutil.iter_modules(obj.__path__), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            name = f"{obj.__name__}.{info.name}"
            if _module_file(name) in scanned:
                continue
            try:
                module = importlib.import_module(name)
            except Exception as exc:
                raise PluginError(f"plugin module {name} (entry point {ep.name}) failed to import: {exc}") from None
            found.append((f"entry point {ep.name} ({ep.group}): {name}", module))
    return found


def discover() -> Registry:
    """Scan both sources and return a fresh registry."""
    registry = Registry()
    blocked = {b.strip() for b in os.environ.get("TICKPAR_BLOCKED", "").split(",") if b.strip()}
    files = plugin_files()
    for path in files:
        module = _load_file(path)
        for kind, cls in _plugin_classes(module):
            if getattr(cls, "name", None) not in blocked:
                registry.add(kind, cls, str(path))
    scanned = {p.resolve() for p in files}
    for kind, group in ENTRY_POINT_GROUPS.items():
        for ep in importlib.metadata.entry_points(group=group):
            for source, obj in _entry_point_objects(ep, scanned):
                for found_kind, cls in _plugin_classes(obj):
                    if found_kind == kind and getattr(cls, "name", None) not in blocked:
                        registry.add(kind, cls, source)
    for kind, table in (("strategy", registry.strategies), ("workload", registry.workloads)):
        if not table:
            raise PluginError(f"no {kind} found: {_searched(kind, blocked)}")
    return registry


def _searched(kind: str, blocked: set[str]) -> str:
    """Where discovery looked, for the empty-registry error."""
    where = []
    if CHECKOUT is not None:
        where.append(f"the checkout folder {CHECKOUT / PLUGIN_FOLDERS[kind]}")
    else:
        where.append(f"no checkout (tickpar is installed at {REPO_ROOT / 'tickpar'})")
    where.append(f"TICKPAR_PLUGINS={os.environ.get('TICKPAR_PLUGINS', '')!r}")
    where.append(f"entry-point group {ENTRY_POINT_GROUPS[kind]!r}")
    if blocked:
        where.append(f"TICKPAR_BLOCKED={','.join(sorted(blocked))!r}")
    return (
        "searched " + ", ".join(where) + "; install tickpar with pip (its built-in plugins are entry points) "
        "or run it from a checkout"
    )


_registry: Registry | None = None


def get_registry(refresh: bool = False) -> Registry:
    """The process-wide registry (discovered on first use)."""
    global _registry
    if _registry is None or refresh:
        _registry = discover()
    return _registry
