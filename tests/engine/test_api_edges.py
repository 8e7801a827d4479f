"""The Python API and the command line as an outside checker drives them: integer columns given as
floats or bools, a gap in the times, parameters given as bools or beyond the memory, a query the
command line refuses before it reads its input.  Every refusal is a ``ValueError`` (one ``error:``
line on the command line) naming what is wrong, and nothing changes."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import engine
from engine import cli
from engine.multi import SharedTopK

COUNT = engine.Query(weights=[1.0], k=1, window=4, slide=2)
TIME = engine.Query(weights=[1.0], k=1, window=4, slide=2, kind="time")
ATTRIBUTES = engine.Query(weights=[1.0, 1.0], k=1, window=2, slide=2)


# ------------------------------------------------------------------ integer columns


@pytest.mark.parametrize("column, ids, t", [
    ("t", [1, 2], [0.0, 3.5]),                      # was cut to 3
    ("ids", [1.5, 2], [0, 3]),                      # was cut to 1
    ("ids", np.array([7.25, 8.0]), np.array([0, 1])),
    ("t", [0, 1], np.array([0.0, np.nan])),
    ("t", [0, 1], np.array([0.0, 1e19])),
])
@pytest.mark.parametrize("query", [COUNT, TIME])
def test_slides_refuse_a_fraction_in_an_integer_column(column, ids, t, query):
    with pytest.raises(ValueError, match=f"^{column} must be int64 integers: row 1: "
                       if column == "t" else f"^{column} must be int64 integers: row 0: "):
        engine.slides((ids, t, [1.0, 2.0]), query)


@pytest.mark.parametrize("ids", [[True, False], np.array([True, False]), [1, True]])
def test_slides_and_the_shared_executor_refuse_bool_ids(ids):
    """numpy reads ``True`` as 1: a column of flags passed where the ids go was taken silently."""
    with pytest.raises(ValueError, match="^ids must be int64 integers.*(booleans|True is a boolean)"):
        engine.slides((ids, [0, 3], [1.0, 2.0]), COUNT)
    executor = SharedTopK([COUNT])
    with pytest.raises(ValueError, match="^ids must be int64 integers"):
        executor.process(ids, [0, 3], [1.0, 2.0])
    assert executor.stats()["candidates"] == 0


def test_the_shared_executor_refuses_a_fractional_time_and_changes_nothing():
    executor = SharedTopK([TIME])
    executor.process([1], [0], [1.0])
    before = executor.to_state()["data"]
    with pytest.raises(ValueError, match="^t must be int64 integers: row 1: 3.5 is not a whole number"):
        executor.process([2, 3], [1, 3.5], [1.0, 2.0])
    assert executor.to_state()["data"] == before


@pytest.mark.parametrize("column, data", [
    ("ids", ([1.5, 2], [0, 1], [0.5, 0.5], [0, 1])),
    ("stream", ([1, 2], [0.7, 0], [0.5, 0.5], [0, 1])),   # was read as stream 0
    ("stream", ([1, 2], [True, False], [0.5, 0.5], [0, 1])),
    ("t", ([1, 2], [0, 1], [0.5, 0.5], [0, 1.5])),
])
def test_attribute_streams_refuse_a_fraction_or_a_bool_in_an_integer_column(column, data):
    with pytest.raises(ValueError, match=f"^{column} must be int64 integers"):
        engine.slides(data, ATTRIBUTES)


def test_whole_floats_are_read_as_the_integers_they_are():
    """A float array of whole numbers (times read from a float column) keeps working."""
    as_floats = [(b.end, b.ids.tolist(), b.t.tolist())
                 for b in engine.slides((np.array([5.0, 6.0, 7.0]), np.array([0.0, 2.0, 5.0]), [1.0, 2.0, 3.0]), TIME)]
    as_ints = [(b.end, b.ids.tolist(), b.t.tolist()) for b in engine.slides(([5, 6, 7], [0, 2, 5], [1.0, 2.0, 3.0]), TIME)]
    assert as_floats == as_ints == [(2, [5], [0]), (4, [6], [2])]


def test_an_integer_beyond_the_floats_precision_beside_a_float_is_read_exactly():
    """``np.asarray([2**62 + 1, 2.0])`` is a float array that rounds the first to ``2**62``."""
    batch = next(iter(engine.slides(([2**62 + 1, 2.0], [0, 1], [1.0, 2.0]), engine.Query([1.0], 1, 2, 2))))
    assert batch.ids.tolist() == [2**62 + 1, 2]


# ------------------------------------------------------------------ number columns


TWO_FEATURES = engine.Query(weights=[1.0, 1.0], k=1, window=2, slide=1)


@pytest.mark.parametrize("x, message", [
    ([[1.0, True], [2.0, 3.0]], "row 0, feature 1: True is a boolean"),         # was read as 1.0
    ([[1.0, 2.0], ["1.5", 3.0]], "row 1, feature 0: '1.5' is text"),             # was read as 1.5
    (np.array([[True, False], [False, True]]), "row 0, feature 0: True is a boolean"),
    (np.array([["1", "2"], ["3", "4"]]), "row 0, feature 0: '1' is text"),
    ([[1.0, 2.0], [3.0, np.bool_(False)]], "row 1, feature 1: False is a boolean"),
    ([[1.0, 2.0], [3.0, b"4"]], "row 1, feature 1: b'4' is text"),
    (np.array([[1 + 1j, 2], [3, 4]]), "row 0, feature 0: \\(1\\+1j\\) is not a number"),  # its imaginary part was dropped
])
def test_slides_and_the_shared_executor_refuse_bools_or_text_among_the_features(x, message):
    assert_features_refused(x, message)


def assert_features_refused(x, message):
    """``engine.slides`` and the shared executor refuse the two rows' features ``x`` with
    ``message``, and the executor holds nothing after it."""
    with pytest.raises(ValueError, match=f"^features must be numbers: {message}$"):
        engine.slides(([1, 2], [0, 1], x), TWO_FEATURES)
    executor = SharedTopK([TWO_FEATURES])
    with pytest.raises(ValueError, match=f"^features must be numbers: {message}$"):
        executor.process([1, 2], [0, 1], x)
    assert executor.stats()["candidates"] == 0


@pytest.mark.parametrize("value, message", [
    ([0.5, True], "row 1: True is a boolean"),
    (["0.5", 0.5], "row 0: '0.5' is text"),
    (np.array([True, False]), "row 0: True is a boolean"),
    (np.array(["0.5", "1"]), "row 0: '0.5' is text"),
])
def test_attribute_streams_refuse_a_bool_or_text_value(value, message):
    with pytest.raises(ValueError, match=f"^value must be numbers: {message}$"):
        engine.slides(([1, 2], [0, 1], value, [0, 1]), ATTRIBUTES)


MASKED = "masked \\(a masked array's masked entries have no value\\)"


def test_masked_entries_are_refused_not_read_as_the_values_under_them():
    x = np.ma.masked_array([[1.0, 2.0], [3.0, 1e9]], mask=[[0, 0], [0, 1]])  # 1e9 was read as row 1's feature
    assert_features_refused(x, f"row 1, feature 1: {MASKED}")
    value = np.ma.masked_array([0.5, 0.9], mask=[1, 0])
    with pytest.raises(ValueError, match=f"^value must be numbers: row 0: {MASKED}$"):
        engine.slides(([1, 2], [0, 1], value, [0, 1]), ATTRIBUTES)
    with pytest.raises(ValueError, match=f"^t must be int64 integers: row 1: {MASKED}$"):
        engine.slides(([1, 2], np.ma.masked_array([0, 1], mask=[0, 1]), [[1.0, 2.0], [3.0, 4.0]]), TWO_FEATURES)


def test_a_masked_array_without_masked_entries_is_read_as_its_data():
    x = np.ma.masked_array([[1.0, 2.0], [3.0, 4.0]], mask=False)
    assert [b.x.tolist() for b in engine.slides(([1, 2], np.ma.masked_array([0, 1]), x), TWO_FEATURES)] == \
        [[[1.0, 2.0]], [[3.0, 4.0]]]


@pytest.mark.parametrize("x", [np.array([[1, 2], [3, 4]], dtype=np.int32), np.array([[1, 2], [3, 4]], dtype=np.uint8),
                               np.array([[1, 2], [3, 4]], dtype=object), [[1, np.float32(2)], [3, 4.0]]])
def test_numbers_of_any_numeric_type_are_still_taken(x):
    assert [b.x.tolist() for b in engine.slides(([1, 2], [0, 1], x), TWO_FEATURES)] == [[[1.0, 2.0]], [[3.0, 4.0]]]


@pytest.mark.parametrize("ids", [np.array([2**63], dtype=np.uint64), [2**64], np.array(["1", "2"]), [[1], [2]]])
def test_ids_beyond_int64_text_or_a_matrix_are_refused(ids):
    with pytest.raises(ValueError, match="^ids must be"):
        engine.slides((ids, [0, 1][:len(ids)], [1.0, 2.0][:len(ids)]), COUNT)


@pytest.mark.parametrize("argument, value", [("seq_start", True), ("seq_start", 2.5), ("first_index", 1.5),
                                             ("start", True), ("max_slides", 2.0)])
def test_slides_refuse_a_bool_or_a_float_argument(argument, value):
    """``first_index=1.5`` raised ``TypeError`` from ``enumerate``; ``seq_start=2.5`` was cut to 2."""
    with pytest.raises(ValueError, match=f"^{argument} must be an int64 integer, got {value!r}"):
        engine.slides(([1, 2], [0, 2], [1.0, 2.0]), TIME, **{argument: value})


def test_slides_check_the_stream_when_called_not_at_the_first_batch():
    with pytest.raises(ValueError, match="t decreases"):
        engine.slides(([1, 2], [5, 3], [1.0, 2.0]), TIME)


# ------------------------------------------------------------------ a gap in the times


def test_slides_refuse_a_gap_that_passes_more_slides_than_max_slides():
    """``t = [0, 10**15]`` with slide 1 yielded 10**15 empty slides, one at a time."""
    query = engine.Query(weights=[1.0], k=1, window=2, slide=1, kind="time")
    with pytest.raises(ValueError, match="^row 1: t jumps from 0 to 1000000000000000 here: a time window with slide 1 "
                                         "passes 1,000,000,000,000,000 slide boundaries .* the limit of 10,000,000 "
                                         r"\(max_slides\)"):
        engine.slides(([1, 2], [0, 10**15], [1.0, 2.0]), query)
    with pytest.raises(ValueError, match=r"the limit of 100 \(max_slides\)"):
        engine.slides(([1, 2], [0, 1000], [1.0, 2.0]), query, max_slides=100)
    assert len(list(engine.slides(([1, 2], [0, 1000], [1.0, 2.0]), query, max_slides=1000))) == 1000
    assert len(list(engine.slides(([1, 2], [0, 1000], [1.0, 2.0]), query, max_slides=None))) == 1000


def test_a_gap_from_the_given_start_counts_too():
    query = engine.Query(weights=[1.0], k=1, window=2, slide=1, kind="time")
    with pytest.raises(ValueError, match="^row 0: t jumps from the first slide's start -1000 to 0"):
        engine.slides(([1], [0], [1.0]), query, start=-1000, max_slides=10)


def test_empty_time_slides_within_the_limit_are_still_yielded():
    query = engine.Query(weights=[1.0], k=1, window=4, slide=2, kind="time")
    data = ([1, 2, 3], [0, 1, 9], [1.0, 2.0, 3.0])
    assert [(b.end, len(b)) for b in engine.slides(data, query)] == [(2, 2), (4, 0), (6, 0), (8, 0)]
    assert len(list(engine.slides(data, query, max_slides=4))) == 4
    with pytest.raises(ValueError, match=r"passes 4 slide boundaries .* more than the 3 rows and the limit of 3"):
        engine.slides(data, query, max_slides=3)
    assert len(list(engine.slides(([1, 2], [0, 5], [1.0, 2.0]), query, max_slides=1))) == 2  # no more than the rows


def test_the_shared_executor_refuses_a_gap_passing_too_many_boundaries_and_changes_nothing():
    """It answered every boundary of ``t = [0, 10**15]`` at once: 50 s, then ``MemoryError``."""
    query = engine.Query(weights=[1.0], k=1, window=2, slide=1, kind="time")
    executor = SharedTopK([query])
    with pytest.raises(ValueError, match="^row 1: t jumps from 0 to 1000000000000000: the 1 time queries would pass "
                                         "1,000,000,000,000,000 slide boundaries at once, more than max_slides"):
        executor.process([1, 2], [0, 10**15], [1.0, 2.0])
    executor.process([1], [5], [1.0])
    with pytest.raises(ValueError, match="^time_now: t jumps from 6 to 1000000000000000"):
        executor.process([2], [6], [1.0], time_now=10**15)
    with pytest.raises(ValueError, match="^row 0: t jumps from 5 to 1000"):
        executor.process([3, 2], [1000, 1001], [1.0, 1.0], max_slides=100)
    executor.check()
    assert [r.end for r in executor.process([3], [9], [1.0], max_slides=None)] == [6, 7, 8, 9]


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize("name, key", [("approx", "repeats"), ("approx", "bitmaps"), ("eaa", "occurrences"),
                                       ("sla", "k_max"), ("sao", "memory"), ("sao", "layers"),
                                       ("tma", "cells_per_dim"), ("sma", "cells_per_dim")])
def test_an_integer_parameter_refuses_a_bool(name, key):
    """``repeats=True`` was taken as 1."""
    info = {info.name: info for info in engine.available()}[name]
    query = engine.Query(weights=[1.0, 1.0], k=1, window=4, slide=2)
    with pytest.raises(ValueError, match=f"^parameter {key} of {name} must be int, got True"):
        engine.create(name, query, **{key: True})
    assert isinstance(info.defaults[key], int)


def test_a_text_parameter_refuses_what_is_not_text():
    with pytest.raises(ValueError, match="^parameter allocation of sao must be str, got None"):
        engine.create("sao", COUNT, allocation=None)


def test_a_bool_parameter_takes_numpy_bools():
    assert engine.create("mintopk", COUNT, prefilter=np.bool_(False)).params["prefilter"] is False


@pytest.mark.parametrize("bitmaps", [10**8, 10**18, 16_385])
def test_approx_refuses_more_bitmaps_than_its_limit(bitmaps):
    """``bitmaps=10**8`` raised ``MemoryError`` (24 GiB of stamps per stream); ``10**18`` numpy's
    "array is too big"."""
    from engine.algorithms.approx import MAX_BITMAPS

    with pytest.raises(ValueError, match=f"^bitmaps must be at most {MAX_BITMAPS:,}, got {bitmaps:,}"):
        engine.create("approx", ATTRIBUTES, bitmaps=bitmaps)
    assert engine.create("approx", ATTRIBUTES, bitmaps=MAX_BITMAPS).params["bitmaps"] == MAX_BITMAPS


# ------------------------------------------------------------------ the command line


def refused(capsys, *arguments: str) -> str:
    status = cli.main(list(arguments))
    message = capsys.readouterr().err
    assert status == 2 and message.startswith("error: ") and len(message.splitlines()) == 1, message
    return message


@pytest.mark.parametrize("name", ["mintopk", "pretopk"])
def test_run_refuses_a_huge_ratio_before_reading_its_input(tmp_path, capsys, name):
    """The input was read (and a missing one reported) before the query was refused."""
    message = refused(capsys, "run", "--algorithm", name, "--k", "1", "--window", str(10**15), "--slide", "1",
                      "--input", str(tmp_path / "missing.csv"), "--output", str(tmp_path / "out.jsonl"))
    assert f"cannot create {name}: {name} keeps a row per window" in message


def test_run_refuses_a_parameter_beyond_the_limit_before_reading_its_input(tmp_path, capsys):
    message = refused(capsys, "run", "--algorithm", "approx", "--k", "1", "--window", "4", "--slide", "2",
                      "--param", "bitmaps=100000000", "--input", str(tmp_path / "missing.csv"),
                      "--output", str(tmp_path / "out.jsonl"))
    assert "cannot create approx: bitmaps must be at most 16,384, got 100,000,000" in message


@pytest.mark.parametrize("algorithm", [[], ["--algorithm", "mintopk"]])
def test_run_many_refuses_a_huge_ratio_before_reading_its_input(tmp_path, capsys, algorithm):
    queries = tmp_path / "q.json"
    queries.write_text(f'[{{"weights": [1], "k": 1, "window": {10**15}, "slide": 1}}]')
    message = refused(capsys, "run-many", "--queries", str(queries), *algorithm,
                      "--input", str(tmp_path / "missing.csv"), "--output", str(tmp_path / "out.jsonl"))
    assert f"{queries}: query 0: " in message and "keeps a row per window" in message


def test_run_with_a_larger_max_slides_still_answers_every_empty_slide(tmp_path, capsys):
    source = tmp_path / "data.csv"
    source.write_text("id,t,x\n1,0,0.5\n2,30,0.25\n")
    output = tmp_path / "out.jsonl"
    status = cli.main(["run", "--algorithm", "oracle", "--k", "1", "--window", "2", "--slide", "1", "--kind", "time",
                       "--input", str(source), "--output", str(output), "--max-slides", "30"])
    assert status == 0, capsys.readouterr().err
    assert len(output.read_text().splitlines()) == 30


# ------------------------------------------------------------------ process and create


def test_create_refuses_an_unhashable_name():
    """``engine.create(["oracle"], q)`` raised ``TypeError: unhashable type: 'list'``."""
    with pytest.raises(ValueError, match=r"^unknown algorithm \['oracle'\]; valid: oracle, "):
        engine.create(["oracle"], COUNT)


SINGLE = [info.name for info in engine.available() if info.stream == "single"]
INCOMPLETE = [info.name for info in engine.available() if info.stream == "incomplete"]


@pytest.mark.parametrize("name", SINGLE + INCOMPLETE)
@pytest.mark.parametrize("batch", [None, [1, 2], {"end": 2}])
def test_process_refuses_what_is_not_a_batch(name, batch):
    """It raised ``AttributeError: 'NoneType' object has no attribute 'end'``."""
    algorithm = engine.create(name, ATTRIBUTES)
    with pytest.raises(ValueError, match=f"^{name}: process takes an engine.Batch \\(from engine.slides\\), got "):
        algorithm.process(batch)


@pytest.mark.parametrize("name", SINGLE)
def test_process_refuses_a_batch_of_other_features_or_lengths_and_changes_nothing(name):
    """A batch of one feature for a query of two raised ``IndexError`` in every single-stream
    algorithm; ids shorter than the features were taken by most (sao raised ``IndexError``)."""
    import dataclasses

    query = engine.Query(weights=[1.0, 1.0], k=2, window=4, slide=2)
    algorithm = engine.create(name, query)
    batch = next(iter(engine.slides(([1, 2], [0, 1], [[1.0, 2.0], [3.0, 4.0]]), query)))
    algorithm.process(batch)
    before = algorithm.to_state()["data"]
    with pytest.raises(ValueError, match=f"^{name}: the batch has 1 feature\\(s\\), the query 2 weight\\(s\\)"):
        algorithm.process(dataclasses.replace(batch, end=4, x=np.ones((2, 1))))
    with pytest.raises(ValueError, match="^the batch's seq has 2 values for 1 ids"):
        algorithm.process(dataclasses.replace(batch, end=4, ids=np.array([7])))
    with pytest.raises(ValueError, match="^the batch.s x must be an \\(m, d\\) numpy array, got list"):
        algorithm.process(dataclasses.replace(batch, end=4, x=[[1.0, 2.0], [3.0, 4.0]]))
    assert algorithm.to_state()["data"] == before


@pytest.mark.parametrize("columns, message", [
    ({"ids": [1, 2]}, "^the batch's ids must be a 1-D numpy array, got list$"),
    ({"t": np.arange(3)}, "^the batch's t has 3 values for 2 ids$"),
    ({"x": np.ones(2)}, "^the batch's x must be an \\(m, d\\) numpy array, got \\(2,\\)$"),
    ({"x": np.ones((3, 1))}, "^the batch's x has 3 values for 2 ids$"),
    ({"stream": np.arange(1)}, "^the batch's stream has 1 values for 2 ids$"),
    ({"value": np.ones((2, 1))}, "^the batch's value must be a 1-D numpy array, got \\(2, 1\\)$"),
    ({"end": 2.0}, "^the batch's end must be an integer, got 2.0$"),
    ({"end": True}, "^the batch's end must be an integer, got True$"),
])
def test_a_batch_is_refused_when_made_with_columns_of_other_shapes_or_lengths(columns, message):
    """A hand-made batch is checked when it is made, once for every algorithm it is given to."""
    fields = {"ids": np.arange(2), "seq": np.arange(2), "t": np.arange(2), "x": np.ones((2, 1)), "end": 2, "index": 0}
    with pytest.raises(ValueError, match=message):
        engine.Batch(**{**fields, **columns})
    engine.Batch(**fields, stream=np.arange(2), value=np.ones(2))


@pytest.mark.parametrize("weights", [[True], [1.0, False], ["1"], [b"1"], np.array([True, False])])
def test_a_query_refuses_bool_or_text_weights(weights):
    """``Query(weights=[True])`` was taken as ``[1.0]`` and ``["1"]`` as ``[1.0]``, where
    ``run-many`` refuses both in its queries file."""
    with pytest.raises(ValueError, match="^weights must be a sequence of numbers, got "):
        engine.Query(weights=weights, k=1, window=2, slide=1)


def test_the_shared_executor_refuses_a_handle_that_is_a_bool_or_unhashable():
    """``remove(True)`` removed the query of handle 1 (``True == 1``); ``remove([0])`` raised
    ``TypeError``."""
    executor = SharedTopK([COUNT, TIME])
    for handle in (True, [0], "0", 1.0):
        for call in (executor.remove, executor.since, executor.topk):
            with pytest.raises(ValueError, match=f"^no query with handle {re.escape(repr(handle))}$"):
                call(handle)
    assert sorted(executor.queries) == [0, 1]
    executor.remove(np.int64(1))
    assert sorted(executor.queries) == [0]


# ------------------------------------------------------------------ query fields


def test_a_query_from_a_mapping_refuses_unknown_fields_as_the_command_line_does():
    """``{"K": 5}`` (a typo of ``k``) or any other extra field was ignored; ``run-many`` refuses it."""
    fields = {**COUNT.to_dict(), "K": 5, "note": "x"}
    with pytest.raises(ValueError, match="^query has unknown field\\(s\\) K, note; valid: weights, k, window, slide, kind$"):
        engine.Query.from_dict(fields)
    assert engine.Query.from_dict(COUNT.to_dict()) == COUNT


@pytest.mark.parametrize("name", ["mintopk", "multi"])
def test_a_state_whose_query_has_an_unknown_field_is_refused(name):
    from engine.jsondata import pack
    if name == "multi":
        executor = SharedTopK([COUNT])
        state = executor.to_state()
        state = pack("multi", {"queries": [{**state["query"]["queries"][0], "note": "x"}]}, {}, state["data"])
        with pytest.raises(engine.StateError, match="query has unknown field\\(s\\) note"):
            SharedTopK.restore(state)
    else:
        state = engine.create(name, COUNT).to_state()
        state = pack(name, {**state["query"], "note": "x"}, state["params"], state["data"])
        with pytest.raises(engine.StateError, match="^state is invalid: query has unknown field\\(s\\) note; valid: "):
            engine.restore(state)


# ------------------------------------------------------------------ arguments of other types


@pytest.mark.parametrize("weights", [{1.0, 2.0, 3.0}, frozenset([1.0]), {1.0: "a"}])
def test_a_query_refuses_weights_in_a_set_or_a_mapping(weights):
    """A set's weights were taken in its arbitrary order, a dict's keys as weights."""
    with pytest.raises(ValueError, match="^weights must be a sequence of numbers, got "):
        engine.Query(weights=weights, k=1, window=2, slide=1)


def test_a_query_keeps_its_kind_as_text():
    """numpy's ``str_("time")`` was kept, and written by ``to_dict`` as ``np.str_('time')``."""
    assert type(engine.Query(weights=[1.0], k=1, window=2, slide=1, kind=np.str_("time")).to_dict()["kind"]) is str


