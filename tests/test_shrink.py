"""Failures explained: ``tickpar check --explain``, the cell JSON's anatomy and promise, ``tickpar shrink``."""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

import pytest

from tickpar.cli import main
from tickpar.pipeline.shrink import command, shrink
from tickpar.plugins import TRAITS
from tickpar.plugins.registry import get_registry
from tickpar.runner import check_cell, explain, resolve_cell
from tickpar.verify.anatomy import STEP_KEYS, from_record

SPLIT_SMALL = ["-w", "multicore", "-p", "cores=2", "-p", "requests_per_core=30", "-s", "split", "-n", "2"]


def test_list_json_shows_traits(capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar list --json`: every workload's traits at its defaults, and what each trait means."""
    assert main(["list", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    for name, entry in info["workloads"].items():
        assert all(TRAITS[trait] == meaning for trait, meaning in entry["traits"].items()), name
    assert "stored_ticks" in info["workloads"]["multicore"]["traits"]
    assert "stored_ticks" not in info["workloads"]["phold"]["traits"]


def test_check_explain_prints_and_records_the_anatomy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`check --explain`: the steps after the verdict; the JSON holds them, and the promise with its traits."""
    out_path = tmp_path / "cell.json"
    code = main(["check", "-w", "multicore", "-s", "split", "-n", "2", "--explain", "--out", str(out_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "verdict: causality" in out and "anatomy:" in out
    assert "stopped after" in out and " 0 events" not in out
    data = json.loads(out_path.read_text())
    steps = data["anatomy"]
    assert steps and all(tuple(s) == STEP_KEYS for s in steps)
    assert steps[-1]["event"] == data["failure"]["event"]
    assert data["promise"]["verdict"] == "causality"
    assert set(data["promise"]["traits"]) == {"stored_ticks", "long_run"}
    assert data["events"] > 0


def test_exact_cell_has_no_anatomy(tmp_path: Path) -> None:
    """An exact verdict has nothing to explain; its promise comes from the contract, not from a trait."""
    out_path = tmp_path / "cell.json"
    assert main(["check", "-w", "phold", "-p", "end_tick=2000", "-s", "split", "--out", str(out_path)]) == 0
    data = json.loads(out_path.read_text())
    assert data["anatomy"] == []
    assert data["promise"] == {"verdict": "exact", "traits": [], "because": data["promise"]["because"]}


def test_record_alone_explains_other_strategies() -> None:
    """Without a replay, the record speaks: tick-barrier's name-lock race names the component it hit."""
    cell = resolve_cell("multicore", {"requests_per_core": 300}, "tick-barrier", {"lock_key": "name"}, 2, seed=1)
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "race"
    steps = explain(cell, verdict, outcome.record)
    assert steps == from_record(verdict, outcome.record)
    assert outcome.record.races[0]["component"] in steps[0]["note"]


def test_shrink_keeps_the_verdict_and_shrinks() -> None:
    """A shrunk cell fails with the same verdict kind, is no bigger, and its command reproduces it."""
    cell = resolve_cell("multicore", {"cores": 2, "requests_per_core": 30}, "split", {}, 2, seed=1)
    original, _ = check_cell(cell)
    assert original.kind != "exact"
    result = shrink(cell, budget_s=4.0)
    assert result.verdict.kind == original.kind
    assert result.size <= result.size_before
    again, _ = check_cell(result.cell)
    assert again.kind == original.kind
    assert command(result.cell).startswith("tickpar check -w multicore")
    defaults = get_registry().workload("multicore").params
    for flag in shlex.split(command(result.cell)):
        if "=" in flag and flag.split("=")[0] in defaults:
            key, value = flag.split("=", 1)
            assert value != str(defaults[key].default).lower()


def test_shrink_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar shrink` prints a runnable `tickpar check` command, which gets the same verdict kind."""
    assert main(["shrink", *SPLIT_SMALL, "--budget", "3"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("tickpar check "))
    kind = next(ln for ln in out.splitlines() if ln.startswith("verdict: ")).split()[1].rstrip(":")
    assert main(shlex.split(line)[1:]) == 1
    assert f"verdict: {kind}" in capsys.readouterr().out


def test_shrink_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    """An exact cell, a bad budget, a --timeout: one line, exit 2."""
    assert main(["shrink", "-w", "phold", "-p", "end_tick=500", "-s", "sequential"]) == 2
    assert "nothing to shrink" in capsys.readouterr().err
    assert main(["shrink", *SPLIT_SMALL, "--budget", "0"]) == 2
    assert "--budget" in capsys.readouterr().err
    assert main(["shrink", *SPLIT_SMALL, "--timeout", "5"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_summary_row_names_the_trait_behind_each_promise() -> None:
    """The aggregate's promise_trait: the traits a check record's promise rests on, or the contract."""
    from tickpar.pipeline.aggregate import cell_row

    entry = {"workload": "multicore", "strategy": "split", "expected_verdict": "causality"}
    promise = {"verdict": "causality", "traits": ["stored_ticks", "long_run"]}
    check = {"verdict": {"kind": "causality"}, "promise": promise}
    assert cell_row(entry, check, None)["promise_trait"] == "stored_ticks+long_run"
    exact = {"verdict": {"kind": "exact"}, "promise": {"verdict": "exact", "traits": []}}
    assert cell_row({**entry, "expected_verdict": "exact"}, exact, None)["promise_trait"] == "contract"
    assert cell_row({**entry, "expected_verdict": None}, exact, None)["promise_trait"] is None


def test_failure_page_has_the_shrunk_cell_anatomy_timeline_and_rates(tmp_path: Path) -> None:
    """The report's failure page: shrunk command, the anatomy table, the timeline and split's measured rates."""
    from tickpar.report.failures import render

    params = {"cores": 1, "requests_per_core": 20}
    tiny = {"workload": "multicore", "params": params, "options": {"lock_key": "component"}}
    rates = {"workload": "multicore", "params": {"cores": 1, "requests_per_core": 10}, "preempt": [0.5, 0.0],
             "interleave_seeds": 2, "threads": {"params": {"work_us": 5.0}, "runs": 1}}  # fmt: skip
    (page,) = render({"budget_s": 1.0, "cells": {"split": tiny}, "rates": rates}, tmp_path)
    text = page.read_text()
    assert "tickpar check -w multicore" in text and "<svg" in text
    assert "preempt=0.5" in text and "real threads" in text
    data = json.loads((tmp_path / "split.json").read_text())
    assert html.escape(data["anatomy"][-1]["note"]) in text
    rows = json.loads((tmp_path / "split_rates.json").read_text())["rows"]
    assert len(rows) == 2 * 2 + 1


def test_partitioned_anatomy_names_the_lp_and_the_window() -> None:
    """conservative under gem5 order (not its promise): the divergence's LP and lookahead window."""
    cell = resolve_cell("phold", {"granularity": 100}, "conservative", {}, 2, seed=1, order="gem5")
    verdict, outcome = check_cell(cell)
    assert verdict.kind == "diverged"
    (step,) = explain(cell, verdict, outcome.record)
    assert step["worker"].startswith("LP ") and isinstance(step["step"], int)
    lookahead = 10  # phold's default: every link's latency
    assert step["step"] * lookahead <= step["when"] < (step["step"] + 1) * lookahead
    assert verdict.divergence["component"] == step["event"]


def test_failure_pages_go_into_the_pdf(tmp_path: Path) -> None:
    """tickpar.report's failures page: per written page a text page and a timeline, then the rates."""
    from tickpar.report.failures import pdf_pages

    assert pdf_pages(None, tmp_path / "none") == []
    steps = [{"worker": 0, "step": 1, "event": "e", "when": 5, "cur_tick": 7, "note": "schedule fails"}]
    cell = {"strategy": "split"}
    data = {"cell": cell, "verdict": {"kind": "causality", "reason": "r"}, "tries": 1, "elapsed_s": 0.1,
            "size_before": {"components": 2, "events": 9}, "size": {"components": 1, "events": 3},
            "command": "tickpar check -w x", "anatomy": steps}  # fmt: skip
    (tmp_path / "split.json").write_text(json.dumps(data))
    (tmp_path / "split_rates.json").write_text(json.dumps({"rows": [{"executor": "threads", "preempt": None,
                                                                     "run": 0, "verdict": "race"}]}))  # fmt: skip
    figs = pdf_pages(None, tmp_path)
    assert len(figs) == 3
