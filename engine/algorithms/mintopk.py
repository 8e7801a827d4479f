"""MinTopK (Yang, Shastri, Rundensteiner, Ward, EDBT 2011): the super-top-k list."""

from __future__ import annotations

from typing import Any

import numpy as np

import sys

from ..base import Algorithm
from ..memory import OBJECT_FIELDS, PY_FLOAT, PY_INT, Footprint, Layout, python_bytes
from ..sortedkeys import SortedKeys
from ..ranking import Answer, score, top_indices
from ..registry import register
from ..stream import Batch

START, END, ID, T, KEY, ABOVE, BELOW = range(7)

LAYOUT = Layout("super-top-k list", {
    "record": {**OBJECT_FIELDS, "score": 1, "start_w": 1, "end_w": 1, "above": 1, "below": 1,
               "index slot": 1, "table slot": 1},
    "window": {"tkc": 1, "lbp": 1}})
"""A record: id, seq, t, score, its two window marks, two list links and its slots in the key
index and the seq table (10 words); a window: its counter and lower-bound pointer."""

RECORD_BYTES = python_bytes([None] * 7, (0.5, 10 ** 6)) + PY_FLOAT + 3 * PY_INT
"""Measured once: a record's list of 7, its key tuple, the score and three ints (seq, id, t);
its two window marks are two more ints once window numbers pass 256 (smaller ints are shared)."""


