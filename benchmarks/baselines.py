"""What a user without this project would write: the baselines every figure is divided by.

* ``oracle`` (registered in the engine): a numpy ring buffer of the window and
  ``argpartition`` per slide, what a careful numpy user writes.
* :class:`DuckDBWindow` (here): the stream sits in an in-memory DuckDB table and every slide
  is answered by one SQL query, what a database user writes::

      SELECT id, seq, x0 * w0 + ... AS score FROM stream
      WHERE seq >= :end - :n AND seq < :end          -- t for time windows
      ORDER BY score DESC, seq DESC LIMIT :k

  The table is loaded once before timing (generous to DuckDB: the ingest is not charged to
  it; the loading time is reported as ``load_seconds``) and DuckDB runs on one thread, so
  its CPU time compares with the single-threaded engine.  Rows arrive in ``seq`` order, so
  DuckDB's zone maps skip the row groups outside the window.
* :class:`DuckDBAttributeWindow`: the same for attribute streams (incomplete-streams model):
  ``SUM(weight[stream] * value) GROUP BY id`` over the window's tuples.
"""

from __future__ import annotations

import time

import duckdb
import numpy as np
import pyarrow as pa

import engine


class DuckDBWindow:
    """Continuous top-k by one SQL query per slide on an in-memory DuckDB table.

    Same protocol as an engine algorithm for the harness: ``process(batch)``, ``topk()``,
    ``stats()``.  ``data`` is the whole stream ``(ids, t, x)``, loaded at construction.
    """

    name = "duckdb-sql"
    exact = True

    def __init__(self, query: engine.Query, data) -> None:
        ids, t, x = data
        x = np.asarray(x, dtype=np.float64).reshape(len(ids), -1)
        self.q = query
        start = time.process_time()
        self._con = duckdb.connect(":memory:", config={"threads": 1})
        columns = {"id": np.asarray(ids, np.int64), "seq": np.arange(len(ids), dtype=np.int64),
                   "t": np.asarray(t, np.int64)}
        columns.update({f"x{j}": x[:, j] for j in range(x.shape[1])})
        self._con.register("incoming", pa.table(columns))
        self._con.execute("CREATE TABLE stream AS SELECT * FROM incoming")
        self._con.unregister("incoming")
        self.load_seconds = time.process_time() - start
        score = " + ".join(f"x{j} * {float(w)!r}" for j, w in enumerate(query.weights))
        key = query.expiry_key
        self._sql = (f"SELECT id, seq, {score} AS score FROM stream WHERE {key} >= $lo AND {key} < $hi "
                     f"ORDER BY score DESC, seq DESC LIMIT {query.k}")
        self._end: int | None = None
        self._total = len(ids)

    def process(self, batch) -> None:
        self._end = batch.end

    def topk(self) -> engine.Answer:
        lo = self._end - self.q.window
        found = self._con.execute(self._sql, {"lo": lo, "hi": self._end}).fetchnumpy()
        return engine.Answer(np.asarray(found["id"], np.int64), np.asarray(found["score"], np.float64),
                             np.asarray(found["seq"], np.int64))

    def stats(self) -> dict:
        # The table holds the whole stream; the window is what the query reads.
        return {"candidates": self._window_rows(), "retained": self._total, "bytes": None, "measured_bytes": None}

    def _window_rows(self) -> int:
        if self._end is None:
            return 0
        key = self.q.expiry_key
        return int(self._con.execute(f"SELECT count(*) FROM stream WHERE {key} >= $lo AND {key} < $hi",
                                     {"lo": self._end - self.q.window, "hi": self._end}).fetchone()[0])

    _stats = stats


class DuckDBAttributeWindow(DuckDBWindow):
    """Incomplete streams in SQL: ``SUM(w[stream] * value)`` per object over the window."""

    name = "duckdb-sql"

    def __init__(self, query: engine.Query, data) -> None:
        ids, stream, value, t = data
        self.q = query
        start = time.process_time()
        self._con = duckdb.connect(":memory:", config={"threads": 1})
        self._con.register("incoming", pa.table({
            "id": np.asarray(ids, np.int64), "seq": np.arange(len(ids), dtype=np.int64),
            "stream": np.asarray(stream, np.int64), "value": np.asarray(value, np.float64),
            "t": np.asarray(t, np.int64)}))
        self._con.execute("CREATE TABLE stream AS SELECT * FROM incoming")
        self._con.unregister("incoming")
        self.load_seconds = time.process_time() - start
        weights = ", ".join(repr(float(w)) for w in query.weights)
        key = query.expiry_key
        self._sql = (f"SELECT id, max(seq) AS seq, sum(list_extract([{weights}], stream + 1) * value) AS score "
                     f"FROM stream WHERE {key} >= $lo AND {key} < $hi GROUP BY id "
                     f"ORDER BY score DESC, seq DESC LIMIT {query.k}")
        self._end = None
        self._total = len(ids)
