"""Snakemake on SLURM: job status that never hangs a sweep (``rules/common.smk`` installs it).

snakemake-executor-plugin-slurm (2.8) learns that a job has finished by asking
SLURM: ``sacct`` by default, ``squeue`` on request (``--slurm-status-command``).
A sweep run with it hangs for ever in two ways (issue 21):

* On a cluster without accounting (``AccountingStorageType=accounting_storage/none``)
  every ``sacct`` fails ("Slurm accounting storage is disabled"), yet the plugin
  chooses ``sacct`` whenever the command exists, and even prefers it to a
  requested ``squeue`` when ``MinJobAge`` is short.
* When every attempt of one status check fails (``--slurm-status-attempts``,
  fired back to back), the plugin drops its jobs from its list without
  reporting them: Snakemake then waits for them for ever, and a graceful stop
  (SIGTERM) waits for them too.

:func:`install` wraps the plugin's status query (its module-level
``query_job_status``, which it looks up at every call) in a
:class:`StatusGuard`:

* a ``sacct`` query that fails while the same query by ``squeue`` answers is
  answered by ``squeue`` from then on: one line on stderr, and the plugin's
  ``status_command`` setting becomes ``squeue`` (so it reads failed jobs the
  ``squeue`` way);
* before the plugin retries a failed query the guard pauses (the plugin's
  ``--slurm-init-seconds-before-status-checks``, 1 to 30 s), so a short outage of
  the controller is ridden out instead of exhausting the attempts in a moment;
* the ``--slurm-status-attempts``-th failure in a row cancels the run's jobs
  (``scancel --name RUN``: the plugin names every job of a run by its run ID)
  and stops the sweep with one line on stderr that names the command and its
  error (then raises a ``WorkflowError`` through Snakemake's executor-error path:
  the sweep exits with status 1 instead of waiting).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["PLUGIN", "StatusGuard", "install"]

#: The module of snakemake-executor-plugin-slurm whose ``query_job_status`` the guard wraps.
PLUGIN = "snakemake_executor_plugin_slurm"
_MAX_PAUSE_S = 30.0


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def _program(command: str) -> str:
    try:
        return os.path.basename(shlex.split(command)[0])
    except (ValueError, IndexError):
        return command


def _run_id(command: str) -> str | None:
    """The run ID in a status query (``--name RUN`` or ``--name=RUN``), or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, word in enumerate(words):
        if word == "--name" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--name="):
            return word.split("=", 1)[1]
    return None


def _squeue_query(run_id: str) -> str:
    """The plugin's ``squeue`` status query of a run (its ``query_job_status_squeue``, where it has none)."""
    return shlex.join(["squeue", "--format=%i|%T", "--states=all", "--noheader", "--name", run_id])


def _failed(result: Any) -> bool:
    """The plugin's query answers (None, None) when the command failed, timed out or could not start."""
    return not isinstance(result, tuple) or (result[0] is None and result[1] is None)


