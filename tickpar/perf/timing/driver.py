"""The timing driver: interleaved rounds of fresh pyperf processes, probed, re-timed, recorded.

:func:`measure_cells` times a list of cells; :func:`measure` is it for one cell (``tickpar time``).
:mod:`tickpar.perf.timing` describes the rounds, the re-times and the record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tickpar.host.affinity import PIN_ENV
from tickpar.host.atomic import read_json_object, write_json_atomic
from tickpar.host.probe import cpu_availability
from tickpar.host.procgroup import kill_group
from tickpar.perf.timing.rules import (
    BASELINE_MAX_SPREAD,
    MAX_ROUND_SHIFT,
    MIN_CPU_AVAILABLE,
    RETIME_WAIT_S,
    RETIMES,
    contention_reason,
    judged_for_slow_processes,
    leave_out_slow_rounds,
    summarize,
)
from tickpar.plugins import BASELINE
from tickpar.plugins.registry import DISCOVERY_ENVIRON
from tickpar.verify.oracle import FAILED_RUN

__all__ = [
    "ONE_THREAD_ENV",
    "TIMING_FORMAT",
    "TimingJob",
    "measure",
    "measure_cells",
]

TIMING_FORMAT = "tickpar.timing/3"
#: Verdicts of the correctness job after which timing is pointless (the run does not finish).
SKIP_AFTER = FAILED_RUN
#: Thread-pool sizes forced to 1 in every timed process (the pyperf parent and, through ``--inherit-environ``,
#: its workers), whatever the caller's environment says.  tickpar's own default (``tickpar/__init__.py``) only
#: fills in an unset variable, and Snakemake sets ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` to a job's
#: ``threads``: numpy's BLAS threads then spin beside the cell's own and slow it
#: (docs/measurements/2026-12-06-perf-comments.md).  No timed cell uses a threaded BLAS; the cell's own
#: threads are what is measured.
ONE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _tail(text: str, lines: int = 3) -> str:
    """The worker's own last words (:data:`~tickpar.perf.timing.worker.STOP_PREFIX`) where it said any, else the
    output's last ``lines`` lines."""
    from tickpar.perf.timing.worker import STOP_PREFIX

    rows = [r.strip() for r in text.strip().splitlines() if r.strip()]
    own = [r.removeprefix(STOP_PREFIX).strip() for r in rows if r.startswith(STOP_PREFIX)]
    return own[-1] if own else " | ".join(rows[-lines:])


def check_wall_s(path: str | Path | None) -> float | None:
    """The wall time of a correctness record's run (``wall_s``), or None where there is none to read."""
    data = read_json_object(path)
    wall = data.get("wall_s") if data is not None else None
    return float(wall) if isinstance(wall, int | float) and wall >= 0 else None


def values_for(job: TimingJob, values: int, long_cell_s: float, long_values: int) -> int:
    """Timed values per round for ``job``: ``long_values`` where its correctness run took ``long_cell_s`` or more.

    A value is one whole simulation: the longer it runs, the less it varies (a 4 ms scheduler tick
    or a cache refill is a smaller share of it), so a long cell needs fewer of them for the same
    interval, and its values are most of a timing job's clock. ``long_cell_s`` <= 0: every cell gets
    ``values``. Without a readable correctness record the cell gets ``values``.
    """
    if long_cell_s <= 0 or long_values >= values:
        return values
    wall = check_wall_s(job.check)
    return long_values if wall is not None and wall >= long_cell_s else values


def _unfinished(path: str | Path | None) -> str | None:
    """The verdict of a correctness record whose run did not finish (crash, timeout, deadlock, or a
    raised causality error: ``failure`` is set), else None: timing such a cell would only repeat it."""
    data = read_json_object(path)
    if data is None:
        return None
    verdict = data.get("verdict") if isinstance(data.get("verdict"), dict) else {}
    kind = verdict.get("kind")
    if kind in SKIP_AFTER or data.get("failure") is not None:
        return kind or "crash"
    return None


