"""Fixtures for the pipelines suites: one local SparkSession, tiny trade files and a tiny
replayable dataset."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import store
from pipelines.spark import start_spark

MARKET_OPEN_MS = 34_200_000
"""09:30 New York time, in milliseconds after midnight."""


@pytest.fixture(scope="session")
def spark():
    session = start_spark("tests", "local[2]")
    yield session
    session.stop()


def write_trade_zip(directory: Path, symbol: str, date: str, lines: list[str]) -> Path:
    """A trade file as AlgoSeek ships it: ``<symbol>_<date>_trade.zip`` holding one headerless CSV."""
    path = Path(directory) / f"{symbol.lower()}_{date}_trade.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{date}_{symbol.lower()}_Trade_Tick.csv", "\n".join(lines) + "\n")
    return path


def trade_lines(rows: int, seed: int, start_ms: int = MARKET_OPEN_MS, max_gap_ms: int = 2_000) -> list[str]:
    """Clean trades in time order: repeated times, prices and sizes give tied scores."""
    rng = np.random.default_rng(seed)
    times = start_ms + np.cumsum(rng.integers(0, max_gap_ms, rows))
    prices = 1_670_000 + 100 * rng.integers(-50, 50, rows)
    sizes = rng.choice([100, 200, 300, 500, 1_000], rows)
    return [f"{t},{p},{s},P,20002000,0" for t, p, s in zip(times, prices, sizes)]


def small_replay(directory: Path, rows: int, window: int, slide: int) -> tuple[Path, Path]:
    """A database holding the dataset ``small`` (``rows`` objects, one feature ``x`` equal to
    the row number) and a config replaying it through the oracle, top 1: ``(db, config)``."""
    directory = Path(directory)
    db, data, config = directory / "topk.duckdb", directory / "small.parquet", directory / "small.json"
    pq.write_table(pa.table({"id": np.arange(rows), "seq": np.arange(rows), "t": np.arange(rows),
                             "x": np.arange(rows, dtype=np.float64)}), data)
    with store.connection(db) as con:
        store.insert_row(con, "datasets", {"name": "small", "family": "test", "features": ["x"], "parquet": str(data)})
    config.write_text(json.dumps({"dataset": "small", "algorithms": [{"name": "oracle"}],
                                  "queries": [{"weights": [1.0], "k": 1, "window": window, "slide": slide}]}))
    return db, config
