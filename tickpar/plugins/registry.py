"""Plugin discovery: one registry, two sources, one rule.

Sources, in this order:

1. Files: every ``*.py``, every package folder (a folder holding an
   ``__init__.py``; neither starting with ``_``) and every native strategy
   plugin (``*.cpp``: :data:`SOURCE_LOADERS`) in the checkout's
   ``strategies/`` and ``workloads/`` folders (when tickpar runs from a
   checkout: :data:`CHECKOUT`), plus the files and folders listed in the
   ``TICKPAR_PLUGINS`` environment variable (``os.pathsep`` separated; a
   folder contributes its ``*.py`` files and package folders, a package's
   ``__init__.py`` named as a file is that package).  A file may define
   strategies, workloads, or both; a package's ``__init__.py`` exports them,
   defined there or in the package's own modules (``workloads/multicore/``),
   which import each other relatively (``from .tags import TagArray``).
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
tickpar), which is one plugin; so is a registry with no strategy or no workload
(saying where it looked).  A *broken* plugin does not stop the others: a file or
entry point that fails to import (a syntax error, an exception at import), a
plugin class that lacks ``name``/``summary`` or declares something that is not a
``Param``, and a plugin class that names itself but lacks a required method
(``build()``, ``run()``: it is still abstract) are kept in :attr:`Registry.broken`
with one line each (file and line, class, what is missing).  ``tickpar list``
shows them, every other command warns about them on one line each, and asking
for a broken plugin's name (or for an unknown name while some file is broken) is
a :class:`PluginError` that says why.
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tickpar.host.paths import CHECKOUT, REPO_ROOT
from tickpar.kernel.params import Param

#: A Strategy or Workload subclass.  Discovery tells them by ``plugin_kind`` and names no contract
#: class, so the contracts (and the run specification that looks workloads up here) stay above it.
PluginClass = type[Any]

__all__ = [
    "CHECKOUT",
    "DISCOVERY_ENVIRON",
    "ENTRY_POINT_GROUPS",
    "REPO_ROOT",
    "PluginCodeError",
    "PluginError",
    "Registry",
    "class_file",
    "get_registry",
    "plugin_files",
    "swap_registry",
    "where",
]

#: Plugin kind -> its folder in the checkout (scanned in this order).
PLUGIN_FOLDERS = {"workload": "workloads", "strategy": "strategies"}
#: Suffix -> what turns a plugin source of that kind into its strategy classes, raising ValueError (one line) for a
#: broken one.  ``tickpar.plugins`` sets ``.cpp`` (native strategy plugins: :mod:`tickpar.plugins.native_declaration`),
#: so that discovery itself imports no contract.
SOURCE_LOADERS: dict[str, Callable[[Path], list[type[Any]]]] = {}
ENTRY_POINT_GROUPS = {"strategy": "tickpar.strategies", "workload": "tickpar.workloads"}
#: The environment variables that decide what discovery finds: a child process that runs a cell (a pyperf worker)
#: must see them as its parent does.
DISCOVERY_ENVIRON = ("TICKPAR_PLUGINS", "TICKPAR_BLOCKED")


class PluginError(Exception):
    """A plugin that cannot be registered or used (one line, naming the plugin and its source): bad input."""


class _DuplicateName(PluginError):
    """Two plugins claim one name: ambiguous for every command, so never skipped as broken."""


class PluginCodeError(PluginError):
    """A plugin's own code failed where only the plugin is to blame (a workload's ``build()`` or
    ``stats()``, or its golden sequential run): one line naming the plugin file and line."""


def class_file(cls: type[Any]) -> Path | None:
    """The file that defines ``cls`` (None for a class without one)."""
    module = sys.modules.get(cls.__module__)
    found = getattr(module, "__file__", None)
    return Path(found).resolve() if found else None


def _plugin_file(cls: type[Any]) -> Path | None:
    """The file that makes ``cls`` a plugin: its module's, or, for a class a plugin package exports from one of
    its modules, the package's ``__init__.py`` (so that two copies of a package compare as packages); for a
    native plugin, its ``.cpp`` source."""
    native = getattr(cls, "native_source", None)
    if native is not None:
        return Path(native).resolve()
    module = cls.__module__
    while "." in module:
        parent = module.rpartition(".")[0]
        if getattr(sys.modules.get(parent), cls.__name__, None) is not cls:
            break
        module = parent
    found = getattr(sys.modules.get(module), "__file__", None)
    return Path(found).resolve() if found else None


def where(exc: BaseException, file: Path | None = None) -> str:
    """``path:line (in function)`` of the deepest traceback frame of ``exc`` in ``file`` (a plugin's file; a
    package's ``__init__.py`` stands for every file of the package); without one there, of the deepest frame
    outside tickpar's own package, else of the deepest frame."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    if not frames:
        return str(file) if file is not None else "?"
    package = str(REPO_ROOT / "tickpar")
    chosen = None
    if file is not None:
        plugin_package = file.parent if file.name == "__init__.py" else None

        def in_plugin(filename: str) -> bool:
            path = Path(filename).resolve()
            return path == file or (plugin_package is not None and path.is_relative_to(plugin_package))

        chosen = next((f for f in reversed(frames) if in_plugin(f.filename)), None)
    if chosen is None:
        chosen = next((f for f in reversed(frames) if not f.filename.startswith(package)), frames[-1])
    return f"{chosen.filename}:{chosen.lineno} (in {chosen.name})"


@dataclass
class Registry:
    """Discovered strategies and workloads, by name."""

    strategies: dict[str, PluginClass] = field(default_factory=dict)
    workloads: dict[str, PluginClass] = field(default_factory=dict)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Broken plugins, skipped: source (file or entry point) -> one line saying what is wrong.
    broken: dict[str, str] = field(default_factory=dict)
    #: (kind, name) -> the source in :attr:`broken` of a plugin class that names itself but is broken.
    broken_names: dict[tuple[str, str], str] = field(default_factory=dict)

    def strategy(self, name: str) -> PluginClass:
        return self._lookup("strategy", name, self.strategies)

    def workload(self, name: str) -> PluginClass:
        return self._lookup("workload", name, self.workloads)

    def _lookup(self, kind: str, name: str, table: dict[str, PluginClass]) -> PluginClass:
        found = table.get(name)
        if found is not None:
            return found
        source = self.broken_names.get((kind, name))
        if source is not None:
            raise PluginError(self.broken[source])
        message = f"unknown {kind} {name!r}: choose one of {', '.join(sorted(table))}"
        if self.broken:
            message += f" (skipped as broken: {'; '.join(self.broken.values())})"
        raise PluginError(message)

    def mark_broken(self, source: str, message: str, kind: str | None = None, name: str | None = None) -> None:
        """Keep a broken plugin out of the tables, with its one-line reason (and its name, if it has one)."""
        self.broken.setdefault(source, message)
        if kind is not None and isinstance(name, str) and name:
            self.broken_names.setdefault((kind, name), source)

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
            first, again = _plugin_file(table[name]), _plugin_file(cls)
            if first is not None and again is not None and _same_file(first, again):
                return  # one file reached twice (a folder and an installed copy of it): one plugin
            raise _DuplicateName(
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
                    "engines": list(cls.engines),
                    "source": self.sources[("strategy", name)],
                }
                for name, cls in sorted(self.strategies.items())
            },
            "workloads": {
                name: {
                    "summary": cls.summary,
                    "params": params(cls.params),
                    "statistics": dict(cls.statistics),
                    "source": self.sources[("workload", name)],
                }
                for name, cls in sorted(self.workloads.items())
            },
            "broken": dict(self.broken),
        }


