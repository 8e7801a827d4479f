"""Ingest a raw trace into a partitioned Parquet dataset and record it in DuckDB.

``python -m pipelines.ingest FAMILY [--input PATHS...] [--db var/topk.duckdb]
[--out var/datasets] [--name NAME] [--append] [--max-rejected 0.05] [family options]``

Families: ``stock``, ``taxi``, ``worldcup``, ``csv`` and ``synthetic:<generator>``. Each runs
extract (plain file reading or generation, before Spark starts, so a bad file fails fast) ->
transform (Spark, no I/O) -> load: Parquet parts written by Spark into a staging directory,
checked, then published (:mod:`pipelines.publish`): the ``datasets`` and ``rejected_rows``
rows committed in one DuckDB transaction, then the parts moved into the dataset directory.
Any refusal (unreadable input, a file with no accepted row, too many rejected rows, ids
already in the dataset) happens before anything is published, so it leaves the Parquet and
DuckDB unchanged; a killed ingest is completed or cancelled by the next writer. ``--append``
adds parts to the dataset's directory (``seq`` continues), so that ``pipelines.replay
--resume`` can continue over the new rows.

The whole command holds the database's writer lock (:mod:`pipelines.locks`) from before it
reads the dataset it appends to until the publication: two appends run one after the other.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import os
import re
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import csvfile, locks, publish, stock, store, synthetic, taxi, worldcup
from .cleaned import Cleaned, Raw
from .errors import InputError, exit_status
from .progress import stage_progress
from .spark import PROJECT_ROOT, spark_master, spark_session

DEFAULT_OUT = Path("var/datasets")
SAMPLE_DATA = PROJECT_ROOT / "sample_data"
DEFAULT_MAX_REJECTED = 0.05
REJECT_EXAMPLES = 3
RAW_ROWS_PER_PIECE = 20_000
"""At least this many raw rows per staging Parquet file (a few files per core)."""
TOP_REASONS = 3


@dataclass(frozen=True)
class Family:
    """How one trace family is ingested.

    ``extract(paths, options, existing_params) -> Raw`` reads (or generates) raw rows, with
    ``source_file``, ``line`` and ``raw`` columns for reporting rejects;
    ``transform(raw, seq_start=, t_after=, params=)`` is pure and returns
    :class:`pipelines.cleaned.Cleaned`. ``partition_by`` names the rows' partition columns.
    """

    kind: str
    """``object`` (rows ``id, seq, t, <features>``) or ``attribute`` (``id, seq, t, stream, value``)."""
    extract: Callable[..., Raw]
    transform: Callable[..., Cleaned]
    t_unit: str
    reasons: tuple[str, ...]
    partition_by: tuple[str, ...]
    default_inputs: tuple[Path, ...]
    default_name: Callable[..., str]
    merged_as: Callable[[dict[str, Any]], str] = lambda params: ""
    """How accepted rows are merged into fewer (World Cup: into chunks), for the log; ``""`` if never."""


FAMILIES: dict[str, Family] = {
    "stock": Family(kind="object", extract=stock.extract, transform=stock.transform, t_unit=stock.T_UNIT,
                    reasons=stock.REASONS, partition_by=stock.PARTITION_BY,
                    default_inputs=(SAMPLE_DATA / "spy_20131007_trade.zip",),
                    default_name=stock.default_name),
    "taxi": Family(kind="object", extract=taxi.extract, transform=taxi.transform, t_unit=taxi.T_UNIT,
                   reasons=taxi.REASONS, partition_by=taxi.PARTITION_BY,
                   default_inputs=tuple(sorted((SAMPLE_DATA / "taxi").glob("yellow_tripdata_sample_2019-*.csv.gz"))),
                   default_name=taxi.default_name),
    "worldcup": Family(kind="attribute", extract=worldcup.extract, transform=worldcup.transform,
                       t_unit=worldcup.T_UNIT, reasons=worldcup.REASONS, partition_by=worldcup.PARTITION_BY,
                       default_inputs=(SAMPLE_DATA / "worldcup" / "wc_day6_1_sample.tar.bz2",),
                       default_name=worldcup.default_name, merged_as=worldcup.merged_as),
    "csv": Family(kind="object", extract=csvfile.extract, transform=csvfile.transform, t_unit=csvfile.DEFAULT_T_UNIT,
                  reasons=csvfile.REASONS, partition_by=csvfile.PARTITION_BY, default_inputs=(),
                  default_name=csvfile.default_name),
    **{f"synthetic:{generator}": Family(
        kind=synthetic.kind(generator), extract=synthetic.extract, transform=synthetic.transform,
        t_unit=synthetic.T_UNIT, reasons=synthetic.REASONS, partition_by=synthetic.PARTITION_BY,
        default_inputs=(), default_name=synthetic.default_name) for generator in synthetic.GENERATORS},
}


@dataclass(frozen=True)
class Extracted:
    """Raw rows read and checked, ready for Spark: the output of :func:`extract`."""

    family_name: str
    family: Family
    name: str
    inputs: list[Path]
    raw: Raw
    db: Path
    parquet: Path
    """The dataset's directory (on ``--append``, where the dataset already lives)."""
    max_rejected: float
    existing: dict[str, Any] | None
    """The dataset appended to (``None`` when the dataset is built afresh)."""
    digests: list[str]
    """The SHA-256 of every input, in order: what identifies a file already ingested."""


