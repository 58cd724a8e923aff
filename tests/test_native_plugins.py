"""Native strategy plugins (issue #49): the guide's example built with the documented command, listed, checked
and swept; the planted bug caught; a plugin's segfault, hang, compile error and bad declarations each a cell's
verdict or one line; a stale library rebuilt, never loaded.

Every plugin is copied into a temporary folder and built there, so nothing is written in the checkout; each is
compiled once per module (a few seconds each with the engine's flags), by the fixture ``built``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

tn = pytest.importorskip("tickpar_native", reason="the native engine is not built: pip install ./native")

import tickpar.plugins.registry  # noqa: E402  (after the skip: these need nothing native, but are only used here)
from tickpar.cli import main  # noqa: E402
from tickpar.native import NATIVE_STRATEGIES  # noqa: E402
from tickpar.native.plugins import BUILD_FOLDER, build, library_for, library_key  # noqa: E402
from tickpar.pipeline.sweep import SweepError, load_sweep  # noqa: E402
from tickpar.plugins.registry import REPO_ROOT, PluginError, get_registry  # noqa: E402

EXAMPLES = REPO_ROOT / "examples" / "native-strategies"
GUIDE = REPO_ROOT / "docs" / "how-to" / "write-a-native-strategy.md"
TICKPAR = [sys.executable, "-m", "tickpar"]

# A plugin that fails as its option says: `fault=segv` dereferences a null pointer (the cell's process dies of
# SIGSEGV), `fault=hang` never returns (it sleeps, so the hung child costs no core while the test waits),
# `fault=throw` throws a C++ exception (the engine catches it).  One file for all three: one compile.  It promises
# nothing (a crash is never promised), so `tickpar check` exits 1 and the test sees the verdict, not a broken promise.
CRASHER = """\
#include "tickpar/strategy.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

static const char* const kDeclaration = R"tickpar({
  "name": "test-crasher", "summary": "test plugin: segfaults, hangs or throws",
  "options": {"fault": {"type": "str", "default": "segv", "choices": ["segv", "hang", "throw"],
                        "help": "how it fails"}},
  "promise": [{"verdict": null, "because": "a test plugin that fails"}]
})tickpar";

void run_crasher(tp::Run& r, tp::Result&, tp::Crew&) {
  if (tp::option_text(r.o, "fault") == "hang")
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (tp::option_text(r.o, "fault") == "throw") throw std::runtime_error("a planted exception");
  volatile int* nowhere = nullptr;
  *nowhere = 1;
}

TICKPAR_NATIVE_STRATEGY(kDeclaration, run_crasher)
"""

# Line 7 does not compile.
NO_BUILD = """\
#include "tickpar/strategy.hpp"
static const char* const kDeclaration = R"tickpar({
  "name": "test-nobuild", "summary": "test plugin: does not compile",
  "promise": [{"verdict": null}]
})tickpar";
void run_it(tp::Run& r, tp::Result&, tp::Crew&) {
  r.no_such_member = 1;
}
TICKPAR_NATIVE_STRATEGY(kDeclaration, run_it)
"""

# Declarations that cannot be used: file name -> (source, what its one line must say).
BAD_DECLARATIONS = {
    "nodecl.cpp": ('#include "tickpar/strategy.hpp"\n', 'no declaration R"tickpar({...})tickpar"'),
    "badjson.cpp": (
        'static const char* const d = R"tickpar({\n  "name": "test-badjson",\n  "summary": "x",\n'
        '  "promise": [{"verdict": "exact",}]\n})tickpar";\n',
        "badjson.cpp:4: the declaration is not JSON",
    ),
    "badtype.cpp": (
        'static const char* const d = R"tickpar({"name": "test-badtype", "summary": "x",\n'
        '  "options": {"depth": {"type": "integer", "default": 1, "help": "h"}},\n'
        '  "promise": [{"verdict": "exact"}]})tickpar";\n',
        "option 'depth': type 'integer' is not allowed: bool, int, float, str",
    ),
    "badtrait.cpp": (
        'static const char* const d = R"tickpar({"name": "test-badtrait", "summary": "x",\n'
        '  "promise": [{"if": {"traits_absent": ["shared_memory"]}, "verdict": "exact"}]})tickpar";\n',
        "promise rule 1: traits_absent 'shared_memory' is not a trait: allowed are stored_ticks",
    ),
}


@dataclass
class Built:
    """The module's plugin folders, each plugin built in place by `tickpar build-native FOLDER`."""

    example: Path  # the guide's example, bin_parallel.cpp
    bugs: Path  # the planted bug, bin_reversed.cpp
    crashers: Path  # crasher.cpp
    build_output: dict[str, str]  # folder name -> what `tickpar build-native` printed

    @property
    def plugin_path(self) -> str:
        return os.pathsep.join(str(p) for p in (self.example, self.bugs, self.crashers))


