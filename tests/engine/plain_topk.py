"""Plain-Python MinTopK and PreTopK: the references the compiled kernels are checked against.

The engine's own implementations before the compiled core (issue 17), kept unregistered: the
same steps over Python lists, a ``SortedList`` key index and ``heapq`` heaps.  Their
``dump_state`` has the engine's layout, so a test can compare the whole structure (list order,
window marks, ``tkc``, ``lbp``, every window set and the counters) after every slide.
"""

from __future__ import annotations

from heapq import heapify, heappush, heapreplace
from typing import Any

import numpy as np
from sortedcontainers import SortedList

from engine.base import Algorithm
from engine.ranking import Answer, score, top_indices
from engine.stream import Batch


class SortedListIndex(SortedList):
    """MinTopK's key index: ``add``, then the key above by bisection."""

    def insert(self, key):
        self.add(key)
        above = self.bisect_right(key)
        return self[above] if above < len(self) else None


START, END, ID, T, KEY, ABOVE, BELOW = range(7)


class PlainMinTopK(Algorithm):
    """MinTopK over Python lists and a ``SortedList`` index (the engine before issue 17)."""

    name = "mintopk"
    summary = "plain MinTopK"
    defaults = {"prefilter": True}
    index_type = SortedListIndex

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


class PlainPreTopK(Algorithm):
    """PreTopK over ``heapq`` heaps and a dict of reference counts (the engine before issue 17)."""

    name = "pretopk"
    summary = "plain PreTopK"
    defaults = {"prefilter": True}

    def _reset(self) -> None:
        self._windows = self.q.windows_per_object
        self._sets: list[list[tuple]] = [[] for _ in range(self._windows)]
        self._objects: dict[int, list] = {}
        self._current: int | None = None
        self._answer = Answer.empty()
        self._counters = {"offered": 0, "entries": 0}

    def process(self, batch: Batch) -> None:
        slide = batch.end // self.q.slide
        if self._current is None:
            self._current = slide
        elif slide <= self._current:
            raise ValueError(f"slide {slide} arrives after slide {self._current}")
        while self._current < slide:
            self._drop_current_window()
        if len(batch):
            scores = score(batch.x, self.q.weights)
            order = top_indices(scores, batch.seq, self.q.k) if self.params["prefilter"] else range(len(batch))
            ids, seqs, ts, scores = batch.ids.tolist(), batch.seq.tolist(), batch.t.tolist(), scores.tolist()
            entries = 0
            for i in order:
                entries += self._offer((scores[i], seqs[i]), ids[i], ts[i])
            self._counters["offered"] += len(order)
            self._counters["entries"] += entries
        self._answer = None

    def _offer(self, key: tuple, oid: int, t: int) -> int:
        """Offer one object to every window: ``O(C_nw log k)``; returns the windows it entered."""
        k, objects = self.q.k, self._objects
        references = 0
        for members in self._sets:
            if len(members) < k:
                heappush(members, key)
            elif members[0] < key:
                evicted = heapreplace(members, key)[1]
                record = objects[evicted]
                record[2] -= 1
                if not record[2]:
                    del objects[evicted]
            else:
                continue
            references += 1
        if references:
            objects[key[1]] = [oid, t, references]
        return references

    def _drop_current_window(self) -> None:
        """Release the answered window's set (``O(k)``) and reuse its slot for the newest."""
        slot = self._current % self._windows
        objects = self._objects
        for _, seq in self._sets[slot]:
            record = objects[seq]
            record[2] -= 1
            if not record[2]:
                del objects[seq]
        self._sets[slot] = []
        self._current += 1

    def topk(self) -> Answer:
        """The current window's set, best first: ``O(k log k)``, cached per slide."""
        if self._answer is None:
            current = sorted(self._sets[self._current % self._windows], reverse=True)
            self._answer = Answer(np.array([self._objects[s][0] for _, s in current], np.int64),
                                  np.array([v for v, _ in current], np.float64),
                                  np.array([s for _, s in current], np.int64))
        return self._answer

    def candidates(self) -> np.ndarray:
        return np.fromiter(self._objects, np.int64, len(self._objects))

    def _stats(self) -> dict[str, Any]:
        distinct = len(self._objects)
        return {"candidates": distinct, "retained": distinct,
                "memberships": sum(len(members) for members in self._sets), "windows": self._windows,
                **self._counters}

    def dump_state(self) -> dict[str, Any]:
        sets = []
        if self._current is not None:
            sets = [[list(key) for key in sorted(self._sets[w % self._windows])]
                    for w in range(self._current, self._current + self._windows)]
        return {"current": self._current, "sets": sets, "counters": dict(self._counters),
                "objects": [[seq, oid, t] for seq, (oid, t, _) in self._objects.items()]}

    def load_state(self, data: dict[str, Any]) -> None:
        self._current = data["current"]
        references: dict[int, int] = {}
        if self._current is not None:
            if len(data["sets"]) != self._windows:
                raise ValueError(f"expected {self._windows} windows, got {len(data['sets'])}")
            for offset, members in enumerate(data["sets"]):
                keys = [(float(v), int(s)) for v, s in members]
                heapify(keys)
                self._sets[(self._current + offset) % self._windows] = keys
                for _, seq in keys:
                    references[seq] = references.get(seq, 0) + 1
        self._objects = {int(seq): [int(oid), int(t), references.get(int(seq), 0)] for seq, oid, t in data["objects"]}
        self._answer = None if self._current is not None else Answer.empty()
        self._counters.update({name: int(data.get("counters", {}).get(name, 0)) for name in self._counters})

    def check(self) -> None:
        references: dict[int, int] = {}
        for members in self._sets:
            assert len(members) <= self.q.k, "window set larger than k"
            assert all(members[(i - 1) // 2] <= members[i] for i in range(1, len(members))), "window set is not a heap"
            assert len({seq for _, seq in members}) == len(members), "object twice in one window"
            for _, seq in members:
                references[seq] = references.get(seq, 0) + 1
        assert set(references) == set(self._objects), "object table differs from the window sets"
        for seq, (_, _, count) in self._objects.items():
            assert count == references[seq], f"object {seq}: reference count {count}, held by {references[seq]} sets"
