# The README's two commands. Both create .venv/ (in the repository root) when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: report test test-slow lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

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

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) -m slow

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

clean:
	rm -rf results .snakemake
