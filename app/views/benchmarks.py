"""Benchmarks page: the report's home, read from the shipped results (``benchmarks/results/*.csv``).

Each family of the benchmark grid (exact single-stream algorithms, SAP, SAO, incomplete
streams) gets its comparison as charts and a table, with the papers' figures beside ours and
the run and commit every figure comes from. Any other CSV file (a new benchmark, new columns)
is shown as it is. ``var/bench.duckdb`` adds the history of every run when present.
"""

from __future__ import annotations

import streamlit as st

from app import bench_view, charts, data

st.title("Benchmarks")
st.markdown(
    "Measured by `make bench` on the development machine and shipped with the repository in "
    f"`{data.shown(data.BENCHMARKS)}/*.csv`; the full report with every table, the targets of the issues and the "
    "method is **`docs/REPORT.md`** (generated from the same files by `benchmarks/report.py`). Each algorithm runs "
    "beside the exact baselines on the same slides in the same process, so the ratios are the evidence; absolute "
    "figures are noisy on a shared 2-core machine.")
try:
    tables, problems = data.benchmark_tables()
except data.MissingData as missing:
    st.info(str(missing))
    st.stop()
for problem in problems:
    st.warning(problem, icon=":material/warning:")

REPORT = data.ROOT / "docs" / "REPORT.md"
if REPORT.is_file() and st.toggle("Read `docs/REPORT.md` here", key="show_report",
                                  help="The generated report, as text (its plots are the SVG files in docs/report/)."):
    with st.container(border=True, height=600):
        st.markdown("\n".join(line for line in REPORT.read_text().splitlines() if not line.startswith("![")))
with st.expander("What each measure means", icon=":material/help:"):
    st.markdown("\n".join(f"- **{label}**: {text}" for label, text in bench_view.MEASURES.values()))

papers = data.paper_figures().get("papers", {})
shown_files: set[str] = set()
for family in bench_view.FAMILIES:
    present = [name for name in family.files if name in tables]
    if not present:
        continue
    shown_files.update(present)
    st.header(family.title, anchor=family.key, divider="gray")
    st.markdown(family.about)
    bench_view.claims(family, papers)
    if family.grid and family.grid in tables:
        bench_view.grid_section(family, tables[family.grid], papers)
    for name in family.files:
        if name != family.grid and name in tables:
            bench_view.module_section(family, name, tables[name], papers)

others = [name for name in tables if name not in shown_files]
if others:
    st.header("Other benchmarks", anchor="other", divider="gray")
    st.caption("Every other results file, as `make bench` wrote it (modules in `benchmarks/bench_*.py`).")
    for name in others:
        bench_view.generic_section(name, tables[name])

history = data.bench_history()
st.header("Runs recorded in `var/bench.duckdb`", anchor="history", divider="gray")
if history.empty:
    st.caption(f"`{data.shown(data.BENCH_DB)}` is not there yet: every `make bench` appends its rows to the table "
               "`bench_results` in it, so past runs can be compared.")
else:
    st.dataframe(history, hide_index=True, width="stretch",
                 column_config={"run_at": st.column_config.DatetimeColumn("when (UTC)", format="YYYY-MM-DD HH:mm"),
                                "load_1m": st.column_config.NumberColumn("load (1 min)", format="%.2f")})
st.caption("Colours: " + " · ".join(f"<span style='color:{charts.algorithm_colour(a)}'>■</span> {a}"
                                    for a in charts.ALGORITHM_COLOURS), unsafe_allow_html=True)
