"""Ingest of the taxi, worldcup, csv and synthetic families on small real samples, into Parquet + DuckDB.

Each expectation is computed here independently (plain Python over the same lines), not by
the pipeline's code.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import gzip
import hashlib
import io
import json
import re
import tarfile
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import numpy as np
import pytest

from engine import cli, generators
from pipelines import csvfile, ingest, synthetic, worldcup
from pipelines.errors import InputError
from pipelines.spark import PROJECT_ROOT

SAMPLES = PROJECT_ROOT / "sample_data"
NEW_YORK = ZoneInfo("America/New_York")
quiet = dict(log=lambda _: None)


def datasets_row(db, name):
    with duckdb.connect(str(db), read_only=True) as con:
        cursor = con.execute("SELECT * FROM datasets WHERE name = ?", [name])
        names = [d[0] for d in cursor.description]
        row = dict(zip(names, cursor.fetchone()))
    return {key: json.loads(value) if key in ("rejects", "features", "params", "source_files") else value
            for key, value in row.items()}


# ---------------------------------------------------------------- taxi

TAXI_ROWS = 150
TAXI_DIRT = [
    # each: (line text with fields changed, reason)
    ({"trip_distance": "abc"}, "non_numeric"),
    ({"pickup_datetime": "2019-13-45 99:00:00"}, "bad_time"),
    ({"pickup_datetime": "2018-12-31 23:50:00", "dropoff_datetime": "2019-01-01 00:10:00"}, "time_out_of_range"),
    ({"dropoff_datetime": "PICKUP"}, "non_positive_duration"),
    ({"trip_distance": "0.0"}, "zero_distance"),
    ({"trip_distance": "558.0", "pickup_datetime": "2019-01-15 10:00:00", "dropoff_datetime": "2019-01-15 11:00:00"},
     "implausible_speed"),
    ({"tip_amount": "-1.5"}, "negative_amount"),
]


def taxi_sample(directory: Path, month: str) -> Path:
    """The first TAXI_ROWS trips of a real month, and (for January) one dirty copy per reason."""
    with gzip.open(SAMPLES / "taxi" / f"yellow_tripdata_sample_2019-{month}.csv.gz", "rt") as source:
        lines = source.read().splitlines()[: TAXI_ROWS + 1]
    header = lines[0].split(",")
    if month == "01":
        template = lines[1].split(",")
        for changes, _ in TAXI_DIRT:
            row = list(template)
            for column, value in changes.items():
                row[header.index(column)] = row[header.index("pickup_datetime")] if value == "PICKUP" else value
            lines.append(",".join(row))
        lines.append("1,2,3")
    path = directory / f"yellow_tripdata_sample_2019-{month}.csv.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def expected_trips(paths):
    """Accepted trips as (id, t, duration, distance, speed, fare, tip), judged like the family's documentation says."""
    trips, rejects = [], Counter()
    for path in paths:
        year, month = re.search(r"(\d{4})-(\d{2})", path.name).groups()
        month = int(year + month)
        with gzip.open(path, "rt") as source:
            rows = list(csv.reader(source))
        header = rows[0]
        for line, row in enumerate(rows[1:], start=2):
            if len(row) != len(header):
                rejects["wrong_field_count"] += 1
                continue
            field = dict(zip(header, row))
            amounts = [field[c] for c in ingest.taxi.AMOUNT_COLUMNS]
            try:
                distance, fare, tip = float(field["trip_distance"]), float(field["fare_amount"]), float(field["tip_amount"])
                money = [float(a) for a in amounts if a != ""]
            except ValueError:
                rejects["non_numeric"] += 1
                continue
            try:
                pickup = dt.datetime.strptime(field["pickup_datetime"], "%Y-%m-%d %H:%M:%S")
                dropoff = dt.datetime.strptime(field["dropoff_datetime"], "%Y-%m-%d %H:%M:%S")
            except ValueError:
                rejects["bad_time"] += 1
                continue
            duration = (dropoff - pickup).total_seconds()
            reason = ("time_out_of_range" if pickup.year * 100 + pickup.month != month else
                      "non_positive_duration" if duration <= 0 else "zero_distance" if distance <= 0 else
                      "implausible_speed" if distance / (duration / 3600) > 100 else
                      "negative_amount" if min(money) < 0 else None)
            if reason:
                rejects[reason] += 1
                continue
            t = int(pickup.replace(tzinfo=NEW_YORK).timestamp() * 1000)
            trips.append((month * 10**8 + line, t, duration, distance, distance / (duration / 3600), fare, tip))
    return trips, rejects


