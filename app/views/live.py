"""Live page: the engines run in the session while the query changes under them.

Playback runs in a fragment, one tick at a time, and the page itself is not rerun while playing.
The browser asks for the next tick once it has drawn this one, at most once per
:data:`app.live_state.TICK` (:mod:`app.playback`), so a tick lasts as long as computing,
sending and drawing it take; each tick processes the slides the speed asks for over that real
length (:func:`app.live_state.tick_work`), within an engine budget that keeps a Pause served
within a couple of seconds. When the engines cannot keep up, the caption says so. The charts
over time draw at most :data:`HISTORY_POINTS` slides per line, so that drawing a tick stays
cheap in the browser.

A changed query builds new engines one window before the position shown
(:func:`app.session.warm_start_slide`) and replays to it; past :data:`SHOW_PROGRESS_AFTER`
seconds a progress bar and a Cancel button appear. A bad value keeps the last valid view, with
the message and nearby valid values next to the input. The view (dataset, algorithms,
parameters, query, slide, speed) lives in the URL; a link's value the page cannot take as it is
(out of range, unknown, malformed) is named in a warning with what is shown instead. Back and
Forward open the address they lead to as a link (:func:`app.data.follow_address`).
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Iterator

import numpy as np
import pandas as pd
import streamlit as st

import engine
from app import charts, data, live_state, playback, presets, session, tables, units, watchlist_state
from app.session import LiveRun, Setup, warm_start_slide

SPEEDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]  # slides per second
HISTORY = 500  # slides shown in the charts over time
HISTORY_POINTS = 150  # most slides drawn per line of a chart over time (evenly spaced, the latest included)
WINDOW_POINTS = 300  # most window objects drawn per panel of the score-vs-time plot
LAYER_POINTS = 400  # most objects drawn per SAO layer
SHOW_PROGRESS_AFTER = 0.3  # seconds of rebuilding before a progress bar and Cancel appear
DEFAULT_ALGORITHMS = {"single": ("oracle", "mintopk"), "incomplete": ("oracle-incomplete", "sla", "approx")}
TILES_PER_ROW = 3

ss = st.session_state


def algorithms_for(trace: data.Trace) -> dict[str, engine.AlgorithmInfo]:
    """Every registered algorithm that reads this kind of stream (object streams: ``single``)."""
    stream = getattr(trace, "stream", "single")
    return {info.name: info for info in engine.available() if info.stream == stream}


# ---------------------------------------------------------------- callbacks (run before the page)

def apply_values(values: dict[str, Any]) -> None:
    for key, value in values.items():
        ss[key] = value


def apply_preset(profile: presets.Profile) -> None:
    preset = profile.preset(ss.get("preset", ""))
    if preset is not None:
        apply_values(live_state.preset_values(preset, profile))


def switch_kind(profile: presets.Profile) -> None:
    """A new window kind gets lengths that suit the dataset (e.g. 30 min / 1 min on trades)."""
    ss.window, ss.slide = profile.defaults(ss.kind)


def use_value(field: str, value: str) -> None:
    ss[field] = value


def set_playing(playing: bool) -> None:
    """Play or pause. The button passes the state it offers, not a toggle: a click delivered
    twice (a rerun request coalesced with a playback tick) must not undo itself."""
    ss.playing = playing
    playback.forget_last_tick("live_")


def step() -> None:
    """One slide more. A Step clicked while a Restart rebuilds (its button still on screen) finds
    no engines: the rebuild then goes on."""
    ss.playing = False
    if "live_run" in ss:
        ss.live_run.step(1)


def restart() -> None:
    """Back to the first window. The engines are dropped (a Step clicked before the rebuild finds
    none); their setup is kept, so that a Restart while the sidebar holds an invalid value
    restarts the view still shown."""
    ss.playing = False
    shown = ss.pop("live_run", None)
    if shown is not None:
        ss.restart_setup = shown.setup
    ss.restart = True


def cancel_rebuild(run: LiveRun) -> None:
    """Put the sidebar back to the query still shown (``run``'s), which stops the rebuild."""
    setup = run.setup
    apply_values(live_state.setup_values(setup.query, setup.algorithms, setup.params, run.trace.features,
                                         run.trace.t_unit))
    ss.dataset = ss.query_for = setup.dataset
    ss.live_note = "Rebuild cancelled: the query is back to the one shown."


# ---------------------------------------------------------------- sidebar pieces

def problem_below(problems: list[live_state.Problem], field: str) -> None:
    """The message of a bad value right under its input, with buttons for nearby valid values."""
    for problem in problems:
        if problem.field != field:
            continue
        st.error(problem.message, icon=":material/error:")
        if problem.suggestions:
            columns = st.columns(len(problem.suggestions))
            for column, value in zip(columns, problem.suggestions):
                column.button(f"Use {value}", key=f"use_{field}_{value}", on_click=use_value, args=(field, value),
                              width="stretch")


def param_input(algorithm: str, name: str, default: Any) -> Any:
    """A sidebar widget for one algorithm parameter, chosen by the type of its default."""
    key = live_state.param_key(algorithm, name)
    if key not in ss:  # a value set before (a replayed config's, the URL's) stays the widget's value
        ss[key] = str(default) if not isinstance(default, (bool, int, float)) else default
    if isinstance(default, bool):
        return st.checkbox(name, key=key)
    if isinstance(default, int):
        return st.number_input(name, step=1, key=key)
    if isinstance(default, float):
        return st.number_input(name, key=key, format="%.6g")
    return st.text_input(name, key=key)


# ---------------------------------------------------------------- rebuilding

def new_run(old: LiveRun | None, trace: data.Trace, setup: Setup, at: int | None) -> tuple[LiveRun, Iterator[float], str]:
    """New engines and what they replay: up to ``old``'s rows, to slide ``at``, or the first window.

    They start at the last full window before that point (:meth:`LiveRun.warm_start_slide`),
    so a query change costs one window's work at any position of the trace.
    """
    if old is not None and old.trace.name == trace.name and old.rows:
        run = LiveRun(trace, setup, warm_start_slide(trace, setup.query, old.rows))
        first_window = setup.query.windows_per_object

        def steps() -> Iterator[float]:
            yield from run.replay_steps(old.rows)
            if run.current is None:  # the old position ends before the first new slide: show the first window
                yield from slide_steps(run, first_window)

        return run, steps(), f"the last window before row {old.rows:,}"
    if at is not None:
        first = max(0, at - setup.query.windows_per_object - 1)
        run = LiveRun(trace, setup, first)
        return run, slide_steps(run, at + 1 - first), f"slides {first:,} to {at:,}"
    run = LiveRun(trace, setup)
    return run, slide_steps(run, setup.query.windows_per_object), "the first window"


def slide_steps(run: LiveRun, slides: int, chunk: int = 20) -> Iterator[float]:
    done = 0
    while done < slides and not run.done:
        done += run.step(min(chunk, slides - done))
        yield done / slides


def rebuild(old: LiveRun | None, trace: data.Trace, setup: Setup, at: int | None = None) -> LiveRun:
    """New engines for ``setup``, brought to where ``old`` was (or to slide ``at``).

    A rebuild that takes longer than :data:`SHOW_PROGRESS_AFTER` shows a progress bar and a
    Cancel button (a click interrupts this loop; its callback restores the old query). When
    only the weights or ``k`` changed, engines that answer any weights at once (the oracle,
    SAO: a ``query(weights, k)`` method) answer from their current window first; the note
    contrasts that with the replay.
    """
    new_q = setup.query
    instant = None
    same_windows = old is not None and old.trace.name == trace.name and old.end is not None and (
        old.setup.query.window, old.setup.query.slide, old.setup.query.kind) == (new_q.window, new_q.slide, new_q.kind)
    others: dict[str, tuple[engine.Answer, float]] = {}  # other engines that answer any weights at once
    if same_windows and (old.setup.query.weights, old.setup.query.k) != (new_q.weights, new_q.k):
        start = perf_counter()
        try:
            instant = old.oracle.query(new_q.weights, new_q.k)
        except ValueError:  # weights under which a score of the window overflows: no instant answer
            instant = None
        instant_ms = (perf_counter() - start) * 1e3
        for name, alg in old.engines.items():
            if name != old.reference and callable(getattr(alg, "query", None)):
                try:
                    start = perf_counter()
                    others[name] = (alg.query(new_q.weights, new_q.k), (perf_counter() - start) * 1e3)
                except ValueError:
                    continue
    run, steps, what = new_run(old, trace, setup, at)
    first = run.slide
    start = perf_counter()
    slot = st.empty()
    bar = None
    for fraction in steps:
        if bar is None and perf_counter() - start > SHOW_PROGRESS_AFTER:
            with slot.container():
                left, right = st.columns([5, 1], vertical_alignment="center")
                bar = left.progress(0.0)
                if old is not None:
                    right.button("Cancel", key="cancel_rebuild", icon=":material/cancel:", on_click=cancel_rebuild,
                                 args=(old,), width="stretch")
        if bar is not None:
            bar.progress(min(1.0, fraction), text=f"Rebuilding the engines: replaying {what} · {fraction:.0%} · "
                                                  f"slide {run.slide:,}")
    slot.empty()
    seconds = perf_counter() - start
    note = (f"Engines rebuilt: replayed {run.slide - first:,} slides ({what}, up to row {run.rows:,}) "
            f"in {seconds:.2f} s.")
    if instant is not None:
        same = "matches" if instant.ids.tolist() == run.exact.ids.tolist() else "differs from"
        note = (f"The oracle answered the new weights and k at once, from its current window in "
                f"{instant_ms:.2f} ms without reprocessing (top ids {instant.ids[:5].tolist()}; "
                f"{same} the replayed answer). "
                + "".join(f"{name} answered at once too, in {ms:.2f} ms (precision "
                          f"{engine.metrics.precision(run.exact, answer):.2f} against the exact answer). "
                          for name, (answer, ms) in others.items())
                + note)
    ss.live_note = note
    return run


# ---------------------------------------------------------------- panels

def time_text(trace: data.Trace, profile: presets.Profile, seq: np.ndarray) -> list[str]:
    """Time of each object: of day (the date is in the status line), with the date when the trace spans days."""
    days = len(trace) > 0 and units.spans_days(int(trace.t[0]), int(trace.t[-1]), trace.t_unit)
    return units.time_texts(trace.t[np.asarray(seq, dtype=np.int64)], trace.t_unit, profile.tz, days)


def with_slide_time(history: pd.DataFrame, run: LiveRun, profile: presets.Profile) -> pd.DataFrame:
    """``history`` plus ``when``: wall-clock ms of each slide's end, when the trace has a real clock."""
    if not profile.timed or history.empty:
        return history
    t = data.end_times(run.trace, run.setup.query.kind, history["end"].to_numpy(np.int64))
    return history.assign(when=units.wall_clock_ms(t, run.trace.t_unit, profile.tz))


def score_unit(run: LiveRun, profile: presets.Profile) -> tuple[str, str]:
    """Unit and axis title of the query's score on this dataset."""
    return presets.score_unit(run.trace.family, dict(zip(run.trace.features, run.setup.query.weights)))


def with_time(frame: pd.DataFrame, trace: data.Trace, profile: presets.Profile) -> pd.DataFrame:
    """``frame`` (with ``t``) plus ``when`` (wall-clock ms for the axes) and ``time`` (text)."""
    if not profile.timed or frame.empty:
        return frame.assign(when=frame.get("t", []), time="")
    when = units.wall_clock_ms(frame["t"].to_numpy(np.int64), trace.t_unit, profile.tz)
    text = pd.to_datetime(when, unit="ms").strftime("%H:%M:%S.%f").str[:-3]
    return frame.assign(when=when, time=text)


def status(run: LiveRun, profile: presets.Profile) -> str:
    trace, q = run.trace, run.setup.query
    if run.current is None:
        return "No slide processed yet"
    lo, hi = run.window_rows()
    first, last = (trace.t[lo], trace.t[hi - 1]) if hi > lo else (None, None)
    if profile.timed:
        span = f"window {units.format_time(first, trace.t_unit, profile.tz)} → " \
               f"{units.format_time(last, trace.t_unit, profile.tz)}" if first is not None else "empty window"
    else:
        span = f"window t {first:,} → {last:,}" if first is not None else "empty window"
    held = f"{hi - lo:,} tuples of {run.window_objects():,} objects" if trace.stream == "incomplete" else \
        f"{hi - lo:,} objects"
    return f"Slide {run.current:,} · {span} · {held} in the window · {run.rows:,} of {len(trace):,} rows replayed"


def tiles(run: LiveRun) -> None:
    """One bordered card per algorithm: precision, memory, ms per slide, candidates."""
    history = run.metrics_frame(20)
    names = list(run.answers)
    for start in range(0, len(names), TILES_PER_ROW):
        columns = st.columns(TILES_PER_ROW)
        for column, name in zip(columns, names[start:start + TILES_PER_ROW]):
            mine = history[history["algorithm"] == name]
            last = mine.iloc[-1] if len(mine) else None
            info = engine.registry.algorithm_class(name)
            with column.container(border=True):
                st.markdown(f"**{name}** <span style='color:gray'>· {'exact' if info.exact else 'approximate'}"
                            f"</span>", unsafe_allow_html=True, help=info.summary)
                a, b = st.columns(2)
                c, d = st.columns(2)
                a.metric("precision", "–" if last is None else f"{last['precision']:.2f}",
                         help=charts.METRICS["precision"][1])
                b.metric("memory", "–" if last is None else units.format_bytes(last["measured_bytes"]),
                         help="measured size of the structures; modelled (the cost model of "
                              "docs/algorithms/memory.md): "
                              + ("–" if last is None else units.format_bytes(last["bytes"])))
                c.metric("ms / slide", "–" if last is None else f"{mine['ms'].mean():.2f}",
                         help=charts.METRICS["ms"][1] + " (mean of the last 20 slides)")
                d.metric("candidates", "–" if last is None else f"{int(last['candidates']):,}",
                         help=charts.METRICS["candidates"][1])


def window_warnings(run: LiveRun) -> None:
    held, k = run.window_objects(), run.setup.query.k
    if run.current is not None and held < k:
        st.warning(f"The current window holds only {held} object(s), fewer than k = {k}: every answer has "
                   f"{held} row(s). Choose a longer window or a smaller k.", icon=":material/warning:")


def metric_chart(field: str, chart) -> None:
    """A full-width chart with its metric's definition as a caption."""
    st.altair_chart(chart, width="stretch", height=charts.HEIGHT + 90)
    st.caption(f"{charts.METRICS[field][0]}: {charts.METRICS[field][1]}.")


def render(run: LiveRun, profile: presets.Profile) -> None:
    """The panels: position, tiles, comparison table, charts over time, the window, layers."""
    trace = run.trace
    st.progress(run.rows / max(1, len(trace)), text=status(run, profile) + (" · end of the trace" if run.done else ""))
    window_warnings(run)
    tiles(run)

    shown = {name: answer for name, answer in run.answers.items() if name != run.reference}
    frame, wrong = tables.comparison(run.exact, shown, (lambda seq: time_text(trace, profile, seq))
                                     if profile.timed else None)
    st.markdown(f"**Top-{run.setup.query.k} at slide {run.current if run.current is not None else '–'}**: the exact "
                f"answer ({run.reference}) rank by rank; one column per algorithm: ✓ where it "
                "returned the exact object, else the id it returned, highlighted when it differs from the exact answer.")
    unit, score_title = score_unit(run, profile)
    st.table(tables.styled(frame, wrong, unit))

    history = with_slide_time(charts.thin_slides(run.metrics_frame(HISTORY), HISTORY_POINTS), run, profile)
    tz = profile.tz
    st.subheader("Over time", help="; ".join(f"**{name}**: {text}" for name, text in charts.METRICS.values()))
    approximate = [n for n in run.setup.algorithms if not engine.registry.algorithm_class(n).exact]
    if approximate:
        metric_chart("precision", charts.over_time(history, "precision", tz=tz))
        metric_chart("error", charts.over_time(history, "error", tz=tz))
    else:
        st.caption("Precision and error are not drawn: every selected algorithm is exact (precision 1, error 0). "
                   "Select an approximate algorithm to see them.")
    metric_chart("candidates", charts.over_time(history, "candidates", log=True, tz=tz))
    metric_chart("retained", charts.over_time(history, "retained", log=True, tz=tz))
    metric_chart("memory", charts.memory_over_time(history, tz=tz))
    metric_chart("ms", charts.over_time(history, "ms", log=True, tz=tz))

    panel_names = [n for n in run.setup.algorithms if n != run.reference] or [run.reference]
    window = with_time(run.window_frame(WINDOW_POINTS), trace, profile)
    candidates = with_time(run.candidates_frame(WINDOW_POINTS), trace, profile)
    answers = with_time(run.answers_frame(), trace, profile)
    if run.reference not in run.answers:
        exact = pd.DataFrame({"algorithm": run.reference, "rank": np.arange(1, len(run.exact) + 1), "seq": run.exact.seq,
                              "t": trace.t[run.exact.seq], "score": run.exact.scores})
        answers = pd.concat([answers, with_time(exact, trace, profile)], ignore_index=True)
    st.altair_chart(charts.window_panels(window, candidates, answers, panel_names, timed=profile.timed,
                                         tz=profile.tz, columns=min(3, len(panel_names)), score_title=score_title))
    if trace.stream == "incomplete":
        bounds(run, unit)
    any_weights(run)
    layered(run)


def bounds(run: LiveRun, unit: str = "") -> None:
    """Attribute streams: every valid object's current score against the best it could reach."""
    occurrences = int(run.setup.params.get("eaa", {}).get("occurrences", 1))
    objects = run.objects_frame(occurrences)
    if objects.empty:
        return
    kth = float(run.exact.scores[-1]) if len(run.exact) == run.setup.query.k else 0.0
    in_answer = objects["id"].isin(run.exact.ids)
    status = np.where(in_answer, "in the answer", np.where(objects["best"] >= kth, "may still enter", "cannot enter"))
    st.altair_chart(charts.current_vs_best(objects.assign(status=status), kth, unit), width="stretch")
    st.caption(f"Best possible = current score + each weight of a stream the object has fewer than {occurrences} "
               "valid tuple(s) in (values are at most 1), as EAA bounds it. Below the red line (the k-th current "
               f"score) an object cannot enter the answer: {int((status == 'cannot enter').sum()):,} of "
               f"{len(objects):,} objects could be dropped.")


def any_weights(run: LiveRun) -> None:
    """An index that answers any weights (SAO: ``query(weights, k)``) against the oracle, on Q new weight vectors."""
    q = run.setup.query
    for name in run.setup.algorithms:
        alg = run.engines[name]
        if name == run.reference or not callable(getattr(alg, "query", None)) or run.current is None:
            continue
        st.subheader(f"Any weights at once: {name} against the exact answers",
                     help=f"{name} keeps one index for every weight vector; each of Q random weight vectors (uniform "
                          "in [-1, 1] per feature, as in the SAO paper) is answered from the current window by "
                          f"`{name}.query(weights, k)` and by the oracle's `query(weights, k)`, without reprocessing.")
        count = st.number_input("Q (weight vectors)", min_value=1, max_value=200, value=20, step=5,
                                key=f"any_weights_{name}")
        lowest = 0.0 if run.trace.stream == "incomplete" else -1.0
        try:
            frame = run.any_weights_frame(name, session.weight_vectors(int(count), len(q.weights), lowest=lowest), q.k)
        except ValueError as exc:
            st.caption(f"{name} cannot answer other weights here: {exc}")
            continue
        mine, exact = frame[frame.algorithm == name], frame[frame.algorithm == run.reference]
        a, b, c = st.columns(3)
        a.metric(f"{name}: median ms per query", f"{mine.ms.median():.3f}")
        b.metric("oracle: median ms per query", f"{exact.ms.median():.3f}",
                 help="the exact answer: a full pass over the window per weight vector")
        c.metric(f"{name}: mean precision", f"{mine.precision.mean():.2f}",
                 help=f"share of the exact top-{q.k} ids {name} returned, over the Q weight vectors")
        left, right = st.columns(2)
        left.altair_chart(charts.query_times(frame), width="stretch")
        right.altair_chart(charts.query_precision(frame, name), width="stretch")
        st.caption(f"{name} holds {int(run.engines[name].stats()['candidates']):,} objects of the window's "
                   f"{run.window_rows()[1] - run.window_rows()[0]:,}; an exact algorithm bound to one weight vector "
                   "(MinTopK, SAP) would have to replay the window for each new vector.")


def layered(run: LiveRun) -> None:
    """SAO's layers projected on two chosen features, for every algorithm that keeps layers."""
    trace = run.trace
    for name in run.setup.algorithms:
        if len(trace.features) < 2 or run.layers(name) is None:
            continue
        features = list(trace.features)
        left, right = st.columns(2)
        a = left.selectbox("Horizontal feature", features, key=f"layers_a_{name}")
        b = right.selectbox("Vertical feature", features, index=min(1, len(features) - 1), key=f"layers_b_{name}")
        ia, ib = features.index(a), features.index(b)
        frame = run.layers_frame(name, (ia, ib), LAYER_POINTS)
        weights = run.setup.query.weights
        feature_units = presets.FEATURE_UNITS.get(trace.family, {})
        a_title, b_title = (f"{f} ({feature_units[f]})" if f in feature_units else f"{f} (no unit)" for f in (a, b))
        st.altair_chart(charts.layers_projection(frame, (weights[ia], weights[ib]), a_title, b_title,
                                                 f"{name}: layers projected on {a} and {b}"), width="stretch")


# ---------------------------------------------------------------- the page

PAGE_START = perf_counter()
st.title("Live")

db = data.db_path()
data.follow_address("live_address", ["live_started", "query_for", "live_run", "live_note", "engine_error", "restart",
                                     "restart_setup", "speed", *(key for key in list(ss.keys()) if key.startswith("param_"))])
names, missing = data.dataset_choices(db, ss.live_run.trace.name if "live_run" in ss else None)
if missing:
    st.info(missing)

pending = data.open_session(names, started="live_started", url="url_pending", playing="playing", dataset="dataset")
if "dataset" not in ss:  # open on what `make run` replays, else on the first dataset with rows
    ss.dataset = data.first_with_rows(db, [name for name in [presets.demo().get("dataset")] if name in names] + names)

run: LiveRun | None = ss.get("live_run")
with st.sidebar:
    dataset = st.selectbox("Dataset", names, key="dataset")
    if dataset not in data.BUILT_IN and (counts := data.ingest_counts(db, dataset)):
        st.caption(f"Ingest: {counts}")
try:
    trace = run.trace if run is not None and run.trace.name == dataset else data.load_trace(db, dataset)
except data.MissingData as missing:
    st.warning(str(missing))
    st.stop()
profile = presets.profile(trace.name, trace.family, trace.features, trace.t_unit)
catalogue = algorithms_for(trace)

if ss.get("query_for") != trace.name:  # a new dataset: its default preset and `make run`'s algorithms, then the URL
    apply_values(live_state.preset_values(profile.default_preset, profile))
    replayed = {name: chosen for name, chosen in presets.replayed_algorithms(trace.name).items() if name in catalogue}
    if replayed:
        ss.algorithms = list(replayed)
        apply_values({live_state.param_key(name, key): value for name, chosen in replayed.items()
                      for key, value in chosen.items() if key in catalogue[name].defaults})
    ss.query_for = trace.name
    if pending:
        url_notes: list[str] = []
        if pending.get("ds") not in (None, trace.name):
            url_notes.append(f"its dataset `{units.shorten(pending['ds'])}` is not in `{db}`: `{trace.name}` is shown")
        from_link = live_state.from_url(pending, profile, url_notes, {key: ss[key] for key in ("kind", "window", "slide")})
        apply_values(from_link)
        if trace.stream == "incomplete" and any(from_link.get(live_state.weight_key(f), 0.0) < 0
                                                for f in trace.features):
            url_notes.append(f"w = {units.shorten(pending['w'])} has negative weights, which an attribute stream's monotone "
                             "scores cannot take: they became 0")
        if pending.get("alg"):
            named = list(dict.fromkeys(a.strip() for a in pending["alg"].split(",")))
            unknown = [a for a in named if a not in catalogue]
            if unknown:
                url_notes.append(f"alg: {units.shorten(', '.join(unknown))} left out (the algorithms of this dataset's stream: "
                                 f"{', '.join(catalogue)})")
            if len(unknown) < len(named):
                ss.algorithms = [a for a in named if a in catalogue]
        if units.link_number(pending.get("speed", "")) in SPEEDS:
            ss.speed = units.link_number(pending["speed"])
        elif "speed" in pending:
            url_notes.append(f"speed = {units.shorten(pending['speed'])} is not one of {', '.join(map(str, SPEEDS))}: "
                             "left out")
        if pending.get(data.REPEATED):
            url_notes.append(pending[data.REPEATED])
        if url_notes:
            st.warning("This link's view is shown with changes: " + "; ".join(url_notes) + ".",
                       icon=":material/link:")
if "algorithms" not in ss or (ss.algorithms and not set(ss.algorithms) & set(catalogue)):
    ss.algorithms = [a for a in DEFAULT_ALGORITHMS[trace.stream] if a in catalogue]
ss.algorithms = [a for a in ss.algorithms if a in catalogue]
if trace.stream == "incomplete":  # monotone scores only: no negative weight
    for feature in trace.features:
        ss[live_state.weight_key(feature)] = max(0.0, float(ss.get(live_state.weight_key(feature), 0.0)))
widget_values = {key: ss[key] for key in ("kind", "k", "window", "slide")} | {
    live_state.weight_key(f): ss.get(live_state.weight_key(f), 0.0) for f in trace.features}
ss.preset = live_state.matching_preset(widget_values, profile) or presets.CUSTOM

problems: list[live_state.Problem] = []
param_problems: dict[str, str] = {}
with st.sidebar:
    st.selectbox("Preset", [p.name for p in profile.presets] + [presets.CUSTOM], key="preset", on_change=apply_preset,
                 args=(profile,), help="Named queries for this dataset; the first ones are those a replay config runs (`make run`'s, "
                                       "or another config under pipelines/configs/): compare them with the Runs "
                                       "page. Editing any value below makes it Custom.")
    run_link = st.container()
    algorithms = st.multiselect("Algorithms", list(catalogue), key="algorithms",
                                help="The oracle always runs as the exact reference; "
                                     + "; ".join(f"**{i.name}**: {i.summary}" for i in catalogue.values()))
    st.subheader("Query")
    kind = st.radio("Window kind", ["count", "time"], horizontal=True, key="kind", on_change=switch_kind,
                    args=(profile,), help="count: the last n objects; time: the objects of the last n time units.")
    k = st.number_input("k", step=1, key="k", help=f"Objects in every answer, 1 to {live_state.K_MAX:,}.")
    unit_hint = "objects, e.g. 10,000 or 10k" if kind == "count" else f"duration, e.g. {units.example_durations(trace.t_unit)}"
    window_len, slide_len, problems = live_state.lengths(widget_values, profile)
    if (k_problem := live_state.k_problem(k)) is not None:
        problems.append(live_state.Problem("k", k_problem))
    problem_below(problems, "k")
    st.text_input(f"Window ({unit_hint})", key="window", help="How much of the stream every answer covers.")
    problem_below(problems, "window")
    st.text_input(f"Slide ({'objects' if kind == 'count' else 'duration'})", key="slide",
                  help="How far the window moves between two answers; the window must be a whole number of slides.")
    problem_below(problems, "slide")
    st.caption("Weights: score = Σ weight × feature; a negative weight ranks small values first."
               if trace.stream == "single" else "Weights: score = Σ weight × (sum of the object's valid values "
                                                "in that stream); weights are at least 0.")
    lowest = 0.0 if trace.stream == "incomplete" else -1.0  # incomplete streams need monotone scores
    weights = [st.slider(feature, lowest, 1.0, step=live_state.WEIGHT_STEP, key=live_state.weight_key(feature))
               for feature in trace.features]
    try:
        candidate = engine.Query(weights=weights, k=int(k), window=window_len, slide=slide_len, kind=kind) \
            if not problems else None
        if candidate is not None and (too_many := watchlist_state.boundaries_problem(trace, candidate)) is not None:
            raise ValueError(too_many)
    except ValueError as exc:
        candidate = None
        problems.append(live_state.Problem("query", str(exc)))
        st.error(str(exc), icon=":material/error:")
    stored = None if candidate is None or dataset in data.BUILT_IN else data.run_of_query(
        db, dataset, candidate.weights, candidate.k, candidate.window, candidate.slide, candidate.kind)
    if stored is not None:
        run_link.caption(f"A pipeline run replayed this query: `{stored[0]}`, query #{stored[1]}.")
        run_link.page_link("views/runs.py", label="See its run", icon=":material/history:",
                           query_params={"run": stored[0], "query": str(stored[1])})
    params: dict[str, dict[str, Any]] = {}
    for name in algorithms:
        if catalogue[name].defaults:
            with st.expander(f"{name} parameters", expanded=name in ss.get("param_errors", ()) or (
                    ss.get("engine_error") is not None and ss.engine_error[0][0] == name)):
                params[name] = {key: param_input(name, key, default) for key, default in catalogue[name].defaults.items()}
                try:  # constructing an engine is cheap and checks the parameters the way playback would
                    engine.create(name, candidate or engine.Query(weights=weights or [1.0], k=1, window=1, slide=1),
                                  **params[name])
                except (ValueError, MemoryError) as exc:  # MemoryError: parameters sizing arrays beyond the machine
                    param_problems[name] = str(exc) if isinstance(exc, ValueError) else \
                        f"{name}: these parameters need more memory than the server has ({exc})"
                    st.error(f"{param_problems[name]}. Default: {catalogue[name].defaults}", icon=":material/error:")
                failed = ss.get("engine_error")
                if name not in param_problems and failed and failed[0][0] == name and candidate is not None \
                        and failed[0][1] == Setup(dataset, candidate, tuple(algorithms), params):
                    param_problems[name] = failed[1]  # this setup failed on the data: change a parameter
                    st.error(failed[1], icon=":material/error:")

setup = None
if not algorithms:
    st.info("Pick at least one algorithm in the sidebar.")
    st.stop()
ss.param_errors = tuple(param_problems)
if candidate is not None and not param_problems:
    setup = Setup(dataset, candidate, tuple(algorithms), params)

# Visible warnings about queries that are valid but probably not what the user meant.
if setup is not None:
    q = setup.query
    if kind == "count" and q.k > q.window:
        st.warning(f"k = {q.k} is larger than the window ({q.window:,} objects): answers can hold at most "
                   f"{q.window:,} objects.", icon=":material/warning:")
    if not any(q.weights):
        st.warning("Every weight is 0, so every object scores 0 and the answer is simply the newest objects. "
                   "Give at least one feature a weight.", icon=":material/warning:")
    span = len(trace) if kind == "count" else int(trace.t[-1] - trace.t[0]) + 1 if len(trace) else 0
    if not len(trace):
        st.warning(data.no_rows(trace.name), icon=":material/warning:")
    elif q.window > span:
        shown_span = live_state.typed(span, kind, trace.t_unit)
        st.warning(f"The window ({live_state.typed(q.window, kind, trace.t_unit)}) is longer than the whole trace "
                   f"({shown_span}): no window is ever full.", icon=":material/warning:")

restarted = ss.pop("restart_setup", None)
if setup is None:
    if run is None and restarted is not None and restarted.dataset == trace.name:
        ss.pop("restart", None)
        run = ss.live_run = rebuild(None, trace, restarted)
    if run is None:
        st.error("The query in the sidebar is not valid yet (see the message next to the input).")
        st.stop()
    messages = [p.message for p in problems] + [m if m.startswith(f"{n}:") else f"{n}: {m}"
                                                for n, m in param_problems.items()]
    st.warning(f"Still showing the last valid view: {'; '.join(messages)} (see the message next to the input in "
               "the sidebar).", icon=":material/edit_note:")
elif run is None or run.setup != setup:
    at = None
    if units.link_number(pending.get("at", "")) is not None:
        at = units.link_number(pending["at"])
        last = engine.stream.slide_count(trace.t, setup.query) - 1
        if at > last:
            shown_at = units.shorten(f"{int(pending['at']):,}" if at <= units.LINK_NUMBER_MAX else pending["at"])
            st.warning(f"This link shows slide {shown_at}, but the trace ends at slide {last:,} for this query: "
                       "its last slide is shown." if last >= 0 else
                       f"This link shows slide {shown_at}, but the trace holds no complete slide of this query.",
                       icon=":material/link:")
            at = last if last >= 0 else None
    elif "at" in pending:
        st.warning(f"This link's slide (at = {units.shorten(pending['at'])}) is not a slide number: the first window "
                   "is shown.", icon=":material/link:")
    try:
        run = ss.live_run = rebuild(None if ss.pop("restart", False) else run, trace, setup, at)
        ss.url_pending = {}
    except (ValueError, MemoryError) as exc:  # an engine refused its parameters, the query or the data
        culprit = next((name for name in setup.algorithms if str(exc).startswith(f"{name}:")), None)
        if culprit is not None and ss.get("engine_error", (None,))[0] != (culprit, setup):
            ss.engine_error = ((culprit, setup), str(exc))  # shown next to its parameters
            st.rerun()
        if run is None:
            st.error(f"Cannot start the engines: {exc}")
            st.stop()
        st.error(f"Cannot start the engines: {exc}. Still showing the last valid view.", icon=":material/error:")

playing = bool(ss.playing) and not run.done
ss.playing = playing
ss.setdefault("speed", 20)
play_col, step_col, restart_col, speed_col = st.columns([1, 1, 1, 4], vertical_alignment="bottom")
play_col.button("Pause" if playing else "Play", key="play", on_click=set_playing, args=(not playing,), type="primary", width="stretch",
                icon=":material/pause:" if playing else ":material/play_arrow:", disabled=run.done and not playing)
step_col.button("Step", key="step", icon=":material/skip_next:", on_click=step, disabled=run.done, width="stretch")
restart_col.button("Restart", key="restart", icon=":material/replay:", on_click=restart, width="stretch")
speed_col.select_slider("Speed (slides per second)", SPEEDS, key="speed",
                        help="Playback refreshes at most once per second; the next refresh waits until the browser "
                             "has drawn this one, and each refresh processes the slides due since the last. The "
                             f"engines spend at most {live_state.MAX_BUDGET:.0f} s of a refresh, so a fast speed may "
                             "be capped by the machine: the caption under the buttons then says so.")
if "live_note" in ss:
    st.caption(ss.live_note)

data.write_address(live_state.to_url(run.setup.dataset, run.setup.algorithms, run.setup.query, run.setup.params,
                                     run.trace.t_unit, run.current, ss.speed if ss.speed != 20 else None),
                   "live_address")


@st.fragment
def live_panels() -> None:
    """While playing: one tick of slides within the budget, the panels, then the request for the next tick."""
    started = ss.pop("run_start", None) or perf_counter()  # a tick is timed from its own start
    live: LiveRun = ss.live_run
    if ss.playing:
        tick = playback.start_tick("live_", ss.speed)
        rows = live.rows
        slides = live.play(tick.due, tick.budget)
        st.caption(live_state.pace_caption(ss.speed, slides, tick.due, live.rows - rows, tick.length,
                                           perf_counter() - tick.start, tick.budget))
        if live.done:
            ss.playing = False
            st.rerun(scope="app")
    render(live, profile)
    st.caption(f"Computed in {perf_counter() - started:.2f} s on the server "
               f"({'this refresh' if ss.playing else 'the whole page, engines included'}).")
    if ss.playing:
        playback.request_next("live_", started)


ss.run_start = PAGE_START
live_panels()
