"""tickpar's built-in strategies; installed as the package ``tickpar.builtin.strategies`` (see pyproject.toml).

Add a strategy as a new file in this folder: the registry scans it in a
checkout, and an install ships it.  Files starting with ``_`` (this one, and a
strategy's helper modules such as ``_split_interleaver.py``) are not plugins.
"""
