"""tickpar's built-in workloads; installed as the package ``tickpar.builtin.workloads`` (see pyproject.toml).

Add a workload as a new file or package folder in this folder (``multicore/`` is one): the
registry scans it in a checkout, and an install ships it.  Files and folders starting with ``_``
(this one) are not plugins.
"""
