"""Snakemake script: every record of the sweep -> results/summary.csv (see tickpar/pipeline/aggregate.py)."""

import sys

from tickpar.pipeline.aggregate import main_snakemake

smk = globals()["snakemake"]
sys.stderr = sys.stdout = open(smk.log[0], "w")
main_snakemake(smk)
