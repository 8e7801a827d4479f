"""Watch list page: several continuous top-k queries on one stream, run by one shared executor.

The queries (each with its own weights, k, window, slide and kind) go through one
``engine.multi.SharedTopK``; adding or removing one while the stream plays leaves the others
running. One MinTopK per query runs beside it as the unshared reference: the table checks
every answer against it and the tiles compare what both hold. Playback runs in a fragment, one
tick at a time, the browser asking for the next once it has drawn this one, at most once per
:data:`~app.live_state.TICK` (:mod:`app.playback`), and each tick delivering the rows the speed asks for over
its real length within the engine budget of :func:`app.live_state.tick_work`, like the Live page's; the
caption says when the machine is the limit. The dataset, the queries and the
position live in the URL (``ds``, ``q``, ``at``); a link's query or value the page cannot take
is named in a warning; Back and Forward open the address they lead to (:func:`app.data.follow_address`). A
watched query is edited in place: it keeps its number and row. Like the Live page's, the link is written by the page's full runs (Pause,
the stream's end, Step), not by each tick: the browser keeps every address in its history, and
Back would step through the ticks.
"""

from __future__ import annotations

from dataclasses import replace
from time import perf_counter

import streamlit as st

import engine
from app import data, live_state, playback, presets, units
from app.watchlist_state import (MAX_QUERIES, Watch, edited_weights, from_url, parse_query, records_chart,
                                 slider_position, to_url, typed)

SPEEDS = [100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000]  # rows per second
NOTES_SHOWN = 5  # most changes to a link named one by one in its warning
SEEDED = 2  # presets watched when a dataset is opened without queries in the URL (plus one sharing the first's list)

ss = st.session_state


