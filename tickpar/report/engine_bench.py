"""The engine benchmark on the report's environment page: tickpar against its peers.

``bench/engine.py --interleave ROUNDS --json FILE`` runs tickpar's ``sequential`` strategy (the pure
kernel, and the compiled one where it was built), SimPy, desimpy, salabim and a bare heapq loop on
one PHOLD model, every implementation once per round, and writes a record (:data:`KIND`, format
:data:`FORMAT`)::

    {"kind": "tickpar-engine-bench", "format": 1, "status": "ok" | "partial" | "failed",
     "error": null | "what failed", "rounds": 5, "reference": "simpy_callbacks",
     "model": {"lps": ..., "seed": 1, "events": 27001, ...}, "code_warmup": "10 tiny runs",
     "implementations": {"tickpar_sequential": {"events": ..., "kernel": "pure", "library": "tickpar 0.2.0",
         "events_per_s": {"median": ..., "lo": ..., "hi": ...}, "rates": [per round],
         "ratios": {"simpy_callbacks": {"median", "lo", "hi"}, "heapq_bare": {...}}}, ...},
     "skipped": {"salabim": "salabim does not import (...)"}, "failed": {"desimpy": "RuntimeError: ..."},
     "environment": {"python", "implementation", "platform", "cpu_model", ...}, "versions": {...}}

Intervals are distribution-free 95% intervals of the median (:func:`median_interval`); a ratio's
comes from the per-round ratios (both implementations ran in the same round, so a load that comes
and goes cancels).  The pipeline's ``engine_bench`` rule (rules/engine.smk) runs it alone on the
machine through :func:`main_snakemake`, which writes a ``status: failed`` record when the run
crashes, times out or leaves no record, so the report always builds and says what failed.

The report shows the table and its ratios only; the project's own speed goals are judged from the same
record by ``bench/goals.py`` (``bench/engine.py`` prints them), never on a report page.

May import: ``tickpar.pipeline`` and every layer below it (here: ``tickpar.host``).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tickpar.host.atomic import write_json_atomic

__all__ = [
    "FORMAT",
    "KIND",
    "PEERS",
    "REFERENCE",
    "engine_html",
    "failure_record",
    "load",
    "main",
    "main_snakemake",
    "median_interval",
    "notes",
    "page_lines",
    "table_rows",
]

KIND = "tickpar-engine-bench"
FORMAT = 1
#: The implementation every ratio on the page is taken over.
REFERENCE = "simpy_callbacks"
#: The implementations the record keeps per-round ratios against.
PEERS = ("simpy_callbacks", "heapq_bare")
#: Which implementation stands for a kernel build, in order of preference (its record's ``kernel``
#: must say that build: an in-process tickpar_sequential is compiled where the venv's kernel is).
KERNEL_IMPLS = {"pure": ("tickpar_sequential",), "compiled": ("tickpar_compiled", "tickpar_sequential")}
TABLE_COLUMNS = ("implementation", "kernel", "events/s median [95% interval]", f"÷ {REFERENCE} [95% interval]")


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """The median and a distribution-free ~95% interval for it (order statistics of the binomial)."""
    xs = sorted(values)
    n = len(xs)
    if not n:
        raise ValueError("no values")
    half = 0.98 * n**0.5  # 1.96 * sqrt(n) / 2
    lo = max(0, int(n / 2 - half))
    hi = min(n - 1, int(n / 2 + half))
    mid = xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    return mid, xs[lo], xs[hi]


# ---------------------------------------------------------------- reading a record


def load(path: str | Path | None) -> dict[str, Any] | None:
    """The record at ``path``; None when there is none (the step is off); a ``failed`` record when unreadable."""
    if not path or not Path(path).exists():
        return None
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return failure_record(f"{path} is not readable JSON ({type(err).__name__}: {err})")
    if not isinstance(record, dict) or record.get("kind") != KIND:
        return failure_record(f"{path} is not an engine benchmark record (kind {KIND!r})")
    return record


def failure_record(error: str, rc: int | None = None, log_tail: str = "") -> dict[str, Any]:
    """A record that says the run failed and why (what the page shows instead of the table)."""
    return {
        "kind": KIND, "format": FORMAT, "status": "failed", "error": error, "rc": rc, "log_tail": log_tail,
        "implementations": {}, "skipped": {}, "failed": {},
    }  # fmt: skip


def _interval(entry: Mapping[str, Any] | None, fmt: str) -> str:
    if not entry or entry.get("median") is None:
        return "-"
    mid, lo, hi = (format(float(entry[k]), fmt) for k in ("median", "lo", "hi"))
    return f"{mid} [{lo}, {hi}]"


def table_rows(record: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """One row per implementation that ran: :data:`TABLE_COLUMNS`."""
    rows = []
    reference = record.get("reference", REFERENCE)
    for name, entry in (record.get("implementations") or {}).items():
        ratio = (entry.get("ratios") or {}).get(reference)
        rate = _interval(entry.get("events_per_s"), ",.0f")
        rows.append((name, entry.get("kernel") or "-", rate, _interval(ratio, ".3f")))
    return rows


def notes(record: Mapping[str, Any]) -> list[str]:
    """What did not run and why: ``failed: ...`` for the whole run or an implementation, ``skipped: ...``."""
    lines = []
    if record.get("status") == "failed":
        lines.append(f"failed: {record.get('error') or 'no reason recorded'}")
    for name, why in (record.get("failed") or {}).items():
        lines.append(f"failed: {name}: {why}")
    for name, why in (record.get("skipped") or {}).items():
        lines.append(f"skipped: {name}: {why}")
    return lines


def _heading(record: Mapping[str, Any]) -> str:
    model = record.get("model") or {}
    params = " ".join(f"{k}={v}" for k, v in model.items() if k != "events")
    env = record.get("environment") or {}
    return (
        f"PHOLD {params}: {model.get('events', '?')} events per simulation, {record.get('rounds', '?')} interleaved "
        f"rounds (every implementation once per round, order rotated), code warm-up {record.get('code_warmup', '?')}; "
        f"{env.get('implementation', '?')} {env.get('python', '?')}; medians with distribution-free 95% intervals, "
        f"ratios from the per-round ratios"
    )


def page_lines(record: Mapping[str, Any] | None) -> list[str]:
    """The text around the table: what ran, what failed or was skipped."""
    if record is None:
        return ["Engine benchmark: not run (no record: engine_bench.enabled is false, or none was given)."]
    if record.get("status") == "failed":
        return ["Engine benchmark " + notes(record)[0], *notes(record)[1:]]
    return [_heading(record), *notes(record)]


def engine_html(record: Mapping[str, Any] | None) -> str:
    """The environment page's section (an HTML fragment)."""
    lines = page_lines(record)
    parts = ["<h3>Engine benchmark: tickpar and its peers (bench/engine.py)</h3>"]
    if record is not None and record.get("status") != "failed":
        head = "".join(f"<th>{html.escape(c)}</th>" for c in TABLE_COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in table_rows(record)
        )
        parts.append(f"<p>{html.escape(lines[0])}</p><table><tr>{head}</tr>{body}</table>")
        lines = lines[1:]
    parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>")
    return "".join(parts)


