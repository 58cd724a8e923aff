"""Kernel pieces that stay interpreted Python in the compiled build (see docs/how-to/compiled-kernel.md).

mypyc cannot compile a subclass of ``threading.local``; :class:`tickpar.kernel.eventq.BatchQueue`
keeps its per-thread deferral target here, so that eventq itself compiles.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["DeferTarget"]


class DeferTarget(threading.local):
    """The calling thread's deferral sink (a :class:`tickpar.kernel.eventq.Deferred`, or ``None``)."""

    sink: Any = None
