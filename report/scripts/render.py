"""Snakemake script: results/summary.csv -> figures, findings, environment, report.pdf (tickpar/report/render.py)."""

import sys

from tickpar.report.render import main_snakemake

smk = globals()["snakemake"]
sys.stderr = sys.stdout = open(smk.log[0], "w")
main_snakemake(smk)
