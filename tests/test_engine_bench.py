"""tickpar.report.engine_bench: the engine benchmark's record on the environment page and its failures; the project's
own speed goals, judged by bench/goals.py and never on a report page."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from tickpar.report import engine_bench, environment
from tickpar.report import render as report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import goals  # bench/goals.py: a script directory, not a package


def _ratio(mid: float, lo: float, hi: float) -> dict[str, float]:
    return {"median": mid, "lo": lo, "hi": hi}


def _record(**changes: Any) -> dict[str, Any]:
    """A small record as bench/engine.py writes it: pure tickpar meets its goal, compiled is mixed."""
    impls = {
        "tickpar_sequential": {
            "events": 100, "kernel": "pure", "library": "tickpar 0.2.0", "events_per_s": _ratio(230e3, 220e3, 240e3),
            "ratios": {"simpy_callbacks": _ratio(1.15, 1.1, 1.2), "heapq_bare": _ratio(0.45, 0.4, 0.5)},
        },
        "tickpar_compiled": {
            "events": 100, "kernel": "compiled", "library": "tickpar 0.2.0",
            "events_per_s": _ratio(300e3, 290e3, 310e3),
            "ratios": {"simpy_callbacks": _ratio(1.4, 1.2, 1.6), "heapq_bare": _ratio(0.35, 0.3, 0.4)},
        },
        "simpy_callbacks": {
            "events": 100, "kernel": None, "library": "simpy 4.1.2", "events_per_s": _ratio(200e3, 190e3, 210e3),
            "ratios": {"simpy_callbacks": _ratio(1.0, 1.0, 1.0), "heapq_bare": _ratio(0.4, 0.38, 0.42)},
        },
        "heapq_bare": {
            "events": 100, "kernel": None, "library": None, "events_per_s": _ratio(500e3, 480e3, 520e3),
            "ratios": {"simpy_callbacks": _ratio(2.5, 2.4, 2.6), "heapq_bare": _ratio(1.0, 1.0, 1.0)},
        },
    }  # fmt: skip
    record = {
        "kind": engine_bench.KIND, "format": engine_bench.FORMAT, "status": "ok", "error": None, "rounds": 5,
        "reference": "simpy_callbacks", "model": {"lps": 4, "end_tick": 300, "seed": 1, "events": 100},
        "code_warmup": "10 tiny runs", "implementations": impls,
        "skipped": {"salabim": "salabim does not import (ImportError: no salabim)"}, "failed": {},
        "environment": {"python": "3.11.7", "implementation": "CPython"},
    }  # fmt: skip
    record.update(changes)
    return record


def _texts(figs: list[plt.Figure]) -> str:
    """Every string drawn on the figures: free text and table cells."""
    out = []
    for fig in figs:
        out += [t.get_text() for t in fig.texts]
        for ax in fig.axes:
            for table in ax.tables:
                out += [cell.get_text().get_text() for cell in table.get_celld().values()]
    return "\n".join(out)


def _page(record: dict[str, Any] | None, rows: int = 3) -> str:
    env = [(f"key{i}", f"value{i}") for i in range(rows)]
    figs = environment.pdf_pages(env, record)
    try:
        return _texts(figs)
    finally:
        for fig in figs:
            plt.close(fig)


def test_goals_are_judged_from_the_intervals() -> None:
    """met: the whole interval at or above the goal; not met: all below; undecided: it spans the goal."""
    verdicts = {r.goal: r.verdict for r in goals.judge(_record())}
    pure, compiled_simpy, compiled_heapq = goals.GOALS
    assert (pure.kernel, pure.peer, pure.at_least) == ("pure", "simpy_callbacks", 1.0)
    assert verdicts == {pure: "met", compiled_simpy: "undecided", compiled_heapq: "not met"}
    slower = _record()
    slower["implementations"]["tickpar_sequential"]["ratios"]["simpy_callbacks"] = _ratio(0.9, 0.85, 0.95)
    assert goals.judge(slower)[0].verdict == "not met"


def test_a_goal_without_its_kernel_or_peer_is_not_judged() -> None:
    record = _record(skipped={"tickpar_compiled": "no compiled kernel (make test-compiled)"})
    del record["implementations"]["tickpar_compiled"]
    del record["implementations"]["heapq_bare"]
    for entry in record["implementations"].values():
        del entry["ratios"]["heapq_bare"]
    results = goals.judge(record)
    assert [r.verdict for r in results] == ["met", "not judged", "not judged"]
    assert "tickpar_compiled: no compiled kernel" in results[1].line()
    # an in-process tickpar on a compiled kernel stands for the compiled build
    record["implementations"]["tickpar_sequential"]["kernel"] = "compiled"
    results = goals.judge(record)
    assert results[0].verdict == "not judged" and results[1].impl == "tickpar_sequential"


def test_environment_page_draws_the_table_and_no_goals() -> None:
    """The report shows the benchmark's table with its ratios; it judges none of the project's own goals."""
    text = _page(_record())
    for expected in (
        "Environment", "key2", "value2", "Engine benchmark", "implementation", "tickpar_sequential",
        "230,000 [220,000, 240,000]", "1.150 [1.100, 1.200]", "compiled", "skipped: salabim: salabim does not import",
    ):  # fmt: skip
        assert expected in text, expected
    assert "goal" not in text.lower()
    assert "goal" not in engine_bench.engine_html(_record()).lower()


def test_bench_goals_judge_the_record_and_print_the_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = goals.goal_lines(_record())
    assert lines[:3] == [
        "goal pure tickpar >= 1x simpy_callbacks: met (tickpar_sequential: 1.150 [1.100, 1.200])",
        "goal compiled tickpar >= 1.5x simpy_callbacks: undecided (tickpar_compiled: 1.400 [1.200, 1.600])",
        "goal compiled tickpar >= 0.5x heapq_bare: not met (tickpar_compiled: 0.350 [0.300, 0.400])",
    ]
    path = tmp_path / "engine.json"
    path.write_text(json.dumps(_record()))
    assert goals.main([str(path)]) == 0 and "goal pure tickpar >= 1x simpy_callbacks: met" in capsys.readouterr().out
    assert goals.main([str(tmp_path / "none.json")]) == 2


def test_environment_page_says_what_failed() -> None:
    failed = engine_bench.failure_record("bench/engine.py exited 1 without a record: ImportError: no simpy", 1)
    text = _page(failed)
    assert "Engine benchmark failed: bench/engine.py exited 1 without a record: ImportError: no simpy" in text
    assert "tickpar_sequential" not in text and "Environment" in text
    partial = _record(status="partial", failed={"desimpy": "round 2: RuntimeError: boom"})
    assert "failed: desimpy: round 2: RuntimeError: boom" in _page(partial)
    assert "not run" in _page(None)


def test_a_long_environment_table_moves_the_engine_benchmark_to_a_page_of_its_own() -> None:
    figs = environment.pdf_pages([("k", "v")] * 50, _record())
    assert len(figs) == 2 and "tickpar_sequential" in _texts(figs[1:]) and "tickpar_sequential" not in _texts(figs[:1])
    for fig in figs:
        plt.close(fig)


def test_render_puts_the_record_on_the_environment_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """render(engine=...) writes the section into environment.html and the PDF; a broken file is a failure line."""
    summary = tmp_path / "summary.csv"
    row = {
        "workload": "phold", "shape": "s", "family": "s", "strategy": "sequential", "variant": "default",
        "label": "sequential", "workers": 1, "seed": 1, "order": "gem5", "work": "none", "verdict": "exact",
        "timing_status": "ok", "speedup": 1.0, "speedup_lo": 1.0, "speedup_hi": 1.0, "efficiency": 1.0,
        "us_per_event": 10.0, "overhead_us_per_event": 0.0, "param_work_us": 0.0, "timed_exact": True,
        "contended": False, "cpu_model": "cpu", "python": "3.11.7",
    }  # fmt: skip
    pd.DataFrame([row]).to_csv(summary, index=False)
    monkeypatch.setattr(report, "PAGES", [p for p in report.PAGES if p.name == "environment"])
    record_path = tmp_path / "engine.json"
    for content, expected in (
        (json.dumps(_record()), "<td>1.150 [1.100, 1.200]</td>"),
        ("{not json", "Engine benchmark failed: "),
    ):
        record_path.write_text(content)
        outputs: dict[str, str | Path] = {"findings": tmp_path / "f.html", "environment": tmp_path / "e.html",
                                          "pdf": tmp_path / "r.pdf"}  # fmt: skip
        assert report.render(summary, outputs, engine=record_path) == ["environment"]
        page = Path(outputs["environment"]).read_text()
        assert expected in page and "<h2>Environment</h2>" in page
    assert "<td>tickpar_sequential</td>" not in page
    report.render(summary, outputs, engine=None)
    assert "Engine benchmark: not run" in Path(outputs["environment"]).read_text()


def test_the_pipeline_runner_records_a_failure_and_still_writes(tmp_path: Path) -> None:
    """run(): a script that dies without a record gives a failed record naming why, with the log's tail."""
    script = tmp_path / "engine.py"
    script.write_text("import sys\nprint('starting')\nsys.exit('engine.py: simpy exploded')\n")
    out, log = tmp_path / "out" / "engine.json", tmp_path / "engine.log"
    record = engine_bench.run(script, out, {"rounds": 2, "lps": 4}, log)
    assert json.loads(out.read_text()) == record
    assert record["status"] == "failed" and record["pipeline"]["rc"] == 1
    assert record["error"] == "bench/engine.py exited 1 without a record: engine.py: simpy exploded"
    assert "starting" in record["log_tail"] and "--interleave 2" in log.read_text()
    assert engine_bench.notes(record) == [f"failed: {record['error']}"]

    writes = tmp_path / "writes.py"  # a run that writes its record: kept as it is, plus the pipeline's fields
    writes.write_text(
        f"import json, sys\nout = sys.argv[sys.argv.index('--json') + 1]\njson.dump({_record()!r}, open(out, 'w'))\n"
    )
    record = engine_bench.run(writes, out, {"rounds": 2}, log)
    assert record["status"] == "ok" and record["rounds"] == 5 and record["pipeline"]["rc"] == 0
    assert record["pipeline"]["argv"][0] == str(writes) and sys.executable


def test_bench_args_follow_the_config_section() -> None:
    args = engine_bench.bench_args({"rounds": 9, "impl": "all", "end_tick": 3000, "lps": 64, "timeout_s": 300})
    assert args == ["--interleave", "9", "--impl", "all", "--lps", "64", "--end-tick", "3000"]