@dataclass
class TimingJob:
    """One cell to time: the cell, its long options, where its record and pyperf file go, its checks."""

    cell: Any
    cell_args: list[str]
    out: Path
    pyperf_out: Path | None = None
    check: str | None = None
    golden: str | None = None
    record: dict[str, Any] = field(default_factory=dict)
    done: bool = False
    #: The interpreter the cell runs under (``python -m tickpar.perf.timing``); None: this one.
    python: str | None = None

    @classmethod
    def from_entry(cls, entry: dict[str, Any], *, golden: bool = True) -> TimingJob:
        """The job of a sweep cell (:meth:`tickpar.pipeline.sweep.SweepCell.timing_entry`); ``golden=False``: no
        correctness or golden record (the driver computes the golden record itself)."""
        from tickpar.runner import resolve_cell

        cell = resolve_cell(
            entry["workload"], entry["params"], entry["strategy"], entry["options"], entry["workers"],
            entry["seed"], entry["order"], entry["work"], engine=entry.get("engine", "python"),
        )  # fmt: skip
        checks = (entry["check_path"], entry["golden_path"]) if golden else (None, None)
        job = cls(cell, list(entry["cli_args"]), Path(entry["timing_path"]), Path(entry["pyperf_path"]), *checks)
        job.python = entry.get("python") or None
        return job

    @property
    def executable(self) -> str:
        """The ``python`` that runs this cell's pyperf workers."""
        return self.python or sys.executable

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if self.pyperf_out is None:
            self.pyperf_out = self.out.with_name(self.out.name.removesuffix(".json") + ".pyperf.json")
        self.pyperf_out = Path(self.pyperf_out)


def _new_record(job: TimingJob, rounds: int, values: int, warmups: int) -> dict[str, Any]:
    cell = job.cell
    return {
        "format": TIMING_FORMAT,
        "status": "ok",
        "reason": "",
        "cell": cell.to_dict(),
        "strategy": cell.strategy,
        "workers": cell.workers,
        "processes": rounds,
        "values_per_process": values,
        "warmups_per_process": warmups,
        "golden": job.golden or "computed by the timing driver",
        "rounds": [],
        "values": [],
        "loop_values": [],
        "value_contended": [],
        "warmups": [],
        "retimes": 0,
        "n_retimed": 0,
        "retime_reasons": [],
        **summarize([]),
        "pyperf_file": None,
        "pyperf_metadata": {},
        "work_units_per_us": None,
        "worker_env": dict(ONE_THREAD_ENV),
        "python_executable": job.executable,
    }


def _compute_golden(job: TimingJob, tmp: Path, index: int) -> str:
    """A golden record for ``job`` computed here (its sequential run, no work): for a standalone ``tickpar time``."""
    from tickpar.runner import execute, golden_cell, make_record

    cell = golden_cell(job.cell)
    # A native cell's timed runs are checked against the golden traces (folded as the engine folds them).
    cell = replace(cell, spec=replace(cell.spec, work="none", trace=job.cell.engine == "native"))
    outcome = execute(cell)
    if outcome.record.failure is not None:
        raise RuntimeError(f"golden sequential run failed: {outcome.record.failure.get('message')}")
    path = tmp / f"cell{index}.golden.json"
    record = make_record(cell, outcome)
    if cell.spec.trace:
        record["oracle"] = outcome.record.to_dict(with_traces=True)
    write_json_atomic(path, record)
    return str(path)


def _work_rate(mode: str, python: str | None = None) -> float:
    """The calibration of ``mode`` (once per timing job and interpreter): every worker it starts uses it.

    Under this interpreter it is this process's own; under another one (a free-threaded ``python``,
    whose loop runs at its own speed) one short process of that interpreter calibrates it.
    """
    if python is None or python == sys.executable:
        from tickpar.kernel.work import calibrate

        return calibrate(mode)
    code = f"from tickpar.kernel.work import calibrate; print(repr(calibrate({mode!r})))"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return float(out.stdout.strip())


_ENV_OF: dict[str, dict[str, Any]] = {}


