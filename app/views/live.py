"""Live page: the engines run in the session while the query changes under them."""

from time import perf_counter
from typing import Any

import streamlit as st

import engine
from app import charts, data, tables
from engine import metrics
from app.session import LiveRun, Setup

TICK = 0.5  # seconds between two play ticks
SPEEDS = [1, 2, 5, 10, 20, 50, 100]  # choices of slides processed per play tick
HISTORY = 500  # slides shown in the charts over time
WINDOW_POINTS = 2000  # most window objects drawn in the score-vs-time plot
TABLES_PER_ROW = 3  # top-k tables side by side
DEFAULT_ALGORITHMS = ("oracle", "mintopk")

SINGLE = {info.name: info for info in engine.available() if info.stream == "single"}


def param_input(algorithm: str, name: str, default: Any) -> Any:
    """A sidebar widget for one algorithm parameter, chosen by the type of its default."""
    key = f"param_{algorithm}_{name}"
    if isinstance(default, bool):
        return st.checkbox(name, value=default, key=key, persist_state="session")
    if isinstance(default, (int, float)):
        return st.number_input(name, value=default, key=key, persist_state="session")
    return st.text_input(name, value=str(default), key=key, persist_state="session")


def ranking_changed_only(old: engine.Query, new: engine.Query) -> bool:
    """Whether ``new`` differs from ``old`` in weights or ``k`` only (the same windows)."""
    return (old.window, old.slide, old.kind) == (new.window, new.slide, new.kind) and (
        old.weights, old.k) != (new.weights, new.k)


def rebuild(old: LiveRun | None, trace: data.Trace, setup: Setup) -> LiveRun:
    """New engines for ``setup``, replayed to where ``old`` was; records a note for the user.

    When only the weights or ``k`` changed, the old oracle first answers the new query from
    its window at once (``oracle.query``), which the note contrasts with the replay.
    """
    new_q = setup.query
    same_trace = old is not None and old.setup.dataset == setup.dataset
    instant = None
    if same_trace and old.end is not None and ranking_changed_only(old.setup.query, new_q):
        start = perf_counter()
        instant = old.oracle.query(new_q.weights, new_q.k)
        instant_ms = (perf_counter() - start) * 1e3
    run = LiveRun(trace, setup)
    start = perf_counter()
    with st.spinner("Rebuilding the engines and replaying the trace…"):
        replayed = run.replay(old.rows) if same_trace else run.step(new_q.windows_per_object)
    replay_s = perf_counter() - start
    note = (f"Engines rebuilt and replayed {replayed} slides in {replay_s:.2f} s." if same_trace else
            f"Engines started on the first window ({replayed} slides) in {replay_s:.2f} s.")
    if instant is not None:
        same = "matches" if instant.ids.tolist() == run.exact.ids.tolist() else "differs from"
        note = (f"The oracle answered the new weights and k at once, from its current window in "
                f"{instant_ms:.2f} ms without reprocessing (top ids {instant.ids[:5].tolist()}; "
                f"{same} the replayed answer). {note}")
    st.session_state.live_note = note
    return run


def toggle_play() -> None:
    """Play or pause (a callback, so the fragment below sees the new state in this rerun)."""
    st.session_state.playing = not st.session_state.playing


def step() -> None:
    """Process one more slide."""
    st.session_state.live_run.step(1)


def restart() -> None:
    """New engines for the same setup, back at the first window, paused."""
    old: LiveRun = st.session_state.live_run
    st.session_state.live_run = rebuild(None, old.trace, old.setup)
    st.session_state.playing = False


def render(run: LiveRun) -> None:
    """The panels: position, top-k tables side by side, charts over time, the window plot."""
    trace, q = run.trace, run.setup.query
    status = f"Slide {run.slide} · window ends at {'seq' if q.kind == 'count' else 't'} {run.end} · " \
             f"{run.rows:,} of {len(trace):,} rows"
    st.progress(run.rows / max(1, len(trace)), text=status + (" · end of the trace" if run.done else ""))

    shown = list(run.answers.items())
    columns = [column for row in range(0, len(shown), TABLES_PER_ROW)
               for column in st.columns(min(TABLES_PER_ROW, len(shown)))]
    for column, (name, answer) in zip(columns, shown):
        with column:
            frame = tables.answer_frame(answer, run.exact)
            wrong = int(frame["exact"].str.startswith("✗").sum())
            st.markdown(f"**{name}** · {SINGLE[name].family}")
            st.caption(f"precision {metrics.precision(run.exact, answer):.2f} · "
                       f"{wrong} disagreement{'s' if wrong != 1 else ''} with the oracle")
            st.table(tables.styled(frame), hide_index=True)

    history = run.metrics_frame(HISTORY)
    left, right = st.columns(2)
    left.altair_chart(charts.over_time(history, "precision", "Precision"))
    right.altair_chart(charts.over_time(history, "error", "Relative score error"))
    for column, field in zip(st.columns(3), ("candidates", "retained", "bytes")):
        column.altair_chart(charts.over_time(history, field, f"{field.capitalize()} (log scale)", log=True))
    left, right = st.columns(2)
    left.altair_chart(charts.over_time(history, "ms", "Processing time per slide (ms)"))
    right.altair_chart(charts.window_scores(run.window_frame(WINDOW_POINTS), run.candidates_frame(WINDOW_POINTS),
                                            run.answers_frame(),
                                            f"t ({trace.t_unit})"))


