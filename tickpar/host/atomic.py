"""Writing a file atomically: a reader sees the old file or the whole new one, never half of one.

:func:`read_json_object` reads one back (or says there is none).
:func:`write_json_atomic` is the one way tickpar writes a JSON record (the runner's records, the
prediction's calibration and shape records, the engine benchmark's record), :func:`write_text_atomic`
any other text: a temporary file beside the target, renamed over it with the mode a plain ``open()``
would give (:func:`tickpar.host.paths.publish`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tickpar.host.paths import publish

__all__ = ["read_json_object", "write_json_atomic", "write_text_atomic"]


def read_json_object(path: str | Path | None) -> dict[str, Any] | None:
    """The JSON object in ``path``, or ``None`` where there is none to read (no path, unreadable, not a JSON
    object): a record that a crashed or still-running job did not write is read as absent, not as an error."""
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file beside it and a rename.

    The folder is made if missing; the file gets ``0666`` less the umask, as ``open()`` gives (``mkstemp``
    makes ``0600``); a failed write leaves no temporary file behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, data: Mapping[str, Any], default: Callable[[Any], Any] = str) -> None:
    """Write ``data`` to ``path`` as JSON (``indent=1``, a final newline), atomically (:func:`write_text_atomic`).

    ``default``: how a value JSON does not know is written (``str``; ``float`` keeps numpy numbers numbers).
    """
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=False, default=default) + "\n")
