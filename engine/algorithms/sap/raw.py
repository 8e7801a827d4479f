"""SAP's raw slides: the retained best ``k`` of every slide whose partition may still need
them, kept in one ring of records with an index by slide (no array or dict entry per slide)."""

from __future__ import annotations

import sys

import numpy as np

from ...kernels import sap as kernels

RAW = kernels.RAW

MIN_ROWS, MIN_SLOTS = 16, 8
"""The smallest ring and index a rebuild makes."""

SHORT_SPAN = 4
"""Up to this many slides, :meth:`RawSlides.span` reads them one by one without a kernel call."""


def _power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class RawSlides:
    """The raw slides kept, oldest to newest: ``rows``, a ring of :data:`RAW` records in which
    each slide's rows are consecutive, best first, and ``cells``, the index
    (:data:`engine.kernels.sap.RAW_META` and the slots): two views of one int64 array ``ring``,
    the index first (what :func:`engine.kernels.sap.quiet_slide_raw` takes).

    A slide is added after the newest rows (:meth:`reserve`, or :func:`engine.kernels.sap.quiet_slide_raw`
    in a quiet slide) and dropped from anywhere (:meth:`drop`); the rows of dropped slides are
    reused once the oldest kept slide has passed them.  When neither the end of the ring nor
    its start has room, or the slots do not span the slides, the ring is rebuilt with twice the
    rows and slots needed (:meth:`_rebuild`, ``O(rows kept)``, amortised ``O(1)`` per row).
    """

    __slots__ = ("ring", "rows", "cells")

    def __init__(self, capacity: int = 0, slots: int = MIN_SLOTS) -> None:
        index = kernels.RAW_META + 3 * slots
        self.ring = np.zeros(index + 4 * capacity, np.int64)
        self.ring[kernels.RAW_SLOTS] = slots
        self.cells = self.ring[:index]
        self.rows = self.ring[index:].view(RAW)

    def __len__(self) -> int:
        """How many slides are kept."""
        return int(self.cells[kernels.RAW_SLIDES])

    @property
    def size(self) -> int:
        """How many rows are kept."""
        return int(self.cells[kernels.RAW_SIZE])

    @property
    def slots(self) -> int:
        return (len(self.cells) - kernels.RAW_META) // 3

    def nbytes(self) -> int:
        """Bytes of the ring and the index (their array's header and data, and their views')."""
        return sys.getsizeof(self.ring) + sys.getsizeof(self.rows) + sys.getsizeof(self.cells)

    def get(self, slide: int, default=None):
        """The rows of ``slide`` (a view, best first), or ``default`` if it is not kept (read
        here: a kernel call would cost more)."""
        cells = self.cells
        slot = kernels.RAW_META + 3 * (slide & (self.slots - 1))
        count = cells.item(slot + 2)
        if not count or cells.item(slot) != slide:
            return default
        start = cells.item(slot + 1)
        return self.rows[start:start + count]

    def span(self, slides: range) -> list[np.ndarray]:
        """The rows of the kept slides of ``slides`` (views, in the range's order), one kernel
        call (``O(len(slides))``)."""
        if len(slides) <= SHORT_SPAN:
            return [rows for rows in map(self.get, slides) if rows is not None]
        ends = sorted((slides[0], slides[-1]))
        _, starts, counts = kernels.raw_span(self.cells, ends[0], ends[1])
        rows = self.rows
        views = [rows[start:start + count] for start, count in zip(starts.tolist(), counts.tolist())]
        return views if slides.step > 0 else views[::-1]

    def gather(self, slides: range, theta: tuple | None) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the kept slides of ``slides`` (in the range's order) whose best object
        ranks above the key ``theta`` (all if None), copied into one record array, and the
        slides' bounds in it (:func:`engine.kernels.sap.raw_gather`, one kernel call)."""
        if not len(slides):
            return self.rows[:0], np.zeros(1, np.int64)
        newest_first = slides.step < 0
        first, last = (slides[-1], slides[0]) if newest_first else (slides[0], slides[-1])
        key = (float(theta[0]), int(theta[1]), True) if theta is not None else (0.0, 0, False)
        return kernels.raw_gather(self.rows, self.cells, first, last, newest_first, *key)

    def starts(self) -> list[tuple[int, int, int]]:
        """``(slide, first row, rows)`` of every kept slide, oldest first (``O(span)``)."""
        if not len(self):
            return []
        cells = self.cells
        found = kernels.raw_span(cells, int(cells[kernels.RAW_OLDEST]), int(cells[kernels.RAW_NEWEST]))
        return list(zip(*(column.tolist() for column in found)))

    def items(self) -> list[tuple[int, np.ndarray]]:
        """``(slide, rows)`` of every kept slide, oldest first."""
        return [(slide, self.rows[start:start + count]) for slide, start, count in self.starts()]

    def reserve(self, slide: int, count: int) -> tuple[np.ndarray, int]:
        """Room for ``count`` rows of ``slide`` (newer than every kept slide), recorded: the
        view the caller writes them into, and the bytes the ring and index gained (a rebuild)."""
        start = kernels.raw_reserve(len(self.rows), self.cells, slide, count)
        grown = 0
        if start < 0:
            grown = -self.nbytes()
            self._rebuild(slide, count)
            grown += self.nbytes()
            start = kernels.raw_reserve(len(self.rows), self.cells, slide, count)
        return self.rows[start:start + count], grown

    def drop(self, slide: int) -> int:
        """Forget ``slide``; returns how many rows it had (0 if it was not kept)."""
        return int(kernels.raw_drop(self.cells, slide))

    def drop_span(self, first: int, last: int) -> int:
        """Forget the slides from ``first`` to ``last``; returns how many rows they had."""
        return int(kernels.raw_drop_span(self.cells, first, last))

    def _rebuild(self, slide: int, count: int) -> None:
        """A ring and an index with twice the room needed for the kept slides and ``count`` rows
        of ``slide``: the kept slides copied to its start, oldest first."""
        oldest = int(self.cells[kernels.RAW_OLDEST]) if len(self) else slide
        fresh = RawSlides(max(MIN_ROWS, 2 * (self.size + count)), max(MIN_SLOTS, _power_of_two(2 * (slide - oldest + 1))))
        kernels.raw_copy(self.rows, self.cells, fresh.rows, fresh.cells)
        self.ring, self.rows, self.cells = fresh.ring, fresh.rows, fresh.cells

    def layout(self) -> dict:
        """The ring's shape, for a state: its rows and slots, the next free row and each kept
        slide's first row (so a restored ring fills and is rebuilt as this one)."""
        return {"rows": len(self.rows), "slots": self.slots, "head": int(self.cells[kernels.RAW_HEAD]),
                "starts": [start for _, start, _ in self.starts()]}

    @classmethod
    def restore(cls, slides: list[tuple[int, np.ndarray]], layout: dict | None) -> "RawSlides":
        """The ring holding ``slides`` (oldest first), laid out as ``layout`` says (None: as
        :meth:`reserve` lays them out from an empty ring, for states saved before the ring)."""
        if layout is None:
            raw = cls()
            for slide, records in slides:
                raw.reserve(slide, len(records))[0][:] = records
            return raw
        rows, slots, head = (int(layout[key]) for key in ("rows", "slots", "head"))
        starts = [int(start) for start in layout["starts"]]
        if slots < 1 or slots & (slots - 1) or len(starts) != len(slides) or not 0 <= head <= rows:
            raise ValueError("the raw slides' layout does not fit its slides")
        raw = cls(rows, slots)
        span = slides[-1][0] - slides[0][0] + 1 if slides else 0
        if span > slots:
            raise ValueError("the raw slides' layout does not fit its slides")
        for (slide, records), start in zip(slides, starts):
            if not 0 <= start <= rows - len(records) or not len(records):
                raise ValueError("the raw slides' layout does not fit its slides")
            kernels.raw_place(raw.cells, slide, start, len(records))
            raw.rows[start:start + len(records)] = records
        raw.cells[kernels.RAW_HEAD] = head
        raw.check()
        return raw

    def check(self) -> None:
        """The index against the ring: the kept slides' rows lie in the ring without
        overlapping, the oldest's first row is the tail, the counts are the slides' and the
        slots span them (``O(span)``)."""
        cells, kept = self.cells, self.starts()
        assert cells[kernels.RAW_SLOTS] == self.slots and len(self.ring) == len(cells) + 4 * len(self.rows), \
            "the index and the records are not the ring's array"
        assert len(kept) == len(self), "the raw slides' count"
        assert sum(count for _, _, count in kept) == self.size, "the raw rows' count"
        if not kept:
            assert cells[kernels.RAW_HEAD] == 0 and cells[kernels.RAW_TAIL] == 0
            return
        assert kept[-1][0] - kept[0][0] < self.slots, "the slots do not span the raw slides"
        assert cells[kernels.RAW_TAIL] == kept[0][1], "the tail is not the oldest raw slide's first row"
        ranges = sorted((start, start + count) for _, start, count in kept)
        assert ranges[0][0] >= 0 and ranges[-1][1] <= len(self.rows), "a raw slide outside the ring"
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), "raw slides overlap in the ring"
        # in ring order from the tail, the kept slides come oldest first and end by the head
        capacity, tail, head = len(self.rows), int(cells[kernels.RAW_TAIL]), int(cells[kernels.RAW_HEAD])
        offsets = [(start - tail) % capacity for _, start, _ in kept]
        assert offsets == sorted(offsets), "the raw slides are not in ring order"
        assert offsets[-1] + kept[-1][2] <= ((head - tail) % capacity or capacity), "a raw slide beyond the head"
