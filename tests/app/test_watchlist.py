"""The Watch list page under AppTest: every row's answer is checked against the oracle run here.

The oracle is ``engine.create("oracle", q)`` fed ``engine.slides`` over the rows the page has
delivered (from the row the query was added at): an answer computed without the shared executor.
"""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import engine
from app import data, live_state, presets, units
from app.watchlist_state import MAX_QUERIES, Watch, from_url, parse_query

from .conftest import ENTRY, demo_trace

SYNTHETIC = data.synthetic_uniform()
PAGE = "views/watchlist.py"
MS = presets.profile("x", "synthetic", ("a",), "ms")
ORDINAL = presets.profile("x", "synthetic", ("a",), "ordinal")


@pytest.fixture(autouse=True)
def no_database(missing_db):
    """No ``make run`` database unless a test asks for one: the page opens on the built-in stream."""
    return missing_db


def oracle_answer(query: engine.Query, rows: int, since: int = 0, trace: data.Trace = SYNTHETIC):
    """The oracle's answer at the last boundary the first ``rows`` rows passed, over the rows from ``since``
    (a multiple of the slide for count windows); ``None`` before the first boundary."""
    oracle, answer = engine.create("oracle", query), None
    for batch in engine.slides(tuple(column[since:rows] for column in trace.arrays), query, seq_start=since):
        oracle.process(batch)
        answer = oracle.topk()
    return answer


def open_page(**params: str) -> AppTest:
    app = AppTest.from_file(ENTRY, default_timeout=60)
    app.query_params.update(params)
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


def rows_delivered(app) -> int:
    """The rows the progress bar says were delivered; while paused the link's ``at`` says the same."""
    shown = next(bar.proto.text for bar in app.get("progress") if " rows delivered" in bar.proto.text)
    rows = int(shown.split(" of ")[0].replace(",", ""))
    if not app.session_state["wl_playing"]:
        assert app.query_params["at"] == str(rows)
    return rows


def table(app):
    assert not app.exception, app.exception
    assert len(app.dataframe) == 1, f"{len(app.dataframe)} tables"
    return app.dataframe[0].value


def url_queries(app) -> list[engine.Query]:
    """The watched queries as the URL writes them (``kind:k:window:slide:w1,w2,...``, ``;`` between)."""
    out = []
    for part in app.query_params["q"].split(";"):
        kind, k, window, slide, weights = part.split(":")
        out.append(engine.Query([float(w) for w in weights.split(",")], k=int(k), window=int(window),
                                slide=int(slide), kind=kind))
    return out


def assert_rows_equal_the_oracle(app, since: dict[int, int] | None = None, trace: data.Trace = SYNTHETIC) -> int:
    """Every row of the table shows its query's oracle answer; returns the number of rows checked."""
    frame, rows = table(app), rows_delivered(app)
    queries = url_queries(app)
    assert len(queries) == len(frame)
    for query, (_, row) in zip(queries, frame.iterrows()):
        assert f"k = {query.k} ·" in row["query"] and row["query"].endswith(query.kind)
        assert row["from row"] == (since or {}).get(row["#"], 0)
        expected = oracle_answer(query, rows, row["from row"], trace)
        assert expected is not None, f"query {row['#']} has no boundary yet at row {rows}"
        assert [int(i) for i in row["top ids"].split()] == expected.ids.tolist(), f"query {row['#']}"
        np.testing.assert_allclose([float(s.replace(",", "")) for s in row["scores"].split()], expected.scores,
                                   rtol=1e-5)  # as Live shows them: 6 significant digits
        assert row["= MinTopK"] == "✓"
    return len(frame)


def add_query(app, kind: str, k: int, window: str, slide: str, weights) -> None:
    if app.radio(key="wl_kind").value != kind:
        app.radio(key="wl_kind").set_value(kind).run()
    app.number_input(key="wl_k").set_value(k)
    app.text_input(key="wl_window").set_value(window)
    app.text_input(key="wl_slide").set_value(slide)
    for slider, weight in zip([s for s in app.slider if s.key.startswith("wl_w_")], weights):  # feature order
        slider.set_value(weight)
    app.button(key="wl_add").click().run()
    assert not app.error, app.error[0].value


