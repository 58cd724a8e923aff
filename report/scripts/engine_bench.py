"""Snakemake script: the engine benchmark, alone -> results/engine/engine.json (tickpar/report/engine_bench.py)."""

from tickpar.report.engine_bench import main_snakemake

main_snakemake(globals()["snakemake"])
