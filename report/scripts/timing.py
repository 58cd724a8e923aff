"""Snakemake script: time one workload shape's cells in interleaved rounds (see tickpar/perf/timing/__init__.py)."""

from tickpar.perf.timing import main_snakemake

main_snakemake(globals()["snakemake"])