@register
class MinTopK(Algorithm):
    """Continuous top-k with one super-top-k list shared by all ``C_nw = n / s`` windows.

    The list holds the MTK set: every object predicted to be in the top-k of the current
    window or of a future window it will take part in, sorted by the total order
    ``(score, seq)``.  Each object carries a starting and an ending window mark (its top-k
    career is a contiguous run of windows, Lemma 4.3); each window ``W_i`` carries a top-k
    counter ``tkc`` and a lower-bound pointer ``lbp`` to its lowest predicted top-k object.
    Windows are named by the number of their last slide (``end // s``).

    Per arriving object (Figure 6, ``UpdateSuperTopk``): ``O(1)`` discard when it ranks below
    the whole list and every window is full; otherwise ``O(log MTK)`` to position it plus
    ``O(1)`` per window it enters (those windows are a suffix, found by scanning back from the
    newest), each full one losing its ``lbp`` object (``start_w += 1``) and moving ``lbp`` one
    position up the list (Lemma 4.5).  Per slide (``PurgeExpiredWindow``): ``O(k log MTK)``.
    With ``prefilter=True`` only the top ``k`` of each slide (``argpartition``) reach the loop:
    objects of one slide expire together, so the others can never be in the MTK set.

    Memory (layout ``LAYOUT``): 10 words per MTK record (id, seq, t, score, two window marks,
    two list links, a slot in the key index and one in the seq table) plus 2 words (``tkc``,
    ``lbp``) per window.  No raw window is kept.  ``measured_bytes`` is ``O(1)``: the record
    count times ``RECORD_BYTES`` plus the containers' own sizes.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0], k=2, window=6, slide=2)
    >>> alg = engine.create("mintopk", q)
    >>> for batch in engine.slides((np.arange(8), np.arange(8), [9., 1., 5., 7., 2., 3., 4., 0.]), q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["candidates"]
    ([3, 2], 5)
    """

    name = "mintopk"
    summary = "MinTopK: one super-top-k list with window marks (EDBT 2011), per-slide prefilter"
    defaults = {"prefilter": True}
    index_type = SortedKeys
    """The ordered key index: ``insert(key)`` returning the next larger key, ``remove``, ``len``,
    ascending ``iter`` and ``measured_bytes`` (``make bench`` swaps in ``SortedList`` here)."""

    def _reset(self) -> None:
        self._windows = self.q.windows_per_object
        self._k = self.q.k
        self._index = self.index_type()
        self._records: dict[int, list] = {}
        self._top: list | None = None
        self._tkc = [0] * self._windows
        self._lbp: list[list | None] = [None] * self._windows
        self._current: int | None = None
        self._answer = Answer.empty()
        self._counters = {"arrivals": 0, "prefiltered": 0, "discarded": 0, "inserted": 0,
                          "evictions": 0, "lbp_skips": 0}

    def process(self, batch: Batch) -> None:
        slide = batch.end // self.q.slide
        if self._current is None:
            self._current = slide
        elif slide <= self._current:
            raise ValueError(f"slide {slide} arrives after slide {self._current}")
        while self._current < slide:
            self._purge_current_window()
        counters = self._counters
        counters["arrivals"] += len(batch)
        if len(batch):
            scores = score(batch.x, self.q.weights)
            ids, seqs, ts = batch.ids, batch.seq, batch.t
            if self.params["prefilter"] and len(batch) > self._k:
                best = top_indices(scores, seqs, self._k)
                counters["prefiltered"] += len(batch) - len(best)
                scores, seqs, ids, ts = scores[best], seqs[best], ids[best], ts[best]
            arrivals = zip(scores.tolist(), seqs.tolist(), ids.tolist(), ts.tolist())
            if self.params["prefilter"]:
                arrivals = sorted(arrivals, reverse=True)
            for value, seq, oid, t in arrivals:
                self._update_super_topk((value, seq), oid, t)
        self._answer = None

    def _update_super_topk(self, key: tuple, oid: int, t: int) -> None:
        k, size, tkc, lbp = self._k, self._windows, self._tkc, self._lbp
        oldest = self._current
        newest = oldest + size - 1
        slot = newest % size
        if tkc[slot] == k and key < lbp[slot][KEY]:
            self._counters["discarded"] += 1
            return
        record = self._position(key, oid, t, newest)
        evictions = skips = 0
        window = newest
        while window >= oldest:
            if tkc[slot] < k:
                tkc[slot] += 1
                lowest = lbp[slot]
                if lowest is None or key < lowest[KEY]:
                    lbp[slot] = record
            else:
                lowest = lbp[slot]
                if key < lowest[KEY]:
                    break
                evictions += 1
                lowest[START] += 1
                above = lowest[ABOVE]
                while above[END] < window:
                    skips += 1
                    above = above[ABOVE]
                lbp[slot] = above
                if lowest[START] > lowest[END]:
                    self._unlink(lowest)
            window -= 1
            slot = slot - 1 if slot else size - 1
        record[START] = window + 1
        self._counters["lbp_skips"] += skips
        self._counters["inserted"] += 1
        self._counters["evictions"] += evictions

    def _position(self, key: tuple, oid: int, t: int, end_window: int) -> list:
        """Link a new record into the list at its rank: ``O(log MTK)`` through the index."""
        above_key = self._index.insert(key)
        above = None if above_key is None else self._records[above_key[1]]
        below = above[BELOW] if above is not None else self._top
        record = [end_window, end_window, oid, t, key, above, below]
        if above is None:
            self._top = record
        else:
            above[BELOW] = record
        if below is not None:
            below[ABOVE] = record
        self._records[key[1]] = record
        return record

    def _unlink(self, record: list) -> None:
        above, below = record[ABOVE], record[BELOW]
        if above is None:
            self._top = below
        else:
            above[BELOW] = below
        if below is not None:
            below[ABOVE] = above
        self._index.remove(record[KEY])
        del self._records[record[KEY][1]]

    def _current_members(self) -> list[list]:
        """The records of the current window's predicted top-k, best first (Lemma 4.4)."""
        members, record = [], self._top
        for _ in range(self._tkc[self._current % self._windows]):
            members.append(record)
            record = record[BELOW]
        return members

    def _purge_current_window(self) -> None:
        """Drop the answered window before the next slide arrives (``PurgeExpiredWindow``)."""
        for record in self._current_members():
            record[START] += 1
            if record[START] > record[END]:
                self._unlink(record)
        slot = self._current % self._windows
        self._tkc[slot] = 0
        self._lbp[slot] = None
        self._current += 1

    def topk(self) -> Answer:
        """The first ``tkc`` records of the list (Lemma 4.4): ``O(k)``, cached per slide."""
        if self._answer is None:
            members = self._current_members()
            self._answer = Answer(np.array([r[ID] for r in members], np.int64),
                                  np.array([r[KEY][0] for r in members], np.float64),
                                  np.array([r[KEY][1] for r in members], np.int64))
        return self._answer

    def candidates(self) -> np.ndarray:
        return np.fromiter(self._records, np.int64, len(self._records))

    def _stats(self) -> dict[str, Any]:
        size = len(self._index)
        return {"candidates": size, "retained": size, "windows": self._windows, **self._counters}

    def footprints(self) -> list[Footprint]:
        size = len(self._records)
        newest = -1 if self._current is None else self._current + self._windows - 1
        beyond_cache = min(1.0, max(0, newest - 256) / self._windows)
        measured = int(size * (RECORD_BYTES + 2 * PY_INT * beyond_cache)) + sys.getsizeof(self._records) \
            + self._index.measured_bytes() + sys.getsizeof(self._tkc) + sys.getsizeof(self._lbp)
        owners = (self._records, self._index, self._tkc, self._lbp, self._top)
        return [Footprint(LAYOUT, {"record": size, "window": self._windows}, measured, 0, owners)]

    def _ranked_records(self) -> list[list]:
        """Every record, best first, following the list's links (``O(MTK)``)."""
        records, record = [], self._top
        while record is not None:
            records.append(record)
            record = record[BELOW]
        return records

    def dump_state(self) -> dict[str, Any]:
        windows = []
        if self._current is not None:
            for window in range(self._current, self._current + self._windows):
                slot = window % self._windows
                lowest = self._lbp[slot]
                windows.append([self._tkc[slot], None if lowest is None else lowest[KEY][1]])
        return {"current": self._current,
                "objects": [[r[KEY][0], r[KEY][1], r[START], r[END], r[ID], r[T]] for r in self._ranked_records()],
                "windows": windows, "counters": dict(self._counters)}

    def load_state(self, data: dict[str, Any]) -> None:
        self._current = data["current"]
        for value, seq, start, end, oid, t in reversed(data["objects"]):
            record = self._position((float(value), int(seq)), int(oid), int(t), int(end))
            record[START] = int(start)
        if self._current is not None:
            if len(data["windows"]) != self._windows:
                raise ValueError(f"expected {self._windows} windows, got {len(data['windows'])}")
            for offset, (count, lowest) in enumerate(data["windows"]):
                slot = (self._current + offset) % self._windows
                self._tkc[slot] = int(count)
                self._lbp[slot] = None if lowest is None else self._records[lowest]
        self._answer = None if self._current is not None else Answer.empty()
        self._counters.update({name: int(value) for name, value in data["counters"].items()})

    def check(self) -> None:
        ranked = self._ranked_records()
        assert [r[KEY] for r in ranked][::-1] == list(self._index), "links disagree with the index"
        assert len(self._records) == len(ranked), "record table disagrees with the list"
        for above, below in zip(ranked, ranked[1:]):
            assert below[ABOVE] is above, "broken upward link"
        assert not ranked or ranked[-1][BELOW] is None
        if self._current is None:
            assert not ranked
            return
        oldest, newest = self._current, self._current + self._windows - 1
        for r in ranked:
            assert oldest <= r[START] <= r[END] <= newest, f"window marks {r[START]}..{r[END]} outside {oldest}..{newest}"
        for window in range(oldest, newest + 1):
            slot = window % self._windows
            alive = [r for r in ranked if r[END] >= window]
            members = [r for r in alive if r[START] <= window]
            assert len(members) == self._tkc[slot] <= self.q.k, f"window {window}: tkc {self._tkc[slot]}"
            assert self._lbp[slot] is (members[-1] if members else None), f"window {window}: lbp"
            assert alive[:len(members)] == members, f"window {window}: predicted top-k is not the top"