@dataclass
class StatusGuard:
    """The plugin's ``query_job_status(command, logger)``, made to switch ``sacct`` to ``squeue`` and to stop.

    ``query`` is the plugin's own coroutine function; ``settings()`` gives the
    executor settings (``status_attempts``, ``init_seconds_before_status_checks``,
    ``status_command``) at call time; ``squeue_query(run_id)`` builds the plugin's
    ``squeue`` command.  ``run`` runs a command line (to read a failing command's
    error, and ``scancel``); ``err`` receives the guard's lines.
    """

    query: Callable[..., Any]
    settings: Callable[[], Any]
    squeue_query: Callable[[str], str]
    run: Callable[[list[str]], subprocess.CompletedProcess[str]] = _run
    err: TextIO | None = None
    failures: int = 0
    use_squeue: bool = False
    notes: list[str] = field(default_factory=list)

    def _say(self, line: str) -> None:
        self.notes.append(line)
        print(line, file=self.err or sys.stderr, flush=True)

    def attempts(self) -> int:
        value = getattr(self.settings(), "status_attempts", None)
        return value if isinstance(value, int) and value >= 1 else 5

    def pause_s(self) -> float:
        value = getattr(self.settings(), "init_seconds_before_status_checks", None)
        value = value if isinstance(value, (int, float)) and value > 0 else _MAX_PAUSE_S
        return float(min(_MAX_PAUSE_S, max(1.0, value)))

    def cause(self, command: str) -> str:
        """The failing command's own error: its last line of stderr (or stdout), else its exit status."""
        try:
            done = self.run(shlex.split(command))
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            return f"{type(exc).__name__}: {exc}"
        if done.returncode == 0:
            return "it failed, then answered when asked again"
        lines = [ln.strip() for ln in (done.stderr or done.stdout or "").splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit status {done.returncode}"

    def cancel(self, run_id: str | None) -> str:
        """Cancel the run's jobs; says what happened, in words."""
        if not run_id:
            return "its jobs could not be cancelled (no run ID in the status query)"
        argv = ["scancel", "--name", run_id]
        try:
            done = self.run(argv)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"`{shlex.join(argv)}` failed: {exc}"
        if done.returncode != 0:
            why = (done.stderr or "").strip().splitlines()
            return f"`{shlex.join(argv)}` failed: {why[-1] if why else f'exit status {done.returncode}'}"
        return f"its jobs were cancelled ({shlex.join(argv)})"

    async def _try_squeue(self, command: str, logger: Any) -> Any:
        run_id = _run_id(command)
        if run_id is None:
            return None
        result = await self.query(self.squeue_query(run_id), logger)
        if _failed(result):
            return None
        cause = self.cause(command)
        self.use_squeue = True
        settings = self.settings()
        if settings is not None and hasattr(settings, "status_command"):
            settings.status_command = "squeue"
        self._say(f"tickpar: sacct does not work here ({cause}): job status comes from squeue from now on")
        return result

    async def __call__(self, command: str, logger: Any) -> Any:
        if self.use_squeue and _program(command) == "sacct" and _run_id(command):
            command = self.squeue_query(_run_id(command) or "")
        result = await self.query(command, logger)
        if _failed(result) and _program(command) == "sacct":
            switched = await self._try_squeue(command, logger)
            if switched is not None:
                self.failures = 0
                return switched
        if not _failed(result):
            self.failures = 0
            return result
        self.failures += 1
        if self.failures >= self.attempts():
            from snakemake_interface_common.exceptions import WorkflowError

            line = (
                f"tickpar: SLURM job status unknown: `{_program(command)}` failed {self.failures} times in a row "
                f"({self.cause(command)}); the sweep stops and {self.cancel(_run_id(command))}"
            )
            self._say(line)  # the one line with the cause; Snakemake repeats what it is given, so it gets less
            raise WorkflowError("the SLURM job status query kept failing: see the line starting 'tickpar: SLURM'")
        await asyncio.sleep(self.pause_s())
        return result


def install(workflow: Any) -> StatusGuard | None:
    """Wrap snakemake-executor-plugin-slurm's status query in a :class:`StatusGuard` (once per process).

    Only in Snakemake's main process, and only when the plugin is loaded
    (Snakemake imports every installed executor plugin when it parses its command
    line); returns the guard, or None where there is nothing to guard.
    """
    if workflow is not None and not getattr(workflow, "is_main_process", True):
        return None
    module = sys.modules.get(PLUGIN)
    query = getattr(module, "query_job_status", None)
    if module is None or query is None:
        return None
    if isinstance(query, StatusGuard):
        return query
    squeue_query = getattr(module, "query_job_status_squeue", None) or _squeue_query
    guard = StatusGuard(query, lambda: getattr(workflow, "executor_settings", None), squeue_query)
    module.query_job_status = guard
    return guard
