"""approx's compiled sketch and estimate kernels against the plain-Python sketches they replaced
(``tests/engine/plain_fmsketch.py``): the same timestamps, the same estimates bit for bit, the
same rows of probabilities and per-slide estimates at every slide of real runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import engine
from engine.fmsketch import NEVER, SlidingSketches
from engine.generators import correlated_streams
from engine.kernels import approx as approx_kernel
from engine.kernels import fmsketch as kernel
from engine.kernels.incomplete import NONE
from tests.engine.plain_fmsketch import PlainEstimates, PlainSketches


def random_sketches(seed: int):
    """A compiled and a plain sketch fed the same random tuples (negative ids, repeats)."""
    rng = np.random.default_rng(seed)
    d, bitmaps, bits = int(rng.integers(1, 6)), int(rng.integers(1, 80)), int(rng.choice([1, 2, 7, 32, 63]))
    compiled, plain = SlidingSketches(d, bitmaps, bits), PlainSketches(d, bitmaps, bits)
    m = int(rng.integers(0, 2500))
    ids = rng.integers(-100, 3000, m) if rng.random() < 0.5 else rng.integers(-2 ** 62, 2 ** 62, m)
    stream, keys = rng.integers(0, d, m), np.sort(rng.integers(0, 5000, m))
    for part in np.array_split(np.arange(m), 3):
        compiled.add(stream[part], ids[part], keys[part])
        plain.add(stream[part], ids[part], keys[part])
    return compiled, plain, keys


@pytest.mark.parametrize("seed", range(12))
def test_adding_ids_sets_the_same_timestamps(seed):
    compiled, plain, _ = random_sketches(seed)
    assert np.array_equal(compiled.stamps, plain.stamps)


def test_a_position_is_the_lowest_one_bit_capped_at_the_last():
    assert [kernel.position(np.uint64(h), 32) for h in (1, 2, 12, 2 ** 40, 0)] == [0, 1, 2, 31, 31]
    assert kernel.position(np.uint64(2 ** 63), 64) == 63 and kernel.position(np.uint64(8), 1) == 0


@pytest.mark.parametrize("seed", range(12))
def test_unions_and_intersections_are_the_plain_estimates_bit_for_bit(seed):
    compiled, plain, keys = random_sketches(seed)
    d = compiled.stamps.shape[0]
    starts = [0, int(keys[len(keys) // 2]) if len(keys) else 0, int(keys[-1]) if len(keys) else 1, 10 ** 6]
    for start in starts:
        compiled.restrict(start)
        for n in range(1, d + 1):
            for streams in itertools.permutations(range(d), n):
                assert compiled.union(streams) == plain.union(streams, start), (start, streams)
                assert compiled.intersection(streams) == plain.intersection(streams, start), (start, streams)


@pytest.mark.parametrize("seed", range(8))
def test_rows_of_probabilities_are_the_plain_rows(seed):
    compiled, plain, keys = random_sketches(seed)
    d = compiled.stamps.shape[0]
    estimates = PlainEstimates(d, compiled.stamps.shape[1], 0, False, 1)
    estimates.sketches = plain
    for start in (0, int(keys[len(keys) // 3]) if len(keys) else 0):
        compiled.restrict(start)
        estimates.start = start
        estimates.unions.clear()
        estimates.probabilities.clear()
        row = np.empty(d)
        for mask in range(1, 1 << d):
            compiled.probability_row(mask, row)
            assert row.tolist() == estimates.row(mask), (start, mask)


@pytest.mark.parametrize("bitmaps", [12, 33, 64])
def test_every_total_of_lowest_unset_positions_estimates_as_the_plain_sketch(bitmaps):
    """Each total ``r = Σ_b R_b`` from 0 to ``B L`` (bitmap ``b`` set below ``R_b``): the looked-up
    estimate is the plain one bit for bit (a compiled ``2 ** (r / B)`` differs at ``B = 12``, ``r = 11``)."""
    bits = 32
    compiled, plain = SlidingSketches(1, bitmaps, bits), PlainSketches(1, bitmaps, bits)
    for total in range(bitmaps * bits + 1):
        lowest_unset = np.full(bitmaps, total // bitmaps)
        lowest_unset[:total % bitmaps] += 1
        stamps = np.where(np.arange(bits)[None, :] < lowest_unset[:, None], 1, NEVER)[None]
        compiled.stamps[...] = stamps
        plain.stamps[...] = stamps
        compiled.restrict(1)
        assert compiled.union([0]) == plain.union([0], start=1), total


def test_a_window_of_no_ids_estimates_the_fm_floor():
    sketches = SlidingSketches(2, bitmaps=8)
    sketches.restrict(0)
    assert sketches.union([0, 1]) == 1 / 0.77351 and sketches.intersection([0, 1]) == 1 / 0.77351
    assert (sketches.stamps == NEVER).all() and (sketches.words == 0).all()


def test_sliding_sketches_forget_expired_ids():
    sketches = SlidingSketches(1, bitmaps=128)
    sketches.add(np.zeros(3000, np.int64), np.arange(3000), np.arange(3000))
    sketches.restrict(0)
    assert 2000 < sketches.union([0]) < 4500
    sketches.restrict(2500)
    assert 350 < sketches.union([0]) < 750
    sketches.restrict(3000)
    assert sketches.union([0]) < 2


@pytest.mark.parametrize("seed", range(4))
def test_slide_counters_and_estimates_are_the_plain_ones(seed):
    """The counters kept as arrays and the estimates made from them, against the deque of
    lists and the Python estimates, over slides that drop 0, 1 or several old slides, and empty
    slides, which keep no row."""
    rng = np.random.default_rng(seed)
    d, slide, window = 3, 10, 40
    for fixed, literal in ((0, False), (0, True), (2, False)):
        compiled = SlidingSketches(d, bitmaps=16)
        plain = PlainEstimates(d, 16, fixed, literal, slide)
        ends, tuples, sums = np.zeros(8, np.int64), np.zeros((8, d), np.int64), np.zeros((8, d))
        repeats, values = np.zeros(d, np.int64), np.zeros(d)
        held, end = 0, 0
        for step in range(40):
            end += slide * int(rng.choice([1, 1, 1, 3]))
            m = int(rng.integers(0, 25)) if rng.random() < 0.7 else 0
            ids, stream = rng.integers(0, 30, m), rng.integers(0, d, m)
            value, keys = rng.random(m) * (rng.random() < 0.9), np.sort(rng.integers(end - slide, end, m))
            start = end - window
            compiled.add(stream, ids, keys)
            held = approx_kernel.count_slide(ends, tuples, sums, held, end, slide, start, stream, value)
            approx_kernel.estimate(compiled.stamps, compiled.words, *compiled.estimates(), start, tuples, sums, held,
                                   fixed, literal, repeats, values)
            plain.begin(stream, ids, value, keys, end, start)
            assert [[e, t, s] for e, t, s in zip(ends[:held].tolist(), tuples[:held].tolist(),
                                                  sums[:held].tolist())] == [list(c) for c in plain.counts]
            assert repeats.tolist() == plain.repeats and values.tolist() == plain.values, step


@pytest.mark.parametrize("query, data, params", [
    (engine.Query(weights=[1.0] * 3, k=10, window=300, slide=30),
     correlated_streams(2000, streams=3, seed=2, reuse=0.6, memory=20), {}),
    (engine.Query(weights=[0.5, 1.0, 2.0, 1.0], k=5, window=200, slide=20),
     correlated_streams(1500, streams=4, seed=4, reuse=0.7, memory=10), {"unseen_value": "max", "bitmaps": 16}),
    (engine.Query(weights=[1.0] * 2, k=3, window=105, slide=7, kind="time"),
     correlated_streams(800, streams=2, seed=6, reuse=0.5, memory=10), {"repeats": 2}),
])
def test_approx_uses_the_plain_estimates_at_every_slide(query, data, params):
    """Every slide's ``m̂``, ``v̂`` and every row of probabilities the EAA kernel asked for are
    the plain-Python estimates of the same window."""
    approx = engine.create("approx", query, **params)
    plain = PlainEstimates(query.dimensions, approx.params["bitmaps"], approx.params["repeats"],
                           approx.params["unseen_value"] == "max", query.slide)
    asked = 0
    for batch in engine.slides(data, query):
        approx.process(batch)
        approx.check()
        ids, stream, value, keys, _ = approx._tuples(batch)
        plain.begin(stream, ids, value, keys, batch.end, batch.window_start(query))
        repeats, values, mask_keys, mask_slots, probabilities = approx._tables[:5]
        assert repeats.tolist() == plain.repeats and values.tolist() == plain.values
        for mask, row in zip(mask_keys.tolist(), mask_slots.tolist()):
            if row != NONE:
                asked += 1
                assert probabilities[row].tolist() == plain.row(mask), (batch.index, mask)
    assert asked > 0


PLAIN_HASH_SCRIPT = """
import json, warnings
warnings.simplefilter("error")
import numpy as np
import engine
from engine.fmsketch import SlidingSketches
rng = np.random.default_rng(3)
ids = np.concatenate([rng.integers(-2**63, 2**63 - 1, 300), [-2**63, -1, 0, 2**63 - 1]])
sketches = SlidingSketches(3, bitmaps=8)
sketches.add(rng.integers(0, 3, len(ids)), ids, np.arange(len(ids)))
query = engine.Query(weights=[1.0, 1.0], k=3, window=40, slide=10)
approx = engine.create("approx", query)
answers = []
for batch in engine.slides((rng.integers(0, 30, 120), rng.integers(0, 2, 120), rng.random(120), np.arange(120)), query):
    approx.process(batch)
    answers.append(approx.topk().ids.tolist())
print(json.dumps([sketches.stamps.tolist(), sketches._salts.tolist(), answers]))
"""


def test_the_hash_without_the_jit_is_silent_and_equals_the_compiled_one():
    """Without numba the hash's wrapped uint64 arithmetic printed numpy's overflow warning
    (here an error); the stamps, salts and approx's answers equal the compiled code's."""
    from tests.nojit import run_script

    plain = run_script(PLAIN_HASH_SCRIPT, no_jit=True)
    assert plain == run_script(PLAIN_HASH_SCRIPT, no_jit=False)
