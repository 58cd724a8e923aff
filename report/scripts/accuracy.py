"""Snakemake script: results/summary.csv -> results/accuracy.csv (see tickpar/pipeline/accuracy.py)."""

import sys

from tickpar.pipeline.accuracy import main_snakemake

smk = globals()["snakemake"]
sys.stderr = sys.stdout = open(smk.log[0], "w")
main_snakemake(smk)
