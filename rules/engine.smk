# The engine benchmark for the report's environment page (bench/engine.py --interleave, run and recorded by
# tickpar/report/engine_bench.py): PHOLD events/s of tickpar (the pure kernel, and the compiled one where
# `make test-compiled` built it) beside SimPy, desimpy, salabim and a bare heapq loop, every implementation
# once per round (the project's own speed goals: bench/goals.py, not the report). A timing job like rules/bench.smk's: it runs
# alone (`bench` 1 and all of `load`, so no other job runs beside it) and stops the Snakemake main process while
# it measures (timing.pause_orchestrator). A missing library, a crash or a timeout goes into its record and the
# job still succeeds, so the report always builds and says what failed. `engine_bench.enabled: false` drops it.

ENGINE_BENCH = config.get("engine_bench") or {}
ENGINE_BENCH_OUTPUTS = ["results/engine/engine.json"] if ENGINE_BENCH.get("enabled", True) else []


rule engine_bench:
    output:
        "results/engine/engine.json",
    log:
        "results/logs/engine/engine.log",
    params:
        settings={k: v for k, v in ENGINE_BENCH.items() if k != "enabled"},
        timing=TIMING,
        engine=os.path.join(workflow.basedir, "bench", "engine.py"),
    priority: 0
    resources:
        bench=1,
        load=LOAD,
    script:
        "../report/scripts/engine_bench.py"
