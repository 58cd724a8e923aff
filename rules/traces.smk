# gem5 traces (docs/how-to/gem5-traces.md): with a `gem5trace` workload in the config, every workload shape
# of the config is profiled (tickpar/gem5/profile.py: a trace itself, any other shape its emitted run), and
# each trace gets a report page (tickpar/report/traces.py): its profile beside the synthetic shapes', its
# bounds against workers, each strategy's verdict and 2-worker speedup, split's anatomy in gem5's names.
# The pages go into the PDF too (render.py's "traces" page). A profile that fails writes its error instead,
# and the sweep goes on.
import json


TRACE_SHAPES = sorted((config["workloads"].get("gem5trace") or {}).get("shapes") or {})
TRACE_PROFILES = (
    [
        f"results/traces/{w}.{s}.profile.json"
        for w, entry in sorted(config["workloads"].items())
        for s in sorted(entry.get("shapes") or {})
    ]
    if TRACE_SHAPES
    else []
)
TRACE_OUTPUTS = [f"results/report/traces/{s}.html" for s in TRACE_SHAPES]


rule trace_profile:
    output:
        "results/traces/{workload}.{shape}.profile.json",
    log:
        "results/logs/traces/{workload}.{shape}.log",
    params:
        py=PY,
        shape=lambda wc: json.dumps(config["workloads"][wc.workload]["shapes"][wc.shape]),
    priority: 5
    resources:
        load=1,
    shell:
        "{params.py} -m tickpar.gem5.profile --workload {wildcards.workload} --params {params.shape:q}"
        " --out {output} > {log} 2>&1"


rule trace_page:
    input:
        summary="results/summary.csv",
        profiles=TRACE_PROFILES,
    output:
        page=report(
            "results/report/traces/{shape}.html",
            caption="../report/traces.rst",
            category="gem5 traces",
            labels={"trace": "{shape}", "page": "profile and verdicts"},
        ),
        figure=report(
            f"results/report/traces/{{shape}}.{FMT}",
            caption="../report/traces.rst",
            category="gem5 traces",
            labels={"trace": "{shape}", "page": "bounds against workers"},
        ),
        data="results/report/traces/{shape}.json",
    log:
        "results/logs/traces/page.{shape}.log",
    params:
        py=PY,
        fmt=FMT,
    resources:
        load=1,
    shell:
        "{params.py} -m tickpar.report.traces --shape {wildcards.shape} --summary {input.summary}"
        " --profiles results/traces --checks results/check/gem5trace/{wildcards.shape}"
        " --outdir results/report/traces --format {params.fmt} > {log} 2>&1"