def test_slides_refuse_a_mapping_of_columns_naming_it():
    """A dict's keys were unpacked as the columns: "ids must be a 1-D sequence ..., got 0 dimensions"."""
    with pytest.raises(ValueError, match="^data must be \\(ids, t, x\\) or \\(ids, stream, value, t\\), got a dict$"):
        engine.slides({"ids": [1, 2], "t": [0, 1], "x": [1.0, 2.0]}, COUNT)


@pytest.mark.parametrize("arguments, message", [
    ({"query": COUNT.to_dict()}, "^query must be an engine.Query, got dict$"),        # was AttributeError
    ({"params": ["prefilter"]}, "^params must be a mapping of parameter names to values, got list$"),  # TypeError
    ({"params": "prefilter"}, "^params must be a mapping of parameter names to values, got str$"),
])
def test_restore_refuses_arguments_of_other_types(arguments, message):
    state = engine.create("mintopk", COUNT).to_state()
    with pytest.raises(ValueError, match=message):
        engine.restore(state, **arguments)


def test_a_state_nested_too_deeply_is_refused_as_not_matching_its_checksum():
    """Its checksum raised RecursionError from the JSON encoder."""
    nested: list = []
    for _ in range(100_000):
        nested = [nested]
    state = engine.create("mintopk", COUNT).to_state()
    with pytest.raises(engine.StateError, match="^state does not match its checksum"):
        engine.restore({**state, "data": nested})
    state = SharedTopK([COUNT]).to_state()
    with pytest.raises(engine.StateError, match="^state is corrupt: its checksum does not match its data$"):
        SharedTopK.restore({**state, "data": nested})


