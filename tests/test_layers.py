"""The house: layers held by import-linter, no import cycles (function-local imports included), old names hint."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

import tickpar

ROOT = Path(__file__).resolve().parent.parent


def _graph() -> nx.DiGraph:
    # grimp counts every import statement: those inside functions, and those under TYPE_CHECKING too.
    graph = grimp.build_graph("tickpar", exclude_type_checking_imports=False, cache_dir=None)
    g = nx.DiGraph()
    for module in graph.modules:
        g.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            g.add_edge(module, imported)
    return g


def test_no_import_cycles_function_local_and_type_checking_imports_included() -> None:
    g = _graph()
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


def test_the_top_holds_at_most_five_modules() -> None:
    top = sorted(p.name for p in (ROOT / "tickpar").glob("*.py"))
    assert len(top) <= 5, top
    layers = {"host", "kernel", "verify", "plugins", "pdes", "perf", "pipeline", "report", "builtin"}
    assert layers <= {p.name for p in (ROOT / "tickpar").iterdir() if (p / "__init__.py").is_file()}


def test_every_layer_says_what_it_holds_and_may_import() -> None:
    for init in sorted((ROOT / "tickpar").glob("*/__init__.py")):
        if init.parent.name == "builtin":
            continue
        doc = importlib.import_module(f"tickpar.{init.parent.name}").__doc__ or ""
        assert "May import" in doc, f"{init}: its docstring must say what the layer may import"


def test_layers_contract_covers_every_subpackage() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    covered = {name.removeprefix("tickpar.") for name in layers}
    subpackages = {p.parent.name for p in (ROOT / "tickpar").glob("*/__init__.py")}
    modules = {p.stem for p in (ROOT / "tickpar").glob("*.py") if not p.stem.startswith("__")}
    assert subpackages | modules <= covered


def test_lint_imports_passes() -> None:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("lint-imports is not installed beside this interpreter")
    res = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]


OLD_NEW = [*sorted(tickpar.MOVED.items())[:4], ("tickpar.oracle", "tickpar.verify.oracle")]


@pytest.mark.parametrize(("old", "new"), OLD_NEW)
def test_a_moved_module_fails_with_a_one_line_hint(old: str, new: str) -> None:
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module(old)
    message = str(info.value)
    assert new in message and "\n" not in message
    importlib.import_module(new)  # and the new place imports


def test_every_moved_module_exists_at_its_new_place() -> None:
    for new in tickpar.MOVED.values():
        importlib.import_module(new)