def _same_file(a: Path, b: Path) -> bool:
    """One plugin file: the same path, or an identical copy (a checkout's file and its installed copy); for a
    package (its ``__init__.py``), every module of the package identical."""
    if a == b:
        return True
    try:
        if a.name == b.name == "__init__.py":
            return _package_sources(a.parent) == _package_sources(b.parent)
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _package_sources(folder: Path) -> dict[str, bytes]:
    """Every ``*.py`` of a package folder, by path relative to it (sub-packages included)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.py"))}


def _load_file(path: Path) -> ModuleType:
    """Import a plugin file, or a plugin package from its ``__init__.py`` (so that its modules can import
    each other relatively), under a name of its own: ``tickpar_plugin_<folder>_<file or package>``."""
    package = path.name == "__init__.py"
    named = path.parent if package else path.with_suffix("")
    module_name = "tickpar_plugin_" + "_".join(named.parts[-2:]).replace("-", "_")
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(
        module_name, path, submodule_search_locations=[str(path.parent)] if package else None
    )
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot load plugin file {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before exec so dataclasses/pickling inside the plugin can find it.
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a broken plugin must not take the whole CLI down with a traceback
        for loaded in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
            del sys.modules[loaded]
        detail = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise PluginError(
            f"plugin file {path} failed to import at {where(exc, path.resolve())}: {type(exc).__name__}: {detail}"
        ) from None
    return module


def _plugin_classes(obj: Any) -> Iterable[tuple[str, type[Any]]]:
    """The Strategy and Workload subclasses of ``obj`` (a class, a module's own classes, or the classes a
    package exports from its own modules), abstract ones included: an abstract class that names itself is a
    plugin missing a method (see :func:`_missing`)."""
    if inspect.isclass(obj):
        candidates = [obj]
    else:
        inside = obj.__name__ + "." if hasattr(obj, "__path__") else None

        def own(cls: type[Any]) -> bool:
            return cls.__module__ == obj.__name__ or (inside is not None and cls.__module__.startswith(inside))

        candidates = [v for v in vars(obj).values() if inspect.isclass(v) and own(v)]
    for cls in candidates:
        kind = getattr(cls, "plugin_kind", None)
        if kind in ENTRY_POINT_GROUPS:
            yield kind, cls


def _missing(kind: str, cls: type[Any], source: str) -> str | None:
    """Why an abstract plugin class cannot be used, or ``None`` for an abstract base that names no plugin."""
    if not inspect.isabstract(cls):
        return None
    if "name" not in vars(cls):
        return ""  # an intermediate base class: not a plugin, nothing to report
    methods = ", ".join(f"{m}()" for m in sorted(getattr(cls, "__abstractmethods__", ())))
    guide = "workloads/README.md" if kind == "workload" else "strategies/README.md"
    return (
        f"{kind} {cls.name!r} (class {cls.__name__} in {class_file(cls) or source}) lacks {methods}:"
        f" define it (see {guide})"
    )


def _register(registry: Registry, kind: str, cls: type[Any], source: str, blocked: set[str]) -> None:
    """Add one plugin class, or keep it as broken (abstract, no name or summary, a bad declaration)."""
    name = getattr(cls, "name", None)
    if name in blocked:
        return
    missing = _missing(kind, cls, source)
    if missing == "":
        return
    if missing is not None:
        registry.mark_broken(f"{source}: {cls.__name__}", missing, kind, name)
        return
    try:
        registry.add(kind, cls, source)
    except _DuplicateName:
        raise
    except PluginError as exc:
        registry.mark_broken(f"{source}: {cls.__name__}", str(exc), kind, name)


def _py_files(folder: Path, sources: bool = True) -> list[Path]:
    """A folder's plugin files: its ``*.py`` files and its packages' ``__init__.py`` (neither starting with
    ``_``), by plugin name, and (``sources``) its other plugin sources (:data:`SOURCE_LOADERS`: strategies)."""
    files = [p for p in folder.glob("*.py") if not p.name.startswith("_")]
    files += [p for p in folder.glob("*/__init__.py") if not p.parent.name.startswith("_")]
    for suffix in SOURCE_LOADERS if sources else ():
        files += [p for p in folder.glob(f"*{suffix}") if not p.name.startswith("_")]
    return sorted(files, key=lambda p: (p.parent.name if p.name == "__init__.py" else p.stem, str(p)))


def plugin_files() -> list[Path]:
    """The plugin files of source 1: the checkout's folders, then ``TICKPAR_PLUGINS``."""
    files: list[Path] = []
    if CHECKOUT is not None:
        for kind, name in PLUGIN_FOLDERS.items():
            if (CHECKOUT / name).is_dir():
                files.extend(_py_files(CHECKOUT / name, sources=kind == "strategy"))
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


