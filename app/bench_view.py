"""The Benchmarks page's pieces: which results make a family, how a sweep is read, the papers' figures.

The frame functions are pure (tested without Streamlit); the ``*_section`` functions draw.
Every reader tolerates missing columns and unknown files: a benchmark shows what it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app import charts, data

MEASURES: dict[str, tuple[str, str]] = {
    "objects_per_s": ("objects/s", "objects (rows of the stream) processed per second of CPU, answer of every "
                                   "slide included; median of several timed runs after a warm-up run"),
    "vs_oracle": ("× oracle", "objects/s divided by the oracle's on the same slides (numpy window + "
                              "argpartition, the exact baseline); above 1 = faster than the baseline"),
    "vs_sql": ("× SQL", "objects/s divided by DuckDB SQL's (one ORDER BY score DESC LIMIT k query per slide)"),
    "vs_mintopk": ("× MinTopK", "objects/s divided by MinTopK's on the same slides"),
    "avg_candidates": ("candidates", "objects the algorithm keeps as possible answers, averaged over slides"),
    "avg_retained": ("retained", "objects stored in any structure (candidates and bookkeeping), averaged"),
    "bytes": ("modelled bytes", "the cost model of docs/algorithms/memory.md: 8 bytes per stored value, id, "
                                "seq, time and pointer"),
    "measured_bytes": ("measured bytes", "real size of the algorithm's Python structures (engine/memory.py)"),
    "peak_tracemalloc_bytes": ("peak bytes", "peak of Python allocations while the algorithm ran (tracemalloc)"),
    "precision": ("precision", "share of the exact top-k ids an approximate algorithm returned (1 = all)"),
    "avg_error": ("average error", "SAO: mean relative score error of the answers against the exact ones"),
    "filtering_ratio": ("filtering ratio", "SAO: share of the window's objects the index drops (1 = all)"),
    "spread_pct": ("spread", "range of the timed runs' objects/s as a % of the median: how noisy a figure is"),
}
"""Column -> (label, what it means), for captions, table headers and the page's glossary."""

PAPER_NAMES = {"TIME-U": "time-u", "TIME-R": "time-r"}
CHART_HEIGHT = 360


@dataclass(frozen=True)
class Family:
    """A family of the benchmark grid: its results files, its papers and what its charts plot."""

    key: str
    title: str
    about: str
    grid: str | None
    modules: tuple[str, ...]
    papers: tuple[str, ...]
    metrics: tuple[tuple[str, str], ...]
    defaults: dict[str, str] = field(default_factory=dict)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(name for name in (self.grid, *self.modules) if name)


FAMILIES = (
    Family("single", "Exact single-stream algorithms: MinTopK, SAP and their competitors",
           "Every exact algorithm on the same slides of TIME-U, TIME-R (the SAP paper's synthetic streams), the "
           "stock notional and the taxi speed, with n (window), k and s (slide) swept as in the SAP paper's "
           "Table 1, scaled to this machine.",
           "grid-sap", ("competitors", "mintopk"), ("mintopk", "sap"),
           (("objects_per_s", "objects/s"), ("vs_oracle", "× oracle (objects/s ratio)"),
            ("avg_candidates", "candidates (objects)"), ("kib", "modelled memory (KiB)")),
           {"sweep": "k"}),
    Family("sap", "SAP against MinTopK and the k-skyband",
           "`benchmarks/bench_sap.py`: SAP's partitions (equal, dynamic, enhanced dynamic) against MinTopK on "
           "the paper's grid of k and s.",
           None, ("sap",), ("sap",), ()),
    Family("sao", "SAO: one approximate index answering any weights",
           "SAO keeps M of the window's W objects in L layers and answers a new weight vector at once; swept "
           "over M (memory), L (layers), the allocation strategy, d (features) and drift, against the oracle.",
           "grid-sao", ("sao",), ("sao",),
           (("objects_per_s", "objects/s"), ("avg_error", "average relative error"),
            ("filtering_ratio", "filtering ratio (share dropped)"), ("kib", "modelled memory (KiB)")),
           {"sweep": "memory"}),
    Family("incomplete", "Incomplete streams: SLA, EAA and approx",
           "Attribute streams (one value of one object per tuple): SLA keeps the window, EAA prunes what cannot "
           "reach the answer, approx keeps a bounded sample; swept over W, k, the number of streams and ξ, on "
           "correlated synthetic streams and the World Cup logs.",
           "grid-incomplete", ("incomplete",), ("incomplete",),
           (("objects_per_s", "tuples/s"), ("avg_retained", "retained (objects)"),
            ("precision", "precision (share of the exact ids)"), ("vs_oracle", "× oracle (tuples/s ratio)")),
           {"sweep": "k"}),
)

