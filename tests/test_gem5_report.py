"""The gem5 trace pages of the report (tickpar.report.traces) and the pipeline's profile job."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
from factories import make_summary, summary_row

from tickpar.gem5.profile import main as profile_main
from tickpar.gem5.profile import profile_workload
from tickpar.report.traces import pdf_pages, profile_table, write_page


def _profiles(folder: Path) -> None:
    folder.mkdir()
    trace = profile_workload("gem5trace", {})  # the bundled example trace
    (folder / "gem5trace.example.profile.json").write_text(json.dumps(trace))
    phold = profile_workload("phold", {"lps": 4, "population": 2, "end_tick": 2000, "granularity": 100})
    (folder / "phold.tiny.profile.json").write_text(json.dumps(phold))


def _write_sweep(path: Path) -> None:
    trace = {"workload": "gem5trace", "shape": "example", "expected_verdict": "exact"}
    native = {**trace, "engine": "native"}
    rows = [
        summary_row("tick-barrier/component", 2, 1.4, **native, loop_speedup=1.4, loop_speedup_lo=1.3,
                    loop_speedup_hi=1.5),
        summary_row("tick-barrier/component", 1, 0.9, **native, loop_speedup=0.9, loop_speedup_lo=0.8,
                    loop_speedup_hi=1.0),
        summary_row("split/name", 2, None, **{**trace, "expected_verdict": "not exact"}, verdict="diverged",
                    timing_status="not timed"),
        summary_row("sequential", 1, 1.0, shape="tiny", expected_verdict="exact", loop_speedup=1.0,
                    loop_speedup_lo=1.0, loop_speedup_hi=1.0),
    ]  # fmt: skip
    make_summary(rows).to_csv(path, index=False)


def _split_check(folder: Path) -> None:
    cell = folder / "split" / "name" / "gem5" / "none" / "default" / "python" / "w2-s1.json"
    cell.parent.mkdir(parents=True)
    record = {
        "strategy": "split",
        "engine": "python",
        "verdict": {"kind": "diverged", "reason": "first divergence: system.cpu0 event #1"},
        "anatomy": [{"step": 1, "worker": 0, "event": "system.cpu0.tickEvent", "note": "pops it: cur_tick := 500"}],
    }
    cell.write_text(json.dumps(record))


def test_trace_page_shows_the_profile_the_verdicts_and_splits_anatomy(tmp_path: Path) -> None:
    _profiles(tmp_path / "profiles")
    _write_sweep(tmp_path / "summary.csv")
    _split_check(tmp_path / "checks")
    paths = write_page(
        "example", tmp_path / "summary.csv", tmp_path / "profiles", tmp_path / "checks", tmp_path / "out"
    )
    data = json.loads(paths["json"].read_text())
    assert list(data["profiles"]) == ["gem5trace.example", "phold.tiny"]  # the trace first
    rows = {(r["strategy"], r["engine"]): r for r in data["strategies"]}
    assert rows[("tick-barrier/component", "native")]["speedup_2w"] == "1.40x [1.30, 1.50]"
    assert rows[("split/name", "python")]["verdicts"] == "w2: diverged"
    assert rows[("tick-barrier/component", "native")]["verdicts"] == "w1: exact; w2: exact"
    steps = data["split"][0]["steps"]
    assert any(line.strip().endswith("pops it: cur_tick := 500") for line in steps)
    assert not any("None" in line for line in steps)  # gem5's names and ticks, never a stray None
    page = paths["html"].read_text()
    assert "lower bound" in page and "system.cpu0.tickEvent" in page
    assert "Event cost:" in page and "Events per component" in page
    busiest = next(iter(data["component_events"].values()))
    assert busiest == max(data["component_events"].values())
    assert data["timeline"]["spans"] and paths["timeline"].stat().st_size > 1000
    assert paths["figure"].stat().st_size > 1000
    table = profile_table(data)
    assert list(table.columns) == ["gem5trace.example", "phold.tiny"]
    assert table.loc["events", "gem5trace.example"] == f"{data['profiles']['gem5trace.example']['events']:,}"
    figs = pdf_pages(outdir=tmp_path / "out")
    assert len(figs) == 3  # the tables, the bounds, the timeline
    for fig in figs:
        plt.close(fig)


def test_a_failing_profile_records_its_error(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert profile_main(["--workload", "gem5trace", "--params", '{"trace": "missing.txt"}', "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert "missing.txt" in data["error"]
