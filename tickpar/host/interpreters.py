"""The interpreters a sweep can run cells under: ``default`` and ``freethreaded`` (docs/explanation/design.md §11).

* ``default``: the interpreter running the pipeline (``sys.executable``: the main venv's).
* ``freethreaded``: a free-threaded CPython (PEP 703, built with ``Py_GIL_DISABLED`` and running
  with the GIL off), from the venv ``make freethreaded`` creates: ``.venv-ft/`` in the checkout (or
  in the working folder when tickpar is installed), or the venv ``$TICKPAR_FT_VENV`` names.

The pipeline stays on the default interpreter and launches each cell's check and timing jobs under
its interpreter's ``python`` (:func:`interpreter_python`); a sweep that asks for an interpreter that
is not there stops with one line saying how to get it (:class:`InterpreterError`).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from tickpar.host.paths import CHECKOUT

__all__ = [
    "DEFAULT",
    "FREETHREADED",
    "FT_VENV_ENV",
    "HOW_TO_GET",
    "INTERPRETERS",
    "InterpreterError",
    "ft_venv",
    "interpreter_python",
    "is_freethreaded",
]

DEFAULT = "default"
FREETHREADED = "freethreaded"
INTERPRETERS = (DEFAULT, FREETHREADED)
#: A venv of a free-threaded interpreter to use instead of ``.venv-ft/``.
FT_VENV_ENV = "TICKPAR_FT_VENV"
HOW_TO_GET = "run `make freethreaded` (it builds CPython 3.13 --disable-gil and .venv-ft/), or set TICKPAR_FT_VENV"

_PROBE = (
    "import sys, sysconfig\n"
    "ok = bool(sysconfig.get_config_var('Py_GIL_DISABLED')) and not sys._is_gil_enabled()\n"
    "import tickpar\n"
    "sys.exit(0 if ok else 3)\n"
)


class InterpreterError(Exception):
    """An interpreter a sweep asks for is not available (the message is one line saying how to get it)."""


def ft_venv() -> Path:
    """The free-threaded venv: ``$TICKPAR_FT_VENV``, else ``.venv-ft/`` in the checkout (or the working folder)."""
    given = os.environ.get(FT_VENV_ENV)
    if given:
        return Path(given).expanduser().absolute()
    return (CHECKOUT if CHECKOUT is not None else Path.cwd()) / ".venv-ft"


@functools.cache
def is_freethreaded(python: str) -> bool | None:
    """Whether ``python`` is a free-threaded CPython running with the GIL off and able to import tickpar.

    ``None`` when it runs but cannot import tickpar (a venv without it).
    """
    try:
        proc = subprocess.run([python, "-c", _PROBE], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    if proc.returncode == 0:
        return True
    if proc.returncode == 1 and b"ModuleNotFoundError" in proc.stderr:
        return None
    return False


def interpreter_python(name: str) -> str:
    """The ``python`` executable that runs cells under interpreter ``name``; :class:`InterpreterError` if none."""
    if name == DEFAULT:
        return sys.executable
    if name != FREETHREADED:
        raise InterpreterError(f"interpreter {name!r} is not known: choose one of {', '.join(INTERPRETERS)}")
    venv = ft_venv()
    python = venv / "bin" / "python"
    if not python.exists():
        raise InterpreterError(f"no free-threaded interpreter: {python} does not exist; {HOW_TO_GET}")
    state = is_freethreaded(str(python))
    if state is None:
        raise InterpreterError(f"{python} cannot import tickpar; {HOW_TO_GET}")
    if not state:
        raise InterpreterError(f"{python} is not a free-threaded CPython with the GIL off; {HOW_TO_GET}")
    return str(python)
