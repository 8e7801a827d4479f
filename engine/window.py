"""A contiguous window buffer: arrivals at the back, expiry from the front."""

from __future__ import annotations

import numpy as np

from .memory import array_bytes, deep_size


class WindowBuffer:
    """Columns of the objects in a window, kept contiguous for vectorised scans.

    A linear buffer with head and tail indices that is compacted (and grown) when the tail
    reaches its end: appends and expiries cost ``O(1)`` amortised per object, and every
    column of the live window is one contiguous view.

    Examples
    --------
    >>> import numpy as np
    >>> buf = WindowBuffer({"seq": np.int64, "score": np.float64})
    >>> buf.append(seq=np.arange(5), score=np.ones(5))
    >>> buf.expire_before("seq", 3)
    3
    >>> buf.view("seq").tolist()
    [3, 4]
    """

    def __init__(self, columns: dict[str, tuple | type], capacity: int = 1024) -> None:
        self._specs = {name: spec if isinstance(spec, tuple) else (spec, ()) for name, spec in columns.items()}
        self._cols = {name: np.empty((capacity, *shape), dtype) for name, (dtype, shape) in self._specs.items()}
        self._head = 0
        self._tail = 0
        self._overhead = 0
        self._overhead = deep_size(self, exclude=tuple(self._cols.values()))

    def __len__(self) -> int:
        return self._tail - self._head

    def append(self, **values: np.ndarray) -> None:
        """Add objects at the back (``O(m)`` amortised)."""
        m = len(next(iter(values.values())))
        if self._tail + m > self.capacity:
            self._make_room(m)
        for name, column in self._cols.items():
            column[self._tail:self._tail + m] = values[name]
        self._tail += m

    def _make_room(self, m: int) -> None:
        live = len(self)
        capacity = self.capacity
        if live + m > capacity // 2:
            capacity = max(2 * (live + m), capacity)
        for name, column in self._cols.items():
            fresh = np.empty((capacity, *column.shape[1:]), column.dtype)
            fresh[:live] = column[self._head:self._tail]
            self._cols[name] = fresh
        self._head, self._tail = 0, live

    def placement(self) -> dict[str, int]:
        """The buffer's capacity and the row of its oldest object: :meth:`place` gives a restored
        buffer the same, so it grows (and measures) as the buffer it was saved from."""
        return {"capacity": self.capacity, "head": self._head}

    def place(self, capacity: int, head: int) -> None:
        """Empty the buffer into columns of ``capacity`` rows, the next append starting at row
        ``head`` (``O(capacity)``); a placement that is not two integers with
        ``0 <= head <= capacity``, ``capacity >= 1``, raises ``ValueError``."""
        if not all(isinstance(value, int) and not isinstance(value, bool) for value in (capacity, head)) \
                or not 0 <= head <= capacity or capacity < 1:
            raise ValueError(f"buffer placement must be integers 0 <= head <= capacity, capacity >= 1, "
                             f"got {capacity!r}, {head!r}")
        self._cols = {name: np.empty((capacity, *column.shape[1:]), column.dtype) for name, column in self._cols.items()}
        self._head = self._tail = head

    def expire_before(self, column: str, bound: int) -> int:
        """Drop the front objects whose non-decreasing ``column`` is below ``bound``."""
        dropped = int(np.searchsorted(self.view(column), bound, side="left"))
        self._head += dropped
        return dropped

    @property
    def capacity(self) -> int:
        """Objects the buffer can hold before it is compacted or grown (``O(1)``)."""
        return len(self._cols[next(iter(self._cols))])

    def measured_bytes(self) -> int:
        """Real size: every column at its capacity plus the buffer object (``O(columns)``).

        The buffer object (its attributes, the column specs and the dict of columns) keeps its
        size for life, so it is measured once, when the buffer is made.
        """
        return array_bytes(self._cols.values()) + self._overhead

    def view(self, column: str) -> np.ndarray:
        """The live window's column, oldest first (a view: do not keep it across appends)."""
        return self._cols[column][self._head:self._tail]