def _environment_of(python: str | None) -> dict[str, Any]:
    """``{"env": ..., "versions": ...}`` of the interpreter that ran the cell (asked once per interpreter)."""
    from tickpar.host.envinfo import environment, versions

    if python is None or python == sys.executable:
        return {"env": environment(), "versions": versions()}
    if python not in _ENV_OF:
        try:
            out = subprocess.run(
                [python, "-m", "tickpar.host.envinfo"], capture_output=True, text=True, timeout=60, check=True
            )
            _ENV_OF[python] = json.loads(out.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            return {"env": {"python_executable": python, "error": str(exc)}, "versions": {}}
    return _ENV_OF[python]


def read_runs(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _pyperf_cmd(
    job: TimingJob, worker_args: Sequence[str], appended: Path, values: int, warmups: int,
    extra_args: Sequence[str], inherit: Sequence[str],
) -> list[str]:  # fmt: skip
    """The command of one fresh pyperf worker process: one process, ``values`` values, appended to ``appended``."""
    cmd = [
        job.executable, "-m", "tickpar.perf.timing", *job.cell_args, *worker_args,
        "--processes", "1", "--values", str(values), "--warmups", str(warmups),
        "--loops", "1", "--append", str(appended), *extra_args,
    ]  # fmt: skip
    if inherit:
        cmd.append("--inherit-environ=" + ",".join(inherit))
    return cmd


def _run_in_own_group(cmd: list[str], timeout: float | None) -> tuple[int | None, str, bool]:
    """Run ``cmd`` in a process group of its own (one thread per BLAS pool) under ``timeout``: its return code,
    its output and whether it timed out (then the whole group is killed)."""
    env = {**os.environ, **ONE_THREAD_ENV}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        output, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        output, _ = proc.communicate()
        timed_out = True
    return proc.returncode, output.decode(errors="replace"), timed_out


def time_round(
    job: TimingJob,
    index: int,
    round_no: int,
    tmp: Path,
    *,
    values: int,
    warmups: int,
    timeout: float | None,
    inherit: Sequence[str],
    extra_args: Sequence[str],
    min_cpu_available: float,
    log: Any,
    before: dict[str, Any] | None = None,
    rate: float = 0.0,
    attempt: int = 0,
    baseline_max_spread: float = BASELINE_MAX_SPREAD,
) -> dict[str, Any]:
    """One fresh pyperf worker process for ``job``: its values join the job's record.

    ``before`` is a probe taken just before (the previous run's ``after``: nothing ran in between);
    returns the probe taken just after.  ``attempt`` > 0: a re-time of a contended round."""
    import pyperf

    record = job.record
    appended = tmp / f"cell{index}.pyperf.json"
    runs_out = tmp / f"cell{index}.r{round_no}.a{attempt}.runs.jsonl"
    golden = job.golden or _compute_golden(job, tmp, index)
    job.golden = golden
    record["work_units_per_us"] = rate
    worker_args = ["--golden", golden, "--runs-out", str(runs_out), *(["--work-rate", repr(rate)] if rate else [])]
    cmd = _pyperf_cmd(job, worker_args, appended, values, warmups, extra_args, inherit)
    before = before or cpu_availability()
    returncode, text, timed_out = _run_in_own_group(cmd, timeout)
    after = cpu_availability()
    if log is not None:
        again = f" (re-time {attempt})" if attempt else ""
        log.write(f"--- {job.out} round {round_no}{again}\n{text}")
    if timed_out:
        job.done = True
        record.update(status="timeout", reason=f"pyperf run exceeded its {timeout:g} s limit (round {round_no})")
        return after
    if returncode != 0 or not appended.exists():
        job.done = True
        record.update(status="crash", reason=f"pyperf exited with status {returncode}: {_tail(text)}")
        return after
    bench_ = pyperf.BenchmarkSuite.load(str(appended)).get_benchmarks()[0]
    run = bench_.get_runs()[-1]
    vals = [float(v) for v in run.values]
    lines = [line for line in read_runs(runs_out) if not line["warmup"]]
    if len(lines) != len(vals):
        job.done = True
        record.update(status="crash", reason=f"round {round_no}: {len(vals)} values but {len(lines)} checked runs")
        return after
    load = run.get_metadata().get("load_avg_1min")
    loops = [float(line["loop_s"]) for line in lines]
    spread = max(loops) / min(loops) - 1.0 if len(loops) >= 2 and min(loops) > 0 else 0.0
    unstable = job.cell.strategy == BASELINE and baseline_max_spread > 0 and spread > baseline_max_spread
    contended = min(before["min"], after["min"]) < min_cpu_available or unstable
    record["rounds"].append(
        {
            "round": round_no,
            "attempt": attempt,
            "retimed": False,
            "values": vals,
            "loop_values": loops,
            "loop_spread": spread,
            "unstable": unstable,
            "verdicts": [line["verdict"] for line in lines],
            "failures": [line["failure"] for line in lines if line.get("failure")][:1],  # the first run that stopped
            "loop_source": lines[0]["loop_source"] if lines else None,
            "cpu_available_before": before["min"],
            "cpu_available_after": after["min"],
            "load_avg_1min": load,
            "contended": contended,
        }
    )
    record["warmups"] += [w for _, w in (run.warmups or ())]
    return after


def _finish(job: TimingJob, tmp: Path, index: int, started: float, max_round_shift: float = MAX_ROUND_SHIFT,
            ) -> dict[str, Any]:  # fmt: skip
    """Fold the rounds into the record's summary fields; move the pyperf file; write the record."""
    import pyperf

    record = job.record
    rounds = record["rounds"]
    leave_out_slow_rounds(record, max_round_shift if judged_for_slow_processes(job.cell) else 0.0)
    for r in rounds:
        record["values"] += r["values"]
        record["loop_values"] += r["loop_values"]
        record["value_contended"] += [r["contended"]] * len(r["values"])
    verdicts = [v for r in rounds for v in r["verdicts"]]
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[str(v)] = counts.get(str(v), 0) + 1
    record["timed_verdicts"] = counts
    record["timed_exact"] = all(v == "exact" for v in verdicts) if verdicts else None
    record["loop_source"] = next((r["loop_source"] for r in rounds if r["loop_source"]), None)
    # Contended: no value was taken without contention (none can enter a speedup); n_contended: values left out.
    record["contended"] = bool(rounds) and all(r["contended"] for r in rounds)
    record["n_contended"] = sum(record["value_contended"])
    avail = [x for r in rounds for x in (r["cpu_available_before"], r["cpu_available_after"])]
    record["cpu_available_min"] = min(avail) if avail else None
    loads = [r["load_avg_1min"] for r in rounds if isinstance(r["load_avg_1min"], (int, float))]
    record["load_avg_1min_max"] = max(loads) if loads else None
    # The statistics leave contended values out, as speedups do (all values when every one was contended).
    keep = [i for i, flag in enumerate(record["value_contended"]) if not flag] or list(range(len(record["values"])))
    record.update(summarize([record["values"][i] for i in keep]), n_values=len(record["values"]))
    loop = summarize([record["loop_values"][i] for i in keep])
    record["loop_mean_s"], record["loop_median_s"] = loop["mean_s"], loop["median_s"]
    appended = tmp / f"cell{index}.pyperf.json"
    if rounds and appended.exists():
        bench_ = pyperf.BenchmarkSuite.load(str(appended)).get_benchmarks()[0]
        record["benchmark"] = bench_.get_name()
        record["pyperf_metadata"] = {
            k: v for k, v in bench_.get_metadata().items() if isinstance(v, (str, int, float, bool))
        }
        job.pyperf_out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(appended, job.pyperf_out)
        record["pyperf_file"] = job.pyperf_out.name
    if record["status"] == "ok" and record["timed_exact"] is False:
        # Recorded with its verdicts (a run that stopped early too: its value is the time until it stopped); the
        # aggregate leaves the cell out of speedups.
        record["reason"] = "timed runs not exact: " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items()))
        stopped = next((f for r in rounds for f in r.get("failures") or ()), None)
        if stopped:
            record["reason"] += f"; first stop: {stopped}"
    record["wall_s"] = time.perf_counter() - started
    where = _environment_of(job.python)
    record["env"] = where["env"]
    record["versions"] = where["versions"]
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json_atomic(job.out, record)
    return record


