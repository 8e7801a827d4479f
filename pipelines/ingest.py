"""Ingest a raw trace into a Parquet dataset and record it in DuckDB.

``python -m pipelines.ingest stock [--input PATHS...] [--db var/topk.duckdb]
[--out var/datasets] [--name spy] [--append]``

Extract (plain file reading, before Spark starts, so a bad file fails fast) -> transform
(Spark, no I/O) -> load (one Parquet file + the ``datasets`` and ``rejected_rows`` rows in
one DuckDB transaction). Each trace family registers its extract and transform in
:data:`FAMILIES`. ``--append`` adds new files (a new trading day) after the rows already
in the dataset, keeping their ``seq`` and ``id``, so that ``pipelines.replay --resume`` can
continue over the new rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from . import stock, store
from .cleaned import Cleaned
from .errors import InputError, exit_status
from .spark import PROJECT_ROOT, spark_session

DEFAULT_OUT = Path("var/datasets")
SAMPLE_DATA = PROJECT_ROOT / "sample_data"
REJECT_EXAMPLES = 3


@dataclass(frozen=True)
class Family:
    """How one trace family is ingested.

    ``extract(paths) -> pyarrow.Table`` reads raw rows (with ``source_file``, ``line`` and
    ``raw`` columns for reporting rejects); ``transform(raw, seq_start=, t_after=)`` is pure
    and returns :class:`pipelines.cleaned.Cleaned`.
    """

    extract: Callable[[Sequence[Path]], pa.Table]
    transform: Callable[..., Cleaned]
    features: tuple[str, ...]
    t_unit: str
    reasons: tuple[str, ...]
    default_inputs: tuple[Path, ...]
    default_name: Callable[[Sequence[Path]], str]


FAMILIES: dict[str, Family] = {
    "stock": Family(extract=stock.extract, transform=stock.transform, features=stock.FEATURES,
                    t_unit=stock.T_UNIT, reasons=stock.REASONS,
                    default_inputs=(SAMPLE_DATA / "spy_20131007_trade.zip",),
                    default_name=stock.default_name),
}


@dataclass(frozen=True)
class Extracted:
    """Raw rows read and checked, ready for Spark: the output of :func:`extract`."""

    family_name: str
    family: Family
    name: str
    inputs: list[Path]
    raw: pa.Table
    db: Path
    parquet: Path
    existing: dict[str, Any] | None
    """The dataset appended to (``None`` when the dataset is built afresh)."""


@dataclass(frozen=True)
class IngestSummary:
    """What one ingest did."""

    name: str
    rows_read: int
    rejects: dict[str, int]
    rows_written: int
    rows_total: int
    parquet: Path

    @property
    def rows_rejected(self) -> int:
        return sum(self.rejects.values())


def ingest(spark: SparkSession, family_name: str, inputs: Sequence[Path] = (), *, db: Path = store.DEFAULT_DB,
           out: Path = DEFAULT_OUT, name: str | None = None, append: bool = False,
           log: Callable[[str], None] = print) -> IngestSummary:
    """Extract, transform and load ``inputs`` (default: the family's sample) as dataset ``name``.

    Without ``append`` the dataset is (re)built from ``inputs`` alone; with it the inputs'
    rows follow the rows already in the dataset (``seq`` continues; earlier ``t`` is rejected).

    Raises
    ------
    InputError
        Unknown family, unreadable input, nothing to append to, or inputs already ingested.
    """
    extracted = extract(family_name, inputs, db=db, out=out, name=name, append=append, log=log)
    return transform_and_load(spark, extracted, log=log)


def extract(family_name: str, inputs: Sequence[Path] = (), *, db: Path = store.DEFAULT_DB,
            out: Path = DEFAULT_OUT, name: str | None = None, append: bool = False,
            log: Callable[[str], None] = print) -> Extracted:
    """Read the raw inputs and check them against the dataset appended to (no Spark)."""
    family = family_by_name(family_name)
    inputs = [Path(path) for path in inputs] or list(family.default_inputs)
    name = name or family.default_name(inputs)
    existing = _existing_dataset(db, name, family_name, inputs) if append else None
    for path in inputs:
        log(f"[ingest] reading {path}")
    raw = family.extract(inputs)
    log(f"[ingest] {raw.num_rows:,} rows read from {len(inputs)} file(s)")
    return Extracted(family_name=family_name, family=family, name=name, inputs=inputs, raw=raw, db=Path(db),
                     parquet=Path(out).resolve() / f"{name}.parquet", existing=existing)


def transform_and_load(spark: SparkSession, extracted: Extracted, *,
                       log: Callable[[str], None] = print) -> IngestSummary:
    """Clean the raw rows on Spark, write the Parquet dataset and record it in DuckDB."""
    family, existing, name = extracted.family, extracted.existing, extracted.name
    log(f"[ingest] cleaning on Spark ({spark.sparkContext.master})")
    cleaned = family.transform(spark.createDataFrame(extracted.raw),
                               seq_start=existing["rows"] if existing else 0,
                               t_after=existing["t_max"] if existing else None)
    rejected = cleaned.rejected.toArrow()
    rejects = {reason: 0 for reason in family.reasons}
    rejects.update(Counter(rejected.column("reason").to_pylist()))
    _log_rejects(rejected, log)

    rows = cleaned.rows.cache()
    try:
        if existing:
            old_rows = spark.read.parquet(existing["parquet"])
            clashes = rows.join(old_rows.select("id"), "id", "left_semi").count()
            if clashes:
                raise InputError(f"{clashes:,} row ids of the inputs are already in dataset {name}; "
                                 "were these files ingested before?")
            rows = old_rows.select(*rows.columns).unionByName(rows)
        log(f"[ingest] writing {extracted.parquet}")
        _write_parquet(rows, extracted.parquet)
    finally:
        cleaned.rows.unpersist()
    rows_total = pq.ParquetFile(extracted.parquet).metadata.num_rows
    t_range = pc.min_max(pq.read_table(extracted.parquet, columns=["t"]).column("t")).as_py()

    previous = Counter(existing["rejects"]) if existing else Counter()
    record = {
        "name": name, "family": extracted.family_name,
        "source_files": (existing["source_files"] if existing else []) + [str(p.resolve()) for p in extracted.inputs],
        "rows_read": extracted.raw.num_rows + (existing["rows_read"] if existing else 0),
        "rows_rejected": sum(rejects.values()) + (existing["rows_rejected"] if existing else 0),
        "rejects": {reason: previous[reason] + rejects[reason] for reason in family.reasons},
        "features": list(family.features), "t_unit": family.t_unit,
        "t_min": t_range["min"], "t_max": t_range["max"],
        "ingested_at": dt.datetime.now(dt.timezone.utc).replace(tzinfo=None), "parquet": str(extracted.parquet),
    }
    with store.connection(extracted.db) as con, store.transaction(con):
        store.insert_row(con, "datasets", record, replace=True)
        if not existing:
            con.execute("DELETE FROM rejected_rows WHERE dataset = ?", [name])
        store.insert_columns(con, "rejected_rows", {
            "dataset": [name] * rejected.num_rows,
            **{column: rejected.column(column).to_pylist() for column in ("source_file", "line", "reason", "raw")},
        })
    return IngestSummary(name=name, rows_read=extracted.raw.num_rows, rejects=rejects,
                         rows_written=rows_total - (existing["rows"] if existing else 0),
                         rows_total=rows_total, parquet=extracted.parquet)


def family_by_name(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise InputError(f"unknown trace family {name!r}; valid: {', '.join(FAMILIES)}") from None


def _existing_dataset(db: Path, name: str, family_name: str, inputs: Sequence[Path]) -> dict[str, Any]:
    """The dataset being appended to, checked against the new inputs."""
    if not Path(db).is_file():
        raise InputError(f"no database {db} holding dataset {name!r} to append to")
    with store.connection(db) as con:
        found = con.execute(
            "SELECT family, source_files, rows_read, rows_rejected, rejects, t_max, parquet "
            "FROM datasets WHERE name = ?", [name]).fetchone()
    if found is None:
        raise InputError(f"no dataset {name!r} in {db} to append to; ingest it without --append first")
    family, sources, rows_read, rows_rejected, rejects, t_max, parquet = found
    if family != family_name:
        raise InputError(f"dataset {name!r} is a {family} dataset, not {family_name}")
    if not Path(parquet).is_file():
        raise InputError(f"dataset {name!r}: its Parquet file {parquet} is missing; ingest it again")
    sources = store.from_json(sources)
    seen = {Path(source).name for source in sources}
    repeated = [str(path) for path in inputs if path.name in seen]
    if repeated:
        raise InputError(f"already in dataset {name!r}: {', '.join(repeated)}")
    return {"source_files": sources, "rows_read": rows_read, "rows_rejected": rows_rejected,
            "rejects": store.from_json(rejects), "t_max": t_max, "parquet": parquet,
            "rows": pq.ParquetFile(parquet).metadata.num_rows}


def _write_parquet(rows: DataFrame, target: Path) -> None:
    """Write ``rows`` sorted by ``seq`` as one Parquet file, replacing ``target`` atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.stem}-", dir=target.parent))
    try:
        rows.repartition(1).sortWithinPartitions("seq").write.parquet(str(staging / "out"))
        parts = sorted((staging / "out").glob("part-*.parquet"))
        if len(parts) != 1:
            raise RuntimeError(f"Spark wrote {len(parts)} Parquet parts, expected one")
        os.replace(parts[0], target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _log_rejects(rejected: pa.Table, log: Callable[[str], None]) -> None:
    """A few example lines per reason (all of them go to the ``rejected_rows`` table)."""
    shown: Counter = Counter()
    for row in rejected.to_pylist():
        if shown[row["reason"]] < REJECT_EXAMPLES:
            shown[row["reason"]] += 1
            log(f"[ingest] rejected {row['source_file']}:{row['line']} ({row['reason']}): {row['raw'][:80]!r}")


def format_summary(summary: IngestSummary) -> str:
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in summary.rejects.items())
    return (f"[ingest] dataset {summary.name}: {summary.rows_read:,} rows read, "
            f"{summary.rows_rejected:,} rejected, {summary.rows_written:,} written "
            f"({summary.rows_total:,} rows in the dataset)\n"
            f"[ingest] rejected by reason: {reasons}\n"
            f"[ingest] parquet: {summary.parquet}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipelines.ingest",
                                     description="Ingest a raw trace into a Parquet dataset recorded in DuckDB.")
    parser.add_argument("family", help=f"trace family: {', '.join(FAMILIES)}")
    parser.add_argument("--input", nargs="+", type=Path, default=[], metavar="PATH",
                        help="raw files (default: the family's sample in sample_data/)")
    parser.add_argument("--db", type=Path, default=store.DEFAULT_DB, help="DuckDB file (default %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Parquet directory (default %(default)s)")
    parser.add_argument("--name", help="dataset name (default: from the inputs, e.g. spy)")
    parser.add_argument("--append", action="store_true",
                        help="add the inputs after the rows already in the dataset")
    parser.add_argument("--master", help="Spark master (default: $SPARK_MASTER, else local[*])")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    def job() -> int:
        extracted = extract(args.family, args.input, db=args.db, out=args.out, name=args.name, append=args.append)
        with spark_session("topk-ingest", args.master) as spark:
            summary = transform_and_load(spark, extracted)
        print(format_summary(summary))
        return 0

    return exit_status(job)


if __name__ == "__main__":
    sys.exit(main())
