"""Scheduled runs that overlap: one writer at a time, nothing lost, with real processes.

Every writer of a database file (ingest, ``--append``, replay, ``--resume``) holds its writer
lock from before it reads what it builds on until its last write; a second writer waits,
then runs, or gives up naming the holder.  A killed append is completed or cancelled by the
next writer, and the tables of results refuse a slide stored twice.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from pipelines import ingest, locks, publish, replay, store
from pipelines.errors import InputError, StoreError
from pipelines.spark import PROJECT_ROOT
from tests.pipelines.conftest import small_replay, trade_lines, write_trade_zip

QUERIES = [
    {"weights": {"notional": 1.0}, "k": 4, "window": 60, "slide": 20, "kind": "count"},
    {"weights": {"price": 1.0, "size": -0.001}, "k": 3, "window": 1_800_000, "slide": 600_000, "kind": "time"},
]
ANSWER_COLUMNS = 'query_id, algorithm, slide, "end", rank, object_id, score'
METRIC_COLUMNS = 'query_id, algorithm, slide, "end", candidates, retained, bytes, precision, error'
CSV_OPTIONS = {"id_column": "id", "time_column": "t", "feature_columns": "x"}
quiet = dict(log=lambda _: None)


class Command:
    """A pipeline command in its own process, its output collected line by line as it comes."""

    def __init__(self, module: str, *args, env: dict | None = None) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, *(["-c", module] if "\n" in module else ["-m", module]), *map(str, args)],
            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True)
        self.reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait_for(self, text: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            assert self.process.poll() is None or self.reader.is_alive(), f"ended without {text!r}: {self.output}"
            assert time.monotonic() < deadline, f"no {text!r} after {timeout} s: {self.output}"
            time.sleep(0.05)

    def finish(self, timeout: float = 600) -> int:
        code = self.process.wait(timeout)
        self.reader.join(10)
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines)


def holder_pid(db: Path) -> int | None:
    try:
        return json.loads(locks.lock_path(db).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def wait_until_held_by(db: Path, command: Command, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while holder_pid(db) != command.pid:
        assert command.process.poll() is None, command.output
        assert time.monotonic() < deadline, f"process {command.pid} never took the lock: {command.output}"
        time.sleep(0.05)


def rows_of(db, table, columns, run_id):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT {columns} FROM {table} WHERE run_id = ? ORDER BY {columns}", [run_id]).fetchall()


def write_config(directory: Path, name: str, dataset: str) -> Path:
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, "dataset": dataset, "snapshot_every": 25, "queries": QUERIES,
                                "algorithms": [{"name": "oracle"}, {"name": "mintopk"}]}))
    return path


# --- the lock itself (no Spark) ----------------------------------------------------------------------

HOLD_LOCK = """
import sys, time
from pipelines import locks
with locks.writer_lock(sys.argv[1], wait=0):
    print("holding", flush=True)
    time.sleep(120)
