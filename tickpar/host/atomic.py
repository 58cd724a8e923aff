"""Writing a JSON record atomically: a reader sees the old file or the whole new one, never half of one.

:func:`write_json_atomic` is the one way tickpar writes a JSON record (the runner's records, the
prediction's calibration and shape records, the engine benchmark's record): a temporary file beside
the target, renamed over it with the mode a plain ``open()`` would give (:func:`tickpar.host.paths.publish`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tickpar.host.paths import publish

__all__ = ["write_json_atomic"]


def write_json_atomic(path: str | Path, data: Mapping[str, Any], default: Callable[[Any], Any] = str) -> None:
    """Write ``data`` to ``path`` as JSON (``indent=1``, a final newline) via a temporary file and a rename.

    ``default``: how a value JSON does not know is written (``str``; ``float`` keeps numpy numbers numbers).
    The folder is made if missing; the file gets ``0666`` less the umask, as ``open()`` gives (``mkstemp``
    makes ``0600``); a failed write leaves no temporary file behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=False, default=default)
            f.write("\n")
        publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
