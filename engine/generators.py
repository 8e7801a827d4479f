"""Synthetic streams of the papers, shared by tests, benchmarks and the pipelines.

Every generator takes the number of rows ``m`` and a ``seed`` and returns plain numpy
arrays: ``(ids, t, x)`` for object streams (``t`` is the arrival ordinal) and
``(ids, stream, value, t)`` for attribute streams.
"""

from __future__ import annotations

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


def correlated_streams(m: int, streams: int = 3, seed: int = 0, reuse: float = 0.5, memory: int = 1000):
    """Correlated attribute streams (incomplete-streams paper, 6.1.1).

    Each tuple goes to a stream chosen uniformly; every stream remembers its last ``memory``
    ids.  With probability ``reuse`` (the paper's xi) a tuple takes an id currently remembered
    by another stream and never sent in this one; otherwise a fresh id.  Values are uniform
    in ``[0, 1]``.

    >>> ids, stream, value, t = correlated_streams(200, streams=2, reuse=0.9, memory=20)
    >>> len(set(ids.tolist())) < 200
    True
    """
    rng = np.random.default_rng(seed)
    stream = rng.integers(0, streams, m)
    value = rng.random(m)
    ids = np.empty(m, np.int64)
    recent = [[] for _ in range(streams)]
    sent = [set() for _ in range(streams)]
    fresh = 0
    for row in range(m):
        i = int(stream[row])
        chosen = None
        if streams > 1 and rng.random() < reuse:
            pool = [o for j in range(streams) if j != i for o in recent[j][-memory:] if o not in sent[i]]
            if pool:
                chosen = pool[int(rng.integers(len(pool)))]
        if chosen is None:
            chosen, fresh = fresh, fresh + 1
        ids[row] = chosen
        sent[i].add(chosen)
        recent[i].append(chosen)
        if len(recent[i]) > 2 * memory:
            del recent[i][:-memory]
    return ids, stream.astype(np.int64), value, np.arange(m, dtype=np.int64)


OBJECT_GENERATORS = {"time-u": time_u, "time-r": time_r, "drifting-gaussian": drifting_gaussian,
                     "skewed-uniform": skewed_uniform, "anti-correlated": anti_correlated}
ATTRIBUTE_GENERATORS = {"correlated-streams": correlated_streams}