"""


def test_a_second_writer_waits_then_names_the_holder(tmp_path):
    db = tmp_path / "topk.duckdb"
    holder = Command(HOLD_LOCK, db)
    try:
        holder.wait_for("holding")
        logged = []
        began = time.monotonic()
        with pytest.raises(StoreError) as refused:
            with locks.writer_lock(db, wait=1.0, log=logged.append):
                pass
        assert time.monotonic() - began >= 1.0
    finally:
        holder.process.kill()
        holder.finish()
    message = str(refused.value)
    assert message.startswith(f"{db} is being written by process {holder.pid} (python -c ")
    assert " since 20" in message and " UTC; gave up after waiting 1 s (--lock-wait or $TOPK_LOCK_WAIT)" in message
    assert "\n" not in message
    assert logged == [f"waiting up to 1 s for process {holder.pid} ({message.split(' (', 1)[1].split(') since')[0]}) "
                      f"since {message.split(' since ')[1].split(';')[0]}, which is writing {db}"]
    with locks.writer_lock(db, wait=5.0):  # SIGKILL released it
        assert holder_pid(db) == os.getpid()


def test_the_wait_comes_from_the_option_then_the_environment(monkeypatch):
    monkeypatch.delenv(locks.WAIT_ENVIRONMENT, raising=False)
    assert locks.wait_seconds() == locks.DEFAULT_WAIT_SECONDS
    monkeypatch.setenv(locks.WAIT_ENVIRONMENT, "2.5")
    assert (locks.wait_seconds(), locks.wait_seconds(7)) == (2.5, 7.0)
    monkeypatch.setenv(locks.WAIT_ENVIRONMENT, "soon")
    with pytest.raises(InputError, match=r"\$TOPK_LOCK_WAIT must be a number of seconds, got 'soon'"):
        locks.wait_seconds()
    with pytest.raises(InputError, match="lock wait must be a number of seconds >= 0"):
        locks.wait_seconds(-1)


def test_both_commands_give_up_with_one_line_and_status_1_before_reading_or_starting_spark(tmp_path):
    db = tmp_path / "topk.duckdb"
    store.connect(db).close()
    before = db.read_bytes()
    day = write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(10, seed=1))
    config = write_config(tmp_path, "waiting", "nope")
    with locks.writer_lock(db, wait=0):
        commands = [Command("pipelines.ingest", "stock", "--input", day, "--db", db, "--out", tmp_path,
                            "--lock-wait", "0.5"),
                    Command("pipelines.replay", "--config", config, "--db", db, "--resume",
                            env={locks.WAIT_ENVIRONMENT: "0.5"})]
        codes = [command.finish(120) for command in commands]
    assert codes == [1, 1], [command.output for command in commands]
    for command in commands:
        last = command.output.strip().splitlines()[-1]
        assert last.startswith(f"error: {db} is being written by process {os.getpid()} (")
        assert "gave up after waiting 0.5 s" in last and "Traceback" not in command.output
        assert "Spark" not in command.output
    assert db.read_bytes() == before and not (tmp_path / "spy.parquet").exists()


def test_a_replay_into_a_missing_database_is_refused_and_creates_nothing(tmp_path, capsys):
    config = write_config(tmp_path, "nowhere", "spy")
    before = sorted(tmp_path.iterdir())
    for db in (tmp_path / "missing.duckdb", tmp_path / "no" / "such" / "topk.duckdb"):
        assert replay.main(["--config", str(config), "--db", str(db)]) == 2
        out, err = capsys.readouterr()
        assert err == f"error: no database {db}; run python -m pipelines.ingest first\n" and "Spark" not in out
    assert sorted(tmp_path.iterdir()) == before  # no <db>.locks directory, no parent directory


def test_a_reader_reads_while_a_writer_holds_the_lock(tmp_path):
    db = tmp_path / "topk.duckdb"
    store.connect(db).close()
    with locks.writer_lock(db, wait=0):
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


# --- keys on the tables of results ------------------------------------------------------------------

OLD_TABLES = [
    """CREATE TABLE answers (run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, slide BIGINT, "end" BIGINT,
       rank INTEGER, object_id BIGINT, score DOUBLE)""",
    """CREATE TABLE slide_metrics (run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, slide BIGINT, "end" BIGINT,
       candidates BIGINT, retained BIGINT, bytes BIGINT, seconds DOUBLE, precision DOUBLE, error DOUBLE)""",
    """CREATE TABLE snapshots (run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, shard INTEGER, slide BIGINT,
       last_seq BIGINT, format_version INTEGER, state JSON, checksum VARCHAR, created_at TIMESTAMP)""",
    "CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, dataset VARCHAR, config JSON, spark_master VARCHAR, "
    "shards INTEGER, started_at TIMESTAMP, finished_at TIMESTAMP, status VARCHAR)",
]


def old_database(path: Path, answers: list[tuple]) -> Path:
    """A database file as the pipelines wrote it before the keys, holding ``answers``."""
    with duckdb.connect(str(path)) as con:
        for statement in OLD_TABLES:
            con.execute(statement)
        con.executemany("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)", answers)
        con.execute("INSERT INTO slide_metrics VALUES ('r', 0, 'oracle', 0, 10, 1, 1, 8, 0.1, 1.0, 0.0)")
        con.execute("INSERT INTO runs (run_id, status) VALUES ('r', 'failed')")
    return path


def test_an_older_database_gets_its_keys_and_refuses_a_slide_stored_twice(tmp_path):
    row = ("r", 0, "oracle", 0, 10, 1, 7, 2.5)
    db = old_database(tmp_path / "old.duckdb", [row, row, ("r", 0, "oracle", 0, 10, 2, 8, 1.5)])
    with store.connection(db) as con:
        assert con.execute("SELECT * FROM answers ORDER BY rank").fetchall() == [row, ("r", 0, "oracle", 0, 10, 2, 8, 1.5)]
        assert con.execute("SELECT measured_bytes, reason FROM slide_metrics, runs").fetchall() == [(None, None)]
        keys = dict(con.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                                "WHERE constraint_type = 'PRIMARY KEY'").fetchall())
        assert {table: tuple(keys[table]) for table in store.PRIMARY_KEYS} == store.PRIMARY_KEYS
        con.execute("INSERT INTO snapshots VALUES ('r', 0, 'oracle', 0, 0, 9, 2, '{}', 'c', NULL)")
        for table, values in (("answers", row), ("slide_metrics", ("r", 0, "oracle", 0, 10, 1, 1, 8, 0.1, 1.0, 0.0, 0)),
                              ("snapshots", ("r", 0, "oracle", 0, 0, 9, 2, "{}", "c", None))):
            with pytest.raises(duckdb.ConstraintException, match="Duplicate key"):
                con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(values))})", values)


def test_an_older_database_with_conflicting_rows_is_named_not_mended(tmp_path):
    db = old_database(tmp_path / "old.duckdb", [("r", 0, "oracle", 0, 10, 1, 7, 2.5), ("r", 0, "oracle", 0, 10, 1, 9, 2.0)])
    with pytest.raises(StoreError, match=r"cannot add the primary key .* to table answers: 1 keys have rows with "
                                         "different values"):
        store.connect(db)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM answers").fetchone() == (2,)


# --- a killed ingest is settled by the next writer (no Spark) ----------------------------------------

@pytest.mark.parametrize("append", [True, False])
@pytest.mark.parametrize("committed", [True, False])
def test_the_next_writer_completes_a_committed_publication_and_drops_another(tmp_path, append, committed):
    target, db = tmp_path / "d.parquet", tmp_path / "topk.duckdb"
    (target / "date=1").mkdir(parents=True)
    (target / "date=1" / "seq-000000000000.parquet").write_text("old")
    staging = tmp_path / ".d.parquet-staging-x"
    for part in ("date=1/seq-000000000010.parquet", "date=2/seq-000000000020.parquet"):
        (staging / "out" / part).parent.mkdir(parents=True, exist_ok=True)
        (staging / "out" / part).write_text(part)
    at = store.connect(db)
    at.execute("INSERT INTO datasets (name, ingested_at) VALUES ('d', '2026-11-26 10:00:00.123456')")
    at.close()
    journal = {"dataset": "d", "target": str(target), "staging": str(staging), "written": str(staging / "out"),
               "append": append, "parts": ["date=1/seq-000000000010.parquet", "date=2/seq-000000000020.parquet"],
               "ingested_at": "2026-11-26T10:00:00.123456" if committed else "2026-11-26T09:00:00",
               "retired": str(tmp_path / ".d.parquet-retired")}
    publish.write_atomically(publish.journal_path(target), json.dumps(journal))
    (tmp_path / ".d.parquet-raw-y").mkdir()

    settled = publish.recover(target, db, "d")
    files = sorted(str(path.relative_to(target)) for path in target.rglob("*.parquet"))
    old, new = ["date=1/seq-000000000000.parquet"], journal["parts"]
    assert files == ((old + new if append else new) if committed else old)
    assert settled.startswith("completed" if committed else "dropped")
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []
    assert publish.recover(target, db, "d") is None


def test_a_journal_is_left_to_its_database_while_that_file_exists(tmp_path):
    """A replay or ingest into another database file leaves the journal and its staged parts;
    once the journal's database file is gone, nobody can commit it, and any writer drops it."""
    target, owner, other = tmp_path / "d.parquet", tmp_path / "owner.duckdb", tmp_path / "other.duckdb"
    staging = tmp_path / ".d.parquet-staging-x"
    (staging / "out").mkdir(parents=True)
    (staging / "out" / "seq-000000000000.parquet").write_text("staged")
    store.connect(owner).close()
    journal = {"dataset": "d", "database": str(owner), "target": str(target), "staging": str(staging),
               "written": str(staging / "out"), "append": False, "parts": ["seq-000000000000.parquet"],
               "ingested_at": "2026-11-26T10:00:00", "retired": str(tmp_path / ".d.parquet-retired")}
    publish.write_atomically(publish.journal_path(target), json.dumps(journal))

    assert publish.recover(target, other, "d") == (f"left the interrupted ingest of d into {owner}: only a writer "
                                                    "of that database (an ingest or a replay) settles it")
    assert publish.pending_elsewhere(target, other) == owner and publish.pending_elsewhere(target, owner) is None
    assert (staging / "out" / "seq-000000000000.parquet").read_text() == "staged"
    owner.unlink()
    assert publish.recover(target, other, "d") == "dropped the uncommitted parts of an interrupted ingest of d"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


