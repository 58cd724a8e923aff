"""Snakemake script: time one workload shape's cells in interleaved rounds (see tickpar/timing.py)."""

from tickpar.timing import main_snakemake

main_snakemake(globals()["snakemake"])
