"""Data access for the dashboard: the DuckDB catalogue, Parquet traces and a built-in stream.

Everything that can be missing (the database file, a table, a Parquet file) raises
:class:`MissingData` with a message meant for the user, never a raw DuckDB error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import duckdb
import numpy as np
import pandas as pd
import streamlit as st

from app.units import shorten
from engine.generators import correlated_streams

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = "var/topk.duckdb"
SYNTHETIC = "synthetic: uniform"
SYNTHETIC_ATTRIBUTES = "synthetic: attribute streams"
BUILT_IN = (SYNTHETIC, SYNTHETIC_ATTRIBUTES)
BENCHMARKS = Path(os.environ.get("TOPK_BENCHMARKS") or ROOT / "benchmarks" / "results")
"""The folder of benchmark results (one CSV per benchmark) the Benchmarks page shows
(``$TOPK_BENCHMARKS`` overrides it)."""
BENCH_DB = Path(os.environ.get("TOPK_BENCH_DB") or ROOT / "var" / "bench.duckdb")
"""Every ``make bench`` run appended to the table ``bench_results`` (read when present)."""
PAPER_FIGURES = ROOT / "benchmarks" / "paper_figures.json"
"""The papers' own numbers, put beside ours."""
PROVENANCE = ("run_id", "when", "commit", "machine", "cores", "cpu_model", "python", "load_1m", "load_1m_end",
              "quick")
"""Columns every benchmark row carries about the run that made it."""
INGEST_HINT = "Run `make run` to ingest the sample traces and replay them."


class MissingData(Exception):
    """Something the page needs is not there yet; the message tells the user what to do."""


class DatabaseBusy(MissingData):
    """The database is there but another process (a pipeline writing) holds it for the moment."""