def test_added_queries_answer_like_the_oracle_and_survive_a_removal():
    app = open_page()
    assert list(table(app)["#"]) == [0, 1, 2]  # the dataset's presets, one sharing the first's list
    add_query(app, "count", 3, "200", "40", [1.0, -0.5, 0.0])
    add_query(app, "time", 4, "120", "30", [0.0, 0.0, 1.0])
    assert list(table(app)["#"]) == [0, 1, 2, 3, 4]
    for _ in range(6):
        app.button(key="wl_step").click().run()
    assert rows_delivered(app) > 0
    assert assert_rows_equal_the_oracle(app) == 5
    slides_before = table(app).set_index("#")["slide"]

    app.selectbox(key="wl_remove_pick").set_value(3)
    app.button(key="wl_remove").click().run()
    assert list(table(app)["#"]) == [0, 1, 2, 4]
    for _ in range(4):
        app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app) == 4
    slides_after = table(app).set_index("#")["slide"]
    assert slides_after[4] > slides_before[4]  # the time query went on counting its slides, not restarted


def test_a_query_added_mid_stream_holds_the_rows_from_its_addition():
    app = open_page()
    for _ in range(3):
        app.button(key="wl_step").click().run()
    at = rows_delivered(app)
    assert at == 150  # three boundaries of the seeded queries' slide of 50
    add_query(app, "count", 2, "100", "50", [0.0, 1.0, 0.0])  # a new family: a warm-up from row 150
    add_query(app, "count", 5, "1,000", "50", [1.0, 1.0, 1.0])  # joins the first preset's family: whole windows
    assert table(app)["slide"].isna().tolist()[-2:] == [True, True]  # nothing until their next boundary
    for _ in range(2):
        app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app, since={3: at}) == 5
    assert any("from row" in caption.value for caption in app.caption)


def test_the_url_restores_the_workload_and_the_position():
    app = open_page(ds=data.SYNTHETIC, q="count:4:300:60:1,0,-1;time:2:100:20:0,1,0", at="500")
    assert [q.k for q in url_queries(app)] == [4, 2]
    assert table(app)["query"].tolist() == ["x_0 − x_2 · k = 4 · 300 / 60 count", "largest x_1 · k = 2 · 100 / 20 time"]
    assert rows_delivered(app) == 500
    assert assert_rows_equal_the_oracle(app) == 2
    app.button(key="wl_restart").click().run()
    assert rows_delivered(app) == 0 and table(app)["slide"].isna().all()
    for handle in (0, 1):
        app.selectbox(key="wl_remove_pick").set_value(handle)
        app.button(key="wl_remove").click().run()
    assert "watch list is empty" in app.info[-1].value and not app.dataframe
    assert app.button(key="wl_step").disabled and app.button(key="wl_play").disabled


def test_restart_keeps_the_numbers_the_queries_are_shown_with():
    """Restart numbered the queries again from #0: after #1 was removed, #2 came back as #1 (and a
    query being edited as #2 was left without its form)."""
    app = open_page(q="count:4:300:60:1,0,-1;count:2:100:20:0,0,1;time:3:200:50:1,1,1", at="300")
    app.selectbox(key="wl_remove_pick").set_value(1)
    app.button(key="wl_remove").click().run()
    app.selectbox(key="wl_remove_pick").set_value(2)
    app.button(key="wl_edit").click().run()
    app.button(key="wl_restart").click().run()
    assert rows_delivered(app) == 0 and table(app)["#"].tolist() == [0, 2]
    assert [option.split(" · ")[0] for option in app.selectbox(key="wl_remove_pick").options] == ["#0", "#2"]
    assert app.sidebar.subheader[0].value == "Edit query #2"
    app.button(key="wl_cancel_edit").click().run()
    add_query(app, "count", 5, "100", "50", [1.0, 0.0, 0.0])
    assert table(app)["#"].tolist() == [0, 2, 3]
    while table(app)["slide"].isna().any():
        app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app) == 3


