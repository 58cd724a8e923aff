"""A non-editable install is complete: the built-in plugins come with the wheel, and a clone runs the sweep.

Builds the wheel offline (``pip wheel --no-index --no-build-isolation``, with
this environment's setuptools) from a copy of the sources, installs it into a
fresh virtual environment (dependencies are borrowed from this environment
through a ``.pth`` line, the package itself is not), and runs ``tickpar list``
and ``tickpar check`` from a folder outside the checkout, then from inside a
copy of the checkout (where Snakemake puts the checkout's ``tickpar/`` ahead of
the installed one) a one-cell sweep and its ``--report``.  Marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tickpar.plugins.registry import REPO_ROOT


def _builds_wheels_offline() -> bool:
    """setuptools >= 70.1 builds wheels itself; older ones need the ``wheel`` package."""
    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    if (major, minor) >= (70, 1):
        return True
    try:
        import wheel  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = [
    pytest.mark.skipif(
        not _builds_wheels_offline(), reason="needs setuptools>=70.1 (the [test] extra) to build a wheel offline"
    ),
    pytest.mark.slow,
    pytest.mark.timeout(600),  # builds a wheel and runs a sweep: minutes on a busy 2-core machine
]

#: What a clone holds that a sweep needs (tests, bench and docs aside).
CLONE = ("pyproject.toml", "README.md", "Snakefile", "tickpar", "strategies", "workloads", "rules", "config", "report")

ONE_CELL = """\
description: one cell (tests/test_install.py)
seeds: [1]
orders: [gem5]
work: [none]
workers: [1]
check_workers: []
timeout_s: 60
timing: {processes: 2, values: 3, warmups: 1, timeout_s: 120, min_cpu_available: 0.0, baseline_max_spread: 0,
         max_round_shift: 0}
report: {bootstrap: 100}
workloads:
  phold:
    shapes:
      tiny: {lps: 4, population: 2, end_tick: 300, work_us: 0.0}
strategies:
  sequential:
    variants:
      default: {}
"""


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _copy_checkout(dest: Path) -> Path:
    dest.mkdir()
    for name in CLONE:
        if (REPO_ROOT / name).is_dir():
            shutil.copytree(REPO_ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO_ROOT / name, dest / name)
    return dest


def _installed_wheel(tmp_path: Path) -> tuple[Path, Path]:
    """A fresh venv with tickpar installed from a wheel (not editable); returns (python, purelib)."""
    src = _copy_checkout(tmp_path / "src")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src)],
         tmp_path)  # fmt: skip
    wheel = next((tmp_path / "dist").glob("tickpar-*.whl"))

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                        tmp_path).stdout.strip())  # fmt: skip
    # The dependencies (pandas, snakemake, ...) from this environment; tickpar only from the wheel.
    (purelib / "borrowed_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], tmp_path)
    return python, purelib


def test_wheel_install_finds_builtin_plugins(tmp_path: Path) -> None:
    """`tickpar list` shows the built-in strategies and workloads from the installed copy (not a checkout),
    and `tickpar check -w phold -s conservative -n 2 --order canonical` is exact."""
    python, purelib = _installed_wheel(tmp_path)
    env_dir = python.parent.parent
    away = tmp_path / "elsewhere"
    away.mkdir()
    tickpar = str(env_dir / "bin" / "tickpar")
    where = _run([str(python), "-c", "import tickpar; print(tickpar.__file__)"], away).stdout.strip()
    assert where.startswith(str(purelib)), where
    listing = json.loads(_run([tickpar, "list", "--json"], away).stdout)
    assert {"sequential", "conservative"} <= set(listing["strategies"])
    assert {"phold", "multicore"} <= set(listing["workloads"])
    assert all(s["source"].startswith("entry point") for s in listing["strategies"].values())
    check = _run([tickpar, "check", "-w", "phold", "-s", "conservative", "-n", "2", "--order", "canonical"], away)
    assert "verdict: exact" in check.stdout


def test_installed_package_runs_the_sweep_in_a_clone(tmp_path: Path) -> None:
    """In a clone with a non-editable install: list, check, a one-cell sweep and its report; and the
    clone's strategies/ on TICKPAR_PLUGINS over the installed copy lists each built-in once."""
    python, _purelib = _installed_wheel(tmp_path)
    tickpar = str(python.parent / "tickpar")
    clone = _copy_checkout(tmp_path / "clone")
    listing = json.loads(_run([tickpar, "list", "--json"], clone).stdout)
    assert {"sequential", "conservative"} <= set(listing["strategies"])
    check = _run([tickpar, "check", "-w", "phold", "-s", "conservative", "-n", "2", "--order", "canonical"], clone)
    assert "verdict: exact" in check.stdout
    (clone / "one.yaml").write_text(ONE_CELL)
    smk = [str(python), "-m", "snakemake", "--cores", "2", "--configfile", "one.yaml"]
    _run(smk, clone)
    assert (clone / "results" / "summary.csv").is_file()
    _run([*smk, "--report", "results/report.html"], clone)
    assert (clone / "results" / "report.html").stat().st_size > 10_000

    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "TICKPAR_PLUGINS": str(clone / "strategies")}
    proc = subprocess.run([tickpar, "list", "--json"], cwd=away, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    strategies = json.loads(proc.stdout)["strategies"]
    assert {"sequential", "split", "tick-barrier", "conservative", "quantum"} <= set(strategies)
    # Each once, from the folder the user named (the identical installed copy is the same plugin).
    assert strategies["split"]["source"].startswith(str(clone / "strategies"))
