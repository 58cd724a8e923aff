"""The run specification: everything that determines a model and its golden result.

A :class:`RunSpec` names its workload; building the model looks the workload up in the
:mod:`~tickpar.plugins.registry` by that name, so a spec pickles as plain data and
process and MPI backends rebuild the same model in every process.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tickpar.kernel.model import Model
from tickpar.kernel.work import make_work
from tickpar.plugins.registry import PluginError, get_registry
from tickpar.plugins.traits import TRAITS
from tickpar.verify.oracle import OracleRecord

__all__ = ["RunSpec"]


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines a model and its golden result."""

    workload: str
    params: dict[str, Any]
    seed: int
    order: str = "gem5"
    work: str = "none"
    trace: bool = False

    def build_model(self, *, work: str | None = None, detect_races: bool = False, record_dag: bool = False) -> Model:
        """Build this spec's model (a pure function of the spec).

        ``detect_races``: give events the race guard (for models that several
        workers share in memory); ``work`` overrides the spec's work mode.
        """
        workload = get_registry().workload(self.workload)()
        work_fn, _ = make_work(work or self.work)
        model = Model(
            self.seed, work=work_fn, trace=self.trace, detect_races=detect_races, record_dag=record_dag
        )
        workload.build(model, dict(self.params))
        return model

    def traits(self) -> frozenset[str]:
        """The workload's traits for these params; an undeclared trait name is a PluginError."""
        found = frozenset(get_registry().workload(self.workload)().traits(dict(self.params)))
        unknown = sorted(found - TRAITS.keys())
        if unknown:
            raise PluginError(
                f"workload {self.workload} declares trait {unknown[0]!r}: not one of {', '.join(TRAITS)}"
            )
        return found

    def statistics(self, record: OracleRecord) -> dict[str, float]:
        """The workload's declared statistics of ``record`` (a finished run of this spec)."""
        workload = get_registry().workload(self.workload)()
        values = workload.stats(record)
        if set(values) != set(workload.statistics):
            raise ValueError(
                f"workload {self.workload}: stats() returned {sorted(values)}, declared {sorted(workload.statistics)}"
            )
        return {name: float(values[name]) for name in workload.statistics}

    def with_trace(self, trace: bool = True) -> RunSpec:
        return replace(self, trace=trace)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "params": dict(self.params),
            "seed": self.seed,
            "order": self.order,
            "work": self.work,
            "trace": self.trace,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        return cls(
            data["workload"], dict(data["params"]), int(data["seed"]), data["order"], data["work"], data["trace"]
        )
