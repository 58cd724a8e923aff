"""Plugin discovery: one registry, two sources, one rule.

Sources, in this order:

1. Files: every ``*.py`` (not starting with ``_``) in the repository's
   ``strategies/`` and ``workloads/`` folders, plus the files and folders
   listed in the ``TICKPAR_PLUGINS`` environment variable (``os.pathsep``
   separated; a folder contributes its ``*.py`` files).  A file may define
   strategies, workloads, or both.
2. Installed packages exposing the entry-point groups ``tickpar.strategies``
   and ``tickpar.workloads`` (the object is a Strategy/Workload subclass or a
   module defining some).

The rule: a name registered twice is a :class:`PluginError` naming both
sources; so is a plugin that fails to import or lacks ``name``/``summary``.
Names listed in ``TICKPAR_BLOCKED`` (comma separated) are skipped.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tickpar.params import Param
from tickpar.plugins import Strategy, Workload

__all__ = ["REPO_ROOT", "PluginError", "Registry", "get_registry"]

REPO_ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINT_GROUPS = {"strategy": "tickpar.strategies", "workload": "tickpar.workloads"}


class PluginError(Exception):
    """A plugin that cannot be registered (one line, naming the plugin and its source)."""


@dataclass
class Registry:
    """Discovered strategies and workloads, by name."""

    strategies: dict[str, type[Strategy]] = field(default_factory=dict)
    workloads: dict[str, type[Workload]] = field(default_factory=dict)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)

    def strategy(self, name: str) -> type[Strategy]:
        try:
            return self.strategies[name]
        except KeyError:
            allowed = ", ".join(sorted(self.strategies))
            raise PluginError(f"unknown strategy {name!r}: choose one of {allowed}") from None

    def workload(self, name: str) -> type[Workload]:
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
            raise PluginError(
                f"{kind} name {name!r} registered twice: by {self.sources[(kind, name)]} and by {source}"
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
        if inspect.isabstract(cls):
            continue
        if issubclass(cls, Strategy) and cls is not Strategy:
            yield "strategy", cls
        elif issubclass(cls, Workload) and cls is not Workload:
            yield "workload", cls


def _plugin_files() -> list[Path]:
    files: list[Path] = []
    for folder in (REPO_ROOT / "workloads", REPO_ROOT / "strategies"):
        if folder.is_dir():
            files.extend(sorted(p for p in folder.glob("*.py") if not p.name.startswith("_")))
    for item in filter(None, os.environ.get("TICKPAR_PLUGINS", "").split(os.pathsep)):
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.py") if not p.name.startswith("_")))
        elif path.is_file():
            files.append(path)
        else:
            raise PluginError(f"TICKPAR_PLUGINS entry {item!r} is neither a file nor a folder")
    return files


def discover() -> Registry:
    """Scan both sources and return a fresh registry."""
    registry = Registry()
    blocked = {b.strip() for b in os.environ.get("TICKPAR_BLOCKED", "").split(",") if b.strip()}
    for path in _plugin_files():
        module = _load_file(path)
        for kind, cls in _plugin_classes(module):
            if getattr(cls, "name", None) not in blocked:
                registry.add(kind, cls, str(path))
    for kind, group in ENTRY_POINT_GROUPS.items():
        for ep in importlib.metadata.entry_points(group=group):
            try:
                obj = ep.load()
            except Exception as exc:
                raise PluginError(f"entry point {ep.name} ({group}) failed to load: {exc}") from None
            for found_kind, cls in _plugin_classes(obj):
                if found_kind == kind and getattr(cls, "name", None) not in blocked:
                    registry.add(kind, cls, f"entry point {ep.value}")
    return registry


_registry: Registry | None = None


def get_registry(refresh: bool = False) -> Registry:
    """The process-wide registry (discovered on first use)."""
    global _registry
    if _registry is None or refresh:
        _registry = discover()
    return _registry
