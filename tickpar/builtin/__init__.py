"""tickpar's built-in plugins, as installed: the checkout's top-level ``strategies/`` and ``workloads/``.

pyproject.toml maps those folders to the packages ``tickpar.builtin.strategies``
and ``tickpar.builtin.workloads`` and names each package in the entry-point
group ``tickpar.strategies`` / ``tickpar.workloads``, so an installed tickpar
(``pip install .``) finds its built-in plugins without a checkout.  In a
checkout the files stay where users add theirs; the registry scans the folders
and counts a file found both ways once (:mod:`tickpar.registry`).
"""