def test_editing_a_query_from_a_link_keeps_its_weights_off_the_sliders_steps_unless_a_slider_moves():
    """A link's weight beyond the sliders' [-1, 1] (2.5) raised StreamlitValueAboveMaxError when the
    query was edited; one off their 0.05 steps (0.33, 0.1234567) is kept exactly, not rounded."""
    app = open_page(q="count:4:300:60:2.5,0.1234567,-1;count:2:100:20:0.33,0.33,0.33")
    for number, k, moved in ((0, 6, None), (1, 3, 0.5)):
        app.selectbox(key="wl_remove_pick").set_value(number)
        app.button(key="wl_edit").click().run()
        assert not app.exception, app.exception
        assert [s.value for s in app.slider if s.key.startswith("wl_w_")] == \
            ([1.0, 0.1, -1.0] if number == 0 else [0.35] * 3)
        app.number_input(key="wl_k").set_value(k)
        if moved is not None:
            app.slider(key="wl_w_x_1").set_value(moved).run()
        assert any(c.value == ("Kept as the query has it unless you move its slider: x_0 = 2.5, x_1 = 0.1234567."
                               if number == 0 else
                               "Kept as the query has it unless you move its slider: x_0 = 0.33, x_2 = 0.33.")
                   for c in app.sidebar.caption)
        app.button(key="wl_save").click().run()
        assert not app.exception and not app.error
    assert [(q.k, q.weights) for q in url_queries(app)] == [(6, (2.5, 0.1234567, -1.0)), (3, (0.33, 0.5, 0.33))]
    for _ in range(6):
        app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app) == 2


def test_an_ingested_dataset_with_a_clock(filled_db, trace):
    app = open_page(ds="demo")
    assert app.selectbox(key="wl_dataset").value == "demo"
    add_query(app, "time", 3, "200 ms", "100 ms", [1.0, 0.0])
    for _ in range(4):
        app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app, trace=trace) == len(url_queries(app)) >= 2
    frame, when = table(app), r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"  # a date-time
    timed = frame["query"].str.endswith("time")
    assert timed.any() and (~timed).any()
    assert frame.loc[timed, "end"].str.fullmatch(rf"{when} \w+").all()
    for query, end in zip(url_queries(app), frame["end"]):  # a count boundary is a row, not a time
        if query.kind == "count":
            row = rows_delivered(app) // query.slide * query.slide
            assert end == f"row {row:,} ({units.format_time(int(trace.t[row - 1]), 'ms', None)})"


def test_the_watch_list_survives_a_visit_to_another_page():
    app = open_page()
    add_query(app, "count", 2, "100", "20", [0.0, 0.0, 1.0])
    for _ in range(3):  # boundaries at rows 20, 40 (this query's) and 50 (the presets')
        app.button(key="wl_step").click().run()
    app.switch_page("views/runs.py").run()
    app.switch_page(PAGE).run()
    assert list(table(app)["#"]) == [0, 1, 2, 3] and rows_delivered(app) == 50
    assert app.text_input(key="wl_window").value == "1,000"  # the form has the dataset's defaults again
    assert_rows_equal_the_oracle(app)


def test_a_bad_query_is_refused_with_a_message():
    app = open_page()
    app.text_input(key="wl_window").set_value("ten").run()
    app.button(key="wl_add").click().run()
    assert "Not added: window" in app.error[0].value
    app.text_input(key="wl_window").set_value("1000")
    app.text_input(key="wl_slide").set_value("300").run()
    app.button(key="wl_add").click().run()
    assert "must be a whole number of slides (300): try 250 or 500" in app.error[0].value
    assert len(table(app)) == 3
    app.selectbox(key="wl_dataset").set_value(data.SYNTHETIC_ATTRIBUTES).run()
    assert not app.exception and "attribute stream" in app.info[-1].value


def test_a_time_slide_that_does_not_divide_its_window_is_refused_in_the_lengths_typed():
    with pytest.raises(ValueError, match=r"^the window \(30 min\) must be a whole number of slides \(7 min\): "
                                         r"try 6 min or 10 min$"):
        parse_query("time", 5, "30 min", "7 min", [1.0], MS)
    with pytest.raises(ValueError, match=r"^slide \(2 h\) must not be longer than the window \(1 h\): try 1 h$"):
        parse_query("time", 5, "1 h", "2 h", [1.0], MS)
    with pytest.raises(ValueError, match=r"^the window \(1,000\) must be a whole number of slides \(300\): "
                                         r"try 250 or 500$"):
        parse_query("count", 5, "1k", "300", [1.0], ORDINAL)


def test_removing_the_last_query_says_the_list_is_empty_not_that_the_others_go_on():
    app = open_page(q="count:4:300:60:1,0,-1")
    app.button(key="wl_step").click().run()
    app.button(key="wl_remove").click().run()
    assert "Query #0 removed at row 60; the watch list is empty." in [c.value for c in app.caption]


