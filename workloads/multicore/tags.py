"""multicore's tag arrays: set-associative, true LRU, dirty bits, and an undo log for engines that roll back."""

from __future__ import annotations


class UndoSegment(list):  # type: ignore[type-arg]
    """The changes a :class:`LoggedTagArray` made after one save: ``(set, old ways or None, ((line, was
    dirty), ...))`` each; ``next`` is the segment of the following save."""

    __slots__ = ("next",)

    def __init__(self) -> None:
        super().__init__()
        self.next: UndoSegment | None = None


class TagArray:
    """A set-associative tag array with true LRU replacement and dirty bits.

    Lines are line addresses (``addr >> 6``); the set is
    ``(line // interleave) % sets``, so a bank that only sees every
    ``interleave``-th line still uses all of its sets.  Each set is a list in
    LRU order: index 0 is least recently used.
    """

    __slots__ = ("_saved_log", "assoc", "dirty", "interleave", "sets", "ways")

    def __init__(self, sets: int, assoc: int, interleave: int = 1) -> None:
        if sets < 1 or assoc < 1 or interleave < 1:
            raise ValueError(f"tag array needs sets, assoc, interleave >= 1 (got {sets}, {assoc}, {interleave})")
        self.sets = sets
        self.assoc = assoc
        self.interleave = interleave
        self.ways: list[list[int]] = [[] for _ in range(sets)]
        self.dirty: set[int] = set()
        #: The newest segment of :class:`LoggedTagArray`'s undo log (engines that roll back); None until a save.
        self._saved_log: UndoSegment | None = None

    def set_of(self, line: int) -> list[int]:
        return self.ways[(line // self.interleave) % self.sets]

    def access(self, line: int) -> bool:
        """Timing lookup: True on a hit, which also makes the line most recently used."""
        ways = self.ways[(line // self.interleave) % self.sets]
        if line in ways:
            if ways[-1] != line:
                ways.remove(line)
                ways.append(line)
            return True
        return False

    def probe(self, line: int) -> bool:
        """Functional lookup: True if present; LRU order unchanged."""
        return line in self.ways[(line // self.interleave) % self.sets]

    def insert(self, line: int, dirty: bool) -> tuple[int, bool]:
        """Insert ``line`` as most recently used; returns ``(victim, victim_dirty)``, victim -1 if none.

        ``line`` must not be present (callers look it up first).
        """
        ways = self.ways[(line // self.interleave) % self.sets]
        victim, victim_dirty = -1, False
        if len(ways) >= self.assoc:
            victim = ways.pop(0)
            if victim in self.dirty:
                self.dirty.discard(victim)
                victim_dirty = True
        ways.append(line)
        if dirty:
            self.dirty.add(line)
        return victim, victim_dirty

    def save_state(self) -> UndoSegment:
        """A mark in an undo log (for engines that roll back): incremental, since copying every set at
        every save is costly (docs/measurements/2026-12-02-small-costs.md).  The first save turns this array into a
        :class:`LoggedTagArray` in place, which logs each set and each line's dirty bit before changing them;
        runs that never save never pay for it.

        The log is a chain of segments, one per save, each linked to the next (newer) one; a save returns
        its segment, and only the saves still held keep their part of the chain alive."""
        if self.__class__ is TagArray:
            self.__class__ = LoggedTagArray
        segment = UndoSegment()
        current = self._saved_log
        if current is not None:
            current.next = segment
        self._saved_log = segment
        return segment

    def restore_state(self, segment: UndoSegment) -> None:
        """Undo every change logged since the save that returned ``segment``, newest first."""
        chain = []
        seg: UndoSegment | None = segment
        while seg is not None:
            chain.append(seg)
            seg = seg.next
        ways, dirty = self.ways, self.dirty
        for seg in reversed(chain):
            for set_index, old_ways, lines in reversed(seg):
                if old_ways is not None:
                    ways[set_index] = old_ways
                for line, was_dirty in lines:
                    if was_dirty:
                        dirty.add(line)
                    else:
                        dirty.discard(line)
        segment.clear()
        segment.next = None
        self._saved_log = segment

    def lru_order(self, line: int) -> list[int]:
        """The lines of ``line``'s set, least recently used first (for tests and debugging)."""
        return list(self.set_of(line))

    def state(self) -> tuple[int, int, int]:
        """(valid lines, dirty lines, a checksum of the contents in LRU order)."""
        valid = 0
        check = 0
        for index, ways in enumerate(self.ways):
            for pos, line in enumerate(ways):
                valid += 1
                check = (check * 1_000_003 + line * 31 + pos * 7 + index) % ((1 << 61) - 1)
        return (valid, len(self.dirty), check)


class LoggedTagArray(TagArray):
    """A :class:`TagArray` that logs what it changes (see :meth:`TagArray.save_state`).

    ``access`` logs the set (when the line moves) and the line's dirty bit
    (callers set it right after a hit: ``tags.dirty.add(line)``); ``insert``
    logs the set and the dirty bits of the line and of its victim.
    """

    __slots__ = ()

    def access(self, line: int) -> bool:
        index = (line // self.interleave) % self.sets
        ways = self.ways[index]
        if line in ways:
            log = self._saved_log
            if ways[-1] != line:
                log.append((index, ways[:], ((line, line in self.dirty),)))  # type: ignore[union-attr]
                ways.remove(line)
                ways.append(line)
            else:
                log.append((index, None, ((line, line in self.dirty),)))  # type: ignore[union-attr]
            return True
        return False

    def insert(self, line: int, dirty: bool) -> tuple[int, bool]:
        index = (line // self.interleave) % self.sets
        ways = self.ways[index]
        if len(ways) >= self.assoc:
            victim = ways[0]
            lines = ((line, line in self.dirty), (victim, victim in self.dirty))
        else:
            lines = ((line, line in self.dirty),)
        self._saved_log.append((index, ways[:], lines))  # type: ignore[union-attr]
        return TagArray.insert(self, line, dirty)
