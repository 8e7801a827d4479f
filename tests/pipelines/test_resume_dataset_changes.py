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