@pytest.mark.parametrize("text", [b"{\"dataset\": \"d\", \"tar", b"[]", b"\xff\xfe", b"{\"dataset\": \"d\"}",
                                  b'{"dataset": "d", "target": "t", "staging": "s", "written": "w", "ingested_at": "i", '
                                  b'"retired": "r", "append": false, "parts": [3]}'])
def test_an_unreadable_journal_is_refused_naming_it_and_touches_nothing(tmp_path, text):
    """Only the journal says whether its staged parts were committed: a writer that cannot read it
    neither completes nor drops them (it was a JSON or key traceback)."""
    target, db = tmp_path / "d.parquet", tmp_path / "topk.duckdb"
    staging = tmp_path / ".d.parquet-staging-x"
    staging.mkdir()
    journal = publish.journal_path(target)
    journal.write_bytes(text)
    for settle in (lambda: publish.recover(target, db, "d"), lambda: publish.pending_elsewhere(target, db)):
        with pytest.raises(InputError, match="^" + re.escape(f"{journal}: the journal of an interrupted ingest cannot be read (")):
            settle()
    assert journal.read_bytes() == text and staging.is_dir()


def test_an_ingest_over_an_unreadable_journal_stops_with_one_line(tmp_path, trading_days):
    (tmp_path / ".spy.parquet.journal.json").write_text("{not json")
    refused = Command("pipelines.ingest", "stock", "--input", trading_days[0], "--name", "spy",
                      "--db", tmp_path / "topk.duckdb", "--out", tmp_path, "--master", "local[1]")
    assert refused.finish() == 2, refused.output
    assert refused.lines[-1].startswith(f"error: {tmp_path / '.spy.parquet.journal.json'}: the journal of an "
                                        "interrupted ingest cannot be read (")
    assert "Traceback" not in refused.output and not (tmp_path / "topk.duckdb").exists()


