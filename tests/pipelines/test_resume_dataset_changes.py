"""``--resume`` over a dataset that changed since the snapshots: a changed row inside the
snapshots' window is refused even when it is in no stored answer; rows appended after it are not."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import replay, store
from pipelines.errors import InputError

ROWS = 300
quiet = dict(log=lambda _: None)


def write_dataset(path, x):
    rows = len(x)
    pq.write_table(pa.table({"id": np.arange(rows) + 1_000, "seq": np.arange(rows), "t": np.arange(rows) * 2,
                             "x": np.asarray(x, np.float64)}), path)


@pytest.mark.parametrize("kind, window, slide", [("count", 40, 10), ("time", 80, 20)])
def test_resume_refuses_a_row_changed_inside_the_snapshots_window(spark, tmp_path, kind, window, slide):
    """x rises with seq, so the top 2 are always the two newest rows: the row changed (seq 285,
    inside the last complete window of either kind: seq 260-299, t 500-579) is in no stored answer."""
    db, data, config = tmp_path / "topk.duckdb", tmp_path / "rising.parquet", tmp_path / "rising.json"
    x = np.arange(ROWS, dtype=np.float64)
    write_dataset(data, x)
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "rising", "family": "test", "features": ["x"], "parquet": str(data)})
    config.write_text(json.dumps({"dataset": "rising", "shards": 2,
                                  "algorithms": [{"name": "oracle"}, {"name": "mintopk"}],
                                  "queries": [{"weights": [1.0], "k": 2, "window": window, "slide": slide,
                                               "kind": kind}]}))
    replay.replay(spark, config, db=db, run_id="rising-run", **quiet)

    longer = np.arange(ROWS + 50, dtype=np.float64)  # the same rows, and more after them: a plain append
    write_dataset(data, longer)
    assert replay.prepare(config, db=db, resume=True, run_id="rising-run").progress[0].remaining > 0

    longer[ROWS - 15] = -1.0  # ingested again with one row corrected, inside the window, never in an answer
    write_dataset(data, longer)
    with pytest.raises(InputError, match=r"the window of query 0 at slide \d+ \(shard \d\) holds other rows than "
                                         "the reference's snapshot"):
        replay.prepare(config, db=db, resume=True, run_id="rising-run")


def test_resume_refuses_a_row_moved_in_time_inside_a_time_window(spark, tmp_path):
    """Row seq 285 (t 570, inside the last complete window, t 500-579) moves to t 571: the same
    seq, id and score, still in time order, but it now expires later than the snapshot has it."""
    db, data, config = tmp_path / "topk.duckdb", tmp_path / "rising.parquet", tmp_path / "rising.json"
    write_dataset(data, np.arange(ROWS, dtype=np.float64))
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "rising", "family": "test", "features": ["x"], "parquet": str(data)})
    config.write_text(json.dumps({"dataset": "rising", "algorithms": [{"name": "oracle"}],
                                  "queries": [{"weights": [1.0], "k": 2, "window": 80, "slide": 20, "kind": "time"}]}))
    replay.replay(spark, config, db=db, run_id="moved-run", **quiet)

    table = pq.read_table(data)
    t = table.column("t").to_numpy().copy()
    t[ROWS - 15] += 1
    pq.write_table(table.set_column(table.schema.get_field_index("t"), "t", pa.array(t)), data)
    with pytest.raises(InputError, match=r"the window of query 0 at slide \d+ \(shard 0\) holds other rows than "
                                         r"the reference's snapshot of it, from row seq 285 on"):
        replay.prepare(config, db=db, resume=True, run_id="moved-run")


ATTRIBUTE_ROWS = 200


def attribute_rows(rows: int) -> dict[str, np.ndarray]:
    """An attribute stream over 2 streams: 23 clients in turn, values in [0, 1], t = 2 seq."""
    seq = np.arange(rows)
    return {"id": seq % 23 + 500, "seq": seq, "t": seq * 2, "stream": seq % 2, "value": (seq * 37 % 101) / 100.0}


def write_attribute_dataset(path, columns: dict[str, np.ndarray]) -> None:
    pq.write_table(pa.table({name: np.asarray(values) for name, values in columns.items()}), path)


def edited(columns: dict[str, np.ndarray], edit: str, seq: int) -> dict[str, np.ndarray]:
    """The rows with row ``seq`` edited in place, removed or preceded by an inserted copy (``seq`` renumbered)."""
    columns = {name: values.copy() for name, values in columns.items()}
    if edit == "value":
        columns["value"][seq] = 1.0 - columns["value"][seq]
    elif edit == "id":
        columns["id"][seq] = 9_999
    elif edit == "stream":
        columns["stream"][seq] = 1 - columns["stream"][seq]
    elif edit == "t":
        columns["t"][seq] += 1
    else:
        position = [seq] if edit == "removed" else []
        columns = {name: np.delete(values, position) if edit == "removed" else np.insert(values, seq, values[seq])
                   for name, values in columns.items()}
        columns["seq"] = np.arange(len(columns["seq"]))
    return columns


@pytest.mark.parametrize("kind, window, slide", [("count", 40, 10), ("time", 80, 20)])
def test_resume_refuses_an_attribute_stream_changed_inside_the_snapshots_window(spark, tmp_path, kind, window, slide):
    """The World Cup family's model (id, seq, t, stream, value), sharded by client: a row of the
    last complete window (row seq 185: count seq 160-199, time t 300-379) edited, moved, removed or inserted is refused;
    the same rows with more after them are continued."""
    db, data, config = tmp_path / "topk.duckdb", tmp_path / "clients.parquet", tmp_path / "clients.json"
    write_attribute_dataset(data, attribute_rows(ATTRIBUTE_ROWS))
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "clients", "family": "test", "features": ["a", "b"],
                                           "parquet": str(data)})
    config.write_text(json.dumps({"dataset": "clients", "shards": 2,
                                  "algorithms": [{"name": "oracle-incomplete"}, {"name": "sla"}],
                                  "queries": [{"weights": [1.0, 1.0], "k": 3, "window": window, "slide": slide,
                                               "kind": kind}]}))
    replay.replay(spark, config, db=db, run_id="clients-run", **quiet)

    longer = attribute_rows(ATTRIBUTE_ROWS + 30)
    write_attribute_dataset(data, longer)
    assert replay.prepare(config, db=db, resume=True, run_id="clients-run").progress[0].remaining > 0
    for edit in ("value", "id", "stream", "t", "removed", "inserted"):
        write_attribute_dataset(data, edited(longer, edit, ATTRIBUTE_ROWS - 15))
        with pytest.raises(InputError, match="dataset clients no longer holds the rows its snapshots were taken over"):
            replay.prepare(config, db=db, resume=True, run_id="clients-run")
