"""The DuckDB store: connection, the shared schema (docs/CONTRACTS.md) and write helpers.

Every table of the contract is created here, with the contract's column names and types.
Additions to the contract (allowed: new columns and tables only):

- table ``rejected_rows``: every row ingest rejected, with its source file, line and reason;
- column ``slide_metrics.measured_bytes``: the engine's measured size of the algorithm's
  structures (``stats()["measured_bytes"]``), beside the modelled ``bytes``; added to older
  database files on connect;
- column ``datasets.params`` (JSON): the trace family's settings (stock symbols, World Cup
  sections, chunk length and byte scale, csv columns, generator settings), reused by ``--append``;
- column ``runs.reason``: why a run is ``failed`` or ``interrupted`` (one line);
- primary keys on ``answers``, ``slide_metrics`` and ``snapshots`` (:data:`PRIMARY_KEYS`), so
  that no slide is ever stored twice.  An older database file gets them on connect: each
  table is rebuilt with its key, identical duplicate rows collapsing into one; rows that share
  a key but differ stop the migration with a :class:`StoreError` naming the table.
- column ``datasets.rows_merged``: rows accepted but merged into others (World Cup requests into
  one tuple per client, section and chunk): ``rows_read = rows_rejected + rows_merged + rows``.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

import duckdb
import pyarrow as pa

from .errors import StoreError

DEFAULT_DB = Path("var/topk.duckdb")

PRIMARY_KEYS = {
    "answers": ("run_id", "query_id", "algorithm", "slide", "rank"),
    "slide_metrics": ("run_id", "query_id", "algorithm", "slide"),
    "snapshots": ("run_id", "query_id", "algorithm", "shard", "slide"),
}
"""The key of every table of results: one answer per rank, one metrics row and one snapshot per slide."""
KEYED_COLUMNS = {
    "answers": """run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, slide BIGINT, "end" BIGINT,
        rank INTEGER, object_id BIGINT, score DOUBLE""",
    "slide_metrics": """run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, slide BIGINT, "end" BIGINT,
        candidates BIGINT, retained BIGINT, bytes BIGINT, seconds DOUBLE, precision DOUBLE,
        error DOUBLE, measured_bytes BIGINT""",
    "snapshots": """run_id VARCHAR, query_id INTEGER, algorithm VARCHAR, shard INTEGER, slide BIGINT,
        last_seq BIGINT, format_version INTEGER, state JSON, checksum VARCHAR,
        created_at TIMESTAMP""",
}


def keyed_table(table: str, name: str | None = None) -> str:
    """``CREATE TABLE`` of a table of :data:`PRIMARY_KEYS` (under ``name``, default its own)."""
    key = ", ".join(f'"{column}"' for column in PRIMARY_KEYS[table])
    return f"CREATE TABLE IF NOT EXISTS {name or table} ({KEYED_COLUMNS[table]}, PRIMARY KEY ({key}))"


SCHEMA = (
    """CREATE TABLE IF NOT EXISTS datasets (
        name VARCHAR PRIMARY KEY, family VARCHAR, source_files JSON, rows_read BIGINT,
        rows_rejected BIGINT, rejects JSON, features JSON, t_unit VARCHAR, t_min BIGINT,
        t_max BIGINT, ingested_at TIMESTAMP, parquet VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id VARCHAR PRIMARY KEY, dataset VARCHAR, config JSON, spark_master VARCHAR,
        shards INTEGER, started_at TIMESTAMP, finished_at TIMESTAMP, status VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS queries (
        run_id VARCHAR, query_id INTEGER, weights JSON, k INTEGER, "window" BIGINT,
        slide BIGINT, kind VARCHAR)""",
    keyed_table("answers"),
    keyed_table("slide_metrics"),
    "ALTER TABLE slide_metrics ADD COLUMN IF NOT EXISTS measured_bytes BIGINT",
    keyed_table("snapshots"),
    """CREATE TABLE IF NOT EXISTS rejected_rows (
        dataset VARCHAR, source_file VARCHAR, line BIGINT, reason VARCHAR, raw VARCHAR)""",
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS params JSON",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS reason VARCHAR",
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS rows_merged BIGINT",
    "ALTER TABLE datasets ADD COLUMN IF NOT EXISTS source_digests JSON",
)

LOCK_RETRY_SECONDS = 0.5
LOCK_WAIT_SECONDS = 30.0


def connect(path: str | Path = DEFAULT_DB, *, wait_seconds: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the database file read-write, creating its directory and the schema.

    Another process holding the file (DuckDB allows one writer, and a reader that keeps the
    file open blocks writers too) is waited for up to ``wait_seconds`` (default
    :data:`LOCK_WAIT_SECONDS`); after that, :class:`StoreError` says in one line which
    process holds it.  A file that is not a DuckDB database also raises :class:`StoreError`.
    """
    wait_seconds = LOCK_WAIT_SECONDS if wait_seconds is None else wait_seconds
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_other_files(path)
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            con = duckdb.connect(str(path))
            break
        except duckdb.IOException as error:
            if "lock" not in str(error).lower():
                raise StoreError(f"cannot open {path}: {one_line(error)}") from None
            if time.monotonic() >= deadline:
                raise StoreError(held_message(path, error, wait_seconds)) from None
            time.sleep(LOCK_RETRY_SECONDS)
        except duckdb.Error as error:
            raise StoreError(f"cannot open {path}: {one_line(error)}") from None
    ensure_schema(con)
    return con


DUCKDB_MAGIC = (8, b"DUCK")
"""Where a DuckDB database file says what it is: bytes 8-11 of its header."""


def _refuse_other_files(path: Path) -> None:
    """Refuse an existing file that is not a DuckDB database (``O(1)``).

    DuckDB itself refuses most such files, but opens a CSV, Parquet or JSON file as a database
    of one read-only table and keeps every table created beside it in memory: a dataset
    recorded there would be lost when the connection closes, silently.  An empty file is a
    new database, as for DuckDB.
    """
    try:
        with open(path, "rb") as handle:
            header = handle.read(DUCKDB_MAGIC[0] + len(DUCKDB_MAGIC[1]))
    except (FileNotFoundError, IsADirectoryError):
        return  # DuckDB creates the first and names the second
    except OSError as error:
        raise StoreError(f"cannot open {path}: {one_line(error)}") from None
    offset, magic = DUCKDB_MAGIC
    if header and header[offset:] != magic:
        raise StoreError(f"cannot open {path}: the file exists, but it is not a DuckDB database file (give --db a "
                         ".duckdb file)")


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def held_message(path: Path, error: BaseException, waited: float) -> str:
    """One line naming the process that holds the database file, from DuckDB's lock error."""
    found = re.search(r"held in (\S+) \(PID (\d+)\)", str(error))
    holder = f"process {found.group(2)} ({found.group(1)})" if found else "another process"
    return (f"{path} is held by {holder} for more than {waited:g} s; a long-lived reader (a dashboard "
            "or duckdb shell keeping the file open) blocks writers: close it and retry")


@contextlib.contextmanager
def connection(path: str | Path = DEFAULT_DB, *, wait_seconds: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """:func:`connect`, closed on exit (so other processes can open the file in between)."""
    con = connect(path, wait_seconds=wait_seconds)
    try:
        yield con
    finally:
        con.close()


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table of the contract that does not exist yet, and migrate older ones (idempotent)."""
    for statement in SCHEMA:
        con.execute(statement)
    keyed = {table for (table,) in con.execute(
        "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY' "
        "AND database_name = current_database() AND schema_name = current_schema()").fetchall()}
    for table in PRIMARY_KEYS:
        if table not in keyed:
            add_primary_key(con, table)


def add_primary_key(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Rebuild ``table`` (of a database written before the keys) with its primary key, in one transaction.

    Identical duplicate rows become one row; rows that share a key but differ raise
    :class:`StoreError` and leave the table as it was.
    """
    key = ", ".join(f'"{column}"' for column in PRIMARY_KEYS[table])
    conflicts = con.execute(f"SELECT count(*) FROM (SELECT {key} FROM (SELECT DISTINCT * FROM {table}) "
                            "GROUP BY ALL HAVING count(*) > 1)").fetchone()[0]
    if conflicts:
        raise StoreError(f"cannot add the primary key ({key}) to table {table}: {conflicts:,} keys have rows "
                         "with different values (written by overlapping runs of an older version); delete the "
                         "runs concerned, or use another database file")
    columns = ", ".join(f'"{name}"' for (name,) in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND database_name = current_database() "
        "AND schema_name = current_schema() ORDER BY column_index", [table]).fetchall())
    with transaction(con):
        con.execute(keyed_table(table, f"{table}_keyed"))
        con.execute(f"INSERT INTO {table}_keyed ({columns}) SELECT DISTINCT {columns} FROM {table}")
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE {table}_keyed RENAME TO {table}")


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction: committed when the block ends, rolled back if it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def insert_columns(con: duckdb.DuckDBPyConnection, table: str, columns: Mapping[str, Any]) -> None:
    """Insert rows given as equal-length columns (lists or numpy arrays) by column name.

    JSON columns take Python values (serialised here) or JSON text.
    """
    if not columns or not len(next(iter(columns.values()))):
        return
    data = pa.table({name: _as_arrow(values) for name, values in columns.items()})
    names = ", ".join(f'"{name}"' for name in columns)
    con.register("_incoming", data)
    try:
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _incoming")
    finally:
        con.unregister("_incoming")


def insert_row(con: duckdb.DuckDBPyConnection, table: str, row: Mapping[str, Any], *, replace: bool = False) -> None:
    """Insert one row given as a mapping; ``replace`` overwrites the row with the same key."""
    names = ", ".join(f'"{name}"' for name in row)
    marks = ", ".join("?" for _ in row)
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    con.execute(f"{verb} INTO {table} ({names}) VALUES ({marks})", [_as_sql(value) for value in row.values()])


def to_json(value: Any) -> str:
    """Compact JSON text for a JSON column (no NaN: it is not JSON)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _as_sql(value: Any) -> Any:
    return to_json(value) if isinstance(value, (dict, list, tuple)) else value


def _as_arrow(values: Any) -> pa.Array:
    if isinstance(values, list) and values and isinstance(values[0], (dict, list, tuple)):
        return pa.array([to_json(value) for value in values], pa.string())
    return pa.array(values)


def from_json(value: Any) -> Any:
    """A JSON column's value as Python data (DuckDB returns JSON as text)."""
    return json.loads(value) if isinstance(value, str) else value
