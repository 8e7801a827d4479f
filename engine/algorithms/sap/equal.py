"""``sap-equal``: SAP with equal partitions of ``n / m*`` objects (Section 4.1)."""

from __future__ import annotations

import math

from ...registry import register
from .core import ABLATION, SAPBase, Unit


def equal_partition_slides(n: int, s: int, k: int) -> int:
    """Slides per partition: ``n / m*`` with ``m* = ceil(sqrt(n / max(s, k)))``, rounded to
    whole slides, at least ``max(s, k)`` objects, one slide when ``n / m* <= 2s`` (the
    MinTopK-like case), at most the whole window.

    >>> m_star = math.ceil(math.sqrt(100_000 / 100)); m_star, equal_partition_slides(100_000, 10, 100)
    (32, 313)
    >>> equal_partition_slides(100_000, 1_000, 10), equal_partition_slides(40, 10, 2)
    (10, 1)
    """
    m_star = math.ceil(math.sqrt(n / max(s, k)))
    size = n / m_star
    if size <= 2 * s:
        slides = 1
    else:
        slides = max(int(math.floor(size / s + 0.5)), math.ceil(max(s, k) / s))
    return max(1, min(slides, n // s))


@register
class SAPEqual(SAPBase):
    """SAP with equal partitions: ``m* = ceil(sqrt(n / max(s, k)))`` partitions of whole slides.

    Every partition keeps its top ``k`` in ``C`` once finished; ``M_0`` is an S-AVL built
    with the delay policy and amortized over the expiry of the partition before it.
    Complexity per slide: ``O(s log k)`` selection, ``O(k)`` merges, ``O(|C|)``
    expiry, ``O(log k)`` per S-AVL operation; ``O(|C| + k)`` per finished partition (Refine).

    Memory (``bytes``): the layouts of ``engine.algorithms.sap.core`` (``RAW_SLIDES``,
    ``CANDIDATES``, ``OPEN_TOPS``, ``PARTITIONS``, ``SAVL``); SAP keeps the raw best ``k`` of every
    slide of a partition until it knows that partition's ``M`` (``retained``).

    Parameters
    ----------
    delay : bool, default True
        The delay policy (Algorithm 1): ``M_i`` is decided when ``P_{i-1}`` starts expiring.
        ``False`` is the paper's "non-delay" ablation (Table 2): ``M_i`` is built as ``P_i``
        is finished.
    savl : bool, default True
        Build ``M_i`` as an S-AVL (local pruning by ``k - rho`` stacks).  ``False`` is Table 2's
        "Algorithm 1 without the S-AVL": one stack per object, so ``M_0`` is a max-heap of
        every object that passes global pruning.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("sap-equal", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist()
    [3, 2]
    """

    name = "sap-equal"
    summary = "SAP with equal partitions, S-AVL and the delay policy (TKDE 2017, Section 4.1)"
    defaults = ABLATION

    def _choose_unit_slides(self) -> int:
        return equal_partition_slides(self.q.window, self.q.slide, self.q.k)

    def _unit_done(self, unit: Unit) -> None:
        self._finalize([unit], unit.top)