def _guide_commands() -> list[str]:
    """The `tickpar ...` command lines of the guide's shell blocks."""
    commands: list[str] = []
    for block in re.findall(r"```(?:sh|console|bash)\n(.*?)```", GUIDE.read_text(), re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(("tickpar ", "TICKPAR_PLUGINS=")):
                commands.append(line)
    return commands


def _guide_example() -> Path:
    """The file the guide shows the example from (its literalinclude directives: one source of the code)."""
    files = {m for m in re.findall(r"```\{literalinclude\} (\S+)", GUIDE.read_text())}
    assert len(files) == 1, files
    return (GUIDE.parent / files.pop()).resolve()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("native-plugins")
    folders = {name: root / name for name in ("example", "bugs", "crashers")}
    for folder in folders.values():
        folder.mkdir()
    shutil.copy(_guide_example(), folders["example"])
    shutil.copy(EXAMPLES / "planted_bugs" / "bin_reversed.cpp", folders["bugs"])
    (folders["crashers"] / "crasher.cpp").write_text(CRASHER)
    # The guide's command, one process per folder: three compiles of a few seconds each, on the two cores at once.
    env = {k: v for k, v in os.environ.items() if k not in ("TICKPAR_PLUGINS", "TICKPAR_BLOCKED")}
    procs = {
        name: subprocess.Popen(
            [*TICKPAR, "build-native", str(folder)], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for name, folder in folders.items()
    }
    output = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        output[name] = out
    return Built(folders["example"], folders["bugs"], folders["crashers"], output)


@pytest.fixture
def plugins(built: Built, plugin_env: pytest.MonkeyPatch) -> Built:
    """The built plugins on TICKPAR_PLUGINS (child processes inherit it), the registry rescanned."""
    plugin_env.setenv("TICKPAR_PLUGINS", built.plugin_path)
    get_registry(refresh=True)
    return built


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _errors(stderr: str) -> list[str]:
    """The error lines (a command also warns, one line each, about every broken plugin it skipped)."""
    return [line for line in stderr.splitlines() if line.startswith("tickpar: error:")]


# ---------------------------------------------------------------- the guide's example


def test_the_guide_documents_the_commands_this_module_runs() -> None:
    """The guide's shell blocks hold the build, list and check commands that the tests below run (so a reader's
    copy of them is what is tested), and its code excerpts' anchors each match the example once."""
    commands = _guide_commands()
    for wanted in (
        "tickpar build-native examples/native-strategies",
        "tickpar list",
        "tickpar check --engine native -s bin-parallel -w phold -n 2",
        "tickpar check --engine native -s bin-parallel -w multicore -n 2",
        "tickpar check --engine native -s bin-reversed -w multicore -n 2",
        "tickpar check --engine native -s bin-parallel -w phold -n 2 --timeout 60",
    ):
        assert any(c.endswith(wanted) for c in commands), wanted
    source = _guide_example().read_text()
    assert _guide_example() == (EXAMPLES / "bin_parallel.cpp").resolve()
    anchors = re.findall(r"^:(?:start-at|start-after|end-before|end-at): (.+)$", GUIDE.read_text(), re.M)
    assert len(anchors) >= 6
    for anchor in anchors:
        assert source.count(anchor) == 1, f"the guide's anchor {anchor!r} is not exactly once in the example"


def test_the_example_builds_lists_and_keeps_its_promise(plugins: Built, capsys: pytest.CaptureFixture[str]) -> None:
    """`tickpar build-native FOLDER` built bin-parallel beside its source; `tickpar list` shows it (engines:
    native); `tickpar check --engine native` is exact at 2 workers on phold (promise exact, kept) and keeps its
    promise on multicore (exact or race), loading the library built above (no rebuild)."""
    out = plugins.build_output["example"]
    assert re.fullmatch(rf"bin-parallel: \S+bin_parallel\.cpp -> \S+/{BUILD_FOLDER}/bin_parallel\.[0-9a-f]{{16}}\.so\n",
                        out), out  # fmt: skip
    assert len(list((plugins.example / BUILD_FOLDER).glob("bin_parallel.*.so"))) == 1

    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    entry = out[out.index("  bin-parallel:") :]
    assert entry.splitlines()[1].strip() == "engines: native"
    code, out, _ = run_cli(capsys, "list", "--json")
    info = json.loads(out)["strategies"]["bin-parallel"]
    assert info["engines"] == ["native"] and set(info["options"]) == {"min_parallel", "checks"}

    code, out, err = run_cli(capsys, "check", "--engine", "native", "-s", "bin-parallel", "-w", "phold", "-n", "2")
    assert code == 0, err
    assert "verdict: exact" in out and re.search(r"^promise: exact \(.*\): kept$", out, re.M), out
    assert "building" not in err  # the documented build is the one that runs
    code, out, err = run_cli(capsys, "check", "--engine", "native", "-s", "bin-parallel", "-w", "multicore", "-n", "2")
    assert code in (0, 1), err
    assert re.search(r"^promise: one of exact, race .*: kept$", out, re.M), out


def test_only_the_example_is_listed_from_the_example_folder(plugin_env: pytest.MonkeyPatch) -> None:
    """TICKPAR_PLUGINS=examples/native-strategies lists bin-parallel and not the planted bug (planted_bugs/ is
    not scanned), and reading the declarations builds nothing."""
    plugin_env.setenv("TICKPAR_PLUGINS", str(EXAMPLES))
    registry = get_registry(refresh=True)
    assert "bin-parallel" in registry.strategies and "bin-reversed" not in registry.strategies
    assert registry.broken == {}


def test_the_planted_bug_is_the_example_with_one_change() -> None:
    """bin_reversed.cpp is a copy of bin_parallel.cpp (so that a reader sees the whole plugin), kept in step by this
    test: beyond its header comment, name and summary, the one line that differs is the commit's loop."""

    def body(path: Path) -> list[str]:
        lines = path.read_text().splitlines()
        start = lines.index('#include "tickpar/strategy.hpp"')
        return [line for line in lines[start:] if not line.startswith(('  "name": ', '  "summary": '))]

    example, planted = body(EXAMPLES / "bin_parallel.cpp"), body(EXAMPLES / "planted_bugs" / "bin_reversed.cpp")
    assert len(example) == len(planted)
    changed = [(a, b) for a, b in zip(example, planted, strict=True) if a != b]
    assert changed == [
        (
            "  for (size_t i = 0; i < members.size(); ++i) {",
            "  for (size_t i = members.size(); i-- > 0;) {  // THE PLANTED BUG: bin-parallel walks i = 0, 1, ... "
            "(the bin's order)",
        )
    ]


def test_the_planted_bug_breaks_its_promise(plugins: Built, capsys: pytest.CaptureFixture[str]) -> None:
    """bin-reversed commits a bin's operations last member first: on multicore (gem5 order) the crossbar sees two
    requests of one tick the other way round, `diverged` against bin-parallel's promise: BROKEN, exit status 3."""
    code, out, _ = run_cli(capsys, "check", "--engine", "native", "-s", "bin-reversed", "-w", "multicore", "-n", "2")
    assert code == 3, out
    assert "verdict: diverged" in out and re.search(r"^promise: one of exact, race .*: BROKEN$", out, re.M), out


# ---------------------------------------------------------------- crashes, hangs, one-line errors


def test_a_segfault_is_a_crash_and_a_hang_a_timeout(plugins: Built, capsys: pytest.CaptureFixture[str]) -> None:
    """With --timeout the cell runs in a child process: a null dereference there is verdict crash (naming the
    signal) and the caller goes on; a run that never returns is killed at the limit, verdict timeout.  A C++
    exception needs no child: the engine turns it into verdict crash with its message."""
    code, out, err = run_cli(
        capsys, "check", "--engine", "native", "-s", "test-crasher", "-w", "phold", "-n", "2", "--timeout", "60"
    )
    assert code == 1, err
    assert re.search(r"^verdict: crash: worker process exited with status -11 \(SIGSEGV\)$", out, re.M), out
    code, out, err = run_cli(
        capsys, "check", "--engine", "native", "-s", "test-crasher", "-o", "fault=hang", "-w", "phold", "--timeout", "2"
    )
    assert code == 1, err
    assert "verdict: timeout: cell exceeded its 2 s limit" in out
    code, out, err = run_cli(
        capsys, "check", "--engine", "native", "-s", "test-crasher", "-o", "fault=throw", "-w", "phold"
    )
    assert code == 1, err
    assert re.search(r"^verdict: crash: .*the strategy threw: a planted exception", out, re.M), out


def test_a_compile_error_is_one_line_naming_file_and_line(
    plugin_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tickpar build-native` on a source that does not compile: exit 2, one line naming the file, the line and
    the compiler's error, with the full log beside the library; no library is left behind."""
    source = tmp_path / "nobuild.cpp"
    source.write_text(NO_BUILD)
    code, out, err = run_cli(capsys, "build-native", str(source))
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"tickpar: error: native plugin {source}:7: error: ") and "no_such_member" in lines[0]
    assert lines[0].endswith(f"(compiler log: {tmp_path / BUILD_FOLDER / 'nobuild.log'})")
    assert not list((tmp_path / BUILD_FOLDER).glob("*.so"))


def test_bad_declarations_are_listed_broken_and_asked_for_in_one_line(
    plugin_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing declaration, bad JSON, an unknown option type, an unknown trait: each is listed as broken with
    one line naming its file and what is allowed, the others still load, and asking for one is that line."""
    for name, (text, _) in BAD_DECLARATIONS.items():
        (tmp_path / name).write_text(text)
    plugin_env.setenv("TICKPAR_PLUGINS", str(tmp_path))
    get_registry(refresh=True)
    code, out, _ = run_cli(capsys, "list", "--json")
    broken = json.loads(out)["broken"]
    assert set(broken) == {str(tmp_path / name) for name in BAD_DECLARATIONS}
    for name, (_, says) in BAD_DECLARATIONS.items():
        line = broken[str(tmp_path / name)]
        assert line.startswith(f"native plugin {tmp_path / name}") and says in line and "\n" not in line
    # a declaration that names itself: asking for that name is its own line
    code, _, err = run_cli(capsys, "check", "--engine", "native", "-s", "test-badtrait", "-w", "phold")
    assert code == 2 and _errors(err) == [f"tickpar: error: {broken[str(tmp_path / 'badtrait.cpp')]}"]
    # one without a readable name: an unknown strategy, the broken plugins named on the same line
    code, _, err = run_cli(capsys, "check", "--engine", "native", "-s", "test-badjson", "-w", "phold")
    assert code == 2 and len(_errors(err)) == 1 and "badjson.cpp:4" in _errors(err)[0]
    # build-native refuses a bad declaration before compiling
    code, _, err = run_cli(capsys, "build-native", str(tmp_path / "nodecl.cpp"))
    assert code == 2 and len(_errors(err)) == 1 and "no declaration" in err
    assert not (tmp_path / BUILD_FOLDER).exists()


def test_bad_options_and_engines_are_one_line(plugins: Built, capsys: pytest.CaptureFixture[str]) -> None:
    """An option the declaration does not declare, one out of its range, and --engine python: one line each,
    naming the plugin and what is allowed."""
    cell = ["check", "-s", "bin-parallel", "-w", "phold"]
    code, _, err = run_cli(capsys, *cell, "--engine", "native", "-o", "nope=1")
    assert code == 2 and _errors(err) == [
        "tickpar: error: unknown strategy bin-parallel option 'nope': allowed are checks, min_parallel"
    ]
    code, _, err = run_cli(capsys, *cell, "--engine", "native", "--option", "min_parallel=1")
    assert code == 2 and len(_errors(err)) == 1 and "min_parallel" in err and "[2, 1000000]" in err
    code, _, err = run_cli(capsys, *cell, "--engine", "python")
    assert code == 2 and _errors(err) == [
        "tickpar: error: strategy bin-parallel does not run on the python engine: it runs on native (--engine)"
    ]


def test_a_stale_library_is_rebuilt_never_loaded(
    built: Built, plugin_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A library is named for its source and the engine's API: an edited source has another key, so the next run
    builds it (and drops the old one); a library under the right name that declares another strategy is refused."""
    source = tmp_path / "bin_parallel.cpp"
    shutil.copy(built.example / "bin_parallel.cpp", source)
    (tmp_path / BUILD_FOLDER).mkdir()
    stale = tmp_path / BUILD_FOLDER / f"bin_parallel.{library_key(source)}.so"
    shutil.copy(built.example / BUILD_FOLDER / stale.name, stale)  # as `tickpar build-native` left it
    plugin_env.setenv("TICKPAR_PLUGINS", str(tmp_path))

    def edit(old: str, new: str) -> Path:
        source.write_text(source.read_text().replace(old, new))
        get_registry(refresh=True)
        return tmp_path / BUILD_FOLDER / f"bin_parallel.{library_key(source)}.so"

    # Under the edited source's name, another plugin's library: refused with one line saying how to rebuild.  (The
    # engine keeps a library loaded for the process's life, by path: this path is never used again below.)
    planted = edit("bins with fewer events", "bins with fewer than this many events")
    assert planted != stale
    shutil.copy(next((built.crashers / BUILD_FOLDER).glob("crasher.*.so")), planted)
    with pytest.raises(PluginError, match=r"declares another strategy than the source does: rebuild it"):
        library_for(get_registry().strategy("bin-parallel"))

    fresh = edit("run on gem5's loop", "run on gem5's own loop")
    code, _, err = run_cli(capsys, "check", "--engine", "native", "-s", "bin-parallel", "-w", "phold", "-n", "2")
    assert code == 0, err
    assert f"building native strategy bin_parallel.cpp -> {fresh}" in err
    assert sorted((tmp_path / BUILD_FOLDER).glob("*.so")) == [fresh]  # the earlier versions' libraries are gone
    assert build(source) == fresh  # current: not built again


# ---------------------------------------------------------------- the sweep


STEADY = {"baseline_max_spread": 0, "max_round_shift": 0}


def _sweep_config(**strategies: Any) -> dict[str, Any]:
    return {
        "description": "native plugins in a tiny sweep",
        "seeds": [1],
        "orders": ["gem5"],
        "work": ["none"],
        "workers": [1, 2],
        "check_workers": [],
        "timeout_s": 30,
        # one process, no round flagged as contended (as config/test.yaml: the suite runs on busy machines)
        "timing": dict(processes=1, values=5, warmups=1, timeout_s=60, min_cpu_available=0.0, **STEADY),
        "report": {"bootstrap": 200},
        "engine_bench": {"rounds": 2, "lps": 4, "population": 2, "end_tick": 300},
        "workloads": {"phold": {"shapes": {"tiny": {"lps": 4, "population": 2, "end_tick": 500, "work_us": 0.0}}}},
        "strategies": {"sequential": {"engines": ["python", "native"]}, **strategies},
    }


def test_the_guides_sweep_config_expands(plugin_env: pytest.MonkeyPatch) -> None:
    """The guide's config excerpt (its `plugins:` folder, engines and bin-parallel's variants), on a tiny shape,
    gives bin-parallel native cells of both variants, beside native and Python sequential cells (expanding reads
    the declaration only: nothing is built in the checkout)."""
    block = re.search(r"```yaml\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    excerpt = yaml.safe_load(block.group(1))
    plugin_env.setenv("TICKPAR_PLUGINS", "")  # `plugins:` sets it: restored after the test
    plugin_env.chdir(REPO_ROOT)  # `plugins:` is relative to the working directory, as under `make report`
    sweep = load_sweep({**_sweep_config(), **excerpt}, "the guide")
    cells = [c for c in sweep.cells if c.strategy == "bin-parallel"]
    assert {(c.variant, c.engine) for c in cells} == {("default", "native"), ("coarse", "native")}
    assert {c.engine for c in sweep.cells if c.strategy == "sequential"} == {"python", "native"}


def test_a_sweep_runs_a_native_plugin_on_its_own_engine(plugins: Built) -> None:
    """Named in a sweep, a native-only plugin gets native cells only, whatever the sweep's engines (default
    python), with nothing counted as left out; asking for its python cells is one line naming what it runs on."""
    sweep = load_sweep(_sweep_config(**{"bin-parallel": {}}), "test")
    engines = {c.engine for c in sweep.cells if c.strategy == "bin-parallel"}
    assert engines == {"native"} and {c.workers for c in sweep.cells if c.strategy == "bin-parallel"} == {1, 2}
    both = load_sweep({**_sweep_config(**{"bin-parallel": {}}), "engines": ["python", "native"]}, "test")
    assert {c.engine for c in both.cells if c.strategy == "bin-parallel"} == {"native"}
    assert "native engine does not run" not in both.summary()
    with pytest.raises(SweepError) as err:
        load_sweep(_sweep_config(**{"bin-parallel": {"engines": ["python"]}}), "test")
    assert str(err.value) == (
        "strategies.bin-parallel.engines: 'python' is not allowed for bin-parallel: it runs on native"
    )
    with pytest.raises(
        SweepError, match=r"^strategies.bin-parallel.variants.x.nope: .*option 'nope' \(allowed: checks, min_parallel\)"
    ):
        load_sweep(_sweep_config(**{"bin-parallel": {"variants": {"x": {"nope": 1}}}}), "test")


@pytest.mark.slow
@pytest.mark.timeout(600)  # the whole pipeline: about a minute idle on 2 cores
def test_a_tiny_sweep_with_the_example_and_a_segfault(plugins: Built, tmp_path: Path) -> None:
    """Snakemake runs a sweep naming the example and the segfaulting plugin: it completes with the report, the
    example has its row on the answer page (exact), the segfaulting plugin's cells are crash."""
    pytest.importorskip("snakemake")

    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump(_sweep_config(**{"bin-parallel": {}, "test-crasher": {}})))
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "Snakefile"), "--directory", str(tmp_path)]
    res = subprocess.run(
        [*snakemake, "--cores", "2", "--configfile", str(config)], capture_output=True, text=True, timeout=540,
        cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]

    summary = pd.read_csv(tmp_path / "results" / "summary.csv")
    verdicts = summary.groupby("strategy")["verdict"].agg(set).to_dict()
    assert verdicts == {"sequential": {"exact"}, "bin-parallel": {"exact"}, "test-crasher": {"crash"}}
    assert set(summary.loc[summary["strategy"] == "bin-parallel", "engine"]) == {"native"}
    assert (summary.loc[summary["strategy"] == "bin-parallel", "timing_status"] == "ok").all()
    assert not (summary.loc[summary["strategy"] == "test-crasher", "timing_status"] == "ok").any()  # not timed
    answer = pd.read_csv(tmp_path / "results" / "answer.csv")
    row = answer[answer["strategy variant"] == "bin-parallel"]
    assert len(row) == 1 and row["correct?"].iloc[0].startswith("yes")
    assert "bin-parallel" in (tmp_path / "results" / "report" / "answer.html").read_text()
    findings = (tmp_path / "results" / "report" / "findings.html").read_text()
    assert "test-crasher [native]: crash in 2 of 2 cells" in findings
    assert (tmp_path / "results" / "report.pdf").stat().st_size > 10_000