@dataclass(frozen=True)
class IngestSummary:
    """What one ingest did."""

    name: str
    rows_read: int
    rejects: dict[str, int]
    rows_written: int
    rows_total: int
    parquet: Path
    seconds: float = 0.0
    merged_as: str = ""
    """How the family merges rows (World Cup: requests into chunks), for the log."""

    @property
    def rows_rejected(self) -> int:
        return sum(self.rejects.values())

    @property
    def rows_merged(self) -> int:
        """Rows accepted but merged into others (read - rejected - written)."""
        return self.rows_read - self.rows_rejected - self.rows_written


def ingest(spark: SparkSession, family_name: str, inputs: Sequence[Path] = (), *, db: Path = store.DEFAULT_DB,
           out: Path = DEFAULT_OUT, name: str | None = None, append: bool = False,
           max_rejected: float = DEFAULT_MAX_REJECTED, options: dict[str, Any] | None = None,
           lock_wait: float | None = None, log: Callable[[str], None] = print) -> IngestSummary:
    """Extract, transform and load ``inputs`` (default: the family's sample) as dataset ``name``.

    Without ``append`` the dataset is (re)built from ``inputs`` alone; with it the inputs'
    rows follow the rows already in the dataset (``seq`` continues; earlier ``t`` is rejected).
    ``options`` are the family's settings (csv columns, generator size, World Cup sections).
    Everything runs holding the writer lock of ``db``, waited for up to ``lock_wait`` seconds
    (:func:`pipelines.locks.wait_seconds`).

    Raises
    ------
    InputError
        Unknown family, unreadable input, a file with no accepted row, a rejected share above
        ``max_rejected``, nothing to append to, or inputs already ingested. Nothing is written.
    StoreError
        The database is being written by another process for longer than ``lock_wait``.
    """
    with writing(db, lock_wait, log):
        extracted = extract(family_name, inputs, db=db, out=out, name=name, append=append,
                            max_rejected=max_rejected, options=options, log=log)
        return transform_and_load(spark, extracted, log=log)


def _tagged(log: Callable[[str], None]) -> Callable[[str], None]:
    """``log`` prefixing each line with ``[ingest]``: for the messages of the locks and working directories."""
    return lambda line: log(f"[ingest] {line}")


def writing(db: Path, lock_wait: float | None, log: Callable[[str], None]):
    """The writer lock of ``db`` (:func:`pipelines.locks.writer_lock`), logging as ingest."""
    return locks.writer_lock(db, wait=lock_wait, log=_tagged(log))


DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""A dataset name: it is also the name of the dataset's Parquet directory under ``--out``."""


