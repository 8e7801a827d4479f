"""``make bench`` / ``make bench-quick``: every benchmark, stored, then the report.

1. The registry's grid (``benchmarks.registry``): every registered algorithm beside the
   oracle and DuckDB SQL on TIME-U, TIME-R, stock, taxi, the SAO sets and the incomplete
   streams (``benchmarks.harness``).
2. Every module ``benchmarks/bench_*.py`` present (each exposes ``COLUMNS`` and
   ``run(quick) -> list[dict]``); one that fails is reported and the others still run.  The
   quick run leaves out the modules that start Spark (``SPARK_MODULES``; ``--with-spark``).
3. Every row gets the run's provenance (``run_id``, when, cores, CPU model, Python, git
   commit, load average: the machine may be shared) and is appended to the DuckDB table
   ``bench_results`` (default ``var/bench.duckdb``, a file of its own so a benchmark never
   waits for the pipelines' lock on ``var/topk.duckdb``; ``--db`` chooses another) and
   written as CSV, one file per benchmark, in ``benchmarks/results/`` (the latest run of each
   benchmark: a run replaces the files of the families and modules it ran and keeps the others';
   ``latest.json`` holds all this run's rows for the dashboard).
4. ``docs/REPORT.md`` and its plots are regenerated from those CSV files
   (``benchmarks.report``), and the generated tables of ``docs/algorithms/*.md``.

``--estimate`` runs nothing: it projects how long each part would take under the current harness
from the rows of the last run in ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import sys
import time
import traceback
import uuid

import duckdb
import numpy as np
import pandas as pd

from benchmarks import harness, registry
from benchmarks.common import DATA_ENV, DATA_SOURCES, machine_info, required_slides, table

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results"
DEFAULT_DB = HERE.parent / "var" / "bench.duckdb"
FAMILIES = {"sap": registry.sap_cases, "sao": registry.sao_cases, "incomplete": registry.incomplete_cases}
FAMILY_COLUMNS = {"sap": harness.COLUMNS, "sao": harness.SAO_COLUMNS, "incomplete": harness.INCOMPLETE_COLUMNS}

# Columns of bench_results; every field of a row is also kept in the JSON column ``row_json``.
# Row keys that are SQL keywords get plain column names: when -> run_at, case -> case_name,
# commit -> git_commit.
RENAMED = {"when": "run_at", "case": "case_name", "commit": "git_commit"}
STORED = {"run_id": "VARCHAR", "run_at": "TIMESTAMPTZ", "quick": "BOOLEAN", "module": "VARCHAR", "bench": "VARCHAR",
          "family": "VARCHAR", "sweep": "VARCHAR", "case_name": "VARCHAR", "workload": "VARCHAR",
          "algorithm": "VARCHAR", "n": "BIGINT", "k": "BIGINT", "s": "BIGINT", "d": "BIGINT", "kind": "VARCHAR",
          "objects_per_s": "DOUBLE", "spread_pct": "DOUBLE", "vs_oracle": "DOUBLE", "vs_sql": "DOUBLE",
          "avg_candidates": "DOUBLE", "avg_retained": "DOUBLE", "bytes": "BIGINT", "measured_bytes": "BIGINT",
          "peak_tracemalloc_bytes": "BIGINT", "precision": "DOUBLE", "status": "VARCHAR",
          "cores": "INTEGER", "cpu_model": "VARCHAR", "python": "VARCHAR", "machine": "VARCHAR",
          "git_commit": "VARCHAR", "load_1m": "DOUBLE", "load_5m": "DOUBLE", "row_json": "JSON"}


SPARK_MODULES = ("bench_ingest", "bench_replay", "bench_dashboard", "bench_agreement")
"""Modules that start Spark or need what it made (tens of seconds each, minutes on a busy machine;
``bench_dashboard`` drives Chromium and ``bench_agreement`` reads the database ``make run`` fills): the full run only,
unless ``--quick --with-spark`` or ``--only`` names them."""


def load_now() -> float:
    """The 1-minute load average now (each case and module records it: the machine may be shared)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return float("nan")


def discover() -> list[str]:
    """Names of the ``benchmarks/bench_*.py`` modules present, sorted."""
    return sorted(path.stem for path in HERE.glob("bench_*.py"))


