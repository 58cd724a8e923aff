# The report's failure pages: for each strategy in the config's `failures.cells`, shrink its failing
# cell within `failures.budget_s`, explain it and draw its timeline (tickpar/report/failures.py).
# A few seconds per page: small cells, a bounded shrink; split's page also measures its failure rate.

FAILURES = config.get("failures") or {}
FAILURE_OUTPUTS = [f"results/report/failures/{s}.html" for s in (FAILURES.get("cells") or {})]


rule failure_page:
    output:
        report(
            "results/report/failures/{strategy}.html",
            caption="../report/failures.rst",
            category="Failures",
            labels={"page": "{strategy}"},
        ),
    params:
        failures=FAILURES,
        outdir="results/report/failures",
    log:
        "results/logs/failures/{strategy}.log",
    priority: 5
    resources:
        load=1,
    script:
        "../report/scripts/failures.py"
