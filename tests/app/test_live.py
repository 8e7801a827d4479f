"""The Live page under AppTest: answers are checked against the engine's oracle run here."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
from streamlit.testing.v1 import AppTest

import engine
from app import data, live_state, tables

from .conftest import DEMO, DEMO_RUN, ENTRY, OTHER_RUN, demo_trace, oracle_answers

ROOT = Path(__file__).resolve().parents[2]

SYNTHETIC = data.synthetic_uniform()
DEFAULT = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50, kind="count")
FIRST_WINDOW = DEFAULT.windows_per_object


def expected(query: engine.Query, slides: int, trace: data.Trace = SYNTHETIC) -> engine.Answer:
    """The oracle's answer after ``slides`` slides of ``trace``."""
    return oracle_answers(trace.arrays, query, slides)[-1]


def comparison(at):
    """The comparison table's frame (``rank``, ``exact id``, ``exact score``, one column per algorithm)."""
    assert len(at.table) == 1, f"{len(at.table)} tables"
    return at.table[0].value


def assert_shows(at, answer: engine.Answer, algorithms=("mintopk",)) -> None:
    """No exception or error; the comparison table shows ``answer`` as exact and for every algorithm."""
    assert not at.exception, at.exception
    assert not at.error, at.error[0].value
    frame = comparison(at)
    assert frame["rank"].tolist() == list(range(1, len(answer) + 1))
    assert frame[tables.EXACT_ID].astype(np.int64).tolist() == answer.ids.tolist()
    np.testing.assert_allclose(frame[tables.EXACT_SCORE].to_numpy(float), answer.scores, rtol=1e-12)
    for name in algorithms:
        assert frame[name].tolist() == [tables.SAME] * len(answer), name  # every rank agrees


def slide_shown(at) -> int:
    """The slide number in the status line (``Slide N · ...``)."""
    return int(at.get("progress")[0].proto.text.split(" ·")[0].removeprefix("Slide ").replace(",", ""))


def warnings(at) -> str:
    return " | ".join(w.value for w in at.warning)


def test_opens_on_live_with_the_first_window_answered(app):
    app.run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))
    assert slide_shown(app) == FIRST_WINDOW - 1  # slides are numbered from 0, as in the pipeline
    assert app.selectbox(key="preset").value == "sum of all features, last 1,000 objects"
    labels = [m.label for m in app.metric]
    assert labels == ["precision", "memory", "ms / slide", "candidates"] * 2
    assert all(m.help for m in app.metric)  # every tile defines its metric
    specs = [chart.proto.spec for chart in app.get("vega_lite_chart")]
    assert len(specs) == 5  # candidates, retained, memory, time per slide, the window
    assert any('"measured"' in spec and '"modelled"' in spec for spec in specs)
    assert any("not drawn: every selected algorithm is exact" in c.value for c in app.caption)


def test_step_processes_one_more_slide(app):
    app.run()
    app.button(key="step").click().run()
    app.button(key="step").click().run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 2))
    assert slide_shown(app) == FIRST_WINDOW + 1


def test_query_changes_rebuild_the_engines_at_the_same_position(app):
    app.run()
    app.button(key="step").click().run()  # 21 slides of 50 = 1050 rows
    app.number_input(key="k").set_value(5).run()
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=5, window=1000, slide=50)
    assert_shows(app, expected(query, FIRST_WINDOW + 1))
    assert app.selectbox(key="preset").value == "Custom"

    app.slider(key="w_x_0").set_value(-0.5)
    app.slider(key="w_x_2").set_value(0.25).run()
    query = query.with_weights([-0.5, 1.0, 0.25])
    assert_shows(app, expected(query, FIRST_WINDOW + 1))

    app.text_input(key="slide").set_value("100").run()  # 1050 rows hold 10 slides of 100
    query = engine.Query(weights=query.weights, k=5, window=1000, slide=100)
    assert_shows(app, expected(query, 10))
    app.button(key="step").click().run()
    assert_shows(app, expected(query, 11))

    app.checkbox(key="param_mintopk_prefilter").uncheck().run()
    assert_shows(app, expected(query, 11))


def test_lengths_typed_with_separators_and_suffixes(app):
    app.run()
    app.text_input(key="window").set_value("2k").run()
    query = engine.Query(weights=DEFAULT.weights, k=10, window=2000, slide=50)
    assert_shows(app, expected(query, FIRST_WINDOW))  # the same 1000 rows, a longer window
    assert "window: 2000" not in str(app.error)


def test_new_weights_are_answered_at_once_by_the_oracle(app):
    app.run()
    app.slider(key="w_x_1").set_value(-1.0).run()
    answer = expected(DEFAULT.with_weights([1.0, -1.0, 1.0]), FIRST_WINDOW)
    note = next(c.value for c in app.caption if "at once" in c.value)
    assert f"top ids {answer.ids[:5].tolist()}" in note and "matches the replayed answer" in note
    assert_shows(app, answer)