def run_grid(families: list[str], quick: bool) -> list[dict]:
    rows = []
    for family in families:
        cases = FAMILIES[family](quick)
        print(f"== grid {family}: {len(cases)} cases", flush=True)
        found = []
        for number, case in enumerate(cases, 1):
            started = time.perf_counter()
            try:
                part = harness.run_case(case, quick)
            except Exception as error:  # a broken case must not lose the others' results
                traceback.print_exc()
                part = [{"bench": f"grid-{case.family}", "family": case.family, "sweep": case.sweep,
                         "case": case.label, "workload": case.workload, "algorithm": "(case)",
                         "status": f"error: {type(error).__name__}: {error}"}]
            load = load_now()
            for row in part:
                row["load_1m_at"] = load
            print(f"  [{number}/{len(cases)}] {case.label}: {len(part)} rows in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
            found += part
        for row in found:
            row["module"] = "harness"
        if found:
            print(table(found, FAMILY_COLUMNS[family]), flush=True)
        rows += found
    return rows


def run_modules(names: list[str], quick: bool) -> list[dict]:
    rows = []
    for name in names:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            found = module.run(quick=quick)
            print(table(found, module.COLUMNS), flush=True)
        except Exception as error:  # one broken module must not lose the others' results
            traceback.print_exc()
            found = [{"bench": name.removeprefix("bench_"), "status": f"error: {type(error).__name__}: {error}"}]
        seconds = round(time.perf_counter() - started, 1)
        load = load_now()
        for row in found:
            row["module"] = name
            row["load_1m_at"] = load
            row["module_seconds"] = seconds
            row.setdefault("bench", name.removeprefix("bench_"))
            row.setdefault("status", "ok")
        print(f"   {len(found)} rows in {seconds} s", flush=True)
        rows += found
    return rows


def _plain(value):
    """JSON-safe scalars (numpy types, NaN -> None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def store(rows: list[dict], db: pathlib.Path) -> None:
    """Append ``rows`` to ``bench_results`` in ``db`` (one transaction)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    columns = list(STORED)
    source = {column: key for key, column in RENAMED.items()}
    frame = pd.DataFrame([{c: (json.dumps(row) if c == "row_json" else row.get(source.get(c, c))) for c in columns}
                          for row in rows], columns=columns)
    for column, kind in STORED.items():
        if kind in ("DOUBLE",):
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
        elif kind in ("BIGINT", "INTEGER"):
            frame[column] = pd.to_numeric(frame[column], errors="coerce").round().astype("Int64")
        elif kind == "BOOLEAN":
            frame[column] = frame[column].astype("boolean")
        elif kind == "TIMESTAMPTZ":
            frame[column] = pd.to_datetime(frame[column], utc=True)
        else:
            frame[column] = frame[column].astype("string")
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE IF NOT EXISTS bench_results ("
                    + ", ".join(f'"{c}" {t}' for c, t in STORED.items()) + ")")
        con.register("incoming", frame)
        con.execute("BEGIN")
        con.execute("INSERT INTO bench_results SELECT " + ", ".join(
            f'CAST("{c}" AS {t})' for c, t in STORED.items()) + " FROM incoming")
        con.execute("COMMIT")
        con.unregister("incoming")


def write_csv(rows: list[dict], results: pathlib.Path, ran: set[str] | None = None) -> list[pathlib.Path]:
    """One CSV per benchmark (``bench``) plus ``latest.json`` (this run's rows).

    ``ran`` names what this run measured: the grid families as ``grid-<family>`` and the
    ``bench_*`` modules.  The CSV files those wrote in an earlier run are removed (a benchmark
    that ran now replaces its old file even if it now writes another, or none); the CSV files of
    benchmarks that did not run this time are kept, so ``--only``/``--families`` runs do not
    erase the others' latest results.  Default: what ``rows`` name (``bench`` and ``module``).
    """
    results.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    benches = set(frame["bench"].dropna()) if "bench" in frame else set()
    ran = set(ran if ran is not None else benches | (set(frame["module"].dropna()) if "module" in frame else set()))
    for old in results.glob("*.csv"):
        if old.stem in benches or old.stem in ran or _modules_of(old) & ran:
            old.unlink()
    written = []
    for bench, part in frame.groupby("bench", sort=True):
        path = results / f"{bench}.csv"
        part.dropna(axis=1, how="all").to_csv(path, index=False)
        written.append(path)
    path = results / "latest.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, indent=1))
    tmp.replace(path)
    return written


def _modules_of(csv: pathlib.Path) -> set[str]:
    """The ``bench_*`` modules whose rows a results CSV holds (its ``module`` column)."""
    try:
        frame = pd.read_csv(csv, usecols=lambda column: column == "module")
    except (ValueError, pd.errors.EmptyDataError):
        return set()
    return set(frame["module"].dropna().astype(str)) - {"harness"} if "module" in frame else set()


def projected_seconds(row: dict, cfg: dict) -> float | None:
    """CPU seconds one grid row of an earlier run would take under the current harness: its traced
    fill, the traced warm-up over the minimum of slides (about 3x the untraced cost), then the
    timed runs (fill + slides each, as many as ``repeat_budget`` allows); a row whose fill exceeds
    ``fill_limit``, or whose minimum would exceed ``turnover_limit`` traced, is skipped after it.
    ``None``: not enough data."""
    speed, s, n, fill = (row.get(key) for key in ("objects_per_s", "s", "n", "fill_seconds"))
    if not speed or not s or not n or fill is None or row.get("kind", "count") != "count" or \
            any(pd.isna(v) for v in (speed, s, n, fill)):
        return None
    if float(fill) > cfg["fill_limit"]:
        return cfg["fill_limit"]
    slides = required_slides(int(n), int(s))
    per_slide = float(s) / float(speed)
    traced = 3 * slides * per_slide
    if traced > cfg["turnover_limit"]:
        return float(fill) + cfg["turnover_limit"]
    one_run = (float(fill) + traced) / 2
    repeats = max(1, min(cfg["repeats"], int(cfg["repeat_budget"] / max(one_run, 1e-9))))
    return float(fill) + traced + repeats * (float(fill) / 2 + slides * per_slide)


def estimate(results: pathlib.Path, quick: bool = False) -> list[dict]:
    """How long each part of ``make bench`` (or ``bench-quick``) should take now, projected from
    the rows the last run of each part left in ``results`` (CPU seconds; a loaded machine adds
    wall time).  Grid families: per current case, the sum of its rows' projections (cases the
    results lack are counted, not guessed); modules: their last wall time, as recorded."""
    cfg = harness.settings(quick)
    out = []
    for family, cases in FAMILIES.items():
        path = results / f"grid-{family}.csv"
        old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["case"])
        by_case = {case: part for case, part in old.groupby("case")} if len(old) else {}
        seconds, known, unknown, skipped = 0.0, 0, 0, 0
        for case in cases(quick):
            part = by_case.get(case.label)
            limits = {**cfg, **dict(case.limits)}
            projections = [projected_seconds(row, limits) for row in part.to_dict("records")] if part is not None else []
            if not projections or any(p is None for p in projections):
                unknown += 1
                continue
            known += 1
            seconds += sum(projections)
            skipped += sum(p >= limits["turnover_limit"] for p in projections)
        out.append({"part": f"grid {family}", "cases": known + unknown, "projected_cases": known,
                    "projected_seconds": round(seconds), "cases_without_data": unknown,
                    "rows_hitting_turnover_limit": skipped})
    for name in discover():
        stem = name.removeprefix("bench_")
        path = results / f"{stem}.csv"
        frame = pd.read_csv(path) if path.exists() else pd.DataFrame()
        last = frame["module_seconds"].dropna() if "module_seconds" in frame else pd.Series(dtype=float)
        out.append({"part": name, "last_wall_seconds": float(last.iloc[0]) if len(last) else None,
                    "last_quick": bool(frame["quick"].iloc[0]) if "quick" in frame and len(frame) else None})
    return out


