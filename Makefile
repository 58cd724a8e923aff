# The README's two commands. Both create .venv/ (in the repository root) when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: report test test-slow test-compiled test-ft test-slurm freethreaded lint clean native docs

# The checkout is installed editable and pure Python (TICKPAR_PURE=1, whatever TICKPAR_COMPILED says), so that edits to the kernel take
# effect; `make test-compiled` builds and tests the compiled kernel (setup.py) in a copy of its own.
# `make report` needs tickpar, its dependencies, the engine benchmark's peers (the [bench] extra: SimPy, salabim,
# desimpy, for the environment page) and the native engine ($(STAMP)); the test targets add the
# [test] extra on top ($(TEST_STAMP): pytest, ruff, import-linter, mypy, ...), which the sweep does not use
# (it would add its install time to the default sweep's 10-minute budget).
TEST_STAMP := $(VENV)/.installed-test

$(STAMP): pyproject.toml setup.py native/pyproject.toml native/CMakeLists.txt $(wildcard native/src/*) \
		$(wildcard native/src/strategies/*) $(wildcard native/include/tickpar/*) $(wildcard native/tickpar_native/*.py) \
		$(wildcard strategies/*.cpp)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	TICKPAR_PURE=1 $(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python -m pip install --quiet ./native
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	TICKPAR_PURE=1 $(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(TEST_STAMP)

# The native engine alone (C++20, scikit-build-core + nanobind from PyPI): `make native`; then every native
# strategy plugin the registry finds (strategies/*.cpp, TICKPAR_PLUGINS folders) that is not built yet.
native: $(STAMP)
	$(BIN)/python -m tickpar build-native

# `make report CONFIG=config/full.yaml` runs another sweep; SMK="..." passes more Snakemake options.
CONFIG ?= config/config.yaml
SMK ?=

report: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --profile config/profiles/default --configfile $(CONFIG) $(SMK)
	$(BIN)/snakemake --cores $(CORES) --profile config/profiles/default --configfile $(CONFIG) $(SMK) \
		--report results/report.html
	@echo "report: results/report.html and results/report.pdf (table: results/summary.csv)"

# `make test`: ruff, the layer contracts (import-linter) and every test not marked slow, on all cores.
# `make test-slow`: the slow ones (whole pipelines, wheel builds, many seeds); .ci/run runs both.
PYTEST_WORKERS ?= $(CORES)

test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	TICKPAR_EXPECT_KERNEL=pure $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow"

# `make test-compiled`: the same fast tests against the compiled kernel. The tracked and untracked (not
# ignored) files are copied to $(COMPILED_TREE), setup.py compiles the kernel there in place (mypyc from the
# [test] extra, offline), and pytest runs in that copy with TICKPAR_EXPECT_KERNEL=compiled, so a build that
# silently fell back to pure Python fails (tests/test_kernel_build.py). The checkout itself is not touched.
COMPILED_TREE := build/compiled-tree

test-compiled: $(TEST_STAMP)
	rm -rf $(COMPILED_TREE) && mkdir -p $(COMPILED_TREE)
	git ls-files -z --cached --others --exclude-standard \
		| tar --null --ignore-failed-read -T - -cf - | tar -xf - -C $(COMPILED_TREE)
	cd $(COMPILED_TREE) && env -u TICKPAR_PURE TICKPAR_COMPILED=1 $(abspath $(BIN))/python setup.py -q build_ext --inplace
	cd $(COMPILED_TREE) && PYTHONPATH=$(abspath $(COMPILED_TREE)) TICKPAR_EXPECT_KERNEL=compiled \
		$(abspath $(BIN))/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow" -p no:cacheprovider

test-slow: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m slow

# `make freethreaded`: a free-threaded CPython (python3.14t/3.13t on PATH, else CPython 3.13 built with
# --disable-gil from Debian's source into .cache/, reused; TICKPAR_CACHE moves it) and .venv-ft/ with
# tickpar and what a cell needs (tools/freethreaded.sh). Sweeps with `interpreters: [..., freethreaded]`
# run their cells under it. `make test-ft`: the conformance suite and the thread-strategy stress under it.
FT_VENV ?= $(or $(TICKPAR_FT_VENV),.venv-ft)
FT_STAMP := $(FT_VENV)/.installed
FT_TEST_STAMP := $(FT_VENV)/.installed-test
# What test-ft runs under the free-threaded interpreter (tests that need only a cell's dependencies).
FT_TESTS ?= tests/test_conformance.py tests/test_freethreaded.py tests/test_tick_barrier.py \
	tests/test_conservative.py tests/test_quantum.py tests/test_split.py tests/test_eventq.py tests/test_model.py \
	tests/test_oracle.py
STRESS ?= --runs 20 --workers 2 4
STRESS_RELEASE ?= --runs 5 --workers 2 4 --work gil-release

$(FT_STAMP): pyproject.toml tools/freethreaded.sh
	TICKPAR_FT_VENV=$(FT_VENV) tools/freethreaded.sh
	touch $@

$(FT_TEST_STAMP): $(FT_STAMP)
	TICKPAR_FT_VENV=$(FT_VENV) tools/freethreaded.sh --test
	touch $@

freethreaded: $(FT_STAMP)

test-ft: $(FT_TEST_STAMP)
	$(FT_VENV)/bin/python -c "import sys; assert not sys._is_gil_enabled(), 'the GIL is on'"
	$(FT_VENV)/bin/python -m pytest -q -n $(PYTEST_WORKERS) -p no:cacheprovider $(FT_TESTS)
	$(FT_VENV)/bin/python -m tickpar.pipeline.stress $(STRESS)
	$(FT_VENV)/bin/python -m tickpar.pipeline.stress --no-split $(STRESS_RELEASE)

# `make test-slurm`: a one-node SLURM on localhost (slurm-wlm and munge installed when missing, as root), the
# sweep config/test-slurm.yaml through config/profiles/slurm and its checks; outputs in results-slurm/.
test-slurm: $(TEST_STAMP)
	tests/slurm/run.sh

# `make docs`: the documentation (docs/, Sphinx with MyST Markdown) into build/docs/, warnings as errors. The
# [docs] extra (sphinx, myst-parser) is installed into .venv/ once ($(DOCS_STAMP)); autodoc imports tickpar.
DOCS_STAMP := $(VENV)/.installed-docs
DOCS_OUT ?= build/docs

$(DOCS_STAMP): $(STAMP)
	TICKPAR_PURE=1 $(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs $(DOCS_OUT)
	@echo "docs: $(DOCS_OUT)/index.html"

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

clean:
	rm -rf results results-slurm .snakemake $(COMPILED_TREE)