def test_presets_set_the_whole_query(app):
    app.run()
    app.selectbox(key="preset").set_value("largest x_0, last 1,000 objects").run()
    assert [app.slider(key=f"w_x_{j}").value for j in range(3)] == [1.0, 0.0, 0.0]
    assert_shows(app, expected(DEFAULT.with_weights([1.0, 0.0, 0.0]), FIRST_WINDOW))


def test_switching_the_window_kind_picks_lengths_for_the_dataset(app):
    app.run()
    app.radio(key="kind").set_value("time").run()
    assert (app.text_input(key="window").value, app.text_input(key="slide").value) == ("1000", "50")
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50, kind="time")
    # The old engines had replayed 1000 rows: the new ones stop at the last slide within them.
    slides, rows = 0, 0
    for batch in engine.slides(SYNTHETIC.arrays, query):
        if rows + len(batch) > 1000:
            break
        slides, rows = slides + 1, rows + len(batch)
    assert_shows(app, expected(query, slides))
    app.button(key="step").click().run()
    assert_shows(app, expected(query, slides + 1))
    app.radio(key="kind").set_value("count").run()
    assert (app.text_input(key="window").value, app.text_input(key="slide").value) == ("1,000", "50")


def test_kind_switch_on_a_millisecond_clock_uses_minutes(app, filled_db):
    app.run()
    app.selectbox(key="dataset").set_value("demo").run()
    app.radio(key="kind").set_value("time").run()
    assert (app.text_input(key="window").value, app.text_input(key="slide").value) == ("30 min", "1 min")
    assert not app.exception and not app.error
    # The demo trace spans about one second of milliseconds: say so instead of showing nothing.
    assert "longer than the whole trace" in warnings(app)


def test_invalid_input_keeps_the_last_view_and_suggests_valid_values(app):
    app.run()
    before = comparison(app)
    app.text_input(key="slide").set_value("7").run()
    assert not app.exception
    assert [e.value for e in app.error] == ["the window (1,000) must be a whole number of slides (7)"]
    assert "Still showing the last valid view" in warnings(app)
    assert comparison(app).equals(before)  # tables, tiles and charts stay
    assert len(app.get("vega_lite_chart")) == 5 and len(app.metric) == 8
    suggestions = [b.label for b in app.button if b.key and b.key.startswith("use_slide_")]
    assert suggestions == ["Use 5", "Use 8"]
    app.button(key="use_slide_8").click().run()
    assert app.text_input(key="slide").value == "8"
    assert_shows(app, expected(engine.Query(weights=DEFAULT.weights, k=10, window=1000, slide=8),
                               1000 // 8))

    app.text_input(key="window").set_value("ten").run()
    assert app.error[0].value.startswith('window: "ten" is not a number of objects')
    assert comparison(app)["rank"].tolist() == list(range(1, 11))
    app.text_input(key="window").set_value("4").run()
    assert app.error[0].value == "slide (8) must not be longer than the window (4)"


def test_a_bad_algorithm_parameter_is_shown_next_to_it(app):
    app.run()
    app.multiselect(key="algorithms").set_value(["oracle", "mintopk", "tma"]).run()
    before = comparison(app)
    app.number_input(key="param_tma_cells_per_dim").set_value(-1).run()
    assert not app.exception
    assert "cells_per_dim must be >= 0" in app.error[0].value
    assert "Still showing the last valid view" in warnings(app)
    assert comparison(app).equals(before)


def test_warnings_for_queries_that_are_valid_but_odd(app):
    app.run()
    app.text_input(key="window").set_value("5")
    app.text_input(key="slide").set_value("5").run()
    assert "k = 10 is larger than the window (5 objects)" in warnings(app)
    for feature in SYNTHETIC.features:
        app.slider(key=f"w_{feature}").set_value(0.0)
    app.run()
    assert "Every weight is 0" in warnings(app)
    app.text_input(key="window").set_value("100k").run()
    app.text_input(key="slide").set_value("50k").run()
    assert "longer than the whole trace" in warnings(app)


def test_play_advances_and_pause_stops_within_one_tick(app):
    app.run()
    app.select_slider(key="speed").set_value(10)
    app.button(key="play").click().run()
    assert app.button(key="play").label == "Pause"
    assert slide_shown(app) == FIRST_WINDOW - 1 + 10  # one tick of 10 slides per second
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 10))
    app.button(key="play").click().run()
    assert app.button(key="play").label == "Play"
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 10))  # the pause run processed nothing
    app.run()
    assert slide_shown(app) == FIRST_WINDOW - 1 + 10