@dataclass(frozen=True, eq=False)
class Trace:
    """An object stream in arrival order, as the engine takes it.

    Attributes
    ----------
    name
        Dataset name (``SYNTHETIC`` for the built-in stream).
    ids, t
        int64 arrays: object ids and event times (non-decreasing).
    x
        ``(m, d)`` float64 feature matrix.
    features
        The ``d`` feature names.
    t_unit
        Unit of ``t`` (``"ordinal"``, ``"ms"``, ...).
    family
        The dataset family (``"stock"``, ...; ``"synthetic"`` for the built-in stream).
    stream
        ``"single"`` (objects with all features: ``x``) or ``"incomplete"`` (an attribute
        stream: one ``(id, stream, value, t)`` tuple per row; ``streams`` and ``values`` hold
        the stream numbers and values, ``x`` has no column, ``features`` name the streams).
    """

    name: str
    ids: np.ndarray
    t: np.ndarray
    x: np.ndarray
    features: tuple[str, ...]
    t_unit: str
    family: str = "synthetic"
    stream: str = "single"
    streams: np.ndarray | None = None
    values: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The input of :func:`engine.slides`: ``(ids, t, x)`` or ``(ids, stream, value, t)``."""
        if self.stream == "incomplete":
            return self.ids, self.streams, self.values, self.t
        return self.ids, self.t, self.x


def db_path(argv: Sequence[str] | None = None) -> Path:
    """The DuckDB file: ``--db PATH`` script argument, else ``$TOPK_DB``, else ``var/topk.duckdb``.

    Parameters
    ----------
    argv
        Script arguments (default ``sys.argv[1:]``; Streamlit passes those after ``--``).

    Examples
    --------
    >>> db_path(["--db", "/tmp/x.duckdb"])
    PosixPath('/tmp/x.duckdb')
    """
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--db")
    args, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    return Path(args.db or os.environ.get("TOPK_DB") or DEFAULT_DB)


def query(db: Path, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """Run ``sql`` on the database ``db`` through a short-lived read-only connection.

    The connection is not cached: DuckDB lets one process write a file only while no other
    process holds it open, and the pipelines (a scheduled ``replay --resume``) must be able to
    write while the dashboard is serving.

    Raises
    ------
    MissingData
        When the file does not exist, cannot be opened, or lacks a table the query reads.
    """
    if db.is_dir():
        raise MissingData(f"`{db}` is a folder, not a DuckDB database file: point `--db` or `TOPK_DB` at the "
                          f"database file (`make run` writes `{DEFAULT_DB}`).")
    if not db.is_file():
        raise MissingData(f"No database at `{db}` yet. {INGEST_HINT}")
    try:
        # No replacement scans: a missing table must not resolve to a Python variable of that name.
        with duckdb.connect(str(db), read_only=True, config={"python_enable_replacements": False}) as con:
            return con.execute(sql, list(params)).df()
    except duckdb.CatalogException as exc:  # a table is missing
        raise MissingData(f"The database `{db}` is not filled in yet ({exc.args[0].splitlines()[0]}). "
                          f"{INGEST_HINT}") from None
    except duckdb.BinderException as exc:  # a column is missing
        raise MissingData(f"The database `{db}` lacks a column the dashboard reads "
                          f"({exc.args[0].splitlines()[0]}): it was written by an older version of the pipelines. "
                          "Ingest and replay again into a new database file (`make run`), and point `--db` or "
                          "`TOPK_DB` at it.") from None
    except duckdb.IOException as exc:
        if "not a valid DuckDB database file" in str(exc):
            raise MissingData(f"`{db}` is not a DuckDB database (an empty or foreign file). Move it away and "
                              f"run `make run`, or point `--db` or `TOPK_DB` at the database it writes.") from None
        if "lock" in str(exc).lower():
            raise DatabaseBusy(f"The database `{db}` is held by another process for the moment (a pipeline "
                               f"writing to it): reload in a moment. ({' '.join(str(exc).split())})") from None
        raise MissingData(f"Cannot open the database `{db}`: {' '.join(str(exc).split())}") from None


def datasets(db: Path) -> pd.DataFrame:
    """The ``datasets`` table, one row per ingested trace, by name."""
    return query(db, "SELECT * FROM datasets ORDER BY name")


def dataset_choices(db: Path, shown: str | None = None) -> tuple[list[str], str | None]:
    """Every dataset a page can open: the ingested ones, then the built-in streams; and, when
    the database has none, why (a message naming the file and how to fill it).

    While another process holds the database (:class:`DatabaseBusy`), the dataset ``shown``
    (already loaded by the page) stays a choice, so that a pipeline writing for a moment does
    not replace the view with a built-in stream."""
    try:
        return datasets(db)["name"].tolist() + list(BUILT_IN), None
    except DatabaseBusy as busy:
        kept = [shown] if shown is not None and shown not in BUILT_IN else []
        return kept + list(BUILT_IN), str(busy) + (f" `{shown}` stays on screen as it was loaded." if kept else "")
    except MissingData as missing:
        return list(BUILT_IN), f"{missing} Meanwhile the built-in synthetic stream is available."


def first_with_rows(db: Path, names: Sequence[str]) -> str:
    """The first of ``names`` (:func:`dataset_choices`) that holds rows, the page's dataset when
    the address names none: an ingested dataset whose ``datasets`` row counts no rows (rows read
    less those rejected and merged) only when every other one is empty too."""
    try:
        frame = datasets(db)
    except MissingData:
        return names[0]
    if frame.empty or not {"rows_read", "rows_rejected"} <= set(frame.columns):
        return names[0]
    merged = frame["rows_merged"].fillna(0) if "rows_merged" in frame.columns else 0
    rows = frame["rows_read"] - frame["rows_rejected"] - merged
    empty = set(frame.loc[rows.notna() & (rows <= 0), "name"])
    return next((name for name in names if name not in empty), names[0])


REPEATED = "_repeated"
"""Key of :func:`open_session`'s pending parameters that holds :func:`repeated_params`' note."""


def repeated_params() -> str:
    """A note naming the URL parameters given more than once (the page takes the last), else ``""``."""
    counts = {key: len(st.query_params.get_all(key)) for key in st.query_params}
    return "; ".join(f"{shorten(key)} is given {count} times: the last ({shorten(st.query_params[key])}) is used"
                     for key, count in counts.items() if count > 1)


def no_rows(name: str) -> str:
    """What a page says on a dataset without rows."""
    return f"The dataset `{name}` holds no rows: there is no slide to show. Pick another dataset, or ingest rows into this one."


def follow_address(written: str, view: Sequence[str]) -> None:
    """Drop the page's ``view`` (its session keys) when the address is not the one the page last
    wrote (:func:`write_address` under ``written``): the user went Back or Forward, or another page
    linked here with parameters. The page then opens the address as it opens a link. An address
    without parameters (the page picked in the sidebar) leaves the view as it is."""
    ss = st.session_state
    address = {key: st.query_params[key] for key in st.query_params}
    if written in ss and address and address != ss[written]:
        for key in view:
            ss.pop(key, None)
        ss[written] = address


def write_address(params: dict[str, str], written: str) -> None:
    """Put the view's ``params`` in the address and remember them (under ``written``) as the page's own."""
    st.query_params.from_dict(params)
    st.session_state[written] = dict(params)


def open_session(names: Sequence[str], *, started: str, url: str, playing: str, dataset: str) -> dict[str, str]:
    """A page's session keys: on the session's first run the URL decides the view (its
    parameters are kept under ``url`` until the page applies them, playback starts paused);
    the dataset the URL names is chosen, and a chosen dataset that is gone is dropped.
    Returns the URL parameters still pending."""
    ss = st.session_state
    if started not in ss:
        ss[started] = True
        ss[url] = {key: st.query_params[key] for key in st.query_params}
        if repeated := repeated_params():
            ss[url][REPEATED] = repeated
        ss[playing] = False
    pending: dict[str, str] = ss.get(url) or {}
    if pending.get("ds") in names:
        ss[dataset] = pending["ds"]
    if dataset in ss and ss[dataset] not in names:
        del ss[dataset]
    return pending


def synthetic_uniform(rows: int = 20_000, dimensions: int = 3, seed: int = 7) -> Trace:
    """The built-in stream: features uniform in ``[0, 1)``, times with gaps and bursts.

    ``t`` grows by 0, 1 or 2 per row, so count and time windows both make sense.

    Examples
    --------
    >>> trace = synthetic_uniform(rows=5)
    >>> trace.x.shape, trace.features
    ((5, 3), ('x_0', 'x_1', 'x_2'))
    """
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.integers(0, 3, rows), dtype=np.int64)
    return Trace(SYNTHETIC, np.arange(rows, dtype=np.int64), t, rng.random((rows, dimensions)),
                 tuple(f"x_{j}" for j in range(dimensions)), "ordinal")


def synthetic_attributes(rows: int = 20_000, streams: int = 3, seed: int = 7) -> Trace:
    """The built-in attribute stream: correlated streams of the incomplete-streams paper (6.1.1).

    Examples
    --------
    >>> trace = synthetic_attributes(rows=50)
    >>> trace.stream, trace.features, len(trace.arrays)
    ('incomplete', ('stream_0', 'stream_1', 'stream_2'), 4)
    """
    ids, stream, value, t = correlated_streams(rows, streams=streams, seed=seed, reuse=0.5, memory=1000)
    return Trace(SYNTHETIC_ATTRIBUTES, ids, np.asarray(t, np.int64), np.empty((rows, 0)),
                 tuple(f"stream_{i}" for i in range(streams)), "ordinal", "synthetic", "incomplete",
                 np.asarray(stream, np.int64), np.asarray(value, np.float64))


def parquet_source(path: str) -> str:
    """What DuckDB reads for a dataset path: the file, or every part under a partitioned folder."""
    return f"{path.rstrip('/')}/**/*.parquet" if Path(path).is_dir() else path


@st.cache_data(show_spinner="Loading the trace…", max_entries=4)
def read_parquet(path: str, features: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The columns of a dataset (one Parquet file or a folder of partitioned parts) by ``seq``.

    Object datasets hold ``id, seq, t`` and one column per feature; attribute datasets
    ``id, seq, t, stream, value``. Partition columns (``date``, ``symbol``) are read too
    but not used. ``features`` (from the ``datasets`` row) picks the feature columns; without
    it, every column after ``t`` that is not a partition column.
    """
    try:
        with duckdb.connect() as con:
            relation = con.sql("SELECT * FROM read_parquet(?, hive_partitioning = true, union_by_name = true) "
                               "ORDER BY seq", params=[parquet_source(path)])
            names = relation.columns
            columns = relation.fetchnumpy()
    except duckdb.Error as exc:
        raise MissingData(f"The Parquet data `{path}` cannot be read ({' '.join(str(exc).split())}). "
                          f"{INGEST_HINT}") from None
    if not features:
        features = tuple(c for c in names[3:] if c not in ("date", "symbol", "stream", "value"))
    absent = [c for c in ("id", "t", *(() if "stream" in columns else features)) if c not in columns]
    if absent:
        raise MissingData(f"The Parquet data `{path}` lacks the column(s) {', '.join(absent)} that its dataset "
                          f"names (it holds {', '.join(names)}). {INGEST_HINT}")
    out = {"id": np.asarray(columns["id"], dtype=np.int64), "t": np.asarray(columns["t"], dtype=np.int64)}
    if "stream" in columns and "value" in columns:
        out["stream"] = np.asarray(columns["stream"], dtype=np.int64)
        out["value"] = np.asarray(columns["value"], dtype=np.float64)
    else:
        out["x"] = np.column_stack([np.asarray(columns[f], dtype=np.float64) for f in features])
    return out


