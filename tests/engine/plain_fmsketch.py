"""Plain-Python sliding-window FM sketches: the reference the compiled kernels are checked against.

The engine's own implementation before its kernels (:mod:`engine.kernels.fmsketch`), kept
for the tests: numpy over the whole ``stamps`` block per union, a dict of unions per
intersection.  Same hashing, same estimates, bit for bit.

The sketches themselves (bitmaps of expiry keys, ``R_b``, unions, inclusion-exclusion) are
described in :mod:`engine.fmsketch`.
"""

from __future__ import annotations

import numpy as np

from engine.attributes import attribute_sum

PHI = 0.77351
"""Flajolet and Martin's correction factor."""

NEVER = np.iinfo(np.int64).min
"""Timestamp of a bit never set."""

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a fast, well-mixed 64-bit hash of ``uint64`` values.

    >>> mix64(np.array([1, 2], np.uint64)).tolist() != [1, 2]
    True
    """
    with np.errstate(over="ignore"):
        x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK
        x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK
        x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK
        return x ^ (x >> np.uint64(31))


class PlainSketches:
    """Per-stream sliding-window FM sketches over object ids: ``streams`` sketches of ``bitmaps``
    bitmaps of ``bits`` bits (the parameters of :class:`engine.fmsketch.SlidingSketches`)."""

    def __init__(self, streams: int, bitmaps: int = 64, bits: int = 32) -> None:
        if bitmaps < 1 or not 1 <= bits <= 63:
            raise ValueError(f"sketches need bitmaps >= 1 and 1 <= bits <= 63, got {bitmaps}, {bits}")
        self.bits = bits
        self.stamps = np.full((streams, bitmaps, bits), NEVER, np.int64)
        self._salts = mix64(np.arange(1, bitmaps + 1, dtype=np.uint64) * np.uint64(0x632BE59BD9B4E019))

    def add(self, stream: np.ndarray, ids: np.ndarray, keys: np.ndarray) -> None:
        """Record that each id occurred in its stream at its key (``O(m B)``)."""
        if not len(ids):
            return
        hashes = mix64(np.asarray(ids).astype(np.uint64)[:, None] ^ self._salts[None, :])
        lowest = hashes & (~hashes + np.uint64(1))
        positions = np.frexp(lowest.astype(np.float64))[1] - 1
        positions = np.where(hashes == 0, self.bits - 1, np.minimum(positions, self.bits - 1))
        bitmap = np.broadcast_to(np.arange(self.stamps.shape[1]), positions.shape)
        rows = np.broadcast_to(np.asarray(stream)[:, None], positions.shape)
        np.maximum.at(self.stamps, (rows, bitmap, positions), np.broadcast_to(np.asarray(keys)[:, None], positions.shape))

    def union(self, streams, start: int) -> float:
        """Estimated distinct ids in the union of ``streams`` with a key ``>= start`` (``O(B L)``)."""
        valid = self.stamps[list(streams)].max(axis=0) >= start
        lowest_unset = np.where(valid.all(axis=1), self.bits, np.argmin(valid, axis=1))
        return float(2.0 ** lowest_unset.mean() / PHI)

    def intersection(self, streams, start: int, unions: dict | None = None) -> float:
        """Estimated ids present in every one of ``streams`` (inclusion-exclusion over unions).

        ``unions`` caches union estimates by stream bitmask across calls.
        """
        streams = list(streams)
        unions = {} if unions is None else unions
        total = 0.0
        for subset in range(1, 1 << len(streams)):
            members = [streams[i] for i in range(len(streams)) if subset >> i & 1]
            mask = sum(1 << s for s in members)
            if mask not in unions:
                unions[mask] = self.union(members, start)
            total += unions[mask] if len(members) % 2 else -unions[mask]
        return total


class PlainEstimates:
    """approx's per-slide estimates as the engine made them before its kernels: the slide
    counters in a deque of lists, ``m̂_y`` and ``v̂_y`` in Python, each row of probabilities
    from :class:`PlainSketches` with its unions and probabilities cached per slide."""

    def __init__(self, streams: int, bitmaps: int, repeats: int, literal: bool, slide: int) -> None:
        self.d, self.fixed, self.literal, self.slide = streams, repeats, literal, slide
        self.sketches = PlainSketches(streams, bitmaps=bitmaps)
        self.counts: list = []
        self.start = 0
        self.repeats = [repeats or 1] * streams
        self.values = [1.0] * streams
        self.unions: dict = {}
        self.probabilities: dict = {}

    def begin(self, stream, ids, value, keys, end: int, start: int) -> None:
        d = self.d
        self.start = start
        self.sketches.add(stream, ids, keys)
        if len(stream):  # an empty slide adds nothing to any total: no row
            self.counts.append((end, np.bincount(stream, minlength=d).tolist(),
                                np.bincount(stream, weights=value, minlength=d).tolist()))
        while self.counts and self.counts[0][0] - self.slide < start:
            self.counts.pop(0)
        self.unions.clear()
        self.probabilities.clear()
        tuples = [sum(counts[y] for _, counts, _ in self.counts) for y in range(d)]
        if self.literal:
            self.values = [1.0] * d
        else:
            sums = [attribute_sum(sums[y] for _, _, sums in self.counts) for y in range(d)]
            self.values = [min(1.0, total / n) if n else 1.0 for total, n in zip(sums, tuples)]
        for y in range(d):
            if self.fixed:
                self.repeats[y] = self.fixed
            elif not tuples[y]:
                self.repeats[y] = 1
            else:
                self.repeats[y] = max(1, int(round(tuples[y] / self.sketches.union([y], start))))

    def probability(self, seen: list[int], y: int) -> float:
        key = (sum(1 << s for s in seen), y)
        if key not in self.probabilities:
            both = self.sketches.intersection(seen + [y], self.start, self.unions)
            given = self.sketches.intersection(seen, self.start, self.unions)
            self.probabilities[key] = 1.0 if given <= 0 else min(1.0, max(0.0, both / given))
        return self.probabilities[key]

    def row(self, mask: int) -> list[float]:
        seen = [y for y in range(self.d) if mask >> y & 1]
        return [0.0 if mask >> y & 1 else self.probability(seen, y) for y in range(self.d)]