SWEEP_COLUMNS = {"memory": "param_memory", "layers": "param_layers", "allocation": "param_allocation",
                 "drift": "opt_drift", "skew": "opt_p", "xi": "opt_xi", "streams": "d"}
"""A sweep's parameter column where its name is not a column itself."""
SWEEP_TITLES = {"n": "n (window, objects)", "k": "k", "s": "s (slide, objects)", "cnw": "C_nw = n / s",
                "memory": "M (objects kept)", "layers": "L (layers)", "allocation": "allocation strategy",
                "d": "d (features)", "drift": "drift D", "skew": "skew p", "xi": "ξ", "streams": "streams"}


def sweeps(frame: pd.DataFrame) -> list[str]:
    """The sweeps of a grid's rows (``sweep`` holds comma-separated names), ``default`` left out.

    >>> sweeps(pd.DataFrame({"sweep": ["default,k,s", "k", "n"]}))
    ['k', 's', 'n']
    """
    if "sweep" not in frame.columns:
        return []
    names = [s.strip() for value in frame["sweep"].dropna().astype(str) for s in value.split(",")]
    return [s for s in dict.fromkeys(names) if s and s != "default"]


def sweep_column(frame: pd.DataFrame, sweep: str) -> str | None:
    """The column that holds the swept parameter (``memory`` -> ``param_memory``), else ``None``.

    >>> sweep_column(pd.DataFrame({"param_memory": [1]}), "memory"), sweep_column(pd.DataFrame({"k": [1]}), "k")
    ('param_memory', 'k')
    """
    for column in (sweep, SWEEP_COLUMNS.get(sweep), f"param_{sweep}", f"opt_{sweep}"):
        if column and column in frame.columns:
            return column
    return None


def sweep_rows(frame: pd.DataFrame, workload: str | None, sweep: str) -> pd.DataFrame:
    """The rows of one sweep (its own cases and the default point) of one workload, with ``kib``.

    >>> rows = pd.DataFrame({"workload": ["a", "a", "b"], "sweep": ["default,k", "s", "k"], "k": [1, 2, 3]})
    >>> sweep_rows(rows, "a", "k")["k"].tolist()
    [1]
    """
    rows = frame
    if workload is not None and "workload" in frame.columns:
        rows = rows[rows["workload"] == workload]
    if "sweep" in rows.columns:
        rows = rows[rows["sweep"].astype(str).str.split(",").map(lambda names: sweep in [n.strip() for n in names])]
    if "bytes" in rows.columns:
        rows = rows.assign(kib=pd.to_numeric(rows["bytes"], errors="coerce") / 1024)
    return rows


