"""``python -m tickpar.gem5.fit --trace T --out OUT [...]``: the pipeline's fit job (rules/synthetic.smk).

As ``tickpar trace-fit TRACE --json OUT``, except that a trace that cannot be fitted (missing, bad) is
this run's result rather than the sweep's end: OUT then holds ``{"run", "trace", "error"}`` and the
"Synthetic against real" page says so.
"""

from __future__ import annotations

import argparse
import json
import sys

from tickpar.gem5.fit import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_EVENTS, fit_trace, summary_lines
from tickpar.runner import write_json_atomic


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tickpar.gem5.fit", description=__doc__)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--run", required=True, help="the run's name in the config (the page's heading)")
    parser.add_argument("--components", default=None)
    parser.add_argument("--fixed", default="{}", help="pinned workload parameters, a JSON object")
    parser.add_argument("--max-candidates", type=int, default=DEFAULT_MAX_CANDIDATES)
    parser.add_argument("--max-events", type=int, default=DEFAULT_MAX_EVENTS)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        result = fit_trace(
            args.trace,
            components=args.components or None,
            fixed=json.loads(args.fixed),
            max_candidates=args.max_candidates,
            max_events=args.max_events,
            jobs=args.jobs,
            name=f"fit-{args.run}",
        )
    except Exception as exc:  # a run that cannot be fitted is this job's result: the page says so
        error = f"{type(exc).__name__}: {exc}"
        write_json_atomic(args.out, {"run": args.run, "trace": args.trace, "error": error})
        print(f"fit of {args.run} ({args.trace}) failed: {error}")
        return 0
    write_json_atomic(args.out, result | {"run": args.run})
    print("\n".join(summary_lines(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