PUBLISH_INTO_SHARED = """
import sys, tempfile
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
from pipelines import ingest, store
from pipelines.cleaned import Raw
from pipelines.errors import InputError
db, out = Path(sys.argv[1]), Path(sys.argv[2])
store.connect(db).close()
staging = Path(tempfile.mkdtemp(prefix=".shared.parquet-staging-", dir=out))
(staging / "out").mkdir()
pq.write_table(pa.table({"id": [1, 2], "seq": [0, 1], "t": [0, 1], "x": [0.5, 0.25]}), staging / "out" / "p.parquet")
family = ingest.FAMILIES["csv"]
raw = Raw(table=pa.table({"source_file": ["a.csv"] * 2, "line": [2, 3], "raw": ["", ""]}), params={}, features=("x",))
extracted = ingest.Extracted(family_name="csv", family=family, name="shared", inputs=[], raw=raw, db=db,
                             parquet=out.resolve() / "shared.parquet", max_rejected=0.0, existing=None, digests=[])
no_rejects = pa.table({"source_file": pa.array([], pa.string()), "line": pa.array([], pa.int64()),
                       "reason": pa.array([], pa.string()), "raw": pa.array([], pa.string())})
try:
    ingest._publish(extracted, staging, {"rows": 2, "t_min": 0, "t_max": 1}, dict.fromkeys(family.reasons, 0),
                    no_rejects, {}, print)
    print("published", flush=True)
except InputError as error:
    print(f"refused: {error}", flush=True)
"""


def waiting_for_a_publisher(out: Path) -> str:
    """The line an ingest logs while another process holds the lock of dataset directory ``out``."""
    return f"waiting up to {locks.wait_seconds():g} s for another process, which is publishing into {out}"


def test_two_databases_publishing_one_dataset_directory_take_turns(tmp_path):
    """Two ingests into two database files (two writer locks) with one --out and --name: each
    checked the directory's owner, then published, so both could pass the check and the
    second replaced the first one's dataset.  They queue on the directory's lock instead."""
    out = tmp_path / "datasets"
    out.mkdir()
    dbs = [tmp_path / "first.duckdb", tmp_path / "second.duckdb"]
    with locks.dataset_lock(out / "shared.parquet", wait=0):
        commands = [Command(PUBLISH_INTO_SHARED, db, out) for db in dbs]
        for command in commands:
            command.wait_for(waiting_for_a_publisher(out))
    assert [command.finish() for command in commands] == [0, 0]
    outcomes = sorted(command.lines[-1].split(":")[0].strip() for command in commands)
    assert outcomes == ["published", "refused"], [command.output for command in commands]
    winner = dbs[[command.lines[-1].startswith("published") for command in commands].index(True)]
    assert (out / "shared.parquet" / ingest.OWNER_FILE).read_text() == str(winner.resolve())
    for db in dbs:
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM datasets").fetchone() == ((1,) if db == winner else (0,))