def paper_points(family: str, papers: dict[str, Any], workload: str | None, sweep: str, metric: str,
                 rows: pd.DataFrame) -> pd.DataFrame | None:
    """The paper's figures for one chart, as rows ``algorithm, <sweep column>, <metric>`` (or ``None``).

    SAP paper Tables 6 and 8 (candidates, memory in KB) against k or s (s as a share of n, put at
    the n of our rows) on TIME-U and TIME-R; incomplete-streams paper Tables 1-4 (EAA's and
    approx's size, approx's precision) against streams, k and W.

    >>> papers = {"sap": {"table6_candidates": {"columns": {"k": [10, 100]},
    ...                                          "TIME-U": {"sap": {"k": [28, 286]}}}}}
    >>> rows = pd.DataFrame({"k": [10, 100], "n": [1000, 1000]})
    >>> paper_points("single", papers, "time-u", "k", "avg_candidates", rows).to_dict("list")
    {'algorithm': ['sap', 'sap'], 'k': [10.0, 100.0], 'avg_candidates': [28.0, 286.0]}
    """
    column = sweep_column(rows, sweep)
    if column is None:
        return None
    found: list[dict] = []
    if family == "single" and metric in ("avg_candidates", "kib") and sweep in ("k", "s"):
        table = papers.get("sap", {}).get("table6_candidates" if metric == "avg_candidates" else "table8_memory_kb")
        paper_workload = next((name for name, ours in PAPER_NAMES.items() if ours == workload), None)
        if not table or paper_workload not in table:
            return None
        key = "k" if sweep == "k" else "s_pct_of_n"
        xs = table.get("columns", {}).get(key, [])
        n = float(rows["n"].median()) if "n" in rows.columns and len(rows) else None
        for algorithm, series in table[paper_workload].items():
            for x, value in zip(xs, series.get(key, [])):
                at = x if sweep == "k" else (x / 100 * n if n else None)
                if at is not None:
                    found.append({"algorithm": algorithm, column: float(at), metric: float(value)})
    elif family == "incomplete" and metric in ("avg_retained", "precision"):
        paper = papers.get("incomplete", {})
        tables = {("correlated", "streams"): "table1_streams", ("correlated", "k"): "table2_k",
                  ("worldcup", "streams"): "table3_worldcup_streams", ("worldcup", "n"): "table4_worldcup_window"}
        table = paper.get(tables.get((workload, sweep), ""))
        if not table:
            return None
        xs = table.get({"streams": "streams", "k": "k", "n": "W"}[sweep], [])
        for algorithm in ("eaa", "approx") if metric == "avg_retained" else ("approx",):
            values = table.get(algorithm if metric == "avg_retained" else "precision", [])
            found += [{"algorithm": algorithm, column: float(x), metric: float(v)} for x, v in zip(xs, values)]
    return pd.DataFrame(found) if found else None


def runs_caption(frame: pd.DataFrame) -> str:
    """Which run, when, at which commit and on what machine the rows were measured.

    >>> runs_caption(pd.DataFrame({"run_id": ["r1"], "when": ["2026-11-26T04:50:57+00:00"], "commit": ["42b4a7d60a2d1"],
    ...                            "cores": [2], "cpu_model": ["Xeon"], "load_1m": [0.8]}))
    'Measured in run `r1` (2026-11-26 04:50 UTC) at commit `42b4a7d60a2d` on 2 × Xeon, load 0.8 at start.'
    >>> runs_caption(pd.DataFrame({"run_id": ["r2"], "commit": [float("nan")]}))
    'Measured in run `r2` at commit `not recorded`.'
    """
    runs = data.provenance(frame)
    if runs.empty:
        return "The run and commit of these figures are not recorded."
    parts = []
    for row in runs.itertuples():
        fields = {key: value for key, value in row._asdict().items() if not (np.isscalar(value) and pd.isna(value))}
        get = fields.get
        when = str(get("when") or "")[:16].replace("T", " ")
        commit = str(get("commit") or "not recorded")
        commit = commit[:12] + ("+dirty (uncommitted changes)" if commit.endswith("+dirty") else "")
        machine = f"{get('cores')} × {get('cpu_model')}" if get("cores") and get("cpu_model") else get("machine")
        load = f", load {get('load_1m'):g} at start" if isinstance(get("load_1m"), (int, float)) and \
            np.isfinite(get("load_1m")) else ""
        quick = " (quick run)" if get("quick") is True else ""
        parts.append(f"run `{get('run_id', 'not recorded')}`" + (f" ({when} UTC)" if when else "")
                     + f" at commit `{commit}`" + (f" on {machine}" if machine else "") + load + quick)
    return "Measured in " + "; ".join(parts) + "."