# ------------------------------------------------------------------ answers


@pytest.mark.parametrize("name", [info.name for info in engine.available()])
def test_an_answer_cannot_be_changed_by_its_reader(name):
    """``topk()`` hands out the answer it keeps (MinTopK keeps it over the slides where it stands):
    ``answer.ids[:] = -1`` changed what ``topk()`` answered next."""
    algorithm = engine.create(name, ATTRIBUTES if engine.create(name, COUNT).stream == "incomplete" else COUNT)
    data = (([1, 2, 3, 4], [0, 1, 0, 1], [0.5, 0.25, 0.75, 1.0], [0, 1, 2, 3]) if algorithm.stream == "incomplete"
            else ([1, 2, 3, 4], [0, 1, 2, 3], [0.5, 0.25, 0.75, 1.0]))
    for batch in engine.slides(data, algorithm.q):
        algorithm.process(batch)
    answer = algorithm.topk()
    expected = answer.ids.tolist()
    for values in (answer.ids, answer.scores, answer.seq):
        with pytest.raises(ValueError, match="read-only"):
            values[:] = -1
    assert algorithm.topk().ids.tolist() == expected


# ------------------------------------------------------------------ metrics at the float range's ends


@pytest.mark.parametrize("exact, got, error", [
    ([1.7e308, 1.0], [-1.7e308, 1.0], 1.0),  # rank 1: (1.7e308 + 1.7e308) / 1.7e308 = 2; rank 2: 0
    ([-1e308], [-1.7e308], 0.7),
    ([1e308, 2.0], [-1e308], 1.5),  # rank 2 missing: a total miss, 1
])
def test_relative_error_of_scores_whose_gap_overflows(exact, got, error):
    """An approximate answer at the other end of the float range (SAO on features near
    +-1.7e308): ``F(t_i) - F(t̂_i)`` overflowed to ``inf``, which counted as a missing rank (1)
    and warned; it is the gap over ``|F(t_i)|``, as for any other score."""
    def answer(scores):
        return engine.Answer(np.arange(len(scores)), np.array(scores), np.arange(len(scores)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert engine.metrics.relative_error(answer(exact), answer(got)) == pytest.approx(error, rel=1e-12)
