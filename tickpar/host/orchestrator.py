"""Pause the workflow engine that launched a timing job while that job's clock runs.

While the timing jobs run -- the only jobs left, one at a time -- the
Snakemake main process still uses most of a core, and a 2-worker cell then
measures far slower in the pipeline than standalone
(docs/measurements/2026-12-02-timing-isolation.md).  A timing job that merely
runs alone cannot fix that; so, while it measures,
the job stops its parent (``SIGSTOP``) and continues it afterwards
(``SIGCONT``).  Nothing in Snakemake has to happen meanwhile: the job is the
only one running, and its own output is written by the job itself.

A stopped orchestrator must never be left behind: besides the ``finally``
that continues it, a watchdog process holds the read end of a pipe whose
write end only this job holds; when the job ends in any way (even
``SIGKILL``) the pipe closes and the watchdog sends ``SIGCONT``.  The watchdog ignores
``SIGTERM``, ``SIGINT`` and ``SIGHUP``: a signal to every process of the job at once
(SLURM's ``scancel``, a terminal's ^C) would otherwise end it before the job's pipe closes,
and the stopped engine would hold its own ``SIGTERM`` until the kill timeout (a SLURM job
stayed ``COMPLETING``).  They are blocked from before its fork until it ignores them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["is_workflow_engine", "paused"]

#: What a signal to the whole job must not end before the watchdog has continued the engine.
_SHIELDED = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})

_WATCHDOG = (
    "import os, signal, sys\n"
    "shielded = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)\n"
    "for sig in shielded:\n"
    "    signal.signal(sig, signal.SIG_IGN)\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, shielded)\n"  # blocked by the job since before the fork
    "sys.stdin.buffer.read()\n"  # returns when the timing job's end of the pipe closes
    "try:\n"
    "    os.kill(int(sys.argv[1]), signal.SIGCONT)\n"
    "except ProcessLookupError:\n"
    "    pass\n"
)


def is_workflow_engine(pid: int) -> bool:
    """Whether ``pid`` is a Snakemake main process (the only kind of parent this module pauses)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(part.endswith(b"snakemake") or part == b"snakemake" for part in cmdline[:3]) or (
        b"-m" in cmdline[:3] and b"snakemake" in cmdline[:4]
    )


@contextlib.contextmanager
def paused(pid: int | None, enabled: bool = True) -> Iterator[bool]:
    """Stop process ``pid`` for the duration of the block, if it is a workflow engine; yields whether it did."""
    if not enabled or pid is None or pid <= 1 or pid == os.getpid() or not is_workflow_engine(pid):
        yield False
        return
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, _SHIELDED)  # the child inherits the mask
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(pid)], stdin=subprocess.PIPE, start_new_session=True
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)
    try:
        os.kill(pid, signal.SIGSTOP)
        yield True
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        assert watchdog.stdin is not None
        watchdog.stdin.close()
        watchdog.wait()
