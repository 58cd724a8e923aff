"""Layer ``host``: the machine and the processes tickpar runs on, nothing about simulation.

Holds :mod:`~tickpar.host.paths` (the package and checkout folders), :mod:`~tickpar.host.atomic`
(writing a JSON record atomically), :mod:`~tickpar.host.envinfo`
(the environment every record carries: CPU, interpreter, GIL state, versions),
:mod:`~tickpar.host.interpreters` (the interpreters cells run under: default, free-threaded),
:mod:`~tickpar.host.procgroup` (killing a process group), :mod:`~tickpar.host.orchestrator`
(pausing Snakemake while a timing job measures) and :mod:`~tickpar.host.progress` (progress lines).

May import: nothing of tickpar (the bottom layer, beside the kernel).
"""
