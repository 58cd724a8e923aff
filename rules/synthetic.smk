# "Synthetic against real" (docs/how-to/gem5-traces.md, "Fit a synthetic shape to a real run"): with runs under
# the config's `synthetic:`, each is fitted with `tickpar trace-fit` (python -m tickpar.gem5.fit; a run that
# cannot be fitted writes its error instead, and the sweep goes on), or, where the run names a `fit:` made
# earlier (the default sweep's shipped fits), that fit is used as it is, and one report page shows each run's
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


def _fit_command(run):
    """The shell command that writes ``run``'s fit: a copy of the fit the config names, else the fit itself."""
    entry = SYNTHETIC_RUNS[run]
    if entry.get("fit"):
        return f"cp {shlex.quote(entry['fit'])}"
    fixed = json.dumps(entry.get("fixed") or {})
    return (
        f"{PY} -m tickpar.gem5.fit --run {shlex.quote(run)} --trace {shlex.quote(entry['trace'])}"
        f" {_components_arg(entry)} --fixed {shlex.quote(fixed)} --max-candidates {SYNTHETIC.get('max_candidates', 200)}"
        f" --max-events {SYNTHETIC.get('max_events', 20000)} --jobs 1 --out"
    )


rule trace_fit:
    output:
        "results/synthetic/{run}.fit.json",
    log:
        "results/logs/synthetic/{run}.log",
    params:
        command=lambda wc: _fit_command(wc.run),
    priority: 5
    resources:
        load=1,
    shell:
        "{params.command} {output} > {log} 2>&1"


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
