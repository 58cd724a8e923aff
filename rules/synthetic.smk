# "Synthetic against real" (docs/how-to/gem5-traces.md, "Fit a synthetic shape to a real run"): with runs under
# the config's `synthetic:`, each is fitted with `tickpar trace-fit` (python -m tickpar.gem5.fit; a run that
# cannot be fitted writes its error instead, and the sweep goes on), and one report page shows each run's
# profile beside its fitted multicore shape's and the config's multicore shapes' (rules/traces.smk's profile
# job), and the figure of gem5's parallelism against simulated cores (tickpar/report/synthetic.py). The page
# goes into the PDF too (render.py's "synthetic" page). No runs: no jobs, no page.
import json
import shlex


SYNTHETIC = config.get("synthetic") or {}
SYNTHETIC_RUNS = SYNTHETIC.get("runs") or {}
SYNTHETIC_SHAPES = sorted((config["workloads"].get("multicore") or {}).get("shapes") or {})
SYNTHETIC_OUTPUTS = ["results/report/synthetic.html"] if SYNTHETIC_RUNS else []


def _components_arg(entry):
    """``--components FILE`` where the run has a mapping file, else nothing."""
    return f"--components {shlex.quote(entry['components'])}" if entry.get("components") else ""


rule trace_fit:
    output:
        "results/synthetic/{run}.fit.json",
    log:
        "results/logs/synthetic/{run}.log",
    params:
        py=PY,
        trace=lambda wc: SYNTHETIC_RUNS[wc.run]["trace"],
        components=lambda wc: _components_arg(SYNTHETIC_RUNS[wc.run]),
        fixed=lambda wc: json.dumps(SYNTHETIC_RUNS[wc.run].get("fixed") or {}),
        candidates=SYNTHETIC.get("max_candidates", 200),
        events=SYNTHETIC.get("max_events", 20000),
    priority: 5
    resources:
        load=1,
    shell:
        "{params.py} -m tickpar.gem5.fit --run {wildcards.run} --trace {params.trace:q}"
        " {params.components} --fixed {params.fixed:q} --max-candidates {params.candidates}"
        " --max-events {params.events} --jobs 1 --out {output} > {log} 2>&1"


rule synthetic_page:
    input:
        fits=[f"results/synthetic/{run}.fit.json" for run in SYNTHETIC_RUNS],
        profiles=[f"results/traces/multicore.{shape}.profile.json" for shape in SYNTHETIC_SHAPES],
    output:
        page=report(
            "results/report/synthetic.html",
            caption="../report/synthetic.rst",
            category="Synthetic against real",
            labels={"page": "profiles, real beside synthetic"},
        ),
        figure=report(
            f"results/report/synthetic_cores.{FMT}",
            caption="../report/synthetic.rst",
            category="Synthetic against real",
            labels={"page": "parallelism against simulated cores"},
        ),
        data="results/report/synthetic.json",
    log:
        "results/logs/synthetic/page.log",
    params:
        py=PY,
        fmt=FMT,
        cores=json.dumps({run: entry.get("simulated_cores") for run, entry in SYNTHETIC_RUNS.items()}),
    resources:
        load=1,
    shell:
        "{params.py} -m tickpar.report.synthetic --fits results/synthetic --profiles results/traces"
        " --cores {params.cores:q} --outdir results/report --format {params.fmt} > {log} 2>&1"