def test_a_tick_processes_the_slides_due_since_the_last_one(app):
    """The browser asks for a tick once it has drawn the last one, which on a heavy page takes seconds: a
    tick processing one second's worth played a heavy setup at 7 of the 200 slides/s asked. A tick now
    processes the speed times the seconds since the last tick (at most CATCH_UP seconds' worth)."""
    app.run()
    app.select_slider(key="speed").set_value(10)
    app.button(key="play").click().run()
    assert slide_shown(app) == FIRST_WINDOW - 1 + 10  # the first tick after Play: one second's worth
    app.session_state["live_tick_start"] = app.session_state["live_tick_start"] - 3600  # a tab hidden for an hour
    app.run()
    played = 10 + 10 * int(live_state.CATCH_UP)
    assert slide_shown(app) == FIRST_WINDOW - 1 + played
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + played))
    pace = next(c.value for c in app.caption if c.value.startswith("Playing at "))
    assert pace.startswith("Playing at ") and "of the 10 asked" in pace and "limit" not in pace


def test_playback_stops_at_the_end_and_the_button_says_play(app, filled_db, trace):
    app.run()
    app.selectbox(key="dataset").set_value("demo").run()
    app.text_input(key="window").set_value("200")
    app.text_input(key="slide").set_value("100").run()
    app.button(key="restart").click().run()
    assert slide_shown(app) == 1
    app.select_slider(key="speed").set_value(1000)
    app.button(key="play").click().run()
    assert app.get("progress")[0].proto.text.endswith("end of the trace")
    assert app.button(key="play").label == "Play" and app.button(key="play").disabled


def test_restart_goes_back_to_the_first_window(app):
    app.run()
    app.button(key="step").click().run()
    app.button(key="restart").click().run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))


def test_restart_while_the_sidebar_holds_an_invalid_value_restarts_the_view_still_shown(app):
    """Restart dropped the engines, and with the sidebar's query invalid there was nothing to
    rebuild: the page lost the last valid view it promised to keep and showed only an error."""
    app.run()
    app.button(key="step").click().run()
    app.button(key="step").click().run()
    app.text_input(key="slide").set_value("7").run()
    assert "Still showing the last valid view" in warnings(app)
    app.button(key="restart").click().run()
    assert not app.exception
    assert "Still showing the last valid view" in warnings(app)
    assert [e.value for e in app.error] == ["the window (1,000) must be a whole number of slides (7)"]
    assert slide_shown(app) == FIRST_WINDOW - 1
    frame = comparison(app)
    answer = expected(DEFAULT, FIRST_WINDOW)
    assert frame[tables.EXACT_ID].astype(np.int64).tolist() == answer.ids.tolist()
    assert frame["mintopk"].tolist() == [tables.SAME] * len(answer)
    app.text_input(key="slide").set_value("50").run()  # valid again: the restarted engines go on
    assert_shows(app, answer)
    app.button(key="step").click().run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 1))


def test_step_clicked_while_a_restart_rebuilds_the_engines(app):
    app.run()
    app.button(key="step").click().run()
    del app.session_state["live_run"]  # what Restart's callback leaves until its rebuild has run
    app.session_state["restart"] = True
    app.button(key="step").click().run()  # the Step still on screen, clicked before the rebuild ended
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))


def test_url_state_round_trip(app):
    app.run()
    app.multiselect(key="algorithms").set_value(["oracle", "mintopk", "pretopk"])
    app.number_input(key="k").set_value(7)
    app.slider(key="w_x_1").set_value(-0.5).run()
    app.button(key="step").click().run()
    app.checkbox(key="param_pretopk_prefilter").uncheck().run()
    params = {key: app.query_params[key] for key in app.query_params}
    assert params["alg"] == "oracle,mintopk,pretopk" and params["k"] == "7" and params["w"] == "1,-0.5,1"
    assert params["at"] == str(FIRST_WINDOW) and params["p.pretopk.prefilter"] == "false"
    shown = comparison(app)

    again = AppTest.from_file(ENTRY, default_timeout=60)
    for key, value in params.items():
        again.query_params[key] = value
    again.run()
    assert not again.exception
    assert again.number_input(key="k").value == 7 and again.slider(key="w_x_1").value == -0.5
    assert again.multiselect(key="algorithms").value == ["oracle", "mintopk", "pretopk"]
    assert again.checkbox(key="param_pretopk_prefilter").value is False
    assert slide_shown(again) == FIRST_WINDOW
    assert comparison(again).equals(shown)


def test_a_time_window_in_the_url(app, filled_db):
    app.query_params.update({"ds": "demo", "kind": "time", "window": "200 ms", "slide": "100 ms", "w": "1,0"})
    app.run()
    assert not app.exception and not app.error
    assert app.text_input(key="window").value == "200 ms"
    assert app.selectbox(key="dataset").value == "demo"


