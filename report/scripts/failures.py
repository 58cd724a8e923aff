"""Snakemake script: one strategy's failure page (see tickpar/report/failures.py)."""

import sys

from tickpar.report.failures import main_snakemake

smk = globals()["snakemake"]
sys.stderr = sys.stdout = open(smk.log[0], "w")
main_snakemake(smk)
