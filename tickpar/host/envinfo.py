"""The environment a result was produced in: interpreter, GIL state, CPU, versions."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
import sysconfig
from typing import Any

from tickpar.host.affinity import pinning_requested
from tickpar.host.paths import REPO_ROOT

__all__ = ["environment", "gil_enabled", "git_sha", "versions"]

_PACKAGES = ("tickpar", "snakemake", "pandas", "seaborn", "matplotlib", "pyperf", "numpy", "networkx", "mpi4py")


def gil_enabled() -> bool:
    """Whether the GIL is on in this process (free-threaded builds may turn it off)."""
    check = getattr(sys, "_is_gil_enabled", None)
    return bool(check()) if check is not None else True


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.cache
def git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


@functools.cache
def versions() -> dict[str, str | None]:
    """Installed versions of the packages that can change a result or its timing."""
    out: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


@functools.cache
def _static_environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "free_threaded_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "git_sha": git_sha(),
    }


def environment() -> dict[str, Any]:
    """Everything that identifies the machine and interpreter (GIL state read now), and the SLURM job
    it ran in (None outside SLURM)."""
    slurm = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID") or None
    return {
        **_static_environment(),
        "gil_enabled": gil_enabled(),
        # Python thread strategies' workers pinned to cores of their own (the default; TICKPAR_PIN_THREADS=0
        # leaves them to the scheduler: tickpar.host.affinity)
        "thread_pinning": pinning_requested(),
        "slurm_job_id": slurm,
    }


def _main() -> int:
    """``python -m tickpar.host.envinfo``: this interpreter's environment and versions, as one JSON object
    (what a timing driver records for cells it runs under another interpreter)."""
    import json

    print(json.dumps({"env": environment(), "versions": versions()}))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
