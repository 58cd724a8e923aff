"""Plugin discovery: the repository's plugin files, TICKPAR_PLUGINS, duplicates, broken plugins, TICKPAR_BLOCKED."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import tickpar.plugins.registry
from tickpar.plugins import Strategy, Workload
from tickpar.plugins.registry import REPO_ROOT, PluginError, discover, get_registry

STRATEGY_SRC = '''
from tickpar.kernel.params import Param
from tickpar.plugins import Strategy, StrategyResult


class {cls}(Strategy):
    name = "{name}"
    summary = "a test strategy"
    options = {{"depth": Param(int, 1, "how deep", min=1, max=4)}}
    max_workers = 2

    def run(self, spec, workers, options):
        raise NotImplementedError
'''

WORKLOAD_SRC = '''
from tickpar.plugins import Workload


class {cls}(Workload):
    name = "{name}"
    summary = "a test workload"

    def build(self, model, params):
        model.end_tick = 1
'''


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_repository_plugins_are_found(plugin_env: pytest.MonkeyPatch) -> None:
    """discover() finds the sequential strategy and the PHOLD workload in the repository's folders."""
    registry = discover()
    seq, phold = registry.strategy("sequential"), registry.workload("phold")
    assert issubclass(seq, Strategy) and issubclass(phold, Workload)
    assert registry.sources[("strategy", "sequential")] == str(REPO_ROOT / "strategies" / "sequential.py")
    assert registry.sources[("workload", "phold")] == str(REPO_ROOT / "workloads" / "phold.py")
    described = registry.describe()
    assert described["strategies"]["sequential"]["max_workers"] == 1
    assert described["workloads"]["phold"]["params"]["lps"]["type"] == "int"


def test_unknown_names_list_the_choices(plugin_env: pytest.MonkeyPatch) -> None:
    """Asking for an unknown strategy or workload is a one-line PluginError listing what exists."""
    registry = discover()
    with pytest.raises(PluginError) as info:
        registry.workload("nope")
    assert "unknown workload 'nope'" in str(info.value) and "phold" in str(info.value)
    with pytest.raises(PluginError, match=r"unknown strategy 'nope'.*sequential"):
        registry.strategy("nope")


