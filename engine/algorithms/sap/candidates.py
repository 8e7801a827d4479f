"""The candidate set ``C`` of the SAP paper (Section 3.1) and ranked top-k arrays.

A *top* is a tuple of four aligned arrays ``(score, seq, id, t)`` sorted best first by the
total order ``(score, seq)``; it holds a slide's, a unit's or a partition's best ``k``.
"""

from __future__ import annotations

import numpy as np

from ...kernels import sap as kernels

Top = tuple  # (score float64, seq int64, id int64, t int64), best first

NO_KEY = 2 ** 62
"""The oldest expiry key of an empty candidate set: no bound reaches it."""


def empty_top(n: int = 0) -> Top:
    """A top of ``n`` uninitialised rows (empty by default)."""
    return (np.empty(n, np.float64), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64))


def packed_top(n: int) -> Top:
    """A top of ``n`` uninitialised rows whose four columns are views of one ``(4, n)`` int64
    array (:func:`block_top`): the filling unit's top, which the quiet slide's call takes as one
    argument (:func:`engine.kernels.sap.quiet_slide_raw`)."""
    return block_top(np.empty((4, n), np.int64))


def block_top(block: np.ndarray) -> Top:
    """The top whose columns are the rows of ``block`` (the first read as float64 scores)."""
    return (block[0].view(np.float64), block[1], block[2], block[3])


def top_block(top: Top) -> np.ndarray | None:
    """The ``(4, n)`` array whose rows the columns of ``top`` are (:func:`packed_top`), or None."""
    block = top[1].base
    if block is None or block.ndim != 2 or block.shape != (4, len(top[1])):
        return None
    return block if top[0].base is block and top[2].base is block and top[3].base is block else None


def empty_columns(n: int) -> tuple:
    """The six columns of ``C`` for ``n`` rows, uninitialised."""
    return (*empty_top(n), np.empty(n, np.int64), np.empty(n, np.int64))


def merge_tops(a: Top, b: Top, k: int) -> Top:
    """The best ``k`` of two ranked tops, ranked (one merge, ``O(k)``).

    >>> a = (np.array([5.0, 1.0]), np.array([0, 1]), np.array([0, 1]), np.array([0, 1]))
    >>> b = (np.array([3.0]), np.array([2]), np.array([2]), np.array([2]))
    >>> merge_tops(a, b, 2)[0].tolist()
    [5.0, 3.0]
    """
    if not len(b[0]):
        return a if len(a[0]) <= k else tuple(column[:k] for column in a)
    if not len(a[0]):
        return b if len(b[0]) <= k else tuple(column[:k] for column in b)
    out = empty_top(min(k, len(a[0]) + len(b[0])))
    kernels.merge_ranked(*a, *b, *out)
    return out