def table_of(rows: pd.DataFrame, first: list[str]) -> pd.DataFrame:
    """The rows' figures: ``first`` then every measure present, without the provenance columns."""
    measures = [c for c in MEASURES if c in rows.columns and rows[c].notna().any() and c not in first]
    return rows[[c for c in first if c in rows.columns] + measures]


def column_config(frame: pd.DataFrame) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for column in frame.columns:
        if column in MEASURES:
            label, text = MEASURES[column]
            ratio = column.startswith("vs_") or column in ("precision", "filtering_ratio", "avg_error")
            config[column] = st.column_config.NumberColumn(label, help=text,
                                                           format="%.3g" if ratio else "localized")
    return config


# ---------------------------------------------------------------- drawing

def claims(family: Family, papers: dict[str, Any]) -> None:
    """The papers' claims this family checks, with each paper cited by title, authors and venue."""
    for name in family.papers:
        paper = papers.get(name)
        if not paper:
            continue
        with st.expander(f"What the paper reports: {paper.get('title', name)}"):
            st.markdown("\n".join(f"- {c.get('text', '')} (*{c.get('source', '')}*)" for c in paper.get("claims", [])
                                  if isinstance(c, dict)) or "No claim recorded.")


def grid_section(family: Family, frame: pd.DataFrame, papers: dict[str, Any]) -> None:
    """One family of the grid: pick a workload and a swept parameter; charts, then the table."""
    names = sweeps(frame)
    workloads = list(dict.fromkeys(frame["workload"].dropna())) if "workload" in frame.columns else [None]
    left, right = st.columns(2)
    workload = left.selectbox("Workload", workloads, key=f"bench_{family.key}_workload")
    if not names:
        rows = frame
        sweep = None
    else:
        wanted = family.defaults.get("sweep")
        sweep = right.selectbox("Vary", names, index=names.index(wanted) if wanted in names else 0,
                                key=f"bench_{family.key}_sweep", format_func=lambda s: SWEEP_TITLES.get(s, s))
        rows = sweep_rows(frame, workload, sweep)
    x = sweep_column(rows, sweep) if sweep else None
    if x is None or rows.empty:
        st.caption("No sweep to draw for this choice; the table holds the figures.")
    else:
        plotted = [(m, t) for m, t in family.metrics if m in rows.columns and rows[m].notna().any()]
        columns = st.columns(2)
        for i, (metric, axis_title) in enumerate(plotted):
            paper = paper_points(family.key, papers, workload, sweep, metric, rows)
            chart = charts.sweep_chart(rows, x, SWEEP_TITLES.get(sweep, sweep), metric, axis_title, paper)
            columns[i % 2].altair_chart(chart, width="stretch", height=CHART_HEIGHT)
    st.caption(runs_caption(rows))
    with st.expander(f"Table: {len(rows)} rows of `{family.grid}.csv`"):
        shown = table_of(rows, ["case", "algorithm"])
        st.dataframe(shown, hide_index=True, width="stretch", column_config=column_config(shown))


def module_section(family: Family, name: str, frame: pd.DataFrame, papers: dict[str, Any]) -> None:
    """A ``bench_*`` module's results within its family: bars when it measures objects/s, ours beside the paper's."""
    st.subheader(f"`benchmarks/bench_{name}.py`", anchor=f"module-{name}")
    if name == "sao":
        sao_headline(frame, papers)
    elif name == "incomplete":
        incomplete_beside_paper(frame)
    if {"algorithm", "objects_per_s", "case"} <= set(frame.columns):
        rows = frame.dropna(subset=["objects_per_s"])
        st.altair_chart(charts.benchmark_family(rows, "objects_per_s", "objects/s"), width="stretch")
    st.caption(runs_caption(frame))
    with st.expander(f"Table: {len(frame)} rows of `{name}.csv`"):
        shown = frame.drop(columns=[c for c in data.PROVENANCE if c in frame.columns])
        st.dataframe(shown, hide_index=True, width="stretch", column_config=column_config(shown))


