"""A replay stopped by SIGTERM or SIGINT wherever the main thread is, py4j calls included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb

from pipelines import replay, replay_job, store
from pipelines.spark import PROJECT_ROOT
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


def descendants(pid: int) -> set[int]:
    """``pid`` and every process it started, and they started, still running."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, IndexError):
            if entry.isdigit():
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        found.add(todo[-1])
        todo += children.get(todo.pop(), [])
    return found


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_while_the_jvm_starts_is_one_line_and_leaves_no_process_behind(tmp_path):
    """A terminal's Ctrl-C reaches its whole foreground process group.  Arriving while pyspark
    waited for its JVM to start, it left that JVM behind, never ending, and the JVM's stack
    trace (it could not write where the driver, gone, had waited for its port) after the line."""
    db, config = small_replay(tmp_path, rows=20, window=4, slide=2)
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "pipelines.replay", "--config", str(config), "--db", str(db),
                                    "--master", "local[1]"], cwd=PROJECT_ROOT, stdout=stdout, stderr=stderr,
                                   start_new_session=True)  # a group of its own, as a terminal gives a command
    started: set[int] = set()
    try:
        deadline = time.monotonic() + 300
        while process.poll() is None and time.monotonic() < deadline and not any(
                b"java" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in started if running(pid)):
            time.sleep(0.02)
            started = descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        started |= descendants(process.pid)
        assert process.wait(timeout=300) == 128 + signal.SIGINT, err.read_text()
        deadline = time.monotonic() + 60
        while any(map(running, started)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in started if running(pid)], "processes left behind"
    finally:
        for pid in started:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    lines = [line for line in err.read_text().splitlines() if not line.startswith("WARNING: Using incubator modules")]
    assert lines == ["[replay] stopped by SIGINT: nothing was written"]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
