"""Benchmarks page: the latest results of ``make bench``, one chart per workload family."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import charts, data

PLOTTED = [("objects_per_s", "Throughput (objects/s)"), ("avg_candidates", "Average candidates")]
TABLE_COLUMNS = ["algorithm", "objects_per_s", "avg_candidates", "max_candidates", "model_bytes", "bytes",
                 "measured_bytes", "peak_bytes", "precision", "vs_oracle"]


def recorded(results: pd.DataFrame, column: str) -> str:
    values = sorted({str(v) for v in results[column].dropna() if str(v)})
    return ", ".join(values) if values else "not recorded"


st.title("Benchmarks")
try:
    results = data.benchmark_results()
except data.MissingData as missing:
    st.info(str(missing))
    st.stop()

extra = [f"{label} {recorded(results, column)}" for column, label in
         (("cpu_model", "CPU"), ("cores", "cores"), ("python", "Python"), ("load_1m", "load"))
         if column in results.columns]
st.caption(" · ".join([f"`{data.shown(data.BENCHMARKS)}`", f"run {recorded(results, 'when')}",
                       f"machine {recorded(results, 'machine')}", *extra, f"commit {recorded(results, 'commit')}"])
           + " (as recorded by `make bench`)")

families = list(dict.fromkeys(results["family"]))
for family in families:
    rows = results[results["family"] == family]
    st.subheader(f"Workload: {family}")
    for field, title in PLOTTED:
        if field in rows.columns and rows[field].notna().any():
            st.altair_chart(charts.benchmark_family(rows.dropna(subset=[field]), field, title), width="stretch")
    columns = ["case"] + [c for c in TABLE_COLUMNS if c in rows.columns and rows[c].notna().any()]
    config = {
        "case": st.column_config.TextColumn("case", width="large"),
        "objects_per_s": st.column_config.NumberColumn("objects/s", format="compact"),
        "avg_candidates": st.column_config.NumberColumn("avg candidates", format="%.1f"),
        "max_candidates": st.column_config.NumberColumn("max candidates", format="%d"),
        "model_bytes": st.column_config.NumberColumn("modelled bytes", format="compact"),
        "bytes": st.column_config.NumberColumn("modelled bytes", format="compact"),
        "measured_bytes": st.column_config.NumberColumn("measured bytes", format="compact"),
        "peak_bytes": st.column_config.NumberColumn("peak bytes (measured)", format="compact"),
        "precision": st.column_config.NumberColumn("precision", format="%.3f"),
        "vs_oracle": st.column_config.NumberColumn("× oracle speed", format="%.1f"),
    }
    with st.expander(f"Table of the {family} results ({len(rows)} rows)"):
        st.dataframe(rows[columns], hide_index=True, width="stretch", column_config=config)