def extract(family_name: str, inputs: Sequence[Path] = (), *, db: Path = store.DEFAULT_DB,
            out: Path = DEFAULT_OUT, name: str | None = None, append: bool = False,
            max_rejected: float = DEFAULT_MAX_REJECTED, options: dict[str, Any] | None = None,
            log: Callable[[str], None] = print) -> Extracted:
    """Read (or generate) the raw inputs and check them against the dataset appended to (no Spark).

    Call it holding the writer lock of ``db``: it settles what a killed ingest of the dataset
    left (:func:`pipelines.publish.recover`) and reads the dataset appended to.
    """
    family = family_by_name(family_name)
    if not 0 <= max_rejected <= 1:
        raise InputError(f"--max-rejected must be a share between 0 and 1 (or a percentage), got {max_rejected}")
    options = dict(options or {})
    if family_name.startswith("synthetic:"):
        options["generator"] = family_name.split(":", 1)[1]
    inputs = [Path(path) for path in inputs] or list(family.default_inputs)
    if not inputs and family_name == "csv":
        raise InputError("the csv family needs --input")
    name = name or family.default_name(inputs, options)
    if not DATASET_NAME.fullmatch(name):
        raise InputError(f"dataset name {name!r}: use letters, digits, '_', '-' and '.', starting with a letter or "
                         "digit (it names the dataset's directory); give one with --name")
    existing = _existing_dataset(db, name, family_name, inputs, log) if append else None
    if not existing and (Path(out).exists() and not Path(out).is_dir()):
        raise InputError(f"--out {out}: not a directory (it holds the datasets' Parquet directories)")
    if not existing and Path(db).exists():  # a file that is not a DuckDB database fails here, not after Spark
        with store.connection(db):
            pass
    if not existing:
        _recover(Path(out).resolve() / f"{name}.parquet", db, name, log)
        _refuse_another_databases_dataset(Path(out).resolve() / f"{name}.parquet", db, name)
    for path in inputs:
        log(f"[ingest] reading {path}")
    digests_before_reading = [_digest_if_readable(path) for path in inputs]  # an unreadable one: the family says why
    raw = family.extract(inputs, options, existing["params"] if existing else None)
    if existing and list(raw.features) != existing["features"]:
        raise InputError(f"dataset {name!r} has features {existing['features']}, the inputs give {list(raw.features)}")
    log(f"[ingest] {raw.table.num_rows:,} rows read from {len(inputs) or 'the generator'}"
        f"{' file(s)' if inputs else ''}")
    _refuse_empty_inputs(inputs, raw.table)
    digests = _new_contents(name, inputs, existing)
    _refuse_changed_while_read(inputs, digests_before_reading, digests)
    parquet = Path(existing["parquet"]) if existing else Path(out).resolve() / f"{name}.parquet"
    return Extracted(family_name=family_name, family=family, name=name, inputs=inputs, raw=raw, db=Path(db),
                     parquet=parquet, max_rejected=max_rejected, existing=existing, digests=digests)


def transform_and_load(spark: SparkSession, extracted: Extracted, *,
                       log: Callable[[str], None] = print) -> IngestSummary:
    """Clean the raw rows on Spark, write the Parquet parts and record the dataset in DuckDB."""
    started = dt.datetime.now(dt.timezone.utc)
    family, existing, name, raw = extracted.family, extracted.existing, extracted.name, extracted.raw
    rows_read = raw.table.num_rows
    log(f"[ingest] cleaning on Spark ({spark.sparkContext.master})")
    with stage_progress(spark, log, rows=rows_read), _raw_frame(spark, raw.table, extracted.parquet, log) as raw_frame:
        cleaned = family.transform(raw_frame, seq_start=existing["rows"] if existing else 0,
                                   t_after=existing["t_max"] if existing else None, params=raw.params)
        rejected = cleaned.rejected.toArrow()
        rejects = {reason: 0 for reason in family.reasons}
        rejects.update(Counter(rejected.column("reason").to_pylist()))
        _log_rejects(rejected, log)
        _refuse_bad_input(extracted, rejected, rejects)

        rows = cleaned.rows.cache()
        try:
            facts = rows.agg(F.count(F.lit(1)).alias("rows"), F.min("t").alias("t_min"),
                             F.max("t").alias("t_max")).first()
            if not facts["rows"]:
                raise InputError(f"no rows to write into dataset {name!r}")
            learned = cleaned.learned.first().asDict() if cleaned.learned is not None else {}
            if existing and family.kind == "object":  # an attribute stream's objects come back in later chunks
                _refuse_known_ids(spark, rows, existing["parquet"], name)
            with publish.working_directory(extracted.parquet, "staging", _tagged(log)) as staging:
                log(f"[ingest] writing {facts['rows']:,} rows under {extracted.parquet}")
                _write_parts(rows, staging / "out", family.partition_by)
                _publish(extracted, staging, facts, rejects, rejected, learned, log)
        finally:
            rows.unpersist()
    seconds = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
    previous_rows = existing["rows"] if existing else 0
    return IngestSummary(name=name, rows_read=rows_read, rejects=rejects, rows_written=facts["rows"],
                         rows_total=previous_rows + facts["rows"], parquet=extracted.parquet, seconds=seconds,
                         merged_as=family.merged_as(raw.params))