HOLD_WORKING_DIRECTORY = """
import sys, time
from pathlib import Path
from pipelines import publish
with publish.working_directory(Path(sys.argv[1]), "raw") as directory:
    print("working in", directory, flush=True)
    time.sleep(120)
"""


def test_recovery_leaves_the_working_directories_of_a_running_ingest(tmp_path):
    """An ingest into another database file with the same dataset directory settles leftovers
    first: it removed every hidden working directory, those of an ingest still reading and
    writing them included, whose Spark job then failed."""
    target, db = tmp_path / "datasets" / "shared.parquet", tmp_path / "second.duckdb"
    running = Command(HOLD_WORKING_DIRECTORY, target)
    try:
        running.wait_for("working in")
        directory = Path(running.lines[-1].split("working in ", 1)[1].strip())
        (tmp_path / "datasets" / ".shared.parquet-staging-killed").mkdir()
        assert publish.recover(target, db, "shared") == "removed 1 working directory of an interrupted ingest of shared"
        assert directory.is_dir()
    finally:
        running.process.kill()
        running.finish()
    assert publish.recover(target, db, "shared") == "removed 1 working directory of an interrupted ingest of shared"
    assert not directory.exists()


def test_a_working_directory_is_created_only_between_recoveries(tmp_path):
    """A recovery by an ingest into another database file (or a replay), holding the dataset
    directory's lock, found a working directory created but not yet ``flock``-ed, took it for a
    killed ingest's and removed it: the running ingest failed (FileNotFoundError), 15 times in
    47,692 against a looping recovery.  The directory is created and locked under that lock."""
    out = tmp_path / "datasets"
    with locks.dataset_lock(out / "shared.parquet", wait=0):
        running = Command(HOLD_WORKING_DIRECTORY, out / "shared.parquet")
        try:
            running.wait_for(waiting_for_a_publisher(out))
            assert not [path for path in out.iterdir() if path.name.startswith(".shared.parquet-")]
        except BaseException:
            running.process.kill()
            raise
    try:
        running.wait_for("working in")
        directory = Path(running.lines[-1].split("working in ", 1)[1].strip())
        assert publish.recover(out / "shared.parquet", tmp_path / "second.duckdb", "shared") is None
        assert directory.is_dir()
    finally:
        running.process.kill()
        running.finish()


SETTLE_LEFTOVERS = """
import sys
from pathlib import Path
from pipelines import ingest
ingest._recover(Path(sys.argv[1]), Path(sys.argv[2]), "shared", print)
print("settled", flush=True)
"""


def test_settling_leftovers_waits_for_another_databases_publication(tmp_path):
    """The journal of a publication in progress (into another database file) is not settled
    against this database, which never commits it: that dropped it under the publisher."""
    out = tmp_path / "datasets"
    with locks.dataset_lock(out / "shared.parquet", wait=0):
        settling = Command(SETTLE_LEFTOVERS, out / "shared.parquet", tmp_path / "second.duckdb")
        settling.wait_for(waiting_for_a_publisher(out))
    assert settling.finish() == 0 and settling.lines[-1] == "settled\n"


PLAN_REPLAY = """
import sys
from pathlib import Path
from pipelines import replay
replay.prepare(Path(sys.argv[1]), db=Path(sys.argv[2]))
print("planned", flush=True)
"""


def test_a_replay_settles_leftovers_only_between_publications(tmp_path):
    """An ingest into another database file publishing the dataset's directory writes its journal
    under a temporary name, holding the directory's lock: the replay's plan settled leftovers
    without that lock and removed the file being written, whose rename then failed (the
    ingest's FileNotFoundError).  The plan waits for the publication instead."""
    db, config = small_replay(tmp_path, rows=20, window=10, slide=5)
    journal = publish.journal_path(tmp_path / "small.parquet")
    being_written = journal.with_name(f"{journal.name}.tmp")
    with locks.dataset_lock(tmp_path / "small.parquet", wait=0):
        being_written.write_text('{"dataset": "small", ')
        planning = Command(PLAN_REPLAY, config, db)
        planning.wait_for(f"[replay] {waiting_for_a_publisher(tmp_path)}")
        assert being_written.read_text() == '{"dataset": "small", '
        being_written.unlink()
    assert planning.finish() == 0 and planning.lines[-1] == "planned\n", planning.output