def sao_headline(frame: pd.DataFrame, papers: dict[str, Any]) -> None:
    """SAO at the paper's default point (W = 10^6, M = 500, K = 10), ours against the paper's headline."""
    headline = papers.get("sao", {}).get("headline", {})
    point = frame
    for column, value in (("W", 1_000_000), ("M", 500), ("K", 10)):
        if column in point.columns:
            point = point[point[column] == value]
    if "allocation" in point.columns:
        point = point[point["allocation"] == "dynamic-errmin"]
    if point.empty:
        return
    row = point.iloc[0]
    wanted = [("filtering ratio (%)", "filtering_pct", 100 * headline.get("filtering_ratio", np.nan)),
              ("average error (%)", "avg_error_pct", 100 * headline.get("avg_error", np.nan)),
              ("tuples/s", "rows_per_s", headline.get("tuples_per_s_at_least", np.nan)),
              ("median query time (µs)", "median_query_us", 1000 * headline.get("query_ms_at_most", np.nan))]
    table = pd.DataFrame([{"measure": label, "ours": float(row[column]), "paper": paper}
                          for label, column, paper in wanted if column in row.index])
    st.markdown(f"**At the paper's default point** (W = 1,000,000, M = 500, K = 10, d = {row.get('d', 3)}): ours "
                "beside the paper's Figs. 8-10 (throughput: the paper's lower bound; query time: its upper bound).")
    st.dataframe(table, hide_index=True, column_config={"ours": st.column_config.NumberColumn(format="%.4g"),
                                                        "paper": st.column_config.NumberColumn(format="%.4g")})


def incomplete_beside_paper(frame: pd.DataFrame) -> None:
    """The incomplete-streams paper's Tables 1-4 beside our figures (the module stores both)."""
    pairs = [("size_eaa", "paper_size_eaa", "EAA retained"), ("size_approx", "paper_size_approx", "approx retained"),
             ("precision_approx", "paper_precision", "approx precision"), ("error_approx", "paper_error",
                                                                           "approx error")]
    present = [(ours, paper, label) for ours, paper, label in pairs if {ours, paper} <= set(frame.columns)]
    if not present or "case" not in frame.columns:
        return
    long = pd.concat([pd.DataFrame({"case": frame["case"], "measure": label, "ours": frame[ours],
                                    "paper": frame[paper]}) for ours, paper, label in present], ignore_index=True)
    st.markdown("**Ours beside the paper's tables** (same window, k, streams and ξ):")
    st.dataframe(long.dropna(subset=["paper"]), hide_index=True, width="stretch",
                 column_config={"ours": st.column_config.NumberColumn(format="%.4g"),
                                "paper": st.column_config.NumberColumn(format="%.4g")})


def generic_section(name: str, frame: pd.DataFrame) -> None:
    """Any results file: bars of objects/s per case when it has them, and its table."""
    st.subheader(f"`{name}`", anchor=f"file-{name}")
    if {"algorithm", "objects_per_s", "case"} <= set(frame.columns) and frame["objects_per_s"].notna().any():
        rows = frame.dropna(subset=["objects_per_s"])
        st.altair_chart(charts.benchmark_family(rows, "objects_per_s", "objects/s"), width="stretch")
    st.caption(runs_caption(frame))
    with st.expander(f"Table: {len(frame)} rows of `{name}.csv`"):
        shown = frame.drop(columns=[c for c in data.PROVENANCE if c in frame.columns])
        st.dataframe(shown, hide_index=True, width="stretch", column_config=column_config(shown))
