"""Dirty raw files: every dirty line is rejected with its file and line, every good line kept,
never a traceback. Expectations are written out here, not computed by the pipeline's code."""

from __future__ import annotations

import json
import re

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import cli
from pipelines import ingest, replay
from pipelines.errors import InputError, StoreError

from tests.pipelines.conftest import MARKET_OPEN_MS, small_replay, write_trade_zip

quiet = dict(log=lambda _: None)
CSV_OPTIONS = {"id_column": "id", "time_column": "t", "feature_columns": "x"}


def rejected_rows(db):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT source_file, line, reason FROM rejected_rows ORDER BY line").fetchall()


def test_a_world_cup_log_with_blank_and_garbage_lines_rejects_them_and_keeps_every_request(spark, tmp_path):
    """A line of fewer than three fields (blank, binary garbage without a comma) has no date or
    time field to read: it is ``wrong_field_count``, and Spark must not fail on the missing field."""
    requests = ["7,30/Apr/1998,22:00:01,/images/a.gif,200,100",
                "8,30/Apr/1998,22:00:07,/english/index.html,200,250",
                "7,30/Apr/1998,22:00:12,/french/index.html,304,-"]
    dirt = ["", "\x00\x9f\xff garbage \x01", "9,30/Apr/1998"]
    path = tmp_path / "wc_dirty.csv"
    path.write_bytes("\n".join([requests[0], dirt[0], requests[1], dirt[1], dirt[2], requests[2]]).encode("latin-1")
                     + b"\n")
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "worldcup", [path], db=db, out=tmp_path / "datasets", max_rejected=1.0, **quiet)

    assert summary.rejects["wrong_field_count"] == 3 and summary.rows_rejected == 3
    assert rejected_rows(db) == [("wc_dirty.csv", 2, "wrong_field_count"), ("wc_dirty.csv", 4, "wrong_field_count"),
                                 ("wc_dirty.csv", 5, "wrong_field_count")]
    chunk_0, chunk_1, chunk_2 = 893_973_600_000, 893_973_605_000, 893_973_610_000  # 22:00:00, :05, :10 UTC
    rows = ingest.read_dataset(summary.parquet).to_pylist()
    assert [(row["t"], row["stream"], row["id"], row["value"]) for row in rows] == [
        (chunk_0, 0, 7, 100 / 250), (chunk_1, 1, 8, 1.0), (chunk_2, 2, 7, 0.0)]


def test_a_csv_with_lone_carriage_returns_and_a_long_stray_quote_keeps_every_good_row(spark, tmp_path):
    """A lone ``\\r`` ends a line, as for the engine's CLI (Python's csv module refused the row
    holding it); a quote left open over more than 128 KiB of rows (the csv module's field size
    limit) is a stray quote like one open at the end of the file: its row is rejected, the
    rows after it are read one by one and kept."""
    head = 'id,t,x\n1,10,"0.5"\n2,20,1.5\r3,30,2.5\r\n4,40,"4.5\n'
    tail = [(i, 10 * i, i + 0.5) for i in range(5, 20_000)]
    path = tmp_path / "dirty.csv"
    path.write_bytes((head + "".join(f"{i},{t},{x}\n" for i, t, x in tail)).encode())
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "csv", [path], db=db, out=tmp_path / "datasets", options=CSV_OPTIONS, **quiet)

    assert (summary.rows_read, summary.rows_rejected, summary.rows_written) == (3 + 1 + len(tail), 1, 3 + len(tail))
    assert rejected_rows(db) == [("dirty.csv", 5, "non_numeric")]
    rows = ingest.read_dataset(summary.parquet).to_pylist()
    assert [(row["id"], row["t"], row["x"]) for row in rows] == [(1, 10, 0.5), (2, 20, 1.5), (3, 30, 2.5), *tail]
    closed = tmp_path / "closed.csv"  # the same lone carriage returns, every quote closed: the engine reads it alike
    closed.write_bytes(head.replace('"4.5', '"4.5"').encode())
    table = cli.read_csv(str(closed))
    assert list(table.numbers) == [2, 3, 4, 5] and list(table.columns["t"]) == ["10", "20", "30", "40"]


