# tickpar: the sweep. This file only wires; the stages live in rules/*.smk:
#   common.smk     config -> validated sweep (tickpar/pipeline/sweep.py), resources, input functions
#   verify.smk     golden sequential records and correctness jobs (tickpar golden / tickpar check)
#   bench.smk      timing: one job per workload shape after every check, interleaved pyperf rounds
#   bounds.smk     per timed shape: the event DAG -> bounds and the model's predictions (tickpar/perf/predict/prediction.py)
#   engine.smk     the engine benchmark: tickpar against SimPy, desimpy, salabim, heapq (bench/engine.py), alone
#   aggregate.smk  results/summary.csv (tickpar/pipeline/aggregate.py)
#   report.smk     the answer page (first), figures, findings, appendix, results/report.pdf and results/answer.csv
#                  (tickpar/report/render.py); HTML via --report
#   traces.smk     gem5 traces: every shape's parallelism profile, a report page per trace (tickpar/report/traces.py)
#   synthetic.smk  real gem5 runs fitted with trace-fit: the "Synthetic against real" page (tickpar/report/synthetic.py)
#   failures.smk   failure pages: shrunk cell, anatomy, timeline per strategy (tickpar/report/failures.py)
#   accuracy.smk   results/accuracy.csv and its figure (tickpar/pipeline/accuracy.py, tickpar/report/accuracy.py)
# Run: snakemake --cores N [--configfile config/full.yaml]; then snakemake --report results/report.html


include: "rules/common.smk"
include: "rules/verify.smk"
include: "rules/bench.smk"
include: "rules/bounds.smk"
include: "rules/aggregate.smk"
include: "rules/failures.smk"
include: "rules/engine.smk"
include: "rules/traces.smk"
include: "rules/synthetic.smk"
include: "rules/report.smk"
include: "rules/accuracy.smk"


report: "report/workflow.rst"


# Rules that only read records and draw: on a cluster they run where Snakemake runs instead of
# waiting in the queue (README "On a cluster"); a local run is unchanged.
localrules:
    all,
    aggregate,
    prediction,
    report_files,
    accuracy,
    accuracy_figure,


rule all:
    default_target: True
    input:
        get_final_output(),
        FAILURE_OUTPUTS,