# --- with Spark: appends, kills and replays in their own processes --------------------------------

def write_csv(path: Path, ids: range, t) -> Path:
    rng = np.random.default_rng(ids.start)
    times = t if isinstance(t, range) else [t] * len(ids)
    path.write_text("id,t,x\n" + "".join(f"{i},{time_},{x:.4f}\n" for i, time_, x in zip(ids, times, rng.random(len(ids)))))
    return path


def test_two_concurrent_appends_keep_every_row(spark, tmp_path):
    """Both wait for a third writer, then race: each adds 2,000 rows at time 2,000 (a burst), so
    either order is valid; the issue's run of this lost one file's rows."""
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    base = write_csv(tmp_path / "base.csv", range(0, 2_000), range(0, 2_000))
    first = write_csv(tmp_path / "first.csv", range(10_000, 12_000), 2_000)
    second = write_csv(tmp_path / "second.csv", range(20_000, 22_000), 2_000)
    ingest.ingest(spark, "csv", [base], db=db, out=out, name="burst", options=CSV_OPTIONS, **quiet)

    outcome, logged = {}, []

    def append_here() -> None:
        try:
            outcome["here"] = ingest.ingest(spark, "csv", [second], db=db, out=out, name="burst", append=True,
                                            options=CSV_OPTIONS, lock_wait=600, log=logged.append)
        except BaseException as error:  # noqa: BLE001 - asserted below
            outcome["here"] = error

    with locks.writer_lock(db, wait=0):
        there = Command("pipelines.ingest", "csv", "--input", first, "--name", "burst", "--append", "--db", db,
                        "--out", out, "--id-column", "id", "--time-column", "t", "--feature-columns", "x",
                        "--master", "local[1]", "--lock-wait", "600")
        there.wait_for(f"waiting up to 600 s for process {os.getpid()} (")
        here = threading.Thread(target=append_here)
        here.start()
        deadline = time.monotonic() + 300
        while not logged and here.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert logged and logged[0].startswith(f"[ingest] waiting up to 600 s for process {os.getpid()} (")
    here.join(600)
    assert there.finish() == 0, there.output
    assert isinstance(outcome["here"], ingest.IngestSummary), outcome["here"]

    table = ingest.read_dataset(out / "burst.parquet")
    assert table.column("seq").to_pylist() == list(range(6_000))
    assert sorted(table.column("id").to_pylist()) == [*range(0, 2_000), *range(10_000, 12_000), *range(20_000, 22_000)]
    assert outcome["here"].rows_total in (4_000, 6_000)
    assert ("6,000 rows in the dataset" in there.output) == (outcome["here"].rows_total == 4_000)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT rows_read, rows_rejected, json_array_length(source_files) FROM datasets").fetchone() == (
            6_000, 0, 3)


KILL_BETWEEN_TWO_MOVES = """
import os, signal, sys
from pipelines import ingest, publish

move = publish._move

def move_one_then_die(source, destination):
    publish._move = lambda *_: os.kill(os.getpid(), signal.SIGKILL)
    move(source, destination)

publish._move = move_one_then_die
sys.exit(ingest.main(sys.argv[1:]))
"""
"""``python -m pipelines.ingest`` that kills itself (SIGKILL) after its DuckDB commit, between the
moves of its first and second part.  (A kill before the commit leaves a journal DuckDB does not
hold: the next writer drops the staged parts, as the test of :func:`pipelines.publish.recover`
above shows without the cost of another JVM.)"""


@pytest.fixture(scope="module")
def trading_days(tmp_path_factory):
    directory = tmp_path_factory.mktemp("days")
    return [write_trade_zip(directory, "SPY", day, trade_lines(rows, seed=seed, max_gap_ms=20_000))
            for day, rows, seed in (("20131007", 1_203, 7), ("20131008", 900, 8), ("20131009", 400, 9))]