def main(argv=None) -> int:
    modules = discover()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small cases only (a couple of minutes)")
    parser.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES),
                        help="grid families to run (default: all)")
    parser.add_argument("--only", nargs="*", default=None, choices=modules,
                        help="bench_*.py modules to run (default: every one present, with --quick all but the "
                             "Spark ones; none: --only)")
    parser.add_argument("--with-spark", action="store_true",
                        help=f"with --quick, run the Spark modules too ({', '.join(SPARK_MODULES)})")
    parser.add_argument("--db", type=pathlib.Path, default=DEFAULT_DB, help=f"DuckDB file for bench_results (default: {DEFAULT_DB})")
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS, help=f"directory of the CSV files (default: {RESULTS})")
    parser.add_argument("--data-dir", type=pathlib.Path, default=None,
                        help=f"directory of the public traces larger than sample_data/ (default ${DATA_ENV}, "
                             f"else var/data).\n{DATA_SOURCES}")
    parser.add_argument("--no-report", action="store_true", help="do not regenerate docs/REPORT.md")
    parser.add_argument("--estimate", action="store_true",
                        help="only print how long each part should take, projected from the last results")
    args = parser.parse_args(argv)
    if args.data_dir is not None:
        os.environ[DATA_ENV] = str(args.data_dir)
    if args.estimate:
        print(table(estimate(args.results, args.quick), ["part", "cases", "projected_cases", "projected_seconds",
                                                         "cases_without_data", "rows_hitting_turnover_limit",
                                                         "last_wall_seconds", "last_quick"]))
        return 0
    if args.only is None:
        skipped = [m for m in modules if m in SPARK_MODULES] if args.quick and not args.with_spark else []
        args.only = [m for m in modules if m not in skipped]
        if skipped:
            print(f"quick run: {', '.join(skipped)} start Spark and run in the full run only "
                  "(--with-spark to include them)", flush=True)
    started = time.perf_counter()
    meta = machine_info()
    meta["run_id"] = f"{meta['when']}-{uuid.uuid4().hex[:6]}"
    print(f"run {meta['run_id']} on {meta['cores']} x {meta['cpu_model']}, load {meta['load_1m']}, "
          f"commit {meta['commit'][:12]}", flush=True)
    rows = run_grid(args.families, args.quick) + run_modules(args.only, args.quick)
    meta["load_1m_end"] = machine_info()["load_1m"]
    meta["total_seconds"] = round(time.perf_counter() - started, 1)
    rows = [_plain({**row, **meta, "quick": args.quick}) for row in rows]
    if not rows:
        print("no results")
        return 1
    store(rows, args.db)
    written = write_csv(rows, args.results, ran={f"grid-{family}" for family in args.families} | set(args.only))
    print(f"saved {len(rows)} rows to {args.db} (bench_results) and {len(written)} CSV files in {args.results}")
    if not args.no_report:
        from benchmarks import report
        print(f"report: {report.main(['--results', str(args.results)])}")
    return 0


if __name__ == "__main__":
    from engine.cli import command_status

    sys.exit(command_status(main))