def test_an_approximate_algorithm_brings_precision_error_and_layers(app, approximate):
    app.run()
    app.multiselect(key="algorithms").set_value(["oracle", "mintopk", approximate]).run()
    assert not app.exception
    frame = comparison(app)
    assert frame[approximate].tolist()[:-1] == frame["mintopk"].tolist()[:-1]
    assert frame[approximate].iloc[-1] != frame["mintopk"].iloc[-1]
    titles = " ".join(chart.proto.spec for chart in app.get("vega_lite_chart"))
    assert "Precision" in titles and "Score error" in titles and "layers projected on x_0 and x_1" in titles
    precision = [m.value for m in app.metric if m.label == "precision"]
    assert precision == ["1.00", "1.00", "0.90"]
    app.selectbox(key=f"layers_b_{approximate}").set_value("x_2").run()
    assert not app.exception
    app.slider(key="w_x_0").set_value(0.5).run()  # SAO-like engines answer new weights at once too
    note = next(c.value for c in app.caption if "at once" in c.value)
    assert f"{approximate} answered at once too" in note


def test_oracle_stays_the_reference_when_not_shown(app):
    app.run()
    app.multiselect(key="algorithms").set_value(["pretopk"]).run()
    assert not any("at once" in caption.value for caption in app.caption)  # same query, other engines
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW), algorithms=("pretopk",))


def test_no_algorithm_selected(app):
    app.run()
    app.multiselect(key="algorithms").set_value([]).run()
    assert not app.exception
    assert "Pick at least one algorithm" in app.info[-1].value


def test_missing_database_says_to_run_make_run(app, missing_db):
    app.run()
    assert not app.exception
    assert f"No database at `{missing_db}` yet" in app.info[0].value
    assert "make run" in app.info[0].value
    assert app.selectbox(key="dataset").options == [data.SYNTHETIC, data.SYNTHETIC_ATTRIBUTES]


def test_empty_database_says_to_run_make_run(app, missing_db):
    duckdb.connect(str(missing_db)).close()
    app.run()
    assert not app.exception
    assert "not filled in yet" in app.info[0].value and "make run" in app.info[0].value


def test_ingested_dataset_runs_to_its_end(app, filled_db, trace):
    app.run()
    app.selectbox(key="dataset").set_value("demo").run()
    query = engine.Query(weights=[1.0, 1.0], k=10, window=1000, slide=50)
    assert_shows(app, expected(query, FIRST_WINDOW, trace))
    assert comparison(app)[tables.EXACT_ID].astype(np.int64).iloc[0] >= 10_000  # the dataset's ids
    assert app.button(key="step").disabled  # 1000 rows: the first window was the last slide
    assert app.get("progress")[0].proto.text.endswith("end of the trace")
    assert "1970-01-01" in app.get("progress")[0].proto.text  # a millisecond clock shows date-times


def test_all_zero_weights_rank_the_newest_first(app):
    app.run()
    for feature in SYNTHETIC.features:
        app.slider(key=f"w_{feature}").set_value(0.0)
    app.run()
    answer = expected(DEFAULT.with_weights([0.0, 0.0, 0.0]), FIRST_WINDOW)
    assert answer.ids.tolist() == list(range(999, 989, -1))
    assert_shows(app, answer)


def test_attribute_streams_run_the_incomplete_algorithms_and_show_bounds(app):
    trace = data.synthetic_attributes()
    app.run()
    app.selectbox(key="dataset").set_value(data.SYNTHETIC_ATTRIBUTES).run()
    assert not app.exception and not app.error
    algorithms = app.multiselect(key="algorithms")
    assert algorithms.value == ["oracle-incomplete", "sla", "approx"]
    assert set(algorithms.options) == {i.name for i in engine.available() if i.stream == "incomplete"}
    assert app.slider(key="w_stream_0").min == 0.0  # monotone scores only
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50)
    answer = expected(query, query.windows_per_object, trace)
    frame = comparison(app)
    assert frame[tables.EXACT_ID].astype(np.int64).tolist() == answer.ids.tolist()
    assert frame["sla"].tolist() == [tables.SAME] * len(answer)
    specs = " ".join(chart.proto.spec for chart in app.get("vega_lite_chart"))
    assert "current against best possible score" in specs
    assert "Precision" in specs  # approx is approximate
    assert any("cannot enter the answer" in c.value for c in app.caption)


def test_a_change_late_in_the_trace_replays_one_window(app):
    app.query_params["at"] = "300"
    app.run()
    assert slide_shown(app) == 300
    assert_shows(app, expected(DEFAULT, 301))
    app.number_input(key="k").set_value(4).run()
    query = engine.Query(weights=DEFAULT.weights, k=4, window=1000, slide=50)
    assert slide_shown(app) == 300
    assert_shows(app, expected(query, 301))
    note = next(c.value for c in app.caption if "Engines rebuilt" in c.value)
    assert f"Engines rebuilt: replayed {FIRST_WINDOW + 1} slides (the last window before row 15,050" in note


