"""Ingest: the stock transform (pure, on DataFrames), the whole job into partitioned Parquet + DuckDB,
appends as new parts, several symbols in one dataset, and the refusals that leave everything unchanged."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.testing import assertDataFrameEqual

from pipelines import ingest, stock
from pipelines.errors import InputError, StoreError
from pipelines.spark import PROJECT_ROOT
from tests.pipelines.conftest import trade_lines, write_trade_zip

RAW_SCHEMA = "source_index int, source_file string, line long, raw string, symbol string, symbol_index long, date string"
ROWS_SCHEMA = "id long, seq long, t long, notional double, price double, size double, symbol string, date string"
REJECTED_SCHEMA = "source_file string, line long, reason string, raw string"
OCT_7_0930_UTC_MS = 1_381_152_600_000
"""2013-10-07 09:30 New York (EDT, UTC-4) = 13:30 UTC."""

DIRTY_DAY = [
    "34200000,1674100,100,P,20002000,0",
    "34200500,1674200,200,P,20002000,0",
    "34200000,1674000,300,P,20002000,0",
    "34201000,1674100,100,P,20002000",
    "abc,1674100,100,P,20002000,0",
    "34201000,NaN,100,P,20002000,0",
    "34201000,0,100,P,20002000,0",
    "34201000,1674100,-5,P,20002000,0",
    "34201000,1674100,100,P,20002000,1",
    "90000000,1674100,100,P,20002000,0",
    "",
    "34202000.75,1674300,100,P,20002000,0",
    "34200000,1674100,100,P,20002000,0",
]
DIRTY_DAY_REJECTS = {"wrong_field_count": 2, "non_numeric": 2, "time_out_of_range": 1, "non_positive_price": 1,
                     "non_positive_size": 1, "suspicious": 1, "before_dataset_end": 0}


def raw_frame(spark, lines, date="20131007", source_file="spy_20131007_trade.zip", source_index=0, first_line=1):
    return spark.createDataFrame([(source_index, source_file, first_line + i, text, "SPY", 0, date)
                                  for i, text in enumerate(lines)], RAW_SCHEMA)


def trade_row(date, line, seq, t, price, size):
    iso = f"{date[:4]}-{date[4:6]}-{date[6:]}"
    return (int(date) * stock.LINES_PER_DAY + line, seq, t, price / 10_000 * size, price / 10_000, float(size),
            "SPY", iso)


def test_transform_derives_time_features_and_arrival_order(spark):
    raw = raw_frame(spark, ["34200500,1674200,200,P,0,0", "34200000,1674100,100,P,0,0",
                            "34200000.9,1674000,300,P,0,0"])
    cleaned = stock.transform(raw)
    expected = spark.createDataFrame([
        trade_row("20131007", 2, 0, OCT_7_0930_UTC_MS, 1674100, 100),
        trade_row("20131007", 3, 1, OCT_7_0930_UTC_MS, 1674000, 300),
        trade_row("20131007", 1, 2, OCT_7_0930_UTC_MS + 500, 1674200, 200),
    ], ROWS_SCHEMA)
    assertDataFrameEqual(cleaned.rows, expected, checkRowOrder=False)
    assert cleaned.rejected.count() == 0


def test_transform_uses_new_york_standard_time_in_winter(spark):
    cleaned = stock.transform(raw_frame(spark, ["34200000,1674100,100,P,0,0"], date="20131202",
                                        source_file="spy_20131202_trade.zip"))
    assert cleaned.rows.select("t").first().t == 1_385_994_600_000  # 09:30 EST = 14:30 UTC


def test_transform_rejects_each_bad_row_with_its_first_reason(spark):
    cleaned = stock.transform(raw_frame(spark, DIRTY_DAY))
    expected = spark.createDataFrame([
        ("spy_20131007_trade.zip", 4, "wrong_field_count", DIRTY_DAY[3]),
        ("spy_20131007_trade.zip", 5, "non_numeric", DIRTY_DAY[4]),
        ("spy_20131007_trade.zip", 6, "non_numeric", DIRTY_DAY[5]),
        ("spy_20131007_trade.zip", 7, "non_positive_price", DIRTY_DAY[6]),
        ("spy_20131007_trade.zip", 8, "non_positive_size", DIRTY_DAY[7]),
        ("spy_20131007_trade.zip", 9, "suspicious", DIRTY_DAY[8]),
        ("spy_20131007_trade.zip", 10, "time_out_of_range", DIRTY_DAY[9]),
        ("spy_20131007_trade.zip", 11, "wrong_field_count", DIRTY_DAY[10]),
    ], REJECTED_SCHEMA)
    assertDataFrameEqual(cleaned.rejected, expected)
    assert cleaned.rows.count() == len(DIRTY_DAY) - sum(DIRTY_DAY_REJECTS.values())


def test_transform_keeps_repeated_identical_trades(spark):
    line = "34200000,1674100,100,P,20002000,0"
    rows = stock.transform(raw_frame(spark, [line, line, line])).rows
    assert sorted(r.id for r in rows.collect()) == [201310070000001, 201310070000002, 201310070000003]


def test_transform_for_append_continues_seq_and_rejects_earlier_rows(spark):
    raw = raw_frame(spark, ["34200000,1674100,100,P,0,0", "34200500,1674200,200,P,0,0",
                            "34200600,1674300,300,P,0,0"])
    cleaned = stock.transform(raw, seq_start=10, t_after=OCT_7_0930_UTC_MS + 500)
    expected = spark.createDataFrame([
        trade_row("20131007", 2, 10, OCT_7_0930_UTC_MS + 500, 1674200, 200),
        trade_row("20131007", 3, 11, OCT_7_0930_UTC_MS + 600, 1674300, 300),
    ], ROWS_SCHEMA)
    assertDataFrameEqual(cleaned.rows, expected)
    assert [(r.line, r.reason) for r in cleaned.rejected.collect()] == [(1, "before_dataset_end")]


def test_ingest_smoke_dirty_day_into_parquet_and_duckdb(spark, tmp_path):
    source = write_trade_zip(tmp_path, "SPY", "20131007", DIRTY_DAY)
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "stock", [source], db=db, out=tmp_path / "datasets", max_rejected=1.0,
                            log=lambda _: None)

    accepted = len(DIRTY_DAY) - sum(DIRTY_DAY_REJECTS.values())
    assert (summary.name, summary.rows_read, summary.rejects, summary.rows_written) == (
        "spy", len(DIRTY_DAY), DIRTY_DAY_REJECTS, accepted)
    con = duckdb.connect(str(db), read_only=True)
    name, family, sources, rows_read, rows_rejected, rejects, features, t_unit, t_min, t_max, parquet, params = (
        con.execute("SELECT name, family, source_files, rows_read, rows_rejected, rejects, features, t_unit, t_min, "
                    "t_max, parquet, params FROM datasets").fetchone())
    assert (name, family, rows_read, rows_rejected, t_unit) == ("spy", "stock", 13, 8, "ms")
    assert json.loads(sources) == [str(source.resolve())]
    assert json.loads(rejects) == DIRTY_DAY_REJECTS
    assert json.loads(features) == ["notional", "price", "size"]
    assert json.loads(params) == {"symbols": ["SPY"]}
    assert (t_min, t_max) == (OCT_7_0930_UTC_MS, OCT_7_0930_UTC_MS + 2_000)
    assert con.execute("SELECT reason, count(*) FROM rejected_rows WHERE dataset = 'spy' GROUP BY reason "
                       "ORDER BY reason").fetchall() == sorted((r, n) for r, n in DIRTY_DAY_REJECTS.items() if n)
    assert con.execute("SELECT line FROM rejected_rows WHERE reason = 'suspicious'").fetchall() == [(9,)]
    con.close()

    assert parquet_parts(parquet) == ["symbol=SPY/date=2013-10-07"]
    part = pq.read_table(next(Path(parquet).rglob("*.parquet")))
    assert part.schema.names == ["id", "seq", "t", "notional", "price", "size"]
    assert [field.type for field in part.schema] == [pa.int64()] * 3 + [pa.float64()] * 3
    table = ingest.read_dataset(parquet)
    assert table.num_rows == accepted
    assert table.column("seq").to_pylist() == list(range(accepted))
    assert [i % stock.LINES_PER_DAY for i in table.column("id").to_pylist()] == [1, 3, 13, 2, 12]
    assert table.column("t").to_pylist() == [OCT_7_0930_UTC_MS] * 3 + [OCT_7_0930_UTC_MS + 500,
                                                                        OCT_7_0930_UTC_MS + 2_000]
    assert table.column("notional").to_pylist()[0] == 1674100 / 10_000 * 100


def parquet_parts(directory):
    """The partition directories of a dataset, sorted."""
    return sorted(str(path.parent.relative_to(directory)) for path in Path(directory).rglob("*.parquet"))


def dataset_state(db, directory):
    """Everything an ingest may change: the DuckDB rows and every Parquet file's bytes."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables = {table: con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
                  for table in ("datasets", "rejected_rows")}
    files = {str(path.relative_to(directory)): path.read_bytes()
             for path in sorted(Path(directory).rglob("*")) if path.is_file()} if Path(directory).exists() else {}
    return tables, files


