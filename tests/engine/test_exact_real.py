"""Every exact single-stream algorithm equals the oracle at every slide on the real trades of
``sample_data/`` (SPY and BAC, 8 October 2013): the generated streams of ``test_conformance``
have no millisecond bursts of equal times, price ticks and round lots tying scores, or the
close's last minutes.  The oracle itself equals the plain-Python reference on the same slices."""

from __future__ import annotations

import pathlib
import zipfile

import numpy as np
import pandas as pd
import pytest

import engine
from tests.reference import reference_answers
from tests.streams import assert_same_answer, check_against_oracle

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "sample_data"
EXACT = [info.name for info in engine.available() if info.exact and info.stream == "single" and info.name != "oracle"]
OPEN, CLOSE = (9 * 60 + 30) * 60_000, 16 * 60 * 60_000  # milliseconds after New York midnight
ROWS = 600
WEIGHTS = {"notional": [1.0, 0.0, 0.0], "size": [0.0, 0.0, 1.0], "cheap and large": [0.0, -1.0, 0.01]}
QUERIES = [("count", 1, 50, 1), ("count", 5, 60, 60), ("count", ROWS + 5, 40, 8),
           ("time", 1, 1000, 100), ("time", 3, 2000, 2000), ("time", ROWS + 5, 500, 50)]


def trades(symbol: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, t, x)`` of a day's file: ``t`` in ms after midnight, features notional, price, size."""
    with zipfile.ZipFile(SAMPLES / f"{symbol}_20131008_trade.zip") as archive:
        with archive.open(archive.namelist()[0]) as raw:
            frame = pd.read_csv(raw, header=None, usecols=[0, 1, 2, 5], names=["time_ms", "price", "size", "suspicious"])
    frame = frame[frame["suspicious"] == 0]
    price = frame["price"].to_numpy(np.float64) / 10_000
    size = frame["size"].to_numpy(np.float64)
    t = np.floor(frame["time_ms"].to_numpy(np.float64)).astype(np.int64)
    return np.arange(len(t), dtype=np.int64) + 10_000, t, np.column_stack([price * size, price, size])


@pytest.fixture(scope="module", params=["spy", "bac"])
def market(request) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The first ``ROWS`` trades after the open and the last ``ROWS`` before a second after the close."""
    ids, t, x = trades(request.param)
    opening = int(np.searchsorted(t, OPEN))
    closing = int(np.searchsorted(t, CLOSE + 1000)) - ROWS
    return {part: (ids[at:at + ROWS], t[at:at + ROWS], x[at:at + ROWS]) for part, at in
            (("open", opening), ("close", closing))}


def test_the_slices_hold_what_generated_streams_lack(market):
    for ids, t, x in market.values():
        assert len(ids) == ROWS and np.all(np.diff(t) >= 0)
        assert np.count_nonzero(np.diff(t) == 0) > ROWS // 10  # bursts of trades in one millisecond
        assert len(np.unique(x[:, 0])) < ROWS  # equal notionals
    opening, closing = market["open"][1], market["close"][1]
    assert opening[0] >= OPEN and closing[0] < CLOSE and closing[-1] < CLOSE + 1000


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("part", ["open", "close"])
def test_exact_algorithms_equal_the_oracle_at_every_slide(market, name, part):
    data = market[part]
    for weights in WEIGHTS.values():
        for kind, k, window, slide in QUERIES:
            query = engine.Query(weights=weights, k=k, window=window, slide=slide, kind=kind)
            assert check_against_oracle(name, data, query, check_every=7) > 0


@pytest.mark.parametrize("part", ["open", "close"])
def test_the_oracle_equals_the_reference(market, part):
    ids, t, x = market[part]
    for weights in WEIGHTS.values():
        for kind, k, window, slide in QUERIES:
            query = engine.Query(weights=weights, k=k, window=window, slide=slide, kind=kind)
            expected = reference_answers(ids.tolist(), t.tolist(), x.tolist(), weights, k, window, slide, kind)
            oracle = engine.create("oracle", query)
            batches = list(engine.slides((ids, t, x), query))
            assert [batch.end for batch in batches] == [end for end, _ in expected]
            for batch, (end, ranked) in zip(batches, expected):
                oracle.process(batch)
                answer = engine.Answer(np.array([i for i, _, _ in ranked], np.int64),
                                       np.array([s for _, s, _ in ranked]), np.array([q for _, _, q in ranked], np.int64))
                assert_same_answer(answer, oracle.topk(), f"{query} end {end}")