def load_trace(db: Path, name: str) -> Trace:
    """The trace ``name``: a built-in stream, or an ingested dataset's Parquet file or folder."""
    if name == SYNTHETIC:
        return synthetic_uniform()
    if name == SYNTHETIC_ATTRIBUTES:
        return synthetic_attributes()
    found = query(db, "SELECT parquet, t_unit, family, features FROM datasets WHERE name = ?", [name])
    if found.empty:
        raise MissingData(f"Dataset `{name}` is not in `{db}`. {INGEST_HINT}")
    parquet, t_unit, family, features = found.iloc[0]
    if not Path(parquet).exists():
        raise MissingData(f"The Parquet file `{parquet}` of dataset `{name}` is missing. {INGEST_HINT}")
    features = tuple(json.loads(features)) if isinstance(features, str) else tuple(features or ())
    columns = read_parquet(str(parquet), features)
    if "stream" in columns:
        d = max(len(features), int(columns["stream"].max()) + 1 if len(columns["stream"]) else 0)
        names = features if len(features) == d else tuple(f"stream_{i}" for i in range(d))
        return Trace(name, columns["id"], columns["t"], np.empty((len(columns["id"]), 0)), names, str(t_unit),
                     str(family), "incomplete", columns["stream"], columns["value"])
    x = columns["x"]
    names = features if features and len(features) == x.shape[1] else tuple(f"x_{j}" for j in range(x.shape[1]))
    return Trace(name, columns["id"], columns["t"], x, names, str(t_unit), str(family))


