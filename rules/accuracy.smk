# Accuracy against speed for relaxed strategies: summary.csv -> results/accuracy.csv (tickpar/pipeline/accuracy.py)
# -> the accuracy-speed figure of the report (tickpar/report/accuracy.py).

REPORT_OUTPUTS["accuracy_csv"] = "results/accuracy.csv"  # rule all builds every REPORT_OUTPUTS entry
REPORT_OUTPUTS["accuracy"] = f"results/report/accuracy.{FMT}"


rule accuracy:
    input:
        summary="results/summary.csv",
    output:
        accuracy=report(
            REPORT_OUTPUTS["accuracy_csv"],
            caption="../report/accuracy_table.rst",
            category="Tables",
            labels={"table": "accuracy.csv"},
        ),
    log:
        "results/logs/accuracy.log",
    script:
        "../report/scripts/accuracy.py"


rule accuracy_figure:
    input:
        accuracy=REPORT_OUTPUTS["accuracy_csv"],
    output:
        figure=report(
            REPORT_OUTPUTS["accuracy"],
            caption="../report/accuracy.rst",
            category="Accuracy",
            labels={"figure": "accuracy vs speed"},
        ),
    log:
        "results/logs/accuracy_figure.log",
    script:
        "../report/scripts/accuracy_figure.py"
