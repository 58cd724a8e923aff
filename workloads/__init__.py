"""tickpar's built-in workloads; installed as the package ``tickpar.builtin.workloads`` (see pyproject.toml).

Add a workload as a new file in this folder: the registry scans it in a
checkout, and an install ships it.  Files starting with ``_`` (this one) are
not plugins.
"""
