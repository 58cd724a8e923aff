# Timing: one job per workload shape, after EVERY correctness job of the sweep (its input), so that
# while the clock runs Snakemake has nothing to schedule and no other job exists (`bench`/`load`
# resources keep timing jobs apart). The job times all the shape's cells in `timing.processes`
# interleaved rounds (round r runs every cell once, in one fresh pyperf worker process), checks
# every timed run's digests against the golden record, and measures CPU availability around each
# round (tickpar/perf/timing/__init__.py). It writes each cell's record (results/timing/<cell>.json + .pyperf.json)
# and the shape's index results/timing/{workload}/{shape}.json. A cell whose correctness run did not
# finish is not timed (status skipped); a crash or hang of one cell is that cell's record.
rule timing:
    input:
        checks=[c.check_path for c in SWEEP.cells],
        goldens=lambda wc: sorted({c.golden_path for c in SWEEP.timing_group(wc)}),
    output:
        TIMING_GROUP_PATTERN,
    log:
        "results/logs/timing/{workload}/{shape}.log",
    params:
        cells=lambda wc: [c.timing_entry() for c in SWEEP.timing_group(wc)],
        timing=TIMING,
    threads: lambda wc: max(c.workers for c in SWEEP.timing_group(wc))
    priority: 0
    resources:
        bench=1,
        load=LOAD,
    script:
        "../report/scripts/timing.py"
