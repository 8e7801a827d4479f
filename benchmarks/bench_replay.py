"""Replay on Spark against the engine alone (issue 9), over the SPY + BAC 5-day market stream.

(a) ``oracle``, count window 100,000, slide 100 (engine time dominates): wall time at C = 1 and
    C = 2; target C = 2 at least 1.6x faster.
(b) 4 queries x 4 algorithms at C = 1: replay wall time less Spark's start-up, against the same
    tasks run one after the other in one process by the engine alone; target <= 0.75x.
(c) peak memory (proportional set size, so pages shared by forked workers count once) of the
    replay's whole process tree (driver, JVM, Python workers); target < 2 GB.
(d) SAO's parallel version (Luo, Wu, Yu, KAIS, Section 3.8: C computers, tuples partitioned
    round-robin, one SAO index per computer, the local top-K merged) as the sharded replay: the
    replay's shards are that partition (``seq % C``), each shard's task keeps its own index of
    budget M, and the loader merges the shards' answers per slide.  SAO (M = 100, a count window
    of 20,000, slide 200, K = 10, three features: M / W = 0.5%) replays the first
    :data:`SAO_ROWS` rows of the market stream at C = 1 and C = 2; from the run's
    ``slide_metrics``: SAO's time (the slowest shard's per slide, summed), precision and error
    against the oracle the replay adds, and measured bytes per shard; and the CPU seconds of the
    slowest shard's index when the same shard streams are fed to SAO in this process
    (``shard_cpu_s``: the replay's per-slide times are wall times of tasks sharing 2 cores with
    each other and the oracle's).  The C = 2 row carries ``speedup_sao`` (``shard_cpu_s`` at
    C = 1 over C = 2: the per-computer work), ``speedup_sao_wall`` (the same of the replay's
    times) and ``precision_change`` (C = 2 less C = 1).  Quick mode: the synthetic stream, a
    window of 10,000, slide 100, M = 50 (the same M / W).  The window is small because SAO's
    ``stats()``, which every replay task calls per slide, costs about 95 ms at W = 100,000.

On a machine shared with other work, wall times depend on the share of the cores each run
gets, so the module also reports CPU seconds: of the replay's whole process tree (driver,
JVM, Python workers; ``/proc``; ``tree_cpu_s`` from the process's start, ``replay_cpu_s``
from the session being ready, so without Spark's start-up), and of the engine alone
(``time.process_time``).  ``cpu_vs_engine_alone`` (``replay_cpu_s`` over the engine alone's)
is the replay's overhead independent of that share (the issue's "both cores busy, at most
1.5x overhead").

Every replay runs as its own ``python -m pipelines.replay`` process on ``local[2]``; its log
gives Spark's start-up and the replay's time (``replay_s``: from the session being ready to
the run marked finished in DuckDB, so neither Spark's start-up nor its stop).  The market dataset is built once under
``var/bench``: ``python -m pipelines.ingest stock`` of the five SPY and the five BAC days into
one market-wide dataset (ids unique across symbols, ``seq`` in time order).  Quick mode replays a small synthetic
stream instead, in the same way.

Full mode runs every replay and the engine alone :data:`REPEATS` times and reports the run
with the median replay time, the medians' ratios, and (``*_range``) the ratio's spread over
every pair of runs: on this 2-core machine a replay's time varies by about 5% from run to run.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import engine
from benchmarks.common import data_dir
from engine.stream import Batch
from engine.warmup import load_kernels
from pipelines.replay_tasks import dataset_files

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "var" / "bench"
DB = WORK / "bench.duckdb"
DAYS = ["20131007", "20131008", "20131009", "20131010", "20131011"]
FEATURES = ["notional", "price", "size"]
MASTER = "local[2]"

ENGINE_QUERY = {"weights": {"notional": 1.0}, "k": 10, "window": 100_000, "slide": 100, "kind": "count"}
MIXED_QUERIES = [
    {"weights": {"notional": 1.0}, "k": 10, "window": 10_000, "slide": 100, "kind": "count"},
    {"weights": {"price": 1.0, "size": 0.001}, "k": 10, "window": 100_000, "slide": 1_000, "kind": "count"},
    {"weights": {"notional": 1.0}, "k": 10, "window": 60_000, "slide": 10_000, "kind": "time"},
    {"weights": {"size": 1.0}, "k": 20, "window": 600_000, "slide": 60_000, "kind": "time"},
]
MIXED_ALGORITHMS = ["oracle", "mintopk", "pretopk", "sma"]
QUICK_ROWS = 60_000
SAO_QUERY = {"weights": {"notional": 1.0, "price": -0.5, "size": 0.2}, "k": 10, "window": 20_000, "slide": 200,
             "kind": "count"}
SAO_MEMORY = 100
SAO_ROWS = 120_000
"""Rows of the market stream SAO's sharded replay takes (its first, in ``seq`` order)."""
REPEATS = 3
"""Runs of every case in full mode; the report gives the median run and the spread."""


