# Every record -> results/summary.csv, one tidy row per cell (tickpar/pipeline/aggregate.py).


rule aggregate:
    input:
        checks=[c.check_path for c in SWEEP.cells],
        timings=SWEEP.timing_group_paths,
        bounds=BOUNDS_PATHS,
    output:
        summary=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="Tables",
            labels={"table": "summary.csv"},
        ),
    params:
        manifest=SWEEP.manifest(),
        report=config["report"],
    log:
        "results/logs/aggregate.log",
    script:
        "../report/scripts/aggregate.py"
