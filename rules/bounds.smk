# Bounds and predictions (tickpar/perf/predict/prediction.py): the `here` preset's costs calibrated once per sweep,
# then per timed workload shape its event DAG (one work-free sequential run per order, work metered)
# -> ideal, bound and predicted speedups of each timed strategy variant for P = 1, 2, 4 ... 64;
# then results/prediction.csv beside the measured points. The calibration runs alone (bench, load: it
# times synchronisation); so does a shape job (a few seconds, one core): its DAG's event costs are the
# least over repeated recordings, and recordings made beside other jobs would inflate them.
# The native engine's calibration (the cxx preset) needs the engine built: a sweep without native cells runs
# without it, and prices the here preset alone (`shape --presets here`); the report says so.
import json

from tickpar.native import available as native_available
from tickpar.pipeline.sweep import format_value

NATIVE_CALIBRATION = native_available() or any(c.engine == "native" for c in SWEEP.cells)
CALIBRATION_ENV = "TICKPAR_CALIBRATION=results/calibration.json " if NATIVE_CALIBRATION else ""
PREDICTION_MODULE = "-m tickpar.perf.predict.prediction"
PRESETS_ARG = "" if NATIVE_CALIBRATION else " --presets here"


def bounds_shapes():
    """(workload, shape) -> its timed cells, one per strategy variant, order and work mode."""
    shapes = {}
    for cell in SWEEP.timed:
        shapes.setdefault((cell.workload, cell.shape), []).append(cell)
    return shapes


BOUNDS_SHAPES = bounds_shapes()
BOUNDS_PATHS = [f"results/bounds/{w}/{s}.json" for w, s in BOUNDS_SHAPES]


def bounds_args(wildcards):
    cells = BOUNDS_SHAPES[(wildcards.workload, wildcards.shape)]
    first = min(cells, key=lambda c: c.seed)
    variants = [
        {"strategy": c.strategy, "variant": c.variant, "options": c.options, "order": c.order, "work": c.work}
        for c in cells
    ]
    variants = list({json.dumps(v, sort_keys=True): v for v in variants}.values())
    workers = sorted({1, 2, 4, 8, 16, 32, 64} | {c.workers for c in SWEEP.cells})
    args = ["--workload", first.workload, "--shape", first.shape, "--seed", str(first.seed)]
    for k, v in first.params.items():
        args += ["--param", f"{k}={format_value(v)}"]
    args += ["--cells", json.dumps(variants, sort_keys=True), "--workers", ",".join(map(str, workers))]
    return shlex.join(args)


rule bounds_calibration:
    output:
        "results/bounds/calibration.json",
        *(["results/calibration.json"] if NATIVE_CALIBRATION else []),
    log:
        "results/logs/bounds/calibration.log",
    params:
        py=PY,
        native=(
            f"{PY} -m tickpar.cli calibrate --budget 0.5 --out results/calibration.json"
            if NATIVE_CALIBRATION
            else "echo 'tickpar: no native calibration (the native engine is not built and no cell needs it)'"
        ),
    priority: 5
    resources:
        bench=1,
        load=LOAD,
    shell:
        "{params.native} > {log} 2>&1"
        " && {params.py} -m tickpar.perf.predict.prediction calibrate --out {output[0]} >> {log} 2>&1"


rule bounds:
    input:
        calibration="results/bounds/calibration.json",
    output:
        "results/bounds/{workload}/{shape}.json",
    log:
        "results/logs/bounds/{workload}/{shape}.log",
    params:
        args=bounds_args,
        py=PY,
        env=CALIBRATION_ENV,
        module=PREDICTION_MODULE,
        presets=PRESETS_ARG,
    priority: 5
    resources:
        bench=1,
        load=LOAD,
    shell:
        "{params.env}{params.py} {params.module} shape {params.args} --calibration {input.calibration}"
        "{params.presets} --out {output} > {log} 2>&1"


rule prediction:
    input:
        summary="results/summary.csv",
        shapes=BOUNDS_PATHS,
    output:
        report(
            "results/prediction.csv",
            caption="../report/prediction.rst",
            category="Tables",
            labels={"table": "prediction.csv"},
        ),
    log:
        "results/logs/prediction.log",
    params:
        py=PY,
        env=CALIBRATION_ENV,
        module=PREDICTION_MODULE,
    shell:
        "{params.env}{params.py} {params.module} table {input.summary} {input.shapes} --out {output} > {log} 2>&1"


rule model_error:
    input:
        summary="results/summary.csv",
        prediction="results/prediction.csv",
    output:
        report(
            "results/model_error.csv",
            caption="../report/model_error.rst",
            category="Tables",
            labels={"table": "model_error.csv"},
        ),
    log:
        "results/logs/model_error.log",
    params:
        py=PY,
        param=config.get("report", {}).get("granularity_param", "work_us"),
    shell:
        "{params.py} -m tickpar.report.model_error {input.summary} {input.prediction} --param {params.param}"
        " --out {output} > {log} 2>&1"