def test_a_link_with_a_length_or_weight_that_is_not_a_number_names_it():
    notes: list[str] = []
    assert from_url("time:3:1 h:600000:1,1;count:5:200:50:x,1;count:k:200:50:1,1", 2, notes) == []
    assert notes == ['query 1 (time:3:1 h:600000:1,1) left out: window "1 h" is not a whole number',
                     'query 2 (count:5:200:50:x,1) left out: weight "x" is not a number',
                     'query 3 (count:k:200:50:1,1) left out: k "k" is not a whole number']


def test_a_link_with_a_k_the_form_refuses_leaves_the_query_out():
    """``k = 10**18`` was watched from a link, where the form (and Live's link) take at most 1,000."""
    notes: list[str] = []
    assert [q.k for q in from_url("count:1000000000000000000:1000:50:1,1;count:1000:1000:50:1,1", 2, notes)] == [1000]
    assert notes == ["query 1 (count:1000000000000000000:1000:50:1,1) left out: k must be a whole number from 1 to "
                     "1,000 (the most objects the page lists in an answer), got 1,000,000,000,000,000,000"]


def test_a_refused_query_does_not_leave_the_last_added_ones_note_beside_its_error():
    app = open_page()
    add_query(app, "count", 5, "100", "50", [1.0, 0.0, 0.0])
    assert any(c.value.startswith("Query #3 added") for c in app.caption)
    app.text_input(key="wl_window").set_value("ten").run()
    app.button(key="wl_add").click().run()
    assert "Not added: window" in app.error[0].value
    assert not any("added" in c.value for c in app.caption)
    assert len(table(app)) == 4


@pytest.mark.parametrize("seed", [1, 2])
def test_watch_state_matches_brute_force_through_adds_and_removes(seed):
    """Without the page: random adds and removes mid-stream; every latest answer equals a brute-force top-k
    of the rows from the query's ``since`` inside its window, and one MinTopK per query agrees."""
    trace = data.synthetic_uniform(rows=2500, dimensions=2, seed=seed)
    rng = np.random.default_rng(seed)
    watch = Watch(trace, [engine.Query([1.0, 1.0], k=3, window=200, slide=50)])
    for round_ in range(40):
        if rng.random() < 0.15:
            slide = int(rng.choice([10, 25, 50]))
            watch.add(engine.Query([1.0, float(rng.choice([1.0, -1.0]))], k=int(rng.integers(1, 6)),
                                   window=slide * int(rng.integers(1, 5)), slide=slide,
                                   kind=str(rng.choice(["count", "time"]))))
        if rng.random() < 0.08 and len(watch.watched) > 1:
            watch.remove(int(rng.choice(list(watch.watched))))
        watch.step()
        for handle, watched in watch.watched.items():
            result = watch.shared.topk(watched.handle)
            if result is None:
                continue
            q = watched.query
            seq = np.arange(watched.since, watch.rows)
            key = seq if q.kind == "count" else trace.t[seq]
            inside = seq[(key >= result.end - q.window) & (key < result.end)]
            scores = engine.score(trace.x[inside], q.weights)
            order = np.lexsort((-inside, -scores))[:q.k]
            assert result.answer.ids.tolist() == trace.ids[inside[order]].tolist(), (round_, handle)
        assert set(watch.table()["= MinTopK"]) <= {"✓", "–"}


def test_play_delivers_rows_and_pause_stops():
    app = open_page()
    app.button(key="wl_play").click().run()  # one playback tick runs with the page
    played = rows_delivered(app)
    assert played > 0 and app.button(key="wl_play").label == "Pause"
    assert assert_rows_equal_the_oracle(app) == 3
    assert app.query_params["at"] == "0"  # a tick leaves the address alone: the browser keeps each in its history
    app.button(key="wl_play").click().run()
    assert app.button(key="wl_play").label == "Play"
    assert app.query_params["at"] == str(rows_delivered(app))  # Pause writes the link
    app.run()
    assert rows_delivered(app) >= played


def test_a_tick_delivers_the_rows_due_since_the_last_one():
    """The browser asks for a tick once it has drawn the last one, which with many queries takes seconds; a
    tick delivering one second's worth of rows (with 0.6 s of engine time) played 30 queries at 2,214 of the
    5,000 rows/s asked. A tick now delivers the speed times the seconds since the last tick, as Live's does."""
    app = open_page()
    app.select_slider(key="wl_speed").set_value(100)
    app.button(key="wl_play").click().run()
    assert rows_delivered(app) == 100  # the first tick after Play: one second's worth
    app.session_state["wl_tick_start"] = app.session_state["wl_tick_start"] - 3600  # a tab hidden for an hour
    app.run()
    assert rows_delivered(app) == 100 + 100 * int(live_state.CATCH_UP)
    assert_rows_equal_the_oracle(app)
    pace = next(c.value for c in app.caption if c.value.startswith("Playing at "))
    assert "rows/s of the 100 asked" in pace and "limit" not in pace