def dataset_contents(db: Path, name: str):
    """What a dataset is, wherever it lives: its rows (partition columns included) and its records."""
    with duckdb.connect(str(db), read_only=True) as con:
        record = con.execute("SELECT family, source_files, rows_read, rows_rejected, rejects, features, t_unit, t_min, "
                             "t_max, params FROM datasets WHERE name = ?", [name]).fetchone()
        rejected = con.execute("SELECT * FROM rejected_rows WHERE dataset = ? ORDER BY ALL", [name]).fetchall()
        parquet = con.execute("SELECT parquet FROM datasets WHERE name = ?", [name]).fetchone()[0]
    parts = sorted(str(path.relative_to(parquet)) for path in Path(parquet).rglob("*") if path.is_file())
    return ingest.read_dataset(parquet).to_pylist(), record, rejected, parts


@pytest.fixture(scope="module")
def clean_append(spark, trading_days, tmp_path_factory):
    """Day 1 ingested, then days 2 and 3 appended, with nothing killed."""
    directory = tmp_path_factory.mktemp("clean")
    ingest.ingest(spark, "stock", trading_days[:1], db=directory / "topk.duckdb", out=directory, name="spy", **quiet)
    ingest.ingest(spark, "stock", trading_days[1:], db=directory / "topk.duckdb", out=directory, name="spy",
                  append=True, **quiet)
    return dataset_contents(directory / "topk.duckdb", "spy")


def test_sigkill_during_an_append_then_a_retry_equals_a_clean_ingest(spark, trading_days, clean_append, tmp_path):
    db = tmp_path / "topk.duckdb"
    ingest.ingest(spark, "stock", trading_days[:1], db=db, out=tmp_path, name="spy", **quiet)
    killed = Command(KILL_BETWEEN_TWO_MOVES, "stock", "--input", *trading_days[1:], "--name", "spy", "--append",
                     "--db", db, "--out", tmp_path, "--master", "local[1]")
    assert killed.finish() == -signal.SIGKILL, killed.output
    dataset = tmp_path / "spy.parquet"
    assert publish.journal_path(dataset).exists()
    visible = sorted(str(path.parent.relative_to(dataset)) for path in dataset.rglob("*.parquet"))
    assert visible == ["symbol=SPY/date=2013-10-07", "symbol=SPY/date=2013-10-08"]  # half of the append

    logged = []  # committed: the retry completes the moves, then finds its files ingested already
    with pytest.raises(InputError, match="already in dataset 'spy'"):
        ingest.ingest(spark, "stock", trading_days[1:], db=db, out=tmp_path, name="spy", append=True,
                      log=logged.append)
    assert logged[0].startswith("[ingest] completed the interrupted ingest of spy committed at ")
    assert dataset_contents(db, "spy") == clean_append
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_a_killed_ingest_is_settled_only_by_its_own_database(spark, trading_days, clean_append, tmp_path):
    """An ingest into another database file, with the same --out and --name, settled the killed
    append's journal against its own database, which never holds that commit: it dropped the
    committed day 3 (the record of the first database kept counting its rows)."""
    db, other = tmp_path / "topk.duckdb", tmp_path / "other.duckdb"
    ingest.ingest(spark, "stock", trading_days[:1], db=db, out=tmp_path, name="spy", **quiet)
    killed = Command(KILL_BETWEEN_TWO_MOVES, "stock", "--input", *trading_days[1:], "--name", "spy", "--append",
                     "--db", db, "--out", tmp_path, "--master", "local[1]")
    assert killed.finish() == -signal.SIGKILL, killed.output
    journal = publish.journal_path(tmp_path / "spy.parquet")
    left = journal.read_text()

    elsewhere = Command("pipelines.ingest", "stock", "--input", trading_days[0], "--name", "spy", "--db", other,
                        "--out", tmp_path, "--master", "local[1]")
    assert elsewhere.finish() == 2, elsewhere.output
    assert f"[ingest] left the interrupted ingest of spy into {db.resolve()}: only a writer of that database" \
        in elsewhere.output
    assert elsewhere.lines[-1].startswith(f"error: {tmp_path / 'spy.parquet'}: an interrupted ingest of dataset 'spy' "
                                          f"into another database, {db.resolve()}, is not settled yet")
    assert journal.read_text() == left

    logged = []
    with pytest.raises(InputError, match="already in dataset 'spy'"):
        ingest.ingest(spark, "stock", trading_days[1:], db=db, out=tmp_path, name="spy", append=True,
                      log=logged.append)
    assert logged[0].startswith("[ingest] completed the interrupted ingest of spy committed at ")
    assert dataset_contents(db, "spy") == clean_append