def measure_cells(
    jobs: Sequence[TimingJob],
    *,
    rounds: int = 2,
    values: int = 3,
    warmups: int = 1,
    timeout: float | None = 300.0,
    inherit_environ: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    min_cpu_available: float = MIN_CPU_AVAILABLE,
    work_rate: float | None = None,
    retimes: int = RETIMES,
    retime_wait_s: float = RETIME_WAIT_S,
    long_cell_s: float = 0.0,
    long_values: int = 2,
    log: Any = None,
    baseline_max_spread: float = BASELINE_MAX_SPREAD,
    max_round_shift: float = MAX_ROUND_SHIFT,
) -> list[dict[str, Any]]:
    """Time ``jobs`` in ``rounds`` interleaved rounds; write every job's record (never raises on a cell's failure).

    ``timeout`` limits one pyperf run (one cell, one round).  A job whose
    ``check`` record says its run did not finish is not timed (status ``skipped``).
    ``work_rate``: work units per microsecond for every worker (default: one
    calibration here, after a CPU-availability probe has brought the cores up to speed).
    A contended round is timed again at once, after ``retime_wait_s`` seconds and a fresh
    probe, up to ``retimes`` times per cell (:func:`_retime_while_contended`).
    A cell whose correctness run took ``long_cell_s`` or more gets ``long_values`` values per
    round instead of ``values`` (:func:`values_for`; its record's ``values_per_process``).
    ``baseline_max_spread``: a sequential round whose loop values spread more than this is
    contended (module docstring; 0: never).  ``max_round_shift``: a round every value of which is
    more than this above the fastest round's is a slow process, left out (:func:`slow_rounds`; 0: never).
    """
    _check_settings(baseline_max_spread, max_round_shift, rounds, values, warmups, long_values, retimes, retime_wait_s)
    # pyperf gives its workers a clean environment; the thread-pinning switch, the one-thread pools
    # (ONE_THREAD_ENV, set for every worker by time_round) and what plugin discovery reads (a plugin folder on
    # TICKPAR_PLUGINS) must reach them too
    inherit = [name for name in (*inherit_environ, PIN_ENV, *DISCOVERY_ENVIRON) if name in os.environ]
    inherit = list(dict.fromkeys([*inherit, *ONE_THREAD_ENV]))
    started = time.perf_counter()
    per_job = {id(job): values_for(job, values, long_cell_s, long_values) for job in jobs}
    for job in jobs:
        _start_record(job, rounds, per_job[id(job)], warmups, retimes)
    parent = Path(jobs[0].out).parent if jobs else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tickpar-timing-", dir=parent) as tmp_name:
        tmp = Path(tmp_name)
        indexed = list(enumerate(jobs))
        probe: dict[str, Any] | None = cpu_availability()  # the last probe, while nothing has run since
        rates = _work_rates(jobs, work_rate)

        def settings_of(job: TimingJob) -> dict[str, Any]:
            return dict(
                values=per_job[id(job)], warmups=warmups, timeout=timeout, inherit=inherit,
                extra_args=extra_args, min_cpu_available=min_cpu_available, log=log,
                rate=rates[_rate_key(job)], baseline_max_spread=baseline_max_spread,
            )  # fmt: skip

        for round_no in range(rounds):
            shift = round_no % len(indexed) if indexed else 0
            for index, job in indexed[shift:] + indexed[:shift]:  # rotated: no cell always first
                if job.done:
                    continue
                try:
                    settings = settings_of(job)
                    probe = time_round(job, index, round_no, tmp, before=probe, **settings)
                    probe = _retime_while_contended(
                        job, index, round_no, tmp, probe, retimes=retimes, wait_s=retime_wait_s, **settings
                    )
                except Exception as exc:  # a broken golden or pyperf file is this cell's result, not the job's
                    probe = None
                    job.done = True
                    job.record.update(status="crash", reason=f"{type(exc).__name__}: {exc}")
        for index, job in indexed:  # then every slow process is timed again, within the same re-time budget
            try:
                retime_slow_rounds(job, index, tmp, max_round_shift, retimes=retimes, **settings_of(job))
            except Exception as exc:
                job.done = True
                job.record.update(status="crash", reason=f"{type(exc).__name__}: {exc}")
        return [_finish_or_crash(job, tmp, index, started, max_round_shift) for index, job in enumerate(jobs)]


