"""The streams the harness replays: the papers' synthetic sets and the real traces.

Object streams return ``(ids, t, x)``; attribute streams ``(ids, stream, value, t)``.  Real
traces are read straight from their raw files with small loaders (no Spark): the benchmark
measures the engine, not the ingest.  Every loader caches its result for the process.

| name | what | score |
|---|---|---|
| ``time-u`` | SAP paper TIME-U: uniform in [0, 1) | ``x`` |
| ``time-r`` | SAP paper TIME-R: ``sin(pi t / 10^6)``, on the falling flank | ``x`` |
| ``stock`` | SPY (+ BAC) trades, Oct 2013, in time order | notional = price x size (dollars) |
| ``taxi`` | NYC yellow taxi 2019 samples, by pickup time | speed (miles per hour) |
| ``drifting-gaussian``, ``skewed-uniform`` | SAO paper sets (d = 3) | ``w . x``, random weights |
| ``correlated`` | incomplete-streams paper 6.1.1 generator | weighted sum over streams |
| ``worldcup`` | 1998 World Cup log, day 6 sample: clients x site sections (the ingest's mapping) | weighted sum over streams |
"""

from __future__ import annotations

import functools
import io
import pathlib
import tarfile
import zipfile

import numpy as np
import pandas as pd

from benchmarks.common import data_dir
from engine import generators

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = ROOT / "var" / "bench-cache"


def trace_files(pattern: str) -> list[pathlib.Path]:
    """The files matching ``pattern`` in the data directory, else the same files shipped in ``sample_data/``."""
    return sorted(pathlib.Path(data_dir()).glob(pattern)) or sorted((ROOT / "sample_data").glob(pattern))


def trade_files() -> list[pathlib.Path]:
    """The trade files (``*_trade.zip``) in ``stock/`` of the data directory, else those shipped
    in ``sample_data/`` (which keeps them at its top level)."""
    return (sorted(pathlib.Path(data_dir()).glob("stock/*_trade.zip"))
            or sorted((ROOT / "sample_data").glob("*_trade.zip")))


def stock_files(quick: bool) -> list[pathlib.Path]:
    """The sample SPY day (quick, or when the data directory holds no trades) or every trade file
    of the data directory (full)."""
    files = trade_files()
    if quick or files[0].parent == ROOT / "sample_data":
        return sorted((ROOT / "sample_data").glob("spy_*_trade.zip"))[:1]
    return files


REGULAR_HOURS_MS = (9 * 3_600_000 + 30 * 60_000, 16 * 3_600_000)


@functools.cache
def stock(quick: bool = False, regular_hours: bool = False):
    """Trades in time order; one feature, the notional (price in dollars x size in shares).

    Suspicious trades (flag 1) are left out, as the ingest does.  ``t`` is milliseconds from
    the first day's midnight (days follow each other), ``ids`` unique across files.
    ``regular_hours`` keeps 9:30-16:00 only (dense time windows; pre-market is sparse).
    """
    frames = []
    for path in stock_files(quick):
        with zipfile.ZipFile(path) as archive:
            raw = archive.read(archive.namelist()[0])
        frame = pd.read_csv(io.BytesIO(raw), header=None, usecols=[0, 1, 2, 5],
                            names=["time_ms", "price", "size", "suspicious"])
        frame = frame[frame["suspicious"] == 0]
        if regular_hours:
            frame = frame[frame["time_ms"].between(*REGULAR_HOURS_MS, inclusive="left")]
        day = pd.Timestamp(path.name.split("_")[1]).value // 1_000_000
        frame = frame.assign(t=day + frame["time_ms"].astype(np.int64),
                             notional=frame["price"] / 10_000.0 * frame["size"])
        frames.append(frame[["t", "notional"]])
    data = pd.concat(frames).sort_values("t", kind="stable")
    t = data["t"].to_numpy(np.int64)
    return np.arange(len(t), dtype=np.int64), t - t[0], data[["notional"]].to_numpy(np.float64)