def test_sao_layers_are_projected_when_sao_is_selected(app):
    app.run()
    app.multiselect(key="algorithms").set_value(["oracle", "mintopk", "sao"]).run()
    assert not app.exception and not app.error
    specs = " ".join(chart.proto.spec for chart in app.get("vega_lite_chart"))
    assert "sao: layers projected on x_0 and x_1" in specs and "Precision" in specs
    assert app.text_input(key="param_sao_allocation").value == "dynamic-errmin"


def test_an_engine_refusing_the_data_shows_its_message_next_to_its_parameters(app, failing):
    app.run()
    before = comparison(app)
    app.multiselect(key="algorithms").set_value(["oracle", "mintopk", failing]).run()
    assert not app.exception
    assert [e.value for e in app.error] == [f"{failing}: a slide of 50 objects, more than most=10; raise the parameter"]
    assert "Still showing the last valid view" in warnings(app)
    assert comparison(app).equals(before)
    app.number_input(key=f"param_{failing}_most").set_value(100).run()
    assert not app.error
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW), algorithms=("mintopk", failing))


def test_opens_on_the_demo_with_its_algorithms_and_a_link_to_its_run(app, demo_db):
    """After `make run`: SPY, the demo's algorithms and parameters, its query, and the run that replayed it."""
    app.run()
    assert not app.exception and not app.error
    assert app.selectbox(key="dataset").value == DEMO["dataset"]
    assert app.multiselect(key="algorithms").value == [a["name"] for a in DEMO["algorithms"]]
    assert app.number_input(key=live_state.param_key("sao", "memory")).value == 500
    assert [(link.proto.page, link.proto.label) for link in app.get("page_link")] == [("runs", "See its run")]
    assert f"A pipeline run replayed this query: `{DEMO_RUN}`, query #0." in [c.value for c in app.caption]
    query = DEMO["queries"][0]
    trace = data.load_trace(demo_db, "spy")
    weights = [float(query["weights"].get(f, 0.0)) for f in trace.features]
    demo_query = engine.Query(weights=weights, k=query["k"], window=query["window"], slide=query["slide"])
    exact = expected(demo_query, demo_query.windows_per_object, trace)
    assert_shows(app, exact, algorithms=("mintopk", "sap"))
    assert "Any weights at once: sao against the exact answers" in [s.value for s in app.subheader]
    assert [m.label for m in app.metric][-3:] == ["sao: median ms per query", "oracle: median ms per query",
                                                  "sao: mean precision"]


def test_no_run_link_where_no_run_replayed_the_query(app, demo_db):
    app.run()
    app.text_input(key="window").set_value("5,000").run()
    assert not app.exception
    assert not app.get("page_link")
    app.selectbox(key="dataset").set_value(data.SYNTHETIC).run()
    assert not app.get("page_link")


def test_a_link_with_values_the_page_cannot_take_says_what_it_changed(app):
    app.query_params.update({"ds": "worldcup", "k": "5000", "w": "nan,1,1", "alg": "oracle,oracle, nope, mintopk",
                             "speed": "7", "p.sao.bogus": "1"})
    app.run()
    assert app.number_input(key="k").value == 1000  # the input's largest k, not its smallest
    assert app.multiselect(key="algorithms").value == ["oracle", "mintopk"]
    assert_shows(app, expected(engine.Query(weights=DEFAULT.weights, k=1000, window=1000, slide=50), FIRST_WINDOW))
    note = warnings(app)
    assert "k = 5000 is more than 1000: k = 1000 is used" in note
    assert "w = nan,1,1 is not 3 finite numbers (x_0, x_1, x_2)" in note
    assert "alg: nope left out" in note
    assert "speed = 7 is not one of" in note and "p.sao.bogus: sao has no parameter bogus" in note
    assert f"its dataset `worldcup` is not in `{data.db_path()}`: `{data.SYNTHETIC}` is shown" in note
    assert app.query_params["k"] == "1000" and app.query_params["alg"] == "oracle,mintopk"


def test_a_link_with_negative_weights_on_an_attribute_stream_says_they_became_0(app):
    app.query_params.update({"ds": data.SYNTHETIC_ATTRIBUTES, "w": "-1,1,0.5"})
    app.run()
    assert [app.slider(key=f"w_stream_{i}").value for i in range(3)] == [0.0, 1.0, 0.5]
    query = engine.Query(weights=[0.0, 1.0, 0.5], k=10, window=1000, slide=50)
    answer = expected(query, query.windows_per_object, data.synthetic_attributes())
    assert comparison(app)[tables.EXACT_ID].astype(np.int64).tolist() == answer.ids.tolist()
    assert "w = -1,1,0.5 has negative weights" in warnings(app) and "they became 0" in warnings(app)


