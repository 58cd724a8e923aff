# summary.csv + prediction.csv (+ the engine benchmark's record) -> the answer page (first in the PDF and, as
# category "Answer", in the HTML report), captioned figures, findings, environment, the timing appendix (last:
# category "Timing diagnostics (appendix)"), results/answer.csv and results/report.pdf
# (tickpar/report/render.py, its pages in tickpar.report.render.PAGES).
# The HTML report is Snakemake's: snakemake --report results/report.html (categories sort by name).

REPORT_OUTPUTS.update(
    answer="results/report/answer.html",
    appendix="results/report/appendix.html",
    answer_csv="results/answer.csv",
)


rule report_files:
    input:
        summary="results/summary.csv",
        prediction="results/prediction.csv",
        failures=FAILURE_OUTPUTS,  # rules/failures.smk: their pages go into the PDF too
        traces=TRACE_OUTPUTS,  # rules/traces.smk: the gem5 trace pages, in the PDF too (none without traces)
        synthetic=SYNTHETIC_OUTPUTS,  # rules/synthetic.smk: "Synthetic against real", in the PDF too (or none)
        engine=ENGINE_BENCH_OUTPUTS,  # rules/engine.smk: the environment page's engine table (none when off)
        calibration=["results/calibration.json"] if NATIVE_CALIBRATION else [],  # rules/bounds.smk: native costs
    output:
        answer=report(
            REPORT_OUTPUTS["answer"],
            caption="../report/answer.rst",
            category="Answer",
            labels={"page": "answer"},
        ),
        answer_csv=report(
            REPORT_OUTPUTS["answer_csv"],
            caption="../report/answer_csv.rst",
            category="Answer",
            labels={"page": "answer.csv"},
        ),
        appendix=report(
            REPORT_OUTPUTS["appendix"],
            caption="../report/appendix.rst",
            category="Timing diagnostics (appendix)",
            labels={"page": "appendix"},
        ),
        speedup=report(
            REPORT_OUTPUTS["speedup"],
            caption="../report/speedup.rst",
            category="Performance",
            labels={"figure": "speedup vs workers"},
        ),
        efficiency=report(
            REPORT_OUTPUTS["efficiency"],
            caption="../report/efficiency.rst",
            category="Performance",
            labels={"figure": "parallel efficiency"},
        ),
        breakeven=report(
            REPORT_OUTPUTS["breakeven"],
            caption="../report/breakeven.rst",
            category="Performance",
            labels={"figure": "speedup vs work per event"},
        ),
        interpreters=report(
            REPORT_OUTPUTS["interpreters"],
            caption="../report/interpreters.rst",
            category="Interpreters",
            labels={"figure": "speedup vs work per event, per interpreter"},
        ),
        ft_cost=report(
            REPORT_OUTPUTS["ft_cost"],
            caption="../report/ft_cost.rst",
            category="Interpreters",
            labels={"figure": "free-threaded single-thread cost"},
        ),
        engines=report(
            REPORT_OUTPUTS["engines"],
            caption="../report/engines.rst",
            category="Engines",
            labels={"figure": "python and native engines"},
        ),
        scaling=report(
            REPORT_OUTPUTS["scaling"],
            caption="../report/scaling.rst",
            category="Performance",
            labels={"figure": "predicted scaling"},
        ),
        optimism=report(
            REPORT_OUTPUTS["optimism"],
            caption="../report/optimism.rst",
            category="Performance",
            labels={"figure": "optimistic vs conservative"},
        ),
        time_per_event=report(
            REPORT_OUTPUTS["time_per_event"],
            caption="../report/time_per_event.rst",
            category="Overhead",
            labels={"figure": "time per event"},
        ),
        overhead=report(
            REPORT_OUTPUTS["overhead"],
            caption="../report/overhead.rst",
            category="Overhead",
            labels={"figure": "synchronisation overhead"},
        ),
        correctness=report(
            REPORT_OUTPUTS["correctness"],
            caption="../report/correctness.rst",
            category="Correctness",
            labels={"figure": "correctness matrix"},
        ),
        findings=report(
            REPORT_OUTPUTS["findings"],
            caption="../report/findings.rst",
            category="Findings",
            labels={"page": "findings"},
        ),
        environment=report(
            REPORT_OUTPUTS["environment"],
            caption="../report/environment.rst",
            category="Findings",
            labels={"page": "environment"},
        ),
        pdf=report(
            REPORT_OUTPUTS["pdf"],
            caption="../report/pdf.rst",
            category="Tables",
            labels={"table": "report.pdf"},
        ),
    params:
        report=config["report"],
        description=config.get("description", ""),
        source=CONFIG_SOURCE,
    log:
        "results/logs/report.log",
    script:
        "../report/scripts/render.py"
