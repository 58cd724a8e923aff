"""Write a run of the Python engine as a gem5 event trace: ground truth for the importer.

:func:`emit_trace` records the run's event DAG (:func:`tickpar.native.record.record`: one
sequential run, every operation logged with the occurrence that made it) and writes it in either
gem5 format (:mod:`tickpar.gem5.lines`):

* ``event``: gem5's stock ``Event`` trace, ``"%7d: <name>: generic <instance> <action> @ <when>"``,
  an ``executed`` line per occurrence followed by the operations it made, as gem5 prints them
  (``Event::trace`` before ``process()``);
* ``insert-log``: one line per insertion (schedule or reschedule), with the running event as the
  parent, or without one before the loop; deschedules and executions are not logged.

Each event object gets an address of its own (``0x1000`` + 64 bytes per object), so no address is
reused.  Direct calls are not events and are not written.  Importing the file and replaying it
serves every event at the tick and, per component, in the order of the original run.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import IO

from tickpar.native.record import CLOCK, DESCHEDULE, RESCHEDULE, RESCHEDULE_ALWAYS, RecordedDag, record
from tickpar.plugins import RunSpec

__all__ = ["EMIT_FORMATS", "components_mapping", "emit_trace", "write_trace"]

EMIT_FORMATS = ("event", "insert-log")
_ACTION = {0: "scheduled", RESCHEDULE: "rescheduled", RESCHEDULE_ALWAYS: "rescheduled", DESCHEDULE: "descheduled"}


def _address(obj: int) -> str:
    return f"{0x1000 + 64 * obj:#x}"


def write_trace(rec: RecordedDag, out: IO[str], fmt: str = "event") -> int:
    """Write ``rec`` (with its occurrence ticks) to ``out`` in ``fmt``; returns the lines written."""
    if fmt not in EMIT_FORMATS:
        raise ValueError(f"trace format {fmt!r} is not allowed: one of {', '.join(EMIT_FORMATS)}")
    names = rec.names
    pending: dict[int, int] = {}
    lines = 0

    def op_line(op: tuple[int, int, int, int, int], tick: int, parent: int | None) -> str | None:
        kind, mode, target, value, _source = op
        if kind == DESCHEDULE:
            when = pending.pop(target, tick)
        else:
            when = tick + value if mode == CLOCK else value
            pending[target] = when
        name = names[rec.obj_name[target]]
        if fmt == "event":
            return f"{tick:7d}: {name}: generic {_address(target)} {_ACTION[kind]} @ {when}\n"
        if kind == DESCHEDULE:
            return None
        if parent is None:
            return f"{_address(target)},{name},{tick},{when}\n"
        return f"{_address(parent)},{names[rec.obj_name[parent]]},{_address(target)},{name},{tick},{when}\n"

    for op in rec.init_ops:
        text = op_line(op, 0, None)
        if text is not None:
            out.write(text)
            lines += 1
    for k, ops in enumerate(rec.occ_ops):
        obj, tick = rec.occ_obj[k], rec.occ_tick[k]
        pending.pop(obj, None)
        if fmt == "event":
            out.write(f"{tick:7d}: {names[rec.obj_name[obj]]}: generic {_address(obj)} executed @ {tick}\n")
            lines += 1
        for op in ops:
            text = op_line(op, tick, obj)
            if text is not None:
                out.write(text)
                lines += 1
    return lines


def components_mapping(rec: RecordedDag) -> list[str]:
    """``REGEX -> COMPONENT`` lines for every event name whose component gem5's naming rules would miss."""
    from tickpar.gem5.names import component_of

    lines = []
    seen: set[int] = set()
    for comp, name in zip(rec.obj_comp, rec.obj_name, strict=True):
        if name in seen:
            continue
        seen.add(name)
        text = rec.names[name]
        if component_of(text) != rec.components[comp]:
            lines.append(f"^{re.escape(text)}$ -> {rec.components[comp]}")
    return lines


def emit_trace(spec: RunSpec, path: str | Path, fmt: str = "event") -> tuple[int, Path | None]:
    """Run ``spec`` sequentially (Python engine) and write it to ``path`` (``.gz``: compressed) as a gem5 trace.

    Where the model's event names do not say their component the way gem5's do (a port's event
    ``<component>.<port>.<event>``), the true components go to ``<path>.components``, a mapping
    file for the importer.  Returns the lines written and that file (``None`` when not needed).
    """
    if fmt not in EMIT_FORMATS:
        raise ValueError(f"trace format {fmt!r} is not allowed: one of {', '.join(EMIT_FORMATS)}")
    rec = record(spec)
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as out:  # type: ignore[operator]
        lines = write_trace(rec, out, fmt)
    tmp.replace(p)
    mapping = components_mapping(rec)
    mapping_path = p.with_name(p.name + ".components")
    if mapping:
        mapping_path.write_text("\n".join(mapping) + "\n", encoding="utf-8")
        return lines, mapping_path
    mapping_path.unlink(missing_ok=True)
    return lines, None