def test_taxi_ingest_orders_trips_by_pickup_and_rejects_by_reason(spark, tmp_path):
    paths = [taxi_sample(tmp_path, "01"), taxi_sample(tmp_path, "02")]
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "taxi", paths, db=db, out=tmp_path / "datasets", max_rejected=0.1, **quiet)
    trips, rejects = expected_trips(paths)
    trips.sort(key=lambda trip: (trip[1], trip[0]))

    assert {reason for _, reason in TAXI_DIRT} | {"wrong_field_count"} <= set(rejects)
    assert summary.rejects == {reason: rejects[reason] for reason in ingest.taxi.REASONS}
    table = ingest.read_dataset(summary.parquet)
    assert table.column_names == ["id", "seq", "t", "duration", "distance", "speed", "fare", "tip", "date"]
    assert table.column("seq").to_pylist() == list(range(len(trips)))
    got = list(zip(*(table.column(name).to_pylist()
                     for name in ("id", "t", "duration", "distance", "speed", "fare", "tip"))))
    assert [trip[:2] for trip in got] == [trip[:2] for trip in trips]
    np.testing.assert_allclose([trip[2:] for trip in got], [trip[2:] for trip in trips], rtol=1e-12)
    assert set(table.column("date").to_pylist()) >= {"2019-01-01", "2019-02-01"}
    row = datasets_row(db, "taxi")
    assert (row["family"], row["rows_read"], row["t_unit"]) == ("taxi", 2 * TAXI_ROWS + len(TAXI_DIRT) + 1, "ms")
    assert row["features"] == ["duration", "distance", "speed", "fare", "tip"]
    assert summary.rejects["implausible_speed"] >= 1 and max(trip[4] for trip in got) <= ingest.taxi.MAX_SPEED_MPH
    assert row["rows_merged"] == summary.rows_merged == 0 and " merged " not in ingest.format_summary(summary)


def test_taxi_header_only_file_is_refused(spark, tmp_path):
    path = tmp_path / "yellow_tripdata_2019-03.csv"
    path.write_text(",".join(["vendor_id", *ingest.taxi.REQUIRED_COLUMNS, *ingest.taxi.AMOUNT_COLUMNS]) + "\n")
    with pytest.raises(InputError, match="no rows to ingest"):
        ingest.ingest(spark, "taxi", [path], db=tmp_path / "topk.duckdb", out=tmp_path, **quiet)
    assert not (tmp_path / "topk.duckdb").exists() and not (tmp_path / "taxi.parquet").exists()


# ---------------------------------------------------------------- worldcup

WORLDCUP_LINES = 3_000
NOTICE_SHA256 = "e137f8f15ce5363e6efa4ddd61bd1430c87c93b9d97db828eeaf6d85ff79f445"
"""Of the notice as distributed with the data (``sample_data/worldcup/HP_COPYRIGHT_NOTICE.txt``)."""
WORLDCUP_DIRT = ["abc,30/Apr/1998,22:00:05,/images/a.gif,200,10",
                 "7,31/Apr/1998,22:00:05,/images/a.gif,200,10",
                 "7,30/Apr/1998,22:00:05,/images/a.gif,200,many",
                 "7,30/Apr/1998,22:00:05"]


