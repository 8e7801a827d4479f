"""Synthetic streams of the papers, shared by tests, benchmarks and the pipelines.

Every generator takes the number of rows ``m`` and a ``seed`` and returns plain numpy
arrays: ``(ids, t, x)`` for object streams (``t`` is the arrival ordinal) and
``(ids, stream, value, t)`` for attribute streams.
"""

from __future__ import annotations

from collections import deque

import numpy as np


def time_u(m: int, d: int = 1, seed: int = 0):
    """TIME-U (SAP paper): features uniform in ``[0, 1)``.

    >>> ids, t, x = time_u(4, d=2)
    >>> x.shape, bool(((x >= 0) & (x < 1)).all())
    ((4, 2), True)
    """
    rng = np.random.default_rng(seed)
    return np.arange(m, dtype=np.int64), np.arange(m, dtype=np.int64), rng.random((m, d))


def time_r(m: int, d: int = 1, seed: int = 0, period: float = 1e6, noise: float = 1.0):
    """TIME-R (SAP paper): ``sin(pi t / period)`` trend on the arrival ordinal plus uniform noise.

    >>> ids, t, x = time_r(3, noise=0.0, period=2.0)
    >>> np.round(x[:, 0], 6).tolist()
    [0.0, 1.0, 0.0]
    """
    rng = np.random.default_rng(seed)
    t = np.arange(m, dtype=np.int64)
    trend = np.sin(np.pi * t / period)
    return np.arange(m, dtype=np.int64), t, trend[:, None] + noise * rng.random((m, d))


def drifting_gaussian(m: int, d: int = 3, seed: int = 0, drift: float = 0.0, window: int = 1_000_000):
    """Drifting Gaussian (SAO paper): each feature ``N(mu(t), 1)``, ``mu`` a triangle wave
    between ``-drift`` and ``drift`` with period ``4 * window``.

    >>> ids, t, x = drifting_gaussian(5, d=3, drift=1.0, window=10)
    >>> x.shape
    (5, 3)
    """
    rng = np.random.default_rng(seed)
    t = np.arange(m, dtype=np.int64)
    period = 4 * window
    phase = (t % period) / period
    mu = drift * (4 * np.abs(phase - 0.5) - 1)
    return np.arange(m, dtype=np.int64), t, rng.standard_normal((m, d)) + mu[:, None]


def skewed_uniform(m: int, d: int = 3, seed: int = 0, p: float = 0.5):
    """Skewed uniform (SAO paper): each feature with probability ``p`` uniform in
    ``[-0.1, 0.1]``, else uniform in ``[-0.5, -0.1]`` or ``[0.1, 0.5]`` (each ``(1 - p) / 2``).

    >>> ids, t, x = skewed_uniform(1000, p=0.9)
    >>> bool((np.abs(x) <= 0.1).mean() > 0.8)
    True
    """
    rng = np.random.default_rng(seed)
    inner = rng.random((m, d)) < p
    magnitude = rng.uniform(0.1, 0.5, (m, d)) * rng.choice([-1.0, 1.0], (m, d))
    x = np.where(inner, rng.uniform(-0.1, 0.1, (m, d)), magnitude)
    return np.arange(m, dtype=np.int64), np.arange(m, dtype=np.int64), x


def anti_correlated(m: int, d: int = 2, seed: int = 0, spread: float = 0.05):
    """Anti-correlated features: points near the hyperplane ``sum(x) = d / 2`` inside ``[0, 1]^d``.

    >>> ids, t, x = anti_correlated(500, d=3)
    >>> bool(np.corrcoef(x[:, 0], x[:, 1])[0, 1] < 0)
    True
    """
    rng = np.random.default_rng(seed)
    direction = rng.dirichlet(np.ones(d), m) * (d / 2)
    x = np.clip(direction + rng.normal(0, spread, (m, d)), 0.0, 1.0)
    return np.arange(m, dtype=np.int64), np.arange(m, dtype=np.int64), x


class _Pool:
    """A set with ``O(1)`` add, remove and uniform choice (a list plus positions)."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.position: dict[int, int] = {}

    def add(self, item: int) -> None:
        if item not in self.position:
            self.position[item] = len(self.items)
            self.items.append(item)

    def discard(self, item: int) -> None:
        index = self.position.pop(item, None)
        if index is not None:
            last = self.items.pop()
            if index < len(self.items):
                self.items[index] = last
                self.position[last] = index


def correlated_streams(m: int, streams: int = 3, seed: int = 0, reuse: float = 0.5, memory: int = 1000):
    """Correlated attribute streams (incomplete-streams paper, 6.1.1).

    Each tuple goes to a stream chosen uniformly; every stream remembers its last ``memory``
    ids (the paper's ``C``).  With probability ``reuse`` (the paper's xi) a tuple of stream
    ``i`` takes an id chosen uniformly among the distinct ids currently remembered by the
    other streams and never sent in stream ``i`` (each stream sends an id at most once);
    otherwise, or when there is none, a fresh id never sent in any stream.  Values are
    uniform in ``[0, 1]``; ``t`` is the arrival ordinal.  ``O(streams)`` per tuple: every
    stream keeps the pool of ids it may reuse, updated as ids enter and leave the windows.

    >>> ids, stream, value, t = correlated_streams(200, streams=2, reuse=0.9, memory=20)
    >>> len(set(ids.tolist())) < 200
    True
    >>> len(set(zip(ids.tolist(), stream.tolist()))) == 200
    True
    """
    if streams < 1 or memory < 1 or not 0.0 <= reuse <= 1.0:
        raise ValueError(f"need streams >= 1, memory >= 1 and reuse in [0, 1], got {streams}, {memory}, {reuse}")
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, streams, m)
    value = rng.random(m)
    reusing = rng.random(m) < reuse
    picks = rng.random(m)
    ids = np.empty(m, np.int64)
    recent = [deque() for _ in range(streams)]
    holders: dict[int, int] = {}
    sent: dict[int, int] = {}
    pools = [_Pool() for _ in range(streams)]
    fresh = 0
    for row, i in enumerate(stream.tolist()):
        pool = pools[i]
        if reusing[row] and pool.items:
            chosen = pool.items[int(picks[row] * len(pool.items))]
        else:
            chosen, fresh = fresh, fresh + 1
        ids[row] = chosen
        bit = 1 << i
        sent[chosen] = sent.get(chosen, 0) | bit
        holders[chosen] = holders.get(chosen, 0) | bit
        pool.discard(chosen)
        for j in range(streams):
            if j != i and not sent[chosen] >> j & 1:
                pools[j].add(chosen)
        recent[i].append(chosen)
        if len(recent[i]) > memory:
            gone = recent[i].popleft()
            holders[gone] &= ~bit
            for j in range(streams):
                if not holders[gone] & ~(1 << j):
                    pools[j].discard(gone)
            if not holders[gone]:
                del holders[gone]
    return ids, stream.astype(np.int64), value, np.arange(m, dtype=np.int64)


OBJECT_GENERATORS = {"time-u": time_u, "time-r": time_r, "drifting-gaussian": drifting_gaussian,
                     "skewed-uniform": skewed_uniform, "anti-correlated": anti_correlated}
ATTRIBUTE_GENERATORS = {"correlated-streams": correlated_streams}
