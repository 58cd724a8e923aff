# Timing: pyperf in fresh worker processes with warm-ups (tickpar time -> python -m tickpar.timing),
# after the cell's correctness job (a cell whose run did not finish is not timed: status skipped).
# Never two at once, never beside any other job (resources bench and load, see common.smk).
rule timing:
    input:
        check=CHECK_PATTERN,
    output:
        TIMING_PATTERN,
    log:
        TIMING_PATTERN.replace("results/timing/", "results/logs/timing/").replace(".json", ".log"),
    params:
        args=cell_args,
        pyperf=pyperf_options,
        pyperf_out=lambda wc: SWEEP.cell(wc).pyperf_path,
        limit=TIMING["timeout_s"] + 120,
        py=PY,
    threads: lambda wc: int(wc.workers)
    priority: 0
    resources:
        bench=1,
        load=LOAD,
    shell:
        "rc=0; timeout -k 10 {params.limit} {params.py} -m tickpar time {params.args} {params.pyperf}"
        " --check {input.check} --pyperf-out {params.pyperf_out} --out {output} > {log} 2>&1 || rc=$?;"
        " if [ ! -s {output} ]; then"
        " {params.py} -m tickpar.sweep fallback --what timing --rc $rc --log {log} --out {output}; fi"
