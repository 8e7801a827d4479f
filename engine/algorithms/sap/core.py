"""The SAP framework (Zhu, Wang, Yang, Zheng, Wang, TKDE 2017), shared by its three variants.

The window is cut into partitions of whole slides.  Finished partitions contribute their top
``k`` to the candidate set ``C`` (Refine merge with dominance counters); the open partition
``P_m`` keeps its own top ``k``; the front partition ``P_0`` may need its meaningful objects
``M_0`` (an S-AVL) when its group dominance number ``P_0.rho < k`` (Lemma 1).  Variants differ
only in how they cut partitions (:meth:`SAPBase._unit_done`) and how they build an S-AVL
(:meth:`SAPBase._form`).  See ``docs/algorithms/sap.md``.
"""

from __future__ import annotations

import abc
import math
import sys
from typing import Any

import numpy as np

from ...base import Algorithm, OnePassStats
from ...memory import OBJECT_FIELDS, PY_FLOAT, WORD, Footprint, Layout, array_bytes, attribute_bytes, deep_size
from ...jsondata import floats_in, floats_out, ints_in
from ...ranking import Answer, score
from ...stream import Batch
from ...kernels import sap as kernels
from .candidates import CandidateSet, Top, block_top, empty_top, merge_tops, packed_top, top_block
from .raw import RAW, RawSlides
from .savl import NO_EXPIRY, MeaningfulSet, StackBuilder

OBJECT = {**OBJECT_FIELDS, "score": 1}

RAW_SLIDES = Layout("sap raw slides", {"object": OBJECT})
"""The retained best ``k`` of every slide of a partition whose ``M`` may still be needed."""

CANDIDATES = Layout("sap candidate set", {"candidate": {**OBJECT, "counter": 1, "partition": 1}})
"""``C``: a candidate with its dominance counter and partition serial."""

OPEN_TOPS = Layout("sap open tops", {"object": OBJECT})
"""``P_m^k`` and the filling unit's top ``k``."""

PARTITIONS = Layout("sap partitions", {
    "partition": {"first": 1, "slides": 1, "objects": 1, "rho": 1, "in_c": 1, "kth": 2, "state": 1, "cursor": 1},
    "partition_top": OBJECT,  # a member of P_i^k, kept while P_i's raw slides are kept
    "unit": {"first": 1, "slides": 1, "objects": 1, "kind": 1, "tau_min": 1, "theta": 2},
    "unit_top": OBJECT,  # a member of a finished unit's top k (L_i) while its partition's raw is kept
})
"""Finished partitions and units (of the open partition too)."""

SAVL = Layout("sap s-avl", {"entry": {**OBJECT, "below": 1}, "stack": {"node": 1, "length": 1}})
"""An S-AVL (``M_0`` or one under construction): entries with their link, and stacks."""

FORMING_STATES = ("forming", "ready")

ABLATION = {"delay": True, "savl": True}
"""The switches of the paper's Table 2 ablation (``sap-equal`` and ``sap-dynamic``): ``delay=False``
builds ``M_i`` for every partition as it is finished ("non-delay"); ``savl=False`` builds it
without the S-AVL's local pruning (one stack per object: ``M_0`` is a plain max-heap of every
object that passes global pruning).  Both stay exact; the defaults are Algorithm 1 with the S-AVL."""

NO_SEQS = np.empty(0, np.int64)

NO_TOP = empty_top()

NO_ABOVE = np.empty(0, np.float64)

NEVER = 2 ** 63
"""A slide no stream reaches (slide indices come from int64 times)."""

NONE_QUIET = -(2 ** 63)
"""``_quiet_until`` when no slide is known to be quiet: no slide index is below it."""

COUNTERS = ("arrivals", "prefiltered", "refines", "refine_drops", "promotions", "savl_builds", "savl_builds_avoided",
            "savl_dropped", "scanned", "units_skipped", "tests", "splits")
"""The event counters ``stats`` reports, kept as they happen in the dict ``stats`` copies."""

FIGURES = ("candidates", "retained", "bytes", "measured_bytes", "meaningful")
"""The sizes ``stats`` reports, kept in its dict as the structures change (deltas where they change)."""

STATS = ("candidates", "retained", "bytes", "measured_bytes", "partitions", "meaningful", *COUNTERS)
"""The keys of ``stats``, in order."""

quiet_slide_raw, quiet_slide_raw_grow = kernels.quiet_slide_raw, kernels.quiet_slide_raw_grow
QUIET_SLOW, QUIET_DROPPED, QUIET_EXPIRES, QUIET_CODES = (kernels.QUIET_SLOW, kernels.QUIET_DROPPED,
                                                         kernels.QUIET_EXPIRES, kernels.QUIET_CODES)

F64, I64 = np.dtype(np.float64), np.dtype(np.int64)
"""The columns' dtypes, as instances (``np.empty`` converts a scalar type on every call)."""

def quiet_step(unit_top: Top, top: Top | None):
    """The quiet-slide kernel and its top arrays: :func:`engine.kernels.sap.quiet_slide_full`
    merging into the filling unit's top in place when the caller made no new ``top``, else
    :func:`engine.kernels.sap.quiet_slide` writing into ``top``."""
    return (kernels.quiet_slide_full, unit_top) if top is None else (kernels.quiet_slide, (*unit_top, *top))


def _record(top: Top) -> np.ndarray:
    rows = np.empty(len(top[0]), RAW)
    rows["score"], rows["seq"], rows["id"], rows["t"] = top
    return rows


def _columns(rows: np.ndarray) -> Top:
    return (rows["score"], rows["seq"], rows["id"], rows["t"])


def _f(value: float):
    return value if math.isfinite(value) else repr(float(value))


def _key_out(key):
    return None if key is None else [_f(key[0]), int(key[1])]


def _key_in(data):
    if data is None:
        return None
    return (float(floats_in([data[0]])[0]), int(data[1]))


def _top_out(top: Top | None):
    if top is None:
        return None
    return [floats_out(top[0]), top[1].tolist(), top[2].tolist(), top[3].tolist()]


def _top_in(data) -> Top | None:
    if data is None:
        return None
    if len(data) != 4 or len({len(column) for column in data}) != 1:
        raise ValueError("a top must be four columns of equal length")
    return (floats_in(data[0]), *(np.asarray(column, np.int64).reshape(-1) for column in data[1:]))


def _entry_in(data) -> tuple:
    if len(data) != 4:
        raise ValueError("an S-AVL entry must be [score, seq, id, t]")
    return (float(floats_in([data[0]])[0]), int(data[1]), int(data[2]), int(data[3]))


def _entry_out(entry: tuple) -> list:
    return [_f(entry[0]), entry[1], entry[2], entry[3]]


class Unit:
    """Consecutive slides: a partition of ``sap-equal`` or a unit of the dynamic variants.

    ``top`` is its best ``k`` (kept while the raw slides are kept); the TBUI fields are the
    unit's entry ``L_i[j]`` (``kind`` ``"k"`` or ``"non"``, ``tau_min`` the lowest score of
    ``U^tau``), ``theta`` the global-pruning key UBSA used for it, ``pending`` whether its
    second UBSA phase is still to come, ``frozen`` whether TBUI may no longer relabel it.
    """

    __slots__ = ("first", "slides", "objects", "top", "kind", "tau_min", "theta", "pending", "frozen")

    def __init__(self, first: int) -> None:
        self.first = first
        self.slides = 0
        self.objects = 0
        self.top: Top = packed_top(0)  # the filling unit's top is one array (see _arm_quiet) until it is finished
        self.kind: str | None = None
        self.tau_min = math.inf
        self.theta: tuple | None = None
        self.pending = False
        self.frozen = False

    @property
    def last(self) -> int:
        return self.first + self.slides - 1

    def to_json(self) -> dict:
        return {"first": self.first, "slides": self.slides, "objects": self.objects, "top": _top_out(self.top),
                "kind": self.kind, "tau_min": _f(self.tau_min), "theta": _key_out(self.theta),
                "pending": self.pending, "frozen": self.frozen}

    @classmethod
    def from_json(cls, data: dict) -> "Unit":
        unit = cls(int(data["first"]))
        unit.slides, unit.objects = int(data["slides"]), int(data["objects"])
        unit.top = _top_in(data["top"])
        unit.kind = data["kind"]
        unit.tau_min = float(floats_in([data["tau_min"]])[0])
        unit.theta = _key_in(data["theta"])
        unit.pending, unit.frozen = bool(data["pending"]), bool(data["frozen"])
        return unit


