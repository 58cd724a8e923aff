"""The optional compiled kernel: ``TICKPAR_COMPILED=1 pip install .`` compiles tickpar's event queue with mypyc.

Everything else about the package is in ``pyproject.toml``; this file only adds the extension
modules.  The modules in :data:`COMPILED` are compiled from their own Python source (one source,
two builds: what runs interpreted is what mypyc compiles).  The pure-Python package is the default
and the fallback: it is what gets installed unless ``TICKPAR_COMPILED=1`` is set, and also with it when

* ``TICKPAR_PURE=1`` is set (``make test``'s editable checkout sets it, so edits take effect), or
* the interpreter is a free-threaded CPython (the compiled kernel is built and tested on the
  default interpreter only), or
* no C compiler is found.

Why opt-in: compiled alone, the queue is no faster (PHOLD, bench/instructions.py: 19,023
instructions per event compiled against 18,844 pure), because every event still crosses from
native code into the interpreted model (``process()``, handlers, ``Link.send``) and back, and
those crossings cost what compiling saves.  Compiling model.py too is what would pay; see
docs/how-to/compiled-kernel.md.

mypy (which ships mypyc) is then asked for as a build requirement only when compiling
(``setup_requires``, which setuptools' PEP 517 backend hands to pip as a dynamic build requirement):
a pure build needs nothing but setuptools.  Which build a process runs is
:func:`tickpar.kernel.kernel_build`; ``tickpar run`` records it and ``tickpar list`` shows it.
"""

from __future__ import annotations

import os
import shutil
import sysconfig

from setuptools import setup

#: The modules compiled with mypyc: the event queue (eventq gathers events, gem5queue, batchq and journalq)
#: and what it imports (keys, digests).  model.py stays interpreted: its event classes are combined with
#: mixins at run time, which native classes do not allow.
COMPILED = [
    "tickpar/kernel/eventkeys.py",
    "tickpar/kernel/digests.py",
    "tickpar/kernel/events.py",
    "tickpar/kernel/gem5queue.py",
    "tickpar/kernel/batchq.py",
    "tickpar/kernel/journalq.py",
    "tickpar/kernel/eventq.py",
]
MYPY = "mypy>=2.4,<3"


def _want_compiled() -> bool:
    if os.environ.get("TICKPAR_COMPILED") != "1" or os.environ.get("TICKPAR_PURE") == "1":
        return False
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(os.environ.get("CC", cc).split()[0]) is not None


def _ext_modules() -> list:
    if not _want_compiled():
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:  # the first, requirement-gathering pass of a PEP 517 build: mypy is not there yet
        return []
    # group_name: the shared runtime module is tickpar_kernel__mypyc (a tickpar name, not a hash).
    return mypycify(COMPILED, opt_level="3", group_name="tickpar_kernel")


setup(
    ext_modules=_ext_modules(),
    setup_requires=[MYPY] if _want_compiled() else [],
)