def worldcup_sample(directory: Path) -> tuple[Path, list[str]]:
    """The first WORLDCUP_LINES real requests (+ dirty ones), archived with the notice like the real sample."""
    with tarfile.open(SAMPLES / "worldcup" / "wc_day6_1_sample.tar.bz2") as archive:
        member = next(m for m in archive.getmembers() if m.isfile())
        lines = archive.extractfile(member).read().decode("latin-1").splitlines()[:WORLDCUP_LINES]
    lines += WORLDCUP_DIRT
    path = directory / "wc_sample.tar.bz2"
    with tarfile.open(path, "w:bz2") as archive:
        for name, data in (("wc_sample.csv", ("\n".join(lines) + "\n").encode("latin-1")),
                           ("HP_COPYRIGHT_NOTICE.txt", (SAMPLES / "worldcup" / "HP_COPYRIGHT_NOTICE.txt").read_bytes())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path, lines


def expected_chunks(lines, sections=worldcup.DEFAULT_SECTIONS, delta_t_ms=5_000):
    """{(t, stream, client): bytes} of the valid requests."""
    chunks = defaultdict(float)
    for line in lines:
        fields = line.split(",")
        if len(fields) < 6 or not fields[0].isdigit() or not (fields[-1] == "-" or fields[-1].isdigit()):
            continue
        try:
            when = dt.datetime.strptime(f"{fields[1]} {fields[2]}", "%d/%b/%Y %H:%M:%S").replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue
        section = ",".join(fields[3:-2]).lstrip("/").split("/")[0].split("?")[0]
        stream = sections.index(section) if section in sections else len(sections)
        ms = int(when.timestamp() * 1000)
        chunks[(ms // delta_t_ms * delta_t_ms, stream, int(fields[0]))] += 0 if fields[-1] == "-" else int(fields[-1])
    return chunks


def test_worldcup_ingest_is_an_attribute_stream_of_bytes_per_chunk(spark, tmp_path):
    path, lines = worldcup_sample(tmp_path)
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "worldcup", [path], db=db, out=tmp_path / "datasets", **quiet)

    chunks = expected_chunks(lines)
    scale = max(chunks.values())
    assert summary.rejects == {"wrong_field_count": 1, "bad_client": 1, "bad_time": 1, "bad_size": 1,
                               "before_dataset_end": 0}
    table = ingest.read_dataset(summary.parquet)
    assert table.column_names == ["id", "seq", "t", "stream", "value", "date"]
    assert table.column("seq").to_pylist() == list(range(len(chunks)))
    expected = sorted((t, stream, client, data / scale) for (t, stream, client), data in chunks.items())
    got = list(zip(*(table.column(name).to_pylist() for name in ("t", "stream", "id", "value"))))
    assert [chunk[:3] for chunk in got] == [chunk[:3] for chunk in expected]
    np.testing.assert_allclose([chunk[3] for chunk in got], [chunk[3] for chunk in expected], rtol=1e-12)
    assert max(table.column("value").to_pylist()) == 1.0
    row = datasets_row(db, "worldcup")
    assert row["features"] == ["images", "english", "french", "other"]
    assert row["params"] == {"sections": ["images", "english", "french"], "delta_t_ms": 5_000, "bytes_scale": scale}
    assert (row["family"], row["rows_read"], row["rows_rejected"]) == ("worldcup", len(lines), len(WORLDCUP_DIRT))
    merged = len(lines) - len(WORLDCUP_DIRT) - len(chunks)  # valid requests that share a client, section and chunk
    assert merged > 0 and row["rows_merged"] == summary.rows_merged == merged
    assert f"{merged:,} merged into one tuple per client, section and 5 s chunk, {len(chunks):,} written" \
        in ingest.format_summary(summary)


def test_worldcup_append_of_a_later_log_keeps_returning_clients(spark, tmp_path):
    """Clients (the ids of an attribute stream) come back in every log: an appended later log
    adds their new chunks, as one ingest of both logs would (with the first log's byte scale)."""
    _, lines = worldcup_sample(tmp_path)
    lines = lines[:WORLDCUP_LINES]
    chunks = expected_chunks(lines)
    split = sorted({t for t, _, _ in chunks})[len({t for t, _, _ in chunks}) // 2]  # a chunk start: no chunk spans it

    def chunk_of(line):
        when = dt.datetime.strptime(" ".join(line.split(",")[1:3]), "%d/%b/%Y %H:%M:%S")
        return int(when.replace(tzinfo=dt.timezone.utc).timestamp() * 1000) // 5_000 * 5_000

    earlier, later = tmp_path / "wc_earlier.csv", tmp_path / "wc_later.csv"
    earlier.write_text("\n".join(line for line in lines if chunk_of(line) < split) + "\n", encoding="latin-1")
    later.write_text("\n".join(line for line in lines if chunk_of(line) >= split) + "\n", encoding="latin-1")
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    ingest.ingest(spark, "worldcup", [earlier], db=db, out=out, **quiet)
    summary = ingest.ingest(spark, "worldcup", [later], db=db, out=out, append=True, **quiet)

    scale = max(value for (t, _, _), value in chunks.items() if t < split)
    assert {client for t, _, client in chunks if t < split} & {client for t, _, client in chunks if t >= split}
    table = ingest.read_dataset(summary.parquet)
    expected = sorted((t, stream, client, min(data / scale, 1.0)) for (t, stream, client), data in chunks.items())
    got = list(zip(*(table.column(name).to_pylist() for name in ("t", "stream", "id", "value"))))
    assert [chunk[:3] for chunk in got] == [chunk[:3] for chunk in expected]
    np.testing.assert_allclose([chunk[3] for chunk in got], [chunk[3] for chunk in expected], rtol=1e-12)
    assert table.column("seq").to_pylist() == list(range(len(chunks)))


def test_worldcup_sections_and_chunk_length_are_options(spark, tmp_path):
    path, lines = worldcup_sample(tmp_path)
    summary = ingest.ingest(spark, "worldcup", [path], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                            options={"sections": "english,images", "delta_t_ms": 60_000}, **quiet)
    chunks = expected_chunks(lines, sections=("english", "images"), delta_t_ms=60_000)
    table = ingest.read_dataset(summary.parquet)
    got = Counter(table.column("stream").to_pylist())
    assert got == Counter(stream for _, stream, _ in chunks)


def test_worldcup_sample_travels_with_its_unmodified_notice():
    notice = (SAMPLES / "worldcup" / "HP_COPYRIGHT_NOTICE.txt").read_bytes()
    assert hashlib.sha256(notice).hexdigest() == NOTICE_SHA256


# ---------------------------------------------------------------- csv

CSV_LINES = [
    "when,who,speed,load,comment",
    "30,3,1.5,2,a",
    "10,1,0.5,1,b",
    "20,2,2.5,3,c",
    "20,4,x,3,d",        # non_numeric
    "25,5.5,1,1,e",      # non_integer
    "40,2,9,9,f",        # duplicate_id (2 came first)
    "50,6,1,1",          # wrong_field_count
    "45,7,-1,0.25,g",
]


def test_csv_ingest_uses_the_named_columns(spark, tmp_path):
    path = tmp_path / "my_stream.csv.gz"
    path.write_bytes(gzip.compress(("\n".join(CSV_LINES) + "\n").encode()))
    db = tmp_path / "topk.duckdb"
    options = {"id_column": "who", "time_column": "when", "feature_columns": "speed,load"}
    summary = ingest.ingest(spark, "csv", [path], db=db, out=tmp_path / "datasets", max_rejected=1.0,
                            options=options, **quiet)

    assert summary.name == "my_stream"
    assert summary.rejects == {"wrong_field_count": 1, "non_numeric": 1, "non_integer": 1, "duplicate_id": 1,
                               "before_dataset_end": 0}
    table = ingest.read_dataset(summary.parquet)
    assert table.to_pylist() == [
        {"id": 1, "seq": 0, "t": 10, "speed": 0.5, "load": 1.0},
        {"id": 2, "seq": 1, "t": 20, "speed": 2.5, "load": 3.0},
        {"id": 3, "seq": 2, "t": 30, "speed": 1.5, "load": 2.0},
        {"id": 7, "seq": 3, "t": 45, "speed": -1.0, "load": 0.25},
    ]
    with pytest.raises(InputError, match="no column nope"):
        ingest.extract("csv", [path], db=db, out=tmp_path / "datasets", options={**options, "feature_columns": "speed,nope"},
                       **quiet)
    exported = tmp_path / "exported.csv"  # a spreadsheet's UTF-8 export starts with a byte order mark
    exported.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(CSV_LINES).encode())
    assert ingest.ingest(spark, "csv", [exported], db=db, out=tmp_path / "datasets", max_rejected=1.0,
                         options=options, **quiet).rejects == summary.rejects
    with pytest.raises(InputError, match="--id-column"):
        ingest.extract("csv", [path], db=db, out=tmp_path / "datasets",
                       options={"time_column": "when", "feature_columns": "speed"}, **quiet)


QUOTED_LINES = [  # R's write.csv and spreadsheets quote names and text; a text field may hold commas and lines
    '"when","who","speed","load","comment"',
    '30,3,"1.5",2,"a, with a comma"',
    '10,1,0.5,1,"b ""quoted"""',
    '20,2,2.5,3,"c spans',
    'two lines"',
    '20,4,x,3,"d"',       # non_numeric
    '25,5.5,1,1,e',       # non_integer
    '40,2,9,9,"f"',       # duplicate_id
    '50,6,1,1',           # wrong_field_count
    '45,7,-1,0.25,"g"',
    '60,8,1,1,"h, never closed',  # a stray quote: this line is split on commas (6 fields)
    '70,9,2,2,i',         # read on its own after the stray quote
]


def test_csv_ingest_reads_quoted_fields_as_the_engine_does(spark, tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text("\n".join(QUOTED_LINES) + "\n")
    db = tmp_path / "topk.duckdb"
    options = {"id_column": "who", "time_column": "when", "feature_columns": "speed,load"}
    summary = ingest.ingest(spark, "csv", [path], db=db, out=tmp_path / "datasets", max_rejected=1.0,
                            options=options, **quiet)

    assert summary.rejects == {"wrong_field_count": 2, "non_numeric": 1, "non_integer": 1, "duplicate_id": 1,
                               "before_dataset_end": 0}
    rows = ingest.read_dataset(summary.parquet).to_pylist()
    assert [(row["id"], row["t"], row["speed"], row["load"]) for row in rows] == [
        (1, 10, 0.5, 1.0), (2, 20, 2.5, 3.0), (3, 30, 1.5, 2.0), (7, 45, -1.0, 0.25), (9, 70, 2.0, 2.0)]
    with duckdb.connect(str(db)) as con:
        rejected = con.execute("SELECT line, reason, raw FROM rejected_rows ORDER BY line").fetchall()
    assert [(line, reason) for line, reason, _ in rejected] == [
        (6, "non_numeric"), (7, "non_integer"), (8, "duplicate_id"), (9, "wrong_field_count"),
        (11, "wrong_field_count")]
    assert rejected[-1][2] == QUOTED_LINES[10]

    closed = tmp_path / "closed.csv"  # every row full and every quote closed: the engine's CLI reads it too
    closed.write_text("\n".join(QUOTED_LINES[:8] + [QUOTED_LINES[9]]) + "\n")
    table = cli.read_csv(str(closed))
    assert table.header == ["when", "who", "speed", "load", "comment"]
    assert list(table.numbers) == [2, 3, 4, 6, 7, 8, 9]
    assert table.columns["comment"][:3] == ("a, with a comma", 'b "quoted"', "c spans\ntwo lines")
    kept = ingest.ingest(spark, "csv", [closed], db=db, out=tmp_path / "datasets", max_rejected=1.0,
                         options=options, **quiet)
    first_of = {}
    for who, when, speed, load in zip(*(table.columns[name] for name in ("who", "when", "speed", "load"))):
        first_of.setdefault(who, (when, speed, load))
    assert [(row["t"], row["speed"], row["load"]) for row in ingest.read_dataset(kept.parquet).to_pylist()] == \
        sorted((int(when), float(speed), float(load)) for when, speed, load in map(first_of.get, ("1", "2", "3", "7")))


WIDE_LINES = [  # ids past 2**53 (a double's 53 bits would merge the first two), times over the whole int64 range
    "id,t,x",
    "9007199254740993,-9000000000000000000,1",
    "9007199254740992,9000000000000000000,2",
    "9223372036854775807,0,3",
    "-9223372036854775808,1700000000000000001,4",
    "12.0,1700000000000000000,5",         # an integral number is an integer
    "9223372036854775808,5,6",            # non_integer: past int64
    "1e19,6,7",                           # non_integer: past int64, written as a float
    "7.5,7,8",                            # non_integer
    "9007199254740993,8,9",               # duplicate_id of the first row, not of the second
]


def test_csv_ingest_keeps_64_bit_ids_and_times_exactly(spark, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("\n".join(WIDE_LINES) + "\n")
    summary = ingest.ingest(spark, "csv", [path], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                            max_rejected=1.0, options={"id_column": "id", "time_column": "t", "feature_columns": "x"},
                            **quiet)

    assert summary.rejects == {"wrong_field_count": 0, "non_numeric": 0, "non_integer": 3, "duplicate_id": 1,
                               "before_dataset_end": 0}
    kept = [line.split(",") for line in WIDE_LINES[1:6]]
    expected = sorted((int(t), int(float(i)) if "." in i else int(i), float(x)) for i, t, x in kept)
    assert [(row["t"], row["id"], row["x"]) for row in ingest.read_dataset(summary.parquet).to_pylist()] == expected
    assert ingest.read_dataset(summary.parquet).column("seq").to_pylist() == [0, 1, 2, 3, 4]


def test_csv_blank_lines_are_no_rows_as_for_the_engine(spark, tmp_path):
    path = tmp_path / "gaps.csv"  # a blank line between rows and one more at the end, as editors leave them
    path.write_text("id,t,x\n1,10,0.5\n\n2,20,1.5\n3,30,2.5\n\n")
    summary = ingest.ingest(spark, "csv", [path], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                            options={"id_column": "id", "time_column": "t", "feature_columns": "x"}, **quiet)

    table = cli.read_csv(str(path))
    assert (summary.rows_read, summary.rows_rejected) == (3, 0)
    assert [(row["id"], row["t"], row["x"]) for row in ingest.read_dataset(summary.parquet).to_pylist()] == [
        (int(i), int(t), float(x)) for i, t, x in zip(*(table.columns[name] for name in ("id", "t", "x")))]


# ---------------------------------------------------------------- synthetic

def test_synthetic_object_and_attribute_streams_and_append(spark, tmp_path):
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    first = ingest.ingest(spark, "synthetic:anti-correlated", db=db, out=out,
                          options={"rows": 300, "dims": 3, "seed": 4}, **quiet)
    table = ingest.read_dataset(first.parquet)
    ids, t, x = generators.anti_correlated(300, d=3, seed=4)
    assert table.column_names == ["id", "seq", "t", "x_0", "x_1", "x_2"]
    assert np.array_equal(np.column_stack([table.column(f"x_{i}").to_numpy() for i in range(3)]), x)
    assert table.column("id").to_pylist() == ids.tolist() == table.column("seq").to_pylist()

    more = ingest.ingest(spark, "synthetic:anti-correlated", db=db, out=out, append=True, options={"rows": 100},
                         **quiet)
    table = ingest.read_dataset(more.parquet)
    assert (more.rows_written, more.rows_total) == (100, 400)
    assert table.column("seq").to_pylist() == list(range(400)) == table.column("t").to_pylist()
    assert len(set(table.column("id").to_pylist())) == 400
    assert datasets_row(db, "anti-correlated")["params"]["seed"] == 5

    attribute = ingest.ingest(spark, "synthetic:correlated-streams", db=db, out=out,
                              options={"rows": 200, "dims": 2}, **quiet)
    table = ingest.read_dataset(attribute.parquet)
    ids, stream, value, t = generators.correlated_streams(200, streams=2, seed=0)
    assert table.column_names == ["id", "seq", "t", "stream", "value"]
    assert table.column("id").to_pylist() == ids.tolist()
    assert table.column("stream").to_pylist() == stream.tolist()
    assert datasets_row(db, "correlated-streams")["features"] == ["s_0", "s_1"]
    with pytest.raises(InputError, match="unknown trace family 'synthetic:nope'"):
        ingest.extract("synthetic:nope", db=db, **quiet)


@pytest.mark.parametrize("options, message", [
    ({"rows": 0}, "--rows must be positive, got 0"),
    ({"rows": -5}, "--rows must be positive, got -5"),
    ({"dims": 0}, "--dims must be positive, got 0"),
    ({"dims": 100_000}, "--dims must be at most 100: each is a Spark column; got 100000"),
    ({"seed": -1}, "--seed must be >= 0, got -1"),
])
def test_synthetic_options_are_checked_before_generating(options, message):
    with pytest.raises(InputError, match=message):
        synthetic.settings({"generator": "time-u", **options}, None)


@pytest.mark.parametrize("family, options, name, message", [
    ("synthetic:time-u", {"rows": 5}, "../../etc", "dataset name '../../etc': use letters, digits"),
    ("synthetic:time-u", {"rows": 5}, "a b;c", "dataset name 'a b;c'"),
    ("synthetic:time-u", {"rows": 5}, ".hidden", "dataset name '.hidden'"),
    ("worldcup", {"delta_t_ms": 0}, None, "--delta-t-ms must be positive, got 0"),
    ("csv", {"id_column": "who", "time_column": "when", "feature_columns": "speed", "time_unit": "weeks"}, None,
     "--time-unit must be one of ordinal, ms, s, min, h, d, got 'weeks'"),
])
def test_bad_names_and_options_are_refused_before_spark(tmp_path, family, options, name, message):
    inputs = []
    if family == "csv":
        inputs = [tmp_path / "my stream (2).csv"]
        inputs[0].write_text("\n".join(CSV_LINES) + "\n")
    with pytest.raises(InputError, match=re.escape(message)):
        ingest.extract(family, inputs, db=tmp_path / "topk.duckdb", out=tmp_path / "datasets", name=name,
                       options=options, **quiet)


@pytest.mark.parametrize("header, features, message", [
    ("when,who,speed,SEQ", "speed,SEQ", "feature column(s) SEQ: a dataset's features must not be named id, seq, t "
                                        "(its own columns)"),
    ("when,who,id,speed", "id,speed", "feature column(s) id: "),
    ("when,who,speed,Speed", "speed,Speed", "feature column(s) speed, Speed: "),
    ("when,who,stream,value", "value,stream", "feature column(s) stream, value: "),  # read as an attribute stream
])
def test_csv_features_named_like_the_datasets_own_columns_are_refused(spark, tmp_path, header, features, message):
    path = tmp_path / "sensors.csv"
    path.write_text(f"{header}\n10,1,2,3\n20,2,4,1\n")
    db = tmp_path / "topk.duckdb"
    with pytest.raises(InputError, match=re.escape(message)):
        ingest.ingest(spark, "csv", [path], db=db, out=tmp_path / "datasets",
                      options={"id_column": "who", "time_column": "when", "feature_columns": features}, **quiet)
    assert not db.exists() and not (tmp_path / "datasets").exists()


def test_a_trade_file_named_for_a_day_that_does_not_exist_is_refused_before_spark(tmp_path):
    for name in ("spy_20130230_trade.zip", "spy_00000000_trade.zip"):
        with zipfile.ZipFile(tmp_path / name, "w") as archive:  # Spark's to_date failed on it, a Java traceback
            archive.writestr("trades.csv", "34200000,1670000,100,P,20002000,0\n")
        with pytest.raises(InputError, match=re.escape(f"{name[4:12]} in the file name is not a date (yyyymmdd)")):
            ingest.extract("stock", [tmp_path / name], db=tmp_path / "topk.duckdb", out=tmp_path, **quiet)


def test_a_trade_whose_notional_overflows_is_rejected_as_non_numeric(spark, tmp_path):
    lines = ["34200000,1670000,100,P,20002000,0", "34201000,1e300,1e300,P,20002000,0",
             "34202000,1e300,1,P,20002000,0"]
    path = tmp_path / "spy_20131007_trade.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("trades.csv", "\n".join(lines) + "\n")
    summary = ingest.ingest(spark, "stock", [path], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                            max_rejected=1.0, **quiet)

    assert summary.rejects["non_numeric"] == 1
    table = ingest.read_dataset(summary.parquet)
    assert table.column("price").to_pylist() == [167.0, 1e300 / 10_000]
    assert np.isfinite(np.column_stack([table.column(name).to_numpy() for name in ("notional", "price", "size")])).all()


def test_csv_append_with_another_time_unit_is_refused():
    dataset = {"id_column": "who", "time_column": "when", "features": ["speed"], "t_unit": "ordinal"}
    options = {"id_column": "who", "time_column": "when", "feature_columns": "speed"}
    assert csvfile.settings(options, dataset) == dataset
    assert csvfile.settings({**options, "time_unit": "ordinal"}, dataset) == dataset
    with pytest.raises(InputError, match="the dataset was ingested with t_unit=ordinal"):
        csvfile.settings({**options, "time_unit": "ms"}, dataset)


def test_a_csv_header_naming_a_chosen_column_twice_is_refused_as_the_engine_refuses_it(tmp_path):
    """``id,t,x,x`` took the first ``x`` and dropped the second without a word; ``python -m
    engine run`` refuses that header. A column not chosen may repeat: it is not read."""
    options = {"id_column": "id", "time_column": "t", "feature_columns": "x"}
    path = tmp_path / "twice.csv"
    path.write_text("id,t,x,note, x \n1,1,1,a,2\n")
    with pytest.raises(InputError, match=re.escape(f"{path}: column x appears twice in the header")):
        csvfile.extract([path], options)
    path.write_text("id,t,x,note,note\n1,1,1,a,b\n")
    assert csvfile.extract([path], options).table.num_rows == 1


def test_a_csv_file_name_becomes_a_safe_dataset_name():
    assert csvfile.default_name([Path("/data/my trips (2).csv.gz")]) == "my-trips--2-"
    assert csvfile.default_name([Path("/data/.csv")]) == "csv"


DAILY_FEED = {"id_column": "id", "time_column": "t", "feature_columns": "x"}


def daily_feed_after_monday(spark, tmp_path: Path):
    """Two days of a feed writing ``latest.csv`` (in ``mon/`` and ``tue/``), and the dataset
    ``feed`` ingested from Monday's: ``(monday, tuesday, db, out, options)``."""
    monday, tuesday = tmp_path / "mon" / "latest.csv", tmp_path / "tue" / "latest.csv"
    for path, first in ((monday, 1), (tuesday, 3)):
        path.parent.mkdir()
        path.write_text(f"id,t,x\n{first},{10 * first},0.5\n{first + 1},{10 * first + 5},0.25\n")
    db, out = tmp_path / "topk.duckdb", tmp_path / "datasets"
    ingest.ingest(spark, "csv", [monday], db=db, out=out, name="feed", options=DAILY_FEED, **quiet)
    return monday, tuesday, db, out, DAILY_FEED


def test_csv_append_of_a_daily_feed_reusing_one_file_name(spark, tmp_path):
    """An append is refused for a file whose content is already in the dataset, whatever its name,
    and taken for a new file of a name already ingested (a feed writing ``latest.csv`` every day)."""
    monday, tuesday, db, out, options = daily_feed_after_monday(spark, tmp_path)
    summary = ingest.ingest(spark, "csv", [tuesday], db=db, out=out, name="feed", append=True, options=options,
                            **quiet)
    assert [row["id"] for row in ingest.read_dataset(summary.parquet).to_pylist()] == [1, 2, 3, 4]

    copy = tmp_path / "copy_of_tuesday.csv"
    copy.write_bytes(tuesday.read_bytes())
    with pytest.raises(InputError, match=rf"already in dataset 'feed': {copy} \(its content is {tuesday}'s"):
        ingest.ingest(spark, "csv", [copy], db=db, out=out, name="feed", append=True, options=options, **quiet)
    with pytest.raises(InputError, match=f"{copy}: the same content as {tuesday}, given twice"):
        ingest.ingest(spark, "csv", [tuesday, copy], db=db, out=out, name="again", options=options, **quiet)
    with duckdb.connect(str(db)) as con:
        sources, digests = con.execute(
            "SELECT source_files, source_digests FROM datasets WHERE name = 'feed'").fetchone()
    assert json.loads(sources) == [str(monday), str(tuesday)]
    assert json.loads(digests) == [ingest.file_digest(monday), ingest.file_digest(tuesday)]
    assert summary.rows_total == 4


def test_a_csv_that_grows_while_it_is_read_is_refused(tmp_path, monkeypatch):
    """A feed still writing its file: the rows were read from one content and the digest taken
    of a longer one, so a later --append of the complete file was refused as already ingested
    and its last rows were never read."""
    feed = tmp_path / "latest.csv"
    feed.write_text("id,t,x\n1,0,0.5\n")
    csv_family = ingest.FAMILIES["csv"]

    def read_then_the_feed_writes_on(paths, options, existing):
        raw = csv_family.extract(paths, options, existing)
        with open(feed, "a") as handle:
            handle.write("2,1,0.25\n")
        return raw

    monkeypatch.setitem(ingest.FAMILIES, "csv", dataclasses.replace(csv_family, extract=read_then_the_feed_writes_on))
    with pytest.raises(InputError, match=re.escape(f"{feed}: changed while it was read; ingest it once it is complete")):
        ingest.extract("csv", [feed], db=tmp_path / "topk.duckdb", out=tmp_path / "datasets",
                       options={"id_column": "id", "time_column": "t", "feature_columns": "x"}, **quiet)


def test_csv_append_with_other_columns_names_the_flags_to_leave_out():
    dataset = {"id_column": "who", "time_column": "when", "features": ["speed", "load"], "t_unit": "ms"}
    options = {"id_column": "id", "time_column": "when", "feature_columns": "speed", "time_unit": "s"}
    with pytest.raises(InputError) as refused:
        csvfile.settings(options, dataset)
    assert str(refused.value) == ("the dataset was ingested with id_column=who, features=speed,load, t_unit=ms, "
                                  "not --id-column id, --feature-columns speed, --time-unit s: --append keeps the "
                                  "dataset's columns and time unit (leave the flag out, or ingest a new dataset under "
                                  "another --name)")


def test_csv_append_to_a_dataset_recorded_before_digests_recognises_its_files_by_name(spark, tmp_path):
    monday, tuesday, db, out, options = daily_feed_after_monday(spark, tmp_path)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE datasets SET source_digests = NULL WHERE name = 'feed'")
    with pytest.raises(InputError, match=f"^already in dataset 'feed': {tuesday}$"):
        ingest.ingest(spark, "csv", [tuesday], db=db, out=out, name="feed", append=True, options=options, **quiet)
