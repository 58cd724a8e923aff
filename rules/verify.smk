# Correctness: the golden sequential record once per (workload, shape, order, seed), then one
# `tickpar check` per cell against it. A cell that crashes, hangs or deadlocks gets that verdict
# in its record and the job still exits 0; a command that dies without a record gets a fallback
# record (python -m tickpar.pipeline.sweep fallback), so the sweep always goes on.


rule golden:
    output:
        GOLDEN_PATTERN,
    log:
        "results/logs/golden/{workload}/{shape}/{order}/s{seed}.log",
    params:
        args=lambda wc: shlex.join(SWEEP.golden(wc).cli_args(golden=True)),
        limit=lambda wc: 2 * config["timeout_s"] + 60,
        py=PY,
    priority: 20
    resources:
        load=1,
    shell:
        "rc=0; timeout -k 10 {params.limit} {params.py} -m tickpar golden {params.args} --out {output} > {log} 2>&1"
        " || rc=$?; if [ ! -s {output} ]; then"
        " {params.py} -m tickpar.pipeline.sweep fallback --what golden --rc $rc --log {log} --out {output}; fi"


rule check:
    input:
        golden=lambda wc: SWEEP.cell(wc).golden_path,
    output:
        CHECK_PATTERN,
    log:
        CHECK_PATTERN.replace("results/check/", "results/logs/check/").replace(".json", ".log"),
    params:
        args=cell_args,
        timeout=config["timeout_s"],
        limit=2 * config["timeout_s"] + 60,
        py=PY,
        cell_py=lambda wc: shlex.quote(SWEEP.cell(wc).python),  # the cell's interpreter (default or freethreaded)
    threads: check_threads
    priority: 10
    resources:
        bench=exclusive,
        load=lambda wc: LOAD if exclusive(wc) else 1,
    shell:
        "rc=0; timeout -k 10 {params.limit} {params.cell_py} -m tickpar check {params.args} --timeout {params.timeout}"
        " --golden {input.golden} --out {output} > {log} 2>&1 || rc=$?;"
        " if [ ! -s {output} ]; then"
        " {params.py} -m tickpar.pipeline.sweep fallback --what check --rc $rc --log {log} --out {output}; fi"
