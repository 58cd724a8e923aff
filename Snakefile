# tickpar: the sweep. This file only wires; the stages live in rules/*.smk:
#   common.smk     config -> validated sweep (tickpar/sweep.py), resources, input functions
#   verify.smk     golden sequential records and correctness jobs (tickpar golden / tickpar check)
#   bench.smk      timing: one job per workload shape after every check, interleaved pyperf rounds
#   aggregate.smk  results/summary.csv (tickpar/aggregate.py)
#   report.smk     figures, findings, results/report.pdf (tickpar/report.py); HTML via --report
#   failures.smk   failure pages: shrunk cell, anatomy, timeline per strategy (tickpar/report_failures.py)
#   accuracy.smk   results/accuracy.csv and the accuracy-speed figure (tickpar/accuracy.py, report_accuracy.py)
# Run: snakemake --cores N [--configfile config/full.yaml]; then snakemake --report results/report.html


include: "rules/common.smk"
include: "rules/verify.smk"
include: "rules/bench.smk"
include: "rules/bounds.smk"
include: "rules/aggregate.smk"
include: "rules/failures.smk"
include: "rules/report.smk"
include: "rules/accuracy.smk"


report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        get_final_output(),
        FAILURE_OUTPUTS,