def test_a_link_leaves_out_bad_queries_and_says_which():
    app = open_page(q="count:0:200:50:1,1,1;count:5:99999999999:1:1,1,1;count:4:300:60:1,0,-1;count:2:100:50:1,1")
    assert [(q.k, q.window, q.slide) for q in url_queries(app)] == [(4, 300, 60)]
    note = app.warning[0].value
    assert "query 1 (count:0:200:50:1,1,1) left out: k must be an integer >= 1, got 0" in note
    assert "query 2 (count:5:99999999999:1:1,1,1) left out: the window spans 99,999,999,999 slides" in note
    assert "query 4 (count:2:100:50:1,1) left out: 2 weight(s), not 3" in note
    app.button(key="wl_step").click().run()
    app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app) == 1


def test_a_link_to_a_dataset_not_in_the_database_says_so():
    app = open_page(ds="worldcup", q="count:4:300:60:1,0,-1")
    assert "its dataset `worldcup` is not in" in app.warning[0].value
    assert app.query_params["ds"] == data.SYNTHETIC and [q.k for q in url_queries(app)] == [4]


def test_a_link_past_the_end_of_the_trace_shows_its_end():
    app = open_page(q="count:4:300:60:1,0,-1", at="999999999")
    assert rows_delivered(app) == len(SYNTHETIC)
    assert "row 999,999,999 is past the trace's 20,000 rows: its end is shown" in app.warning[0].value
    assert assert_rows_equal_the_oracle(app) == 1
    for at in ("-5", "²"):  # "²".isdigit() is true, int("²") fails
        app = open_page(q="count:4:300:60:1,0,-1", at=at)
        assert rows_delivered(app) == 0 and f"at = {at} is not a number of rows" in app.warning[0].value


def test_a_link_to_an_empty_watch_list_opens_empty():
    app = open_page(ds=data.SYNTHETIC, q="", at="0")
    assert "watch list is empty" in app.info[-1].value and not app.dataframe
    assert app.query_params["q"] == ""


def test_a_query_whose_k_exceeds_its_window_is_added_with_a_word():
    app = open_page()
    add_query(app, "count", 500, "100", "50", [1.0, 0.0, 0.0])
    assert any("k = 500 is larger than its window of 100 objects" in c.value for c in app.caption)
    for _ in range(2):
        app.button(key="wl_step").click().run()
    row = table(app).iloc[-1]
    answer = oracle_answer(engine.Query([1.0, 0.0, 0.0], k=500, window=100, slide=50), rows_delivered(app))
    assert len(answer) == 100  # the whole window
    assert row["top ids"] == " ".join(str(i) for i in answer.ids[:10]) + " … (+90)" and row["= MinTopK"] == "✓"


def test_a_time_slide_passing_millions_of_empty_boundaries_is_not_added(demo_db):
    """SPY's stand-in spans 40 minutes: a 1 ms slide passes 2.4 million boundaries, nearly all empty, each of
    which the shared executor would answer (a chunk of rows across them cannot be paused)."""
    trace = demo_trace()
    app = open_page(ds="spy")
    app.radio(key="wl_kind").set_value("time").run()
    app.text_input(key="wl_window").set_value("100 ms")
    app.text_input(key="wl_slide").set_value("1 ms").run()
    app.button(key="wl_add").click().run()
    boundaries = int(trace.t[-1]) - int(trace.t[0])
    assert app.error[0].value == (f"Not added: a slide of 1 ms passes {boundaries:,} boundaries over `spy` "
                                  "(nearly all empty), more than the 1,000,000 the page answers: choose a longer slide")
    add_query(app, "time", 3, "100 ms", "10 ms", [1.0, 0.0, 0.0])  # 240,000 boundaries: added
    app = open_page(ds="spy", q="time:3:100:1:1,0,0;time:3:100:10:1,0,0")
    assert [q.slide for q in url_queries(app)] == [10]
    assert "query time:3:100:1:1,0,0 left out: a slide of 1 ms passes" in app.warning[0].value


