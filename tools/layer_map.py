"""tickpar's layer map, generated from its one source: the import-linter contracts in ``pyproject.toml``.

The layers come from the ``layers`` contract (top to bottom there; the map lists them bottom up), what
each may import from the layers below it less the ``forbidden`` contracts that name it as a source, and
what each holds from the first line of its own docstring (``tickpar/<layer>/__init__.py`` or
``tickpar/<layer>.py``), read without importing it.  Nothing else says which layers there are:

    python tools/layer_map.py        # the map, as a Markdown table

``docs/_ext/tickpar_docs.py`` renders the same map into the documentation (the ``tickpar-layers``
directive of ``docs/explanation/architecture.md``), and ``tests/test_layers.py`` fails when a package or
module of ``tickpar/`` is missing from the contract, and so from the map.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tickpar"

#: A layer docstring's opening label (``Layer ``kernel``: ``), left out of the map: the map names the layer.
_LABEL = re.compile(r"^Layer ``[\w.]+``:\s*")


@dataclass(frozen=True)
class Layer:
    """One layer of the contract: a package or a module of ``tickpar/``."""

    module: str
    #: Its ``__init__.py`` or its ``.py`` file (relative to the checkout).
    path: Path
    #: The first line of its docstring, without the ``Layer ``x``:`` label.
    holds: str
    #: The layers it may import from, top to bottom: every layer below it less those a forbidden contract names.
    may_import: tuple[str, ...]


def _contracts(root: Path) -> list[dict[str, object]]:
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]["contracts"]


def contract_layers(root: Path = ROOT) -> list[list[str]]:
    """The layers contract's layers, top to bottom; siblings of one layer (``a | b`` or ``a : b``) share one."""
    contract = next(c for c in _contracts(root) if c["type"] == "layers")
    return [re.split(r"\s*[|:]\s*", str(entry).strip()) for entry in contract["layers"]]  # type: ignore[attr-defined]


def _forbidden(root: Path) -> dict[str, set[str]]:
    """Module -> the modules a forbidden contract keeps it from importing."""
    out: dict[str, set[str]] = {}
    for contract in _contracts(root):
        if contract["type"] == "forbidden":
            for source in contract["source_modules"]:  # type: ignore[attr-defined]
                out.setdefault(source, set()).update(contract["forbidden_modules"])  # type: ignore[arg-type]
    return out


def _source(root: Path, module: str) -> Path:
    relative = Path(*module.split("."))
    package = root / relative / "__init__.py"
    return package if package.is_file() else (root / relative).with_suffix(".py")


def _first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return _LABEL.sub("", doc.strip().splitlines()[0]) if doc.strip() else ""


def layer_map(root: Path = ROOT) -> list[Layer]:
    """Every layer of the contract, bottom up (a layer that names no file of ``tickpar/`` is kept, with an
    empty ``holds``: :func:`missing` reports it)."""
    levels = contract_layers(root)
    forbidden = _forbidden(root)
    out: list[Layer] = []
    for index in range(len(levels) - 1, -1, -1):
        below = [m for level in levels[index + 1 :] for m in level]
        for module in levels[index]:
            path = _source(root, module)
            holds = _first_line(path) if path.is_file() else ""
            may = tuple(m for m in below if m not in forbidden.get(module, set()))
            out.append(Layer(module, path.relative_to(root), holds, may))
    return out


def package_modules(root: Path = ROOT) -> set[str]:
    """The sub-packages and top-level modules of ``tickpar/`` (``__init__``, ``__main__`` left out)."""
    top = root / PACKAGE
    packages = {p.parent.name for p in top.glob("*/__init__.py")}
    modules = {p.stem for p in top.glob("*.py") if not p.stem.startswith("__")}
    return {f"{PACKAGE}.{name}" for name in packages | modules}


def missing(root: Path = ROOT) -> list[str]:
    """What keeps the map from being whole: a package or module of ``tickpar/`` that no layer names, and a
    layer without a file or a docstring."""
    mapped = layer_map(root)
    problems = [f"{m}: in tickpar/ but not in the layers contract" for m in sorted(package_modules(root) - {
        layer.module for layer in mapped})]  # fmt: skip
    problems += [f"{layer.module}: no file {layer.path}" for layer in mapped if not (root / layer.path).is_file()]
    problems += [
        f"{layer.module}: {layer.path} has no docstring to say what it holds"
        for layer in mapped
        if (root / layer.path).is_file() and not layer.holds
    ]
    return problems


def may_import_text(layer: Layer, layers: list[Layer]) -> str:
    """What a layer may import, in words: ``nothing of tickpar``, ``X and every layer below it`` (no forbidden
    contract closes one to it), or the layers' short names."""
    short = [m.removeprefix(f"{PACKAGE}.") for m in layer.may_import]
    if not short:
        return "nothing of tickpar"
    names = [other.module for other in layers]
    below = names[: names.index(layer.module)]
    if len(short) > 1 and list(layer.may_import) == below[::-1]:
        return f"{short[0]} and every layer below it"
    return ", ".join(short)


def markdown(root: Path = ROOT) -> str:
    """The map as a Markdown table, bottom layer first."""
    layers = layer_map(root)
    lines = ["| layer | holds | may import |", "|---|---|---|"]
    for layer in layers:
        holds = layer.holds.replace("``", "`").replace("|", "\\|")
        lines.append(f"| `{layer.module}` | {holds} | {may_import_text(layer, layers)} |")
    return "\n".join(lines)


def main() -> int:
    problems = missing()
    print(markdown())
    for problem in problems:
        print(f"layer_map: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