def test_plugin_file_from_env_is_discovered(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A file named in TICKPAR_PLUGINS contributes the strategies and workloads it defines."""
    path = write(tmp_path / "extra_plugins.py", STRATEGY_SRC.format(cls="Extra", name="extra-test") +
                 WORKLOAD_SRC.format(cls="Tiny", name="tiny-test"))  # fmt: skip
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    registry = discover()
    assert registry.strategy("extra-test").options["depth"].max == 4
    assert registry.workload("tiny-test").summary == "a test workload"
    assert registry.sources[("strategy", "extra-test")] == str(path)
    assert "sequential" in registry.strategies and "phold" in registry.workloads


def test_plugin_folder_from_env_is_discovered(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A folder in TICKPAR_PLUGINS contributes its *.py files except those starting with '_'; entries are
    os.pathsep-separated."""
    folder = tmp_path / "plugs"
    folder.mkdir()
    write(folder / "one.py", WORKLOAD_SRC.format(cls="One", name="one-test"))
    write(folder / "_hidden.py", WORKLOAD_SRC.format(cls="Hidden", name="hidden-test"))
    other = write(tmp_path / "two.py", WORKLOAD_SRC.format(cls="Two", name="two-test"))
    plugin_env.setenv("TICKPAR_PLUGINS", os.pathsep.join([str(folder), str(other)]))
    registry = discover()
    assert {"one-test", "two-test"} <= set(registry.workloads)
    assert "hidden-test" not in registry.workloads


def test_duplicate_name_names_both_sources(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A second plugin registering an existing name is a PluginError naming both files."""
    path = write(tmp_path / "dup_seq.py", STRATEGY_SRC.format(cls="Impostor", name="sequential"))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    with pytest.raises(PluginError) as info:
        discover()
    text = str(info.value)
    assert "'sequential' registered twice" in text
    assert str(REPO_ROOT / "strategies" / "sequential.py") in text and str(path) in text
    assert "\n" not in text


def test_one_file_reached_twice_is_one_plugin(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The checkout's strategies/ named again on TICKPAR_PLUGINS, or an identical copy of a plugin file
    (an installed package's copy of the checkout's file), registers each plugin once."""
    copy = tmp_path / "sequential.py"
    copy.write_bytes((REPO_ROOT / "strategies" / "sequential.py").read_bytes())
    plugin_env.setenv("TICKPAR_PLUGINS", os.pathsep.join([str(REPO_ROOT / "strategies"), str(copy)]))
    registry = discover()
    assert registry.sources[("strategy", "sequential")] == str(REPO_ROOT / "strategies" / "sequential.py")
    assert {"split", "tick-barrier", "conservative", "quantum"} <= set(registry.strategies)


def test_two_different_files_with_one_name_name_both_paths(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A copy that differs by one byte is another plugin: the error names both files."""
    copy = tmp_path / "sequential.py"
    copy.write_bytes((REPO_ROOT / "strategies" / "sequential.py").read_bytes() + b"\n# edited\n")
    plugin_env.setenv("TICKPAR_PLUGINS", str(copy))
    with pytest.raises(PluginError) as info:
        discover()
    text = str(info.value)
    assert "registered twice" in text and str(copy) in text
    assert str(REPO_ROOT / "strategies" / "sequential.py") in text and "\n" not in text


def test_broken_plugin_file_is_skipped_with_one_line(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A plugin file that fails to import is skipped, not fatal: the registry keeps one line naming the file,
    the line and the exception, and the other plugins stay usable; asking for an unknown name says it too."""
    path = write(tmp_path / "broken_plugin.py", "import tickpar\nraise RuntimeError('half-written plugin')\n")
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    registry = discover()
    assert "phold" in registry.workloads and "sequential" in registry.strategies
    text = registry.broken[str(path)]
    assert f"{path}:2" in text and "RuntimeError: half-written plugin" in text and "\n" not in text
    with pytest.raises(PluginError, match="half-written plugin") as info:
        registry.workload("mesh")
    assert "unknown workload 'mesh'" in str(info.value)
    syntax = write(tmp_path / "syntax_plugin.py", "x = 1\ndef oops(:\n")
    plugin_env.setenv("TICKPAR_PLUGINS", str(syntax))
    text = discover().broken[str(syntax)]
    assert "SyntaxError" in text and f"{syntax}:2" in text and "\n" not in text


def test_plugin_without_name_or_summary_is_broken(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A plugin class lacking 'name' or 'summary' is kept as broken, with one line naming the class or plugin
    and its file; asking for it by name gives that line."""
    nameless = write(tmp_path / "nameless.py", WORKLOAD_SRC.format(cls="Nameless", name="x").replace(
        '    name = "x"\n', ""))  # fmt: skip
    plugin_env.setenv("TICKPAR_PLUGINS", str(nameless))
    assert any("Nameless" in why and "has no 'name'" in why for why in discover().broken.values())
    summaryless = write(tmp_path / "summaryless.py", WORKLOAD_SRC.format(cls="S", name="s-test").replace(
        '    summary = "a test workload"\n', ""))  # fmt: skip
    plugin_env.setenv("TICKPAR_PLUGINS", str(summaryless))
    with pytest.raises(PluginError, match=r"'s-test'.*has no 'summary'"):
        discover().workload("s-test")


def test_workload_without_build_names_file_class_and_method(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A workload class that names itself but lacks build() is not silently dropped as abstract: asking for it
    is a one-line error naming its file, its class and the missing method; an unnamed abstract base is not a
    plugin at all."""
    src = WORKLOAD_SRC.format(cls="NoBuild", name="nobuild").replace("def build(", "def built(")
    src += "\n\nclass Base(Workload):\n    summary = 'an abstract base, not a plugin'\n"
    path = write(tmp_path / "nobuild.py", src)
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    registry = discover()
    with pytest.raises(PluginError) as info:
        registry.workload("nobuild")
    text = str(info.value)
    assert str(path) in text and "class NoBuild" in text and "lacks build()" in text and "\n" not in text
    assert len(registry.broken) == 1  # Base names no plugin


def test_missing_env_entry_is_refused(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A TICKPAR_PLUGINS entry that is neither a file nor a folder is a PluginError naming it."""
    missing = tmp_path / "no_such_plugin.py"
    plugin_env.setenv("TICKPAR_PLUGINS", str(missing))
    with pytest.raises(PluginError, match=r"no_such_plugin\.py"):
        discover()


def test_blocked_names_are_skipped(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Names in TICKPAR_BLOCKED (comma separated) are not registered, which also silences a duplicate."""
    plugin_env.setenv("TICKPAR_BLOCKED", " phold , sequential")
    registry = discover()
    assert "phold" not in registry.workloads and "sequential" not in registry.strategies
    path = write(tmp_path / "dup_again.py", STRATEGY_SRC.format(cls="Again", name="sequential"))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    assert "sequential" not in discover().strategies


def test_get_registry_caches_until_refresh(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """get_registry() discovers once per process; refresh=True rescans (picking up a new TICKPAR_PLUGINS)."""
    first = get_registry(refresh=True)
    assert get_registry() is first
    path = write(tmp_path / "late_plugin.py", WORKLOAD_SRC.format(cls="Late", name="late-test"))
    plugin_env.setenv("TICKPAR_PLUGINS", str(path))
    assert "late-test" not in get_registry().workloads
    assert "late-test" in get_registry(refresh=True).workloads


def _fake_distribution(site: Path, package: str) -> Path:
    """An installed ``package`` with two workload modules and a hidden one, which its distribution names in
    the entry-point group ``tickpar.workloads``; returns the package folder (each test its own name: imports
    are cached per process)."""
    pkg = site / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    write(pkg / "one.py", WORKLOAD_SRC.format(cls="One", name="ep-one-test"))
    write(pkg / "two.py", WORKLOAD_SRC.format(cls="Two", name="ep-two-test"))
    write(pkg / "_hidden.py", WORKLOAD_SRC.format(cls="Hidden", name="ep-hidden-test"))
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[tickpar.workloads]\nfake = {package}\n")
    return pkg


def test_package_entry_point_contributes_its_modules(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An entry point naming a package registers the plugins of each of its modules (not '_' ones), as the
    installed built-ins are found without a checkout."""
    _fake_distribution(tmp_path, "fake_plugins_pkg")
    plugin_env.syspath_prepend(str(tmp_path))
    registry = discover()
    assert {"ep-one-test", "ep-two-test"} <= set(registry.workloads)
    assert "ep-hidden-test" not in registry.workloads
    assert registry.sources[("workload", "ep-one-test")].endswith(": fake_plugins_pkg.one")


def test_entry_point_to_a_scanned_file_counts_once(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A module that is both a scanned plugin file and an entry point's (an editable install of the checkout)
    is registered once, from the file: no duplicate-name error."""
    pkg = _fake_distribution(tmp_path, "fake_plugins_editable")
    plugin_env.syspath_prepend(str(tmp_path))
    plugin_env.setenv("TICKPAR_PLUGINS", str(pkg))
    registry = discover()
    assert registry.sources[("workload", "ep-one-test")] == str(pkg / "one.py")
    assert registry.sources[("workload", "ep-two-test")] == str(pkg / "two.py")


def test_empty_registry_says_where_it_looked(plugin_env: pytest.MonkeyPatch) -> None:
    """No checkout and no entry points (a broken install): a one-line PluginError naming what was searched."""
    plugin_env.setattr(tickpar.plugins.registry, "CHECKOUT", None)
    plugin_env.setattr(tickpar.plugins.registry.importlib.metadata, "entry_points", lambda group: [])
    with pytest.raises(PluginError) as info:
        discover()
    text = str(info.value)
    assert text.startswith("no strategy found: searched no checkout")
    assert "'tickpar.strategies'" in text and "pip" in text and "\n" not in text


MULTICORE_PARAMS = [
    "cores", "requests_per_core", "max_outstanding", "think_cycles", "store_fraction", "stride", "jump_prob",
    "reuse_prob", "working_set_kib", "shared_kib", "shared_fraction", "clock", "xbar_clock", "link_latency", "l1_kib",
    "l1_assoc", "l1_latency", "l2_banks", "l2_kib", "l2_assoc", "l2_latency", "xbar_latency", "mem_ctrls",
    "mem_banks", "mem_row_hit", "mem_row_miss", "mem_burst", "warm_caches", "direct_calls", "work_us",
]  # fmt: skip


def _plugin_package(folder: Path, name: str, plugin: str, *, failing: bool = False) -> Path:
    """A plugin package: ``__init__.py`` exports a workload class defined in a module of its own, which imports
    a sibling module relatively; ``failing``: that sibling raises at import."""
    package = folder / name
    package.mkdir(parents=True)
    write(package / "__init__.py", "from .workload import Meshy\n\n__all__ = ['Meshy']\n")
    sizes = "raise RuntimeError('half-written sizes')\n" if failing else "END_TICK = 1\n"
    write(package / "sizes.py", sizes)
    write(package / "workload.py", WORKLOAD_SRC.format(cls="Meshy", name=plugin).replace(
        "model.end_tick = 1", "model.end_tick = END_TICK") + "\nfrom .sizes import END_TICK\n")  # fmt: skip
    return package


def test_plugin_package_is_one_plugin(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A package folder (with ``__init__.py``) in a plugin folder is one plugin: the classes its ``__init__``
    exports from its own modules register, its modules import each other relatively, and neither a folder nor a
    file starting with '_' is a plugin; a package's ``__init__.py`` named on TICKPAR_PLUGINS is that package."""
    folder = tmp_path / "pkgplugs"
    package = _plugin_package(folder, "meshy", "meshy-test")
    _plugin_package(folder, "_helpers", "helpers-test")
    write(folder / "_split_like_helper.py", WORKLOAD_SRC.format(cls="Helper", name="helper-test"))
    plugin_env.setenv("TICKPAR_PLUGINS", str(folder))
    registry = discover()
    assert registry.sources[("workload", "meshy-test")] == str(package / "__init__.py")
    assert registry.workload("meshy-test").__module__.endswith(".workload")
    assert not {"helpers-test", "helper-test"} & set(registry.workloads) and not registry.broken
    plugin_env.setenv("TICKPAR_PLUGINS", str(package / "__init__.py"))
    assert "meshy-test" in discover().workloads


def test_plugin_package_copies_and_broken_modules(plugin_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An identical copy of a plugin package is the same plugin; a copy that differs in any module is another
    (both named); a package whose module fails to import is broken, with one line naming that module's line."""
    first = _plugin_package(tmp_path / "copy_a", "meshy", "meshy-copy-test")
    second = _plugin_package(tmp_path / "copy_b", "meshy", "meshy-copy-test")
    plugin_env.setenv("TICKPAR_PLUGINS", os.pathsep.join([str(first.parent), str(second.parent)]))
    assert discover().sources[("workload", "meshy-copy-test")] == str(first / "__init__.py")
    write(second / "sizes.py", "END_TICK = 2\n")
    with pytest.raises(PluginError, match="registered twice") as info:
        discover()
    assert str(first / "__init__.py") in str(info.value) and str(second / "__init__.py") in str(info.value)
    broken = _plugin_package(tmp_path / "copy_c", "meshy", "meshy-broken-test", failing=True)
    plugin_env.setenv("TICKPAR_PLUGINS", str(broken.parent))
    registry = discover()
    text = registry.broken[str(broken / "__init__.py")]
    assert f"{broken / 'sizes.py'}:1" in text and "half-written sizes" in text and "\n" not in text
    assert "phold" in registry.workloads


def test_builtin_multicore_is_a_package_with_its_names(plugin_env: pytest.MonkeyPatch) -> None:
    """``workloads/multicore/`` is one plugin, found once (folder scan and entry point), under its name and with
    every parameter and statistic it had as one file; split's helper modules (``_split_*.py``) are no plugins."""
    registry = discover()
    assert registry.sources[("workload", "multicore")] == str(REPO_ROOT / "workloads" / "multicore" / "__init__.py")
    multicore = registry.workload("multicore")
    assert list(multicore.params) == MULTICORE_PARAMS
    assert list(multicore.statistics) == ["sim_ticks", "mean_load_latency", "l1_hit_rate"]
    assert registry.sources[("strategy", "split")] == str(REPO_ROOT / "strategies" / "split.py")
    assert not registry.broken
    plugin_env.setattr(tickpar.plugins.registry, "CHECKOUT", None)  # an install without a checkout
    installed = discover()
    assert installed.sources[("workload", "multicore")].endswith(": tickpar.builtin.workloads.multicore")
    assert list(installed.workload("multicore").params) == MULTICORE_PARAMS and not installed.broken
