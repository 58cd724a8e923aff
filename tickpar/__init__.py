"""tickpar: which ways of running a gem5-style event loop in parallel are correct, and how fast.

The kernel is :mod:`tickpar.eventq` (gem5's event queue), the model API is
:mod:`tickpar.model`, the oracle :mod:`tickpar.oracle`, plugin contracts
:mod:`tickpar.plugins` and discovery :mod:`tickpar.registry`.
"""

__version__ = "0.1.0"
