"""The Live page under AppTest: answers are checked against the engine's oracle run here."""

from __future__ import annotations

import duckdb
import numpy as np

import engine
from app import data

from .conftest import oracle_answers, table_ids

SYNTHETIC = data.synthetic_uniform()
DEFAULT = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50, kind="count")
FIRST_WINDOW = DEFAULT.windows_per_object


def expected(query: engine.Query, slides: int, trace: data.Trace = SYNTHETIC) -> engine.Answer:
    """The oracle's answer after ``slides`` slides of ``trace``."""
    return oracle_answers(trace.arrays, query, slides)[-1]


def assert_shows(at, answer: engine.Answer, tables: int = 2) -> None:
    """No exception, ``tables`` top-k tables, each equal to ``answer`` and marked as agreeing."""
    assert not at.exception, at.exception
    assert not at.error, at.error[0].value
    assert len(at.table) == tables
    for table in at.table:
        assert table_ids(table) == answer.ids.tolist()
        np.testing.assert_allclose(table.value["score"].to_numpy(float), answer.scores, rtol=1e-12)
        assert table.value["rank"].tolist() == list(range(1, len(answer) + 1))
        assert set(table.value["exact"]) == {"✓"}


def test_opens_on_live_with_the_first_window_answered(app):
    app.run()
    assert [m.value for m in app.markdown] == ["**oracle** · exact, single", "**mintopk** · exact, single"]
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))
    assert app.get("progress")[0].proto.text.startswith(f"Slide {FIRST_WINDOW} ")
    titles = [chart.proto.spec for chart in app.get("vega_lite_chart")]
    assert len(titles) == 7 and any("Processing time per slide" in spec for spec in titles)


def test_step_processes_one_more_slide(app):
    app.run()
    app.button(key="step").click().run()
    app.button(key="step").click().run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 2))


def test_query_changes_rebuild_the_engines_at_the_same_position(app):
    app.run()
    app.button(key="step").click().run()  # 21 slides of 50 = 1050 rows
    app.number_input(key="k").set_value(5).run()
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=5, window=1000, slide=50)
    assert_shows(app, expected(query, FIRST_WINDOW + 1))

    app.slider(key="w_x_0").set_value(-0.5)
    app.slider(key="w_x_2").set_value(0.25).run()
    query = query.with_weights([-0.5, 1.0, 0.25])
    assert_shows(app, expected(query, FIRST_WINDOW + 1))

    app.number_input(key="slide").set_value(100).run()  # 1050 rows hold 10 slides of 100
    query = engine.Query(weights=query.weights, k=5, window=1000, slide=100)
    assert_shows(app, expected(query, 10))
    app.button(key="step").click().run()
    assert_shows(app, expected(query, 11))

    app.checkbox(key="param_mintopk_prefilter").uncheck().run()
    assert_shows(app, expected(query, 11))


def test_new_weights_are_answered_at_once_by_the_oracle(app):
    app.run()
    app.slider(key="w_x_1").set_value(-1.0).run()
    answer = expected(DEFAULT.with_weights([1.0, -1.0, 1.0]), FIRST_WINDOW)
    note = next(c.value for c in app.caption if "at once" in c.value)
    assert f"top ids {answer.ids[:5].tolist()}" in note and "matches the replayed answer" in note
    assert_shows(app, answer)


def test_time_windows(app):
    app.run()
    app.radio(key="kind").set_value("time").run()
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50, kind="time")
    assert_shows(app, expected(query, FIRST_WINDOW))
    app.button(key="step").click().run()
    assert_shows(app, expected(query, FIRST_WINDOW + 1))


def test_invalid_query_shows_the_engine_message_not_a_traceback(app):
    app.run()
    app.number_input(key="slide").set_value(7).run()
    assert not app.exception
    assert app.error[0].value == "Invalid query: window must be a multiple of slide (7), got 1000"
    assert len(app.table) == 0
    app.number_input(key="slide").set_value(50).run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))


def test_play_advances_by_the_speed_and_pause_stops(app):
    app.run()
    app.select_slider(key="speed").set_value(10)
    app.button(key="play").click().run()
    assert app.button(key="play").label == "Pause"
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 10))
    app.button(key="play").click().run()
    assert app.button(key="play").label == "Play"
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW + 10))


def test_restart_goes_back_to_the_first_window(app):
    app.run()
    app.button(key="step").click().run()
    app.button(key="restart").click().run()
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW))


def test_oracle_stays_the_reference_when_not_shown(app):
    app.run()
    app.multiselect(key="algorithms").set_value(["pretopk"]).run()
    assert [m.value for m in app.markdown] == ["**pretopk** · exact, single"]
    assert not any("at once" in caption.value for caption in app.caption)  # same query, other engines
    assert_shows(app, expected(DEFAULT, FIRST_WINDOW), tables=1)


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
    assert app.selectbox(key="dataset").options == [data.SYNTHETIC]


def test_empty_database_says_to_run_make_run(app, missing_db):
    duckdb.connect(str(missing_db)).close()
    app.run()
    assert not app.exception
    assert "not filled in yet" in app.info[0].value and "make run" in app.info[0].value


def test_ingested_dataset_runs_to_its_end(app, filled_db, trace):
    app.run()
    app.selectbox(key="dataset").set_value("demo").run()
    assert app.number_input(key="window").label == "Window (objects)"
    query = engine.Query(weights=[1.0, 1.0], k=10, window=1000, slide=50)
    assert_shows(app, expected(query, FIRST_WINDOW, trace))
    assert table_ids(app.table[0])[0] >= 10_000  # the dataset's ids, not row numbers
    assert app.button(key="step").disabled  # 1000 rows: the first window was the last slide
    assert app.get("progress")[0].proto.text.endswith("end of the trace")
    app.radio(key="kind").set_value("time").run()
    assert app.number_input(key="window").label == "Window (ms)"


def test_all_zero_weights_rank_the_newest_first(app):
    app.run()
    for feature in SYNTHETIC.features:
        app.slider(key=f"w_{feature}").set_value(0.0)
    app.run()
    answer = expected(DEFAULT.with_weights([0.0, 0.0, 0.0]), FIRST_WINDOW)
    assert answer.ids.tolist() == list(range(999, 989, -1))
    assert_shows(app, answer)