class CandidateSet:
    """``C``: the candidates of the finished partitions, best first, with dominance counters.

    Columns: score, seq, id, t, the counter ``D(o, C)`` (how many candidates of later
    partitions rank above ``o``) and the partition serial.  :meth:`refine` is the paper's
    one-pass merge (``O(|C| + k)``, :func:`engine.kernels.sap.refine`): every arrival of the
    finished partition is newer than every member, so it dominates exactly the members scoring
    at most its score; members reaching ``k`` leave.

    Examples
    --------
    >>> c = CandidateSet(k=2, expiry_index=1)
    >>> c.refine((np.array([3.0, 1.0]), np.array([1, 0]), np.array([1, 0]), np.array([1, 0])), 0)
    []
    >>> c.refine((np.array([4.0, 2.0]), np.array([3, 2]), np.array([3, 2]), np.array([3, 2])), 1)
    [0]
    >>> c.score.tolist(), c.count.tolist()
    ([4.0, 3.0, 2.0], [0, 1, 0])
    """

    ROW_BYTES = 6 * 8
    """Bytes of one member in the six columns."""

    def __init__(self, k: int, expiry_index: int) -> None:
        self.k = k
        self._expiry = expiry_index
        self.score = np.empty(0, np.float64)
        self.seq = np.empty(0, np.int64)
        self.ids = np.empty(0, np.int64)
        self.t = np.empty(0, np.int64)
        self.count = np.empty(0, np.int64)
        self.part = np.empty(0, np.int64)
        self.oldest = NO_KEY  # at most the lowest expiry key of the members

    def __len__(self) -> int:
        return len(self.score)

    @property
    def columns(self) -> tuple:
        return (self.score, self.seq, self.ids, self.t, self.count, self.part)

    def _set(self, columns) -> None:
        self.score, self.seq, self.ids, self.t, self.count, self.part = columns

    def keys(self) -> np.ndarray:
        """Expiry keys (seq or t) of the members."""
        return self.seq if self._expiry == 1 else self.t

    def refine(self, top: Top, part: int) -> list[int]:
        """Merge a finished partition's ``P^k`` (newer than every member); return the
        partition serials of the members dropped (one per member).  ``O(|C| + k)``."""
        dead = int(kernels.add_dominators(self.score, self.count, top[0], self.k)) if len(top[0]) else 0
        columns = empty_columns(len(self) - dead + len(top[0]))
        dropped = np.empty(dead, np.int64)
        kernels.refine(*self.columns, *top, part, self.k, *columns, dropped)
        self._set(columns)
        if len(top[0]):
            self.oldest = min(self.oldest, int(top[self._expiry].min()))
        return dropped.tolist()

    def expire(self, bound: int) -> int:
        """Drop members whose expiry key is below ``bound``; returns how many.  ``O(1)`` while
        ``bound`` has not passed the oldest member's key, ``O(|C|)`` when it has."""
        if bound <= self.oldest:
            return 0
        members = len(self.score)
        *columns, oldest = kernels.expire_members(*self.columns, self.keys(), bound, NO_KEY)
        self._set(columns)
        self.oldest = int(oldest)
        return members - len(self.score)

    def dominators(self, values: np.ndarray, part: int) -> np.ndarray:
        """For objects of partition ``part`` (older than every other member), scores given best
        first: how many candidates of other partitions rank above each, i.e. score at least
        as much (``O(|C| + e)``)."""
        return kernels.dominators(self.score, self.part, values, part)

    def insert(self, entries: Top, counts: np.ndarray, part: int) -> None:
        """Insert promoted objects of partition ``part`` (columns, best first) with their
        counters (one merge, ``O(|C| + e)``)."""
        columns = empty_columns(len(self) + len(entries[0]))
        kernels.insert_ranked(*self.columns, *entries, np.asarray(counts, np.int64), part, *columns)
        self._set(columns)
        if len(entries[0]):
            self.oldest = min(self.oldest, int(entries[self._expiry].min()))

    def top(self, k: int) -> Top:
        return (self.score[:k], self.seq[:k], self.ids[:k], self.t[:k])

    def later_top(self, part: int, k: int) -> Top:
        """The best ``k`` members of partitions after ``part``."""
        rows = np.flatnonzero(self.part > part)[:k]
        return (self.score[rows], self.seq[rows], self.ids[rows], self.t[rows])

    def lowest_of(self, part: int) -> tuple | None:
        """Key of the lowest member of partition ``part``, or ``None``."""
        rows = np.flatnonzero(self.part == part)
        if not len(rows):
            return None
        last = rows[-1]
        return (float(self.score[last]), int(self.seq[last]))

    def load(self, rows: list) -> None:
        if any(len(row) != 6 for row in rows):
            raise ValueError("a candidate row must be [score, seq, id, t, count, partition]")
        self.score = np.array([float(r[0]) for r in rows], np.float64)
        self._set((self.score, *(np.array([int(r[i]) for r in rows], np.int64) for i in range(1, 6))))
        self.oldest = int(self.keys().min()) if len(self) else NO_KEY

    def rows(self) -> list:
        return [[float(a), int(b), int(c), int(d), int(e), int(f)]
                for a, b, c, d, e, f in zip(*(column.tolist() for column in self.columns))]

    def check(self) -> None:
        order = np.lexsort((-self.seq, -self.score))
        assert np.array_equal(order, np.arange(len(self))), "C is not sorted best first"
        assert len(np.unique(self.seq)) == len(self), "duplicate candidates"
        assert not len(self) or self.oldest <= self.keys().min(), "the oldest key is above a member's"
        assert np.all((self.count >= 0) & (self.count < self.k)), "a dominance counter is outside 0..k-1"
        for part in np.unique(self.part).tolist():
            later_before = np.cumsum(self.part > part) - (self.part > part)
            rows = self.part == part
            assert np.all(self.count[rows] >= later_before[rows]), "a counter misses a candidate of a later partition"
