"""Process groups: a child started in its own session, and everything it started, killed at once."""

from __future__ import annotations

import os
import signal
import subprocess

__all__ = ["kill_group"]


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of ``proc`` (started with ``start_new_session=True``); gone already is fine.

    A timed-out cell or timing run may have started MPI ranks or worker
    processes of its own: killing the group takes them all.
    """
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
