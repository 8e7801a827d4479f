"""``sap-dynamic``: SAP with unit-by-unit partitions and the Mann-Whitney test (Section 4.2)."""

from __future__ import annotations

import math

import numpy as np

from ...kernels import sap as kernels
from ...registry import register
from .candidates import Top, empty_top, merge_tops
from .core import ABLATION, SAPBase, Unit

ALPHA = 0.05
"""Probability of a type I error; the paper compares against ``u_{1 - alpha / 2} = 1.96``."""


def eta(k: int) -> float:
    """``eta`` solving ``(eta k - k) / sqrt(eta k) = 3`` (Theorem 1).

    With ``y = sqrt(eta k)``: ``y^2 - 3 y - k = 0``, so ``y = (3 + sqrt(9 + 4k)) / 2``.

    >>> round(eta(100), 4), round((eta(100) * 100 - 100) / math.sqrt(eta(100) * 100), 12)
    (1.3484, 3.0)
    """
    y = (3 + math.sqrt(9 + 4 * k)) / 2
    return y * y / k


def unit_slides(n: int, s: int, k: int) -> int:
    """Slides per unit: ``l_min = sqrt(n max(s, k))`` objects rounded to whole slides, at most
    half the window (so that an open partition plus a filling unit fit in it).

    >>> unit_slides(100_000, 10, 100), unit_slides(100_000, 1_000, 10), unit_slides(10, 10, 3)
    (316, 10, 1)
    """
    slides = max(1, int(math.floor(math.sqrt(n * max(s, k)) / s + 0.5)))
    return max(1, min(slides, n // s // 2))


def max_partition_slides(n: int, s: int, k: int) -> int:
    """``l_max = n / (1 + eta)`` (from ``(n - l_max) / l_max = eta``) in whole slides.

    >>> max_partition_slides(100_000, 10, 100)
    4258
    """
    return max(1, int(n / (1 + eta(k)) // s))


def split_test(top: np.ndarray, history: np.ndarray, k: int) -> tuple[bool, float]:
    """Evaluation function F of Equation (2): does ``P'^k_m`` score higher than ``I^{eta k}``?

    One-sided Mann-Whitney rank-sum test (:func:`engine.kernels.sap.mann_whitney_greater`),
    exact for ``k <= 10`` on tie-free samples
    and the normal approximation without continuity correction above (the paper's
    ``(R1 - k(k + eta k + 1) / 2) / sqrt(eta k^2 (k + eta k + 1) / 12)``), rejected at
    ``u_{1 - alpha / 2}``: the partition is improper when ``p < alpha / 2``.
    Returns ``(improper, p)``.

    >>> split_test(np.arange(10.0) + 100, np.arange(30.0), 10)[0]
    True
    >>> split_test(np.arange(10.0), np.arange(30.0), 10)[0]
    False
    """
    p = float(kernels.mann_whitney_greater(top, history, k <= 10))
    return bool(p < ALPHA / 2), p


@register
class SAPDynamic(SAPBase):
    """SAP with dynamic partitions: units of ``l_min = sqrt(n max(s, k))`` objects are added to
    the open partition while the Mann-Whitney test finds its top ``k`` no higher than the top
    ``eta k`` candidates before it, and while it holds at most ``l_max = n / (1 + eta)`` objects.

    When a unit ``U`` is complete, ``P'_m = P_m + U`` is tested: ``P'^k_m`` against the best
    ``eta k`` members of ``C`` (the candidates of the ``n - |P'_m|`` objects of the window
    before it).  If ``P'^k_m`` scores higher (``F > 0``) or ``|P'_m| > l_max``, ``P_m`` is
    finished (``Refine``) and ``U`` opens ``P_{m+1}``; otherwise ``P_m = P'_m``.  The rest is
    the SAP framework of ``sap-equal``.  Per unit: one compiled test, ``O(eta k log k)``
    (``O(eta k^3)`` when exact, ``k <= 10``); per slide as ``sap-equal``.

    Memory (``bytes``): the layouts of ``engine.algorithms.sap.core`` (``RAW_SLIDES``,
    ``CANDIDATES``, ``OPEN_TOPS``, ``PARTITIONS``, ``SAVL``).

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
    >>> alg = engine.create("sap-dynamic", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist()
    [3, 2]
    """

    name = "sap-dynamic"
    summary = "SAP with dynamic partitions by the Mann-Whitney test (TKDE 2017, Section 4.2)"
    defaults = ABLATION

    def _choose_unit_slides(self) -> int:
        q = self.q
        self._eta = eta(q.k)
        self._history = math.ceil(self._eta * q.k)
        self._max_slides = max_partition_slides(q.window, q.slide, q.k)
        return unit_slides(q.window, q.slide, q.k)

    def _classify(self, unit: Unit) -> None:
        """TBUI labelling of a finished unit (enhanced variant)."""

    def _unit_done(self, unit: Unit) -> None:
        self._classify(unit)
        if not self._open:
            self._open, self._open_top = [unit], unit.top
        else:
            top = merge_tops(self._open_top, unit.top, self._k)
            slides = sum(u.slides for u in self._open) + unit.slides
            if slides > self._max_slides or self._improper(top):
                self._finalize(self._open, self._open_top)
                self._open, self._open_top = [unit], unit.top
            else:
                self._open.append(unit)
                self._open_top = top
        if sum(u.slides for u in self._open) + self._unit_slides > self._W:
            self._finalize(self._open, self._open_top)
            self._open, self._open_top = [], empty_top()

    def _improper(self, top: Top) -> bool:
        history = self._C.score[:self._history]
        if not len(history) or not len(top[0]):
            return False
        self._events["tests"] += 1
        improper = split_test(top[0], history, self._k)[0]
        self._events["splits"] += int(improper)
        return improper
