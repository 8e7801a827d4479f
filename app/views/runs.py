"""Runs page: browse pipeline runs stored in DuckDB, scrub through their slides, compare two runs.

Slides are numbered as on the Live page and in the ``slide`` column: from 0 at the start of
the dataset. The metrics carry the same names and definitions as on Live (``charts.METRICS``).
"""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from engine import Answer
from app import charts, data, presets, session, tables, units

CHART_SLIDES = 300  # most slides drawn per line of a chart over time (evenly spaced, the last included)
REFERENCES = tuple(session.REFERENCES.values())  # the exact algorithm of each kind of stream


def weights_of(row: pd.Series) -> list[float]:
    weights = json.loads(row.weights) if isinstance(row.weights, str) else list(row.weights)
    return [float(w) for w in weights]


def describe(row: pd.Series, features: list[str], t_unit: str, family: str = "") -> str:
    """One line for a query with feature names: ``#0 · largest notional · k 10 · last 10,000 objects / 500``."""
    weights = weights_of(row)
    named = dict(zip(features, weights)) if len(features) == len(weights) else \
        {f"feature {j}": w for j, w in enumerate(weights)}
    if row.kind == "count":
        span = f"last {units.format_count(int(row.window))} {presets.objects_word(family)}, " \
               f"slide {units.format_count(int(row.slide))}"
    else:
        span = f"last {units.format_duration(int(row.window), t_unit)}, " \
               f"slide {units.format_duration(int(row.slide), t_unit)}"
    return f"#{row.query_id} · {presets.describe_weights(named)} · k = {row.k} · {span} ({row.kind} window)"


def as_answer(rows: pd.DataFrame) -> Answer:
    """An answer from stored ``answers`` rows (``seq`` is not stored: -1)."""
    ids = rows["object_id"].to_numpy(np.int64)
    return Answer(ids, rows["score"].to_numpy(np.float64), np.full(len(ids), -1, np.int64))


def run_label(row) -> str:
    started = f" · started {row.started_at:%Y-%m-%d %H:%M} UTC" if pd.notna(row.started_at) else ""
    return f"{row.run_id} · {row.dataset} · {row.status}{started}"


def thinned(metrics: pd.DataFrame, shown: int | None = None) -> pd.DataFrame:
    """The rows of at most :data:`CHART_SLIDES` slides (:func:`app.charts.thin_slides`) and of the slide
    ``shown``, so that its rule sits at its own time; ``ms`` from ``seconds``."""
    kept = metrics.index.isin(charts.thin_slides(metrics, CHART_SLIDES).index) | (metrics.slide == shown)
    return metrics[kept].assign(ms=lambda f: f.seconds * 1e3)


def summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm over all slides: the Live tiles' metrics, averaged (memory: the peak)."""
    grouped = metrics.assign(ms=metrics.seconds * 1e3).groupby("algorithm")
    out = pd.DataFrame({
        "slides": grouped.slide.count(),
        "precision": grouped.precision.mean().round(4),
        "score error": grouped.error.mean(),
        "candidates": grouped.candidates.mean().round(1),
        "memory (modelled, peak)": grouped.bytes.max().map(units.format_bytes),
        "ms / slide": grouped.ms.mean().round(3),
    })
    return out.reset_index()


st.title("Runs")
db = data.db_path()
data.follow_address("runs_address", ["run_id", "query_id", "run_slide"])
try:
    runs = data.runs(db)
except data.MissingData as missing:
    st.info(str(missing))
    st.stop()
if runs.empty:
    st.info(f"No pipeline runs in `{db}` yet. {data.INGEST_HINT}")
    st.stop()

labels = {r.run_id: run_label(r) for r in runs.itertuples()}
if "run_id" not in st.session_state:  # the URL's run, else the latest run of `make run`'s demo
    if repeated := data.repeated_params():
        st.warning(f"This link's view is shown with changes: {repeated}.", icon=":material/link:")
    wanted = st.query_params.get("run")
    demo = data.demo_run(db, presets.demo())
    if wanted in labels or demo in labels:
        st.session_state.run_id = wanted if wanted in labels else demo
    if wanted is not None and wanted not in labels:
        st.warning(f"This link's run `{units.shorten(wanted)}` is not in `{db}`: another run is shown.",
                   icon=":material/link:")
run_id = st.selectbox("Run", list(labels), format_func=labels.get, key="run_id")
run = runs[runs.run_id == run_id].iloc[0]
info = data.dataset_info(db, run.dataset)
tz = presets.TIME_ZONES.get(info["family"])

queries = data.run_queries(db, run_id)
if queries.empty:
    st.info("This run has no queries recorded.")
    st.stop()
query_labels = {int(r.query_id): describe(r, info["features"], info["t_unit"], info["family"])
                for _, r in queries.iterrows()}
if "query_id" not in st.session_state and "query" in st.query_params:
    if units.link_number(st.query_params["query"]) in query_labels:
        st.session_state.query_id = units.link_number(st.query_params["query"])
    else:
        st.warning(f"This link's query #{units.shorten(st.query_params['query'])} is not one of run `{run_id}`'s: "
                   "its first query is shown.", icon=":material/link:")