def seed_queries(profile: presets.Profile) -> list[engine.Query]:
    """The dataset's first presets as queries, and the first again with half its k over twice its
    window (the same weights: it shares the first one's candidate list)."""
    out = []
    for preset in profile.presets:
        try:
            out.append(parse_query(preset.kind, preset.k, preset.window, preset.slide,
                                   preset.weight_vector(profile.features), profile))
        except ValueError:
            continue
    if out:
        out = out[:SEEDED] + [replace(out[0], k=max(1, out[0].k // 2), window=2 * out[0].window)]
    return out


def form_defaults(profile: presets.Profile) -> None:
    preset = profile.default_preset
    ss.wl_kind, ss.wl_k = preset.kind, preset.k
    ss.wl_window, ss.wl_slide = preset.window, preset.slide
    for feature, weight in zip(profile.features, preset.weight_vector(profile.features)):
        ss[f"wl_w_{feature}"] = weight


# ---------------------------------------------------------------- callbacks (run before the page)

def switch_kind(profile: presets.Profile) -> None:
    ss.wl_window, ss.wl_slide = profile.defaults(ss.wl_kind)


def set_playing(playing: bool) -> None:
    ss.wl_playing = playing
    playback.forget_last_tick("wl_")


def step() -> None:
    ss.wl_playing = False
    try:
        ss.wl_watch.step()
    except ValueError as exc:  # the stream refused (e.g. a time going backwards in a time window)
        ss.wl_note = f"The stream stopped: {exc}"


def restart() -> None:
    ss.wl_playing = False
    ss.wl_watch = ss.wl_watch.restarted()


def start_edit(profile: presets.Profile) -> None:
    """The form filled with the picked query's values; saving it changes that query in place."""
    number = ss.get("wl_remove_pick")
    if number not in ss.wl_watch.watched:
        return
    q = ss.wl_watch.watched[number].query
    ss.wl_editing = number
    ss.wl_kind, ss.wl_k = q.kind, q.k
    ss.wl_window, ss.wl_slide = typed(q.window, q.kind, profile.t_unit), typed(q.slide, q.kind, profile.t_unit)
    ss.wl_edit_weights = [(weight, slider_position(weight)) for weight in q.weights]
    for feature, (_, position) in zip(profile.features, ss.wl_edit_weights):
        ss[f"wl_w_{feature}"] = position


def stop_edit(profile: presets.Profile) -> None:
    ss.pop("wl_editing", None)
    form_defaults(profile)


def remove() -> None:
    handle = ss.get("wl_remove_pick")
    if handle in ss.wl_watch.watched:
        ss.wl_watch.remove(handle)
        if ss.get("wl_editing") == handle:
            ss.pop("wl_editing")
        ss.wl_note = (f"Query #{handle} removed; the others go on from row {ss.wl_watch.rows:,}."
                      if ss.wl_watch.watched else
                      f"Query #{handle} removed at row {ss.wl_watch.rows:,}; the watch list is empty.")


# ---------------------------------------------------------------- panels

def label(watch: Watch, handle: int) -> str:
    q = watch.watched[handle].query
    weights = presets.describe_weights(dict(zip(watch.trace.features, q.weights)))
    return (f"#{handle} · {weights} · k = {q.k} · {typed(q.window, q.kind, watch.trace.t_unit)} / "
            f"{typed(q.slide, q.kind, watch.trace.t_unit)} ({q.kind})")


def tiles(watch: Watch) -> None:
    totals = watch.totals()
    shared, alone, clock = st.columns(3)
    with shared.container(border=True):
        st.markdown(f"**Shared executor** <span style='color:gray'>· {totals['groups']} weight group(s), "
                    f"{totals['families']} window famil{'y' if totals['families'] == 1 else 'ies'}</span>",
                    unsafe_allow_html=True)
        a, b = st.columns(2)
        a.metric("records", f"{totals['records']:,}", help="objects in the shared super-top-k lists "
                 "(one per weights group): every object some query may still answer with, stored once")
        b.metric("memory", units.format_bytes(totals["bytes"]), help="modelled: words per record and per window")
    with alone.container(border=True):
        st.markdown("**One MinTopK per query** <span style='color:gray'>· the unshared reference</span>",
                    unsafe_allow_html=True)
        a, b = st.columns(2)
        a.metric("records", f"{totals['alone_records']:,}", help="candidates of one MinTopK per query, summed. "
                 "A MinTopK takes whole slides: between two of its boundaries it has not seen the newest rows "
                 "the shared executor already holds")
        b.metric("memory", units.format_bytes(totals["alone_bytes"]), help="modelled, summed over the queries")
    with clock.container(border=True):
        st.markdown("**Engine time** <span style='color:gray'>· since the last restart</span>",
                    unsafe_allow_html=True)
        a, b = st.columns(2)
        a.metric("shared", f"{totals['seconds']:.2f} s", help="seconds in the shared executor")
        b.metric("one per query", f"{totals['alone_seconds']:.2f} s", help="seconds in the MinTopKs, summed "
                 "(a query added mid-stream replays its last window here)")


def render(watch: Watch, profile: presets.Profile) -> None:
    trace = watch.trace
    where = units.format_time(int(trace.t[watch.rows - 1]), trace.t_unit, profile.tz) if watch.rows else "–"
    st.progress(watch.rows / max(1, len(trace)), text=f"{watch.rows:,} of {len(trace):,} rows delivered · "
                f"last t: {where}" + (" · end of the trace" if watch.done else ""))
    tiles(watch)
    if not watch.watched:
        st.info("The watch list is empty: add a query in the sidebar.")
        return

    def end_text(end: int, kind: str) -> str:
        """A time boundary as a time; a count boundary as a row, with that row's time on a clock."""
        if kind == "time":
            return units.format_time(end, trace.t_unit, profile.tz) if profile.timed else str(end)
        at = f" ({units.format_time(int(trace.t[end - 1]), trace.t_unit, profile.tz)})" if profile.timed else ""
        return f"row {end:,}{at}"

    st.markdown("**One row per query**: its latest answer (slide numbers count from the first boundary after the "
                "query was added; *end* is that slide's boundary), the candidates one MinTopK would keep for it "
                "alone, and ✓ where the shared answer equals that MinTopK's.")
    st.dataframe(watch.table(end_text), hide_index=True, width="stretch", key="wl_table", column_config={
        "#": st.column_config.NumberColumn(width=40),
        "query": st.column_config.TextColumn(width="medium", help="weights · k · window / slide, kind"),
        "from row": st.column_config.NumberColumn(width=70, help="first row its windows hold"),
        "slide": st.column_config.NumberColumn(width=55, help="its latest slide, numbered from its first boundary"),
        "end": st.column_config.TextColumn(width="small", help="that slide's boundary: a time, or for a count "
                                           "window the row it ends before (with the time of the row before it)"),
        "top ids": st.column_config.TextColumn(width="medium", help="ids of the answer, best first"),
        "scores": st.column_config.TextColumn(width="medium", help="their scores (6 significant digits, as on the Live page)"),
        "alone": st.column_config.NumberColumn(width=55, help="candidates one MinTopK keeps for this query alone"),
        "= MinTopK": st.column_config.TextColumn("MinTopK", width=70, help="✓: the shared answer is that MinTopK's"),
    })
    if any(w.since for w in watch.watched.values()):
        st.caption("*from row*: a query added mid-stream that could not join a window family holding its whole "
                   "window starts a new one, whose windows hold the objects from that row on (a warm-up of one "
                   "window). Restart runs every query from row 0.")
    frame = watch.points_frame()
    if len(frame):
        st.altair_chart(records_chart(frame), width="stretch", height=300)
        st.caption("Records held: objects in the shared executor's lists (an object that queries with equal weights "
                   "need is stored once, with window marks per family) against the candidates of one MinTopK per "
                   "query, summed.")


# ---------------------------------------------------------------- the page

PAGE_START = perf_counter()
st.title("Watch list")
st.caption("Several continuous top-k queries on the same stream, run by one shared executor (MTopList: queries "
           "with equal weights share one candidate list, queries with equal windows share their windows).")
st.page_link("views/live.py", label="One query, every algorithm compared: the Live page", icon=":material/play_circle:")

db = data.db_path()
data.follow_address("wl_address", ["wl_started", "wl_watch", "wl_note", "wl_editing"])
names, missing = data.dataset_choices(db, ss.wl_watch.trace.name if "wl_watch" in ss else None)
if missing:
    st.info(missing)

pending = data.open_session(names, started="wl_started", url="wl_url", playing="wl_playing", dataset="wl_dataset")

watch: Watch | None = ss.get("wl_watch")
if "wl_dataset" not in ss:  # back from another page (widget values were dropped), else a fresh session
    ss.wl_dataset = watch.trace.name if watch is not None else data.first_with_rows(db, names)
with st.sidebar:
    dataset = st.selectbox("Dataset", names, key="wl_dataset")
try:
    trace = watch.trace if watch is not None and watch.trace.name == dataset else data.load_trace(db, dataset)
except data.MissingData as missing:
    st.warning(str(missing))
    st.stop()
if trace.stream != "single":
    st.info(f"`{dataset}` is an attribute stream (one value per tuple); the shared executor reads object streams. "
            "Pick another dataset.")
    st.stop()
profile = presets.profile(trace.name, trace.family, trace.features, trace.t_unit)
if not len(trace):
    st.warning(data.no_rows(trace.name), icon=":material/warning:")

if watch is None or watch.trace.name != trace.name:
    url_notes: list[str] = []
    if pending.get("ds") not in (None, trace.name):
        url_notes.append(f"its dataset `{units.shorten(pending['ds'])}` is not in `{db}`: `{trace.name}` is shown")
    queries = from_url(pending["q"], len(trace.features), url_notes) if "q" in pending else seed_queries(profile)
    watch = ss.wl_watch = Watch(trace)
    if len(queries) > MAX_QUERIES:
        st.caption(f"This link holds {len(queries):,} queries: the first {MAX_QUERIES} are watched, the other "
                   f"{len(queries) - MAX_QUERIES:,} were dropped (a watch list holds at most {MAX_QUERIES}).")
        queries = queries[:MAX_QUERIES]
    for query in queries:
        try:
            watch.add(query)
        except ValueError as exc:
            url_notes.append(f"query {to_url([query])} left out: {exc}")
    at = units.link_number(pending.get("at", ""))
    if at is not None:
        watch.advance(at)
        if at > len(trace):
            shown_at = units.shorten(f"{at:,}" if at <= units.LINK_NUMBER_MAX else pending["at"])
            url_notes.append(f"row {shown_at} is past the trace's {len(trace):,} rows: its end is shown")
    elif "at" in pending:
        url_notes.append(f"at = {units.shorten(pending['at'])} is not a number of rows: the start is shown")
    if pending.get(data.REPEATED):
        url_notes.append(pending[data.REPEATED])
    if url_notes:
        more = f"; and {len(url_notes) - NOTES_SHOWN:,} more" if len(url_notes) > NOTES_SHOWN else ""
        st.warning("This link's view is shown with changes: " + "; ".join(url_notes[:NOTES_SHOWN]) + more + ".",
                   icon=":material/link:")
    ss.wl_url = {}
    ss.wl_playing = False
    ss.pop("wl_editing", None)
    form_defaults(profile)
elif "wl_kind" not in ss:
    form_defaults(profile)

editing = ss.get("wl_editing")
if editing not in watch.watched:
    editing = ss.wl_editing = None
if ss.pop("wl_form_reset", False):
    form_defaults(profile)
with st.sidebar:
    st.subheader("Add a query" if editing is None else f"Edit query #{editing}")
    kind = st.radio("Window kind", ["count", "time"], horizontal=True, key="wl_kind", on_change=switch_kind,
                    args=(profile,), help="count: the last n objects; time: the objects of the last n time units.")
    k = st.number_input("k", step=1, key="wl_k", help=f"Objects in every answer, 1 to {live_state.K_MAX:,}.")
    if (k_problem := live_state.k_problem(k)) is not None:
        st.error(k_problem, icon=":material/error:")
    unit_hint = "objects, e.g. 1,000 or 1k" if kind == "count" else f"duration, e.g. {units.example_durations(trace.t_unit)}"
    window_text = st.text_input(f"Window ({unit_hint})", key="wl_window")
    slide_text = st.text_input("Slide", key="wl_slide", help="The window must be a whole number of slides.")
    weights = [st.slider(feature, -1.0, 1.0, step=live_state.WEIGHT_STEP, key=f"wl_w_{feature}") for feature in trace.features]
    if editing is not None:
        sliders, weights = weights, edited_weights(weights, ss.wl_edit_weights)
        kept = [f"{feature} = {units.weights_text([weight])}" for feature, weight, value
                in zip(trace.features, weights, sliders) if weight != value]
        if kept:
            st.caption(f"Kept as the query has it unless you move its slider: {', '.join(kept)}.")
        save_col, cancel_col = st.columns(2)
        cancel_col.button("Cancel", key="wl_cancel_edit", icon=":material/close:", on_click=stop_edit, args=(profile,),
                          width="stretch", help="Leave the query as it is; the form adds queries again.")
        if save_col.button(f"Save #{editing}", key="wl_save", icon=":material/save:", type="primary", width="stretch",
                           help="Change the query in place: it keeps its number and row, and answers from its "
                                "next slide boundary."):
            try:
                watch.edit(editing, parse_query(kind, k, window_text, slide_text, weights, profile))
                since = watch.watched[editing].since
                ss.wl_note = (f"Query #{editing} changed at row {watch.rows:,}; it answers from its next slide "
                              "boundary" + (f", its windows holding the objects from row {since:,} on." if since
                                            else ", over whole windows."))
                ss.wl_editing = None
                ss.wl_form_reset = True  # its widgets are drawn: their values change before the next run draws them
                st.rerun()
            except ValueError as exc:
                ss.pop("wl_note", None)
                st.error(f"Not changed: {exc}", icon=":material/error:")
    elif st.button("Add to the watch list", key="wl_add", icon=":material/add:", type="primary", width="stretch"):
        try:
            query = parse_query(kind, k, window_text, slide_text, weights, profile)
            handle = watch.add(query)
            ss.wl_note = (f"Query #{handle} added at row {watch.rows:,}; it answers from its next slide boundary"
                          + (f", its windows holding the objects from row {watch.watched[handle].since:,} on."
                             if watch.watched[handle].since else ", over whole windows.")
                          + (f" Its k = {query.k} is larger than its window of {query.window:,} objects: its answers "
                             f"hold at most {query.window:,}." if query.kind == "count" and query.k > query.window
                             else ""))
        except ValueError as exc:
            ss.pop("wl_note", None)  # the last added query's note would read as this one's
            st.error(f"Not added: {exc}", icon=":material/error:")

playing = bool(ss.wl_playing) and not watch.done and bool(watch.watched)
ss.wl_playing = playing
ss.setdefault("wl_speed", 1_000)
play_col, step_col, restart_col, speed_col = st.columns([1, 1, 1, 4], vertical_alignment="bottom")
play_col.button("Pause" if playing else "Play", key="wl_play", on_click=set_playing, args=(not playing,),
                type="primary", width="stretch", icon=":material/pause:" if playing else ":material/play_arrow:",
                disabled=(watch.done or not watch.watched) and not playing)
step_col.button("Step", key="wl_step", icon=":material/skip_next:", on_click=step,
                disabled=watch.done or not watch.watched,
                width="stretch", help="Deliver the rows up to the next slide boundary of any query.")
restart_col.button("Restart", key="wl_restart", icon=":material/replay:", on_click=restart, width="stretch",
                   help="Every query again from row 0.")
speed_col.select_slider("Speed (rows per second)", SPEEDS, key="wl_speed")

if watch.watched:
    pick_col, edit_col, remove_col = st.columns([5, 1, 1], vertical_alignment="bottom")
    if ss.get("wl_remove_pick") not in watch.watched:
        ss.wl_remove_pick = next(iter(watch.watched))
    pick_col.selectbox("Query", list(watch.watched), key="wl_remove_pick",
                       format_func=lambda handle: label(watch, handle))
    edit_col.button("Edit", key="wl_edit", icon=":material/edit:", on_click=start_edit, args=(profile,),
                    width="stretch", help="Fill the form in the sidebar with this query's values, to change it in place.")
    remove_col.button("Remove", key="wl_remove", icon=":material/delete:", on_click=remove, width="stretch")
if "wl_note" in ss:
    st.caption(ss.wl_note)

data.write_address({"ds": dataset, "q": to_url(watch.queries), "at": str(watch.rows)}, "wl_address")


@st.fragment
def watch_panels() -> None:
    """While playing: the rows due since the last tick within the budget, the panels, then the request for
    the next tick."""
    started = ss.pop("wl_run_start", None) or perf_counter()
    live: Watch = ss.wl_watch
    if ss.wl_playing:
        tick = playback.start_tick("wl_", ss.wl_speed)
        try:
            rows = live.play(tick.due, tick.budget)
        except ValueError as exc:
            ss.wl_playing = False
            ss.wl_note = f"The stream stopped: {exc}"
            st.rerun(scope="app")
        st.caption(live_state.pace_caption(ss.wl_speed, rows, tick.due, None, tick.length,
                                           perf_counter() - tick.start, tick.budget, unit="rows"))
        if live.done:
            ss.wl_playing = False
            st.rerun(scope="app")
    render(live, profile)
    st.caption(f"Computed in {perf_counter() - started:.2f} s on the server.")
    if ss.wl_playing:
        playback.request_next("wl_", started)


ss.wl_run_start = PAGE_START
watch_panels()