def _check_settings(
    baseline_max_spread: float, max_round_shift: float, rounds: int, values: int, warmups: int, long_values: int,
    retimes: int, retime_wait_s: float,
) -> None:  # fmt: skip
    if baseline_max_spread < 0:
        raise ValueError(f"baseline_max_spread {baseline_max_spread}: must be >= 0 (0: never judged)")
    if max_round_shift < 0:
        raise ValueError(f"max_round_shift {max_round_shift}: must be >= 0 (0: never judged)")
    if rounds < 1 or values < 1 or warmups < 0 or long_values < 1:
        raise ValueError("--processes, --values and the long cells' values must be >= 1, --warmups >= 0")
    if retimes < 0 or retime_wait_s < 0:
        raise ValueError("--retimes and the wait before a re-time must be >= 0")


def _start_record(job: TimingJob, rounds: int, values: int, warmups: int, retimes: int) -> None:
    """A fresh record for ``job``; skipped (done) where its correctness run did not finish."""
    job.record = _new_record(job, rounds, values, warmups)
    job.record["retimes"] = retimes
    verdict = _unfinished(job.check)
    if verdict is not None:
        job.done = True
        job.record.update(status="skipped", reason=f"not timed: the correctness run did not finish ({verdict})")


def _work_rates(jobs: Sequence[TimingJob], work_rate: float | None) -> dict[tuple[str | None, str], float]:
    """One work calibration per (interpreter, work mode): a free-threaded build runs the gil-hold loop at its own
    speed, so each interpreter's cells do work_us of its own time per event; native cells: one of the C++ spin loop."""
    modes = {(job.python, job.cell.spec.work) for job in jobs if job.cell.engine == "python"}
    rates = {key: 0.0 if key[1] == "none" else work_rate or _work_rate(key[1], key[0]) for key in modes}
    if any(job.cell.engine == "native" for job in jobs):
        from tickpar.native.engine import spin_rate

        rates[("native", "spin")] = spin_rate()
    return rates


