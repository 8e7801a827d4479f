"""EAA, the early aggregation algorithm of Haghani, Michel, Aberer (CIKM 2009), Section 3.2."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..attributes import AttributeAlgorithm
from ..base import WORD
from ..jsondata import floats_in, floats_out, ints_in, saved_capacity
from ..kernels import eaa as kernel
from ..kernels import incomplete as table
from ..kernels.eaa import (BSORTED, COUNTERS, CSORTED, DC, EARLIER, EARLIER_RECORD, ERROR, ERROR_COUNT, ERROR_OID,
                           ERROR_STREAM, FIRST, FIRST_RECORD, FREE_INSTANCE, FREE_RECORD, HELD, ID, INSTANCES, KEY,
                           LAST_RECORD, LATER, LATER_RECORD, LINKS, NEWER, NEWEST_KEY, NEWEST_SEQ, NEED_MASK,
                           NEXT_UID, OID, OLDEST, PER_VALIDITY, PER_WINDOW, RECORD, RECORDS, SEQ,
                           TOO_MANY_WHILE_VALID, UID)
from ..memory import attribute_bytes, owned_bytes
from ..ranking import Answer
from ..registry import register
from ..stream import Batch

INSTANCE_WORDS = 7
"""Words per instance besides its ``2d`` per-stream sums and counts: id, t (expiry key), seq,
currentscore, bestscore, dc and the time-list pointer."""

RECORD_WORDS = 5
"""Words per valid object in the validity table besides its ``d`` occurrence counts: id, newest
seq, newest key and its two links in the list of valid objects (which expire first)."""

ENTRY_WORDS = 2
"""Words per entry of ``csorted`` / ``bsorted``: a score and a pointer."""

ANSWER_ROW_BYTES = 3 * WORD
"""The data of one row of the cached answer: id, score and seq."""

SCOPES = ("validity", "window")
"""What the ``occurrences`` bound ``m`` counts: an object's tuples in one stream while it stays
valid (the paper's "at most once" for ``m = 1``), or within any one window."""

FIRST_CAPACITY = 16


@register
class EAA(AttributeAlgorithm):
    """Early aggregation with interval dominance: exact, keeps the ``k`` dominance set.

    Every tuple of object ``p`` updates each live instance of ``p`` (Algorithm 2) and creates
    the instance ``p^{r+1}`` (Algorithm 1; in time windows a tuple whose ``t`` equals that of
    ``p``'s newest instance only updates it).  ``currentscore`` aggregates the instance's sums;
    ``bestscore`` adds, per stream ``i``, ``m - n_i`` (``m`` = the ``occurrences`` parameter,
    ``n_i`` = ``p``'s occurrences in stream ``i`` so far), values being at most 1: with
    ``m = 1`` a stream seen at any time adds nothing more and an unseen one adds 1, as in the
    paper.  ``p^i`` dominates ``q^j`` iff ``p^i.t > q^j.t`` and
    ``p^i.currentscore > q^j.bestscore``; an instance dominated by ``k`` distinct objects is
    dropped (``dc`` plus the set of dominating ids).  The scans are ranges of the two sorted
    lists: a rising ``currentscore`` (old ``c``, new ``c'``) visits ``bsorted`` in
    ``[c, c')``, a falling ``bestscore`` (``b`` to ``b'``) visits ``csorted`` in ``(b', b]``.
    Instances expire from the front of the time list.  The answer scans ``csorted``
    downwards until ``k`` distinct objects (and every tie of the ``k``-th).

    Exact when no object occurs more than ``occurrences`` times in one stream while it stays
    valid (``m = 1``: the paper's "at most once"); an entry that sees more raises
    ``ValueError``.  With ``occurrences_per="window"`` the promise is per window instead (for
    objects that stay valid indefinitely, like World Cup clients): instance ``p^j``'s bound
    adds ``m - c_i`` with ``c_i`` its own tuples in stream ``i``, since every tuple it covers
    lies in the one window starting at ``p^j.t``; ``m`` = the count window's length is always
    sound.  Costs per tuple: ``O(r (d + log N))`` for ``r`` live instances of the
    object plus one step per scanned entry.

    ``retained`` counts instances, ``candidates`` objects with a live instance.  ``bytes``:
    ``INSTANCE_WORDS + 2d`` per instance, one word per dominating id, ``2 ENTRY_WORDS`` per
    instance for the score lists and ``RECORD_WORDS + d`` per object.  The structures are
    numpy arrays and Algorithms 1 and 2 compiled kernels (:mod:`engine.kernels.eaa`): a slide
    is one kernel call.  ``measured_bytes`` is the arrays' sizes (kept as they grow) plus the
    other attributes measured once; ``stats`` is ``O(1)``.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, 1.0], k=1, window=4, slide=2)
    >>> alg = engine.create("eaa", q)
    >>> data = ([1, 2, 1, 3, 2, 3], [0, 0, 1, 1, 1, 0], [0.5, 0.9, 0.5, 0.2, 0.3, 0.4], range(6))
    >>> for batch in engine.slides(data, q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.stats()["retained"]
    ([3], 3)
    """

    name = "eaa"
    summary = "EAA: aggregated instances, interval dominance, k dominance set (CIKM 2009)"
    defaults = {"occurrences": 1, "occurrences_per": "validity"}
    _per_window = False

    def _reset(self) -> None:
        d = self.q.dimensions
        self._reset_bounds()
        self._weights = np.asarray(self.q.weights, np.float64)
        self._untracked = self.q.kind == "count" and self.q.k >= self.q.window
        self._record_arrays = kernel.empty_records(FIRST_CAPACITY, d)
        self._instance_arrays = kernel.empty_instances(FIRST_CAPACITY, d, self._width())
        self._keys, self._slots = table.empty_table(table.table_capacity(FIRST_CAPACITY))
        self._roots = np.full(2, -1, np.int64)
        self._meta = kernel.empty_meta()
        self._counters = np.zeros(len(COUNTERS), np.int64)
        self._tables = self._bound_tables()
        self._end: int | None = None
        self._answer: Answer | None = Answer.empty()
        self._answer_bytes = 0
        self._measure()
        self._fixed_bytes = attribute_bytes(self, exclude=(self.q, self.params, *self._arrays(), *self._tallied()))

    def _tallied(self) -> tuple:
        """Other structures ``memory`` sizes from kept counts, not from the walk made at reset."""
        return ()

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (*self._instance_arrays, *self._record_arrays, self._keys, self._slots, self._roots, self._meta,
                self._counters, self._weights, *self._tables)

    def _measure(self) -> None:
        """The arrays' bytes, redone when one is replaced (``O(1)``)."""
        self._array_bytes = owned_bytes(*self._arrays())

    def _width(self) -> int:
        """Room per instance for its dominators: ``k``, or the validity table's rows if fewer
        (the dominators are distinct valid objects); none when a count window holds fewer than
        ``k`` tuples (:attr:`_untracked`): no instance can then have ``k`` dominators, so
        dominance is not tracked, which would cost ``O(window)`` per instance and per arrival."""
        return 0 if self._untracked else min(self.q.k, len(self._record_arrays[0]))

    def _reserve(self, arrivals: int) -> None:
        """Room for ``arrivals`` more objects and instances, the dominator lists following the
        validity table (capacities doubled: ``O(1)`` amortised)."""
        d, meta = self.q.dimensions, self._meta
        grown = False
        needed = int(meta[RECORDS]) + arrivals
        if needed > len(self._record_arrays[0]):
            capacity = max(2 * len(self._record_arrays[0]), needed)
            self._record_arrays = kernel.grown(self._record_arrays, kernel.empty_records(capacity, d), meta,
                                               kernel.RECORD_LINK, FREE_RECORD)
            grown = True
        if 2 * needed > len(self._keys):
            self._keys, self._slots = table.rehashed(self._keys, self._slots, table.table_capacity(needed))
            grown = True
        needed = int(meta[INSTANCES]) + arrivals
        if needed > len(self._instance_arrays[0]):
            capacity = max(2 * len(self._instance_arrays[0]), needed)
            self._instance_arrays = kernel.grown(self._instance_arrays,
                                                 kernel.empty_instances(capacity, d, self._width()), meta,
                                                 kernel.LINK, FREE_INSTANCE)
            grown = True
        elif self._instance_arrays[5].shape[1] < self._width():
            arrays = list(self._instance_arrays)
            arrays[5] = kernel.widened(arrays[5], self._width())
            self._instance_arrays = tuple(arrays)
            grown = True
        if grown:
            self._measure()

    def _capacities(self) -> dict[str, int]:
        """Rows of the validity table, positions of its id table and rows of the instance pool:
        saved in the state, so that a restored copy holds (and measures) the arrays the saved one
        held and grows them alike, whatever it held at its largest."""
        return {"records": len(self._record_arrays[0]), "table": len(self._keys),
                "instances": len(self._instance_arrays[0])}

    def _allocate(self, capacity: dict[str, int], objects: int, instances_held: int) -> None:
        """Empty arrays of the :meth:`_capacities` saved, refused (``ValueError``) when they cannot
        hold the state's ``objects`` and ``instances_held`` (``O(capacity)``; right after reset)."""
        records, positions, instances = (saved_capacity(capacity, name) for name in ("records", "table", "instances"))
        if positions & (positions - 1) or positions < table.table_capacity(objects):
            raise ValueError(f"capacity: table must be a power of two, at least 16 and twice the objects, "
                             f"got {positions}")
        if records < objects or instances < instances_held:
            raise ValueError(f"capacity: {records} records and {instances} instances cannot hold the state's "
                             f"{objects} objects and {instances_held} instances")
        d = self.q.dimensions
        self._record_arrays = kernel.empty_records(records, d)
        self._keys, self._slots = table.empty_table(positions)
        self._instance_arrays = kernel.empty_instances(instances, d, self._width())
        self._measure()

    # ------------------------------------------------------------------ bounds

    def _reset_bounds(self) -> None:
        self._occurrences = self.params["occurrences"]
        if self._occurrences < 1:
            raise ValueError(f"occurrences must be >= 1, got {self._occurrences}")
        if self.params["occurrences_per"] not in SCOPES:
            raise ValueError(f"occurrences_per must be one of {', '.join(SCOPES)}, "
                             f"got {self.params['occurrences_per']!r}")
        self._mode = PER_WINDOW if self.params["occurrences_per"] == "window" else PER_VALIDITY

    def _bound_tables(self) -> tuple[np.ndarray, ...]:
        """``repeats``, ``estimates``, the mask table, ``probabilities`` and the sketches' ``words``
        and ``powers`` of the estimated bound (unused by the exact bounds: placeholders)."""
        d = self.q.dimensions
        return (np.ones(d, np.int64), np.ones(d), *table.empty_table(16), np.zeros((1, d)), np.zeros((d, 1), np.int64),
                np.ones(1))

    def _add_estimates(self, mask: int) -> None:
        """Room for a row of probabilities for the objects seen in the streams of ``mask``: only
        the estimated bound asks for one."""
        raise AssertionError(f"{self.name}: an exact bound asked for estimates (mask {mask})")

    def _begin(self, batch: Batch) -> None:
        """Hook run once per slide before its tuples (the approximate algorithm's sketches)."""

    def _arguments(self) -> tuple:
        return (*self._instance_arrays, self._roots, *self._record_arrays,
                self._keys, self._slots, self._meta, self._counters, self._weights, self.q.k, self._occurrences,
                self._mode, *self._tables)

    def _broken_promise(self) -> ValueError:
        """The occurrence promise a tuple broke, as the caller should read it."""
        oid, stream, count = (int(self._meta[field]) for field in (ERROR_OID, ERROR_STREAM, ERROR_COUNT))
        where = "while valid" if self._meta[ERROR] == TOO_MANY_WHILE_VALID else "within one window"
        return ValueError(f"{self.name}: object {oid} occurred {count} times in stream {stream} {where}, "
                          f"more than occurrences={self._occurrences}; raise the parameter")

    # ------------------------------------------------------------------ maintenance

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        """Expiries from the front of the time list, then Algorithm 1 per tuple: one kernel
        call, ``O(r (d + log N))`` per tuple plus one step per scanned entry."""
        ids, stream, value, keys, seq = self._tuples(batch)
        self._begin(batch)
        self._reserve(len(ids))
        stream, value, start, done = np.asarray(stream, np.int64), np.asarray(value, np.float64), \
            batch.window_start(self.q), 0
        while True:
            done += kernel.slide(*self._arguments(), start, ids[done:], stream[done:], value[done:], keys[done:],
                                 seq[done:])
            if self._meta[ERROR]:
                raise self._broken_promise()
            if done == len(ids):
                break
            self._add_estimates(int(self._meta[NEED_MASK]))
        self._end = batch.end
        self._answer = None
        self._answer_bytes = 0

    # ------------------------------------------------------------------ answers and state

    def topk(self) -> Answer:
        """Scan ``csorted`` downwards to ``k`` distinct objects and every tie of the last
        (``O(entries scanned)``), ranked; cached per slide."""
        if self._answer is None:
            instances, _, _, current, _, _, links = self._instance_arrays
            ids, scores, seqs = kernel.answer(instances, current, links, self._roots, self._record_arrays[0],
                                              self._meta, self.q.k)
            self._answer = Answer.ranked(ids, scores, seqs, self.q.k)
            self._answer_bytes = ANSWER_ROW_BYTES * len(self._answer)
        return self._answer

    def _valid_records(self) -> np.ndarray:
        """Rows of the validity table's entries, by newest tuple: the list of valid objects,
        oldest first (``O(entries)``)."""
        records, rows = self._record_arrays[0], []
        row = int(self._meta[FIRST_RECORD])
        while row != -1:
            rows.append(row)
            row = int(records[row, LATER_RECORD])
        return np.asarray(rows, np.int64)

    def candidates(self) -> np.ndarray:
        """The newest seq of every object with a live instance (``O(rows)``)."""
        records = self._record_arrays[0]
        return records[records[:, OLDEST] != -1, NEWEST_SEQ]

    def _stats(self) -> dict[str, Any]:
        out = dict(zip(COUNTERS, self._counters.tolist()))
        meta = self._meta.tolist()
        out["candidates"] = meta[HELD]
        out["retained"] = meta[INSTANCES]
        return out

    def memory(self) -> tuple[int, int]:
        """Both figures from the kept counts and the arrays' kept sizes: ``O(1)``."""
        d = self.q.dimensions
        meta = self._meta.tolist()
        modelled = WORD * ((INSTANCE_WORDS + 2 * d + 2 * ENTRY_WORDS) * meta[INSTANCES] + meta[LINKS]
                           + (RECORD_WORDS + d) * meta[RECORDS])
        return modelled, self._fixed_bytes + self._answer_bytes + self._array_bytes

    def _chain(self, record: int) -> list[int]:
        """The object's instance rows, oldest first (``O(r)``)."""
        instances = self._instance_arrays[0]
        rows, row = [], self._record_arrays[0][record, OLDEST]
        while row != -1:
            rows.append(int(row))
            row = instances[row, NEWER]
        return rows

    def dump_state(self) -> dict[str, Any]:
        """Per valid object its entry (id, newest seq, occurrences, instances oldest first,
        newest key) by newest tuple (``O(N (d + k) + V log V)`` for ``V`` valid objects)."""
        instances, sums, counts, _, best, dominators, _ = self._instance_arrays
        records, occurrences = self._record_arrays
        bests = floats_out(best)  # an inf bound as "inf": weights near the largest float overflow it
        out = []
        for record in self._valid_records().tolist():
            stored = [[int(instances[row, UID]), int(instances[row, KEY]), int(instances[row, SEQ]),
                       sums[row].tolist(), counts[row].tolist(), bests[row],
                       sorted(dominators[row, :instances[row, DC]].tolist())] for row in self._chain(record)]
            out.append([int(records[record, ID]), int(records[record, NEWEST_SEQ]), occurrences[record].tolist(),
                        stored, int(records[record, NEWEST_KEY])])
        return {"end": self._end, "next_uid": int(self._meta[NEXT_UID]), "records": out,
                "instances": int(self._meta[INSTANCES]), "counters": dict(zip(COUNTERS, self._counters.tolist())),
                "capacity": self._capacities()}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data: every instance is rebuilt and linked in ``uid``
        (creation) order, every entry in the validity list by newest seq.  An entry of the
        format-1 layout has no newest key: it is the newest seq in a count window and the
        newest instance's key in a time window (format 1 kept entries with instances only).
        ``capacity`` (absent from states saved before it) sizes the arrays as they were."""
        k = self.q.k
        stored_records = [entry if len(entry) == 5 else [*entry, None] for entry in data["records"]]
        stored = sum(len(entry[3]) for entry in stored_records)
        if stored != data["instances"]:
            raise ValueError(f"state lists {stored} instances, expected {data['instances']}")
        if "capacity" in data:
            self._allocate(data["capacity"], len(stored_records), stored)
        else:
            self._reserve(max(stored, len(stored_records)))
        instances, sums, counts, current, best, dominators, links = self._instance_arrays
        records, occurrences = self._record_arrays
        meta = self._meta
        made, valid = [], []
        for oid, seq, record_counts, instance_rows, newest_key in stored_records:
            oid, seq = ints_in([oid, seq], "records").tolist()
            if table.find(self._keys, self._slots, oid) != -1:
                raise ValueError(f"state lists object {oid} twice")
            record = int(meta[FREE_RECORD])
            meta[FREE_RECORD] = records[record, kernel.RECORD_LINK]
            if newest_key is None:
                if not instance_rows:
                    raise ValueError(f"object {oid} has no instance")
                newest_key = seq if self.q.kind == "count" else instance_rows[-1][1]
            records[record, [ID, NEWEST_SEQ, NEWEST_KEY]] = oid, seq, int(ints_in([newest_key], "records")[0])
            records[record, kernel.RECORD_LINK] = -1
            valid.append((seq, record))
            occurrences[record] = ints_in(record_counts, "counts")
            table.insert(self._keys, self._slots, oid, record)
            meta[RECORDS] += 1
            for uid, key, created, instance_sums, instance_counts, instance_best, ids in instance_rows:
                uid, key, created = ints_in([uid, key, created], "instances").tolist()
                row = int(meta[FREE_INSTANCE])
                meta[FREE_INSTANCE] = instances[row, kernel.LINK]
                ids = sorted(set(ints_in(ids, "dominators").tolist()))
                if len(ids) >= k:
                    raise ValueError(f"an instance of object {oid} has {len(ids)} dominators, k is {k}")
                if len(ids) >= len(stored_records):
                    raise ValueError(f"an instance of object {oid} has {len(ids)} dominators, "
                                     f"more than the {len(stored_records) - 1} other valid objects")
                if self._untracked:  # a state written while dominance was tracked at this k
                    ids = []
                instances[row, [OID, RECORD, KEY, SEQ, UID, DC]] = oid, record, key, created, uid, len(ids)
                instances[row, kernel.LINK] = -1
                sums[row] = floats_in(instance_sums)
                counts[row] = ints_in(instance_counts, "counts")
                current[row] = table.combine(sums[row], self._weights)
                best[row] = float(floats_in([instance_best])[0])
                dominators[row, :len(ids)] = ids
                meta[LINKS] += len(ids)
                made.append((uid, row))
        for _, record in sorted(valid):
            kernel.list_record(records, meta, record)
        for _, row in sorted(made):
            kernel.link(instances, records, current, best, links, self._roots, meta, row)
        meta[NEXT_UID] = ints_in([data["next_uid"]], "next_uid")[0]
        self._counters[:] = ints_in([data["counters"][name] for name in COUNTERS], "counters")
        self._end = data["end"]
        self._answer = None
        self._answer_bytes = 0

    def check(self) -> None:
        """The time list, both score treaps walked in order, every object's chain of instances,
        their scores, bounds and dominators, and the kept counts (``O(N (d + k) + N log N)``)."""
        k, meta = self.q.k, self._meta
        instances, sums, counts, current, best, dominators, links = self._instance_arrays
        records, occurrences = self._record_arrays
        timeline, row, previous = [], meta[FIRST], -1
        while row != -1:
            assert instances[row, EARLIER] == previous, "time list links"
            timeline.append(int(row))
            previous, row = row, instances[row, LATER]
        assert meta[kernel.LAST] == previous, "time list end"
        keys = instances[timeline, KEY].tolist()
        assert all(a <= b for a, b in zip(keys, keys[1:])), "time list out of order"
        if self._end is not None and keys:
            assert keys[0] >= self._end - self.q.window and keys[-1] < self._end, "instance outside the window"
        assert len(timeline) == meta[INSTANCES] == (instances[:, RECORD] != -1).sum(), "instance count"
        for tree, values in ((CSORTED, current), (BSORTED, best)):
            walked, node = [], table.tree_first_from(links[tree], self._roots, tree, values, -np.inf)
            while node != -1:
                walked.append((float(values[node]), int(node)))
                node = table.tree_next(links[tree], node)
            assert walked == sorted((float(values[row]), row) for row in timeline), f"score list {tree} is stale"
        uids = instances[timeline, UID].tolist()
        assert all(uid < meta[NEXT_UID] for uid in uids) and uids == sorted(uids), "instance ids"
        listed = 0
        valid, record, previous = [], meta[FIRST_RECORD], -1
        while record != -1:
            assert records[record, EARLIER_RECORD] == previous, "validity list links"
            valid.append(int(record))
            previous, record = record, records[record, LATER_RECORD]
        assert meta[LAST_RECORD] == previous, "validity list end"
        in_table = np.sort(self._slots[self._slots != -1]).tolist()
        assert sorted(valid) == in_table and len(valid) == meta[RECORDS], "object count"
        newest, newest_keys = records[valid, NEWEST_SEQ].tolist(), records[valid, NEWEST_KEY].tolist()
        assert all(a < b for a, b in zip(newest, newest[1:])), "validity list out of order"
        assert self.q.kind == "time" or newest == newest_keys, "a count window's key is its seq"
        if self._end is not None and valid:
            assert records[valid[0], NEWEST_KEY] >= self._end - self.q.window, "an expired object is listed"
            assert max(newest_keys) < self._end, "an object newer than the window is listed"
        assert meta[HELD] == sum(records[record, OLDEST] != -1 for record in valid), "objects with instances"
        valid_ids = set(records[valid, ID].tolist())
        assert dominators.shape[1] == self._width(), "room for dominators"
        for record in valid:
            oid = int(records[record, ID])
            assert table.find(self._keys, self._slots, oid) == record, f"object {oid} not in the id table"
            assert occurrences[record].min() >= 0
            previous = None
            for row in self._chain(record):
                listed += 1
                assert instances[row, RECORD] == record and instances[row, OID] == oid, "instance of another object"
                assert previous is None or instances[row, KEY] > previous, "instances out of order"
                previous = instances[row, KEY]
                assert instances[row, SEQ] <= records[record, NEWEST_SEQ], "instance newer than its object"
                assert instances[row, KEY] <= records[record, NEWEST_KEY], "instance newer than its object"
                assert np.all((0 <= counts[row]) & (counts[row] <= occurrences[record])), "instance counts"
                assert np.all(sums[row] >= 0.0) and np.all((sums[row] > 0.0) <= (counts[row] > 0)), "instance sums"
                assert current[row] == table.combine(sums[row], self._weights), "stale currentscore"
                assert current[row] <= best[row], "bestscore below currentscore"
                self._check_bound(row, record)
                ids = dominators[row, :instances[row, DC]].tolist()
                assert len(ids) == len(set(ids)) and instances[row, DC] < k, "dominance counter"
                assert oid not in ids, "an object dominates itself"
                assert set(ids) <= valid_ids, "a dominator is not a valid object"
        assert listed == len(timeline), "time list holds instances of no object"
        assert meta[LINKS] == instances[timeline, DC].sum(), "kept dominator count"

    def _check_bound(self, row: int, record: int) -> None:
        _, sums, counts, current, best, _, _ = self._instance_arrays
        highest = kernel.bound(sums, counts, self._record_arrays[1], row, record, self._weights, self._occurrences,
                               self._mode, *self._tables[:5])
        assert best[row] <= max(current[row], highest), "bestscore above the bound"
