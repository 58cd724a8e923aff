"""A sweep's cells: what one cell is, where its files go, and the sweep that holds them.

:class:`SweepCell` is one (workload, shape, strategy, variant, workers, seed, order, work, interpreter,
engine) with its file paths (the ``*_PATTERN`` names) and command-line arguments; :class:`Sweep` is the
expanded config (:func:`tickpar.pipeline.expansion.expand`) as the Snakefile reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tickpar.host.interpreters import DEFAULT as DEFAULT_INTERPRETER

__all__ = [
    "CHECK_PATTERN",
    "GOLDEN_PATTERN",
    "TIMING_GROUP_PATTERN",
    "TIMING_PATTERN",
    "Sweep",
    "SweepCell",
    "SweepError",
    "format_value",
]

DEFAULT_VARIANT = "default"

_CELL_PART = "{workload}/{shape}/{strategy}/{variant}/{order}/{work}/{interpreter}/{engine}/w{workers}-s{seed}"
CHECK_PATTERN = f"results/check/{_CELL_PART}.json"
TIMING_PATTERN = f"results/timing/{_CELL_PART}.json"
#: One timing job per workload shape: its index of the cell records it wrote (rules/bench.smk).
TIMING_GROUP_PATTERN = "results/timing/{workload}/{shape}.json"
GOLDEN_PATTERN = "results/golden/{workload}/{shape}/{order}/s{seed}.json"
#: Snakemake wildcard constraints matching the patterns above.
WILDCARD_CONSTRAINTS = {
    "workload": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "shape": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "strategy": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "variant": r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    "order": r"[A-Za-z0-9_]+",
    "work": r"[A-Za-z0-9_-]+",
    "interpreter": r"[A-Za-z0-9_-]+",
    "engine": r"[a-z]+",
    "workers": r"\d+",
    "seed": r"\d+",
}


class SweepError(Exception):
    """A config that cannot run (the message is one line naming the key)."""


# ---------------------------------------------------------------- cells


def format_value(value: Any) -> str:
    """A parameter value as the CLI's ``key=value`` expects it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if not isinstance(value, float) else repr(value)


@dataclass(frozen=True, eq=False)
class SweepCell:
    """One cell of the sweep, with the labels the report uses and the files the pipeline writes."""

    workload: str
    shape: str
    params: dict[str, Any]
    strategy: str
    variant: str
    options: dict[str, Any]
    workers: int
    seed: int
    order: str
    work: str
    timed: bool
    mpi: bool = False
    processes: bool = False
    family: str = ""
    expected: str | None = None
    #: The promised verdicts (``expected`` is their label: one verdict, ``not exact`` or ``one of ...``).
    promised: tuple[str, ...] = ()
    interpreter: str = DEFAULT_INTERPRETER
    #: The ``python`` that runs the cell's check and timing jobs (:func:`tickpar.host.interpreters.interpreter_python`).
    python: str = ""
    #: What the label adds to strategy/variant to tell cells apart in one figure: ``ft`` (the free-threaded
    #: interpreter), ``native`` (the native engine), the work mode (when the sweep has several).
    tags: tuple[str, ...] = ()
    #: ``python`` (the model itself) or ``native`` (the C++ replay of its event DAG, :mod:`tickpar.native`).
    engine: str = "python"
    #: On a held-out validation shape (a sweep with ``held_out: true``): predicted, never fitted on.
    held_out: bool = False

    @property
    def wildcards(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "shape": self.shape,
            "strategy": self.strategy,
            "variant": self.variant,
            "order": self.order,
            "work": self.work,
            "interpreter": self.interpreter,
            "engine": self.engine,
            "workers": self.workers,
            "seed": self.seed,
        }

    @property
    def key(self) -> str:
        return _CELL_PART.format(**self.wildcards)

    @property
    def check_cores(self) -> int:
        """Cores its correctness check claims: one per worker process, MPI rank or native thread, or per thread on
        a free-threaded interpreter; 1 for threads under the GIL, which keep about one core busy
        (oversubscribing a check only slows it; timing jobs claim every core)."""
        parallel = self.processes or self.mpi or self.engine == "native" or self.interpreter != DEFAULT_INTERPRETER
        return self.workers if parallel else 1

    @property
    def base_label(self) -> str:
        """Strategy and variant (``split/nochecks``; the default variant is just the name)."""
        return self.strategy if self.variant == DEFAULT_VARIANT else f"{self.strategy}/{self.variant}"

    @property
    def label(self) -> str:
        """The legends' name: :attr:`base_label` and the tags (``tick-barrier [ft, gil-hold]``)."""
        return f"{self.base_label} [{', '.join(self.tags)}]" if self.tags else self.base_label

    @property
    def check_path(self) -> str:
        return CHECK_PATTERN.format(**self.wildcards)

    @property
    def timing_path(self) -> str:
        return TIMING_PATTERN.format(**self.wildcards)

    @property
    def pyperf_path(self) -> str:
        return self.timing_path[: -len(".json")] + ".pyperf.json"

    @property
    def golden_key(self) -> tuple[str, str, str, int]:
        return (self.workload, self.shape, self.order, self.seed)

    @property
    def golden_path(self) -> str:
        return GOLDEN_PATTERN.format(workload=self.workload, shape=self.shape, order=self.order, seed=self.seed)

    def cli_args(self, *, golden: bool = False) -> list[str]:
        """``--workload ... --param k=v ... --strategy ...`` for ``tickpar check/time/golden``."""
        args = ["--workload", self.workload]
        for k, v in self.params.items():
            args += ["--param", f"{k}={format_value(v)}"]
        if golden:
            return [*args, "--seed", str(self.seed), "--order", self.order, "--work", "none"]
        args += ["--strategy", self.strategy]
        for k, v in self.options.items():
            args += ["--option", f"{k}={format_value(v)}"]
        args += ["--workers", str(self.workers), "--seed", str(self.seed), "--order", self.order, "--work", self.work]
        if self.engine != "python":
            args += ["--engine", self.engine]
        return args

    def timing_entry(self) -> dict[str, Any]:
        """What the timing job of its shape needs: the manifest row, the CLI options, the pyperf and golden files."""
        return {**self.row(), "cli_args": self.cli_args(), "pyperf_path": self.pyperf_path,
                "golden_path": self.golden_path, "python": self.python}  # fmt: skip

    def row(self) -> dict[str, Any]:
        """The manifest row (what the aggregate joins the records to)."""
        return {
            "cell": self.key,
            "workload": self.workload,
            "shape": self.shape,
            "family": self.family or self.shape,
            "strategy": self.strategy,
            "variant": self.variant,
            "label": self.label,
            "base_label": self.base_label,
            "workers": self.workers,
            "seed": self.seed,
            "order": self.order,
            "work": self.work,
            "interpreter": self.interpreter,
            "engine": self.engine,
            "held_out": self.held_out,
            "timed": self.timed,
            "mpi": self.mpi,
            "processes": self.processes,
            "expected_verdict": self.expected,
            "promised_verdicts": list(self.promised),
            "params": dict(self.params),
            "options": dict(self.options),
            "check_path": self.check_path,
            "timing_path": self.timing_path if self.timed else None,
        }


