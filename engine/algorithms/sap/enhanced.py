"""``sap``: SAP with enhanced dynamic partitions: TBUI k-units and UBSA (Sections 4.3, 5.2)."""

from __future__ import annotations

import math
import sys

import numpy as np

from ...jsondata import floats_in, floats_out, saved_capacity
from ...registry import register
from .candidates import Top, merge_tops
from .core import NEVER, Partition, SAPBase, Unit, _f, _key_in, _key_out, quiet_step
from .dynamic import SAPDynamic
from .savl import StackBuilder
from ...kernels import sap as kernels


def zeta_star(k: int) -> float:
    """``zeta*`` solving ``(zeta - k) / sqrt(zeta) = 3`` (Theorem 3): ``zeta* = y^2`` with
    ``y = (3 + sqrt(9 + 4k)) / 2``.

    >>> z = zeta_star(100); round(z, 3), round((z - 100) / math.sqrt(z), 12)
    (134.836, 3.0)
    """
    y = (3 + math.sqrt(9 + 4 * k)) / 2
    return y * y


def zeta_max(k: int) -> float:
    """``zeta_max = zeta* + 3 sqrt(zeta*)`` (solving ``(zeta_max - zeta*) / sqrt(zeta*) = 3``).

    >>> round(zeta_max(100), 3)
    169.671
    """
    z = zeta_star(k)
    return z + 3 * math.sqrt(z)


ZETA_CAP = 2 ** 61
"""A bound on ``zeta*`` above any ``|U^tau|`` (a float64 array holds fewer than ``2^60``
entries): clamping ``zeta*`` there for a huge ``k`` changes no comparison, and keeps ``2 zeta*``
and the uptrend limit within int64 for the kernels."""


def kth_highest(values: np.ndarray, j: int) -> float:
    """The ``j``-th highest value (the paper's median search, ``O(len)``)."""
    return float(np.partition(values, len(values) - j)[len(values) - j])


def quiet_cell(array: str, index: int, kind: type) -> property:
    """An attribute kept in cell ``index`` of the array attribute ``array``, read as ``kind``."""
    return property(lambda self: kind(getattr(self, array)[index]),
                    lambda self, value: getattr(self, array).__setitem__(index, value))


