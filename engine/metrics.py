"""Answer quality against the exact answer: precision and score errors.

Every consumer (pipelines, dashboard, benchmarks) computes these here, never on its own.
"""

from __future__ import annotations

import numpy as np

from .ranking import Answer


def precision(exact: Answer, got: Answer) -> float:
    """``|A ∩ B| / |A|`` over object ids; 1.0 when the exact answer is empty.

    >>> import numpy as np
    >>> a = Answer(np.array([1, 2, 3]), np.array([3.0, 2.0, 1.0]), np.array([1, 2, 3]))
    >>> b = Answer(np.array([1, 4, 3]), np.array([3.0, 1.5, 1.0]), np.array([1, 4, 3]))
    >>> precision(a, b)
    0.6666666666666666
    """
    if len(exact) == 0:
        return 1.0
    return len(np.intersect1d(exact.ids, got.ids)) / len(exact)


def _rank_gaps(exact: Answer, got: Answer) -> np.ndarray:
    """``F(t_i) - F(t̂_i)`` per rank of the exact answer; a missing rank scores ``-inf``."""
    returned = np.full(len(exact), -np.inf)
    shared = min(len(exact), len(got))
    returned[:shared] = got.scores[:shared]
    return exact.scores - returned


def relative_error(exact: Answer, got: Answer, rank_weights=None) -> float:
    """SAO's weighted relative error ``Σ u_i e_i / Σ u_i``, ``e_i = (F(t_i) − F(t̂_i)) / |F(t_i)|``.

    Equal scores give 0 even at ``F = 0``; a missing rank or a non-zero gap at ``F = 0`` counts
    as 1 (a total miss).  ``rank_weights`` are the ``u_i`` (default all 1).

    >>> import numpy as np
    >>> a = Answer(np.array([1, 2]), np.array([4.0, 2.0]), np.array([1, 2]))
    >>> b = Answer(np.array([1, 3]), np.array([4.0, 1.0]), np.array([1, 3]))
    >>> relative_error(a, b)
    0.25
    """
    if len(exact) == 0:
        return 0.0
    scale = np.abs(exact.scores)
    errors = np.ones(len(exact))
    with np.errstate(over="ignore"):
        gaps = _rank_gaps(exact, got)
        answered = np.flatnonzero((np.arange(len(exact)) < len(got)) & (scale > 0))
        errors[answered] = gaps[answered] / scale[answered]
        wide = answered[np.isinf(gaps[answered])]  # a gap beyond the largest float: divided term by term
        errors[wide] = exact.scores[wide] / scale[wide] - got.scores[wide] / scale[wide]
    errors[gaps == 0] = 0.0
    u = np.ones(len(exact)) if rank_weights is None else np.asarray(rank_weights, float)[: len(exact)]
    return float(np.sum(u * errors) / np.sum(u))


def range_error(exact: Answer, got: Answer, low: float, high: float) -> float:
    """Mean of ``(F(t_i) − F(t̂_i)) / (max_W F − min_W F)``; robust where scores are near 0.

    >>> import numpy as np
    >>> a = Answer(np.array([1, 2]), np.array([4.0, 2.0]), np.array([1, 2]))
    >>> b = Answer(np.array([1, 3]), np.array([4.0, 1.0]), np.array([1, 3]))
    >>> range_error(a, b, 0.0, 4.0)
    0.125
    """
    if len(exact) == 0:
        return 0.0
    gaps = np.minimum(_rank_gaps(exact, got), high - low)
    return float(np.mean(gaps) / (high - low)) if high > low else float(np.any(gaps > 0))


def absolute_error(exact: Answer, got: Answer) -> float:
    """``(1/k) Σ_i |a_i − b_i|`` over ranked scores (incomplete streams; a missing rank scores 0).

    >>> import numpy as np
    >>> a = Answer(np.array([1, 2]), np.array([0.9, 0.5]), np.array([1, 2]))
    >>> absolute_error(a, Answer(np.array([1]), np.array([0.9]), np.array([1])))
    0.25
    """
    if len(exact) == 0:
        return 0.0
    returned = np.zeros(len(exact))
    shared = min(len(exact), len(got))
    returned[:shared] = got.scores[:shared]
    return float(np.mean(np.abs(exact.scores - returned)))


def disagreements(exact: Answer, got: Answer, rtol: float = 1e-12) -> np.ndarray:
    """For every rank of ``got``: does its score differ from the exact score at that rank?

    Scores equal within ``rtol`` relative agree (ids may differ only among equal scores);
    ranks beyond the exact answer's length disagree.

    >>> import numpy as np
    >>> exact = Answer(np.array([1, 3]), np.array([3.0, 2.5]), np.array([1, 3]))
    >>> got = Answer(np.array([1, 2, 4]), np.array([3.0, 2.0, 1.0]), np.array([1, 2, 4]))
    >>> disagreements(exact, got).tolist()
    [False, True, True]
    """
    shared = min(len(got), len(exact))
    mine, want = got.scores[:shared], exact.scores[:shared]
    differs = np.abs(mine - want) > rtol * np.maximum(np.abs(mine), np.abs(want))
    return np.concatenate([differs, np.ones(len(got) - shared, dtype=bool)])


def rank_weights(k: int, scheme: str = "1") -> np.ndarray:
    """SAO's rank weights ``u_i`` for ranks ``1..k``: ``"1"`` (all 1) or ``"1/i"``.

    >>> rank_weights(3, "1/i").tolist()
    [1.0, 0.5, 0.3333333333333333]
    """
    if scheme == "1":
        return np.ones(k)
    if scheme == "1/i":
        return 1.0 / np.arange(1, k + 1)
    raise ValueError(f"rank weights must be '1' or '1/i', got {scheme!r}")


def weighted_range_error(exact: Answer, got: Answer, low: float, high: float, rank_weights=None) -> float:
    """SAO's weighted error, range-normalised: ``Σ u_i g_i / Σ u_i`` with
    ``g_i = (F(t_i) − F(t̂_i)) / (max_W F − min_W F)`` (a missing rank counts as 1).

    The variant of :func:`relative_error` that stays meaningful when scores are near 0;
    ``low`` and ``high`` are the window's lowest and highest score under the query's weights.

    >>> import numpy as np
    >>> a = Answer(np.array([1, 2]), np.array([4.0, 2.0]), np.array([1, 2]))
    >>> b = Answer(np.array([1, 3]), np.array([4.0, 1.0]), np.array([1, 3]))
    >>> weighted_range_error(a, b, 0.0, 4.0)
    0.125
    >>> weighted_range_error(a, b, 0.0, 4.0, rank_weights=[1.0, 0.5])
    0.08333333333333333
    """
    if len(exact) == 0:
        return 0.0
    gaps = np.minimum(_rank_gaps(exact, got), high - low)
    errors = gaps / (high - low) if high > low else (gaps > 0).astype(float)
    u = np.ones(len(exact)) if rank_weights is None else np.asarray(rank_weights, float)[: len(exact)]
    return float(np.sum(u * errors) / np.sum(u))