def runs(db: Path) -> pd.DataFrame:
    """Pipeline runs, newest first, with the number of queries of each and why a run failed
    or was interrupted (``reason``; ``None`` in databases written before it was recorded)."""
    columns = query(db, "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'")
    reason = "r.reason" if "reason" in set(columns["column_name"]) else "NULL::VARCHAR AS reason"
    return query(db, f"""
        SELECT r.run_id, r.dataset, r.status, {reason}, r.started_at, r.finished_at, r.shards, r.spark_master,
               count(q.query_id) AS queries
        FROM runs r LEFT JOIN queries q USING (run_id)
        GROUP BY ALL ORDER BY r.started_at DESC NULLS LAST, r.run_id""")


def run_queries(db: Path, run_id: str) -> pd.DataFrame:
    """The queries of one run, with the algorithms that answered each."""
    return query(db, """
        SELECT q.query_id, q.weights, q.k, q."window", q.slide, q.kind,
               (SELECT list(DISTINCT a.algorithm ORDER BY a.algorithm) FROM slide_metrics a
                WHERE a.run_id = q.run_id AND a.query_id = q.query_id) AS algorithms
        FROM queries q WHERE q.run_id = ? ORDER BY q.query_id""", [run_id])


def slide_metrics(db: Path, run_id: str, query_id: int) -> pd.DataFrame:
    """Per-slide metrics of every algorithm of one query of a run, by slide.

    ``measured_bytes`` is ``NaN`` when the run's database predates that column.
    """
    frame = query(db, """
        SELECT * EXCLUDE (run_id, query_id) FROM slide_metrics
        WHERE run_id = ? AND query_id = ? ORDER BY slide, algorithm""", [run_id, query_id])
    if "measured_bytes" not in frame.columns:
        frame["measured_bytes"] = np.nan
    return frame