def test_a_slide_far_too_short_for_its_window_is_not_added():
    app = open_page()
    app.radio(key="wl_kind").set_value("time").run()
    app.text_input(key="wl_window").set_value("100000000000")
    app.text_input(key="wl_slide").set_value("1").run()
    app.button(key="wl_add").click().run()  # the shared executor would allocate 745 GiB
    assert not app.exception, app.exception
    assert app.error[0].value == ("Not added: slide (1): the window spans 100,000,000,000 slides, more than the "
                                  "100,000 allowed: choose a longer slide: try 1000000 or 1250000")
    assert len(table(app)) == 3


def test_a_link_with_numbers_too_long_or_in_other_digits_opens_with_a_word():
    long = "9" * 5000  # int() refuses more than 4,300 digits
    app = open_page(q=f"count:4:300:60:1,0,-1;count:{long}:300:60:1,0,0;count:２:300:60:1,0,0", at=long)
    assert [(q.k, q.window, q.slide) for q in url_queries(app)] == [(4, 300, 60)]
    assert rows_delivered(app) == len(SYNTHETIC)
    note = app.warning[0].value
    assert f"row {'9' * 40}… (5,000 characters) is past the trace's 20,000 rows" in note
    assert f"query 2 (count:{'9' * 34}… (5,019 characters)) left out" in note
    assert "query 3 (count:２:300:60:1,0,0) left out: numbers are written with the digits 0-9" in note
    assert len(note) < 1000
    assert assert_rows_equal_the_oracle(app) == 1


def test_a_link_with_thousands_of_bad_queries_names_the_first_few():
    app = open_page(q=";".join(["count:0:200:50:1,1,1"] * 3000) + ";count:4:300:60:1,0,-1")
    assert [(q.k, q.window, q.slide) for q in url_queries(app)] == [(4, 300, 60)]
    note = app.warning[0].value
    assert note.count("left out") == 5 and note.endswith("; and 2,995 more.")


def test_a_link_with_more_queries_than_a_watch_list_holds_watches_the_first_and_says_so():
    queries = [f"count:{k}:300:60:1,0,-1" for k in range(1, MAX_QUERIES + 11)]
    app = open_page(q=";".join(["count:0:200:50:1,1,1", *queries]))  # a query left out does not count
    assert [q.k for q in url_queries(app)] == list(range(1, MAX_QUERIES + 1))
    assert len(table(app)) == MAX_QUERIES
    assert (f"This link holds {MAX_QUERIES + 10} queries: the first {MAX_QUERIES} are watched, the other 10 were "
            f"dropped (a watch list holds at most {MAX_QUERIES}).") in [caption.value for caption in app.caption]
    app.button(key="wl_add").click().run()
    assert app.error[-1].value == f"Not added: the watch list holds at most {MAX_QUERIES} queries: remove one first"
    assert len(url_queries(app)) == MAX_QUERIES


def test_a_link_repeating_a_parameter_says_which_value_is_used():
    app = open_page(q=["count:5:200:50:1,1,1", "count:4:300:60:1,0,-1"])
    assert [(q.k, q.window, q.slide) for q in url_queries(app)] == [(4, 300, 60)]
    assert "q is given 2 times: the last (count:4:300:60:1,0,-1) is used" in app.warning[0].value


def test_a_query_the_stream_refuses_is_not_half_added():
    """Times going backwards refuse a time window: that query is not watched, the others go on."""
    trace = data.Trace("back", np.arange(40), np.r_[np.arange(20), np.arange(20)], np.arange(40.0)[:, None] % 13,
                       ("a",), "ordinal")
    watch = Watch(trace)
    with pytest.raises(ValueError, match="t decreases"):
        watch.add(engine.Query([1.0], k=2, window=10, slide=5, kind="time"))
    assert watch.watched == {} and watch.alone == {} and watch.shared.stats()["groups"] == 0
    handle = watch.add(engine.Query([1.0], k=2, window=10, slide=5))
    watch.advance(len(trace))
    assert watch.table()["#"].tolist() == [handle] and watch.answer(handle).ids.tolist() == [38, 37]


