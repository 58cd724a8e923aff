"""Layer ``verify``: what a run yields and how it is judged against the sequential run.

Holds :mod:`~tickpar.verify.oracle` (the :class:`~tickpar.verify.oracle.OracleRecord` a run
yields, the verdicts and :func:`~tickpar.verify.oracle.compare`) and :mod:`~tickpar.verify.anatomy`
(the steps that led to a non-exact verdict, built from a record or a strategy's replay;
:func:`tickpar.runner.explain` picks between them).

May import: ``tickpar.kernel``, ``tickpar.host``.
"""
