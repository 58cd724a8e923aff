"""Native strategy plugins: build a plugin's one ``.cpp`` file against the engine's public API, find it, load it.

A plugin's library is named for what it was built from: ``STEM.KEY.so``, ``KEY`` the first 16 hex digits of
``sha256(sha256(source) + API digest)``, so that a library of another source or another engine is never
loaded.  It is looked for beside the source (``.tickpar-native/``, where :func:`build` puts it: ``tickpar
build-native``, ``make native``, or the first run that needs it) and in the engine package
(``tickpar_native/plugins/``, where ``pip install ./native`` puts the checkout's ``strategies/*.cpp``).  The
compiler and flags are the engine's own (``tickpar_native/build_info.json``); a compile error is one line naming
the file and line, with the whole log beside the library.  Before a run the library's declaration must be the
source's (:mod:`tickpar.plugins.native_declaration`) and its API digest the engine's.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tickpar.kernel.params import ParamError
from tickpar.plugins.registry import PluginError

__all__ = ["BUILD_FOLDER", "build", "build_info", "include_dir", "is_native_plugin", "library_for",
           "library_key", "run_options"]  # fmt: skip

#: Where :func:`build` puts a plugin's library, beside its source.
BUILD_FOLDER = ".tickpar-native"
COMPILE_ERROR = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<what>.*)$")


def _module() -> Any:
    import tickpar_native

    return tickpar_native


def is_native_plugin(cls: type[Any]) -> bool:
    """Whether a strategy class is a native plugin's (:class:`~tickpar.plugins.native_declaration.NativeStrategy`)."""
    return getattr(cls, "native_source", None) is not None


def _package_dir() -> Path:
    return Path(_module().__file__).parent


def include_dir() -> Path:
    """The installed public API headers (``#include "tickpar/strategy.hpp"``)."""
    return _package_dir() / "include"


def build_info() -> dict[str, Any]:
    """The compiler, flags and API digest the engine was built with."""
    path = _package_dir() / "build_info.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        raise PluginError(f"the native engine has no {path.name}: rebuild it (`make native`)") from None


def library_key(source: Path) -> str:
    """The key in a library's name: this source, built against this engine's API."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest() + str(_module().API_DIGEST)
    return hashlib.sha256(digest.encode()).hexdigest()[:16]


def _candidates(source: Path) -> list[Path]:
    name = f"{source.stem}.{library_key(source)}.so"
    return [source.parent / BUILD_FOLDER / name, _package_dir() / "plugins" / name]


def build(source: Path, force: bool = False, quiet: bool = False) -> Path:
    """Compile the plugin ``source`` (unless its library exists already); return the library's path.

    Concurrent builds of one plugin (two cells of a sweep) wait for each other on a lock file; the library is
    written to a temporary name and renamed, so a half-written one is never loaded.
    """
    source = source.resolve()
    found = next((p for p in _candidates(source) if p.exists()), None)
    if found is not None and not force:
        return found
    info = build_info()
    folder = source.parent / BUILD_FOLDER
    folder.mkdir(exist_ok=True)
    target = _candidates(source)[0]
    log = folder / f"{source.stem}.log"
    with open(folder / f"{source.stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists() and not force:
            return target
        if not quiet:
            print(f"tickpar: building native strategy {source.name} -> {target}", file=sys.stderr, flush=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{source.stem}.", suffix=".so", dir=folder)
        os.close(fd)
        command = [info["compiler"], *info["flags"], f"-I{include_dir()}", str(source), "-o", tmp]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as exc:
            os.unlink(tmp)
            raise PluginError(f"native plugin {source}: cannot run the compiler {info['compiler']}: {exc}") from None
        log.write_text(" ".join(command) + "\n" + done.stdout + done.stderr)
        if done.returncode != 0:
            os.unlink(tmp)
            raise PluginError(_compile_error(source, done.stderr, log))
        os.replace(tmp, target)
        for old in folder.glob(f"{source.stem}.*.so"):  # libraries of earlier versions of the source
            if old != target:
                old.unlink(missing_ok=True)
    return target


def _compile_error(source: Path, stderr: str, log: Path) -> str:
    """One line: the first error the compiler reported, as file:line: what (the log has the rest)."""
    for line in stderr.splitlines():
        m = COMPILE_ERROR.match(line.strip())
        if m:
            return f"native plugin {m['file']}:{m['line']}: error: {m['what']} (compiler log: {log})"
    tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return f"native plugin {source}: the compiler failed: {tail[0]} (compiler log: {log})"


#: The libraries this process loaded, by path: (device, inode, mtime) of the file it loaded.  The engine keeps a
#: library loaded for the process's life, and the dynamic loader hands out the loaded one for a path again.
_LOADED: dict[str, tuple[int, int, int]] = {}


def _loadable(path: Path) -> Path:
    """``path``, or a private copy of it where this process loaded another file under the same path before (a
    library rebuilt in place, ``--force``): the loader would otherwise run the old code."""
    st = path.stat()
    seen = (st.st_dev, st.st_ino, st.st_mtime_ns)
    key = str(path)
    if _LOADED.setdefault(key, seen) == seen:
        return path
    copy = Path(tempfile.mkdtemp(prefix="tickpar-plugin-")) / path.name
    shutil.copy2(path, copy)
    return copy


def library_for(cls: type[Any]) -> Path:
    """The library of a native plugin's strategy class, built now if it was not, checked against its source."""
    source = Path(cls.native_source)
    path = _loadable(build(source))
    info = _module().plugin_info(str(path))
    if info["api_digest"] != _module().API_DIGEST:
        raise PluginError(f"native plugin {source}: {path} was built against another engine: rebuild it "
                          f"(tickpar build-native {source})")  # fmt: skip
    if info["declaration"] != cls.declaration_text:
        raise PluginError(f"native plugin {source}: the library {path} declares another strategy than the source "
                          f"does: rebuild it (tickpar build-native --force {source})")  # fmt: skip
    return path


def run_options(cls: type[Any], options: dict[str, Any]) -> tuple[list[str], list[str], bool]:
    """The plugin's options as the engine passes them (name and value as text, every declared option, defaults
    filled in) and gem5's checks (a declared bool option ``checks``, else on)."""
    unknown = set(options) - set(cls.options)
    if unknown:
        raise ParamError(f"strategy {cls.name} option {sorted(unknown)[0]} is not declared: "
                         f"allowed are {', '.join(cls.options) or 'none'}")  # fmt: skip
    names: list[str] = []
    values: list[str] = []
    for name, param in cls.options.items():
        value = options.get(name, param.default)
        names.append(name)
        values.append(("true" if value else "false") if isinstance(value, bool) else str(value))
    checks = bool(options.get("checks", True)) if "checks" in cls.options else True
    return names, values, checks
