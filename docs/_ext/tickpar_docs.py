"""Sphinx directives that render reference tables from the code itself, so that they cannot drift from it.

- ``tickpar-cli``: one section per ``tickpar`` subcommand, with its ``--help`` text (from :mod:`tickpar.cli`);
- ``tickpar-exit-codes``: the exit statuses and their meaning (``tickpar.cli.EXIT_CODES``);
- ``tickpar-config-keys``: every key of the sweep config, with type, default and description, from
  ``config/config.schema.yaml`` filled in as the pipeline fills it (``tickpar.pipeline.sweep.config_schema``);
- ``tickpar-layers``: the layer map, bottom up: each layer of the import-linter contract in ``pyproject.toml``,
  what it holds (its docstring's first line) and what it may import (``tools/layer_map.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

HELP_COLUMNS = "100"
CHECKOUT = Path(__file__).resolve().parents[2]


def _subcommands() -> list[tuple[str, str, argparse.ArgumentParser]]:
    from tickpar.cli import _parser

    parser = _parser()
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            out.extend((name, helps.get(name, ""), sub) for name, sub in action.choices.items())
    return out


def _help_text(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        return parser.format_help().rstrip()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def _table(header: list[str], rows: list[list[str]], widths: list[int]) -> nodes.table:
    table = nodes.table()
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    for target, cells in ((head, header), *((body, r) for r in rows)):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            para += nodes.literal(text=cell[1:-1]) if cell.startswith("`") and cell.endswith("`") else nodes.Text(cell)
            entry += para
            row += entry
        target += row
    return table


class CliDirective(SphinxDirective):
    """Every subcommand of ``tickpar`` as a section: its one-line purpose and its ``--help``."""

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for name, summary, parser in _subcommands():
            section = nodes.section(ids=[f"tickpar-{name}"], names=[f"tickpar {name}"])
            section += nodes.title(text=f"tickpar {name}")
            section += nodes.paragraph(text=summary[:1].upper() + summary[1:] + ".")
            section += nodes.literal_block(text=_help_text(parser), language="text")
            self.state.document.note_implicit_target(section)
            out.append(section)
        return out


class ExitCodesDirective(SphinxDirective):
    """The exit statuses of ``tickpar`` (``tickpar.cli.EXIT_CODES``)."""

    def run(self) -> list[nodes.Node]:
        from tickpar.cli import EXIT_CODES

        return [_table(["status", "meaning"], [[str(c), m] for c, m in EXIT_CODES.items()], [10, 90])]


def _type_of(node: dict[str, Any]) -> str:
    if "enum" in node:
        return "one of " + ", ".join(json.dumps(v) for v in node["enum"])
    if "const" in node:
        return json.dumps(node["const"])
    if "oneOf" in node:
        return " or ".join(_type_of(n) for n in node["oneOf"])
    kind = node.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    text = " or ".join(k for k in kinds if k)
    items = node.get("items")
    if "array" in kinds and isinstance(items, dict):
        text += f" of {_type_of(items) or 'values'}"
    bounds = [f"{k} {node[k]}" for k in ("minimum", "maximum", "exclusiveMinimum") if k in node]
    return text + (f" ({', '.join(bounds)})" if bounds else "")


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/"):
        return {**defs[ref.split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    items = node.get("items")
    if isinstance(items, dict) and "$ref" in items:
        node = {**node, "items": _resolve(items, defs)}
    return node


#: The config's tables keyed by plugin name, and what each entry is: their keys are shown once, for any entry.
PLUGIN_TABLES = {"workloads": "workload", "strategies": "strategy"}
#: Keys whose schema lists one plugin's names: (type, description) as the table shows them.
PLUGIN_SPECIFIC = {
    "workloads.<workload>.sweep.base": ("string", "the declared shape the derived shapes start from"),
    "workloads.<workload>.sweep.param": ("string", "the workload parameter the sweep sets to each value"),
    "workloads.<workload>.sweep.values": ("array", "the values of that parameter, one derived shape each"),
}


def _config_rows(schema: dict[str, Any]) -> list[list[str]]:
    defs = schema.get("$defs", {})
    rows: list[list[str]] = []

    def walk(props: dict[str, Any], prefix: str) -> None:
        for key, raw in props.items():
            node = _resolve(raw, defs)
            path = f"{prefix}{key}"
            if path in PLUGIN_TABLES:
                entries = node.get("properties", {})
                what = PLUGIN_TABLES[path]
                rows.append([f"`{path}`", "object", "", node.get("description", "") + f" (one entry per {what})"])
                if entries:
                    walk(next(iter(entries.values())).get("properties", {}), f"{path}.<{what}>.")
                continue
            default = json.dumps(node["default"]) if "default" in node else ""
            description = " ".join(str(node.get("description", "")).split())
            kind = _type_of(node)
            if path in PLUGIN_SPECIFIC:  # its allowed values are one plugin's: say what they are instead
                kind, description = PLUGIN_SPECIFIC[path]
            rows.append([f"`{path}`", kind, default, description])
            sub = node.get("properties")
            if isinstance(sub, dict) and sub and not node.get("x-what", "").endswith(("parameter", "option")):
                walk(sub, f"{path}.")

    walk(schema.get("properties", {}), "")
    return rows


class ConfigKeysDirective(SphinxDirective):
    """Every key of a sweep config (the schema the pipeline validates a config with)."""

    def run(self) -> list[nodes.Node]:
        from tickpar.pipeline.sweep import SCHEMA_PATH, config_schema

        self.env.note_dependency(str(SCHEMA_PATH))
        rows = _config_rows(config_schema())
        return [_table(["key", "type", "default", "what"], rows, [22, 18, 12, 48])]


def _layer_map_tool() -> ModuleType:
    """``tools/layer_map.py`` (a script of the checkout, not a package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location("tickpar_layer_map", CHECKOUT / "tools" / "layer_map.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before it runs: its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _inline(text: str) -> nodes.paragraph:
    """A paragraph of ``text`` with its ``literals`` (RST double backquotes, as docstrings write them) as code."""
    para = nodes.paragraph()
    for index, part in enumerate(re.split(r"``(.+?)``", text)):
        if part:
            para += nodes.literal(text=part) if index % 2 else nodes.Text(part)
    return para


class LayersDirective(SphinxDirective):
    """The layer map: generated from the import-linter contract and the layers' docstrings, never written."""

    def run(self) -> list[nodes.Node]:
        tool = _layer_map_tool()
        self.env.note_dependency(str(CHECKOUT / "pyproject.toml"))
        problems = tool.missing(CHECKOUT)
        if problems:
            raise self.error("the layer map is not whole: " + "; ".join(problems))
        layers = tool.layer_map(CHECKOUT)
        rows = [[f"``{layer.module}``", layer.holds, tool.may_import_text(layer, layers)] for layer in layers]
        for layer in layers:
            self.env.note_dependency(str(CHECKOUT / layer.path))
        table = nodes.table()
        group = nodes.tgroup(cols=3)
        table += group
        for width in (18, 57, 25):
            group += nodes.colspec(colwidth=width)
        head, body = nodes.thead(), nodes.tbody()
        group += head
        group += body
        for target, cells in ((head, ["layer", "holds", "may import"]), *((body, r) for r in rows)):
            row = nodes.row()
            for cell in cells:
                entry = nodes.entry()
                entry += _inline(cell)
                row += entry
            target += row
        return [table]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("tickpar-cli", CliDirective)
    app.add_directive("tickpar-exit-codes", ExitCodesDirective)
    app.add_directive("tickpar-config-keys", ConfigKeysDirective)
    app.add_directive("tickpar-layers", LayersDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