@functools.cache
def taxi():
    """Trips of the twelve 2019 sample months by pickup time; one feature, the speed in mph.

    Trips with non-positive duration, zero distance or an implausible speed (> 100 mph) are
    left out.  ``t`` is seconds since the first pickup.
    """
    files = trace_files("taxi/yellow_tripdata_sample_2019-*.csv.gz")
    frame = pd.concat(pd.read_csv(f, usecols=["pickup_datetime", "dropoff_datetime", "trip_distance"],
                                  parse_dates=["pickup_datetime", "dropoff_datetime"]) for f in files)
    hours = (frame["dropoff_datetime"] - frame["pickup_datetime"]).dt.total_seconds() / 3600.0
    frame = frame.assign(speed=frame["trip_distance"] / hours.where(hours > 0))
    frame = frame[(hours > 0) & (frame["trip_distance"] > 0) & (frame["speed"] <= 100)]
    frame = frame.sort_values("pickup_datetime", kind="stable")
    t = frame["pickup_datetime"].astype("int64").to_numpy() // 1_000_000_000
    return np.arange(len(t), dtype=np.int64), t - t[0], frame[["speed"]].to_numpy(np.float64)


TIME_R_PERIOD = 1_000_000


def time_r(m: int, seed: int = 0):
    """TIME-R as the SAP paper defines it: ``sin(pi t / 10^6)``, no noise, from the crest.

    The paper averages over a stream far longer than a window, rising and falling flanks alike;
    a Python run times a few windows only, so they are taken on the falling flank (the stream
    starts at ``t = 5 * 10^5``), where every arrival outlives the better older objects and the
    one-pass algorithms keep the most (the hard half of the paper's average; ``bench_sap.py``
    uses the same stream).
    """
    offset = TIME_R_PERIOD // 2
    ids, t, x = generators.time_r(offset + m, period=TIME_R_PERIOD, noise=0.0, seed=seed)
    return ids[offset:] - offset, t[offset:] - offset, x[offset:]


def object_stream(name: str, m: int, window: int, quick: bool, d: int = 1, **options):
    """``m`` rows (or the whole trace, if shorter) of object stream ``name``."""
    if name == "time-u":
        return generators.time_u(m, d=d)
    if name == "time-r":
        return time_r(m)
    if name == "stock":
        ids, t, x = stock(quick, **options)
        return ids[:m], t[:m], x[:m]
    if name == "taxi":
        ids, t, x = taxi()
        return ids[:m], t[:m], x[:m]
    if name == "drifting-gaussian":
        return generators.drifting_gaussian(m, d=d, window=window, **options)
    if name == "skewed-uniform":
        return generators.skewed_uniform(m, d=d, **options)
    raise ValueError(f"unknown object workload {name!r}")


def trace_length(name: str, quick: bool, **options) -> int | None:
    """Rows in a real trace (``None`` for generated streams, which are as long as asked)."""
    if name == "stock":
        return len(stock(quick, **options)[0])
    if name == "taxi":
        return len(taxi()[0])
    return None


# --------------------------------------------------------------------------- attribute streams