def test_back_shows_the_queries_and_row_of_the_address():
    app = open_page(q="count:4:300:60:1,0,-1")
    app.button(key="wl_step").click().run()
    earlier = dict(app.query_params)
    app.button(key="wl_add").click().run()
    app.button(key="wl_step").click().run()
    assert len(url_queries(app)) == 2 and rows_delivered(app) == 100
    app.query_params.clear()
    app.query_params.update(earlier)  # Back
    app.run()
    assert dict(app.query_params) == earlier and rows_delivered(app) == 60
    assert table(app)["#"].tolist() == [0]


def test_the_form_checks_a_query_as_the_live_page_does_and_suggests_what_it_would_take():
    """One rule for both pages: k's range named, a slide over the per-window limit refused before it is
    found not to divide the window (the slides offered are within the limit), the examples the Live page gives."""
    with pytest.raises(ValueError, match=r"^k must be a whole number from 1 to 1,000 .*got 0$"):
        parse_query("count", 0, "1k", "100", [1.0], ORDINAL)
    with pytest.raises(ValueError, match=r"^slide \(7\): the window spans 1,428,571 slides, more than the 100,000 "
                                         r"allowed: choose a longer slide: try 100 or 125$"):
        parse_query("count", 5, "10m", "7", [1.0], ORDINAL)
    assert parse_query("count", 5, "10m", "100", [1.0], ORDINAL).slide == 100
    with pytest.raises(ValueError, match=r'^window: "ten" is not a number of objects \(try 1,000\)$'):
        parse_query("count", 5, "ten", "100", [1.0], ORDINAL)
    app = open_page()
    app.number_input(key="wl_k").set_value(5000).run()
    k_range = "k must be a whole number from 1 to 1,000 (the most objects the page lists in an answer), got 5,000"
    assert [e.value for e in app.error] == [k_range]  # under the input, before Add is pressed
    app.button(key="wl_add").click().run()
    assert [e.value for e in app.error] == [k_range, f"Not added: {k_range}"]
    app.number_input(key="wl_k").set_value(5)
    app.text_input(key="wl_slide").set_value("-5")
    app.button(key="wl_add").click().run()
    assert [e.value for e in app.error] == ["Not added: slide must be positive, got -5"]


def test_a_query_is_edited_in_place_keeping_its_number_and_row():
    app = open_page(q="count:4:300:60:1,0,-1;count:2:100:20:0,0,1;time:3:200:50:1,1,1")
    for _ in range(4):
        app.button(key="wl_step").click().run()
    app.selectbox(key="wl_remove_pick").set_value(1)
    app.button(key="wl_edit").click().run()
    assert app.sidebar.subheader[0].value == "Edit query #1"
    assert (app.number_input(key="wl_k").value, app.text_input(key="wl_window").value,
            app.text_input(key="wl_slide").value) == (2, "100", "20")
    app.text_input(key="wl_slide").set_value("30")
    app.button(key="wl_save").click().run()
    assert [e.value for e in app.error] == ["Not changed: the window (100) must be a whole number of slides (30): "
                                            "try 25 or 50"]
    app.number_input(key="wl_k").set_value(6)
    app.text_input(key="wl_window").set_value("120")
    app.text_input(key="wl_slide").set_value("20")
    app.button(key="wl_save").click().run()
    assert not app.error and app.sidebar.subheader[0].value == "Add a query"
    assert app.text_input(key="wl_window").value == "1,000"  # the form has the dataset's defaults again
    assert table(app)["#"].tolist() == [0, 1, 2]
    assert [(q.k, q.window, q.slide) for q in url_queries(app)] == [(4, 300, 60), (6, 120, 20), (3, 200, 50)]
    assert rows_delivered(app) == 60 and table(app)["from row"].tolist() == [0, 60, 0]
    assert any(c.value.startswith("Query #1 changed at row 60; it answers from its next slide boundary, its "
                                  "windows holding the objects from row 60 on.") for c in app.caption)
    while table(app)["slide"].isna().any():
        app.button(key="wl_step").click().run()
    assert assert_rows_equal_the_oracle(app, since={1: 60}) == 3


def test_a_fresh_session_opens_on_a_dataset_with_rows(no_rows_db):
    app = open_page()
    assert app.selectbox(key="wl_dataset").options[0] == "nothing"
    assert app.selectbox(key="wl_dataset").value == data.SYNTHETIC and not app.warning


def test_a_dataset_without_rows_says_so(no_rows_db):
    app = open_page(ds="nothing")
    assert [w.value for w in app.warning] == [data.no_rows("nothing")]
    assert app.button(key="wl_step").disabled and app.button(key="wl_play").disabled