class Partition:
    """A finished partition ``P_i``: its ``P_i^k``, group dominance number and S-AVL state.

    ``state``: ``pending`` (M not decided), ``none`` (fewer than ``k`` objects: ``M`` is empty),
    ``avoided`` (``rho >= k``: the delay policy skipped the S-AVL), ``forming`` (amortized
    build under way, ``cursor`` work items left), ``ready`` (built, waiting to be the front),
    ``active`` (its S-AVL is ``M_0``), ``dropped`` (``rho`` reached ``k`` after it was built).
    """

    __slots__ = ("serial", "first", "slides", "objects", "kth", "top", "top_seqs", "rho", "in_c", "raw",
                 "state", "capacity", "running", "cursor", "builder", "units")

    def __init__(self, serial: int, units: list[Unit], top: Top, k: int) -> None:
        self.serial = serial
        self.first = units[0].first
        self.slides = sum(u.slides for u in units)
        self.objects = sum(u.objects for u in units)
        self.top = top
        self.top_seqs = np.sort(top[1])
        self.kth = (float(top[0][k - 1]), int(top[1][k - 1])) if len(top[0]) >= k else None
        self.rho = 0
        self.in_c = len(top[0])
        self.raw = True
        self.state = "pending" if self.kth is not None else "none"
        self.capacity = 0
        self.running: Top | None = None
        self.cursor = 0
        self.builder: StackBuilder | None = None
        self.units = units

    @property
    def last(self) -> int:
        return self.first + self.slides - 1

    def to_json(self) -> dict:
        builder = None if self.builder is None else {
            "stacks": [[_entry_out(e) for e in stack] for stack in self.builder.stacks],
            "pruned": self.builder.pruned}
        return {"serial": self.serial, "kth": _key_out(self.kth), "top": _top_out(self.top), "rho": self.rho,
                "in_c": self.in_c, "raw": self.raw, "state": self.state, "capacity": self.capacity,
                "running": _top_out(self.running), "cursor": self.cursor, "builder": builder,
                "units": [u.to_json() for u in self.units]}

    @classmethod
    def from_json(cls, data: dict, k: int) -> "Partition":
        units = [Unit.from_json(u) for u in data["units"]]
        if not units:
            raise ValueError("a partition needs at least one unit")
        top = _top_in(data["top"])
        part = cls(int(data["serial"]), units, top if top is not None else empty_top(), k)
        part.top = top
        if top is not None:
            _share_unit_top(units, top)
        part.top_seqs = NO_SEQS if top is None else np.sort(top[1])
        part.kth = _key_in(data["kth"])
        part.rho, part.in_c, part.raw = int(data["rho"]), int(data["in_c"]), bool(data["raw"])
        part.state, part.capacity = str(data["state"]), int(data["capacity"])
        part.running, part.cursor = _top_in(data["running"]), int(data["cursor"])
        if data["builder"] is not None:
            stacks = [[_entry_in(e) for e in stack] for stack in data["builder"]["stacks"]]
            part.builder = StackBuilder.restore(part.capacity, stacks, int(data["builder"]["pruned"]))
        return part

def _share_unit_top(units: list[Unit], top: Top) -> None:
    """Make ``top``, restored as the merge of the units' tops, the very top of the unit it was
    taken from (``O(k)``): :func:`merge_tops` returns one of its tops unchanged when the other
    is empty, and the two are then one structure, which ``stats`` counts once."""
    filled = [unit for unit in units if len(unit.top[0])]
    source = filled[0] if len(filled) == 1 else units[0] if units and not filled else None
    if source is not None and all(np.array_equal(mine, theirs) for mine, theirs in zip(source.top, top)):
        source.top = top


def _fixed_sizes() -> dict[str, int]:
    """Bytes of the Python records of each structure, measured once on samples (their numpy
    columns excluded): what ``measured_bytes`` adds per record to the arrays' sizes."""
    top = (np.array([0.5]), np.array([10 ** 6]), np.array([10 ** 6]), np.array([10 ** 6]))
    unit = Unit(1)
    part = Partition(1, [unit], top, 1)
    candidates = CandidateSet(1, 1)
    meaningful = MeaningfulSet(1)
    builder = StackBuilder(1)
    answer = Answer.empty()
    return {
        "array": sys.getsizeof(np.empty(0)),
        "top": sys.getsizeof(top),
        "unit": deep_size(unit, exclude=(unit.top,)) + WORD,
        "partition": sys.getsizeof(part) + sys.getsizeof(part.units) + sys.getsizeof(part.kth) + PY_FLOAT + WORD,
        "candidate set": deep_size(candidates) - array_bytes(candidates.columns),
        "meaningful set": deep_size(meaningful) - meaningful.nbytes(),
        "builder": deep_size(builder) - builder.nbytes(),
        "answer": deep_size(answer) - array_bytes([answer.ids, answer.scores, answer.seq]),
    }


FIXED = _fixed_sizes()

WORDS = {layout.name: {kind: layout.words(kind) for kind in layout.records}
         for layout in (RAW_SLIDES, CANDIDATES, OPEN_TOPS, PARTITIONS, SAVL)}
"""Words per record of every layout, computed once."""

RAW_OBJECT_WORDS = WORDS[RAW_SLIDES.name]["object"]
CANDIDATE_WORDS = WORDS[CANDIDATES.name]["candidate"]
OPEN_OBJECT_WORDS = WORDS[OPEN_TOPS.name]["object"]
PARTITION_WORDS, PARTITION_TOP_WORDS, UNIT_WORDS, UNIT_TOP_WORDS = (
    WORDS[PARTITIONS.name][kind] for kind in ("partition", "partition_top", "unit", "unit_top"))
ENTRY_WORDS, STACK_WORDS = WORDS[SAVL.name]["entry"], WORDS[SAVL.name]["stack"]
FIXED_UNIT, FIXED_PARTITION, FIXED_BUILDER, FIXED_ANSWER = (
    FIXED[name] for name in ("unit", "partition", "builder", "answer"))
FIXED_CANDIDATES = FIXED["candidate set"] + 6 * FIXED["array"]
FIXED_MEANINGFUL = FIXED["meaningful set"]
LISTS = 2 * sys.getsizeof([])
"""The lists of the partitions and of the open partition's units, their slots priced with each
partition and unit (:data:`FIXED`) and their spare capacity left out."""
FIXED_HELD = FIXED_CANDIDATES + FIXED_ANSWER + FIXED_MEANINGFUL + LISTS
"""The fixed bytes of ``C``, the answer, ``M_0`` and the two lists together."""
ANSWER_ARRAYS = 3 * FIXED["array"]
ANSWER_ROW = 3 * WORD
PART_TOP_ARRAYS = FIXED["top"] + 5 * FIXED["array"]
TOP_ARRAYS = FIXED["top"] + 4 * FIXED["array"]
RAW_ROW = RAW.itemsize
CANDIDATE_ROW = CandidateSet.ROW_BYTES
PART_TOP_ROW = RAW.itemsize + WORD  # a member of P_i^k and its seq in top_seqs
RAW_OBJECT_MODEL, CANDIDATE_MODEL = WORD * RAW_OBJECT_WORDS, WORD * CANDIDATE_WORDS
"""Modelled bytes (``stats()['bytes']``) of a raw object and of a candidate."""


def _top_bytes(top: Top) -> int:
    """Real bytes of a top: its tuple and four arrays (``O(1)``)."""
    return TOP_ARRAYS + len(top[0]) * RAW_ROW


def _filling_top_bytes(top: Top) -> int:
    """Real bytes of the filling unit's top: four views of one array (:func:`packed_top`), whose
    header is one more (``O(1)``)."""
    return _top_bytes(top) + FIXED["array"]


def _packed(top: Top) -> Top:
    """A copy of ``top`` as four views of one array (:func:`packed_top`), ``O(k)``."""
    packed = packed_top(len(top[0]))
    for mine, theirs in zip(packed, top):
        mine[:] = theirs
    return packed