st.title("Live")
db = data.db_path()
names = []
try:
    names += data.datasets(db)["name"].tolist()
except data.MissingData as missing:
    st.info(f"{missing} Meanwhile the built-in synthetic stream is available.")
names.append(data.SYNTHETIC)

run: LiveRun | None = st.session_state.get("live_run")
st.session_state.setdefault("playing", False)
with st.sidebar:
    dataset = st.selectbox("Dataset", names, key="dataset", persist_state="session")
    algorithms = st.multiselect("Algorithms", list(SINGLE), default=[a for a in DEFAULT_ALGORITHMS if a in SINGLE],
                                key="algorithms", persist_state="session",
                                help="The oracle always runs as the exact reference.")
try:
    trace = run.trace if run is not None and run.trace.name == dataset else data.load_trace(db, dataset)
except data.MissingData as missing:
    st.warning(str(missing))
    st.stop()

with st.sidebar:
    st.subheader("Query")
    kind = st.radio("Window kind", ["count", "time"], horizontal=True, key="kind", persist_state="session")
    unit = "objects" if kind == "count" else trace.t_unit
    k = st.number_input("k", min_value=1, value=10, step=1, key="k", persist_state="session")
    window = st.number_input(f"Window ({unit})", min_value=1, value=1000, step=100, key="window",
                             persist_state="session")
    slide = st.number_input(f"Slide ({unit})", min_value=1, value=50, step=10, key="slide",
                            persist_state="session", help="Must divide the window.")
    st.caption("Weights (negative values rank small feature values first)")
    weights = [st.slider(feature, -1.0, 1.0, 1.0, 0.05, key=f"w_{feature}", persist_state="session")
               for feature in trace.features]
    params = {}
    for name in algorithms:
        if SINGLE[name].defaults:
            with st.expander(f"{name} parameters"):
                params[name] = {key: param_input(name, key, default) for key, default in SINGLE[name].defaults.items()}

if not algorithms:
    st.info("Pick at least one algorithm in the sidebar.")
    st.stop()
try:
    setup = Setup(dataset, engine.Query(weights=weights, k=int(k), window=int(window), slide=int(slide), kind=kind),
                  tuple(algorithms), params)
except ValueError as exc:
    st.error(f"Invalid query: {exc}")
    st.stop()
if run is None or run.setup != setup:
    try:
        run = st.session_state.live_run = rebuild(run, trace, setup)
    except ValueError as exc:
        st.error(f"Cannot start the engines: {exc}")
        st.stop()

playing = st.session_state.playing
play_col, step_col, restart_col, speed_col = st.columns([1, 1, 1, 4], vertical_alignment="bottom")
play_col.button("Pause" if playing else "Play", key="play", on_click=toggle_play, type="primary", width="stretch",
                icon=":material/pause:" if playing else ":material/play_arrow:", disabled=run.done and not playing)
step_col.button("Step", key="step", icon=":material/skip_next:", on_click=step, disabled=run.done, width="stretch")
restart_col.button("Restart", key="restart", icon=":material/replay:", on_click=restart, width="stretch")
speed_col.select_slider("Slides per tick", SPEEDS, value=5, key="speed", persist_state="session")
if "live_note" in st.session_state:
    st.caption(st.session_state.live_note)


@st.fragment(run_every=TICK if playing else None)
def live_panels() -> None:
    """Advance while playing (a few slides per tick), then draw the panels."""
    live: LiveRun = st.session_state.live_run
    if st.session_state.playing:
        live.step(st.session_state.speed)
        if live.done:
            st.session_state.playing = False
            st.rerun()
    render(live)


live_panels()
