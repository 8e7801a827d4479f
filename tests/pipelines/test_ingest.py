"""Ingest: the stock transform (pure, on DataFrames) and the whole job into Parquet + DuckDB."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.testing import assertDataFrameEqual

from pipelines import ingest, stock
from pipelines.errors import InputError
from pipelines.spark import PROJECT_ROOT
from tests.pipelines.conftest import trade_lines, write_trade_zip

RAW_SCHEMA = "source_index int, source_file string, date string, line long, raw string"
ROWS_SCHEMA = "id long, seq long, t long, notional double, price double, size double"
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
    return spark.createDataFrame([(source_index, source_file, date, first_line + i, text)
                                  for i, text in enumerate(lines)], RAW_SCHEMA)


def trade_row(date, line, seq, t, price, size):
    return (int(date) * stock.LINES_PER_DAY + line, seq, t, price / 10_000 * size, price / 10_000, float(size))


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
    summary = ingest.ingest(spark, "stock", [source], db=db, out=tmp_path / "datasets", log=lambda _: None)

    accepted = len(DIRTY_DAY) - sum(DIRTY_DAY_REJECTS.values())
    assert (summary.name, summary.rows_read, summary.rejects, summary.rows_written) == (
        "spy", len(DIRTY_DAY), DIRTY_DAY_REJECTS, accepted)
    con = duckdb.connect(str(db), read_only=True)
    name, family, sources, rows_read, rows_rejected, rejects, features, t_unit, t_min, t_max, parquet = con.execute(
        "SELECT name, family, source_files, rows_read, rows_rejected, rejects, features, t_unit, t_min, t_max, "
        "parquet FROM datasets").fetchone()
    assert (name, family, rows_read, rows_rejected, t_unit) == ("spy", "stock", 13, 8, "ms")
    assert json.loads(sources) == [str(source.resolve())]
    assert json.loads(rejects) == DIRTY_DAY_REJECTS
    assert json.loads(features) == ["notional", "price", "size"]
    assert (t_min, t_max) == (OCT_7_0930_UTC_MS, OCT_7_0930_UTC_MS + 2_000)
    assert con.execute("SELECT reason, count(*) FROM rejected_rows WHERE dataset = 'spy' GROUP BY reason "
                       "ORDER BY reason").fetchall() == sorted((r, n) for r, n in DIRTY_DAY_REJECTS.items() if n)
    assert con.execute("SELECT line FROM rejected_rows WHERE reason = 'suspicious'").fetchall() == [(9,)]
    con.close()

    table = pq.read_table(parquet)
    assert table.schema.names == ["id", "seq", "t", "notional", "price", "size"]
    assert [field.type for field in table.schema] == [pa.int64()] * 3 + [pa.float64()] * 3
    assert table.num_rows == accepted
    assert table.column("seq").to_pylist() == list(range(accepted))
    assert [i % stock.LINES_PER_DAY for i in table.column("id").to_pylist()] == [1, 3, 13, 2, 12]
    assert table.column("t").to_pylist() == [OCT_7_0930_UTC_MS] * 3 + [OCT_7_0930_UTC_MS + 500,
                                                                        OCT_7_0930_UTC_MS + 2_000]
    assert table.column("notional").to_pylist()[0] == 1674100 / 10_000 * 100


def test_ingest_append_adds_a_day_after_the_dataset(spark, tmp_path):
    day1 = write_trade_zip(tmp_path, "SPY", "20131007", trade_lines(30, seed=1))
    day2 = write_trade_zip(tmp_path, "SPY", "20131008", trade_lines(20, seed=2))
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    quiet = dict(db=db, out=out, log=lambda _: None)
    ingest.ingest(spark, "stock", [day1], **quiet)
    first = pq.read_table(out / "spy.parquet")
    summary = ingest.ingest(spark, "stock", [day2], append=True, **quiet)

    both = pq.read_table(out / "spy.parquet")
    assert (summary.rows_written, summary.rows_total) == (20, 50)
    assert both.slice(0, 30).to_pylist() == first.to_pylist()
    assert both.column("seq").to_pylist() == list(range(50))
    assert all(i // stock.LINES_PER_DAY == 20131008 for i in both.column("id").to_pylist()[30:])
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT rows_read, json_array_length(source_files) FROM datasets").fetchone() == (50, 2)
    with pytest.raises(InputError, match="already in dataset"):
        ingest.ingest(spark, "stock", [day2], append=True, **quiet)


def unreadable_input(directory, kind):
    if kind == "missing":
        return directory / "spy_20131007_trade.zip"
    if kind == "not-a-zip":
        path = directory / "spy_20131007_trade.zip"
        path.write_bytes(b"not a zip")
        return path
    return write_trade_zip(directory, "SPY", "20131007", ["1,2,3,P,0,0"]).rename(directory / "trades.zip")


@pytest.mark.parametrize("kind, message", [("missing", "no such file"), ("not-a-zip", "cannot read the zip"),
                                           ("bad-name", "not a trade file name")])
def test_ingest_cli_unreadable_input_is_one_line_and_status_2(tmp_path, kind, message):
    path = unreadable_input(tmp_path, kind)
    done = subprocess.run([sys.executable, "-m", "pipelines.ingest", "stock", "--input", str(path),
                           "--db", str(tmp_path / "topk.duckdb")], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and message in done.stderr
    assert not (tmp_path / "topk.duckdb").exists()