query_id = st.selectbox("Query", list(query_labels), key="query_id", format_func=query_labels.get)
query = queries[queries.query_id == query_id].iloc[0]
st.caption(f"Dataset `{run.dataset}` · {run.shards} shard(s) on `{run.spark_master}` · status {run.status}"
           + (f" · finished {run.finished_at:%Y-%m-%d %H:%M:%S} UTC" if pd.notna(run.finished_at) else ""))
if isinstance(run.reason, str) and run.reason:
    st.warning(f"This run is **{run.status}**: {run.reason}")

metrics = data.slide_metrics(db, run_id, query_id)
if metrics.empty:
    st.info("No slide of this query is recorded yet (the run may still be going).")
    st.stop()

first, last = int(metrics.slide.min()), int(metrics.slide.max())
if "run_slide" not in st.session_state:
    wanted = units.link_number(st.query_params.get("slide", ""))
    st.session_state.run_slide = last if wanted is None else wanted
    if "run" in st.query_params and "slide" in st.query_params and not (
            wanted is not None and first <= wanted <= last):  # a Runs link's slide, out of the run
        st.warning(f"This link's slide {units.shorten(st.query_params['slide'])} is not one of this query's "
                   f"({first:,} to {last:,}): the last is shown.", icon=":material/link:")
if not first <= st.session_state.run_slide <= last:
    st.session_state.run_slide = last
slide = st.slider("Slide (numbered from 0 at the start of the dataset, as on Live)", first, last,
                  key="run_slide") if last > first else first
try:  # the dataset itself, for times (cached after the first read)
    trace = data.load_trace(db, run.dataset)
except data.MissingData:
    trace = None
end = metrics.loc[metrics.slide == slide, "end"]
if len(end):
    boundary = int(end.iloc[0])
    if query.kind == "count":
        where = f"row {boundary:,}"
        if trace is not None and 0 < boundary <= len(trace):
            where += f" ({units.format_time(int(trace.t[boundary - 1]), trace.t_unit, tz)})"
    else:
        where = units.format_time(boundary, info["t_unit"], tz)
    st.caption(f"Slide {slide:,} of {first:,}–{last:,} · the window ends before {where}")
data.write_address({"run": run_id, "query": str(query_id), "slide": str(slide)}, "runs_address")

answers = data.answers_at(db, run_id, query_id, slide)
reference = next((name for name in REFERENCES if name in set(metrics.algorithm)), None)
algorithms = sorted(metrics.algorithm.unique(), key=lambda a: (a != reference, a))
exact = as_answer(answers[answers.algorithm == reference]) if reference is not None else None
if exact is None:
    st.caption("This run has no oracle answers, so disagreements are not marked "
               "(precision and error below were measured by the pipeline).")

now = metrics[metrics.slide == slide].set_index("algorithm")
columns = st.columns(min(3, len(algorithms)))
for i, name in enumerate(algorithms):
    with columns[i % len(columns)].container(border=True):
        st.markdown(f"**{name}**")
        if name not in now.index:
            st.caption("no metrics at this slide")
            continue
        row = now.loc[name]
        a, b = st.columns(2)
        c, d = st.columns(2)
        a.metric("precision", f"{row.precision:.2f}", help=charts.METRICS["precision"][1])
        measured = row.get("measured_bytes", np.nan)
        b.metric("memory", units.format_bytes(measured if pd.notna(measured) else row.bytes),
                 help=("measured size of the structures" if pd.notna(measured) else
                       "modelled (the cost model of docs/algorithms/memory.md); this run did not record the "
                       "measured size")
                 + f", summed over shards; modelled: {units.format_bytes(row.bytes)}")
        c.metric("ms / slide", f"{row.seconds * 1e3:.2f}", help=charts.METRICS["ms"][1] + " (slowest shard)")
        d.metric("candidates", f"{int(row.candidates):,}", help=charts.METRICS["candidates"][1])

shown = {name: as_answer(answers[answers.algorithm == name]) for name in algorithms if name != reference}
time_of = None
if trace is not None and trace.t_unit in units.MS_PER and exact is not None:
    # Stored answers keep ids, not seq: an object's row is its last one before the slide's end (an
    # attribute stream has a row per value of an object).
    before = len(trace) if not len(end) else int(end.iloc[0]) if query.kind == "count" else \
        int(np.searchsorted(trace.t, int(end.iloc[0]), side="left"))
    ids = pd.Index(trace.ids[:before])
    rows = pd.Series(np.arange(len(ids)), index=ids)
    if not ids.is_unique:
        rows = rows[~ids.duplicated(keep="last")]
    rows_of = rows.reindex(exact.ids).fillna(-1).to_numpy(np.int64)
    days = len(trace) > 0 and units.spans_days(int(trace.t[0]), int(trace.t[-1]), trace.t_unit)
    times = {int(i): units.time_texts(trace.t[[r]], trace.t_unit, tz, days)[0] if r >= 0 else "–"
             for i, r in zip(exact.ids, rows_of)}
    time_of = lambda _seq: [times[int(i)] for i in exact.ids]  # noqa: E731 (the ids, in rank order)