def test_ingest_append_adds_parts_after_the_dataset(spark, tmp_path):
    day1 = write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(30, seed=1))
    day2 = write_trade_zip(tmp_path, "SPY", "20131008", trade_lines(20, seed=2))
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    quiet = dict(db=db, out=out, log=lambda _: None)
    ingest.ingest(spark, "stock", [day1], **quiet)
    first_files = dataset_state(db, out / "spy.parquet")[1]
    first = ingest.read_dataset(out / "spy.parquet")
    summary = ingest.ingest(spark, "stock", [day2], append=True, out=tmp_path / "elsewhere", db=db,
                            log=lambda _: None)

    assert summary.parquet == out / "spy.parquet"
    assert not (tmp_path / "elsewhere").exists()
    both_files = dataset_state(db, out / "spy.parquet")[1]
    assert {name: data for name, data in both_files.items() if name in first_files} == first_files
    assert parquet_parts(out / "spy.parquet") == ["symbol=SPY/date=2013-10-07", "symbol=SPY/date=2013-10-08"]
    both = ingest.read_dataset(out / "spy.parquet")
    assert (summary.rows_written, summary.rows_total) == (20, 50)
    assert both.slice(0, 30).to_pylist() == first.to_pylist()
    assert both.column("seq").to_pylist() == list(range(50))
    assert all(i // stock.LINES_PER_DAY == 20131008 for i in both.column("id").to_pylist()[30:])
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT rows_read, json_array_length(source_files) FROM datasets").fetchone() == (50, 2)
    with pytest.raises(InputError, match="already in dataset"):
        ingest.ingest(spark, "stock", [day2], append=True, **quiet)


def test_ingest_several_symbols_make_one_market_stream(spark, tmp_path):
    spy = write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(40, seed=3))
    bac = write_trade_zip(tmp_path, "BAC", "20131007", trade_lines(25, seed=4))
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    summary = ingest.ingest(spark, "stock", [spy, bac], db=db, out=out, log=lambda _: None)

    assert (summary.name, summary.rows_written) == ("bac-spy", 65)
    assert parquet_parts(out / "bac-spy.parquet") == ["symbol=BAC/date=2013-10-07", "symbol=SPY/date=2013-10-07"]
    table = ingest.read_dataset(out / "bac-spy.parquet", ["id", "seq", "t", "symbol"])
    ids, t, symbols = (table.column(name).to_pylist() for name in ("id", "t", "symbol"))
    assert table.column("seq").to_pylist() == list(range(65))
    assert t == sorted(t)
    assert len(set(ids)) == 65
    assert Counter(symbols) == {"SPY": 40, "BAC": 25}
    assert {i // stock.ID_PER_SYMBOL for i, s in zip(ids, symbols) if s == "BAC"} == {0}
    assert {i // stock.ID_PER_SYMBOL for i, s in zip(ids, symbols) if s == "SPY"} == {1}
    with duckdb.connect(str(db), read_only=True) as con:
        assert json.loads(con.execute("SELECT params FROM datasets").fetchone()[0]) == {"symbols": ["BAC", "SPY"]}


def test_two_files_for_one_symbol_and_day_name_the_real_cause(tmp_path):
    first = write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(3, seed=1))
    (tmp_path / "copy").mkdir()
    second = write_trade_zip(tmp_path / "copy", "SPY", "20131007", trade_lines(3, seed=2))
    with pytest.raises(InputError, match="a second file for SPY on 20131007"):
        ingest.extract("stock", [first, second], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                       log=lambda _: None)


def test_refusals_leave_duckdb_and_parquet_unchanged(spark, tmp_path):
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    quiet = dict(db=db, out=out, log=lambda _: None)
    ingest.ingest(spark, "stock", [write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(30, seed=1))], **quiet)
    before = dataset_state(db, out / "spy.parquet")
    empty = tmp_path / "spy_20131008_trade.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("20131008_spy_Trade_Tick.csv", "")
    all_bad = write_trade_zip(tmp_path, "SPY", "20131009", ["34200000,0,100,P,0,0", "x,1,1,P,0,0"])
    dirty = write_trade_zip(tmp_path, "SPY", "20131010",
                            trade_lines(16, seed=5) + ["34200000,0,100,P,0,0"] * 3 + ["1,2,3"])
    earlier = write_trade_zip(tmp_path, "SPY", "20131004", trade_lines(5, seed=6))
    refusals = [
        (dict(inputs=[empty], append=True), "no rows to ingest"),
        (dict(inputs=[all_bad], append=True), r"none of its 2 rows is accepted \(non_numeric 1, non_positive_price 1"),
        (dict(inputs=[dirty], append=True), r"4 of 20 rows rejected \(20.0%.*non_positive_price 3, wrong_field_count 1"),
        (dict(inputs=[earlier], append=True), "none of its 5 rows is accepted \\(before_dataset_end 5\\)"),
        (dict(inputs=[empty]), "no rows to ingest"),
        (dict(inputs=[dirty]), "rows rejected"),
    ]
    for arguments, message in refusals:
        with pytest.raises(InputError, match=message):
            ingest.ingest(spark, "stock", **arguments, **quiet)
        assert dataset_state(db, out / "spy.parquet") == before
    assert not list(out.glob(".*")), "no staging directory is left behind"


