"""The attribute-stream model shared by the incomplete-stream algorithms (paper 003).

A tuple ``(id, stream, value, t)`` reports one attribute of one object; ``d`` streams, one per
attribute (the query's weights, all ``>= 0``).  A tuple is *valid* while it is in the window:
among the last ``n`` tuples of the merged stream (count windows, by ``seq``) or ``t >= T - n``
(time windows).  An object is valid while it has a valid tuple.  Its attribute ``i`` is the
sum of the values of its valid tuples in stream ``i`` (repeats add up; unseen or expired: 0)
and its score is the weighted sum of its attributes.

Every algorithm computes a score the same way, so that exact algorithms agree to the last
bit with the brute force: an attribute is summed in arrival order starting from ``0.0``
(:func:`attribute_sum`), and attributes are combined in stream order by :func:`combine`,
which performs the same floating-point operations as :func:`engine.ranking.score`.  An
object's ``seq`` in an answer is the ``seq`` of its newest valid tuple, so the total order
``(score, seq)`` of section 0 ranks objects (equal scores: the most recently updated first).

Memory cost model (``docs/algorithms/memory.md``): :data:`TUPLE_WORDS` per raw tuple; the algorithms state the
rest of their layouts with the same :data:`engine.base.WORD`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import Algorithm
from .query import Query
from .stream import Batch

TUPLE_WORDS = 5
"""Words per raw tuple: id, stream, value, t and seq."""


def check_weights(query: Query, name: str) -> None:
    """Incomplete-stream algorithms need monotone aggregation: every weight ``>= 0``.

    >>> check_weights(Query(weights=[1.0, -0.5], k=1, window=2, slide=1), "sla")
    Traceback (most recent call last):
    ...
    ValueError: sla needs non-negative weights (monotone aggregation), got weight -0.5 for stream 1
    """
    for stream, weight in enumerate(query.weights):
        if weight < 0:
            raise ValueError(f"{name} needs non-negative weights (monotone aggregation), "
                             f"got weight {weight} for stream {stream}")


def combine(attributes: Sequence[float], weights: Sequence[float]) -> float:
    """``Σ_i w_i a_i`` in stream order, bit for bit as :func:`engine.ranking.score` (``O(d)``).

    >>> combine([0.5, 0.25], [1.0, 2.0])
    1.0
    """
    total = attributes[0] * weights[0]
    for i in range(1, len(weights)):
        total += attributes[i] * weights[i]
    return total


def attribute_sum(values) -> float:
    """Sum of the values of one attribute in arrival order from ``0.0`` (``O(len)``).

    Written out because ``sum`` may compensate rounding (Python 3.12) and ``np.sum`` sums
    pairwise; ``np.bincount`` (the brute force) adds in input order like this loop.

    >>> attribute_sum([0.1, 0.2, 0.3])
    0.6000000000000001
    """
    total = 0.0
    for value in values:
        total += value
    return total


def aggregate(ids: np.ndarray, stream: np.ndarray, value: np.ndarray, seq: np.ndarray, d: int):
    """Per-object attributes of the tuples given in arrival order (``O(m log m + m d)``).

    Returns the distinct ``ids``, their ``(objects, d)`` attribute matrix (each entry summed
    in arrival order, as :func:`attribute_sum`) and the ``seq`` of each object's newest tuple.

    >>> objects, attributes, newest = aggregate(np.array([7, 3, 7]), np.array([0, 1, 0]),
    ...                                         np.array([0.5, 1.0, 0.25]), np.arange(3), 2)
    >>> objects.tolist(), attributes.tolist(), newest.tolist()
    ([3, 7], [[0.0, 1.0], [0.75, 0.0]], [1, 2])
    """
    objects, inverse = np.unique(ids, return_inverse=True)
    sums = np.bincount(inverse * d + stream, weights=value, minlength=len(objects) * d)
    newest = np.full(len(objects), -1, np.int64)
    np.maximum.at(newest, inverse, seq)
    return objects, sums.reshape(len(objects), d), newest


class AttributeAlgorithm(Algorithm):
    """Base of the incomplete-stream algorithms: checks the weights and the batches."""

    stream = "incomplete"

    def __init__(self, query: Query, **params: Any) -> None:
        check_weights(query, self.name)
        super().__init__(query, **params)

    def _tuples(self, batch: Batch):
        """``(ids, stream, value, key, seq)`` of an attribute batch; expiry ``key`` is seq or t."""
        if batch.stream is None or batch.value is None:
            raise ValueError(f"{self.name} reads attribute streams (id, stream, value, t); "
                             "this batch is an object stream")
        return batch.ids, batch.stream, batch.value, batch.keys(self.q), batch.seq