def test_a_link_to_a_slide_past_the_end_shows_the_last_slide(app):
    app.query_params["at"] = "999999999"
    app.run()
    last = len(SYNTHETIC) // DEFAULT.slide - 1
    assert slide_shown(app) == last
    assert_shows(app, expected(DEFAULT, last + 1))
    assert f"the trace ends at slide {last}" in warnings(app)
    assert app.query_params["at"] == str(last)


def test_a_slide_far_too_short_for_its_window_is_refused_before_any_engine_is_built(app):
    app.query_params.update({"window": "100000000000", "slide": "1"})  # MinTopK would allocate 1.46 TiB
    app.run()
    assert not app.exception, app.exception
    assert "the window spans 100,000,000,000 slides, more than the 100,000 allowed" in app.error[-1].value
    suggestions = [b.label for b in app.button if b.key and b.key.startswith("use_slide_")]
    assert suggestions == ["Use 1,000,000", "Use 1,250,000"]  # the shortest valid slides
    app.text_input(key="window").set_value("1,000,000,000,000,000").run()  # its divisors would take minutes
    assert not app.exception
    assert app.error[-1].value == "window must be at most 1,000,000,000,000 objects, got 1,000,000,000,000,000"


def test_an_attribute_window_counts_its_objects_not_its_tuples(app):
    """A row of an attribute stream is one value of an object: 12 rows may hold fewer than k = 10 objects."""
    app.query_params.update({"ds": data.SYNTHETIC_ATTRIBUTES, "window": "12", "slide": "6", "k": "10"})
    app.run()
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=12, slide=6)
    answer = expected(query, query.windows_per_object, data.synthetic_attributes())
    assert len(answer) < 10
    assert comparison(app)[tables.EXACT_ID].astype(np.int64).tolist() == answer.ids.tolist()
    assert f"holds only {len(answer)} object(s), fewer than k = 10" in warnings(app)
    assert f"· 12 tuples of {len(answer)} objects in the window ·" in app.get("progress")[0].proto.text


def test_a_parameter_sizing_arrays_beyond_the_machine_is_shown_next_to_it(app):
    app.query_params.update({"ds": data.SYNTHETIC_ATTRIBUTES, "alg": "oracle-incomplete,approx"})
    app.run()
    app.number_input(key="param_approx_bitmaps").set_value(1_000_000_000).run()  # 715 GiB of bitmaps
    assert not app.exception, app.exception
    assert any(e.value.startswith("bitmaps must be at most 16,384, got 1,000,000,000") for e in app.error)
    app.number_input(key="param_approx_bitmaps").set_value(64).run()
    assert not app.exception and not app.error
    assert len(comparison(app)) == 10


def test_a_link_with_digits_python_cannot_read_as_a_number_opens(app):
    """``"²".isdigit()`` is true but ``int("²")`` fails: such a link must not end in a traceback."""
    app.query_params.update({"k": "²", "at": "²", "speed": "²"})
    app.run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))
    assert "k = ² is not a whole number >= 1" in warnings(app) and "at = ²" in warnings(app)


def test_a_link_with_a_kind_but_no_lengths_uses_that_kinds_lengths(app, demo_db):
    """Not the default preset's count lengths read as durations (10,000 and 500 ms)."""
    app.query_params.update({"ds": "spy", "kind": "time"})
    app.run()
    assert (app.text_input(key="window").value, app.text_input(key="slide").value) == ("30 min", "1 min")
    query = engine.Query(weights=[1.0, 0.0, 0.0], k=10, window=1_800_000, slide=60_000, kind="time")
    assert_shows(app, expected(query, query.windows_per_object, demo_trace()), algorithms=("mintopk", "sap"))


LONG = "9" * 5000
"""A number longer than the 4,300 digits Python's ``int`` reads (it raises ``ValueError``)."""


