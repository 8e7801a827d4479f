"""Benchmarks page: the latest results of ``make bench`` as plots."""

from datetime import datetime

import streamlit as st

from app import charts, data

st.title("Benchmarks")
try:
    results = data.benchmark_results()
except data.MissingData as missing:
    st.info(str(missing))
    st.stop()

modified = datetime.fromtimestamp(data.BENCHMARKS.stat().st_mtime)
st.caption(f"`{data.shown(data.BENCHMARKS)}`, written {modified:%Y-%m-%d %H:%M}")
left, right = st.columns(2)
left.altair_chart(charts.benchmark_bars(results, "objects_per_s", "Throughput (objects/s)"))
right.altair_chart(charts.benchmark_bars(results, "avg_candidates", "Average candidates"))
st.dataframe(results, hide_index=True)