frame, wrong = tables.comparison(exact, shown, time_of)
st.markdown(f"**Top-{query.k} at slide {slide}**: the exact answer rank by rank; one column per algorithm: "
            "✓ where it returned the exact object, else the id it returned, highlighted when it differs from the "
            "exact answer.")
weights_named = dict(zip(info["features"], weights_of(query)))
unit, _ = presets.score_unit(info["family"], weights_named)
st.table(tables.styled(frame, wrong, unit))
st.download_button("Download every answer of this query (CSV)", partial(data.answers_csv, db, run_id, query_id),
                   file_name=f"{run_id}-query{query_id}-answers.csv", mime="text/csv", icon=":material/download:",
                   key="download_answers")

chart_data = thinned(metrics, slide)
if trace is not None and trace.t_unit in units.MS_PER and len(chart_data):
    ends = data.end_times(trace, query.kind, chart_data["end"].to_numpy(np.int64))
    chart_data = chart_data.assign(when=units.wall_clock_ms(ends, trace.t_unit, tz))
st.subheader("Over time", help="; ".join(f"**{name}**: {text}" for name, text in charts.METRICS.values()))
if chart_data.slide.nunique() < metrics.slide.nunique():
    st.caption(f"Charts show {chart_data.slide.nunique():,} of the {metrics.slide.nunique():,} slides, evenly "
               f"spaced, and slide {slide:,}.")
if (metrics.precision == 1.0).all() and (metrics.error == 0.0).all():
    st.caption("Precision and error are not drawn: every answer of this run was exact (precision 1, error 0).")
else:
    st.altair_chart(charts.over_time(chart_data, "precision", at=slide, tz=tz), width="stretch", height=330)
    st.altair_chart(charts.over_time(chart_data, "error", at=slide, tz=tz), width="stretch", height=330)
st.altair_chart(charts.over_time(chart_data, "candidates", at=slide, log=True, tz=tz), width="stretch",
                height=330)
st.altair_chart(charts.over_time(chart_data, "retained", at=slide, log=True, tz=tz), width="stretch",
                height=330)
st.altair_chart(charts.memory_over_time(chart_data, at=slide, tz=tz), width="stretch", height=330)
st.caption("Memory: modelled by the cost model of `docs/algorithms/memory.md` (dashed) and measured (solid, when "
           "the run recorded it), summed over shards.")
st.altair_chart(charts.over_time(chart_data, "ms", at=slide, log=True, tz=tz), width="stretch",
                height=330)

st.subheader("Snapshots", help="Engine state saved by the pipeline; `replay --resume` continues from the last one.")
try:
    snapshots = data.snapshots(db, run_id, query_id)
except data.MissingData as missing:
    snapshots = pd.DataFrame()
    st.caption(str(missing))
if snapshots.empty:
    st.caption("No snapshot recorded for this query.")
else:
    st.dataframe(snapshots.assign(size=snapshots.bytes.map(units.format_bytes), checksum=snapshots.checksum.str[:16])
                 [["slide", "algorithm", "shard", "last_seq", "size", "checksum", "created_at"]],
                 hide_index=True, width="stretch",
                 column_config={"last_seq": st.column_config.NumberColumn("last seq", format="%d"),
                                "checksum": st.column_config.TextColumn("checksum (first 16)"),
                                "created_at": st.column_config.DatetimeColumn("time (UTC)",
                                                                              format="YYYY-MM-DD HH:mm:ss")})

st.subheader("Compare with another run")
infos = {name: data.dataset_info(db, name) for name in runs.dataset.unique()}
others = {f"{r.run_id}|{int(q.query_id)}": f"{labels[r.run_id]} · "
          f"{describe(q, infos[r.dataset]['features'], infos[r.dataset]['t_unit'], infos[r.dataset]['family'])}"
          for r in runs.itertuples() for _, q in data.run_queries(db, r.run_id).iterrows()
          if (r.run_id, int(q.query_id)) != (run_id, query_id)}
if not others:
    st.caption("There is no other run (or query) to compare with yet.")
else:
    other_key = st.selectbox("Other run and query", list(others), format_func=others.get, key="compare_with",
                             index=None, placeholder="Choose a run to compare")
    if other_key is not None:
        other_run, other_query = other_key.split("|")
        other = data.slide_metrics(db, other_run, int(other_query))
        left, right = st.columns(2)
        left.markdown(f"**This run** · {query_labels[query_id]}")
        left.dataframe(summary(metrics), hide_index=True, width="stretch")
        right.markdown(f"**{other_run}** · query #{other_query}")
        right.dataframe(summary(other) if not other.empty else pd.DataFrame(), hide_index=True, width="stretch")
        both = pd.concat([metrics.assign(run="this run"), other.assign(run=other_run)], ignore_index=True)
        both_data = thinned(both)
        st.altair_chart(charts.over_time(both_data, "candidates", log=True, stroke="run"), width="stretch",
                        height=330)
        st.altair_chart(charts.over_time(both_data, "ms", log=True, stroke="run"), width="stretch", height=330)
