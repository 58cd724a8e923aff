"""``python -m tickpar.perf.timing``: the pyperf worker script (:func:`tickpar.perf.timing.main`)."""

from tickpar.perf.timing import main

main()