def _entry_point_objects(
    ep: importlib.metadata.EntryPoint, scanned: set[Path], registry: Registry
) -> list[tuple[str, Any]]:
    """``(source, object)`` pairs of one entry point: its object and, for a package, each of its modules.

    Modules whose file is already in ``scanned`` are left out: the same file,
    found through an editable install of this checkout, counts once.  An entry
    point or module that fails to import is kept in ``registry.broken``.
    """
    if ep.attr is None and _module_file(ep.module) in scanned:
        return []
    try:
        obj = ep.load()
    except Exception as exc:
        registry.mark_broken(
            f"entry point {ep.value}",
            f"entry point {ep.name} ({ep.group}) failed to load at {where(exc)}: {type(exc).__name__}: {exc}",
        )
        return []
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
                registry.mark_broken(
                    f"entry point {ep.name} ({ep.group}): {name}",
                    f"plugin module {name} (entry point {ep.name}) failed to import at {where(exc)}:"
                    f" {type(exc).__name__}: {exc}",
                )
                continue
            found.append((f"entry point {ep.name} ({ep.group}): {name}", module))
    return found


def discover() -> Registry:
    """Scan both sources and return a fresh registry (broken plugins kept in ``registry.broken``)."""
    registry = Registry()
    blocked = {b.strip() for b in os.environ.get("TICKPAR_BLOCKED", "").split(",") if b.strip()}
    files = plugin_files()
    for path in files:
        loader = SOURCE_LOADERS.get(path.suffix)
        if loader is not None:
            try:
                classes = loader(path)
            except ValueError as exc:
                registry.mark_broken(str(path), str(exc), "strategy", getattr(exc, "plugin_name", None))
                continue
            for cls in classes:
                _register(registry, "strategy", cls, str(path), blocked)
            continue
        try:
            module = _load_file(path)
        except PluginError as exc:
            registry.mark_broken(str(path), str(exc))
            continue
        for kind, cls in _plugin_classes(module):
            _register(registry, kind, cls, str(path), blocked)
    scanned = {p.resolve() for p in files}
    for kind, group in ENTRY_POINT_GROUPS.items():
        for ep in importlib.metadata.entry_points(group=group):
            for source, obj in _entry_point_objects(ep, scanned, registry):
                for found_kind, cls in _plugin_classes(obj):
                    if found_kind == kind:
                        _register(registry, kind, cls, source, blocked)
    for kind, table in (("strategy", registry.strategies), ("workload", registry.workloads)):
        if not table:
            broken = f"; skipped as broken: {'; '.join(registry.broken.values())}" if registry.broken else ""
            raise PluginError(f"no {kind} found: {_searched(kind, blocked)}{broken}")
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


def swap_registry(registry: Registry | None) -> Registry | None:
    """Install ``registry`` as the process-wide one (``None``: discover again on next use); return the one it
    replaces. For callers that change the plugins for a while and then put the very same registry back."""
    global _registry
    previous, _registry = _registry, registry
    return previous
