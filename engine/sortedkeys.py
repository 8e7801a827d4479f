"""A sorted sequence of keys in blocks: the ordered index under MinTopK's linked list."""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from typing import Any, Iterator

_LOAD = 512


class SortedKeys:
    """Distinct, comparable keys in ascending order, stored as blocks of at most ``2 * LOAD``.

    Like ``sortedcontainers.SortedList`` (the same list-of-lists design) but with the one
    operation MinTopK needs fused: :meth:`insert` returns the key directly above the new one,
    so positioning an object costs one call.  ``insert`` and ``remove`` cost ``O(log n)``
    comparisons plus moving at most ``2 * LOAD`` pointers.  MinTopK over it processes 11-15 %
    more objects/s than over ``SortedList`` (``add``, then ``bisect_right`` and indexing for
    the neighbour) on uniform scores and 27 % more on a decreasing stream, where the list holds
    ``C_nw * k`` records (``make bench``, ``benchmarks/bench_mintopk.py``, section ``index``).

    Examples
    --------
    >>> keys = SortedKeys()
    >>> keys.insert(5), keys.insert(9), keys.insert(7)
    (None, None, 9)
    >>> keys.remove(9); list(keys)
    [5, 7]
    >>> keys.remove(9)
    Traceback (most recent call last):
    ...
    KeyError: 9
    """

    def __init__(self) -> None:
        self._blocks: list[list] = []
        self._maxes: list = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        for block in self._blocks:
            yield from block

    def insert(self, key: Any) -> Any:
        """Add ``key``; return the smallest key above it, or ``None`` (``O(log n)``)."""
        blocks, maxes = self._blocks, self._maxes
        self._size += 1
        if not maxes:
            blocks.append([key])
            maxes.append(key)
            return None
        b = bisect_right(maxes, key)
        if b == len(maxes):
            b -= 1
            block = blocks[b]
            block.append(key)
            maxes[b] = key
            above = None
        else:
            block = blocks[b]
            i = bisect_right(block, key)
            block.insert(i, key)
            above = block[i + 1]
        if len(block) > 2 * _LOAD:
            blocks.insert(b + 1, block[_LOAD:])
            del block[_LOAD:]
            maxes.insert(b, block[-1])
        return above

    def measured_bytes(self) -> int:
        """Real size of the blocks and their index (``O(n / LOAD)``); the keys are the caller's."""
        return sys.getsizeof(self) + sys.getsizeof(self.__dict__) + sys.getsizeof(self._blocks) \
            + sys.getsizeof(self._maxes) + sum(sys.getsizeof(block) for block in self._blocks)

    def remove(self, key: Any) -> None:
        """Remove ``key``; ``KeyError`` if it is absent (``O(log n)``)."""
        b = bisect_left(self._maxes, key)
        if b == len(self._maxes):
            raise KeyError(key)
        block = self._blocks[b]
        i = bisect_left(block, key)
        if i == len(block) or block[i] != key:
            raise KeyError(key)
        del block[i]
        self._size -= 1
        if block:
            self._maxes[b] = block[-1]
        else:
            del self._blocks[b], self._maxes[b]