def correlated(m: int, streams: int, reuse: float, memory: int, seed: int = 0):
    """The incomplete-streams paper's generator, cached on disk (it is a Python loop)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"correlated-m{m}-d{streams}-xi{reuse}-c{memory}-s{seed}.npz"
    if path.exists():
        with np.load(path) as saved:
            return saved["ids"], saved["stream"], saved["value"], saved["t"]
    ids, stream, value, t = generators.correlated_streams(m, streams=streams, seed=seed, reuse=reuse,
                                                          memory=memory)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, ids=ids, stream=stream, value=value, t=t)
    tmp.replace(path)
    return ids, stream, value, t


try:   # the ingest's mapping (pipelines/worldcup.py), so that the benchmark replays the same streams
    from pipelines.worldcup import DEFAULT_DELTA_T_MS as WORLDCUP_CHUNK_MS
    from pipelines.worldcup import DEFAULT_SECTIONS as WORLDCUP_SECTIONS
    from pipelines.worldcup import OTHER_SECTION as WORLDCUP_OTHER
except ImportError:
    WORLDCUP_CHUNK_MS, WORLDCUP_SECTIONS, WORLDCUP_OTHER = 5_000, ("images", "english", "french"), "other"


@functools.cache
def worldcup_table():
    """Bytes per (5 s chunk, site section, client), cached on disk.

    The ingest's mapping (``pipelines/worldcup.py``, incomplete-streams paper 6.1.1 with site
    sections for the servers the sample lacks) read without Spark: a line is
    ``client,date,time,url...,status,size`` (a URL may hold commas), ``-`` sizes count 0
    bytes, the section is the first URL path segment (sections outside the ingest's list go to
    ``other``), ``chunk`` = milliseconds since the epoch // ``delta t``.
    """
    path, = trace_files("worldcup/wc_day6_1_sample.tar.bz2")
    cached = CACHE / f"worldcup-chunks-{WORLDCUP_CHUNK_MS}-{'-'.join(WORLDCUP_SECTIONS)}.parquet"
    if cached.exists() and cached.stat().st_mtime >= path.stat().st_mtime:
        return pd.read_parquet(cached)
    with tarfile.open(path) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(".csv"))
        lines = archive.extractfile(member).read().decode("latin-1").splitlines()
    clients, stamps, urls, sizes = [], [], [], []
    for line in lines:
        fields = line.split(",")
        if len(fields) < 6 or not fields[0].isdigit() or not (fields[-1] == "-" or fields[-1].isdigit()):
            continue
        clients.append(int(fields[0]))
        stamps.append(f"{fields[1]} {fields[2]}")
        urls.append(",".join(fields[3:-2]))
        sizes.append(0 if fields[-1] == "-" else int(fields[-1]))
    when = pd.to_datetime(pd.Series(stamps), format="%d/%b/%Y %H:%M:%S", errors="coerce", utc=True)
    keep = when.notna().to_numpy()
    epoch_ms = when[keep].astype("int64").to_numpy() // 1_000_000
    section = pd.Series(urls)[keep].str.extract(r"^/*([^/?]*)", expand=False)
    section = section.where(section.isin(WORLDCUP_SECTIONS), WORLDCUP_OTHER)
    grouped = (pd.DataFrame({"chunk": epoch_ms // WORLDCUP_CHUNK_MS, "section": section.to_numpy(),
                             "client": np.asarray(clients)[keep], "bytes": np.asarray(sizes)[keep]})
               .groupby(["chunk", "section", "client"], as_index=False)["bytes"].sum())
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    grouped.to_parquet(tmp)
    tmp.replace(cached)
    return grouped


def worldcup(streams: int):
    """Attribute stream over the first ``streams`` of the ingest's streams (sections, then ``other``).

    Values: chunk bytes / the largest chunk's bytes (in [0, 1]); ``t`` = chunk start (epoch
    ms); rows ordered by ``t``, stream, client, as the ingest assigns ``seq``.
    """
    grouped = worldcup_table()
    names = list(WORLDCUP_SECTIONS) + [WORLDCUP_OTHER]
    if not 1 <= streams <= len(names):
        raise ValueError(f"the World Cup sample has {len(names)} streams ({', '.join(names)}), asked for {streams}")
    number = {name: i for i, name in enumerate(names)}
    scale = grouped["bytes"].max()
    part = grouped.assign(stream=grouped["section"].map(number))
    part = part[part["stream"] < streams].sort_values(["chunk", "stream", "client"], kind="stable")
    return (part["client"].to_numpy(np.int64), part["stream"].to_numpy(np.int64),
            (part["bytes"] / scale).to_numpy(np.float64), (part["chunk"] * WORLDCUP_CHUNK_MS).to_numpy(np.int64),
            names[:streams])
