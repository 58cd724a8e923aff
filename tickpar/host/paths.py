"""Where tickpar lives: its package folder, and the checkout around it when there is one."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHECKOUT", "PACKAGE_DIR", "REPO_ROOT"]

#: The ``tickpar`` package folder of the copy being run (a checkout's, or site-packages').
PACKAGE_DIR = Path(__file__).resolve().parent.parent
#: The folder that holds the package: a checkout's root, or site-packages for an installed copy.
REPO_ROOT = PACKAGE_DIR.parent
#: The checkout tickpar runs from (its plugin folders are scanned), or None for an installed copy.
CHECKOUT: Path | None = REPO_ROOT if (REPO_ROOT / "pyproject.toml").is_file() else None
