"""The gem5 trace importer: both formats, every reconstruction rule, and bad input (tickpar.gem5)."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest
from gem5_importers import compare

import tickpar.gem5
from tickpar.gem5 import ImportedTrace, TraceError
from tickpar.gem5.importer import ABSOLUTE, CLOCK
from tickpar.gem5.lines import MAX_TICK, TraceReader, read_trace
from tickpar.gem5.names import ComponentRules, component_of, load_mapping
from tickpar.native.record import DESCHEDULE, RESCHEDULE, SCHEDULE

BANNER = "gem5 Simulator System.  https://www.gem5.org\ngem5 version 25.1.0.0\n\n"


#: Tests whose input the native importer leaves to Python, whose own errors they check (an unknown format, a
#: missing file, a corrupt .gz).
NATIVE_DEFERS = ("test_unknown_format_and_missing_file", "test_a_corrupt_gz_is_one_line")

Importer = Callable[..., ImportedTrace]


@pytest.fixture(params=["default", "both"])
def import_trace(request: pytest.FixtureRequest) -> Importer:
    """The importer under test, with :func:`tickpar.gem5.import_trace`'s arguments: ``default`` is that function
    as a user calls it (the native port where it is built); ``both`` imports with the Python importer and the
    native port and asserts the same ImportedTrace or the same error (tests/gem5_importers.py), skipped where
    the port is not built."""
    if request.param == "default":
        return tickpar.gem5.import_trace
    pytest.importorskip("tickpar_native._gem5", reason="the native gem5 importer is not built")
    native_expected = request.function.__name__ not in NATIVE_DEFERS

    def both(path: str | Path, fmt: str = "auto", components: str | Path | None = None, events: int = 0):
        return compare(path, fmt, components, events, native_expected=native_expected)

    return both


def write(tmp_path: Path, text: str, name: str = "trace.txt") -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as out:
            out.write(text)
    else:
        path.write_text(text)
    return path


def served(trace) -> list[tuple[int, str]]:
    return [(trace.occ_tick[k], trace.names[trace.inst_name[trace.occ_inst[k]]]) for k in trace.served()]


def ops(trace) -> list[tuple[int, int, str, int, int]]:
    """(occurrence, kind, target name, mode, value) per operation."""
    return [
        (occ, kind, trace.names[trace.inst_name[inst]], mode, value)
        for occ, kind, inst, mode, value in zip(
            trace.op_occ, trace.op_kind, trace.op_inst, trace.op_mode, trace.op_value, strict=True
        )
    ]


# -- names -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("board.memory.mem_ctrl.wrapped_function_event", "board.memory.mem_ctrl"),
        ("board.memory.mem_ctrl.port-RespPacketQueue.wrapped_function_event", "board.memory.mem_ctrl"),
        ("board.cache_hierarchy.membus.cpu_side_port[0]-RespPacketQueue.wrapped_function_event",
         "board.cache_hierarchy.membus"),
        ("system.cpu.wrapped_event", "system.cpu"),
        ("board.cache_hierarchy.l1dcaches0.cpu_side_port-CpuSidePort.wrapped_function_event",
         "board.cache_hierarchy.l1dcaches0"),
        ("board.cache_hierarchy.l2cache.mem_side_port-MemSidePort.wrapped_function_event",
         "board.cache_hierarchy.l2cache"),
        ("AtomicSimpleCPU tick.wrapped_function_event", "AtomicSimpleCPU tick#7"),
        ("O3CPU tick", "O3CPU tick#7"),
        ("Consumer Event.wrapped_function_event", "Consumer Event#7"),
        ("Event_57", "Event_57"),
        ("system.cpu0.tickEvent", "system.cpu0"),
        ("0.wrapped_function_event", "0"),
    ],
)  # fmt: skip
def test_component_rules(name: str, component: str) -> None:
    """A name that does not say its SimObject (a literal with a space, Event_N) is a component per object."""
    assert component_of(name, "7") == component


def test_mapping_file_overrides_the_rules(tmp_path: Path) -> None:
    mapping = write(
        tmp_path, "# CPU ports\n^(system\\.cpu\\d+)\\.dcachePort\\..* -> \\1\n^Event_5\\d$ -> cpu\n", "map.txt"
    )
    rules = ComponentRules(load_mapping(mapping))
    assert rules("system.cpu3.dcachePort.recvTimingResp") == "system.cpu3"
    assert rules("Event_57") == "cpu"
    assert rules("Event_62") == "Event_62"  # no match: the built-in rules


def test_mapping_file_errors_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"map.txt:2: expected 'REGEX -> COMPONENT'"):
        load_mapping(write(tmp_path, "a -> b\nno arrow here\n", "map.txt"))
    with pytest.raises(ValueError, match=r"map.txt:1: bad regex"):
        load_mapping(write(tmp_path, "(unclosed -> b\n", "map.txt"))


# -- the insert log --------------------------------------------------------------------------------
def test_insert_log_parents_delays_and_silent_events(tmp_path: Path, import_trace: Importer) -> None:
    text = BANNER + (
        "0x10,a.e,0,10\n"  # before the loop: A at 10
        "0x10,a.e,0x20,b.e,10,15\n"  # A runs at 10, schedules B at 15 (delay 5)
        "0x10,a.e,0x30,c.e,10,12\n"  # ... and C at 12; C never inserts anything
        "0x20,b.e,0x10,a.e,15,20\n"  # B runs at 15: C ran silently at 12
        "0x10,a.e,0x20,b.e,20,21\n"
        "0x20,b.e,0x10,a.e,21,30\n"
    )
    trace = import_trace(write(tmp_path, text))
    assert trace.format == "insert-log"
    assert trace.reader.skipped_banner == 2  # the blank line is not counted
    assert served(trace) == [(10, "a.e"), (12, "c.e"), (15, "b.e"), (20, "a.e"), (21, "b.e")]
    assert trace.rules["ran_silently"] == 1
    assert ops(trace)[:3] == [
        (-1, SCHEDULE, "a.e", ABSOLUTE, 10),
        (0, SCHEDULE, "b.e", CLOCK, 5),
        (0, SCHEDULE, "c.e", CLOCK, 2),
    ]
    assert trace.components == ["a", "b", "c"]


def test_reinsert_while_pending_is_a_reschedule(tmp_path: Path, import_trace: Importer) -> None:
    text = "0x10,a.e,0,10\n0x20,b.e,0,5\n0x20,b.e,0x10,a.e,5,30\n0x20,b.e,0x20,b.e,5,40\n"
    trace = import_trace(write(tmp_path, text))
    assert (0, RESCHEDULE, "a.e", CLOCK, 25) in ops(trace)
    assert trace.rules["reschedule"] == 1
    assert served(trace) == [(5, "b.e")]  # a.e moved to 30, b.e to 40: past the trace's last tick


@pytest.mark.parametrize("fmt", ["auto", "insert-log"])
def test_reinsert_at_its_own_tick_means_it_ran_just_before(tmp_path: Path, fmt: str, import_trace: Importer) -> None:
    # b.e is pending at 5 when a.e (running at 5) inserts it again: b.e ran at 5, before a.e
    text = "0x10,a.e,0,5\n0x20,b.e,0,5\n0x10,a.e,0x20,b.e,5,9\n0x20,b.e,0x20,b.e,9,12\n"
    trace = import_trace(write(tmp_path, text), fmt)
    assert served(trace) == [(5, "b.e"), (5, "a.e"), (9, "b.e")]
    assert trace.rules["ran_silently"] == 1


def test_pointer_reuse_cancels_the_pending_event(tmp_path: Path, import_trace: Importer) -> None:
    text = "0x10,x.e,0,100\n0x20,b.e,0,5\n0x20,b.e,0x10,y.e,5,50\n0x20,b.e,0x20,b.e,5,60\n0x20,b.e,0x20,b.e,60,70\n"
    trace = import_trace(write(tmp_path, text))
    assert (0, DESCHEDULE, "x.e", ABSOLUTE, 0) in ops(trace)  # attributed to the occurrence that reused the address
    assert trace.rules["pointer_reuse"] == 1 and trace.rules["cancelled"] == 1
    assert "x.e" not in [name for _t, name in served(trace)]


def test_limit_event_is_left_out(tmp_path: Path, import_trace: Importer) -> None:
    text = (
        f"0x10,a.e,0,5\n0x99,Event_62,0,0\n0x99,Event_62,0,{MAX_TICK}\n0x10,a.e,0x10,a.e,5,9\n0x10,a.e,0x10,a.e,9,12\n"
    )
    trace = import_trace(write(tmp_path, text))
    assert "Event_62" not in [name for _t, name in served(trace)]
    assert all(trace.names[trace.inst_name[i]] != "Event_62" for i in trace.op_inst)
    assert trace.rules["limit_event"] == 1


def test_insertion_with_no_event_running_mid_run_is_a_stored_tick(tmp_path: Path, import_trace: Importer) -> None:
    text = "0x10,a.e,0,5\n0x10,a.e,0x10,a.e,5,9\n0x20,b.e,9,30\n0x10,a.e,0x10,a.e,9,40\n"
    trace = import_trace(write(tmp_path, text))
    # b.e is inserted with no event running after a.e ran at 5: attributed to that occurrence, stored tick
    assert (0, SCHEDULE, "b.e", ABSOLUTE, 30) in ops(trace)
    assert trace.rules["no_parent"] == 1


def test_self_reinsert_at_the_same_tick_starts_a_new_occurrence(tmp_path: Path, import_trace: Importer) -> None:
    text = "0x10,a.e,0,5\n0x10,a.e,0x10,a.e,5,5\n0x10,a.e,0x20,b.e,5,8\n0x20,b.e,0x20,b.e,8,9\n"
    trace = import_trace(write(tmp_path, text))
    assert served(trace)[:3] == [(5, "a.e"), (5, "a.e"), (8, "b.e")]
    assert ops(trace)[2][0] == 1  # b.e was scheduled by a.e's second run


def test_a_cut_last_tick_ends_the_replay_before_it(tmp_path: Path, import_trace: Importer) -> None:
    text = "0x10,a.e,0,5\n0x20,b.e,0,5\n0x10,a.e,0x10,a.e,5,9\n"  # b.e (pending at 5) never seen running
    trace = import_trace(write(tmp_path, text))
    assert trace.end_tick == 4 and trace.events == 0
    assert trace.rules["last_tick"] == 1


def test_events_limit_keeps_whole_ticks(tmp_path: Path, import_trace: Importer) -> None:
    lines = ["0x10,a.e,0,1"] + [f"0x10,a.e,0x10,a.e,{t},{t + 1}" for t in range(1, 50)]
    trace = import_trace(write(tmp_path, "\n".join(lines) + "\n"), events=10)
    assert trace.events == 10 and trace.end_tick == 10


# -- the stock Event trace -------------------------------------------------------------------------
def test_stock_trace_keeps_the_executed_order(tmp_path: Path, import_trace: Importer) -> None:
    # c.e and d.e share tick 10; gem5 ran d.e first although c.e was scheduled later (another priority)
    text = (
        "      0: a.e: generic 1 scheduled @ 10\n"
        "      0: Event: b.e: generic 2 scheduled @ 10\n"  # the FmtFlag prefix
        "      0: system.cpu: some other debug flag's output\n"
        "     10: b.e: generic 2 executed @ 10\n"
        "     10: a.e: generic 1 executed @ 10\n"
        "     10: c.e: generic 3 scheduled @ 20\n"
        "     10: d.e: generic 4 scheduled @ 20\n"
        "     10: e.e: generic 5 scheduled @ 30\n"
        "     20: c.e: generic 3 executed @ 20\n"
        "     20: d.e: generic 4 executed @ 20\n"
        "     20: e.e: generic 5 descheduled @ 30\n"
        "     20: d.e: generic 4 rescheduled @ 25\n"
        "     25: d.e: generic 4 executed @ 25\n"
    )
    path = write(tmp_path, text, "trace.txt.gz")
    trace = import_trace(path, "auto")
    assert trace.format == "event"
    assert trace.reader.skipped_other == 1
    assert served(trace) == [(10, "b.e"), (10, "a.e"), (20, "c.e"), (20, "d.e"), (25, "d.e")]
    # LIFO would run d.e (scheduled later) before c.e: the importer gives c.e a lower priority level
    levels = [trace.inst_level[i] for i in trace.occ_inst]
    assert levels[2] < levels[3]
    assert levels[0] == levels[1]  # b.e, scheduled after a.e, runs first: gem5's LIFO at one level
    assert (3, DESCHEDULE, "e.e", ABSOLUTE, 0) in ops(trace)
    assert trace.rules["cancelled"] == 1


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0x10,a.e,0,5\n0x10,a.e,0x10,a.e,5,9,extra,fields,here\n0x10,a.e,0x10,a.e,9,12\n",
         r"trace.txt:2: 9 comma-separated fields: the insert log has 4 or 6"),
        ("0x10,a.e,0,5\nzz,a.e,0x10,a.e,5,9\n0x10,a.e,0x10,a.e,9,12\n", r"trace.txt:2: event pointer 'zz'"),
        ("0x10,a.e,0,5\n0x10,a.e,0x10,a.e,5,x\n0x10,a.e,0x10,a.e,9,12\n", r"trace.txt:2: curTick '5' and when 'x'"),
        ("0x10,a.e,0,50\n0x10,a.e,0x10,a.e,50,60\n0x20,b.e,0x20,b.e,40,45\n",
         r"trace.txt:3: curTick goes back from 50 to 40: lines of several event queues interleave"),
        ("a.e: generic 1 scheduled @ 10\nb.e: generic 2 executed @ 10\n",
         r"trace.txt:1: an Event line without its tick"),
        ("      5: a.e: generic 1 executed @ 5\n   garbage in the middle\n      6: a.e: generic 1 executed @ 6\n",
         r"trace.txt:2: not an Event line"),
        ("", r"trace.txt: no event lines in 0 line\(s\)"),
        ("just a banner\n", r"no event lines in 1 line\(s\)"),
    ],
)  # fmt: skip
def test_bad_input_names_the_file_and_line(tmp_path: Path, text: str, message: str, import_trace: Importer) -> None:
    with pytest.raises(TraceError, match=message):
        import_trace(write(tmp_path, text))


def test_a_corrupt_gz_is_one_line(tmp_path: Path, import_trace: Importer) -> None:
    path = tmp_path / "trace.txt.gz"
    data = gzip.compress(b"0x10,a.e,0,5\n" * 1000)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match=r"trace.txt.gz:\d+: the file cannot be read .*corrupt or cut .gz"):
        import_trace(path)


def test_a_cut_last_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "0x10,a.e,0,5\n0x10,a.e,0x10,a.e,5,9\n0x10,a.e,0x10,a.e,9,12\n0x10,a.e,0x10")
    reader = TraceReader(str(path))
    lines = list(read_trace(path, "auto", reader))
    assert len(lines) == 3
    assert reader.warnings == [f"{path}:4: the last line is cut mid-way: dropped"]


def test_unknown_format_and_missing_file(tmp_path: Path, import_trace: Importer) -> None:
    with pytest.raises(TraceError, match="trace format 'gem5' is not allowed: one of auto, event, insert-log"):
        import_trace(write(tmp_path, "0x10,a.e,0,5\n"), "gem5")
    with pytest.raises(TraceError, match="no such trace file"):
        import_trace(tmp_path / "missing.txt")


# -- what real stock traces hold ------------------------------------------------------------------------
EXIT_TAIL = (
    "     20: a.e: generic 1 executed @ 20\n"
    "     20: Event_94: generic 94 scheduled @ 20\n"  # another exit event, never reached
    "     20: b.e: generic 2 executed @ 20\n"
    "     20: Event_95: generic 95 scheduled @ 20\n"
    "     20: Event_95: generic 95 executed @ 20\n"
)


def test_gem5s_exit_event_is_named_and_left_out_and_its_tick_is_replayed(
    tmp_path: Path, import_trace: Importer
) -> None:
    text = (
        "      0: a.e: generic 1 scheduled @ 20\n"
        "      0: b.e: generic 2 scheduled @ 20\n"
        "      0: Event_93: generic 93 scheduled @ 0\n"
        "      0: Event_93: generic 93 rescheduled @ 18446744073709551615\n"  # simulate()'s limit event
        + EXIT_TAIL
    )
    trace = import_trace(write(tmp_path, text))
    assert trace.exit_events == [("Event_95", 20)]
    assert trace.rules["exit_event"] == 1 and trace.rules["exit_unreached"] == 1
    assert trace.end_tick == 20 and trace.rules["last_tick"] == 0
    # every executed line but the exit event's: the events gem5 ran at its tick are replayed
    assert served(trace) == [(20, "b.e"), (20, "a.e")] or served(trace) == [(20, "a.e"), (20, "b.e")]
    assert trace.events == 2
    assert all(trace.names[trace.inst_name[inst]] not in ("Event_94", "Event_95") for inst in trace.op_inst)


def test_a_last_event_with_a_name_of_its_own_is_not_an_exit_event(tmp_path: Path, import_trace: Importer) -> None:
    text = "      0: a.e: generic 1 scheduled @ 20\n     20: a.e: generic 1 executed @ 20\n"
    trace = import_trace(write(tmp_path, text))
    assert trace.exit_events == [] and trace.events == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("      0: a.e: generic 1 scheduled @ 5\n      5: a.e: generic 1 executed @ 5\n"
         "      5: b.e: generic 2 scheduled @ 3\n",
         r"trace.txt:3: b.e scheduled @ 3 at tick 5: a schedule into the past \(gem5 asserts when >= curTick\)"),
        ("0x10,a.e,0,5\n0x10,a.e,0x20,b.e,5,4\n",
         r"trace.txt:2: b.e inserted @ 4 at tick 5: a schedule into the past"),
    ],
)  # fmt: skip
def test_a_schedule_into_the_past_is_refused(tmp_path: Path, text: str, message: str, import_trace: Importer) -> None:
    with pytest.raises(TraceError, match=message):
        import_trace(write(tmp_path, text))


RUBY = (
    "      0: Consumer Event.wrapped_function_event: EventFunctionWrapped 328 scheduled @ 500\n"
    "      0: Consumer Event.wrapped_function_event: EventFunctionWrapped 329 scheduled @ 500\n"
    "      0: system.ruby.network.routers01.wrapped_function_event: EventFunctionWrapped 7 scheduled @ 500\n"
    "    500: Consumer Event.wrapped_function_event: EventFunctionWrapped 329 executed @ 500\n"
    "    500: Consumer Event.wrapped_function_event: EventFunctionWrapped 328 executed @ 500\n"
    "    500: system.ruby.network.routers01.wrapped_function_event: EventFunctionWrapped 7 executed @ 500\n"
)


def test_an_event_without_its_simobject_is_a_component_per_object(tmp_path: Path, import_trace: Importer) -> None:
    trace = import_trace(write(tmp_path, RUBY))
    assert sorted(trace.components) == ["Consumer Event#328", "Consumer Event#329", "system.ruby.network.routers01"]
    assert "Consumer Event.wrapped_function_event#328" in trace.names
    assert trace.component_rules == {"object": 2, "simobject": 1}


def test_a_mapping_file_may_map_instance_numbers(tmp_path: Path, import_trace: Importer) -> None:
    mapping = write(tmp_path, "^Consumer Event.*#32[89]$ -> system.ruby.network.routers01\n", "map.txt")
    trace = import_trace(write(tmp_path, RUBY), components=mapping)
    assert trace.components == ["system.ruby.network.routers01"]
    assert trace.component_rules == {"mapping": 2, "simobject": 1}


def test_an_occurrence_that_moves_an_object_run_earlier_in_its_tick_gets_a_later_level(
    tmp_path: Path, import_trace: Importer
) -> None:
    # b.e was scheduled first, a.e last: gem5's LIFO runs a.e, then b.e at one level; b.e then schedules
    # a.e again.  Canonical order (by source) may run b.e first, where a.e is still pending: the importer
    # gives b.e a level of its own, so every order mode replays it.
    text = (
        "      0: b.e: generic 2 scheduled @ 10\n"
        "      0: a.e: generic 1 scheduled @ 10\n"
        "     10: a.e: generic 1 executed @ 10\n"
        "     10: b.e: generic 2 executed @ 10\n"
        "     10: a.e: generic 1 scheduled @ 20\n"
        "     20: a.e: generic 1 executed @ 20\n"
    )
    trace = import_trace(write(tmp_path, text))
    levels = [trace.inst_level[trace.occ_inst[k]] for k in trace.served()]
    assert levels[0] < levels[1]


def test_an_instance_moved_away_from_its_tick_gets_a_level_above_its_mover(import_trace, tmp_path: Path) -> None:
    # x.e and m.e are both due at 10; gem5 ran m.e first (LIFO: inserted later), and m.e moved x.e to 20.
    # At one level canonical order could run x.e at 10 first, where m.e then reschedules an event that is
    # no longer scheduled: x.e's level is above m.e's, so every order mode runs m.e first.
    text = (
        "      0: x.e: generic 1 scheduled @ 10\n"
        "      0: m.e: generic 2 scheduled @ 10\n"
        "     10: m.e: generic 2 executed @ 10\n"
        "     10: x.e: generic 1 rescheduled @ 20\n"
        "     20: x.e: generic 1 executed @ 20\n"
    )
    trace = import_trace(write(tmp_path, text))
    level = {
        trace.names[trace.inst_name[trace.occ_inst[k]]]: trace.inst_level[trace.occ_inst[k]] for k in trace.served()
    }
    assert level["x.e"] > level["m.e"]