@contextlib.contextmanager
def _raw_frame(spark: SparkSession, table: pa.Table, dataset: Path,
               log: Callable[[str], None]) -> Iterator[DataFrame]:
    """The raw rows as a DataFrame that Spark reads in parallel, from staging Parquet files.

    Not ``spark.createDataFrame(table)``: that makes a local relation, which is shipped inside
    every task's plan and which the optimizer (``ConvertToLocalRelation``) evaluates on the
    driver, in one thread. The staging directory sits next to the dataset (a path the
    executors can read, as they must read the dataset) and is removed afterwards.
    """
    with publish.working_directory(dataset, "raw", _tagged(log)) as staging:
        pieces = max(1, min(spark.sparkContext.defaultParallelism * 2, table.num_rows // RAW_ROWS_PER_PIECE))
        step = -(-table.num_rows // pieces) if table.num_rows else 1
        for index in range(pieces):
            pq.write_table(table.slice(index * step, step), staging / f"raw-{index:05d}.parquet")
        yield spark.read.parquet(str(staging))


def family_by_name(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise InputError(f"unknown trace family {name!r}; valid: {', '.join(FAMILIES)}") from None


def parse_share(text: str) -> float:
    """A share given as ``0.05`` or ``5%``.

    >>> parse_share("5%"), parse_share("0.1")
    (0.05, 0.1)
    """
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a share: {text!r} (give e.g. 0.05 or 5%)") from None


def _refuse_empty_inputs(inputs: Sequence[Path], raw: pa.Table) -> None:
    """Raise :class:`InputError` naming the first input that gave no raw row (empty, or a header only), before Spark."""
    if "source_file" not in raw.column_names:
        return
    read_per_file = Counter(raw.column("source_file").to_pylist())
    for path in inputs:
        if not read_per_file.get(path.name):
            raise InputError(f"{path}: no rows to ingest (empty file, or a header only)")


def _refuse_bad_input(extracted: Extracted, rejected: pa.Table, rejects: dict[str, int]) -> None:
    """Raise :class:`InputError` for a file with no accepted row or a rejected share above the limit."""
    raw = extracted.raw.table
    if "source_file" in raw.column_names:
        read_per_file = Counter(raw.column("source_file").to_pylist())
        rejected_per_file: dict[str, Counter] = {}
        for file_name, reason in zip(rejected.column("source_file").to_pylist(), rejected.column("reason").to_pylist()):
            rejected_per_file.setdefault(file_name, Counter())[reason] += 1
        for path in extracted.inputs:
            read = read_per_file[path.name]
            reasons = rejected_per_file.get(path.name, Counter())
            if sum(reasons.values()) == read:
                raise InputError(f"{path}: none of its {read:,} rows is accepted ({_top(reasons)})")
    rows_read, total = raw.num_rows, sum(rejects.values())
    if rows_read and total / rows_read > extracted.max_rejected:
        raise InputError(f"{total:,} of {rows_read:,} rows rejected ({total / rows_read:.1%}, more than the "
                         f"{extracted.max_rejected:.1%} allowed by --max-rejected): {_top(Counter(rejects))}")


def _top(reasons: Counter) -> str:
    """The most frequent reasons (ties by name), e.g. ``zero_distance 959, negative_amount 191``."""
    ranked = sorted(((count, reason) for reason, count in reasons.items() if count), key=lambda p: (-p[0], p[1]))
    return ", ".join(f"{reason} {count:,}" for count, reason in ranked[:TOP_REASONS])


def _refuse_known_ids(spark: SparkSession, rows: DataFrame, parquet: str, name: str) -> None:
    old_ids = spark.read.parquet(parquet).select("id")
    clashes = rows.join(old_ids, "id", "left_semi").count()
    if clashes:
        raise InputError(f"{clashes:,} row ids of the inputs are already in dataset {name}; "
                         "were these files ingested before?")


def _write_parts(rows: DataFrame, target: Path, partition_by: tuple[str, ...]) -> None:
    """Write ``rows`` as Parquet parts under ``target``, one file per partition, sorted by ``seq``."""
    if partition_by:
        ordered = rows.repartition(*partition_by).sortWithinPartitions(*partition_by, "seq")
        ordered.write.partitionBy(*partition_by).parquet(str(target))
    else:
        rows.repartition(1).sortWithinPartitions("seq").write.parquet(str(target))


def _publish(extracted: Extracted, staging: Path, facts: Any, rejects: dict[str, int], rejected: pa.Table,
             learned: dict[str, Any], log: Callable[[str], None]) -> None:
    """Record the dataset in DuckDB, then move the parts written under ``staging/out`` into it.

    A new dataset replaces the old directory in two renames; an append moves each new part
    into its partition directory (part names hold their first ``seq``, so they never clash).
    The order and what a killed process leaves are :mod:`pipelines.publish`'s.
    """
    written, target = staging / "out", extracted.parquet
    parts = _name_parts_by_seq(written)
    if not parts:
        raise RuntimeError(f"Spark wrote no Parquet part under {written}")
    with locks.dataset_lock(target, log=_tagged(log)):
        if extracted.existing is None:  # checked again: another database's ingest may have published meanwhile
            _refuse_another_databases_dataset(target, extracted.db, extracted.name)
            (written / OWNER_FILE).write_text(str(extracted.db.resolve()))
        ingested_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        publish.publish(staging, written, parts, target, name=extracted.name, db=extracted.db,
                        append=extracted.existing is not None, ingested_at=ingested_at,
                        commit=lambda: _record(extracted, facts, rejects, rejected, learned, ingested_at))
    log(f"[ingest] {len(parts)} Parquet part(s) {'added to' if extracted.existing else 'written to'} {target}")


def _name_parts_by_seq(written: Path) -> list[Path]:
    """Rename each part ``seq-<first seq, 12 digits>.parquet`` (relative paths returned).

    Within a partition directory the names then sort in ``seq`` order, also across appends,
    so a reader listing one partition's files reads its rows in order.
    """
    for leftover in [*written.rglob(".*.crc"), *written.rglob("_SUCCESS")]:
        leftover.unlink()
    parts = []
    for path in sorted(written.rglob("*.parquet")):
        metadata = pq.ParquetFile(path).metadata
        seq_column = metadata.schema.names.index("seq")
        first = min(metadata.row_group(g).column(seq_column).statistics.min for g in range(metadata.num_row_groups))
        named = path.with_name(f"seq-{first:012d}.parquet")
        os.replace(path, named)
        parts.append(named.relative_to(written))
    return sorted(parts)


def _record(extracted: Extracted, facts: Any, rejects: dict[str, int], rejected: pa.Table,
            learned: dict[str, Any], ingested_at: dt.datetime) -> None:
    """The ``datasets`` row and the ``rejected_rows`` of this ingest, in one transaction."""
    existing, family, name = extracted.existing, extracted.family, extracted.name
    previous = Counter(existing["rejects"]) if existing else Counter()
    params = {key: value for key, value in {**extracted.raw.params, **learned}.items() if not key.startswith("_")}
    record = {
        "name": name, "family": extracted.family_name,
        "source_files": (existing["source_files"] if existing else []) + [str(p.resolve()) for p in extracted.inputs],
        "source_digests": (existing["source_digests"] if existing else []) + extracted.digests,
        "rows_read": extracted.raw.table.num_rows + (existing["rows_read"] if existing else 0),
        "rows_rejected": sum(rejects.values()) + (existing["rows_rejected"] if existing else 0),
        "rejects": {reason: previous[reason] + rejects[reason] for reason in family.reasons},
        "rows_merged": (extracted.raw.table.num_rows - sum(rejects.values()) - facts["rows"]
                        + (existing["rows_read"] - existing["rows_rejected"] - existing["rows"] if existing else 0)),
        "features": list(extracted.raw.features), "t_unit": params.get("t_unit", family.t_unit),
        "t_min": existing["t_min"] if existing else facts["t_min"], "t_max": facts["t_max"],
        "ingested_at": ingested_at, "parquet": str(extracted.parquet),
        "params": params,
    }
    with store.connection(extracted.db) as con, store.transaction(con):
        store.insert_row(con, "datasets", record, replace=True)
        if not existing:
            con.execute("DELETE FROM rejected_rows WHERE dataset = ?", [name])
        store.insert_columns(con, "rejected_rows", {
            "dataset": [name] * rejected.num_rows,
            **{column: rejected.column(column).to_pylist() for column in ("source_file", "line", "reason", "raw")},
        })


OWNER_FILE = ".database"
"""A hidden file in a dataset directory naming the database file that records it (readers skip it)."""


def _refuse_another_databases_dataset(target: Path, db: Path, name: str) -> None:
    """Refuse to replace a dataset directory that another database file, still there, recorded."""
    try:
        owner = Path((target / OWNER_FILE).read_text())
    except (OSError, UnicodeDecodeError):  # no directory, or one written before owners were kept
        return
    if owner != Path(db).resolve() and owner.is_file():
        raise InputError(f"{target} is the dataset {name!r} of another database, {owner}; give --out another "
                         "directory or --name another name (or delete that database first)")


def _recover(target: Path, db: Path, name: str, log: Callable[[str], None]) -> None:
    settled, owner = publish.settle(target, db, name, log=_tagged(log))
    if settled:
        log(f"[ingest] {settled}")
    if owner is not None:  # publishing here would overwrite its journal
        raise InputError(f"{target}: an interrupted ingest of dataset {name!r} into another database, {owner}, "
                         f"is not settled yet; run an ingest or a replay of {name!r} into {owner} first (it settles "
                         "it), or give --out another directory or --name another name")


def _existing_dataset(db: Path, name: str, family_name: str, inputs: Sequence[Path],
                      log: Callable[[str], None]) -> dict[str, Any]:
    """The dataset being appended to (after settling a killed ingest of it), checked against the new inputs."""
    if not Path(db).is_file():
        raise InputError(f"no database {db} holding dataset {name!r} to append to")
    with store.connection(db) as con:
        found = con.execute(
            "SELECT family, source_files, rows_read, rows_rejected, coalesce(rows_merged, 0), rejects, features, "
            "t_min, t_max, parquet, params, source_digests FROM datasets WHERE name = ?", [name]).fetchone()
    if found is None:
        raise InputError(f"no dataset {name!r} in {db} to append to; ingest it without --append first")
    family, sources, rows_read, rows_rejected, rows_merged, rejects, features, t_min, t_max, parquet, params, \
        digests = found
    if family != family_name:
        raise InputError(f"dataset {name!r} is a {family} dataset, not {family_name}")
    if not Path(parquet).is_dir():
        raise InputError(f"dataset {name!r}: its Parquet directory {parquet} is missing (or is an old single "
                         "file); ingest it again without --append")
    _recover(Path(parquet), db, name, log)
    rows = dataset_rows(parquet)
    if rows_read is not None and rows != rows_read - rows_rejected - rows_merged:
        raise InputError(f"dataset {name!r}: its Parquet directory {parquet} holds {rows:,} rows, its record "
                         f"{rows_read - rows_rejected - rows_merged:,}; ingest it again without --append")
    sources = store.from_json(sources)
    digests = store.from_json(digests) or []
    return {"source_files": sources, "source_digests": digests + [None] * (len(sources) - len(digests)),
            "rows_read": rows_read, "rows_rejected": rows_rejected,
            "rejects": store.from_json(rejects), "features": store.from_json(features), "t_min": t_min,
            "t_max": t_max, "parquet": parquet, "params": store.from_json(params) or {}, "rows": rows}


def _new_contents(name: str, inputs: Sequence[Path], existing: dict[str, Any] | None) -> list[str]:
    """The inputs' SHA-256 digests, refusing an input whose content is another input's or a file's
    already in the dataset appended to, whatever its name: a daily feed may reuse one file name.
    A file ingested before digests were kept (``None``) is recognised by its name, as it was then."""
    digests = [file_digest(path) for path in inputs]
    sources = zip(existing["source_files"], existing["source_digests"]) if existing else ()
    ingested, undigested = {}, set()
    for source, digest in sources:
        if digest is None:
            undigested.add(Path(source).name)
        else:
            ingested[digest] = source
    given: dict[str, Path] = {}
    for path, digest in zip(inputs, digests):
        if digest in ingested:
            raise InputError(f"already in dataset {name!r}: {path} (its content is {ingested[digest]}'s, "
                             "ingested before)")
        if path.name in undigested:
            raise InputError(f"already in dataset {name!r}: {path}")
        if digest in given:
            raise InputError(f"{path}: the same content as {given[digest]}, given twice")
        given[digest] = path
    return digests


def _refuse_changed_while_read(inputs: Sequence[Path], before: list[str], after: list[str]) -> None:
    """Refuse an input whose bytes changed while it was read (a feed still writing it): the rows
    read would not be the content its recorded digest names, so a later ``--append`` of the
    complete file would be refused as already ingested, its new rows never read."""
    for path, digest_before, digest_after in zip(inputs, before, after):
        if digest_before != digest_after:
            raise InputError(f"{path}: changed while it was read; ingest it once it is complete")


def _digest_if_readable(path: Path) -> str | None:
    try:
        return file_digest(path)
    except OSError:
        return None


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes (``O(size)``)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def dataset_rows(parquet: str | Path) -> int:
    """Rows in a dataset directory (from the parts' metadata)."""
    return pads.dataset(str(parquet), format="parquet", partitioning="hive").count_rows()


def read_dataset(parquet: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """A dataset directory as one table in ``seq`` order (partition columns included when asked)."""
    table = pads.dataset(str(parquet), format="parquet", partitioning="hive").to_table(columns=columns)
    return table.take(pc.sort_indices(table, [("seq", "ascending")])) if "seq" in table.column_names else table


def _log_rejects(rejected: pa.Table, log: Callable[[str], None]) -> None:
    """A few example lines per reason (all of them go to the ``rejected_rows`` table)."""
    shown: Counter = Counter()
    for row in rejected.slice(0, 10_000).to_pylist():
        if shown[row["reason"]] < REJECT_EXAMPLES:
            shown[row["reason"]] += 1
            log(f"[ingest] rejected {row['source_file']}:{row['line']} ({row['reason']}): {row['raw'][:80]!r}")


def format_summary(summary: IngestSummary) -> str:
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in summary.rejects.items()) or "none"
    rate = summary.rows_read / summary.seconds if summary.seconds else 0.0
    return (f"[ingest] dataset {summary.name}: {summary.rows_read:,} rows read, "
            f"{summary.rows_rejected:,} rejected, "
            + (f"{summary.rows_merged:,} merged {summary.merged_as}, " if summary.rows_merged else "")
            + f"{summary.rows_written:,} written "
            f"({summary.rows_total:,} rows in the dataset) in {summary.seconds:.1f} s ({rate:,.0f} rows/s)\n"
            f"[ingest] rejected by reason: {reasons}\n"
            f"[ingest] parquet: {summary.parquet}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipelines.ingest",
                                     description="Ingest a raw trace into a Parquet dataset recorded in DuckDB.")
    parser.add_argument("family", help=f"trace family: stock, taxi, worldcup, csv, synthetic:<generator> "
                                       f"({', '.join(synthetic.GENERATORS)}); or '{SAMPLES}' for every "
                                       "shipped sample (what make run ingests)")
    parser.add_argument("--input", nargs="+", type=Path, default=[], metavar="PATH",
                        help="raw files (default: the family's sample in sample_data/)")
    parser.add_argument("--db", type=Path, default=store.DEFAULT_DB, help="DuckDB file (default %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="directory of the datasets' Parquet directories (default %(default)s)")
    parser.add_argument("--name", help="dataset name (default: from the inputs, e.g. spy)")
    parser.add_argument("--append", action="store_true",
                        help="add the inputs after the rows already in the dataset, as new Parquet parts")
    parser.add_argument("--max-rejected", type=parse_share, default=DEFAULT_MAX_REJECTED, metavar="SHARE",
                        help="refuse the ingest when more than this share of rows is rejected "
                             "(default 0.05; 5%% also works)")
    parser.add_argument("--master", help="Spark master (default: $SPARK_MASTER, else the one spark-submit was "
                                         "given, else local[*])")
    locks.add_wait_option(parser)
    family = parser.add_argument_group("family options")
    family.add_argument("--id-column", help="csv: the id column")
    family.add_argument("--time-column", help="csv: the time column (integers)")
    family.add_argument("--feature-columns", help="csv: feature columns, comma-separated")
    family.add_argument("--time-unit", help="csv: unit of the time column (default ordinal)")
    family.add_argument("--rows", type=int, help=f"synthetic: rows to generate (default {synthetic.DEFAULT_ROWS:,})")
    family.add_argument("--dims", type=int, help="synthetic: features (object) or streams (attribute)")
    family.add_argument("--seed", type=int, help="synthetic: random seed (default 0)")
    family.add_argument("--sections", help="worldcup: site sections that get a stream each, comma-separated "
                                           f"(default {','.join(worldcup.DEFAULT_SECTIONS)}; the rest is 'other')")
    family.add_argument("--delta-t-ms", type=int, help=f"worldcup: chunk length in ms "
                                                       f"(default {worldcup.DEFAULT_DELTA_T_MS:,})")
    return parser.parse_args(argv)


SAMPLES = "samples"
"""Pseudo-family of the command line: ingest every shipped sample (what ``make run`` needs) in one Spark session."""
SAMPLE_PLAN: tuple[tuple[str, tuple[Path, ...], str | None, dict[str, Any]], ...] = (
    ("stock", (SAMPLE_DATA / "spy_20131007_trade.zip",), "spy", {}),
    ("stock", (SAMPLE_DATA / "spy_20131007_trade.zip", SAMPLE_DATA / "bac_20131007_trade.zip"), "market", {}),
    ("taxi", (), None, {}),
    ("worldcup", (), None, {}),
    ("synthetic:drifting-gaussian", (), None, {"rows": 100_000, "dims": 3}),
)
"""(family, inputs (default: the family's sample), dataset name, options) of each shipped sample."""


def ingest_samples(db: Path, out: Path, master: str | None, max_rejected: float, lock_wait: float | None = None,
                   log: Callable[[str], None] = print) -> list[IngestSummary]:
    """Ingest every entry of :data:`SAMPLE_PLAN`: all extracted first (a bad file fails before Spark)."""
    with writing(db, lock_wait, log):
        extracted = [extract(family, inputs, db=db, out=out, name=name, max_rejected=max_rejected, options=options,
                             log=log) for family, inputs, name, options in SAMPLE_PLAN]
        summaries = []
        with spark_session("topk-ingest-samples", master) as spark:
            for item in extracted:
                summaries.append(transform_and_load(spark, item, log=log))
                log(format_summary(summaries[-1]))
    return summaries


OPTION_NAMES = ("id_column", "time_column", "feature_columns", "time_unit", "rows", "dims", "seed", "sections",
                "delta_t_ms")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    options = {key: getattr(args, key) for key in OPTION_NAMES if getattr(args, key) is not None}

    def job() -> int:
        master = spark_master(args.master)  # refused before any file is read or the database locked
        if args.family == SAMPLES:
            ingest_samples(args.db, args.out, master, args.max_rejected, args.lock_wait)
            return 0
        with writing(args.db, args.lock_wait, print):
            extracted = extract(args.family, args.input, db=args.db, out=args.out, name=args.name,
                                append=args.append, max_rejected=args.max_rejected, options=options)
            with spark_session("topk-ingest", master) as spark:
                summary = transform_and_load(spark, extracted)
        print(format_summary(summary))
        return 0

    received: list[int] = []

    def stop(signum, frame):
        for other in (signal.SIGINT, signal.SIGTERM):
            signal.signal(other, signal.SIG_IGN)  # one signal unwinds; later ones wait for the cleanup
        received.append(signum)
        raise SignalStop  # not a KeyboardInterrupt: py4j would log one, with its traceback

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        return exit_status(job)
    except BaseException as error:  # noqa: BLE001 - a signal surfaces as whatever the call it hit raises (py4j's)
        if not received and not _after_ctrl_c(error):
            raise
        signum = received[0] if received else signal.SIGINT  # Spark's own SIGINT handler raises KeyboardInterrupt
        print(f"[ingest] stopped by {signal.Signals(signum).name}: whatever it had begun to publish is "
              "completed or dropped by the next writer of the database", file=sys.stderr)
        return 128 + signum
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


class SignalStop(BaseException):
    """SIGINT or SIGTERM arrived: the ingest unwinds (a BaseException, so that no handler on the way catches it)."""


def _after_ctrl_c(error: BaseException | None) -> bool:
    """Whether ``error`` is, or arose while handling, a :class:`KeyboardInterrupt`."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__context__
    return False


if __name__ == "__main__":
    sys.exit(main())