@dataclass
class Sweep:
    """The expanded sweep."""

    config: dict[str, Any]
    source: str
    cells: list[SweepCell]
    skipped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key = {c.key: c for c in self.cells}
        self.goldens: dict[tuple[str, str, str, int], SweepCell] = {}
        for c in self.cells:
            self.goldens.setdefault(c.golden_key, c)

    @property
    def timed(self) -> list[SweepCell]:
        return [c for c in self.cells if c.timed]

    @property
    def timing_groups(self) -> dict[tuple[str, str], list[SweepCell]]:
        """The timed cells by (workload, shape): each group is one timing job, timed in interleaved rounds."""
        groups: dict[tuple[str, str], list[SweepCell]] = {}
        for c in self.timed:
            groups.setdefault((c.workload, c.shape), []).append(c)
        return groups

    @property
    def timing_group_paths(self) -> list[str]:
        return [TIMING_GROUP_PATTERN.format(workload=w, shape=s) for w, s in self.timing_groups]

    def timing_group(self, wildcards: Mapping[str, Any]) -> list[SweepCell]:
        """The timed cells of the shape a timing job's wildcards name."""
        key = (str(wildcards["workload"]), str(wildcards["shape"]))
        try:
            return self.timing_groups[key]
        except KeyError:
            raise KeyError(f"no timed cells for {key} in the sweep in {self.source}") from None

    def cell(self, wildcards: Mapping[str, Any]) -> SweepCell:
        """The cell a rule's wildcards name (a KeyError names a file outside this sweep)."""
        key = _CELL_PART.format(**{k: wildcards[k] for k in WILDCARD_CONSTRAINTS})
        try:
            return self.by_key[key]
        except KeyError:
            raise KeyError(f"{key} is not a cell of the sweep in {self.source}") from None

    def golden(self, wildcards: Mapping[str, Any]) -> SweepCell:
        key = (str(wildcards["workload"]), str(wildcards["shape"]), str(wildcards["order"]), int(wildcards["seed"]))
        try:
            return self.goldens[key]
        except KeyError:
            raise KeyError(f"golden {key} is not part of the sweep in {self.source}") from None

    def manifest(self) -> list[dict[str, Any]]:
        return [c.row() for c in self.cells]

    def summary(self) -> str:
        """One line for the log: what will run, and what was left out and why."""
        text = (
            f"tickpar: sweep {self.source}: {len(self.cells)} cells ({len(self.timed)} timed), "
            f"{len(self.goldens)} golden runs"
        )
        if self.skipped:
            text += "; left out: " + ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return text