def run(quick: bool = False) -> list[dict]:
    WORK.mkdir(parents=True, exist_ok=True)
    dataset = quick_dataset() if quick else market_dataset()
    repeats = 1 if quick else REPEATS
    rows = []
    engine_query = dict(ENGINE_QUERY, window=10_000, slide=10) if quick else ENGINE_QUERY
    single = {}
    for shards in (1, 2):
        result = median_run([replay_process(f"engine-c{shards}", dataset, [engine_query], ["oracle"], shards)
                             for _ in range(repeats)])
        single[shards] = result
        rows.append(row("a", f"oracle n={engine_query['window']} s={engine_query['slide']} C={shards}", result))
    rows[-1]["speedup"] = single[1]["replay_s"] / single[2]["replay_s"]
    rows[-1]["speedup_range"] = spread(single[1]["replay_runs"], single[2]["replay_runs"])
    queries = [dict(q, window=q["window"] // 10, slide=q["slide"] // 10) for q in MIXED_QUERIES] if quick else MIXED_QUERIES
    mixed = median_run([replay_process("mixed", dataset, queries, MIXED_ALGORITHMS, 1) for _ in range(repeats)])
    alone_runs = [engine_alone(dataset, queries, MIXED_ALGORITHMS) for _ in range(repeats)]
    alone, alone_cpu = statistics.median(w for w, _ in alone_runs), statistics.median(c for _, c in alone_runs)
    rows.append(row("b", f"{len(queries)} queries x {len(MIXED_ALGORITHMS)} algorithms C=1", mixed,
                    engine_alone_s=alone, vs_engine_alone=mixed["replay_s"] / alone,
                    vs_engine_alone_range=spread(mixed["replay_runs"], [w for w, _ in alone_runs]),
                    engine_alone_cpu_s=alone_cpu, cpu_vs_engine_alone=mixed["replay_cpu_s"] / alone_cpu))
    rows.extend(sao_parallel(dataset if quick else prefix_dataset(dataset, SAO_ROWS), quick))
    return rows


def sao_parallel(dataset: tuple[str, Path], quick: bool) -> list[dict]:
    """(d): SAO replayed at C = 1 and C = 2 over the same rows, measured from ``slide_metrics``."""
    query = dict(SAO_QUERY, window=10_000, slide=100) if quick else SAO_QUERY
    memory = SAO_MEMORY * query["window"] // SAO_QUERY["window"]
    rows = []
    for shards in (1, 2):
        name = f"sao-c{shards}"
        result = replay_process(name, dataset, [query], [{"name": "sao", "params": {"memory": memory}}], shards)
        with duckdb.connect(str(WORK / f"{name}.duckdb"), read_only=True) as con:
            slides, seconds, precision, avg_error, max_error, measured = con.execute(
                "SELECT count(*), sum(seconds), avg(coalesce(precision, 1)), avg(coalesce(error, 0)), "
                "max(coalesce(error, 0)), avg(measured_bytes) FROM slide_metrics WHERE algorithm <> 'oracle'"
            ).fetchone()
        shard_cpu = sao_shard_cpu(dataset, query, memory, shards)
        extra = {} if shards == 1 else {"speedup_sao": rows[0]["shard_cpu_s"] / shard_cpu,
                                        "speedup_sao_wall": rows[0]["sao_s"] / seconds,
                                        "precision_change": precision - rows[0]["avg_precision"]}
        rows.append(row("d", f"sao M={memory} n={query['window']} s={query['slide']} k={query['k']} C={shards}",
                        dict(result, replay_runs=[result["replay_s"]]), algorithm="sao", shards=shards,
                        memory=memory, sao_s=seconds, shard_cpu_s=shard_cpu,
                        sao_objects_per_s=result["rows"] / shard_cpu,
                        avg_precision=precision, avg_error=avg_error, max_error=max_error,
                        kib_per_shard=measured / shards / 1024, timed_slides=slides, n=query["window"],
                        s=query["slide"], **extra))
    return rows


def sao_shard_cpu(dataset: tuple[str, Path], query: dict, memory: int, shards: int) -> float:
    """CPU seconds of the slowest of ``shards`` SAO indexes, each fed in this process the rows a
    replay task of that shard gets (``seq % C``, the global slides): the per-computer work of the
    paper's parallel version, free of the 2 shared cores' contention that the replay's per-slide
    wall times include."""
    table = pq.read_table(dataset[1], columns=["id", "seq", "t", *FEATURES]).sort_by("seq")
    x = np.column_stack([table.column(f).to_numpy() for f in FEATURES])
    q = engine.Query(weights=[query["weights"].get(f, 0.0) for f in FEATURES], k=query["k"], window=query["window"],
                     slide=query["slide"], kind=query["kind"])
    load_kernels("sao", dimensions=len(FEATURES))  # else the first shard measured (C = 1) pays numba's load
    indexes = [engine.create("sao", q, memory=memory) for _ in range(shards)]
    cpu = [0.0] * shards
    for batch in engine.slides((table.column("id").to_numpy(), table.column("t").to_numpy(), x), q):
        for shard, index in enumerate(indexes):
            mask = batch.seq % shards == shard
            part = Batch(ids=batch.ids[mask], seq=batch.seq[mask], t=batch.t[mask], x=batch.x[mask], end=batch.end,
                         index=batch.index)
            began = time.process_time()
            index.process(part)
            index.topk()
            cpu[shard] += time.process_time() - began
    return max(cpu)


def median_run(results: list[dict]) -> dict:
    """The run with the median replay time, with every run's replay time (``replay_runs``) and the
    largest peak memory of all."""
    ordered = sorted(results, key=lambda result: result["replay_s"])
    return dict(ordered[(len(ordered) - 1) // 2], replay_runs=[result["replay_s"] for result in results],
                peak_bytes=max(result["peak_bytes"] for result in results))


def spread(numerators: list[float], denominators: list[float]) -> str:
    """``low-high`` of the ratio over every pair of runs (the run-to-run spread of a ratio of medians).

    >>> spread([10.0, 12.0], [5.0, 6.0])
    '1.67-2.40'
    >>> spread([3.0], [4.0, 6.0])
    '0.50-0.75'
    """
    ratios = [n / d for n in numerators for d in denominators]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def row(part: str, case: str, result: dict, **extra) -> dict:
    return {"bench": "replay", "part": part, "case": case, "rows": result["rows"], "slides": result["slides"],
            "wall_s": result["wall_s"], "spark_start_s": result["spark_start_s"], "replay_s": result["replay_s"],
            "runs": len(result["replay_runs"]), "driver_load_s": result["load_s"], "tree_cpu_s": result["cpu_s"],
            "replay_cpu_s": result["replay_cpu_s"],
            "peak_tree_mb": result["peak_bytes"] / 2 ** 20, **extra}


# --- data ------------------------------------------------------------------------------------------

def market_dataset() -> tuple[str, Path]:
    """``market``: SPY and BAC, five days each, one multi-symbol stock dataset (ingested once, then reused)."""
    if not dataset_recorded("market"):
        files = [Path(data_dir()) / "stock" / f"{symbol}_{day}_trade.zip" for symbol in ("spy", "bac") for day in DAYS]
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            raise FileNotFoundError(f"bench_replay needs the 10 stock files in {data_dir()}/stock "
                                    f"(--data-dir or $TOPK_DATA); missing: {', '.join(missing)}")
        subprocess.run([sys.executable, "-m", "pipelines.ingest", "stock", "--input", *map(str, files),
                        "--db", str(DB), "--out", str(WORK), "--name", "market", "--master", MASTER],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return "market", Path(recorded_parquet("market"))


def prefix_dataset(dataset: tuple[str, Path], rows: int) -> tuple[str, Path]:
    """The first ``rows`` rows of ``dataset`` (in ``seq`` order) as a dataset of their own."""
    name = f"{dataset[0]}-first-{rows}"
    parquet = WORK / f"{name}.parquet"
    if not parquet.exists():
        table = pq.read_table(dataset[1], columns=["id", "seq", "t", *FEATURES]).sort_by("seq").slice(0, rows)
        pq.write_table(table, parquet)
    record(name, parquet, "stock")
    return name, parquet


def quick_dataset() -> tuple[str, Path]:
    parquet = WORK / "quick.parquet"
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.integers(0, 40, QUICK_ROWS))
    pq.write_table(pa.table({"id": np.arange(QUICK_ROWS), "seq": np.arange(QUICK_ROWS), "t": t,
                             **{f: rng.random(QUICK_ROWS) * 100 for f in FEATURES}}), parquet)
    record("quick", parquet, "synthetic")
    return "quick", parquet


def dataset_recorded(name: str) -> bool:
    if not DB.exists():
        return False
    with duckdb.connect(str(DB)) as con:
        try:
            return con.execute("SELECT count(*) FROM datasets WHERE name = ?", [name]).fetchone()[0] > 0
        except duckdb.CatalogException:
            return False


def recorded_parquet(name: str) -> str:
    with duckdb.connect(str(DB)) as con:
        return con.execute("SELECT parquet FROM datasets WHERE name = ?", [name]).fetchone()[0]


def record(name: str, parquet: Path, family: str) -> None:
    from pipelines import store

    with store.connection(DB) as con:
        store.insert_row(con, "datasets", {"name": name, "family": family, "features": FEATURES,
                                           "parquet": str(parquet), "t_unit": "ms"}, replace=True)


def fresh_database(name: str, dataset: str) -> Path:
    """``var/bench/<name>.duckdb`` holding only the dataset's record: every replay measured
    writes into an empty results database, as a first run does."""
    from pipelines import store

    db = WORK / f"{name}.duckdb"
    db.unlink(missing_ok=True)
    with duckdb.connect(str(DB)) as con:
        columns = [c[0] for c in con.execute("SELECT * FROM datasets LIMIT 0").description]
        row = con.execute("SELECT * FROM datasets WHERE name = ?", [dataset]).fetchone()
    with store.connection(db) as con:
        store.insert_row(con, "datasets", dict(zip(columns, row)))
    return db


# --- measuring -------------------------------------------------------------------------------------

def replay_process(name: str, dataset: tuple[str, Path], queries: list[dict], algorithms: list[str | dict],
                   shards: int) -> dict:
    """Run one replay as its own process; wall time, Spark start-up and the tree's peak memory.
    An algorithm is a name or a config entry (``{"name": ..., "params": ...}``)."""
    config = WORK / f"{name}.json"
    entries = [a if isinstance(a, dict) else {"name": a} for a in algorithms]
    config.write_text(json.dumps({"name": name, "dataset": dataset[0], "shards": shards, "queries": queries,
                                  "algorithms": entries}))
    db = fresh_database(name, dataset[0])
    began = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen([sys.executable, "-m", "pipelines.replay", "--config", str(config), "--db", str(db),
                                    "--master", MASTER], cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True)
        peak = PeakMemory(process.pid)
        lines, cpu_at_start = [], 0.0
        for line in process.stdout:
            lines.append(line)
            if " started in " in line:
                cpu_at_start = peak.cpu_seconds()
        process.wait()
        wall = time.perf_counter() - began
        peak.stop()
        cpu = peak.cpu_seconds()
        errors.seek(0)
        err = errors.read()
    out = "".join(lines)
    if process.returncode != 0:
        raise RuntimeError(f"replay {name} failed: {err.strip().splitlines()[-1:]}")
    started = float(re.search(r"Spark \S+ started in ([\d.]+) s", out).group(1))
    replayed = float(re.search(r"finished in DuckDB: ([\d.]+) s", out).group(1))
    slides = int(re.search(r": ([\d,]+) slides,", out).group(1).replace(",", ""))
    loading = float(re.search(r"\(([\d.]+) s of loading", out).group(1))
    return {"wall_s": wall, "spark_start_s": started, "replay_s": replayed, "peak_bytes": peak.peak,
            "load_s": loading, "cpu_s": cpu, "replay_cpu_s": cpu - cpu_at_start,
            "slides": slides, "rows": sum(pq.read_metadata(path).num_rows for path in dataset_files(dataset[1]))}


def engine_alone(dataset: tuple[str, Path], queries: list[dict], algorithms: list[str]) -> tuple[float, float]:
    """Seconds to run every (query, algorithm) one after the other in this process, as a task does:
    process, topk and stats (modelled and measured bytes) per slide.  Returns wall and CPU seconds."""
    table = pq.read_table(dataset[1]).sort_by("seq")
    ids, t = table.column("id").to_numpy(), table.column("t").to_numpy()
    x = np.column_stack([table.column(f).to_numpy() for f in FEATURES])
    for name in algorithms:                 # kernels loaded untimed, whether or not earlier modules did
        load_kernels(name)
    began, began_cpu = time.perf_counter(), time.process_time()
    for spec in queries:
        weights = [spec["weights"].get(f, 0.0) for f in FEATURES]
        query = engine.Query(weights=weights, k=spec["k"], window=spec["window"], slide=spec["slide"], kind=spec["kind"])
        for name in algorithms:
            algorithm = engine.create(name, query)
            for batch in engine.slides((ids, t, x), query):
                algorithm.process(batch)
                algorithm.topk()
                algorithm.stats()
    return time.perf_counter() - began, time.process_time() - began_cpu


class PeakMemory:
    """Polls the proportional set size of a process and all its descendants (Linux ``/proc``)."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid, self.every, self.peak = pid, every, 0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_seconds(self) -> float:
        """CPU seconds of every process of the tree, as last seen alive."""
        return sum(self._cpu.values())

    def _poll(self) -> None:
        while not self._stop.wait(self.every):
            pids = tree(self.pid)
            self.peak = max(self.peak, sum(pss(pid) for pid in pids))
            for pid in pids:
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                self._cpu[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def pss(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    found = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) * 1024 if found else 0


COLUMNS = ["part", "case", "rows", "slides", "runs", "spark_start_s", "replay_s", "driver_load_s", "speedup",
           "speedup_range", "engine_alone_s", "vs_engine_alone", "vs_engine_alone_range", "tree_cpu_s", "replay_cpu_s",
           "engine_alone_cpu_s", "cpu_vs_engine_alone", "peak_tree_mb", "sao_s", "sao_objects_per_s", "avg_precision",
           "avg_error", "max_error", "kib_per_shard", "shard_cpu_s", "speedup_sao", "speedup_sao_wall", "precision_change"]
