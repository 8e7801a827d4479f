"""The S-AVL of the SAP paper (Section 5.1): stacks plus a balanced structure over their tops.

An entry is an object ``(score, seq, id, t)``; its key ``(score, seq)`` is the total order
(equal scores, newer first).  Inside every stack, from bottom to top, keys increase and
objects get older (``F(S[j]) <= F(S[j+1])``, ``S[j].t >= S[j+1].t``): a top is the best and
the oldest object of its stack.  Both structures keep their entries in numpy columns (a pool
with a ``below`` link per entry); the work is done by the kernels of ``engine.kernels.sap``.
"""

from __future__ import annotations

import sys

import numpy as np

from ...jsondata import saved_capacity
from ...kernels import sap as kernels

ARRAY_HEADER = sys.getsizeof(np.empty(0))
"""Bytes of one numpy array header (the fixed overhead of every column)."""

NO_EXPIRY = 2 ** 63 - 1
"""The head key of an empty expiry queue: no bound passes it."""


def _sized(columns: list[np.ndarray], used: int, capacity: int) -> list[np.ndarray]:
    """The columns at exactly ``capacity`` entries, their first ``used`` kept (``O(capacity)``)."""
    sized = []
    for column in columns:
        out = np.empty(capacity, column.dtype)
        out[:used] = column[:used]
        sized.append(out)
    return sized


def _grow(columns: list[np.ndarray], used: int, needed: int) -> list[np.ndarray]:
    """The columns with room for ``needed`` entries (capacity doubled, ``O(used)`` amortised)."""
    capacity = len(columns[0])
    if needed <= capacity:
        return columns
    return _sized(columns, used, max(needed, 2 * capacity, 8))


class _Pool:
    """Entries in columns: score, seq, id, t and ``below`` (the entry under it, ``-1``)."""

    def __init__(self) -> None:
        self.score = np.empty(0, np.float64)
        self.seq = np.empty(0, np.int64)
        self.ids = np.empty(0, np.int64)
        self.t = np.empty(0, np.int64)
        self.below = np.empty(0, np.int64)

    def reserve(self, used: int, needed: int) -> None:
        if needed > len(self.score):
            self.score, self.seq, self.ids, self.t, self.below = _grow(
                [self.score, self.seq, self.ids, self.t, self.below], used, needed)

    def entry(self, i: int) -> tuple:
        return (float(self.score[i]), int(self.seq[i]), int(self.ids[i]), int(self.t[i]))

    def stack(self, top: int) -> list[tuple]:
        """The entries of the stack whose top is entry ``top``, bottom first."""
        out = []
        while top >= 0:
            out.append(self.entry(top))
            top = int(self.below[top])
        return out[::-1]

    def nbytes(self) -> int:
        """Bytes of the five columns at their capacity (``O(1)``)."""
        return 5 * ARRAY_HEADER + 40 * len(self.score)