def test_a_link_with_numbers_too_long_or_in_other_digits_says_what_it_changed(app):
    app.query_params.update({"k": LONG, "at": LONG, "speed": LONG, "w": "１,1,1", "window": LONG})
    app.run()
    assert not app.exception, app.exception
    assert app.number_input(key="k").value == live_state.K_MAX
    note = warnings(app)
    assert f"k = {'9' * 40}… (5,000 characters) is more than {live_state.K_MAX}" in note
    assert "speed = 9999" in note and "(5,000 characters) is not one of" in note
    assert "w = １,1,1 is not 3 finite numbers" in note
    assert app.text_input(key="window").value == "1,000"  # the default, named in the warning
    assert (f"window = {'9' * 40}… (5,000 characters) is not a number of objects from 1 to 1,000,000,000,000: "
            "window = 1,000 is used") in note
    assert len(warnings(app)) < 1000
    last = len(SYNTHETIC) // DEFAULT.slide - 1
    assert slide_shown(app) == last  # the linked slide, past the end: the last one
    assert_shows(app, expected(engine.Query(weights=DEFAULT.weights, k=live_state.K_MAX, window=1000, slide=50),
                               last + 1))
    assert "This link shows slide 9999" in note and f"the trace ends at slide {last}" in note

    page = AppTest.from_file(ENTRY, default_timeout=60)
    page.query_params.update({"k": "５"})  # int() reads it; a page never writes it
    page.run()
    assert page.number_input(key="k").value == DEFAULT.k and "k = ５ is not a whole number" in warnings(page)


HOLD_THE_DATABASE = """
import sys
from pipelines import store
with store.connection(sys.argv[1]) as con:  # as a replay or ingest writing holds it
    print("held", flush=True)
    sys.stdin.read()  # until the test closes the pipe
"""


@contextlib.contextmanager
def database_held(db):
    """Another process holding ``db`` read-write (DuckDB lets no other process open it meanwhile)."""
    writer = subprocess.Popen([sys.executable, "-c", HOLD_THE_DATABASE, str(db)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "held\n"
        yield
    finally:
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0


def test_a_pipeline_holding_the_database_for_a_moment_changes_no_view(app, demo_db):
    """A replay writes in short transactions; a page run meanwhile keeps its dataset and query (Live) and its
    run (Runs), and says why the database could not be read."""
    app.run()
    app.number_input(key="k").set_value(7).run()
    assert app.selectbox(key="dataset").value == "spy" and app.query_params["k"] == "7"
    with database_held(demo_db):
        app.button(key="step").click().run()
        assert not app.exception
        assert f"The database `{demo_db}` is held by another process" in app.info[0].value
        assert "`spy` stays on screen" in app.info[0].value
        assert app.selectbox(key="dataset").value == "spy" and app.number_input(key="k").value == 7
        assert app.query_params["ds"] == "spy" and app.query_params["k"] == "7"
        shown = slide_shown(app)
    app.button(key="step").click().run()
    assert not app.info and slide_shown(app) == shown + 1
    assert app.selectbox(key="dataset").value == "spy" and app.number_input(key="k").value == 7

    app.switch_page("views/runs.py").run()
    app.selectbox(key="run_id").set_value(OTHER_RUN).run()
    with database_held(demo_db):
        app.run()
        assert not app.exception and "is held by another process" in app.info[0].value
    app.run()
    assert app.selectbox(key="run_id").value == OTHER_RUN and app.query_params["run"] == OTHER_RUN


def test_a_link_repeating_a_parameter_says_which_value_is_used(app):
    app.query_params.update({"k": ["5", "7"], "w": ["1,0,0", "0,1,0", "0,0,1"]})
    app.run()
    assert app.number_input(key="k").value == 7
    assert [app.slider(key=live_state.weight_key(f"x_{j}")).value for j in range(3)] == [0.0, 0.0, 1.0]
    assert "k is given 2 times: the last (7) is used; w is given 3 times: the last (0,0,1) is used" in warnings(app)
    assert app.query_params["k"] == "7"


def test_a_fresh_session_opens_on_a_dataset_with_rows_not_the_first_one_without(app, no_rows_db):
    """Without the demo dataset the page opened the first dataset, ``nothing``, which has no rows."""
    app.run()
    assert not app.exception and not app.error and not app.warning
    assert app.selectbox(key="dataset").value == data.SYNTHETIC
    assert app.selectbox(key="dataset").options[0] == "nothing"
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))


def test_a_dataset_without_rows_says_so(app, no_rows_db):
    app.query_params["ds"] = "nothing"
    app.run()
    assert app.selectbox(key="dataset").value == "nothing"
    for kind in ("count", "time"):
        app.radio(key="kind").set_value(kind).run()
        assert not app.exception and not app.error
        assert warnings(app) == "The dataset `nothing` holds no rows: there is no slide to show. Pick another dataset, " \
                                "or ingest rows into this one."
        assert app.get("progress")[0].proto.text.startswith("No slide processed yet")
    assert app.button(key="play").disabled and app.button(key="step").disabled


