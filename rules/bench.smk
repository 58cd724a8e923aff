# Timing: pyperf in fresh worker processes with warm-ups (tickpar time -> python -m tickpar.timing),
# after the cell's correctness job (a cell that crashed, timed out or deadlocked is not timed).
# Never two at once, never beside any other job (resources bench and load, see common.smk).
TIMING = config["timing"]


def pyperf_options(wildcards):
    extra = "".join(f" --pyperf-arg={shlex.quote(a)}" for a in TIMING["extra_args"])
    inherit = ",".join(TIMING["inherit_environ"])
    return (
        f"--processes {TIMING['processes']} --values {TIMING['values']} --warmups {TIMING['warmups']}"
        f" --timeout {TIMING['timeout_s']}" + (f" --inherit-environ {inherit}" if inherit else "") + extra
    )


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
    threads: lambda wc: int(wc.workers)
    priority: 0
    resources:
        bench=1,
        load=LOAD,
    shell:
        "rc=0; timeout -k 10 {params.limit} {PY} -m tickpar time {params.args} {params.pyperf}"
        " --check {input.check} --pyperf-out {params.pyperf_out} --out {output} > {log} 2>&1 || rc=$?;"
        " if [ ! -s {output} ]; then"
        " {PY} -m tickpar.sweep fallback --what timing --rc $rc --log {log} --out {output}; fi"
