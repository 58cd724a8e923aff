# Config -> validated sweep, resources, helpers. Runs before any rule: a bad config stops here
# with one line naming the key (tickpar/pipeline/sweep.py), and no job starts.
import os
import shlex
import sys

from tickpar.pipeline.sweep import CHECK_PATTERN, GOLDEN_PATTERN, TIMING_GROUP_PATTERN, WILDCARD_CONSTRAINTS
from tickpar.pipeline.sweep import SweepError, load_sweep
from tickpar.pipeline.scheduling import unthrottle_local
from tickpar.pipeline.slurm import install as guard_slurm_status


# On SLURM (config/profiles/slurm): the executor plugin's job-status query falls back from sacct to squeue
# where accounting is off, and stops the sweep with one line after --slurm-status-attempts failures in a
# row instead of hanging (tickpar/pipeline/slurm.py). Nothing happens without the plugin.
guard_slurm_status(workflow)


# Local runs: Snakemake's job-rate limiter (default 100/1s) re-arms a timer on every scheduler pass,
# and by the end of the correctness phase ~400 such chains run the job selector ~400 times a second:
# 155 s -> 104 s for that phase on 2 cores without it (tickpar/pipeline/scheduling.py). Cluster runs keep it.
onstart:
    unthrottle_local(workflow)


# The default sweep is read only when no --configfile is given: Snakemake would otherwise merge
# the two (a small test config would inherit every strategy of the default one).
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


CONFIG_SOURCE = str((list(workflow.overwrite_configfiles) or list(workflow.configfiles) or ["--config"])[0])
if os.path.isabs(CONFIG_SOURCE) and not os.path.relpath(CONFIG_SOURCE).startswith(".."):
    CONFIG_SOURCE = os.path.relpath(CONFIG_SOURCE)
try:
    SWEEP = load_sweep(config, source=CONFIG_SOURCE)
except SweepError as exc:
    print(f"tickpar: config error in {CONFIG_SOURCE}: {exc}", file=sys.stderr)
    sys.exit(1)
print(SWEEP.summary(), file=sys.stderr)

PY = shlex.quote(sys.executable)  # this interpreter (the venv's), passed to every shell rule as params.py
FMT = config["report"]["format"]
TIMING = config["timing"]

# Scheduling (see config/README.md). Timing jobs start only after every correctness job (their
# input, rules/bench.smk). `bench` (limit 1): a timing job or an MPI job runs alone among those.
# `load` (limit LOAD): a timing or MPI job takes all of it, any other job 1. Set here, so that a plain
# `snakemake --cores N` is safe; `--resources bench=... load=...` (or a profile) overrides.
LOAD = 1000
for _name, _limit in (("bench", 1), ("load", LOAD)):
    if _name not in workflow.global_resources:
        workflow.register_resource(_name, _limit)


wildcard_constraints:
    **WILDCARD_CONSTRAINTS,


def cell_args(wildcards):
    return shlex.join(SWEEP.cell(wildcards).cli_args())


def check_threads(wildcards):
    """Cores a correctness job claims (tickpar.pipeline.sweep.SweepCell.check_cores)."""
    return SWEEP.cell(wildcards).check_cores


def exclusive(wildcards):
    """1 for a job that must not share the machine (MPI ranks spin while they wait)."""
    return int(SWEEP.cell(wildcards).mpi)


def get_final_output():
    return ["results/summary.csv", "results/prediction.csv", "results/model_error.csv", *REPORT_OUTPUTS.values()]


REPORT_OUTPUTS = {
    "speedup": f"results/report/speedup.{FMT}",
    "efficiency": f"results/report/efficiency.{FMT}",
    "correctness": f"results/report/correctness.{FMT}",
    "time_per_event": f"results/report/time_per_event.{FMT}",
    "overhead": f"results/report/overhead.{FMT}",
    "breakeven": f"results/report/breakeven.{FMT}",
    "interpreters": f"results/report/interpreters.{FMT}",
    "ft_cost": f"results/report/ft_cost.{FMT}",
    "engines": f"results/report/engines.{FMT}",
    "scaling": f"results/report/scaling.{FMT}",
    "optimism": f"results/report/optimism.{FMT}",
    "findings": "results/report/findings.html",
    "environment": "results/report/environment.html",
    "pdf": "results/report.pdf",
}