@pytest.fixture(scope="module")
def full_run(spark, trading_days, tmp_path_factory):
    """Days 1 and 2 ingested at once and replayed in one run: what the overlapping runs must equal."""
    directory = tmp_path_factory.mktemp("full")
    db = directory / "topk.duckdb"
    ingest.ingest(spark, "stock", trading_days[:2], db=db, out=directory, name="full", **quiet)
    run_id = replay.replay(spark, write_config(directory, "full", "full"), db=db, **quiet).run_id
    return rows_of(db, "answers", ANSWER_COLUMNS, run_id), rows_of(db, "slide_metrics", METRIC_COLUMNS, run_id)


def test_an_append_waits_for_a_running_replay(spark, trading_days, full_run, tmp_path):
    db = tmp_path / "topk.duckdb"
    ingest.ingest(spark, "stock", trading_days[:1], db=db, out=tmp_path, name="growing", **quiet)
    config = write_config(tmp_path, "growing", "growing")
    running = Command("pipelines.replay", "--config", config, "--db", db, "--resume", "--run-id", "growing-run",
                      "--master", "local[1]")
    running.wait_for("[replay] starting run growing-run")
    wait_until_held_by(db, running)
    logged = []
    summary = ingest.ingest(spark, "stock", trading_days[1:2], db=db, out=tmp_path, name="growing", append=True,
                            lock_wait=600, log=logged.append)
    assert logged[0].startswith(f"[ingest] waiting up to 600 s for process {running.pid} (")
    assert "pipelines.replay --config" in logged[0]
    assert running.finish() == 0, running.output
    assert summary.rows_total == 2_103

    answers, metrics = full_run
    stored = rows_of(db, "answers", ANSWER_COLUMNS, "growing-run")
    last = {query_id: max(row[2] for row in stored if row[0] == query_id) for query_id in range(len(QUERIES))}
    assert stored == [row for row in answers if row[2] <= last[row[0]]]  # day 1's slides, none of day 2's rows
    assert last[0] == 1_203 // 20 - 1
    assert rows_of(db, "runs", "status", "growing-run") == [("finished",)]
    resumed = replay.replay(spark, config, db=db, resume=True, run_id="growing-run", **quiet)
    assert resumed.resumed and rows_of(db, "answers", ANSWER_COLUMNS, "growing-run") == answers


def test_two_concurrent_resumes_write_every_slide_once(spark, trading_days, full_run, tmp_path):
    """This process resumes the run, and stops after its plan until a second ``--resume``, in its
    own process, waits for it; the second then finds the run up to date (and starts no JVM)."""
    db = tmp_path / "topk.duckdb"
    ingest.ingest(spark, "stock", trading_days[:1], db=db, out=tmp_path, name="growing", **quiet)
    config = write_config(tmp_path, "growing", "growing")
    replay.replay(spark, config, db=db, run_id="growing-run", **quiet)
    ingest.ingest(spark, "stock", trading_days[1:2], db=db, out=tmp_path, name="growing", append=True, **quiet)

    second: list[Command] = []
    logged: list[str] = []

    def log_and_let_the_second_one_start(line: str) -> None:
        logged.append(line)
        if not second:  # the plan is made and the lock held: start the other resume, wait until it waits
            second.append(Command("pipelines.replay", "--config", config, "--db", db, "--resume", "--master",
                                  "local[1]", "--lock-wait", "600"))
            second[0].wait_for(f"[replay] waiting up to 600 s for process {os.getpid()} (")

    first = replay.replay(spark, config, db=db, resume=True, log=log_and_let_the_second_one_start)
    assert second[0].finish() == 0, second[0].output
    assert first.resumed and first.run_id == "growing-run" and first.slides_written > 0
    assert logged[0].startswith("[replay] resuming run growing-run: dataset growing (2,103 rows)")
    assert logged[1] == ("[replay]   query 0: oracle, mintopk (shard 0) continue from their snapshots at slide 59 "
                         "(rows up to seq 1,199): slides 60-104 from seq 1,200")
    assert "[replay] run growing-run is up to date with dataset growing: nothing new to replay" in second[0].output
    assert "Spark" not in second[0].output

    answers, metrics = full_run
    assert rows_of(db, "answers", ANSWER_COLUMNS, "growing-run") == answers
    assert rows_of(db, "slide_metrics", METRIC_COLUMNS, "growing-run") == metrics
    assert rows_of(db, "runs", "status, reason", "growing-run") == [("finished", None)]
