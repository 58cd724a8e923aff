# The README's two commands. Both create .venv/ (in the repository root) when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: report test lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

report: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --profile config/profiles/default
	$(BIN)/snakemake --cores $(CORES) --profile config/profiles/default --report results/report.html

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf results .snakemake
