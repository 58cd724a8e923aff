"""The house: layers held by import-linter, no import cycles (function-local imports included), old names hint."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def _layer_map_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tickpar_layer_map", ROOT / "tools" / "layer_map.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before it runs: its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_layer_map_is_whole() -> None:
    """The generated layer map (tools/layer_map.py, rendered by the docs' ``tickpar-layers`` directive) names
    every package and module of tickpar/, each with a docstring that says what it holds."""
    tool = _layer_map_tool()
    assert tool.missing() == []
    mapped = {layer.module for layer in tool.layer_map()}
    assert tool.package_modules() <= mapped and "tickpar.gem5" in mapped
    table = tool.markdown()
    assert all(f"| `{module}` |" in table for module in mapped)


def test_the_layer_map_fails_on_a_package_the_contract_leaves_out(tmp_path: Path) -> None:
    """A new package of tickpar/ that the layers contract does not name is reported, by name."""
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    for layer in _layer_map_tool().layer_map():
        (tmp_path / layer.path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / layer.path).write_text(f'"""Layer: {layer.module}."""\n')
    (tmp_path / "tickpar" / "newlayer").mkdir()
    (tmp_path / "tickpar" / "newlayer" / "__init__.py").write_text('"""Layer ``newlayer``: something new."""\n')
    assert _layer_map_tool().missing(tmp_path) == ["tickpar.newlayer: in tickpar/ but not in the layers contract"]


#: The pages that once listed the layers by hand; each now shows or links the generated map.
LAYER_PAGES = ("README.md", "docs/explanation/architecture.md", "docs/explanation/design.md", "tickpar/__init__.py")


@pytest.mark.parametrize("page", LAYER_PAGES)
def test_no_page_lists_the_layers_by_hand(page: str) -> None:
    """No stretch of 15 lines of a page names half of the layers or more (as ``tickpar.x``, ``x/`` or
    ``tickpar/x``), and no line runs four or more of their bare names into a list (``host, kernel, ...``):
    the map is the generated one (the ``tickpar-layers`` directive), never a copy."""
    names = [layer.module.removeprefix("tickpar.") for layer in _layer_map_tool().layer_map()]
    patterns = [re.compile(rf"(tickpar[./]{name}\b|^\s*{name}/)") for name in names]
    listed = re.compile(rf"\b({'|'.join(names)})\b\s*[,;]")
    lines = (ROOT / page).read_text().splitlines()
    for number, line in enumerate(lines, 1):
        assert len(set(listed.findall(line))) < 4, f"{page}:{number}: lists the layers by hand"
    for start in range(max(1, len(lines) - 14)):
        window = lines[start : start + 15]
        named = {n for n, p in zip(names, patterns, strict=True) if any(p.search(line) for line in window)}
        assert len(named) < len(names) / 2, f"{page}:{start + 1}: lists the layers {sorted(named)} by hand"
    if page == "docs/explanation/architecture.md":
        assert "```{tickpar-layers}" in (ROOT / page).read_text()


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


def test_the_snakefile_header_names_every_rule_file_it_includes() -> None:
    """The Snakefile's header is the pipeline's map: every included rules/*.smk has its line there."""
    import re

    text = (ROOT / "Snakefile").read_text()
    included = set(re.findall(r'^include: "rules/([\w.]+)"', text, flags=re.M))
    header = set(re.findall(r"^#   ([\w.]+\.smk) ", text, flags=re.M))
    assert included == {p.name for p in (ROOT / "rules").glob("*.smk")}
    assert included == header
