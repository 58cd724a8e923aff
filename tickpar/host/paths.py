"""Where tickpar lives: its package folder, and the checkout around it when there is one; how it writes files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["CHECKOUT", "PACKAGE_DIR", "REPO_ROOT", "publish"]

#: The ``tickpar`` package folder of the copy being run (a checkout's, or site-packages').
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The folder that holds the package: a checkout's root, or site-packages for an installed copy.
REPO_ROOT = PACKAGE_DIR.parent
#: The checkout tickpar runs from (its plugin folders are scanned), or None for an installed copy.
CHECKOUT: Path | None = REPO_ROOT if (REPO_ROOT / "pyproject.toml").is_file() else None


_umask_lock = threading.Lock()


def publish(tmp: str | Path, path: str | Path) -> None:
    """Rename the finished temporary file ``tmp`` to ``path`` with the mode a plain ``open()`` would give
    it (``0o666`` less the umask): ``tempfile.mkstemp`` creates files readable by their owner only."""
    with _umask_lock:  # reading the umask means setting it: keep other threads from seeing the 0
        umask = os.umask(0)
        os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)
