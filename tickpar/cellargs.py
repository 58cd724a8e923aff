"""A cell's command-line options, defined once: the ``tickpar`` CLI and the pyperf timing script share them.

A cell is (workload, params, strategy, options, workers, seed, order, work, engine).
:func:`add_cell_options` declares its options on a parser
(:func:`add_spec_options`: the run spec's only, for commands such as ``tickpar
bounds`` that take no strategy); ``short=False``
leaves out the one-letter aliases (``-w -p -s -o -n``), which the pyperf script
cannot take because pyperf owns ``-p -n -w -o``.  :func:`cell_argv` turns the
parsed options back into long-option argv (what pyperf passes to its workers),
and :func:`cell_from_args` validates them into a :class:`tickpar.runner.Cell`
(bad input: one-line ``ParamError``/``PluginError``).
"""

from __future__ import annotations

import argparse
from typing import Any

from tickpar.kernel.params import parse_assignments
from tickpar.plugins import BASELINE

__all__ = ["add_cell_options", "add_spec_options", "cell_argv", "cell_from_args"]


def add_spec_options(parser: argparse.ArgumentParser, *, short: bool = True) -> None:
    """Declare the run spec's options (workload, params, seed, order, work: no strategy) on ``parser``."""
    _add(parser.add_argument_group("run spec"), short, strategy=False)


def add_cell_options(parser: argparse.ArgumentParser, *, short: bool = True) -> None:
    """Declare the cell's options on ``parser`` (with one-letter aliases unless ``short`` is False)."""
    _add(parser.add_argument_group("cell"), short, strategy=True)


def _add(group: Any, short: bool, *, strategy: bool) -> None:
    def names(long: str, letter: str) -> list[str]:
        return [long, letter] if short else [long]

    group.add_argument(*names("--workload", "-w"), required=True, help="workload name (see `tickpar list`)")
    group.add_argument(*names("--param", "-p"), action="append", metavar="K=V", help="workload parameter (repeatable)")
    if strategy:
        group.add_argument(*names("--strategy", "-s"), default=BASELINE, help=f"strategy name (default: {BASELINE})")
        group.add_argument(*names("--option", "-o"), action="append", metavar="K=V", help="strategy option, repeatable")
        group.add_argument(*names("--workers", "-n"), type=int, default=1, help="worker count (default 1)")
        group.add_argument(
            "--engine",
            default=None,
            help="python (runs the model) or native (C++ replay of its event DAG); default: python, or the "
            "strategy's one engine where it has one only (a native plugin)",
        )
    group.add_argument("--seed", type=int, default=1, help="run seed (default 1)")
    group.add_argument("--order", default="gem5", help="tie order: gem5 (LIFO, as gem5) or canonical")
    group.add_argument("--work", default="none", help="work model: gil-release, gil-hold or none")


def cell_argv(args: argparse.Namespace) -> list[str]:
    """The parsed cell options again, as long-option argv."""
    out = ["--workload", args.workload]
    for item in args.param or []:
        out += ["--param", item]
    out += ["--strategy", args.strategy]
    for item in args.option or []:
        out += ["--option", item]
    out += ["--workers", str(args.workers), "--seed", str(args.seed), "--order", args.order, "--work", args.work]
    if getattr(args, "engine", None) is not None:
        out += ["--engine", args.engine]
    return out


def cell_from_args(args: argparse.Namespace, trace: bool = False) -> Any:
    """The validated :class:`tickpar.runner.Cell` the parsed options name."""
    from tickpar.runner import resolve_cell

    return resolve_cell(
        args.workload,
        parse_assignments(args.param, "--param"),
        args.strategy,
        parse_assignments(args.option, "--option"),
        args.workers,
        args.seed,
        args.order,
        args.work,
        trace,
        getattr(args, "engine", None),
    )