def dataset_info(db: Path, name: str) -> dict[str, Any]:
    """``features`` (list), ``family`` and ``t_unit`` of an ingested dataset (defaults when unknown)."""
    try:
        found = query(db, "SELECT features, family, t_unit FROM datasets WHERE name = ?", [name])
    except MissingData:
        found = pd.DataFrame()
    if found.empty:
        return {"features": [], "family": "", "t_unit": "ordinal"}
    row = found.iloc[0]
    features = json.loads(row.features) if isinstance(row.features, str) else list(row.features or [])
    return {"features": features, "family": str(row.family), "t_unit": str(row.t_unit)}


def snapshots(db: Path, run_id: str, query_id: int) -> pd.DataFrame:
    """The snapshots of one query of a run: slide, algorithm, shard, size, checksum, time."""
    return query(db, """
        SELECT slide, algorithm, shard, last_seq, strlen(CAST(state AS VARCHAR)) AS bytes,
               checksum, created_at
        FROM snapshots WHERE run_id = ? AND query_id = ? ORDER BY slide, algorithm, shard""",
                 [run_id, query_id])


def answers_csv(db: Path, run_id: str, query_id: int) -> str:
    """Every stored answer of one query of a run as CSV text (for download)."""
    return query(db, """
        SELECT algorithm, slide, "end", rank, object_id, score FROM answers
        WHERE run_id = ? AND query_id = ? ORDER BY slide, algorithm, rank""",
                 [run_id, query_id]).to_csv(index=False)


def answers_at(db: Path, run_id: str, query_id: int, slide: int) -> pd.DataFrame:
    """Every algorithm's ranked answer at one slide of a run."""
    return query(db, """
        SELECT algorithm, rank, object_id, score FROM answers
        WHERE run_id = ? AND query_id = ? AND slide = ? ORDER BY algorithm, rank""",
                 [run_id, query_id, slide])


def shown(path: Path) -> str:
    """``path`` relative to the project root when it lies inside it, for messages."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def demo_run(db: Path, demo: dict) -> str | None:
    """The latest run of ``make run``'s demo config (its name and dataset), else ``None``."""
    try:
        found = query(db, "SELECT run_id FROM runs WHERE dataset = ? AND json_extract_string(config, '$.name') = ? "
                          "ORDER BY started_at DESC NULLS LAST LIMIT 1", [demo.get("dataset"), demo.get("name")])
    except MissingData:
        return None
    return None if found.empty else str(found.iloc[0, 0])


def run_of_query(db: Path, dataset: str, weights: Sequence[float], k: int, window: int, slide: int,
                 kind: str) -> tuple[str, int] | None:
    """``(run_id, query_id)`` of the latest run that replayed this query over ``dataset``, else ``None``."""
    try:
        found = query(db, """
            SELECT q.run_id, q.query_id, q.weights FROM queries q JOIN runs r USING (run_id)
            WHERE r.dataset = ? AND q.k = ? AND q."window" = ? AND q.slide = ? AND q.kind = ?
            ORDER BY r.started_at DESC NULLS LAST""", [dataset, k, window, slide, kind])
    except MissingData:
        return None
    for row in found.itertuples():
        stored = json.loads(row.weights) if isinstance(row.weights, str) else list(row.weights)
        if len(stored) == len(weights) and np.allclose(np.asarray(stored, float), np.asarray(weights, float)):
            return str(row.run_id), int(row.query_id)
    return None


