"""A replay stopped by SIGTERM or SIGINT wherever the main thread is, py4j calls included."""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import duckdb

from pipelines import replay, replay_job, store
from tests.pipelines.conftest import small_replay


def test_sigterm_inside_a_call_to_the_jvm_stops_the_replay_with_one_line(spark, tmp_path, monkeypatch, capsys):
    """The signal handler raises while the main thread waits for py4j (here a JVM thread that
    sleeps; in real runs the SparkContext being built): py4j must not turn the stop into a
    ``Py4JError`` traceback with exit status 1."""
    db, config = small_replay(tmp_path, rows=20, window=4, slide=2)

    @contextlib.contextmanager
    def session_started_by_a_slow_jvm(*_, **__):
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        spark.sparkContext._jvm.java.lang.Thread.sleep(10_000)
        yield spark

    monkeypatch.setattr(replay, "spark_session", session_started_by_a_slow_jvm)
    assert replay.main(["--config", str(config), "--db", str(db)]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "[replay] stopped by SIGTERM: nothing was written\n"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_sigterm_inside_a_duckdb_query_marks_the_run_interrupted_not_failed(spark, tmp_path, monkeypatch, capsys):
    """DuckDB turns the exception the signal handler raises inside a query (a load, say) into
    ``RuntimeError('Query interrupted')``: the run is still interrupted by SIGTERM, with one line."""
    db, config = small_replay(tmp_path, rows=20, window=4, slide=2)

    def a_long_load(spark, plan, summary, log):
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        with store.connection(plan.db) as con:
            con.execute("SELECT count(*) FROM range(3_000_000_000) WHERE range % 7 = 3").fetchall()

    monkeypatch.setattr(replay, "spark_session", lambda *_, **__: contextlib.nullcontext(spark))
    monkeypatch.setattr(replay_job, "run_job", a_long_load)
    assert replay.main(["--config", str(config), "--db", str(db), "--run-id", "loading"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == \
        "[replay] stopped by SIGTERM: run loading marked interrupted; continue it with --resume\n"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT status, reason FROM runs").fetchall() == [("interrupted", "stopped by SIGTERM")]