# ---------------------------------------------------------------- running it (the pipeline's rule)


def _write(path: Path, record: Mapping[str, Any]) -> None:
    write_json_atomic(path, record)


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def bench_args(settings: Mapping[str, Any]) -> list[str]:
    """``bench/engine.py`` options for the config's ``engine_bench`` section."""
    args = ["--interleave", str(int(settings.get("rounds", 5))), "--impl", str(settings.get("impl", "all"))]
    for key in ("lps", "population", "remote", "lookahead", "mean", "end_tick", "seed"):
        if settings.get(key) is not None:
            args += [f"--{key.replace('_', '-')}", str(settings[key])]
    return args


def run(
    engine_py: str | Path, out: str | Path, settings: Mapping[str, Any], log: str | Path, *,
    pause_pid: int | None = None, pause: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Run ``engine_py`` (with the orchestrator ``pause_pid`` stopped while it measures) and write its record.

    The record is engine.py's own, plus ``pipeline`` (exit status, seconds, whether the orchestrator
    was paused); a run that crashes, times out or writes no readable record gets a failure record with
    the log's last lines.  Never raises for a failed run: the report must build.
    """
    from tickpar.host.orchestrator import paused

    out, log = Path(out), Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f".{out.name}.part")
    part.unlink(missing_ok=True)
    timeout_s = float(settings.get("timeout_s", 300))
    argv = [sys.executable, str(engine_py), *bench_args(settings), "--json", str(part)]
    rc: int | None = None
    error = ""
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as handle:
        handle.write("tickpar: " + " ".join(argv) + "\n")
        handle.flush()
        with paused(pause_pid, pause) as stopped:
            try:
                rc = subprocess.run(
                    argv, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout_s, check=False
                ).returncode
            except subprocess.TimeoutExpired:
                error = f"bench/engine.py ran past engine_bench.timeout_s ({timeout_s:g} s) and was killed"
            except OSError as err:
                error = f"bench/engine.py did not start ({err})"
    wall_s = time.perf_counter() - started
    record = load(part) if part.exists() else None
    part.unlink(missing_ok=True)
    if record is None or (error and record.get("status") != "failed"):
        tail = _tail(log)
        last = tail.splitlines()[-1] if tail else "no output"
        error = error or f"bench/engine.py exited {rc} without a record: {last}"
        record = failure_record(error, rc, tail)
    record["pipeline"] = {"rc": rc, "wall_s": round(wall_s, 3), "orchestrator_paused": stopped, "argv": argv[1:]}
    _write(out, record)
    return record


def main_snakemake(smk: Any) -> None:
    """Entry point of ``report/scripts/engine_bench.py`` (the Snakemake ``script:`` object)."""
    record = run(
        smk.params.engine, smk.output[0], smk.params.settings, smk.log[0], pause_pid=os.getppid(),
        pause=bool(smk.params.timing.get("pause_orchestrator", True)),
    )  # fmt: skip
    with open(smk.log[0], "a", encoding="utf-8") as handle:
        handle.write(f"tickpar: {smk.output[0]}: status {record.get('status')}\n")
        for line in notes(record):
            handle.write(f"tickpar: {line}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tickpar.report.engine_bench FILE``: the page's lines for a record (``--html``: its fragment)."""
    parser = argparse.ArgumentParser(
        prog="python -m tickpar.report.engine_bench", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("record", help="a JSON record of bench/engine.py --interleave ... --json")
    parser.add_argument("--html", action="store_true", help="print the HTML fragment of the environment page")
    args = parser.parse_args(argv)
    record = load(args.record)
    if record is None:
        print(f"python -m tickpar.report.engine_bench: {args.record}: no such file", file=sys.stderr)
        return 2
    if args.html:
        print(engine_html(record))
        return 0
    lines = page_lines(record)
    print(lines[0])
    for row in table_rows(record):
        print(f"  {row[0]:<20} {row[1]:<9} {row[2]:>34}  {row[3]}")
    print("\n".join(lines[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
