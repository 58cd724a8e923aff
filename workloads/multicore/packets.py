"""multicore's packets: their commands (gem5's ``MemCmd``), their tuple layout and the address geometry.

Payloads are tuples of ints: ``(cmd, addr, issue_tick)`` between a CPU and its L1, ``(cmd, line, core)``
between an L1 and an L2 bank, ``(cmd, line, bank)`` between an L2 bank and a memory controller.
"""

from __future__ import annotations

LINE_BYTES = 64
LINE_SHIFT = 6
PAGE_LINES = 64  # lines per DRAM page / row-interleaving unit (4 KiB)
REUSE_SLOTS = 8  # run starts a CPU remembers for temporal locality
PRIVATE_SHIFT = 36  # CPU i's private region starts at (i + 1) << 36; the shared one at 0

# Packet commands (gem5 MemCmd names).
READ_REQ = 1
WRITE_REQ = 2
READ_RESP = 3
WRITE_RESP = 4
READ_EX_REQ = 5
WRITEBACK_DIRTY = 6

Packet = tuple[int, ...]