def test_a_link_with_a_parameter_its_engine_refuses_leaves_it_out(app):
    app.query_params.update({"alg": "oracle,sao", "p.sao.memory": "-1", "p.sao.layers": "2"})
    app.run()
    assert not app.exception and not app.error
    assert app.number_input(key=live_state.param_key("sao", "memory")).value == 500  # the default
    assert app.number_input(key=live_state.param_key("sao", "layers")).value == 2
    assert "p.sao.memory = -1: parameter memory of sao must be >= 1, got -1: left out" in warnings(app)
    page = AppTest.from_file(ENTRY, default_timeout=60)
    page.query_params.update({"ds": data.SYNTHETIC_ATTRIBUTES, "alg": "oracle-incomplete,approx",
                              "p.approx.bitmaps": "1000000000"})  # 715 GiB of bitmaps
    page.run()
    assert not page.exception and not page.error and page.number_input(key="param_approx_bitmaps").value == 64
    assert "p.approx.bitmaps = 1000000000: bitmaps must be at most 16,384, got 1,000,000,000" in warnings(page)
    assert app.query_params["p.sao.layers"] == "2" and "p.sao.memory" not in app.query_params
    app.number_input(key=live_state.param_key("sao", "memory")).set_value(0).run()  # typed: shown, not dropped
    assert "parameter memory of sao must be >= 1, got 0" in app.error[-1].value


def test_a_link_with_a_window_or_slide_that_is_not_a_length_names_it_and_shows_the_default(app):
    app.query_params.update({"window": "abc", "slide": "0", "at": "-1"})
    app.run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))
    note = warnings(app)
    assert "window = abc is not a number of objects from 1 to 1,000,000,000,000: window = 1,000 is used" in note
    assert "slide = 0 is not a number of objects from 1 to 1,000,000,000,000: slide = 50 is used" in note
    assert "This link's slide (at = -1) is not a slide number: the first window is shown." in note
    app = AppTest.from_file(ENTRY, default_timeout=60)
    app.query_params.update({"kind": "time", "window": "-5"})
    app.run()
    assert not app.exception and not app.error, app.error
    assert "window = -5 is not a duration in time units from 1 to 1,000,000,000,000: window = 1000 is used" \
        in warnings(app)


def test_a_k_out_of_range_is_named_with_the_range_allowed(app):
    app.run()
    before = comparison(app)
    for k in (-3, 99_999_999):
        app.number_input(key="k").set_value(k).run()
        assert not app.exception
        assert [e.value for e in app.error] == [f"k must be a whole number from 1 to 1,000 (the most objects the page "
                                                f"lists in an answer), got {k:,}"]
        assert "Still showing the last valid view" in warnings(app) and comparison(app).equals(before)


def test_a_negative_slide_typed_is_told_to_be_positive(app):
    app.run()
    app.text_input(key="slide").set_value("-5").run()
    assert [e.value for e in app.error] == ["slide must be positive, got -5"]


def test_a_time_slide_passing_millions_of_empty_boundaries_is_refused_before_any_engine_is_built(app, demo_db):
    """The Watch list's rule: SPY's stand-in spans 40 minutes, 2.4 million boundaries of 1 ms."""
    trace = demo_trace()
    app.query_params.update({"ds": "spy", "kind": "time", "window": "1 ms", "slide": "1 ms"})
    app.run()
    assert not app.exception, app.exception
    boundaries = int(trace.t[-1]) // 1 - int(trace.t[0]) // 1
    assert (f"a slide of 1 ms passes {boundaries:,} boundaries over `spy` (nearly all empty), more than the "
            "1,000,000 the page answers: choose a longer slide") in [e.value for e in app.error]
    assert "live_run" not in app.session_state
    app.text_input(key="window").set_value("100 ms")
    app.text_input(key="slide").set_value("10 ms").run()  # 240,000 boundaries: run
    assert not app.error and "live_run" in app.session_state


def test_back_and_forward_show_the_view_of_the_address(app):
    """Back / Forward rerun the page with the address of that history entry: the page shows it, not the
    session's last view (Streamlit reruns the page; a page reading its address only at the session's start
    showed the same view under every address)."""
    app.query_params.update({"ds": data.SYNTHETIC, "k": "4", "at": "30"})
    app.run()
    earlier = dict(app.query_params)
    app.number_input(key="k").set_value(7).run()
    app.button(key="step").click().run()
    assert app.query_params["k"] == "7" and app.query_params["at"] == "31"
    later = dict(app.query_params)
    app.query_params.clear()
    app.query_params.update(earlier)  # Back
    app.run()
    assert app.number_input(key="k").value == 4 and slide_shown(app) == 30
    assert_shows(app, expected(engine.Query(weights=[1.0] * 3, k=4, window=1000, slide=50), 31))
    assert dict(app.query_params) == earlier
    app.query_params.clear()
    app.query_params.update(later)  # Forward
    app.run()
    assert app.number_input(key="k").value == 7 and slide_shown(app) == 31
    app.query_params.clear()  # the page picked in the sidebar: no parameters, the session's view stays
    app.run()
    assert app.number_input(key="k").value == 7 and slide_shown(app) == 31