@register
class SAP(SAPDynamic):
    """SAP with enhanced dynamic partitions (the paper's default): dynamic partitions whose
    units are labelled k-units or non-k-units by TBUI, S-AVLs built unit by unit by UBSA.

    **TBUI** (Algorithm 2) keeps a threshold ``tau`` and, per unit, ``U^tau`` (its objects
    scoring at least ``tau``).  Initialisation: from ``tau = -inf``, whenever ``|U^tau|`` reaches
    ``2 zeta*`` ``tau`` becomes its ``zeta*``-th highest score; at the end of the unit ``tau`` is
    the ``zeta*``-th highest of ``U^tau`` and the unit is a k-unit.  Later units: ``|U^tau| >
    max(2 zeta*, zeta_max)`` raises ``tau`` the same way (uptrend); at the end of a unit,
    ``|U^tau| >= k`` makes the previous unit a non-k-unit (Theorem 2) and this one a k-unit,
    ``|U^tau| < k`` confirms the previous k-unit and restarts the initialisation (downtrend).
    ``L_i[j]``: a k-unit keeps its top ``k`` (and the lowest score of ``U^tau``), a non-k-unit its
    top 1.  Vectorised per slide (``O(s)``); ``O(zeta*)`` per threshold update.

    **UBSA** (Section 5.2) builds ``P_i``'s S-AVL unit by unit, newest first, amortized over the
    expiry of ``P_{i-1}``: a non-k-unit whose top 1 ranks below ``F_theta`` (the ``k``-th best of
    the later partitions and the later units of ``P_i``) is skipped; otherwise it is scanned
    (Section 5.1, Appendix C); of a k-unit only its top ``k`` is scanned.  The rest of a k-unit
    ``U_v`` goes into an S-AVL of its own when ``U_{v-2}`` has left the window (just in time:
    none of it can be in an answer before ``U_v^k`` starts expiring); if the lowest score of
    ``U_v^tau`` is below ``F_theta``, only ``U_v^tau`` is scanned instead of the unit.

    Memory (``bytes``): the layouts of ``engine.algorithms.sap.core`` (``RAW_SLIDES``,
    ``CANDIDATES``, ``OPEN_TOPS``, ``PARTITIONS``, ``SAVL``).

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("sap", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist()
    [3, 2]
    """

    name = "sap"
    summary = "SAP with enhanced dynamic partitions: TBUI k-units, UBSA S-AVL (TKDE 2017, the default)"

    # TBUI's scalars live in the quiet slide's state, which the kernels read and write
    _above_n = quiet_cell("_quiet_ints", kernels.QUIET_N, int)  # |U^tau|: the first _above_n entries of _above
    _tau = quiet_cell("_quiet_floats", kernels.QUIET_TAU, float)
    _initialising = quiet_cell("_quiet_ints", kernels.QUIET_INITIALISING, bool)

    def _reset_variant(self) -> None:
        k = self.q.k
        self._zeta = min(math.ceil(zeta_star(k)), ZETA_CAP)
        self._zeta_max = zeta_max(k)
        self._limit = min(max(2 * self._zeta, self._zeta_max), 2 * ZETA_CAP)  # |U^tau| above it is an uptrend
        quiet = self._quiet_ints
        quiet[kernels.QUIET_ZETA], quiet[kernels.QUIET_LIMIT] = self._zeta, math.floor(self._limit)
        quiet[kernels.QUIET_OBSERVE] = True
        self._tau = -math.inf
        self._initialising = True
        self._above = self._quiet_room(0)  # U^tau: the first _above_n entries, in the quiet slide's state
        self._variant_bytes = sys.getsizeof(self._quiet_ints)  # kept at reallocation
        self._above_n = 0
        self._previous: Unit | None = None

    # ----------------------------------------------------------------- TBUI
    def _observe(self, values: np.ndarray) -> None:
        """Algorithm 2 lines 3-9 for one slide (:func:`engine.kernels.sap.tbui_observe`)."""
        self._reserve_above(len(values))
        n, tau = kernels.tbui_observe(values, self._above, self._above_n, self._tau, self._zeta,
                                      self._limit, self._initialising)
        self._above_n, self._tau = int(n), float(tau)

    def _take_slide(self, values: np.ndarray, arrivals: Top, rows: np.ndarray, unit_top: Top, top: Top) -> None:
        """Lines 7-11 and Algorithm 2 lines 3-9 for a slide of objects, in one kernel call
        (:func:`engine.kernels.sap.take_slide_observed`)."""
        self._reserve_above(len(values))
        n, tau = kernels.take_slide_observed(values, *arrivals[1:], self._k, rows, *unit_top, *top,
                                             self._above, self._above_n, self._tau, self._zeta, self._limit,
                                             self._initialising)
        self._above_n, self._tau = int(n), float(tau)

    def _reserve_above(self, more: int) -> None:
        """Room in ``U^tau`` for ``more`` scores (capacity doubled, ``O(|U^tau|)`` amortised)."""
        needed = self._above_n + more
        if needed > len(self._above):
            self._above = self._quiet_room(max(needed, 2 * len(self._above), 64))
            self._variant_resized(sys.getsizeof(self._quiet_ints))

    def _quiet_kernel(self, batch, rows, unit_top, top) -> bool:
        """:func:`engine.kernels.sap.quiet_slide` (or ``quiet_slide_full``, in place, when
        ``top`` is None) with TBUI's observation (Algorithm 2 lines 3-9)."""
        m = len(batch.ids)
        if self._above_n + m > len(self._above):
            self._reserve_above(m)
        step, tops = quiet_step(unit_top, top)
        return step(batch.x, self._weights, batch.seq, batch.ids, batch.t, rows, *tops, self._above, self._quiet_ints,
                    self._quiet_floats)

    def _classify(self, unit: Unit) -> None:
        """Algorithm 2 lines 10-16 at the end of a unit."""
        above = self._above[:self._above_n]
        restart = False
        if self._initialising:
            if len(above) >= self._zeta:
                self._tau = max(self._tau, kth_highest(above, self._zeta))
                above = above[above >= self._tau]
            self._initialising = False
        elif len(above) >= self._k:
            previous = self._previous
            if previous is not None and not previous.frozen and previous.kind == "k":
                previous.kind = "non"
        else:
            restart = True
        unit.kind = "k"
        unit.tau_min = float(above.min()) if len(above) else math.inf
        if restart:
            self._initialising = True
            self._tau = -math.inf
        self._above_n = 0
        self._previous = unit

    # ----------------------------------------------------------------- UBSA
    def _work_items(self, part: Partition) -> int:
        return len(part.units)

    def _form(self, part: Partition, amount: int) -> None:
        """Phase 1 of UBSA over ``amount`` units of ``part``, newest first; the kept figures
        follow the running top and the S-AVL (:meth:`_tally_formation`)."""
        k = self._k
        while amount > 0 and part.cursor > 0:
            part.cursor -= 1
            amount -= 1
            unit = part.units[part.cursor]
            theta = self._kth_key(part.running)
            unit.theta = theta
            slides = range(unit.last, unit.first - 1, -1)
            if unit.kind == "non":
                best = (float(unit.top[0][0]), int(unit.top[1][0])) if len(unit.top[0]) else None
                if best is None or (theta is not None and best < theta):
                    self._events["units_skipped"] += 1
                else:
                    self._scan_slides(part, slides, theta, part.builder)
            else:
                self._scan_slides(part, slides, theta, part.builder, only=np.sort(unit.top[1]))
                unit.pending = len(unit.top[0]) >= k
            self._tally_formation(part, -1)
            part.running = merge_tops(part.running, unit.top, k)
            self._tally_formation(part, 1)
        if part.cursor == 0:
            part.state = "ready"

    def _after_step(self, e: int) -> None:
        """Phase 2 of UBSA: the rest of k-unit ``U_v`` of ``P_0`` once ``U_{v-2}`` has left."""
        if not self._parts:
            return
        front = self._parts[0]
        if front.state != "active":
            return
        if not front.raw:
            return
        gone = e - self._W
        expired_units = sum(1 for unit in front.units if unit.last <= gone)
        for v, unit in enumerate(front.units):
            if unit.pending and v <= expired_units + 1:
                self._phase_two(front, unit)
        if not any(unit.pending for unit in front.units):
            self._release(front)

    def _variant_event(self, front: Partition, nxt: int) -> int:
        """The first slide from ``nxt`` at which :meth:`_after_step` may act: pending k-unit
        ``U_v`` of an active ``P_0`` whose raw slides are kept is due once ``U_{v-2}`` has left
        (``O(units)``)."""
        if front.state != "active" or not front.raw:
            return NEVER
        due = [nxt if v < 2 else front.units[v - 2].last + self._W
               for v, unit in enumerate(front.units) if unit.pending]
        return max(nxt, min(due, default=nxt))

    def _phase_two(self, front: Partition, unit: Unit) -> None:
        unit.pending = False
        if front.state != "active":
            return
        theta = max((key for key in (unit.theta, self._kth_key(self._later_top(front))) if key is not None),
                    default=None)
        builder = StackBuilder(self._k - front.rho)
        floor = None
        if theta is not None and unit.tau_min < theta[0]:
            floor = unit.tau_min
            self._events["units_skipped"] += 1
        self._scan_slides(front, range(unit.last, unit.first - 1, -1), theta, builder,
                          exclude=np.sort(unit.top[1]), floor=floor)
        if not len(builder):
            return
        self._M.absorb_builder(builder)
        lowest = self._C.lowest_of(front.serial)
        if lowest is not None:
            self._promote(front, self._M.pop_columns(len(self._M), above=lowest))
        self._refill(front)

    # ----------------------------------------------------------------- state
    def _dump_variant(self) -> dict:
        return {"tau": _f(self._tau), "initialising": self._initialising, "above": floats_out(self._above[:self._above_n]),
                "above_capacity": len(self._above)}

    def _load_variant(self, data: dict) -> None:
        """Read :meth:`_dump_variant` data; ``above_capacity`` (absent from states saved before it)
        sizes ``U^tau``'s array as it was, so it grows and measures as the saved one."""
        self._tau = float(floats_in([data["tau"]])[0])
        self._initialising = bool(data["initialising"])
        above = floats_in(data["above"])
        capacity = saved_capacity(data, "above_capacity", len(above)) if "above_capacity" in data else len(above)
        self._above = self._quiet_room(capacity)
        self._above[:len(above)] = above
        self._variant_resized(sys.getsizeof(self._quiet_ints))
        self._above_n = len(above)
        units = [u for p in self._parts for u in p.units] + self._open
        self._previous = units[-1] if units else None

    def _check_variant(self) -> None:
        assert np.all(self._above[:self._above_n] >= self._tau), "U^tau holds an object below tau"
        units = [u for p in self._parts for u in p.units] + self._open
        for unit in units:
            assert unit.kind in ("k", "non"), "a finished unit without a TBUI label"
        for p in self._parts:
            if any(u.pending for u in p.units):
                assert p.state in ("forming", "ready", "active") and p.raw, "a pending k-unit without its raw slides"
