"""Absurd parameter values are refused with one line naming the parameter and the range."""

from __future__ import annotations

import re

import numpy as np
import pytest

import engine
from engine.algorithms.sao import MAX_LAYERS, MAX_MEMORY

OBJECT_QUERY = engine.Query(weights=[1.0, 0.5], k=3, window=20, slide=5)
INTEGER_PARAMS = [(info.name, key) for info in engine.available() for key, default in info.defaults.items()
                  if type(default) is int]


@pytest.mark.parametrize("name, key", INTEGER_PARAMS)
@pytest.mark.parametrize("value, bound", [(1e30, "at most 9223372036854775807"), (10**30, "at most 9223372036854775807"),
                                          (2**63, "at most 9223372036854775807"),
                                          (np.uint64(2**64 - 1), "at most 9223372036854775807"),
                                          (-2**63 - 1, "at least -9223372036854775808")])
def test_an_integer_parameter_beyond_int64_is_refused(name, key, value, bound):
    with pytest.raises(ValueError, match=rf"^parameter {key} of {name} must fit in int64 \({bound}\), got "):
        engine.create(name, OBJECT_QUERY, **{key: value})


@pytest.mark.parametrize("name, key", INTEGER_PARAMS)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 2.5, True, np.bool_(False), "1e3"])
def test_an_integer_parameter_refuses_what_is_no_integer(name, key, value):
    with pytest.raises(ValueError, match=rf"^parameter {key} of {name} must be int, got "):
        engine.create(name, OBJECT_QUERY, **{key: value})


@pytest.mark.parametrize("key, largest", [("memory", MAX_MEMORY), ("layers", MAX_LAYERS)])
def test_sao_takes_its_parameters_up_to_their_limit(key, largest):
    assert engine.create("sao", OBJECT_QUERY, **{key: largest}).params[key] == largest
    assert engine.create("sao", OBJECT_QUERY, **{key: float(largest)}).params[key] == largest
    with pytest.raises(ValueError, match=re.escape(f"parameter {key} of sao must be from 1 to {largest:,}")):
        engine.create("sao", OBJECT_QUERY, **{key: largest + 1})
    for low in (0, -1):
        with pytest.raises(ValueError, match=f"^parameter {key} of sao must be >= 1, got {low}$"):
            engine.create("sao", OBJECT_QUERY, **{key: low})
