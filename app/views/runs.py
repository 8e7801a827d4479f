"""Runs page: browse pipeline runs stored in DuckDB and scrub through their slides."""

import math

import numpy as np
import pandas as pd
import streamlit as st

from engine import Answer
from app import charts, data, tables

CHART_SLIDES = 1000  # most slides drawn per chart; longer runs are thinned evenly


def describe(row: pd.Series) -> str:
    """One line for a query: id, k, window, slide, kind and weights."""
    return (f"#{row.query_id}: k={row.k}, window={row.window}, slide={row.slide}, {row.kind}, "
            f"weights={row.weights}")


def as_answer(rows: pd.DataFrame) -> Answer:
    """An answer from stored ``answers`` rows (``seq`` is not stored: -1)."""
    ids = rows["object_id"].to_numpy(np.int64)
    return Answer(ids, rows["score"].to_numpy(np.float64), np.full(len(ids), -1, np.int64))


st.title("Runs")
db = data.db_path()
try:
    runs = data.runs(db)
except data.MissingData as missing:
    st.info(str(missing))
    st.stop()
if runs.empty:
    st.info(f"No pipeline runs in `{db}` yet. {data.INGEST_HINT}")
    st.stop()

labels = {r.run_id: f"{r.run_id} · {r.dataset} · {r.status} · {r.started_at:%Y-%m-%d %H:%M}"
          if pd.notna(r.started_at) else f"{r.run_id} · {r.dataset} · {r.status}" for r in runs.itertuples()}
run_id = st.selectbox("Run", list(labels), format_func=labels.get, key="run_id")
st.dataframe(runs[runs.run_id == run_id], hide_index=True)

queries = data.run_queries(db, run_id)
if queries.empty:
    st.info("This run has no queries recorded.")
    st.stop()
query_id = st.selectbox("Query", queries.query_id.tolist(), key="query_id",
                        format_func=lambda qid: describe(queries[queries.query_id == qid].iloc[0]))
slide_metrics = data.slide_metrics(db, run_id, query_id)
if slide_metrics.empty:
    st.info("No slide of this query is recorded yet (the run may still be going).")
    st.stop()

first, last = int(slide_metrics.slide.min()), int(slide_metrics.slide.max())
slide = st.slider("Slide", first, last, last, key="run_slide") if last > first else first
answers = data.answers_at(db, run_id, query_id, slide)
end = slide_metrics.loc[slide_metrics.slide == slide, "end"]
st.caption(f"Slide {slide} of {first}–{last}" + (f" · window ends at {int(end.iloc[0])}" if len(end) else ""))

algorithms = sorted(slide_metrics.algorithm.unique())
exact = as_answer(answers[answers.algorithm == "oracle"]) if "oracle" in algorithms else None
if exact is None:
    st.caption("This run has no oracle answers, so disagreements are not marked "
               "(precision and error below were measured by the pipeline).")
for column, name in zip(st.columns(len(algorithms)), algorithms):
    with column:
        st.markdown(f"**{name}**")
        st.table(tables.styled(tables.answer_frame(as_answer(answers[answers.algorithm == name]), exact)),
                 hide_index=True)

stride = math.ceil((last - first + 1) / CHART_SLIDES)
shown = slide_metrics[(slide_metrics.slide - first) % stride == 0].assign(ms=lambda f: f.seconds * 1e3)
if stride > 1:
    st.caption(f"Charts show every {stride}th slide.")
left, right = st.columns(2)
left.altair_chart(charts.over_time(shown, "precision", "Precision", at=slide))
right.altair_chart(charts.over_time(shown, "error", "Error", at=slide))
for column, field in zip(st.columns(3), ("candidates", "retained", "bytes")):
    column.altair_chart(charts.over_time(shown, field, f"{field.capitalize()} (log scale)", at=slide, log=True))
st.altair_chart(charts.over_time(shown, "ms", "Processing time per slide (ms)", at=slide))