# ---------------------------------------------------------------- engines of the built-ins


def test_the_builtins_native_engines_agree(plugin_env: pytest.MonkeyPatch) -> None:
    """A built-in strategy runs on the native engine (its `engines`) exactly where tickpar's glue and the engine
    module both have it: engines, NATIVE_STRATEGIES and tickpar_native.STRATEGIES name the same strategies."""
    registry = tickpar.plugins.registry.discover()
    builtins = {name for name, cls in registry.strategies.items() if getattr(cls, "native_source", None) is None}
    native = {name for name in builtins if "native" in registry.strategies[name].engines}
    assert native == set(NATIVE_STRATEGIES) == set(tn.STRATEGIES)
    assert all("python" in registry.strategies[name].engines for name in builtins)


def test_a_library_replaced_in_place_is_loaded_afresh(
    built: Built, plugin_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The engine keeps every library it loaded, by path: a file replaced under a path this process loaded before
    (a rebuild in place) is loaded from a private copy, so its own declaration is what is checked and run."""
    source = tmp_path / "bin_parallel.cpp"
    shutil.copy(built.example / "bin_parallel.cpp", source)
    (tmp_path / BUILD_FOLDER).mkdir()
    library = tmp_path / BUILD_FOLDER / f"bin_parallel.{library_key(source)}.so"
    shutil.copy(built.example / BUILD_FOLDER / library.name, library)
    plugin_env.setenv("TICKPAR_PLUGINS", str(tmp_path))
    get_registry(refresh=True)
    assert library_for(get_registry().strategy("bin-parallel")) == library
    library.unlink()
    shutil.copy(next((built.crashers / BUILD_FOLDER).glob("crasher.*.so")), library)  # a new file, same path
    with pytest.raises(PluginError, match=r"declares another strategy than the source does"):
        library_for(get_registry().strategy("bin-parallel"))