class SAPBase(OnePassStats, Algorithm):
    """The SAP framework (Algorithm 1 per slide); subclasses choose the partitioning.

    Per slide (``process``), in this order:

    1. **Expiry** (Algorithm 1 lines 1-6): the oldest slide leaves ``P_0``; its candidates leave
       ``C`` (one counting pass, ``O(|C|)``) and its S-AVL entries leave ``M_0``
       (``O(log k)`` each); every expired member of ``P_0^k`` is replaced by the best entry of
       ``M_0`` (``O(log k)``).  When ``P_0`` is gone, ``P_1`` becomes the front and its S-AVL
       becomes ``M_0``.
    2. **Arrival** (lines 7-11): only the slide's best ``k`` can ever be meaningful (its objects
       expire together; Appendix C), selected by a heap (``O(s log k)``); they are kept as the
       slide's raw objects and merged into the open unit's top ``k`` (``O(k)``).
    3. **Partitioning** (line 12): when a unit is complete the variant decides whether a
       partition is finished; a finished ``P_m^k`` is merged into ``C`` (``Refine``, ``O(|C|)``)
       and the group dominance numbers of the older partitions rise.
    4. **Amortized proactive formation** (Section 5.1): while ``P_0`` expires, ``P_1``'s S-AVL is
       built a share at a time, so that it is complete when ``P_0`` is gone; it is not built at
       all if ``P_1.rho >= k`` (the delay policy).

    The answer is the top ``k`` of ``C``, ``P_m^k`` and the filling unit's top ``k`` (``O(k)``).
    """

    exact = True
    stream = "single"
    defaults: dict[str, Any] = {}

    # ----------------------------------------------------------------- construction
    def _reset(self) -> None:
        q = self.q
        self._k = q.k
        self._s = q.slide
        self._W = q.window // q.slide
        self._expiry = 1 if q.kind == "count" else 3
        self._weights = np.asarray(q.weights, np.float64)
        self._unit_slides = self._choose_unit_slides()
        self._slide: int | None = None
        self._quiet_until = NONE_QUIET  # slides before it are quiet (_next_event)
        self._raw = RawSlides()
        self._part_tops = 0  # partitions holding their P_i^k (those whose raw slides are kept)
        self._part_top_size = 0
        self._units = 0  # finished units, in partitions and in the open partition
        self._unit_tops = 0  # finished units holding a top k of their own (not their partition's)
        self._unit_top_size = 0
        self._parts: list[Partition] = []
        self._serial = 0
        self._open: list[Unit] = []
        self._open_top: Top = empty_top()
        self._filling: Unit | None = None
        self._open_cache: Top | None = None
        self._cache_bytes = 0  # the cache's arrays when it is a top of its own
        self._open_size = self._open_words = self._open_bytes = 0  # P_m^k and the filling unit's top: _tally_open
        self._meaningful_retained = 0  # see _front_changed
        self._C = CandidateSet(q.k, self._expiry)
        self._M = MeaningfulSet(self._expiry)
        # M_0's stacks, entries and bytes as stats() counts them: read again after every slide that may change them
        self._m_figures = self._M.meta.tolist()
        self._answer: Answer | None = Answer.empty()
        # the quiet slide's scalars (kernels.QUIET_INTS, QUIET_FLOATS): k, TBUI's, the answer's verdict and last key
        # and what quiet_slide_raw reads and counts (the window, the expiry keys, the weights)
        # (the float cells are the float64 view of the int array after its int cells)
        self._quiet_ints = np.zeros(kernels.QUIET_INTS + kernels.QUIET_WEIGHTS + len(self._weights), I64)
        self._quiet_ints[kernels.QUIET_K] = q.k
        self._quiet_ints[kernels.QUIET_WINDOW], self._quiet_ints[kernels.QUIET_SLIDE_SIZE] = self._W, self._s
        self._quiet_floats = self._quiet_ints.view(F64)[kernels.QUIET_INTS:]
        self._quiet_floats[kernels.QUIET_WEIGHTS:] = self._weights
        self._quiet_args: tuple | None = None
        self._quiet_grows = False  # the filling top is not full: the call merges it into the new top in _quiet_args
        self._answer_bytes = ANSWER_ARRAYS  # its arrays' headers and values
        self._other_bytes = 0  # everything outside the structures: measured once, then kept
        self._variant_bytes = 0  # the variant's attributes whose size changes (part of _other_bytes)
        # stats()' dict, which it copies: every figure kept as the structures change (the sizes by deltas)
        self._events = dict.fromkeys(STATS, 0)
        self._reset_variant()
        self._arm_quiet()
        self._tally_open()
        self._events.update(dict.fromkeys(FIGURES, 0))
        self._measure_fixed()
        self._events.update(self._figures(self._aggregates()))

    def _reset_variant(self) -> None:
        """Variant state (TBUI)."""

    @abc.abstractmethod
    def _choose_unit_slides(self) -> int:
        """Slides in the next unit (the variant's partitioning rule)."""

    # ----------------------------------------------------------------- per slide
    def last_end(self) -> int | None:
        return None if self._slide is None else self._slide * self._s

    def process(self, batch: Batch) -> None:
        """One slide: ``O(s log k + |C| + k)`` plus ``O(log k)`` per S-AVL operation.

        A quiet slide (the next slide, before :attr:`_quiet_until`, with objects) is one call
        of :func:`engine.kernels.sap.quiet_slide_raw` when nothing but its arrival and the
        expiry of one raw slide happens in it (:meth:`_arm_quiet` tells the kernel when
        something else may); when a slide of ``P_0`` leaves ``C`` or ``M_0`` as well, that
        expiry (:meth:`_expire_quiet`) and the call; else :meth:`_quiet_step`.  Any other slide
        goes through every step of Algorithm 1 (:meth:`_step`).
        """
        e, m = batch.end // self._s, len(batch.ids)
        if e < self._quiet_until and m:
            args = self._quiet_args
            if args is not None:
                grows = self._quiet_grows
                step = quiet_slide_raw_grow if grows else quiet_slide_raw
                done = step(batch.x, batch.seq, batch.ids, batch.t, *args)
                if done == QUIET_EXPIRES:  # a slide of P_0 leaves C or M_0: expired here, then the call again
                    self._expire_quiet(e - self._W)
                    done = step(batch.x, batch.seq, batch.ids, batch.t, *args)
                events = self._events
                gained = done // QUIET_CODES  # raw objects: the slide's best k less the expired slide's
                if gained:
                    events["retained"] += gained
                    events["bytes"] += RAW_OBJECT_MODEL * gained
                done %= QUIET_CODES
                if done < QUIET_SLOW:
                    events["arrivals"] += m
                    if m > self._k:
                        events["prefiltered"] += m - self._k
                    self._slide = e
                    if done == QUIET_DROPPED:
                        self._drop_answer()
                    if grows:
                        self._filling.top = block_top(args[2])
                        self._tally_open()
                        self._arm_quiet()
                    return
            self._fold_quiet()
            self._quiet_step(e, batch)
            self._arm_quiet()
            return
        self._fold_quiet()
        if len(batch):
            values = score(batch.x, self.q.weights)
            self._step(e, values, (values, batch.seq, batch.ids, batch.t))
        else:
            empty = empty_top()
            self._step(e, empty[0], empty)
        self._drop_answer()
        self._quiet_until = self._next_event(e)
        self._meaningful_changed()
        self._arm_quiet()

    def _arm_quiet(self) -> None:
        """Tell :func:`engine.kernels.sap.quiet_slide_raw` what it reads (``O(1)``), after every
        slide the interpreter takes: the slide, the lowest expiry keys of ``C`` and ``M_0``,
        its arrays (the ring and index of the raw slides, the filling unit's top as one array,
        ``U^tau``), and whether a quiet slide needs the interpreter whatever its arrival (then
        there are no arrays, and no call): when an S-AVL is forming (a share of it is built on
        every slide) or the open tops are cached (the cache must go).  While the filling unit's
        top is not full, the arrays include its next top, made here, for
        :func:`engine.kernels.sap.quiet_slide_raw_grow`."""
        ints, filling, parts, raw, M = self._quiet_ints, self._filling, self._parts, self._raw, self._M
        blocked = (filling is None or self._open_cache is not None or self._cache_bytes != 0
                   or (len(parts) > 1 and parts[1].state == "forming"))
        ints[kernels.QUIET_BLOCKED] = blocked
        ints[kernels.QUIET_SLIDE] = 0 if self._slide is None else self._slide
        ints[kernels.QUIET_C_OLDEST] = self._C.oldest
        ints[kernels.QUIET_M_NEXT] = M._next_expiry if M else NO_EXPIRY
        held = 0 if blocked else len(filling.top[0])
        self._quiet_grows = held < self._k
        if blocked:
            self._quiet_args = None
            return
        block = filling.top[1].base  # the filling unit's top is one array (_packed)
        if self._quiet_grows:  # sized for a slide of s objects (a count window's): another is declined
            following = np.empty((4, min(self._k, held + min(self._k, self._s))), I64)
            self._quiet_args = (raw.ring, block, following, ints)
        else:
            self._quiet_args = (raw.ring, block, ints)

    def _quiet_room(self, capacity: int) -> np.ndarray:
        """The quiet slide's state with room for ``capacity`` floats after the weights (``U^tau``,
        which :func:`engine.kernels.sap.quiet_slide_raw` reads there): a new array when it has
        less, its cells and floats copied (``O(capacity)``); returns the view of that room.  The
        call's arguments are armed again after the slide (:meth:`_arm_quiet`)."""
        ints = self._quiet_ints
        cells = kernels.QUIET_INTS + kernels.QUIET_WEIGHTS + len(self._weights)
        if len(ints) < cells + capacity:
            ints = np.empty(cells + capacity, I64)
            ints[:len(self._quiet_ints)] = self._quiet_ints
            self._quiet_ints = ints
            self._quiet_floats = ints.view(F64)[kernels.QUIET_INTS:]
        return self._quiet_floats[kernels.QUIET_WEIGHTS + len(self._weights):]

    def _fold_quiet(self) -> None:
        """The filling unit's slides and objects that :func:`engine.kernels.sap.quiet_slide_raw`
        counted go to the unit (``O(1)``): before the interpreter reads the unit."""
        ints = self._quiet_ints
        slides = int(ints[kernels.QUIET_UNIT_SLIDES])
        if slides:
            self._filling.slides += slides
            self._filling.objects += int(ints[kernels.QUIET_UNIT_OBJECTS])
            ints[kernels.QUIET_UNIT_SLIDES] = ints[kernels.QUIET_UNIT_OBJECTS] = 0

    def _next_event(self, e: int) -> int:
        """The first slide after ``e`` at which a step of Algorithm 1 other than an arrival, the
        expiry of one slide of ``P_0`` (from ``C``, ``M_0`` and the raw slides) and the answer
        may act (``O(1)``, plus :meth:`_variant_event`): the filling unit's end, ``P_0``'s last
        slide expiring, the start of ``P_1``'s formation, a step left pending.  A share of
        ``P_1``'s formation under way is part of a quiet slide."""
        nxt = e + 1
        filling = self._filling
        if filling is None:
            return nxt
        event = filling.first + self._unit_slides - 1
        parts = self._parts
        if parts:
            front = parts[0]
            if front.state in ("pending",) + FORMING_STATES:
                return nxt
            event = min(event, front.last + self._W)
            if len(parts) > 1 and parts[1].state == "pending":
                event = min(event, max(nxt, front.first + self._W))
            event = min(event, self._variant_event(front, nxt))
        return event

    def _variant_event(self, front: Partition, nxt: int) -> int:
        """The first slide from ``nxt`` at which :meth:`_after_step` may act (never, here)."""
        return NEVER

    def _quiet_step(self, e: int, batch: Batch) -> None:
        """A slide of :meth:`_step` with no event (see :meth:`_next_event`): one slide of ``P_0``
        expires (:meth:`_expire_slide`: ``C``, ``M_0`` and its raw slide; then :meth:`_refill`),
        the slide's objects arrive in the filling unit, in the same kernel call that
        tells whether the previous answer stands (:func:`engine.kernels.sap.quiet_slide`, its
        scalars in ``_quiet_ints`` and ``_quiet_floats``); then the share of ``P_1``'s
        S-AVL formation, if one is under way (:meth:`_advance_formation`).

        The answer is the top ``k`` of ``C``, ``P_m^k`` and the filling unit's top; on a quiet
        slide ``P_m^k`` does not change and the filling unit only gains the slide's objects.
        So a previous answer of ``k`` objects stands, and is kept, when no member of ``C``
        expired and no arrival ranks above its last; otherwise :meth:`topk` makes the new one.
        ``O(s log k)``, plus ``O(|C|)`` when a member of ``C`` expires and ``O(log k)`` per
        expired or promoted ``M_0`` entry and per object the formation scans."""
        self._slide = e
        self._open_cache = None
        if self._cache_bytes:
            self._set_cache_bytes(0)
        gone = e - self._W
        self._expire_quiet(gone)
        parts = self._parts
        m, k = len(batch.ids), self._k
        unit = self._filling
        unit.slides += 1
        unit.objects += m
        unit_top = unit.top
        chosen, held = min(k, m), len(unit_top[0])
        rows = self._reserve_raw(e, chosen)
        if held == k:  # the top stays k objects: merged in place (nothing else holds the filling unit's top)
            top = None
        else:
            top = packed_top(min(k, chosen + held))
        if not self._quiet_kernel(batch, rows, unit_top, top):
            self._drop_answer()
        if top is not None:
            unit.top = top
            self._tally_open()
        events = self._events
        events["arrivals"] += m
        events["prefiltered"] += m - chosen
        if len(parts) > 1:  # the share of _advance_formation (no partition is pending on a quiet slide)
            second = parts[1]
            if second.state == "forming" and parts[0].first <= gone:
                self._form(second, -(-second.cursor // (parts[0].last - gone + 1)))

    def _expire_quiet(self, gone: int) -> None:
        """The expiry of a quiet slide (Algorithm 1 lines 1-6): slide ``gone`` of ``P_0`` leaves
        (:meth:`_expire_slide`; ``P_0`` stays in the window, its last slide is an event), then
        :meth:`_refill` if ``M_0`` had entries; the answer is dropped when ``C`` changed.  The
        quiet call's expiry keys of ``C`` and ``M_0`` follow (``O(1)`` plus the expiry's work)."""
        parts = self._parts
        if parts:
            front = parts[0]
            if front.first <= gone:
                if self._expire_slide(front, gone):
                    self._drop_answer()
                if self._m_figures[1]:  # M_0 had entries at the slide's start: they may change
                    if self._refill(front):
                        self._drop_answer()
                    self._meaningful_changed()
        ints, M = self._quiet_ints, self._M
        ints[kernels.QUIET_C_OLDEST] = self._C.oldest
        ints[kernels.QUIET_M_NEXT] = M._next_expiry if M else NO_EXPIRY

    def _quiet_kernel(self, batch: Batch, rows: np.ndarray, unit_top: Top, top: Top | None) -> bool:
        """:func:`engine.kernels.sap.quiet_slide` into the new ``top``, or
        :func:`engine.kernels.sap.quiet_slide_full` into ``unit_top`` in place (``top`` None),
        without TBUI (the variant with TBUI observes too): whether the answer stands."""
        step, tops = quiet_step(unit_top, top)
        return step(batch.x, self._weights, batch.seq, batch.ids, batch.t, rows, *tops, NO_ABOVE, self._quiet_ints,
                    self._quiet_floats)

    def _step(self, e: int, values: np.ndarray, arrivals: Top) -> None:
        self._slide = e
        self._open_cache = None
        self._set_cache_bytes(0)
        self._expire(e)
        self._arrive(e, values, arrivals)
        self._open_cache = None
        self._set_cache_bytes(0)
        self._advance_formation(e)
        self._activate_front()
        self._after_step(e)

    def _after_step(self, e: int) -> None:
        """Variant work at the end of a slide (UBSA's second phase)."""

    def _expire(self, e: int) -> None:
        gone = e - self._W
        parts = self._parts
        if not parts or parts[0].first > gone:
            return
        front = parts[0]
        self._expire_slide(front, gone)
        if front.last <= gone:
            self._M.clear()
            self._release(front)
            self._units -= len(front.units)
            self._held(-(PARTITION_WORDS + UNIT_WORDS * len(front.units)),
                       -(FIXED_PARTITION + FIXED_UNIT * len(front.units)))
            self._tally_formation(front, -1)
            del parts[0]
            self._tally_open()
            self._front_changed()
        else:
            self._refill(front)

    def _expire_slide(self, front: Partition, gone: int) -> int:
        """Algorithm 1 lines 1-5 for slide ``gone`` of ``P_0``: its candidates leave ``C`` (a
        pass only once the bound reaches ``C``'s oldest member, ``O(|C|)``), its entries leave
        ``M_0`` (``O(log k)`` each) and its raw objects are dropped.  Returns how many
        candidates left ``C``."""
        bound = gone * self._s
        expired = self._C.expire(bound)
        if expired:
            front.in_c -= expired
            self._candidates_changed(-expired, -expired if front.raw else 0)
        self._M.expire(bound)
        self._raw_drop(gone)
        return expired

    def _refill(self, front: Partition) -> int:
        """Algorithm 1 line 6 with Section 5.1: expired members of ``P_0^k`` are replaced by
        the best entries of ``M_0`` (``O(log k)`` each).  Returns how many entered ``C``."""
        M = self._M
        wanted = self._k - front.in_c
        if not M or wanted <= 0:
            return 0
        return self._promote(front, M.pop_columns(min(wanted, len(M))))

    def _promote(self, front: Partition, promoted: Top) -> int:
        """Move entries popped from ``M_0`` (best first) into ``C`` with their dominance
        counters.  Counters only grow down the list: from the first entry that ``k`` newer
        candidates dominate, they dominate every entry left, and ``M_0`` is emptied.  Returns
        how many entered ``C``."""
        if not len(promoted[0]):
            return 0
        counts = self._C.dominators(promoted[0], front.serial)
        dead = int(np.searchsorted(counts, self._k, side="left"))
        if dead < len(counts):
            promoted, counts = tuple(column[:dead] for column in promoted), counts[:dead]
            self._M.clear()
            self._events["savl_dropped"] += 1
        if dead:
            self._C.insert(promoted, counts, front.serial)
            front.in_c += dead
            self._candidates_changed(dead, dead if front.raw else 0)
            self._events["promotions"] += dead
        return dead

    def _arrive(self, e: int, values: np.ndarray, arrivals: Top) -> None:
        k = self._k
        m = len(values)
        unit = self._filling
        changed = unit is None  # the open tops' figures (_tally_open)
        if changed:
            unit = self._filling = Unit(e)
        unit.slides += 1
        unit.objects += m
        if m:
            chosen, held = min(k, m), len(unit.top[0])
            rows = self._reserve_raw(e, chosen)
            top = packed_top(min(k, chosen + held))
            self._take_slide(values, arrivals, rows, unit.top, top)
            events = self._events
            events["arrivals"] += m
            events["prefiltered"] += m - chosen
            changed = changed or len(top[0]) != held
            unit.top = top
        else:
            self._observe(values)
        if unit.slides == self._unit_slides:
            unit.top = tuple(column.copy() for column in unit.top)  # only the filling unit's top is one array
            self._filling = None
            self._units += 1
            self._held(UNIT_WORDS, FIXED_UNIT)
            self._count_unit_top(unit, 1)
            self._unit_done(unit)
            changed = True
        if changed:
            self._tally_open()

    def _tally_open(self) -> None:
        """The sizes of ``P_m^k`` and the filling unit's top, and the number of partitions, kept
        for ``stats``: called where they change (a partition leaves in :meth:`_expire`; the
        filling unit is opened, grows or is finished in :meth:`_arrive`), ``O(open units)``."""
        opened, filling = self._open_top, self._filling
        size, measured = len(opened[0]), self._open_top_bytes()
        if filling is not None:
            size += len(filling.top[0])
            measured += FIXED_UNIT + _filling_top_bytes(filling.top)
        events = self._events
        events["candidates"] += size - self._open_size
        events["bytes"] += WORD * OPEN_OBJECT_WORDS * (size - self._open_size)
        events["measured_bytes"] += measured - self._open_bytes
        self._open_size = size
        self._open_words = OPEN_OBJECT_WORDS * size
        self._open_bytes = measured
        events["partitions"] = len(self._parts) + (1 if self._open or filling is not None else 0)

    def _open_top_bytes(self) -> int:
        """The measured bytes of ``P_m^k`` (``O(open units)``): none when it is the very top of
        one of its units (a single unit, or a merge with an empty top), already counted with
        the unit tops."""
        opened = self._open_top
        return 0 if any(unit.top is opened for unit in self._open) else _top_bytes(opened)

    def _take_slide(self, values: np.ndarray, arrivals: Top, rows: np.ndarray, unit_top: Top, top: Top) -> None:
        """Lines 7-11 for a slide of objects (:func:`engine.kernels.sap.take_slide`), then
        :meth:`_observe`; a variant may do both in one kernel call."""
        kernels.take_slide(values, *arrivals[1:], self._k, rows, *unit_top, *top)
        self._observe(values)

    def _observe(self, values: np.ndarray) -> None:
        """Variant hook on every slide's scores (TBUI)."""

    @abc.abstractmethod
    def _unit_done(self, unit: Unit) -> None:
        """A unit is complete: the variant decides whether it ends the open partition."""

    # ----------------------------------------------------------------- partitions
    def _finalize(self, units: list[Unit], top: Top) -> None:
        """A finished partition: ``C <- Refine(C, P_m^k)`` and the group dominance numbers."""
        k = self._k
        part = Partition(self._serial, units, top, k)
        self._serial += 1
        dropped = self._C.refine(top, part.serial)
        self._events["refines"] += 1
        self._events["refine_drops"] += len(dropped)
        by_serial = {p.serial: p for p in self._parts}
        raw_dropped = 0
        for serial in dropped:
            by_serial[serial].in_c -= 1
            raw_dropped += by_serial[serial].raw
        self._candidates_changed(part.in_c - len(dropped), part.in_c - raw_dropped)
        self._part_tops += 1
        self._part_top_size += len(top[0])
        self._held(PARTITION_WORDS + PARTITION_TOP_WORDS * len(top[0]),
                   FIXED_PARTITION + PART_TOP_ARRAYS + len(top[0]) * PART_TOP_ROW)
        for unit in units:  # the merge of the units' tops is one of them when the others are empty
            if unit.top is top:
                self._count_unit_top(unit, -1)
        negated = -top[0]
        for p in self._parts:
            if p.kth is not None and p.rho < k:
                p.rho += int(np.searchsorted(negated, -p.kth[0], side="right"))
        self._parts.append(part)
        self._front_changed()
        if part.state == "none":
            self._release(part)
        front = self._parts[0]
        if front.state == "active" and front.serial in by_serial and front.serial in dropped:
            self._drop_meaningful(front)
        for p in self._parts:
            if p.rho >= k and p.state in ("pending", "forming", "ready", "active"):
                if p.state == "pending":
                    p.state = "avoided"
                    self._events["savl_builds_avoided"] += 1
                else:
                    self._drop_meaningful(p)
                self._release(p)

    def _drop_meaningful(self, part: Partition) -> None:
        """``rho`` reached ``k`` (or a member of ``P_0^k`` was dominated ``k`` times): every
        object below ``P^k`` is dominated by ``k`` newer candidates; drop its S-AVL."""
        if part.state == "active":
            self._M.clear()
        self._tally_formation(part, -1)
        part.builder = None
        part.running = None
        part.state = "dropped"
        for unit in part.units:
            unit.pending = False
        self._events["savl_dropped"] += 1
        self._release(part)

    def _release(self, part: Partition) -> None:
        """Forget a partition's raw slides once no S-AVL can need them."""
        if not part.raw:
            return
        self._raw_dropped(self._raw.drop_span(part.first, part.last))
        self._part_tops -= 1
        self._part_top_size -= len(part.top[0])
        self._held(-PARTITION_TOP_WORDS * len(part.top[0]), -(PART_TOP_ARRAYS + len(part.top[0]) * PART_TOP_ROW))
        self._events["retained"] += part.in_c  # no longer among the raw slides: counted as candidates
        for unit in part.units:
            if unit.top is not None and unit.top is not part.top:
                self._count_unit_top(unit, -1)
            unit.top = None
        part.raw = False
        part.top = None
        part.top_seqs = NO_SEQS
        self._front_changed()

    def _front_changed(self) -> None:
        """``M_0``'s entries count in ``retained`` once the front partition's raw slides are
        released (before, they are among them): kept for ``stats`` where the front partition
        or its ``raw`` changes (``O(1)``)."""
        parts = self._parts
        retained = 1 if parts and not parts[0].raw else 0
        self._events["retained"] += self._m_figures[1] * (retained - self._meaningful_retained)
        self._meaningful_retained = retained

    def _meaningful_changed(self) -> None:
        """Read ``M_0``'s stacks, entries and bytes again (after a slide that may change them)
        and move ``stats``' figures by the difference (``O(1)``)."""
        stacks, meaningful, nbytes = figures = self._M.meta.tolist()
        old_stacks, old_meaningful, old_bytes = self._m_figures
        if figures != self._m_figures:
            self._m_figures = figures
            events = self._events
            events["candidates"] += meaningful - old_meaningful
            events["retained"] += (meaningful - old_meaningful) * self._meaningful_retained
            events["bytes"] += WORD * (ENTRY_WORDS * (meaningful - old_meaningful) + STACK_WORDS * (stacks - old_stacks))
            events["measured_bytes"] += nbytes - old_bytes
            events["meaningful"] = meaningful

    def _candidates_changed(self, change: int, raw_change: int) -> None:
        """``C`` gained (or lost) ``change`` members, ``raw_change`` of them of partitions whose raw
        slides are kept (already counted in ``retained``): ``stats``' figures follow (``O(1)``)."""
        events = self._events
        events["candidates"] += change
        events["retained"] += change - raw_change
        events["bytes"] += CANDIDATE_MODEL * change
        events["measured_bytes"] += CANDIDATE_ROW * change

    def _held(self, words: int, nbytes: int) -> None:
        """The raw slides, partitions, units or an S-AVL under construction gained (or lost)
        ``words`` modelled words and ``nbytes`` measured bytes."""
        events = self._events
        events["bytes"] += WORD * words
        events["measured_bytes"] += nbytes

    def _set_cache_bytes(self, nbytes: int) -> None:
        self._events["measured_bytes"] += nbytes - self._cache_bytes
        self._cache_bytes = nbytes

    def _drop_answer(self) -> None:
        self._answer = None
        self._quiet_ints[kernels.QUIET_FULL] = False
        self._events["measured_bytes"] -= self._answer_bytes
        self._answer_bytes = 0

    def _reserve_raw(self, slide: int, size: int) -> np.ndarray:
        """Room for the ``size`` best objects of ``slide`` among the raw slides: the rows the
        caller's kernel writes them into.  The ring's bytes move when it is rebuilt."""
        rows, grown = self._raw.reserve(slide, size)
        events = self._events
        events["retained"] += size
        events["bytes"] += RAW_OBJECT_MODEL * size
        if grown:
            events["measured_bytes"] += grown
        return rows

    def _raw_drop(self, slide: int) -> None:
        self._raw_dropped(self._raw.drop(slide))

    def _raw_dropped(self, size: int) -> None:
        """``size`` raw objects left the raw slides."""
        if size:
            events = self._events
            events["retained"] -= size
            events["bytes"] -= RAW_OBJECT_MODEL * size

    def _count_unit_top(self, unit: Unit, sign: int) -> None:
        self._unit_tops += sign
        self._unit_top_size += sign * len(unit.top[0])
        self._held(sign * UNIT_TOP_WORDS * len(unit.top[0]), sign * (TOP_ARRAYS + len(unit.top[0]) * RAW_ROW))

    def _aggregates(self) -> dict[str, int]:
        """The counts ``stats``' figures follow, recomputed from the structures (``O(partitions +
        units + raw slides)``): the kept ones (attributes) and the modelled words, measured bytes
        and members of ``C`` of the raw slides, partitions, units and S-AVLs under construction."""
        parts = self._parts
        owner_top = {id(unit): p.top for p in parts for unit in p.units}
        finished = [unit for p in parts for unit in p.units] + self._open
        own = [unit for unit in finished if unit.top is not None and unit.top is not owner_top.get(id(unit))]
        raw_size = sum(len(rows) for _, rows in self._raw.items())
        part_top_size = sum(len(p.top[0]) for p in parts if p.raw)
        unit_top_size = sum(len(unit.top[0]) for unit in own)
        held_words = (RAW_OBJECT_WORDS * raw_size + PARTITION_WORDS * len(parts) + PARTITION_TOP_WORDS * part_top_size
                      + UNIT_WORDS * len(finished) + UNIT_TOP_WORDS * unit_top_size)
        held_bytes = (self._raw.nbytes() + len(parts) * FIXED_PARTITION + len(finished) * FIXED_UNIT
                      + sum(p.raw for p in parts) * PART_TOP_ARRAYS + part_top_size * PART_TOP_ROW
                      + len(own) * TOP_ARRAYS + unit_top_size * RAW_ROW)
        for part in parts:
            if part.builder is not None:
                held_words += ENTRY_WORDS * len(part.builder) + STACK_WORDS * part.builder.stack_count
                held_bytes += FIXED_BUILDER + part.builder.nbytes()
            if part.running is not None:
                held_bytes += _top_bytes(part.running)
        return {"held_words": held_words, "held_bytes": held_bytes, "raw_in_c": sum(p.in_c for p in parts if p.raw),
                "_part_tops": sum(p.raw for p in parts), "_part_top_size": part_top_size, "_units": len(finished),
                "_unit_tops": len(own), "_unit_top_size": unit_top_size, "raw_size": raw_size}

    def _figures(self, counts: dict[str, int]) -> dict[str, int]:
        """``stats``' sizes from :meth:`_aggregates`' ``counts``, the sizes of ``C``, the open tops
        and ``M_0`` (as last read) and the kept byte figures: where the kept figures start and
        what :meth:`check` compares them with.

        ``bytes`` is the sum of :meth:`footprints`' modelled costs.  ``measured_bytes``: the raw
        slides' (their ring and index), partitions', units' and S-AVLs' bytes, the open tops'
        and the answer's bytes, the arrays of ``C`` and ``M_0``, and ``_other_bytes`` (every
        other attribute: walked once in ``_reset``, then kept as the variant's arrays are
        reallocated)."""
        stacks, meaningful, m_bytes = self._m_figures
        candidates = len(self._C.score)
        return {
            "candidates": candidates + self._open_size + meaningful,
            "retained": counts["raw_size"] + candidates - counts["raw_in_c"] + meaningful * self._meaningful_retained,
            "bytes": WORD * (counts["held_words"] + CANDIDATE_WORDS * candidates + self._open_words
                             + ENTRY_WORDS * meaningful + STACK_WORDS * stacks),
            "measured_bytes": (counts["held_bytes"] + CANDIDATE_ROW * candidates
                               + self._open_bytes + self._cache_bytes + self._answer_bytes + m_bytes + self._other_bytes),
            "meaningful": meaningful}

    def _open_tops(self) -> Top:
        """The best ``k`` of the open partition and the filling unit (cached per slide)."""
        if self._open_cache is None:
            top = self._open_top
            if self._filling is not None:
                top = merge_tops(top, self._filling.top, self._k)
                if top is not self._open_top and top is not self._filling.top:
                    self._set_cache_bytes(_top_bytes(top))
            self._open_cache = top
        return self._open_cache

    def _later_top(self, part: Partition) -> Top:
        """The best ``k`` objects known to be newer than ``part``: candidates of later
        partitions, ``P_m^k`` and the filling unit's top ``k``."""
        return merge_tops(self._C.later_top(part.serial, self._k), self._open_tops(), self._k)

    def _kth_key(self, top: Top | None) -> tuple | None:
        if top is None or len(top[0]) < self._k:
            return None
        return (float(top[0][self._k - 1]), int(top[1][self._k - 1]))

    # ----------------------------------------------------------------- S-AVL formation
    def _advance_formation(self, e: int) -> None:
        """Amortized proactive formation: while ``P_0`` expires, build ``P_1``'s S-AVL a share
        at a time so that it is ready when ``P_0`` is gone.  Non-delay (``delay=False``): a
        partition finished in this slide gets its whole S-AVL at once."""
        parts = self._parts
        if not self.params.get("delay", True):
            for part in reversed(parts):
                if part.state not in ("pending", "none"):
                    break
                if part.state == "none":
                    continue
                self._start_formation(part)
                self._form(part, part.cursor)
        if len(parts) < 2:
            return
        front, second = parts[0], parts[1]
        gone = e - self._W
        if front.first > gone:
            return
        if second.state == "pending":
            self._start_formation(second)
        if second.state == "forming":
            alive = front.last - gone
            self._form(second, -(-second.cursor // (alive + 1)))

    def _start_formation(self, part: Partition) -> None:
        """The delay policy: decide on ``M_i`` as late as possible (``rho`` only grows)."""
        part.state = "forming"
        part.capacity = self._k - part.rho if self.params.get("savl", True) else self._raw_objects(part)
        running = self._later_top(part)
        if running is self._open_cache:  # the slide's cache, or the filling unit's top, which changes in place
            running = tuple(column.copy() for column in running)
        part.running = running
        part.builder = StackBuilder(part.capacity)
        part.cursor = self._work_items(part)
        for unit in part.units:
            unit.frozen = True
        self._tally_formation(part, 1)
        self._events["savl_builds"] += 1

    def _raw_objects(self, part: Partition) -> int:
        """Objects in the raw slides of ``part``: the stacks of an S-AVL without local pruning
        (``savl=False``), one per object (``O(slides)``)."""
        return max(1, sum(map(len, self._raw.span(range(part.first, part.last + 1)))))

    def _tally_formation(self, part: Partition, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) an S-AVL under construction and its running top to
        the kept figures: called around every change of them (``O(1)``): in :meth:`_form`, where
        the running top changes, and in :meth:`_scan_slides`, where objects enter the S-AVL."""
        builder = part.builder
        if builder is not None:
            self._held(sign * (ENTRY_WORDS * int(builder.meta[1]) + STACK_WORDS * int(builder.meta[0])),
                       sign * (FIXED_BUILDER + builder.nbytes()))
        running = part.running
        if running is not None:
            self._held(0, sign * _top_bytes(running))

    def _work_items(self, part: Partition) -> int:
        return part.slides

    def _form(self, part: Partition, amount: int) -> None:
        """Scan ``amount`` slides of ``part``, newest first (Section 5.1 with Appendix C); the
        kept figures follow the S-AVL (:meth:`_tally_formation`)."""
        cursor = part.cursor
        amount = min(amount, cursor)
        if amount > 0:
            newest = part.first + cursor - 1
            part.cursor = cursor - amount
            self._scan_slides(part, range(newest, newest - amount, -1), self._kth_key(part.running), part.builder)
        if part.cursor == 0:
            part.state = "ready"

    def _scan_slides(self, part: Partition, slides: range, theta: tuple | None, builder: StackBuilder,
                     only: np.ndarray | None = None, exclude: np.ndarray = None, floor: float | None = None) -> None:
        """Offer the objects of ``P - P^k`` of some slides (newest first) to an S-AVL under
        construction: the slides' raw records whose best object ranks above ``theta``
        (:meth:`RawSlides.gather`), one call of :func:`engine.kernels.sap.offer_slides` over them,
        then one of :func:`engine.kernels.sap.savl_scan`.

        Global pruning: objects ranking below ``theta`` (the ``k``-th best newer object) are
        dominated ``k`` times.  Appendix C: only the best ``k - P.rho`` of a slide can be
        meaningful (they expire together).  The rest are offered newest first.
        """
        records, starts = self._raw.gather(slides, theta)
        if len(starts) == 1:  # no slide's best object ranks above theta: nothing to offer
            return
        chosen, scanned = kernels.offer_slides(
            records["score"], records["seq"], starts, *((float(theta[0]), int(theta[1]), True) if theta else (0.0, 0, False)),
            builder.capacity, *((float(floor), True) if floor is not None else (0.0, False)), part.top_seqs,
            NO_SEQS if only is None else only, only is not None, NO_SEQS if exclude is None else exclude)
        self._events["scanned"] += int(scanned)
        if len(chosen):
            tallied = builder is part.builder  # the S-AVL of a formation (not one of UBSA's phase two)
            if tallied:
                self._tally_formation(part, -1)
            builder.scan_rows(*_columns(records), chosen)
            if tallied:
                self._tally_formation(part, 1)

    def _activate_front(self) -> None:
        """``P_0`` must have its ``M_0`` before its first slide expires: finish the build."""
        if not self._parts:
            return
        front = self._parts[0]
        if front.state == "pending":
            self._start_formation(front)
        if front.state == "forming":
            self._form(front, front.cursor)
        if front.state == "ready":
            self._tally_formation(front, -1)
            self._M.absorb_builder(front.builder)
            front.builder = None
            front.running = None
            front.state = "active"
            if not any(unit.pending for unit in front.units):
                self._release(front)
            self._refill(front)

    # ----------------------------------------------------------------- answers and stats
    def topk(self) -> Answer:
        """The top ``k`` of ``C``, ``P_m^k`` and the filling unit (``O(k log k)``, cached)."""
        if self._answer is None:
            C, (o_score, o_seq, o_id, _), filling = self._C, self._open_top, self._filling
            f_score, f_seq, f_id, _ = filling.top if filling is not None else NO_TOP
            n = min(self._k, len(C.score) + len(o_score) + len(f_score))
            ids, scores, seq = np.empty(n, np.int64), np.empty(n, np.float64), np.empty(n, np.int64)
            kernels.answer_of_three(C.score, C.seq, C.ids, o_score, o_seq, o_id, f_score, f_seq, f_id, ids, scores, seq)
            self._answer = Answer(ids, scores, seq)
            full = n == self._k  # then the answer stands on a quiet slide unless an arrival displaces its last
            self._quiet_ints[kernels.QUIET_FULL] = full
            if full:
                self._quiet_floats[kernels.QUIET_KTH_SCORE] = scores[n - 1]
                self._quiet_ints[kernels.QUIET_KTH_SEQ] = seq[n - 1]
            nbytes = ANSWER_ARRAYS + n * 3 * WORD
            self._events["measured_bytes"] += nbytes - self._answer_bytes
            self._answer_bytes = nbytes
        return self._answer

    def candidates(self) -> np.ndarray:
        """``C``, ``P_m^k``, the filling unit's top ``k`` and ``M_0`` (``O(|C| + |M_0|)``)."""
        parts = [self._C.seq, self._open_top[1]]
        if self._filling is not None:
            parts.append(self._filling.top[1])
        parts.append(self._M.seqs())
        return np.concatenate(parts).astype(np.int64)

    def stats(self) -> dict[str, Any]:
        """``candidates``, ``retained``, ``bytes``, ``measured_bytes``, ``partitions``,
        ``meaningful`` and the event counters (:data:`COUNTERS`): a copy of the dict in which
        every figure is kept as the structures change (``O(1)``; the sizes as :meth:`_figures`
        defines them, moved by the difference wherever one of their terms changes)."""
        return self._events.copy()

    def _measure_fixed(self) -> None:
        """The attributes outside the structures (settings, counters, the variant's), walked
        once (``O(attributes)``), and the fixed parts of ``C``, the answer and ``M_0``."""
        owners = tuple(owner for part in self._structures() for owner in part[3])
        self._other_bytes = 0
        self._other_bytes = attribute_bytes(self, exclude=(self.q, self.params, *owners)) + FIXED_HELD

    def _variant_resized(self, nbytes: int) -> None:
        """A variant's attribute of ``nbytes`` replaces the one counted in ``_variant_bytes``."""
        self._other_bytes += nbytes - self._variant_bytes
        self._events["measured_bytes"] += nbytes - self._variant_bytes
        self._variant_bytes = nbytes

    def _structures(self) -> list[tuple]:
        """``(layout, counts, measured bytes, owners)`` of every structure: raw slides, ``C``,
        the open tops, the partitions and units, the S-AVLs.  ``O(partitions)`` (the S-AVLs
        under construction: those of ``P_0`` and ``P_1``, of every partition without the delay
        policy); the other counts are kept as the structures change; the measured bytes come
        from array sizes and the per-record sizes of the Python records (:data:`FIXED`)."""
        entries = stacks = savl_bytes = running_bytes = 0
        for part in self._parts:  # non-delay (delay=False) builds for every partition
            if part.builder is not None:
                entries += len(part.builder)
                stacks += part.builder.stack_count
                savl_bytes += FIXED["builder"] + part.builder.nbytes()
            if part.running is not None:
                running_bytes += _top_bytes(part.running)
        M = self._M
        raw = (RAW_SLIDES, {"object": self._raw.size}, self._raw.nbytes(), (self._raw, self._raw.ring, self._raw.rows, self._raw.cells))
        candidates = (CANDIDATES, {"candidate": len(self._C)},
                      FIXED["candidate set"] + 6 * FIXED["array"] + len(self._C) * CandidateSet.ROW_BYTES, (self._C,))
        answer = self._answer
        open_top, cache, filling = self._open_top, self._open_cache, self._filling
        tops_bytes = self._open_top_bytes()
        if filling is not None:
            tops_bytes += FIXED["unit"] + _filling_top_bytes(filling.top)
        if cache is not None and cache is not open_top and (filling is None or cache is not filling.top) \
                and all(cache is not part.running for part in self._parts):
            tops_bytes += _top_bytes(cache)
        opened = (OPEN_TOPS, {"object": self._open_size},
                  (tops_bytes + FIXED["answer"]
                   + (0 if answer is None else 3 * FIXED["array"] + len(answer) * 3 * WORD)),
                  (self._open_top, self._open_cache, self._filling, answer, self._quiet_args))
        parts = self._parts
        measured = (LISTS + len(parts) * FIXED["partition"]
                    + self._units * FIXED["unit"] + self._part_tops * (FIXED["top"] + 5 * FIXED["array"])
                    + self._part_top_size * (RAW.itemsize + WORD)
                    + self._unit_tops * (FIXED["top"] + 4 * FIXED["array"]) + self._unit_top_size * RAW.itemsize
                    + running_bytes)
        partitions = (PARTITIONS, {"partition": len(parts), "partition_top": self._part_top_size,
                                   "unit": self._units, "unit_top": self._unit_top_size},
                      measured, (parts, self._open, getattr(self, "_previous", None)))
        savl = (SAVL, {"entry": len(M) + entries, "stack": M.stack_count + stacks},
                FIXED["meaningful set"] + M.nbytes() + savl_bytes, (M,))
        return [raw, candidates, opened, partitions, savl]

    def footprints(self) -> list[Footprint]:
        """The footprint of every structure (``O(partitions)``, see :meth:`_structures`)."""
        return [Footprint(layout, counts, measured, owners=owners)
                for layout, counts, measured, owners in self._structures()]

    # ----------------------------------------------------------------- state
    def dump_state(self) -> dict[str, Any]:
        self._fold_quiet()
        return {"candidates": self._C.rows(), "slide": self._slide, "serial": self._serial,
                "raw": [[slide, *_top_out(_columns(rows))] for slide, rows in self._raw.items()],
                "raw_layout": self._raw.layout(),
                "partitions": [p.to_json() for p in self._parts],
                "open": [u.to_json() for u in self._open], "open_top": _top_out(self._open_top),
                "filling": None if self._filling is None else self._filling.to_json(),
                "meaningful": [[_entry_out(e) for e in stack] for stack in self._M.live_stacks()],
                "meaningful_layout": self._M.layout(), "open_cached": self._open_cache is not None,
                "variant": self._dump_variant(), "counters": self._counter_values()}

    def _counter_values(self) -> dict[str, int]:
        stats = self.stats()
        return {name: stats[name] for name in COUNTERS}

    def _dump_variant(self) -> dict:
        return {}

    def load_state(self, data: dict[str, Any]) -> None:
        self._C.load(data["candidates"])
        self._slide = None if data["slide"] is None else int(ints_in([data["slide"]], "slide")[0])
        self._serial = int(ints_in([data["serial"]], "serial")[0])
        slides = []
        for row in data["raw"]:
            if len(row) != 5:
                raise ValueError("a raw slide must be [slide, scores, seq, ids, t]")
            slides.append((int(row[0]), _record(_top_in(row[1:]))))
        if any(a[0] >= b[0] for a, b in zip(slides, slides[1:])):
            raise ValueError("the raw slides must be given oldest first")
        self._raw = RawSlides.restore(slides, data.get("raw_layout"))
        self._parts = [Partition.from_json(p, self._k) for p in data["partitions"]]
        self._open = [Unit.from_json(u) for u in data["open"]]
        self._open_top = _top_in(data["open_top"])
        _share_unit_top(self._open, self._open_top)
        self._filling = None if data["filling"] is None else Unit.from_json(data["filling"])
        if self._filling is not None:
            self._filling.top = _packed(self._filling.top)
        self._M.absorb([[_entry_in(e) for e in stack] for stack in data["meaningful"]])
        if "meaningful_layout" in data:
            self._M.lay_out(data["meaningful_layout"])
        counts = self._aggregates()
        self.__dict__.update((name, value) for name, value in counts.items() if name.startswith("_"))
        self._tally_open()
        self._front_changed()
        self._load_variant(data["variant"])
        self._events.update((name, int(data["counters"][name])) for name in COUNTERS)
        self._answer = None if self._slide is not None else Answer.empty()
        self._quiet_ints[kernels.QUIET_FULL] = False
        self._answer_bytes = 0 if self._slide is not None else ANSWER_ARRAYS
        self._quiet_until = NONE_QUIET
        self._m_figures = self._M.meta.tolist()
        self._quiet_ints[kernels.QUIET_UNIT_SLIDES] = self._quiet_ints[kernels.QUIET_UNIT_OBJECTS] = 0
        self._arm_quiet()
        if data.get("open_cached") is True:
            self._open_tops()
        self._events.update(self._figures(counts))

    def _load_variant(self, data: dict) -> None:
        """Variant state."""

    def check(self) -> None:
        """Every invariant of the partitions, ``C``, ``M_0`` and the raw slides (``O(|C|^2)``
        for the counter check, ``O(window)`` otherwise)."""
        self._fold_quiet()
        k = self._k
        C = self._C
        C.check()
        self._raw.check()
        parts = list(self._parts)
        if self._slide is None:
            assert not parts and not len(C) and not self._open and self._filling is None
            return
        gone = self._slide - self._W
        bound = gone * self._s
        assert not len(C) or C.keys().min() >= bound, "an expired candidate is in C"
        units = [u for p in parts for u in p.units] + self._open + ([self._filling] if self._filling else [])
        for a, b in zip(units, units[1:]):
            assert a.last + 1 == b.first, "units are not contiguous"
        if units:
            assert units[-1].last == self._slide, "the last unit does not end at the current slide"
            open_units = self._open + ([self._filling] if self._filling else [])
            if open_units:
                assert open_units[0].first > gone, "the open partition has an expired slide"
        if parts:
            assert parts[0].last > gone, "an expired partition is still in the window"
        serials = [p.serial for p in parts]
        assert serials == sorted(serials) and len(set(serials)) == len(serials)
        assert set(C.part.tolist()) <= set(serials), "a candidate belongs to no partition"
        assert not serials or serials[-1] < self._serial, f"partition {serials[-1]} is not below serial {self._serial}"
        if len(C):
            of_candidate = np.searchsorted(np.array(serials), C.part)
            firsts = np.array([p.first for p in parts])[of_candidate]
            lasts = np.array([p.last for p in parts])[of_candidate]
            slides = C.keys() // self._s + 1
            assert np.all((firsts <= slides) & (slides <= lasts)), "a candidate lies outside its partition's slides"
        for index, p in enumerate(parts):
            assert p.in_c == int(np.count_nonzero(C.part == p.serial)), f"partition {p.serial}: in_c"
            assert p.slides == sum(u.slides for u in p.units)
            if p.kth is not None and p.rho < k:
                later = (C.part > p.serial) & ((C.score > p.kth[0]) | (C.score == p.kth[0]))
                assert p.rho == int(np.count_nonzero(later)), f"partition {p.serial}: rho {p.rho}"
                if index > 0:
                    assert p.in_c == k, f"partition {p.serial}: a member left C although rho < k"
            if p.state in ("pending", "forming", "ready", "active"):
                assert p.rho < k and p.kth is not None, f"partition {p.serial}: state {p.state} with rho {p.rho}"
            assert p.state != "active" or index == 0, "only the front partition has M_0"
            assert p.state not in FORMING_STATES or index <= 1 or not self.params.get("delay", True), \
                "only P_0 and P_1 form an S-AVL"
            assert (p.builder is not None) == (p.state in FORMING_STATES)
            if p.builder is not None:
                p.builder.check()
                assert p.raw
            assert p.raw == (p.top is not None)
        raw_slides = set()
        for p in parts:
            if p.raw:
                raw_slides.update(range(p.first, p.last + 1))
        for u in self._open + ([self._filling] if self._filling else []):
            raw_slides.update(range(u.first, u.last + 1))
        assert {slide for slide, _ in self._raw.items()} <= raw_slides, "a raw slide outside the retained partitions"
        ints, args, filling = self._quiet_ints, self._quiet_args, self._filling
        assert ints[kernels.QUIET_SLIDE] == self._slide, "the quiet slide's last slide"
        assert self._quiet_floats.base is ints, "the quiet slide's float cells are a view of its ints"
        assert ints[kernels.QUIET_C_OLDEST] == C.oldest, "the quiet slide's oldest key of C"
        assert ints[kernels.QUIET_M_NEXT] == (self._M._next_expiry if self._M else NO_EXPIRY), "its next key of M_0"
        assert (args is None) == bool(ints[kernels.QUIET_BLOCKED]), "the quiet slide's arrays when it may run"
        if args is not None:
            assert args[0] is self._raw.ring, "the quiet slide's raw slides"
            assert args[1] is filling.top[1].base, "the quiet slide's filling top"
            assert self._quiet_grows == (len(filling.top[0]) < k) and len(args) == (4 if self._quiet_grows else 3)
            assert args[-1] is ints
        counts = self._aggregates()
        assert all(getattr(self, name) == value for name, value in counts.items() if name.startswith("_")), \
            "stats counters"
        filling = self._filling
        open_size = len(self._open_top[0]) + (0 if filling is None else len(filling.top[0]))
        stats = self.stats()
        assert self._m_figures == self._M.meta.tolist(), "M_0's figures as stats counts them"
        assert {name: stats[name] for name in FIGURES} == self._figures(counts), "kept stats figures"
        assert self._open_size == open_size, "the open tops' kept size"
        assert self._meaningful_retained == (1 if parts and not parts[0].raw else 0), "M_0 in retained"
        assert stats["partitions"] == len(parts) + (1 if self._open or filling is not None else 0), "partitions"
        assert stats["bytes"] == sum(part.modelled for part in self.footprints()), "kept bytes against footprints"
        for slide, rows in self._raw.items():
            top = _columns(rows)
            keys = top[1] if self._expiry == 1 else top[3]
            assert np.all((keys >= (slide - 1) * self._s) & (keys < slide * self._s)), "raw slide keys"
            assert len(top[0]) <= k
        for u in self._open + ([self._filling] if self._filling else []):
            expected = empty_top()
            for slide in range(u.first, u.last + 1):
                rows = self._raw.get(slide)
                expected = merge_tops(expected, empty_top() if rows is None else _columns(rows), k)
            assert np.array_equal(expected[1], u.top[1]) and np.array_equal(expected[0], u.top[0]), \
                "a unit's top k disagrees with its slides"
        assert filling is None or top_block(filling.top) is not None, "the filling unit's top is not one array"
        assert all(top_block(u.top) is None for u in [u for p in parts for u in p.units] + self._open
                   if u.top is not None), \
            "a finished unit's top is a view of one array"
        if self._open:
            expected = empty_top()
            for u in self._open:
                expected = merge_tops(expected, u.top, k)
            assert np.array_equal(expected[1], self._open_top[1]) and np.array_equal(expected[0], self._open_top[0]), \
                "P_m^k disagrees with its units"
        M = self._M
        M.check()
        if M:
            front = parts[0]
            assert front.state == "active"
            entries = M.entries()
            expiry = self._expiry
            assert all(front.first <= e[expiry] // self._s + 1 <= front.last for e in entries), "M_0 outside P_0"
            assert all(e[expiry] >= bound for e in entries), "expired entry in M_0"
            lowest = C.lowest_of(front.serial)
            assert lowest is not None and front.in_c >= k, "P_0^k is not full while M_0 has entries"
            assert all((e[0], e[1]) < lowest for e in entries), "an M_0 entry ranks above a member of P_0^k"
        self._check_variant()

    def _check_variant(self) -> None:
        """Variant invariants."""