def test_a_failed_duckdb_write_publishes_nothing(spark, tmp_path, monkeypatch):
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    quiet = dict(db=db, out=out, log=lambda _: None)
    ingest.ingest(spark, "stock", [write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(30, seed=1))], **quiet)
    before = dataset_state(db, out / "spy.parquet")

    def locked(*_, **__):
        raise StoreError("cannot open topk.duckdb: locked")

    monkeypatch.setattr(ingest, "_record", locked)
    day2 = write_trade_zip(tmp_path, "SPY", "20131008", trade_lines(20, seed=2))
    for append in (True, False):
        with pytest.raises(StoreError):
            ingest.ingest(spark, "stock", [day2], append=append, **quiet)
        assert dataset_state(db, out / "spy.parquet") == before
    assert sorted(path.name for path in out.iterdir()) == ["spy.parquet"]


def test_ingest_cli_refusal_is_one_line_and_status_2(tmp_path):
    dirty = write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(9, seed=5) + ["34200000,0,100,P,0,0"])
    done = subprocess.run([sys.executable, "-m", "pipelines.ingest", "stock", "--input", str(dirty),
                           "--max-rejected", "5%", "--db", str(tmp_path / "topk.duckdb"), "--out", str(tmp_path),
                           "--master", "local[1]"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith("error: 1 of 10 rows rejected (10.0%")
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "spy.parquet").exists()
    assert not (tmp_path / "topk.duckdb").exists()


def unreadable_input(directory, kind):
    if kind == "missing":
        return directory / "spy_20131007_trade.zip"
    if kind == "not-a-zip":
        path = directory / "spy_20131007_trade.zip"
        path.write_bytes(b"not a zip")
        return path
    return write_trade_zip(directory, "SPY", "20131007", ["1,2,3,P,0,0"]).rename(directory / "trades.zip")


@pytest.mark.parametrize("kind, message", [("missing", "no such file"), ("not-a-zip", "cannot read the file"),
                                           ("bad-name", "not a trade file name")])
def test_ingest_cli_unreadable_input_is_one_line_and_status_2(tmp_path, kind, message):
    path = unreadable_input(tmp_path, kind)
    done = subprocess.run([sys.executable, "-m", "pipelines.ingest", "stock", "--input", str(path),
                           "--db", str(tmp_path / "topk.duckdb"), "--out", str(tmp_path / "datasets")],
                          cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and message in done.stderr
    assert not (tmp_path / "topk.duckdb").exists()


def test_a_database_file_that_is_not_duckdb_is_refused_before_spark(tmp_path):
    db = tmp_path / "notes.duckdb"
    db.write_text("my notes, not a database\n")
    with pytest.raises(StoreError, match=f"cannot open {re.escape(str(db))}: "):
        ingest.extract("synthetic:time-u", db=db, out=tmp_path / "datasets", options={"rows": 5}, log=lambda _: None)
    assert db.read_text() == "my notes, not a database\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("later", [0.0, 2.0])
def test_a_signal_during_the_spark_job_ends_the_ingest_with_one_line(tmp_path, signum, later):
    """Ctrl-C or a scheduler's SIGTERM, as the job starts or while the main thread waits in a
    py4j call (there py4j logged the interruption with its traceback, and Spark a Java one):
    one line, status 128 + signal, and nothing published."""
    db, out, log = tmp_path / "topk.duckdb", tmp_path / "datasets", tmp_path / "stdout.txt"
    with open(log, "w") as stdout:
        process = subprocess.Popen([sys.executable, "-m", "pipelines.ingest", "synthetic:time-u", "--rows", "3000000",
                                    "--dims", "3", "--db", str(db), "--out", str(out), "--master", "local[2]"],
                                   cwd=PROJECT_ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True)
        while process.poll() is None and "[ingest] cleaning on Spark" not in log.read_text():
            time.sleep(0.1)
        time.sleep(later)  # 3,000,000 rows keep the job running well beyond
        process.send_signal(signum)
        _, err = process.communicate(timeout=300)
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err and "Exception" not in err
    assert err.splitlines()[-1] == (f"[ingest] stopped by {signal.Signals(signum).name}: whatever it had begun to "
                                    "publish is completed or dropped by the next writer of the database")
    assert not db.exists() and (not out.exists() or list(out.iterdir()) == [])


@pytest.mark.parametrize("content", ["", "id,t,x\n", "id,t,x"])
def test_an_empty_or_header_only_csv_is_refused_before_spark(tmp_path, content):
    good, empty = tmp_path / "good.csv", tmp_path / "empty.csv"
    good.write_text("id,t,x\n1,1,0.5\n")
    empty.write_text(content)
    options = {"id_column": "id", "time_column": "t", "feature_columns": "x"}
    with pytest.raises(InputError, match=re.escape(f"{empty}: no rows to ingest (empty file, or a header only)")):
        ingest.extract("csv", [good, empty], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                       options=options, log=lambda _: None)
    done = subprocess.run([sys.executable, "-m", "pipelines.ingest", "csv", "--input", str(empty), "--id-column", "id",
                           "--time-column", "t", "--feature-columns", "x", "--db", str(tmp_path / "topk.duckdb"),
                           "--out", str(tmp_path / "datasets")], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "Spark" not in done.stdout + done.stderr
    assert done.stderr == f"error: {empty}: no rows to ingest (empty file, or a header only)\n"
    assert not (tmp_path / "topk.duckdb").exists() and not (tmp_path / "datasets").exists()


def test_an_out_that_is_a_file_is_refused_before_spark(tmp_path):
    out = tmp_path / "datasets"
    out.write_text("a file where the datasets' directory should be\n")  # failed after Spark: NotADirectoryError
    with pytest.raises(InputError, match=re.escape(f"--out {out}: not a directory")):
        ingest.extract("synthetic:time-u", db=tmp_path / "topk.duckdb", out=out, options={"rows": 5},
                       log=lambda _: None)


def test_a_dataset_directory_of_another_database_is_not_replaced(spark, tmp_path):
    """Two database files with one --out (the default var/datasets): an ingest into the second
    replaced the first one's dataset directory, whose record then described other rows."""
    out, first, second = tmp_path / "datasets", tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    quiet = dict(log=lambda _: None)
    racing = ingest.extract("synthetic:time-u", db=second, out=out, options={"rows": 7}, **quiet)
    summary = ingest.ingest(spark, "synthetic:time-u", db=first, out=out, options={"rows": 5}, **quiet)
    before = ingest.read_dataset(summary.parquet)
    with pytest.raises(InputError, match=re.escape(f"{summary.parquet} is the dataset 'time-u' of another database, "
                                                   f"{first.resolve()}")):
        ingest.extract("synthetic:time-u", db=second, out=out, options={"rows": 7}, **quiet)
    with pytest.raises(InputError, match="of another database"):  # published while the second one was cleaning
        ingest.transform_and_load(spark, racing, **quiet)
    assert ingest.read_dataset(summary.parquet) == before and not second.exists()
    assert ingest.ingest(spark, "synthetic:time-u", db=first, out=out, options={"rows": 6}, **quiet).rows_written == 6
    first.unlink()  # a database deleted leaves its datasets to the next one
    assert ingest.ingest(spark, "synthetic:time-u", db=second, out=out, options={"rows": 7}, **quiet).rows_written == 7
