"""A non-editable install works without the checkout: the built-in plugins come with the wheel.

Builds the wheel offline (``pip wheel --no-index --no-build-isolation``, with
this environment's setuptools) from a copy of the sources, installs it into a
fresh virtual environment (dependencies are borrowed from this environment
through a ``.pth`` line, the package itself is not), and runs ``tickpar list``
and ``tickpar check`` from a folder outside the checkout.  About 10 s.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tickpar.registry import REPO_ROOT


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


pytestmark = pytest.mark.skipif(
    not _builds_wheels_offline(), reason="needs setuptools>=70.1 (the [test] extra) to build a wheel offline"
)


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_wheel_install_finds_builtin_plugins(tmp_path: Path) -> None:
    """`tickpar list` shows the built-in strategies and workloads from the installed copy (not a checkout),
    and `tickpar check -w phold -s conservative -n 2 --order canonical` is exact."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    for name in ("tickpar", "strategies", "workloads"):
        shutil.copytree(REPO_ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
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
