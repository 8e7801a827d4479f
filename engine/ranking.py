"""Scoring and the total order every answer is ranked by.

``a`` ranks above ``b`` iff ``(F(a), seq(a)) > (F(b), seq(b))``: equal scores, newer first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def score(x: np.ndarray, weights) -> np.ndarray:
    """``F = x · w`` for every row of the ``(m, d)`` matrix ``x``.

    Summed column by column so that a row's score does not depend on the batch it is
    scored in (BLAS kernels may block rows differently); every algorithm scores this way.

    Examples
    --------
    >>> import numpy as np
    >>> score(np.array([[1.0, 2.0], [3.0, 4.0]]), [1.0, -1.0]).tolist()
    [-1.0, -1.0]
    """
    out = x[:, 0] * float(weights[0])
    for j in range(1, len(weights)):
        out += x[:, j] * float(weights[j])
    return out


def finite_score(x: np.ndarray, weights) -> np.ndarray:
    """:func:`score`, refusing with a ``ValueError`` a score that overflows (``O(m d)``): the
    ``query(weights, k)`` of an algorithm answering any weights gets weights the stream was
    never checked with, and an ``inf`` (or, of mixed signs, a ``nan``) score would rank wrongly.

    Examples
    --------
    >>> finite_score(np.array([[1e308, 1e308]]), [10.0, -10.0])
    Traceback (most recent call last):
    ...
    ValueError: the score x · w of an object in the window overflows under weights [10.0, -10.0]; scale the weights down
    """
    with np.errstate(over="ignore", invalid="ignore"):
        values = score(x, weights)
    if not np.isfinite(values).all():
        raise ValueError(f"the score x · w of an object in the window overflows under weights {list(weights)}; "
                         "scale the weights down")
    return values


def top_indices(scores: np.ndarray, seq: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``min(k, m)`` best of ``m`` objects, best first, by ``(score, seq)``.

    ``O(m)``: the ``k``-th best score by ``partition``, the objects at or above it by one
    comparison (ties at the ``k``-th score: the newest win), then ``O(k log k)`` ordering.

    Examples
    --------
    >>> import numpy as np
    >>> top_indices(np.array([1.0, 3.0, 3.0, 2.0]), np.arange(4), 2).tolist()
    [2, 1]
    """
    m = len(scores)
    if k < m:
        kth = np.partition(scores, m - k)[m - k]
        top = np.flatnonzero(scores >= kth)
        if len(top) > k:
            above = top[scores[top] > kth]
            tied = top[scores[top] == kth]
            newest_tied = tied[np.argsort(seq[tied], kind="stable")[len(tied) - (k - len(above)):]]
            top = np.concatenate([above, newest_tied])
    else:
        top = np.arange(m)
    return top[np.lexsort((seq[top], scores[top]))[::-1]]


@dataclass(frozen=True, eq=False)
class Answer:
    """A ranked answer: ``ids``, ``scores`` and ``seq``, best first; read-only, as an algorithm
    may hand the same answer out again on later slides (``O(1)``).

    >>> Answer.empty().ids.flags.writeable
    False
    """

    ids: np.ndarray
    scores: np.ndarray
    seq: np.ndarray

    def __post_init__(self) -> None:
        for values in (self.ids, self.scores, self.seq):
            if isinstance(values, np.ndarray):
                values.flags.writeable = False

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def empty(cls) -> "Answer":
        return cls(np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.int64))

    @classmethod
    def ranked(cls, ids, scores, seq, k: int) -> "Answer":
        """The top ``k`` of the given objects, ranked by the total order."""
        ids, scores, seq = np.asarray(ids, np.int64), np.asarray(scores, np.float64), np.asarray(seq, np.int64)
        top = top_indices(scores, seq, k)
        return cls(ids[top], scores[top], seq[top])

    def to_dict(self) -> dict:
        return {"ids": self.ids.tolist(), "scores": self.scores.tolist()}