def _finish_or_crash(job: TimingJob, tmp: Path, index: int, started: float, max_round_shift: float) -> dict[str, Any]:
    try:
        return _finish(job, tmp, index, started, max_round_shift)
    except Exception as exc:  # an unreadable pyperf file: this cell's record says so, the others stand
        return crash_record(job, f"{type(exc).__name__} while writing the record: {exc}")


def _rate_key(job: TimingJob) -> tuple[str | None, str]:
    return ("native", "spin") if job.cell.engine == "native" else (job.python, job.cell.spec.work)


def _retime_while_contended(
    job: TimingJob,
    index: int,
    round_no: int,
    tmp: Path,
    probe: dict[str, Any],
    *,
    retimes: int,
    wait_s: float,
    **settings: Any,
) -> dict[str, Any]:
    """Time the round just taken again while it was contended and the cell has re-times left.

    Each re-time is one more fresh pyperf process (one more entry in ``rounds``, with its
    ``attempt``); the contended attempt stays in the record, flagged, and is marked ``retimed``.
    The record counts the re-times (``n_retimed``) and says why each was needed
    (``retime_reasons``).  Returns the last probe.
    """
    record = job.record
    while not job.done and record["rounds"] and record["n_retimed"] < retimes:
        last = record["rounds"][-1]
        if last["round"] != round_no or not last["contended"]:
            break
        last["retimed"] = True
        record["n_retimed"] += 1
        record["retime_reasons"].append(contention_reason(
            last, settings["min_cpu_available"], settings.get("baseline_max_spread", BASELINE_MAX_SPREAD)))  # fmt: skip
        log = settings.get("log")
        if log is not None:
            log.write(f"--- {job.out} round {round_no} contended: {record['retime_reasons'][-1]}; re-timing\n")
        time.sleep(wait_s)
        probe = time_round(
            job, index, round_no, tmp, before=cpu_availability(), attempt=last["attempt"] + 1, **settings
        )
    return probe