class StackBuilder:
    """The construction of one S-AVL: ``capacity = k - P.rho`` stacks, objects newest first.

    :meth:`scan` takes the objects of ``P - P^k`` that passed global pruning, from the newest
    to the oldest.  The first ``capacity`` objects each open a stack; after that an object is
    pushed onto the stack whose top is the largest key below its own, or pruned when every top
    ranks above it (then ``capacity`` newer, better objects of ``P`` and ``P.rho`` candidates of
    later partitions dominate it: Lemma 2).  Replacing that top by a larger key keeps the
    order of the tops, so the sorted array of tops is updated in place (``O(log k)`` per
    object, :func:`engine.kernels.sap.savl_scan`).

    Examples
    --------
    >>> b = StackBuilder(capacity=3)
    >>> for seq, value in [(9, 30.0), (8, 31.0), (7, 36.0), (6, 34.0), (5, 20.0)]:
    ...     b.scan((value, seq, seq, seq))
    >>> [[e[0] for e in stack] for stack in b.stacks], b.pruned
    ([[30.0], [31.0, 34.0], [36.0]], 1)
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.pool = _Pool()
        self.top = np.empty(capacity, np.int64)
        self.order = np.empty(capacity, np.int64)
        self.meta = np.zeros(3, np.int64)  # stacks, entries, pruned

    def __len__(self) -> int:
        return int(self.meta[1])

    @property
    def pruned(self) -> int:
        return int(self.meta[2])

    @property
    def stack_count(self) -> int:
        return int(self.meta[0])

    @property
    def stacks(self) -> list[list[tuple]]:
        """Every stack, bottom first, in the order they were opened (``O(entries)``)."""
        return [self.pool.stack(int(self.top[i])) for i in range(self.stack_count)]

    def scan_rows(self, score: np.ndarray, seq: np.ndarray, ids: np.ndarray, t: np.ndarray,
                  rows: np.ndarray) -> None:
        """Offer the objects ``rows`` of the columns, newest first (``O(log k)`` each)."""
        self.pool.reserve(len(self), len(self) + len(rows))
        pool = self.pool
        kernels.savl_scan(pool.score, pool.seq, pool.ids, pool.t, pool.below, self.top, self.order, self.meta,
                          self.capacity, score, seq, ids, t, rows)

    def scan(self, entry: tuple) -> None:
        """Offer the next (older) object ``(score, seq, id, t)``: open a stack, push it, or prune it."""
        self.scan_rows(np.array([entry[0]], np.float64), *(np.array([v], np.int64) for v in entry[1:]),
                       np.zeros(1, np.int64))

    def nbytes(self) -> int:
        """Bytes of the pool and the arrays of stacks (``O(1)``)."""
        return self.pool.nbytes() + 3 * ARRAY_HEADER + 16 * self.capacity + 24

    def check(self) -> None:
        """Stacks ordered bottom to top by rising key and falling seq; the tops sorted."""
        stacks = self.stacks
        assert len(stacks) <= self.capacity
        assert sum(len(stack) for stack in stacks) == len(self), "entry count"
        for stack in stacks:
            assert stack, "empty stack"
            for lower, upper in zip(stack, stack[1:]):
                assert (lower[0], lower[1]) < (upper[0], upper[1]) and lower[1] > upper[1], "stack order"
        if len(stacks) == self.capacity:
            tops = [(stacks[i][-1][0], stacks[i][-1][1]) for i in self.order[:self.capacity].tolist()]
            assert tops == sorted(tops), "the array of tops is not sorted"

    @classmethod
    def restore(cls, capacity: int, stacks: list[list[tuple]], pruned: int) -> "StackBuilder":
        """The builder holding ``stacks`` (bottom first, in opening order) and ``pruned``."""
        if len(stacks) > capacity or any(not stack for stack in stacks):
            raise ValueError("an S-AVL under construction has more stacks than its capacity, or an empty one")
        builder = cls(capacity)
        entries = [entry for stack in stacks for entry in stack]
        pool = builder.pool
        pool.reserve(0, len(entries))
        index = 0
        for number, stack in enumerate(stacks):
            for depth, entry in enumerate(stack):
                pool.score[index], pool.seq[index], pool.ids[index], pool.t[index] = entry
                pool.below[index] = index - 1 if depth else -1
                index += 1
            builder.top[number] = index - 1
        builder.meta[:] = (len(stacks), len(entries), pruned)
        if len(stacks) == capacity:
            kernels._sort_tops(pool.score, pool.seq, builder.top, builder.order, capacity)
        return builder


class MeaningfulSet:
    """``M_0``: the stacks of every S-AVL built for the front partition ``P_0``.

    The stack tops are kept in a max-heap with a position per stack (the array form of the
    paper's AVL tree over the tops): the best meaningful object is the top of the stack at the
    root.  :meth:`pop_best` moves it out (into ``P_0^k``) and exposes the entry below it
    (``O(log k)``).  Tops are the oldest objects of their stacks, so objects leave by expiry
    from the tops too: :meth:`expire` walks the entries oldest first (``O(log k)`` per
    expired entry).

    Examples
    --------
    >>> m = MeaningfulSet(expiry_index=1)
    >>> m.absorb([[(1.0, 9, 0, 9), (5.0, 3, 0, 3)], [(4.0, 5, 0, 5)]])
    >>> m.pop_best()[0], m.best()[0], len(m)
    (5.0, 4.0, 2)
    >>> m.expire(6), len(m), m.best()[0]
    (1, 1, 1.0)
    """

    def __init__(self, expiry_index: int) -> None:
        self._expiry = expiry_index
        self.clear()

    def clear(self) -> None:
        """Forget every entry (``O(1)``; the columns are released)."""
        self._pool = _Pool()
        self._alive = np.empty(0, np.bool_)
        self._stack_of = np.empty(0, np.int64)
        self._top = np.empty(0, np.int64)
        self._heap = np.empty(0, np.int64)
        self._pos = np.empty(0, np.int64)
        self._queue = np.empty(0, np.int64)
        self._head = 0
        self._next_expiry = NO_EXPIRY  # the expiry key at the queue's head: no entry expires below it
        self._entries = 0
        self._stacks = 0
        # heap size (live stacks) and live entries, kept by the kernels; the columns' bytes, by _measure
        self.meta = np.zeros(3, np.int64)
        self._measure()

    def __len__(self) -> int:
        return int(self.meta[1])

    def __bool__(self) -> bool:
        return bool(self.meta[1])

    @property
    def stack_count(self) -> int:
        """Stacks with at least one entry (``O(1)``)."""
        return int(self.meta[0])

    def absorb_builder(self, builder: StackBuilder) -> None:
        """Add the finished stacks of ``builder`` (``O(E log E)`` for ``E`` entries in ``M_0``)."""
        n = len(builder)
        if not n:
            return
        pool = builder.pool
        self._add(pool.score[:n], pool.seq[:n], pool.ids[:n], pool.t[:n], pool.below[:n],
                  builder.top[:builder.stack_count])

    def absorb(self, stacks: list[list[tuple]]) -> None:
        """Add finished stacks given as lists of entries, bottom first."""
        builder = StackBuilder.restore(max(len(stacks), 1), [stack for stack in stacks if stack], 0)
        self.absorb_builder(builder)

    def _add(self, score, seq, ids, t, below, tops) -> None:
        base, stacks = self._entries, self._stacks
        n = len(score)
        pool = self._pool
        pool.reserve(base, base + n)
        pool.score[base:base + n], pool.seq[base:base + n] = score, seq
        pool.ids[base:base + n], pool.t[base:base + n] = ids, t
        pool.below[base:base + n] = np.where(below >= 0, below + base, -1)
        self._alive, self._stack_of = _grow([self._alive, self._stack_of], base, base + n)
        self._alive[base:base + n] = True
        for number, entry in enumerate(tops.tolist()):
            while entry >= 0:
                self._stack_of[base + entry] = stacks + number
                entry = int(below[entry])
        self._top, self._pos, self._heap = _grow([self._top, self._pos, self._heap], stacks, stacks + len(tops))
        self._top[stacks:stacks + len(tops)] = tops + base
        for number in range(len(tops)):
            kernels.m_push(self._heap, self._pos, self.meta, pool.score, pool.seq, self._top, stacks + number)
        self.meta[1] += n
        self._entries, self._stacks = base + n, stacks + len(tops)
        waiting = self._queue[self._head:]
        waiting = np.concatenate((waiting[self._alive[waiting]], np.arange(base, base + n)))
        self._queue = waiting[np.argsort(pool.seq[waiting], kind="stable")]  # seq order is expiry order
        self._head = 0
        self._next_expiry = self._key_at_head()
        self._measure()

    def layout(self) -> dict[str, int]:
        """What a restored copy needs to grow and measure as this set does (``O(1)``): the
        entries and stacks numbered so far (those gone included), the columns' capacities and
        the expiry queue's length."""
        return {"entries": self._entries, "stacks": self._stacks, "entry_capacity": len(self._pool.score),
                "stack_capacity": len(self._top), "queue": len(self._queue)}

    def lay_out(self, layout: dict) -> None:
        """Number and size the set as :meth:`layout` said, once :meth:`absorb` has put its live
        stacks back (``O(capacities)``): the live entries and stacks keep their places and the
        rest are gone ones; the expiry queue's live part ends it.  ``ValueError`` if the layout
        cannot hold what the set holds."""
        entries, stacks, entry_capacity, stack_capacity, queue = (
            saved_capacity(layout, name, 0) for name in ("entries", "stacks", "entry_capacity", "stack_capacity",
                                                          "queue"))
        waiting = self._queue[self._head:]
        if not (self._entries <= entries <= entry_capacity and len(self._pool.score) <= entry_capacity
                and self._stacks <= stacks <= stack_capacity and len(self._top) <= stack_capacity
                and len(waiting) <= queue):
            raise ValueError("the meaningful set's layout does not hold its stacks")
        pool, used, live_stacks = self._pool, self._entries, self._stacks
        pool.score, pool.seq, pool.ids, pool.t, pool.below = _sized(
            [pool.score, pool.seq, pool.ids, pool.t, pool.below], used, entry_capacity)
        self._alive, self._stack_of = _sized([self._alive, self._stack_of], used, entry_capacity)
        self._alive[used:] = False
        self._top, self._pos, self._heap = _sized([self._top, self._pos, self._heap], live_stacks, stack_capacity)
        self._top[live_stacks:] = -1
        self._queue = np.zeros(queue, np.int64)
        self._head = queue - len(waiting)
        self._queue[self._head:] = waiting
        self._entries, self._stacks = entries, stacks
        self._measure()

    def _keys(self) -> np.ndarray:
        return self._pool.seq if self._expiry == 1 else self._pool.t

    def best(self) -> tuple | None:
        """The best entry (``O(1)``)."""
        if not self:
            return None
        return self._pool.entry(int(self._top[self._heap[0]]))

    def pop_columns(self, count: int, above: tuple | None = None) -> tuple:
        """Remove up to ``count`` best entries (only those ranking above the key ``above``, if
        given); their columns ``(score, seq, id, t)``, best first (``O(log k)`` each)."""
        pool = self._pool
        key = above if above is not None else (0.0, 0)
        rows = kernels.m_pop_best(self._heap, self._pos, self.meta, pool.score, pool.seq, pool.below,
                                  self._alive, self._top, count, float(key[0]), int(key[1]), above is not None)
        return pool.score[rows], pool.seq[rows], pool.ids[rows], pool.t[rows]

    def pop_best(self) -> tuple:
        """Remove and return the best entry (``O(log k)``)."""
        columns = self.pop_columns(1)
        return (float(columns[0][0]), int(columns[1][0]), int(columns[2][0]), int(columns[3][0]))

    def expire(self, bound: int) -> int:
        """Drop entries whose expiry key is below ``bound``; returns how many (no kernel call
        while ``bound`` has not passed the key at the head of the expiry queue)."""
        if bound <= self._next_expiry or not self:
            return 0
        pool = self._pool
        head, gone = kernels.m_expire(self._heap, self._pos, self.meta, pool.score, pool.seq, pool.below,
                                      self._alive, self._top, self._stack_of, self._queue, self._head,
                                      self._keys(), bound)
        self._head = int(head)
        self._next_expiry = self._key_at_head()
        return int(gone)

    def _key_at_head(self) -> int:
        head = self._head
        return int(self._keys()[self._queue[head]]) if head < len(self._queue) else NO_EXPIRY

    def seqs(self) -> np.ndarray:
        """``seq`` of every entry (``O(entries)``)."""
        return self._pool.seq[:self._entries][self._alive[:self._entries]]

    def live_stacks(self) -> list[list[tuple]]:
        """Every stack with entries, bottom first (``O(entries)``)."""
        return [self._pool.stack(int(self._top[s])) for s in range(self._stacks) if self._top[s] >= 0]

    stacks = property(live_stacks)

    def entries(self) -> list[tuple]:
        return [entry for stack in self.live_stacks() for entry in stack]

    def nbytes(self) -> int:
        """Bytes of every column at its capacity (``O(1)``: measured when they are reallocated)."""
        return int(self.meta[2])

    def _measure(self) -> None:
        arrays = (self._alive, self._stack_of, self._top, self._heap, self._pos, self._queue, self.meta)
        self.meta[2] = self._pool.nbytes() + len(arrays) * ARRAY_HEADER + sum(array.nbytes for array in arrays)

    def check(self) -> None:
        stacks = self.live_stacks()
        count = 0
        for stack in stacks:
            for lower, upper in zip(stack, stack[1:]):
                assert (lower[0], lower[1]) < (upper[0], upper[1]) and lower[1] > upper[1], "stack order"
            count += len(stack)
        assert count == len(self), "the entry count disagrees with the stacks"
        assert self.stack_count == len(stacks), "the heap size disagrees with the stacks"
        score, seq = self._pool.score, self._pool.seq
        for i in range(1, self.stack_count):
            parent, child = self._top[self._heap[(i - 1) // 2]], self._top[self._heap[i]]
            assert (score[parent], seq[parent]) > (score[child], seq[child]), "the heap of tops is out of order"
        for i in range(self.stack_count):
            assert self._pos[self._heap[i]] == i, "heap positions"
        waiting = self._queue[self._head:]
        alive = waiting[self._alive[waiting]]
        assert len(alive) == len(self), "the expiry queue misses entries"
        seqs = self._pool.seq[alive]
        assert np.all(seqs[1:] > seqs[:-1]), "the expiry queue is not oldest first"
