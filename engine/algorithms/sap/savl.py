"""The S-AVL of the SAP paper (Section 5.1): stacks plus a balanced tree over their tops.

An entry is a tuple ``(score, seq, id, t)``; its key ``(score, seq)`` is the total order
(equal scores, newer first).  Inside every stack, from bottom to top, keys increase and
objects get older (``F(S[j]) <= F(S[j+1])``, ``S[j].t >= S[j+1].t``): a top is the best and
the oldest object of its stack.
"""

from __future__ import annotations

from bisect import bisect_left, insort
import numpy as np
from sortedcontainers import SortedList


class StackBuilder:
    """The construction of one S-AVL: ``capacity = k - P.rho`` stacks, objects newest first.

    :meth:`scan` takes the objects of ``P - P^k`` that passed global pruning, from the newest
    to the oldest.  The first ``capacity`` objects each open a stack; after that an object is
    pushed onto the stack whose top is the largest key below its own, or pruned when every top
    ranks above it (then ``capacity`` newer, better objects of ``P`` and ``P.rho`` candidates of
    later partitions dominate it: Lemma 2).  Replacing that top by a larger key keeps the
    order of the tops, so the sorted list of tops is updated in place (``O(log k)`` per scan).

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
        self.stacks: list[list[tuple]] = []
        self._tops: list[tuple] = []
        self.pruned = 0

    def __len__(self) -> int:
        return sum(len(stack) for stack in self.stacks)

    def scan(self, entry: tuple) -> None:
        """Offer the next (older) object: open a stack, push it, or prune it (``O(log k)``)."""
        key = (entry[0], entry[1])
        tops = self._tops
        if len(self.stacks) < self.capacity:
            insort(tops, (*key, len(self.stacks)))
            self.stacks.append([entry])
            return
        i = bisect_left(tops, key) - 1
        if i < 0:
            self.pruned += 1
            return
        index = tops[i][2]
        tops[i] = (*key, index)
        self.stacks[index].append(entry)

    def check(self) -> None:
        """Stacks ordered bottom to top by rising key and falling seq; tops sorted."""
        assert len(self.stacks) <= self.capacity
        for stack in self.stacks:
            assert stack, "empty stack"
            for lower, upper in zip(stack, stack[1:]):
                assert (lower[0], lower[1]) < (upper[0], upper[1]) and lower[1] > upper[1], "stack order"
        assert self._tops == sorted((s[-1][0], s[-1][1], i) for i, s in enumerate(self.stacks))

    @classmethod
    def restore(cls, capacity: int, stacks: list[list[tuple]], pruned: int) -> "StackBuilder":
        builder = cls(capacity)
        builder.stacks = stacks
        builder._tops = sorted((s[-1][0], s[-1][1], i) for i, s in enumerate(stacks))
        builder.pruned = pruned
        return builder


class MeaningfulSet:
    """``M_0``: the stacks of every S-AVL built for the front partition ``P_0``.

    A ``sortedcontainers.SortedList`` holds the stack tops (the "AVL tree"): the best
    meaningful object is its last element.  :meth:`pop_best` moves it out (into ``P_0^k``) and
    exposes the entry below it (``O(log k)``).  Tops are the oldest objects of their stacks, so
    objects leave by expiry from the tops too: :meth:`expire` walks the entries oldest first
    (``O(log k)`` per expired entry).

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
        self.stacks: list[list[tuple]] = []
        self._tops = SortedList()
        self._where: dict[int, int] = {}
        self._oldest_first: list[tuple] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._where)

    def __bool__(self) -> bool:
        return bool(self._where)

    def absorb(self, stacks: list[list[tuple]]) -> None:
        """Add finished stacks (``O(E log E)`` for ``E`` entries)."""
        entries = self._oldest_first[self._head:]
        for stack in stacks:
            if not stack:
                continue
            index = len(self.stacks)
            self.stacks.append(stack)
            top = stack[-1]
            self._tops.add((top[0], top[1], index))
            for entry in stack:
                self._where[entry[1]] = index
            entries.extend(stack)
        entries.sort(key=lambda e: e[1])
        self._oldest_first = entries
        self._head = 0

    def best(self) -> tuple | None:
        """The best entry (``O(1)``)."""
        if not self._tops:
            return None
        return self.stacks[self._tops[-1][2]][-1]

    def _pop_top(self, index: int) -> tuple:
        stack = self.stacks[index]
        entry = stack.pop()
        del self._where[entry[1]]
        if stack:
            top = stack[-1]
            self._tops.add((top[0], top[1], index))
        return entry

    def pop_best(self) -> tuple:
        """Remove and return the best entry (``O(log k)``)."""
        _, _, index = self._tops.pop()
        return self._pop_top(index)

    def expire(self, bound: int) -> int:
        """Drop entries whose expiry key is below ``bound``; returns how many."""
        queue, where, position = self._oldest_first, self._where, self._expiry
        gone = 0
        head = self._head
        while head < len(queue) and queue[head][position] < bound:
            entry = queue[head]
            head += 1
            index = where.get(entry[1])
            if index is None:
                continue
            assert self.stacks[index][-1] is entry, "an expiring entry is not its stack's top"
            self._tops.remove((entry[0], entry[1], index))
            self._pop_top(index)
            gone += 1
        if 2 * head > len(queue):
            del queue[:head]
            head = 0
        self._head = head
        return gone

    def clear(self) -> None:
        self.stacks = []
        self._tops = SortedList()
        self._where = {}
        self._oldest_first = []
        self._head = 0

    def seqs(self) -> np.ndarray:
        """``seq`` of every entry (``O(|M|)``)."""
        return np.fromiter(self._where, np.int64, len(self._where))

    def entries(self) -> list[tuple]:
        return [entry for stack in self.stacks for entry in stack]

    def live_stacks(self) -> list[list[tuple]]:
        return [stack for stack in self.stacks if stack]

    def check(self) -> None:
        tops = []
        count = 0
        for index, stack in enumerate(self.stacks):
            for lower, upper in zip(stack, stack[1:]):
                assert (lower[0], lower[1]) < (upper[0], upper[1]) and lower[1] > upper[1], "stack order"
            for entry in stack:
                assert self._where.get(entry[1]) == index, "entry index disagrees with its stack"
            count += len(stack)
            if stack:
                tops.append((stack[-1][0], stack[-1][1], index))
        assert count == len(self._where), "entry index has extra entries"
        assert list(self._tops) == sorted(tops), "tree of tops disagrees with the stacks"
        alive = [e[1] for e in self._oldest_first[self._head:] if e[1] in self._where]
        assert sorted(alive) == sorted(self._where) and alive == sorted(alive), "expiry queue"
