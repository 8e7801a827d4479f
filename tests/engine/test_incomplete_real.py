"""The incomplete-stream algorithms on real taxi trips turned into attribute streams as a user
would (``sample_data/taxi``, January 2019): object = pickup zone, stream = payment type (card,
cash, other), value = fare over the month's largest fare.  A zone reports hundreds of times per
window in one stream (repeats add up), free rides score 0, and the night leaves hours without a
trip (empty time slides).  ``sla`` and ``eaa`` equal the brute force at every slide; ``approx``
keeps its invariants and continues exactly from its JSON state."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd
import pytest

import engine
from benchmarks.bench_incomplete import max_occurrences
from tests.engine.test_incomplete import compare

TAXI = pathlib.Path(__file__).resolve().parents[2] / "sample_data" / "taxi" / "yellow_tripdata_sample_2019-01.csv.gz"
COUNT = engine.Query(weights=[1.0, 1.0, 0.5], k=10, window=500, slide=50)
TIME = engine.Query(weights=[1.0, 0.0, 2.0], k=5, window=6 * 3_600_000, slide=3_600_000, kind="time")


@pytest.fixture(scope="module")
def zones():
    trips = pd.read_csv(TAXI, usecols=["pickup_datetime", "payment_type", "fare_amount", "pickup_location_id"])
    trips = trips[trips["fare_amount"] >= 0]
    t = pd.to_datetime(trips["pickup_datetime"]).astype("int64").to_numpy() // 1_000_000
    order = np.argsort(t, kind="stable")
    payment = trips["payment_type"].to_numpy()[order]
    stream = np.where(payment == 1, 0, np.where(payment == 2, 1, 2)).astype(np.int64)
    fare = trips["fare_amount"].to_numpy(np.float64)[order]
    return (trips["pickup_location_id"].to_numpy(np.int64)[order], stream, fare / fare.max(), t[order] - t[order][0])


def occurrences(data, query: engine.Query) -> dict:
    ids, stream, _, t = data
    keys = np.arange(len(ids)) if query.kind == "count" else t
    return {"occurrences": max_occurrences(ids, stream, keys, query.window), "occurrences_per": "window"}


def test_the_stream_has_the_shapes_this_file_is_for(zones):
    ids, stream, value, t = zones
    assert set(stream.tolist()) == {0, 1, 2} and (value == 0).any() and value.max() == 1.0
    assert occurrences(zones, COUNT)["occurrences"] > 20  # zones repeat within a window
    assert np.diff(t).max() > TIME.slide  # an hour or more without a trip


@pytest.mark.parametrize("query", [COUNT, TIME], ids=["count", "time"])
@pytest.mark.parametrize("name", ["sla", "eaa"])
def test_exact_algorithms_equal_the_brute_force_at_every_slide(zones, name, query):
    data = tuple(column[:4_000 if query.kind == "count" else 3_000] for column in zones)  # time: 9 days
    params = occurrences(data, query) if name == "eaa" else {}
    assert compare(name, data, query, params) > 70


@pytest.mark.parametrize("query", [COUNT, TIME], ids=["count", "time"])
def test_approx_keeps_its_invariants_and_continues_from_its_state(zones, query):
    batches = list(engine.slides(zones, query))[:120]
    approx = engine.create("approx", query)
    resumed = None
    for index, batch in enumerate(batches):
        approx.process(batch)
        approx.check()
        if resumed is not None:
            resumed.process(batch)
            assert np.array_equal(resumed.topk().ids, approx.topk().ids), f"slide {index}"
            assert np.array_equal(resumed.topk().scores, approx.topk().scores), f"slide {index}"
        elif index == 40:
            resumed = engine.restore(json.loads(json.dumps(approx.to_state(), allow_nan=False)), query=query)
            assert resumed._stats() == approx._stats()
    resumed.check()