def end_times(trace: Trace, kind: str, ends: Sequence[int] | np.ndarray) -> np.ndarray:
    """Event time at which each slide ends: its boundary (time windows) or its last row's time.

    >>> trace = synthetic_uniform(rows=10)
    >>> end_times(trace, "count", [5, 10]).tolist() == [trace.t[4], trace.t[9]]
    True
    """
    ends = np.asarray(ends, dtype=np.int64)
    if kind == "time" or not len(trace):
        return ends
    return trace.t[np.clip(ends - 1, 0, len(trace) - 1)]


def benchmark_tables(folder: Path | None = None) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Every ``*.csv`` of the results folder by file stem, and a note per file that could not be read.

    Files are read as they are: any benchmark, any columns (the page shows what each has).

    Raises
    ------
    MissingData
        When the folder holds no readable CSV file.
    """
    folder = folder or BENCHMARKS
    tables: dict[str, pd.DataFrame] = {}
    problems: list[str] = []
    for path in sorted(folder.glob("*.csv")) if folder.is_dir() else []:
        try:
            frame = pd.read_csv(path)
        except (OSError, ValueError) as exc:
            problems.append(f"`{shown(path)}` could not be read ({str(exc).splitlines()[0]})")
            continue
        if frame.empty:
            problems.append(f"`{shown(path)}` holds no rows")
            continue
        tables[path.stem] = frame
    if not tables:
        raise MissingData(f"No benchmark results in `{shown(folder)}`" + (f" ({'; '.join(problems)})" if problems
                                                                          else "")
                          + ". The repository ships them; `make bench` writes them again.")
    return tables, problems


def bench_history(db: Path | None = None) -> pd.DataFrame:
    """One row per ``make bench`` run recorded in ``var/bench.duckdb`` (empty when there is none)."""
    db = db or BENCH_DB
    try:
        return query(db, """
            SELECT run_id, min(run_at) AS run_at, any_value(git_commit) AS "commit", any_value(machine) AS machine,
                   any_value(cores) AS cores, max(load_1m) AS load_1m, bool_or(quick) AS quick,
                   count(*) AS "rows", string_agg(DISTINCT bench, ', ' ORDER BY bench) AS benchmarks
            FROM bench_results GROUP BY run_id ORDER BY run_at DESC""")
    except MissingData:
        return pd.DataFrame()
    except duckdb.Error:
        return pd.DataFrame()


def paper_figures(path: Path | None = None) -> dict[str, Any]:
    """The papers' figures (``papers``: per paper its ``title``, ``claims`` and tables); ``{}`` if unreadable."""
    try:
        loaded = json.loads((path or PAPER_FIGURES).read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def provenance(frame: pd.DataFrame) -> pd.DataFrame:
    """The distinct runs behind ``frame``'s rows: run, when, commit, machine, load (what is recorded)."""
    columns = [c for c in PROVENANCE if c in frame.columns]
    if not columns:
        return pd.DataFrame()
    keys = [c for c in ("run_id", "when", "commit") if c in columns] or columns[:1]
    return frame[columns].drop_duplicates(subset=keys).reset_index(drop=True)


def ingest_counts(db: Path, name: str) -> str:
    """What the ingest of a dataset did, in words: rows read, rejected by reason, merged; ``""`` if unknown."""
    try:
        found = query(db, "SELECT * FROM datasets WHERE name = ?", [name])
    except MissingData:
        return ""
    if found.empty:
        return ""
    row = found.iloc[0].to_dict()
    if pd.isna(row.get("rows_read")) or pd.isna(row.get("rows_rejected")):  # a dataset row of an older layout
        return ""
    rejects = json.loads(row["rejects"]) if isinstance(row.get("rejects"), str) else dict(row.get("rejects") or {})
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in rejects.items() if count)
    merged = row.get("rows_merged")
    text = f"{int(row['rows_read']):,} rows read, {int(row['rows_rejected']):,} rejected"
    text += f" ({reasons})" if reasons else ""
    if merged is not None and pd.notna(merged) and merged:
        params = json.loads(row["params"]) if isinstance(row.get("params"), str) else dict(row.get("params") or {})
        chunk = params.get("delta_t_ms")
        text += f", {int(merged):,} merged " + (f"into one tuple per client, section and {chunk / 1000:g} s chunk"
                                                if chunk else "into other rows")
    return text + "."