def retime_slow_rounds(
    job: TimingJob, index: int, tmp: Path, max_shift: float, *, retimes: int, **settings: Any
) -> None:
    """Time a cell again, one fresh process at a time, while it has a slow process (:func:`slow_rounds`) and
    re-times left: a slow process is the machine's, as a contended round is, and is left out of the cell.

    The slow round stays in the record, marked ``slow``, ``contended`` and ``retimed``; ``retime_reasons``
    says which it was.  Such a process is slow on every value whatever its address layout, hash seed and
    environment: whatever backs its memory, not the process itself."""
    record = job.record
    if not judged_for_slow_processes(job.cell):
        return
    while not job.done and record["n_retimed"] < retimes:
        slow = leave_out_slow_rounds(record, max_shift)
        if not slow:
            return
        for i in slow:
            record["rounds"][i]["retimed"] = True
        first = record["rounds"][slow[0]]
        record["n_retimed"] += 1
        record["retime_reasons"].append(record["slow_rounds"][-len(slow)])
        log = settings.get("log")
        if log is not None:
            log.write(f"--- {job.out} a slow process: {record['retime_reasons'][-1]}; re-timing\n")
        attempt = 1 + max(r["attempt"] for r in record["rounds"] if r["round"] == first["round"])
        time_round(job, index, first["round"], tmp, before=cpu_availability(), attempt=attempt, **settings)


def write_fallback(out: str | Path, kind: str, reason: str, what: str) -> dict[str, Any]:
    """The record of a job (check, golden or timing) whose command died before writing one (so the sweep goes on)."""
    from tickpar.runner import RECORD_FORMAT

    if what == "timing":
        record: dict[str, Any] = {"format": TIMING_FORMAT, "status": kind, "reason": reason, "values": []}
    else:
        record = {
            "format": RECORD_FORMAT,
            "verdict": {"kind": kind, "reason": reason, "divergence": None},
            "failure": {"kind": kind, "message": reason},
        }
    record["fallback"] = True
    record["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_json_atomic(out, record)
    return record


def crash_record(job: TimingJob, reason: str) -> dict[str, Any]:
    return write_fallback(job.out, "crash", reason, "timing")


def measure(
    cell: Any,
    cell_args: Sequence[str],
    out: str | Path,
    pyperf_out: str | Path | None = None,
    *,
    processes: int = 2,
    values: int = 3,
    warmups: int = 1,
    timeout: float | None = 300.0,
    inherit_environ: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    check: str | Path | None = None,
    golden: str | Path | None = None,
    min_cpu_available: float = MIN_CPU_AVAILABLE,
    work_rate: float | None = None,
    retimes: int = RETIMES,
    retime_wait_s: float = RETIME_WAIT_S,
    log: Any = None,
    baseline_max_spread: float = BASELINE_MAX_SPREAD,
    max_round_shift: float = MAX_ROUND_SHIFT,
) -> dict[str, Any]:
    """Time one cell (``processes`` rounds of one fresh process each) and write its record to ``out``.

    ``cell_args`` are the cell's long options (``--workload ...``);
    ``pyperf_out`` receives the pyperf JSON (default: ``out`` with
    ``.pyperf.json``); ``check``, a correctness record (a cell whose run did not
    finish is not timed); ``golden``, the golden record every timed run is
    checked against (default: computed here, a sequential run of the cell).
    """
    job = TimingJob(
        cell, list(cell_args), Path(out), Path(pyperf_out) if pyperf_out else None,
        str(check) if check else None, str(golden) if golden else None,
    )  # fmt: skip
    return measure_cells(
        [job], rounds=processes, values=values, warmups=warmups, timeout=timeout, inherit_environ=inherit_environ,
        extra_args=extra_args, min_cpu_available=min_cpu_available, work_rate=work_rate, retimes=retimes,
        retime_wait_s=retime_wait_s, log=log, baseline_max_spread=baseline_max_spread,
        max_round_shift=max_round_shift,
    )[0]  # fmt: skip
