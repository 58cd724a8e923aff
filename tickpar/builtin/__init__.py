"""tickpar's built-in plugins, as packages: the top-level ``strategies/`` and ``workloads/`` folders.

An installed tickpar (``pip install .``) holds them as real sub-packages
(pyproject.toml maps the folders to ``tickpar.builtin.strategies`` and
``tickpar.builtin.workloads``), and names each in the entry-point group
``tickpar.strategies`` / ``tickpar.workloads``.

A checkout has no such sub-folders: the files stay where users add theirs.  So that
the entry points resolve whichever copy of ``tickpar`` is imported (Snakemake puts
the checkout on ``sys.path`` ahead of an installed copy), this package then maps the
two names onto the checkout's folders.  The registry counts a file reached both ways
(entry point and folder scan) once (:mod:`tickpar.plugins.registry`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parent.parent

for _name in ("strategies", "workloads"):
    _folder = _CHECKOUT / _name
    if (_HERE / _name).is_dir() or not (_folder / "__init__.py").is_file():
        continue  # an installed copy (real sub-package), or no checkout folder to map
    _spec = importlib.util.spec_from_file_location(
        f"{__name__}.{_name}", _folder / "__init__.py", submodule_search_locations=[str(_folder)]
    )
    if _spec is None or _spec.loader is None:
        continue
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _module
    _spec.loader.exec_module(_module)
