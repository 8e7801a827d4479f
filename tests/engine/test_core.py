"""Query validation, slide semantics, the total order and the registry."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.multi import SharedTopK


@pytest.mark.parametrize("fields,message", [
    (dict(k=0), "k must be an integer >= 1, got 0"),
    (dict(k=2.5), "k must be an integer >= 1, got 2.5"),
    (dict(window=0), "window must be an integer >= 1, got 0"),
    (dict(slide=3), "window must be a multiple of slide \\(3\\), got 10"),
    (dict(slide=20), "slide must be <= window \\(10\\), got 20"),
    (dict(kind="hours"), "kind must be one of count, time, got 'hours'"),
    (dict(weights=[]), "weights must hold at least one weight"),
    (dict(weights=["a"]), "weights must be a sequence of numbers"),
    (dict(weights=[float("nan")]), "weights must be finite"),
    (dict(k=True), "k must be an integer"),
])
def test_invalid_query_names_field_and_value(fields, message):
    base = dict(weights=[1.0], k=3, window=10, slide=5, kind="count")
    with pytest.raises(ValueError, match=message):
        engine.Query(**{**base, **fields})


def test_query_round_trips_through_plain_data():
    q = engine.Query(weights=[1, -0.5], k=np.int64(3), window=10, slide=5, kind="time")
    assert engine.Query.from_dict(q.to_dict()) == q
    assert q.windows_per_object == 2 and q.dimensions == 2


def ends_and_ids(data, q, **kw):
    return [(b.end, b.ids.tolist()) for b in engine.slides(data, q, **kw)]


def test_count_slides_drop_the_trailing_incomplete_slide():
    q = engine.Query(weights=[1.0], k=1, window=6, slide=3)
    data = (np.arange(8), np.zeros(8), np.ones(8))
    assert ends_and_ids(data, q) == [(3, [0, 1, 2]), (6, [3, 4, 5])]


def test_count_slides_continue_from_seq_start():
    q = engine.Query(weights=[1.0], k=1, window=6, slide=3)
    batches = list(engine.slides((np.arange(6), np.zeros(6), np.ones(6)), q, seq_start=6, first_index=2))
    assert [(b.index, b.end, b.seq.tolist()) for b in batches] == [(2, 9, [6, 7, 8]), (3, 12, [9, 10, 11])]
    with pytest.raises(ValueError, match="seq_start must be a multiple"):
        list(engine.slides((np.arange(3), np.zeros(3), np.ones(3)), q, seq_start=4))


def test_time_slides_are_aligned_to_multiples_of_s_and_may_be_empty():
    q = engine.Query(weights=[1.0], k=1, window=10, slide=5, kind="time")
    t = np.array([7, 8, 9, 23, 24, 25])
    assert ends_and_ids((np.arange(6), t, np.ones(6)), q) == [
        (10, [0, 1, 2]), (15, []), (20, []), (25, [3, 4])]


def test_time_slides_reject_decreasing_time_with_the_row():
    q = engine.Query(weights=[1.0], k=1, window=10, slide=5, kind="time")
    with pytest.raises(ValueError, match="row 2: t decreases \\(9 then 4\\)"):
        list(engine.slides((np.arange(3), np.array([1, 9, 4]), np.ones(3)), q))


@pytest.mark.parametrize("seed", range(40))
def test_slide_count_is_the_number_of_slides_cut(seed):
    rng = np.random.default_rng(seed)
    m, s = int(rng.integers(0, 40)), int(rng.integers(1, 9))
    t = np.sort(rng.integers(-60, 60, m))
    for kind in ("count", "time"):
        q = engine.Query(weights=[1.0], k=1, window=s * int(rng.integers(1, 4)), slide=s, kind=kind)
        assert engine.stream.slide_count(t, q) == len(list(engine.slides((np.arange(m), t, np.ones((m, 1))), q)))


def test_too_many_slides_names_the_first_time_query_past_rows_and_limit_and_the_widest_gap():
    t = np.array([0, 3, 4, 90, 95, 100])
    count = engine.Query(weights=[1.0], k=1, window=2, slide=1)
    small = engine.Query(weights=[1.0], k=1, window=2, slide=1, kind="time")   # 100 slides
    large = engine.Query(weights=[1.0], k=1, window=50, slide=25, kind="time")  # 4 slides
    assert engine.stream.too_many_slides(t, [count, large, small], 100) is None
    assert engine.stream.too_many_slides(t, [count, large, small], 99)[:2] == (2, 3)
    assert engine.stream.too_many_slides(t, [large], 1) is None  # within the rows
    problem = engine.stream.too_many_slides(t, [small], 10)[2]
    assert problem.startswith("t jumps from 4 to 90 here: a time window with slide 1 passes 100 slide boundaries "
                              "from t = 0 to t = 100, more than the 6 rows and the limit of 10")


@pytest.mark.parametrize("t, row", [([-2**63 + 14, -2**63 + 30], 0), ([2**63 - 30, 2**63 - 15], 1), ([-2**63, 2**63 - 1], 0)])
def test_time_slides_reject_times_whose_windows_leave_the_int64_range(t, row):
    """A window's start (end - window) and the next slide's end must be int64 for every row."""
    q = engine.Query(weights=[1.0], k=1, window=10, slide=5, kind="time")
    with pytest.raises(ValueError, match=f"row {row}: t = {t[row]} is outside \\[{-2**63 + 15}, {2**63 - 16}\\]"):
        list(engine.slides((np.arange(2), np.array(t, np.int64), np.ones(2)), q))


@pytest.mark.parametrize("first_t", [-2**63 + 15, 2**63 - 30])
def test_time_slides_accept_times_just_inside_the_int64_margin(first_t):
    """Rows ``first_t``, ``+ 7``, ``+ 14`` (the last at ``2**63 - 16``, the margin): every exact
    algorithm answers each complete slide as plain integer arithmetic over the rows does."""
    q = engine.Query(weights=[1.0], k=2, window=10, slide=5, kind="time")
    t = [first_t, first_t + 7, first_t + 14]
    data = (np.arange(3), np.array(t, np.int64), np.array([[3.0], [2.0], [1.0]]))
    expected = []
    for end in range(first_t // 5 * 5 + 5, t[-1] // 5 * 5 + 1, 5):
        inside = [row for row in range(3) if end - 10 <= t[row] < end]
        expected.append((end, inside[:2]))  # scores fall with the row
    assert len(expected) >= 2
    for name in ("oracle", "mintopk", "kskyband", "sma", "tma", "sap", "pretopk"):
        algorithm, answers = engine.create(name, q), []
        for batch in engine.slides(data, q):
            algorithm.process(batch)
            answers.append((batch.end, algorithm.topk().ids.tolist()))
        assert answers == expected, name


def test_slides_reject_non_finite_features_and_wrong_width():
    q = engine.Query(weights=[1.0, 1.0], k=1, window=2, slide=1)
    with pytest.raises(ValueError, match="row 1: feature values must be finite"):
        list(engine.slides((np.arange(2), np.arange(2), [[1.0, 2.0], [np.inf, 0.0]]), q))
    with pytest.raises(ValueError, match="row 1: the score x · w overflows"):
        list(engine.slides((np.arange(2), np.arange(2), [[1.0, 2.0], [1e308, -1e308]]), q.with_weights([1.0, -1.0])))
    with pytest.raises(ValueError, match="2 weight\\(s\\) but the stream has 1 feature"):
        list(engine.slides((np.arange(2), np.arange(2), [1.0, 2.0]), q))


def test_window_answer_covers_exactly_the_window():
    q = engine.Query(weights=[1.0], k=100, window=4, slide=2, kind="time")
    t = np.array([0, 1, 2, 3, 4, 5, 6])
    oracle = engine.create("oracle", q)
    covered = []
    for batch in engine.slides((np.arange(7), t, np.ones(7)), q):
        oracle.process(batch)
        covered.append(sorted(oracle.topk().ids.tolist()))
    assert covered == [[0, 1], [0, 1, 2, 3], [2, 3, 4, 5]]


def test_total_order_prefers_the_newer_object_on_equal_scores():
    scores = np.array([2.0, 5.0, 5.0, 1.0, 5.0])
    assert engine.top_indices(scores, np.arange(5), 2).tolist() == [4, 2]
    assert engine.top_indices(scores, np.arange(5), 9).tolist() == [4, 2, 1, 0, 3]


def test_score_is_independent_of_the_batch_it_is_computed_in():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1000, 3))
    w = [0.1, -0.7, 3.3]
    whole = engine.score(x, w)
    assert np.array_equal(whole[10:20], engine.score(x[10:20], w))


def test_registry_lists_every_name_and_rejects_unknown_ones():
    names = [info.name for info in engine.available()]
    assert {"oracle", "mintopk", "pretopk"} <= set(names)
    q = engine.Query(weights=[1.0], k=1, window=2, slide=1)
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; valid: .*mintopk"):
        engine.create("nope", q)
    with pytest.raises(ValueError, match="unknown parameter\\(s\\) for mintopk: speed; valid: prefilter"):
        engine.create("mintopk", q, speed=3)
    with pytest.raises(ValueError, match="parameter prefilter of mintopk must be bool"):
        engine.create("mintopk", q, prefilter="maybe")
    assert engine.create("mintopk", q, prefilter="false").params == {"prefilter": False}


def test_oracle_answers_other_weights_without_reprocessing():
    q = engine.Query(weights=[1.0, 0.0], k=2, window=4, slide=2)
    x = np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 7.0], [4.0, 6.0], [5.0, 5.0], [6.0, 4.0]])
    oracle = engine.create("oracle", q)
    for batch in engine.slides((np.arange(6), np.arange(6), x), q):
        oracle.process(batch)
    assert oracle.topk().ids.tolist() == [5, 4]
    assert oracle.query([0.0, 1.0], 3).ids.tolist() == [2, 3, 4]
    with pytest.raises(ValueError, match="k must be"):
        oracle.query([0.0, 1.0], 0)


@pytest.mark.parametrize("name", [info.name for info in engine.available()])
def test_every_algorithm_refuses_a_slide_out_of_order_and_changes_nothing(name):
    """A slide already processed, or an older one, raises ``ValueError``; the algorithm then
    continues exactly as one that never saw it."""
    incomplete = {info.name: info.stream for info in engine.available()}[name] == "incomplete"
    q = engine.Query(weights=[1.0, 0.5], k=2, window=4, slide=2)
    rng = np.random.default_rng(5)
    if incomplete:
        data = (np.arange(10) % 4, np.arange(10) % 2, np.round(rng.random(10), 1), np.arange(10))
    else:
        data = (np.arange(10), np.arange(10), np.round(rng.random((10, 2)), 1))
    batches = list(engine.slides(data, q))
    tried, clean = engine.create(name, q), engine.create(name, q)
    for batch in batches[:3]:
        tried.process(batch)
        clean.process(batch)
    for stale in (batches[2], batches[0]):
        with pytest.raises(ValueError, match="is not the next slide"):
            tried.process(stale)
    for batch in batches[3:]:
        tried.process(batch)
        clean.process(batch)
        assert tried.topk().ids.tolist() == clean.topk().ids.tolist()
        assert tried.to_state() == clean.to_state()


@pytest.mark.parametrize("name", [info.name for info in engine.available()])
def test_every_algorithm_refuses_a_slide_that_does_not_end_at_a_multiple_of_the_slide(name):
    """MinTopK, PreTopK and SAP number slides ``end // slide`` and took such a slide as the one
    before it, the others as it came: all refuse it, as ``engine.slides`` never cuts one."""
    incomplete = {info.name: info.stream for info in engine.available()}[name] == "incomplete"
    q = engine.Query(weights=[1.0, 0.5], k=2, window=4, slide=2, kind="time")
    columns = {"stream": np.array([0]), "value": np.array([0.5])} if incomplete else {}
    batch = engine.Batch(ids=np.array([7]), seq=np.array([0]), t=np.array([4]),
                         x=np.empty((1, 0)) if incomplete else np.array([[1.0, 2.0]]), end=5, index=0, **columns)
    algorithm = engine.create(name, q)
    with pytest.raises(ValueError, match=rf"^{name}: the slide ending at 5 does not end at a multiple of the slide "
                                         r"\(2\)"):
        algorithm.process(batch)
    assert algorithm.last_end() is None and algorithm.to_state() == engine.create(name, q).to_state()


def test_an_empty_piece_given_as_plain_lists_fits_a_query_of_several_features():
    """``[]`` for the features of no rows is read as no rows of the query's ``d`` features, not of
    one feature (which a two-feature workload refused)."""
    ids, t, x = engine.stream.as_object_stream([], [], [], dimensions=2)
    assert x.shape == (0, 2) and len(ids) == len(t) == 0
    shared = SharedTopK()
    shared.add(engine.Query(weights=[1.0, 2.0], k=2, window=4, slide=2))
    assert shared.process([], [], []) == []
    assert [result.answer.ids.tolist() for result in shared.process([1, 2], [0, 1], [[1.0, 0.0], [0.0, 1.0]])] \
        == [[2, 1]]
    with pytest.raises(ValueError, match="2 weight"):
        engine.stream.as_object_stream([1], [0], [0.5], dimensions=2)



@pytest.mark.parametrize("name", ["oracle", "sao"])
@pytest.mark.parametrize("weights", [[10.0, -10.0], [10.0, 10.0]])
def test_answers_for_other_weights_refuse_scores_that_overflow(name, weights):
    """The stream was checked with the query's weights only: under ``[10, -10]`` the oracle scored
    the row ``(1e308, 1e308)`` ``nan`` and answered 2 of the window's 3 objects, under ``[10, 10]``
    ``inf`` (``sao`` already refused, with the same message now)."""
    q = engine.Query(weights=[1.0, 0.0], k=3, window=4, slide=2)
    algorithm = engine.create(name, q)
    x = np.array([[1e308, 1e308], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    for batch in engine.slides((np.arange(4), np.arange(4), x), q):
        algorithm.process(batch)
    with pytest.raises(ValueError, match=r"^the score x · w of an object in the window overflows under weights "
                                         rf"\[{weights[0]}, {weights[1]}\]; scale the weights down$"):
        algorithm.query(weights, 3)
    assert algorithm.query([1.0, -1.0], 3).ids.tolist() == [3, 2, 1]

@pytest.mark.parametrize("weights,k,message", [([1.0], 2, r"one weight per feature \(2\), got 1"),
                                               ([1.0, 1.0, 1.0], 2, r"one weight per feature \(2\), got 3"),
                                               ([1.0, 1.0], 0, "k must be an integer >= 1, got 0"),
                                               ([1.0, 1.0], 2.5, "k must be an integer >= 1, got 2.5")])
def test_the_oracle_answers_other_weights_only_of_its_features(weights, k, message):
    """One weight for two features ranked by the first feature alone; three raised IndexError."""
    q = engine.Query(weights=[1.0, 1.0], k=2, window=4, slide=2)
    oracle = engine.create("oracle", q)
    for batch in engine.slides((np.arange(4), np.arange(4), np.arange(8.0).reshape(4, 2)), q):
        oracle.process(batch)
    with pytest.raises(ValueError, match=message):
        oracle.query(weights, k)
    assert oracle.query([0.0, -1.0], 1).ids.tolist() == [0]