@pytest.mark.parametrize("suffix", ["csv", "parquet", "json"])
def test_a_data_file_given_as_the_database_is_refused_before_spark_and_left_unchanged(tmp_path, suffix):
    """DuckDB opens a CSV, Parquet or JSON file as a database of one table, and keeps the tables
    created beside it in memory: an ingest recording its dataset there would report success and
    record nothing."""
    data = tmp_path / f"trips.{suffix}"
    if suffix == "parquet":
        pq.write_table(pa.table({"id": [1, 2], "t": [1, 2], "x": [0.5, 1.5]}), data)
    else:
        data.write_text("id,t,x\n1,1,0.5\n2,2,1.5\n" if suffix == "csv" else '[{"id": 1, "t": 1, "x": 0.5}]\n')
    before = data.read_bytes()
    message = f"cannot open {re.escape(str(data))}: the file exists, but it is not a DuckDB database file"
    with pytest.raises(StoreError, match=message):
        ingest.extract("synthetic:time-u", db=data, out=tmp_path / "datasets", options={"rows": 5}, **quiet)
    config = tmp_path / "replay.json"
    config.write_text(json.dumps({"dataset": "trips", "algorithms": [{"name": "oracle"}],
                                  "queries": [{"weights": [1.0], "k": 1, "window": 2, "slide": 1}]}))
    with pytest.raises(StoreError, match=message):
        replay.prepare(config, db=data)
    assert data.read_bytes() == before


def test_java_number_suffixes_and_hex_floats_are_rejected_as_non_numeric(spark, tmp_path):
    """Spark's cast to double reads Java's ``1d``, ``2F`` and hex ``0x1p3`` as numbers; the
    engine's CLI (Python's float) refuses them, and so must every family's cleaning."""
    path = tmp_path / "suffixes.csv"
    path.write_text("id,t,x\n1,10,0.5\n2,20,1d\n3,30,2F\n4,40,0x1p3\n5d,50,1.5\n6,60D,1.5\n7,70,-.5e1\n")
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "csv", [path], db=db, out=tmp_path / "datasets", options=CSV_OPTIONS,
                            max_rejected=1.0, **quiet)
    assert rejected_rows(db) == [("suffixes.csv", line, "non_numeric") for line in (3, 4, 5, 6, 7)]
    assert [(row["id"], row["t"], row["x"]) for row in ingest.read_dataset(summary.parquet).to_pylist()] == [
        (1, 10, 0.5), (7, 70, -5.0)]

    trades = write_trade_zip(tmp_path, "SPY", "20131007", [
        f"{MARKET_OPEN_MS},1670000,100,P,20002000,0", f"{MARKET_OPEN_MS + 1},1670000d,100,P,20002000,0",
        f"{MARKET_OPEN_MS + 2},1670000,1e2F,P,20002000,0", f"{MARKET_OPEN_MS + 3}d,1670000,100,P,20002000,0"])
    summary = ingest.ingest(spark, "stock", [trades], db=db, out=tmp_path / "datasets", max_rejected=1.0, **quiet)
    assert summary.rejects["non_numeric"] == 3 and summary.rows_written == 1


@pytest.mark.parametrize("foreign, message", [
    ({"id": [9], "seq": [4], "t": [4], "y": [1.0]}, "column x is missing"),
    ({"id": [9], "seq": [4], "t": [4], "x": ["1.5"]}, "column x has type string"),
    ({"id": [9], "seq": [4], "t": [4], "x": [True]}, "column x has type bool"),
])
def test_a_dataset_part_without_a_column_or_of_another_type_is_refused_with_one_line(tmp_path, foreign, message):
    """A part dropped into a dataset directory by hand, with no feature column or text in it:
    the plan's overflow check raised a ValueError traceback reading its statistics."""
    db, config = small_replay(tmp_path, rows=4, window=2, slide=1)
    single = tmp_path / "small.parquet"
    table = pq.read_table(single)
    single.unlink()
    single.mkdir()
    pq.write_table(table, single / "seq-000000000000.parquet")
    pq.write_table(pa.table(foreign), single / "seq-000000000004.parquet")
    with pytest.raises(InputError, match=re.escape(f"{single / 'seq-000000000004.parquet'}: {message}")):
        replay.prepare(config, db=db)
