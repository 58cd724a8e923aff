"""Snakemake script: results/accuracy.csv -> the accuracy-speed figure (see tickpar/report/accuracy.py)."""

import sys

from tickpar.report.accuracy import main_snakemake

smk = globals()["snakemake"]
sys.stderr = sys.stdout = open(smk.log[0], "w")
main_snakemake(smk)
