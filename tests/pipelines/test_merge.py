"""The replay driver's pure steps: merging shards per slide and measuring against the oracle."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from engine import Answer
from pipelines import replay, stock
from pipelines.replay_tasks import SegmentResult


def answer(ids, scores, seq):
    return Answer(np.array(ids, np.int64), np.array(scores, np.float64), np.array(seq, np.int64))


def shard_result(shard, slides, seconds):
    """A task result of two slides; ``slides`` holds (ids, scores, seq) per slide."""
    return SegmentResult(
        key=(0, "alg", shard), ends=np.array([10, 20]), counts=np.array([len(s[0]) for s in slides]),
        ids=np.concatenate([np.array(s[0], np.int64) for s in slides]),
        scores=np.concatenate([np.array(s[1], np.float64) for s in slides]),
        seq=np.concatenate([np.array(s[2], np.int64) for s in slides]),
        candidates=np.array([3, 4]), retained=np.array([5, 6]), bytes=np.array([70, 80]),
        seconds=np.array(seconds), state="{}", checksum="", format_version=1)


def test_merge_shards_takes_the_top_k_of_the_union_per_slide():
    even = shard_result(0, [([10, 12], [5.0, 1.0], [0, 2]), ([14], [7.0], [4])], [0.1, 0.4])
    odd = shard_result(1, [([11, 13], [5.0, 3.0], [1, 3]), ([], [], [])], [0.3, 0.2])
    merged = replay.merge_shards([even, odd], k=2)
    assert [a.ids.tolist() for a in merged.answers] == [[11, 10], [14]]  # equal scores: newer first
    assert [a.scores.tolist() for a in merged.answers] == [[5.0, 5.0], [7.0]]
    assert merged.candidates.tolist() == [6, 8] and merged.retained.tolist() == [10, 12]
    assert merged.bytes.tolist() == [140, 160] and merged.seconds.tolist() == [0.3, 0.4]


def test_merge_of_one_shard_keeps_its_answers():
    only = shard_result(0, [([10, 12], [5.0, 1.0], [0, 2]), ([14], [7.0], [4])], [0.1, 0.4])
    merged = replay.merge_shards([only], k=2)
    assert [a.ids.tolist() for a in merged.answers] == [[10, 12], [14]]
    assert merged.candidates.tolist() == [3, 4]


def test_quality_measures_each_slide_against_the_exact_answer():
    exact = [answer([1, 2, 3], [9.0, 8.0, 4.0], [1, 2, 3]), answer([], [], []), answer([5], [2.0], [5])]
    got = [answer([1, 4], [9.0, 6.0], [1, 4]), answer([], [], []), answer([5], [2.0], [5])]
    precision, error = replay.quality(got, exact)
    assert precision.tolist() == pytest.approx([1 / 3, 1.0, 1.0])
    assert error.tolist() == pytest.approx([(0.0 + 2.0 / 8.0 + 1.0) / 3, 0.0, 0.0])


@pytest.mark.parametrize("module", [stock, replay], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried and not failures
