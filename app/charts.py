"""Altair chart builders: pure functions from DataFrames to charts, no Streamlit.

Every metric has one name and one definition (:data:`METRICS`), used by the charts' subtitles
and tooltips and by the pages' metric tiles, so Live and Runs say the same thing.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from app import units

ALGORITHM_COLOURS: dict[str, str] = {
    "oracle": "#4c4c4c", "oracle-incomplete": "#4c4c4c", "duckdb-sql": "#a0a0a0",
    "pretopk": "#b07aa1", "mintopk": "#4e79a7", "kskyband": "#76b7b2", "tma": "#edc948", "sma": "#9c755f",
    "sap-equal": "#ff9da7", "sap-dynamic": "#f28e2b", "sap": "#e15759", "sao": "#59a14f",
    "sla": "#1f77b4", "eaa": "#ff7f0e", "approx": "#2ca02c",
}
"""One colour per registry name (and the SQL baseline), the same on every page and chart."""
SPARE_COLOURS = ("#8c564b", "#e377c2", "#17becf", "#bcbd22", "#9467bd", "#d62728", "#aec7e8", "#ffbb78",
                 "#98df8a", "#c5b0d5", "#c49c94", "#dbdb8d")
"""Colours of names not in :data:`ALGORITHM_COLOURS` (a new algorithm), picked by a hash of the name."""


def algorithm_colour(name: str) -> str:
    """The colour of an algorithm, fixed by its name whatever else is shown.

    A variant ``mintopk/SortedKeys`` (benchmarks) and an unknown name get a spare colour chosen
    by a stable hash of the name, so it too keeps its colour from one chart to the next.

    >>> algorithm_colour("sao"), algorithm_colour("sao") == algorithm_colour("sao")
    ('#59a14f', True)
    """
    if name in ALGORITHM_COLOURS:
        return ALGORITHM_COLOURS[name]
    return SPARE_COLOURS[zlib.crc32(name.encode()) % len(SPARE_COLOURS)]


def algorithm_color(names: Sequence[str], legend: alt.Legend | None = None, field: str = "algorithm") -> alt.Color:
    """The colour encoding of ``field`` over ``names`` with each name's own colour.

    >>> algorithm_color(["mintopk", "sao"]).to_dict()["scale"]
    {'domain': ['mintopk', 'sao'], 'range': ['#4e79a7', '#59a14f']}
    """
    names = [str(n) for n in dict.fromkeys(names)]
    return alt.Color(f"{field}:N", title="algorithm", legend=legend if legend is not None else alt.Undefined,
                     scale=alt.Scale(domain=names, range=[algorithm_colour(n) for n in names]))


def choose_scale(values: Sequence[float] | np.ndarray | pd.Series) -> str:
    """``"log"``, ``"symlog"`` or ``"linear"``: the scale that shows ``values`` apart.

    Positive values that span more than two decades, or whose largest is more than 10 times
    their median (one huge trade among ordinary ones), go on a log scale; values with zeros or
    signs and such a tail on a symmetric log scale; the rest on a linear one.

    >>> choose_scale([1, 2, 3]), choose_scale([1, 5, 1000]), choose_scale([0, 1, 2, 500]), choose_scale([])
    ('linear', 'log', 'symlog', 'linear')
    """
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if len(finite) < 2:
        return "linear"
    size = np.abs(finite)
    if size.max() == 0:
        return "linear"
    middle = float(np.median(size))
    if (finite > 0).all():
        return "log" if finite.max() / finite.min() > 100 or finite.max() > 10 * middle else "linear"
    return "symlog" if middle > 0 and size.max() > 10 * middle or middle == 0 and size.max() > 0 and \
        np.mean(size > 0) < 0.5 else "linear"


def scale_suffix(kind: str) -> str:
    """What an axis title adds for a non-linear scale."""
    return {"log": " (log scale)", "symlog": " (symmetric log scale)"}.get(kind, "")


def value_axis(field: str, axis_title: str, values, kind: str | None = None, channel=alt.Y):
    """A quantitative axis of ``field`` on the scale the data asks for (:func:`choose_scale`).

    ``kind`` forces a scale; log axes get 1-2-5 or decade ticks. The title carries the unit.
    """
    kind = kind or choose_scale(values)
    if kind == "log":
        ticks = log_ticks(values)
        return channel(f"{field}:Q", title=axis_title + scale_suffix(kind),
                       scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False),
                       axis=alt.Axis(values=ticks, format=tick_format(ticks)))
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)] if len(finite) else finite
    big = len(finite) and np.abs(finite).max() >= 1000
    if kind == "symlog":
        positive = np.abs(finite[finite != 0]) if len(finite) else finite
        constant = float(np.quantile(positive, 0.1)) if len(positive) else 1.0  # linear below, log above
        return channel(f"{field}:Q", title=axis_title + scale_suffix(kind),
                       scale=alt.Scale(type="symlog", constant=constant),
                       axis=alt.Axis(format="~s" if big else ",.3~g"))
    return channel(f"{field}:Q", title=axis_title, scale=alt.Scale(zero=False),
                   axis=alt.Axis(format="~s" if big else ",.3~g"))


DAY_MS = 86_400_000


def time_x(when: Sequence[float] | np.ndarray | pd.Series, tz: str | None, field: str = "when") -> alt.X:
    """A time axis over wall-clock ms (:func:`app.units.wall_clock_ms`) in the dataset's zone.

    Within one day the ticks show the time of day and the title the date; over days the ticks
    show dates (and hours while the span is under a week).

    >>> time_x([0, 60_000], "UTC").to_dict()["title"], time_x([0, 9 * DAY_MS], None).to_dict()["axis"]["format"]
    ('time (UTC, 1970-01-01)', '%Y-%m-%d')
    """
    values = np.asarray(when, dtype=float)
    values = values[np.isfinite(values)]
    zone = tz or "UTC"
    if len(values) == 0:
        return alt.X(f"{field}:T", title=f"time ({zone})", scale=alt.Scale(type="utc"))
    first, last = int(values.min()), int(values.max())
    day = lambda ms: pd.Timestamp(ms, unit="ms").strftime("%Y-%m-%d")  # noqa: E731
    if day(first) == day(last):
        title, fmt = f"time ({zone}, {day(first)})", "%H:%M:%S"
    elif last - first < 7 * DAY_MS:
        title, fmt = f"time ({zone})", "%m-%d %H:%M"
    else:
        title, fmt = f"date ({zone})", "%Y-%m-%d"
    return alt.X(f"{field}:T", title=title, scale=alt.Scale(type="utc"), axis=alt.Axis(format=fmt, labelAngle=0))


HEIGHT = 240

METRICS: dict[str, tuple[str, str]] = {
    "precision": ("Precision", "share of the exact top-k ids the algorithm returned (1 = every one)"),
    "error": ("Score error", "object streams: mean over ranks of (exact − returned score) / |exact score|; "
                             "attribute streams: mean absolute difference of the ranked scores; 0 = exact"),
    "candidates": ("Candidates", "objects the algorithm keeps as possible answers of this or a later window"),
    "retained": ("Retained objects", "objects the algorithm stores in any structure (candidates and "
                                     "bookkeeping)"),
    "memory": ("Memory", "modelled = the cost model of docs/algorithms/memory.md (8 bytes per value, id, seq, "
                         "t, pointer); measured = real size of the algorithm's structures in Python"),
    "ms": ("Time per slide (ms)", "wall-clock milliseconds to process one slide and produce its answer"),
}
AXIS_TITLES = {"precision": "precision (share of the exact ids)",
               "error": "score error (relative; absolute on attribute streams)",
               "candidates": "candidates (objects)", "retained": "retained (objects)",
               "ms": "time per slide (ms)"}
"""Axis titles with their unit, per metric."""


def title(field: str, extra: str = "") -> alt.TitleParams:
    """The chart title of a metric (its definition is in the tooltips and the page's help)."""
    return alt.TitleParams(METRICS[field][0] + extra, anchor="start", fontSize=14)


def tick_format(ticks: Sequence[float]) -> str:
    """``~s`` (5k, 10M) for ticks >= 1; plain decimals (0.02) below, never SI ``m``."""
    return "~s" if min(ticks) >= 1 else ",~g"


LEGEND = alt.Legend(orient="top", direction="horizontal", titleOrient="left")


def log_ticks(values: Sequence[float] | np.ndarray) -> list[float]:
    """Readable tick values for a log axis over positive ``values``: 1-2-5 steps or decades.

    Examples
    --------
    >>> log_ticks([3, 40])
    [1, 10, 100]
    >>> log_ticks([3, 8])
    [2, 5, 10]
    >>> log_ticks([1, 1e6])
    [1, 10, 100, 1000, 10000, 100000, 1000000]
    """
    positive = np.asarray(values, dtype=float)
    positive = positive[np.isfinite(positive) & (positive > 0)]
    if len(positive) == 0:
        return [1]
    lo, hi = math.floor(math.log10(positive.min())), math.ceil(math.log10(positive.max()))
    steps = (1, 2, 5) if hi - lo <= 1 else (1,)
    ticks = [m * 10 ** e for e in range(lo, hi + 1) for m in steps]
    low = max(t for t in ticks if t <= positive.min()) if any(t <= positive.min() for t in ticks) else ticks[0]
    high = min(t for t in ticks if t >= positive.max()) if any(t >= positive.max() for t in ticks) else ticks[-1]
    return [int(t) if float(t).is_integer() else t for t in ticks if low <= t <= high]


def thin_slides(frame: pd.DataFrame, most: int) -> pd.DataFrame:
    """The rows of at most ``most`` slides (``most`` >= 2): evenly spaced slide numbers and the last one.

    The slides kept are the multiples of a stride, so a slide drawn at one playback tick is drawn
    at the next as well and lines do not wobble as the history moves on; the latest slide is
    always kept, so a chart ends at the slide shown.

    >>> frame = pd.DataFrame({"slide": range(10)})
    >>> thin_slides(frame, 4)["slide"].tolist()
    [0, 4, 8, 9]
    >>> thin_slides(frame.iloc[1:], 4)["slide"].tolist()
    [3, 6, 9]
    """
    if frame.empty:
        return frame
    slides = frame["slide"]
    first, last = int(slides.min()), int(slides.max())
    if last - first + 1 <= most:
        return frame
    stride = -(-(last - first + 1) // (most - 1))
    return frame[(slides % stride == 0) | (slides == last)]


def _timed(frame: pd.DataFrame) -> bool:
    return "when" in frame.columns and len(frame) > 0 and frame["when"].notna().all()


def _x(frame: pd.DataFrame, tz: str | None) -> alt.X:
    """Time when the slides have times (a ``when`` column), else the slide number."""
    if _timed(frame):
        return time_x(frame["when"], tz)
    return alt.X("slide:Q", title="slide", axis=alt.Axis(format="d"))


def _rule(frame: pd.DataFrame, at: int | None) -> alt.Chart | None:
    """A dashed rule at slide ``at`` (at its time when the slides have times)."""
    if at is None:
        return None
    if _timed(frame) and (frame["slide"] == at).any():
        when = float(frame.loc[frame["slide"] == at, "when"].iloc[0])
        return alt.Chart(pd.DataFrame({"when": [when], "slide": [at]})).mark_rule(
            strokeDash=[4, 4], color="gray").encode(x=alt.X("when:T", scale=alt.Scale(type="utc")))
    return alt.Chart(pd.DataFrame({"slide": [at]})).mark_rule(strokeDash=[4, 4], color="gray").encode(x="slide:Q")


def over_time(frame: pd.DataFrame, field: str, *, at: int | None = None, log: bool | None = None,
              stroke: str | None = None, tz: str | None = None) -> alt.Chart | alt.LayerChart:
    """A line per algorithm of the metric ``field`` over time (or the slide number).

    Parameters
    ----------
    frame
        Long format: columns ``slide``, ``algorithm`` and ``field`` (a key of :data:`METRICS`);
        with a ``when`` column (wall-clock ms of each slide's end, :func:`app.units.wall_clock_ms`)
        the x axis is time in the zone ``tz``.
    at
        Slide to mark with a vertical rule (the Runs page's scrubber), or ``None``.
    log
        ``True``: a log y scale with 1-2-5 or decade ticks (values <= 0 are left out);
        ``False``: linear; ``None``: chosen by the data (:func:`choose_scale`).
    stroke
        A column telling lines of the same algorithm apart by dash (two runs compared).

    Examples
    --------
    >>> frame = pd.DataFrame({"slide": [0, 1], "algorithm": ["oracle"] * 2, "precision": [1.0, 1.0]})
    >>> over_time(frame, "precision").mark.type
    'line'
    """
    name, definition = METRICS[field]
    kind = "log" if log else ("linear" if log is False else choose_scale(frame[field]))
    drawn = ["slide", "algorithm", field] + (["when"] if "when" in frame.columns else []) + ([stroke] if stroke else [])
    data = (frame[frame[field] > 0] if kind == "log" else frame)[drawn]  # the page sends every column it is given
    slide_tip = [alt.Tooltip("slide:Q", format="d")] + ([alt.Tooltip("utcyearmonthdatehoursminutesseconds(when):T",
                                                                     title="time")] if _timed(data) else [])
    encoding = dict(
        x=_x(data, tz),
        y=value_axis(field, AXIS_TITLES.get(field, name), data[field], kind),
        color=algorithm_color(data["algorithm"].unique(), LEGEND),
        tooltip=["algorithm:N", *slide_tip, alt.Tooltip(f"{field}:Q", title=name, format=",.4~g"),
                 alt.Tooltip("definition:N", title="definition")],
    )
    if stroke:
        encoding["strokeDash"] = alt.StrokeDash(f"{stroke}:N", title=stroke, legend=LEGEND)
        encoding["tooltip"] = [f"{stroke}:N", *encoding["tooltip"]]
    chart = alt.Chart(data, title=title(field), height=HEIGHT).mark_line(point=len(data) < 60).encode(
        **encoding).transform_calculate(definition=json.dumps(definition))  # in the spec once, not in every row
    rule = _rule(data, at)
    return chart if rule is None else alt.layer(chart, rule)


def memory_over_time(frame: pd.DataFrame, *, at: int | None = None, tz: str | None = None) -> alt.Chart | alt.LayerChart:
    """Modelled (dashed) and measured (solid) memory per algorithm, in KiB or MiB on a log axis.

    ``frame`` has ``slide``, ``algorithm``, ``bytes`` (modelled), optionally ``measured_bytes``
    and ``when`` (time of each slide, as in :func:`over_time`).

    Examples
    --------
    >>> frame = pd.DataFrame({"slide": [0], "algorithm": ["a"], "bytes": [4096], "measured_bytes": [9000]})
    >>> sorted(memory_over_time(frame).data["memory"])
    ['measured', 'modelled']
    """
    columns = {"bytes": "modelled"}
    if "measured_bytes" in frame.columns and frame["measured_bytes"].notna().any():
        columns["measured_bytes"] = "measured"
    ids = ["slide", "algorithm"] + (["when"] if _timed(frame) else [])
    long = frame.melt(id_vars=ids, value_vars=list(columns), var_name="memory", value_name="value").dropna()
    long["memory"] = long["memory"].map(columns)
    unit, size = units.bytes_unit(float(long["value"].max()) if len(long) else 0.0)
    long[unit] = long["value"] / size
    long = long[long[unit] > 0].drop(columns="value")
    chart = alt.Chart(long, title=title("memory", f" ({unit})"), height=HEIGHT).mark_line().transform_calculate(
        definition=json.dumps(METRICS["memory"][1])).encode(
        x=_x(long, tz),
        y=value_axis(unit, f"memory ({unit})", long[unit], "log"),
        color=algorithm_color(long["algorithm"].unique(), LEGEND),
        strokeDash=alt.StrokeDash("memory:N", title="memory", sort=["measured", "modelled"], legend=LEGEND),
        tooltip=["algorithm:N", "slide:Q", "memory:N", alt.Tooltip(f"{unit}:Q", format=",.4~g"),
                 alt.Tooltip("definition:N", title="definition")],
    )
    rule = _rule(long, at)
    return chart if rule is None else alt.layer(chart, rule)


def time_encoding(timed: bool, tz: str | None, when: Sequence[float] | None = None) -> alt.X:
    """The x encoding of event time: date-times in the dataset's zone (:func:`time_x`), else the raw clock.

    With ``timed`` the frame must carry ``when`` (:func:`app.units.wall_clock_ms` numbers) and
    ``time`` (the same as text, for tooltips).
    """
    if timed:
        return time_x(when if when is not None else [], tz)
    return alt.X("t:Q", title="t (the trace's clock)", scale=alt.Scale(zero=False))


def window_panels(window: pd.DataFrame, candidates: pd.DataFrame, answers: pd.DataFrame,
                  algorithms: Sequence[str], *, timed: bool = False, tz: str | None = None,
                  columns: int = 3, width: int = 280, score_title: str = "score") -> alt.FacetChart:
    """Small multiples of the window's scores against time, one panel per algorithm.

    Each panel draws every window object in grey, the algorithm's candidates as coloured dots
    and its answer as black rings, so six or more algorithms stay distinguishable. One faceted
    chart over one long table (``role`` = window / candidate / answer), so the spec stays small.
    The score axis is log (or symmetric log) when the scores ask for it (:func:`choose_scale`:
    one 126M trade among 1M ones), and ``score_title`` names its unit.

    Parameters
    ----------
    window
        Objects of the window: ``t`` (and ``when``, ``time`` if ``timed``), ``score``.
    candidates, answers
        Rows ``algorithm, t, (when, time), score`` (answers also ``rank``).
    algorithms
        One panel each, in this order.

    Examples
    --------
    >>> window = pd.DataFrame({"t": [0, 1, 2], "score": [0.1, 0.5, 0.3]})
    >>> candidates = pd.DataFrame({"algorithm": ["mintopk"] * 2, "t": [1, 2], "score": [0.5, 0.3]})
    >>> answers = pd.DataFrame({"algorithm": ["mintopk"], "rank": [1], "t": [1], "score": [0.5]})
    >>> sorted(set(window_panels(window, candidates, answers, ["mintopk"]).data["role"]))
    ['answer', 'candidate', 'window']
    """
    keep = ["algorithm", "role", "rank", "t", "score"] + (["when", "time"] if timed else [])
    parts = [window.assign(algorithm=name, role="window") for name in algorithms]
    parts.append(candidates[candidates["algorithm"].isin(algorithms)].assign(role="candidate"))
    parts.append(answers[answers["algorithm"].isin(algorithms)].assign(role="answer"))
    frame = pd.concat([p.reindex(columns=keep) for p in parts], ignore_index=True)
    scores = pd.concat([window["score"], answers["score"]]) if len(window) else pd.Series([1.0])
    kind = choose_scale(scores)
    if kind == "log":
        frame = frame[frame["score"] > 0]
    x = time_encoding(timed, tz, frame["when"] if timed and len(frame) else None)
    y = value_axis("score", score_title, scores[scores > 0] if kind == "log" else scores, kind)
    time_tip = alt.Tooltip("time:N", title="time") if timed else alt.Tooltip("t:Q")
    tips = ["algorithm:N", "rank:Q", time_tip, alt.Tooltip("score:Q", title=score_title, format=",.6~g")]
    base = alt.Chart(width=width, height=200).encode(x=x, y=y)
    points = base.transform_filter(alt.datum.role == "window").mark_circle(size=10, color="#c8c8c8", opacity=0.6)
    kept = base.transform_filter(alt.datum.role == "candidate").mark_circle(size=26, opacity=0.8).encode(
        color=algorithm_color(algorithms, legend=None), tooltip=tips[:1] + tips[2:])
    marks = base.transform_filter(alt.datum.role == "answer").mark_point(
        size=90, filled=False, color="black", strokeWidth=1.5).encode(tooltip=tips)
    return alt.layer(points, kept, marks, data=frame).facet(
        facet=alt.Facet("algorithm:N", title=None, sort=list(algorithms),
                        header=alt.Header(labelFontSize=14, labelFontWeight="bold", labelAnchor="start")),
        columns=columns,
        title=alt.TitleParams("The window: every object's score against its time",
                              subtitle="grey: objects in the window · coloured dots: the algorithm's candidates · "
                                       "black rings: its answer", anchor="start"))


def layers_projection(frame: pd.DataFrame, direction: tuple[float, float], a_title: str,
                      b_title: str, title: str = "Layers projected on two features") -> alt.LayerChart:
    """SAO-style layers projected on two features, with the query's weight direction.

    ``frame`` has ``layer``, ``a`` and ``b``; the arrow runs from the centre of the points
    along ``direction`` (the weights of the two features): better scores lie that way.

    Examples
    --------
    >>> frame = pd.DataFrame({"layer": [1, 2], "a": [0.9, 0.2], "b": [0.8, 0.1]})
    >>> len(layers_projection(frame, (1.0, 1.0), "x_0", "x_1").layer)
    2
    """
    points = alt.Chart(frame).mark_circle(size=30, opacity=0.8).encode(
        x=alt.X("a:Q", title=a_title, scale=alt.Scale(zero=False)),
        y=alt.Y("b:Q", title=b_title, scale=alt.Scale(zero=False)),
        color=alt.Color("layer:O", title="layer", scale=alt.Scale(scheme="viridis", reverse=True)),
        tooltip=["layer:O", "seq:Q", alt.Tooltip("a:Q", title=a_title, format=",.6~g"),
                 alt.Tooltip("b:Q", title=b_title, format=",.6~g")] if "seq" in frame else ["layer:O"])
    da, db = direction
    norm = math.hypot(da, db) or 1.0
    ca, cb = (float(frame["a"].mean()), float(frame["b"].mean())) if len(frame) else (0.0, 0.0)
    spread = float(max(frame["a"].max() - frame["a"].min(), frame["b"].max() - frame["b"].min())) \
        if len(frame) else 1.0
    length = 0.4 * (spread or 1.0)
    arrow = pd.DataFrame({"a": [ca, ca + da / norm * length], "b": [cb, cb + db / norm * length]})
    line = alt.Chart(arrow).mark_line(color="crimson", strokeWidth=3, point=alt.OverlayMarkDef(
        shape="triangle-up", size=120, color="crimson")).encode(x="a:Q", y="b:Q")
    return alt.layer(points, line, title=alt.TitleParams(
        title, subtitle="layer 1 is the outermost; red arrow: the query's weight direction "
        "(better scores lie that way)", anchor="start"), height=360)


def current_vs_best(frame: pd.DataFrame, kth: float, unit: str = "") -> alt.LayerChart:
    """Attribute streams: each valid object's current score against the best it could still reach.

    ``frame`` has ``id``, ``current``, ``best`` and ``status`` (in the answer / may still enter /
    cannot enter). The horizontal rule is the k-th current score: objects below it cannot
    reach the answer whatever arrives (EAA's pruning); the diagonal is best = current. Both
    axes take the scale the scores ask for (most clients near 0, a few heavy ones: log).

    Examples
    --------
    >>> frame = pd.DataFrame({"id": [1, 2], "current": [0.9, 0.1], "best": [1.9, 0.5],
    ...                       "status": ["in the answer", "cannot enter"]})
    >>> len(current_vs_best(frame, 0.9).layer)
    3
    """
    statuses = ["in the answer", "may still enter", "cannot enter"]
    x_kind, y_kind = choose_scale(frame["current"]), choose_scale(frame["best"])
    shown = frame[((frame["current"] > 0) | (x_kind != "log")) & ((frame["best"] > 0) | (y_kind != "log"))]
    suffix = f" ({unit})" if unit else ""
    x = value_axis("current", f"current score (valid values so far){suffix}", shown["current"], x_kind, alt.X)
    y = value_axis("best", f"best possible score{suffix}", shown["best"], y_kind)
    points = alt.Chart(shown).mark_circle(size=30, opacity=0.75).encode(
        x=x, y=y,
        color=alt.Color("status:N", sort=statuses, scale=alt.Scale(domain=statuses,
                                                                  range=["#e15759", "#f28e2b", "#bab0ac"]),
                        legend=LEGEND),
        tooltip=["id:Q", alt.Tooltip("current:Q", format=",.4~g"), alt.Tooltip("best:Q", format=",.4~g"),
                 "status:N"])
    # best = current over the part of the plot the points span (best >= current: it would stretch the axes)
    low = max(float(shown["current"].min()), float(shown["best"].min())) if len(shown) else 0.0
    top = float(shown["current"].max()) if len(shown) else 1.0
    line = pd.DataFrame({"current": [low, top], "best": [low, top]}) if low <= top else pd.DataFrame(
        {"current": [], "best": []})
    diagonal = alt.Chart(line).mark_line(
        color="gray", strokeDash=[2, 2]).encode(x="current:Q", y="best:Q")
    rule = alt.Chart(pd.DataFrame({"best": [kth]})).mark_rule(color="#e15759", strokeDash=[6, 3]).encode(y="best:Q")
    if len(shown) and kth < float(shown["best"].min()) / 2:  # far below every object: it would only flatten the axis
        rule = alt.Chart(pd.DataFrame({"best": []})).mark_rule().encode(y="best:Q")
    return alt.layer(points, diagonal, rule, title=alt.TitleParams(
        "Objects of the window: current against best possible score", anchor="start", fontSize=14),
        height=320)


def benchmark_family(frame: pd.DataFrame, field: str, axis_title: str) -> alt.Chart:
    """Horizontal bars of ``field``: one row per full case label, one bar per algorithm.

    A log scale is used when the values span more than two decades.

    Examples
    --------
    >>> frame = pd.DataFrame({"algorithm": ["a", "b"], "case": ["c", "c"], "objects_per_s": [1.0, 2.0]})
    >>> benchmark_family(frame, "objects_per_s", "Throughput").mark
    'bar'
    """
    values = frame[field].astype(float)
    positive = values[values > 0]
    log = len(positive) > 0 and positive.max() / positive.min() > 100
    ticks = log_ticks(positive) if log else alt.Undefined
    x = alt.X(f"{field}:Q", title=axis_title + (" (log scale)" if log else ""),
              scale=alt.Scale(type="log") if log else alt.Undefined,
              axis=alt.Axis(format="~s", values=ticks, orient="top"))
    data = frame[frame[field] > 0] if log else frame
    cases = list(dict.fromkeys(data["case"]))
    baseline = log_ticks(data[field])[0] if log else 0  # log bars need a start above 0
    return alt.Chart(data, title=axis_title).mark_bar().encode(
        y=alt.Y("case:N", title=None, sort=cases, axis=alt.Axis(labelLimit=400)),
        yOffset=alt.YOffset("algorithm:N"),
        x=x,
        x2=alt.datum(baseline),
        color=algorithm_color(data["algorithm"].unique()),
        tooltip=["case:N", "algorithm:N", alt.Tooltip(f"{field}:Q", title=axis_title, format=",.4~g")],
    ).properties(height=alt.Step(9))


def sweep_chart(frame: pd.DataFrame, x: str, x_title: str, field: str, axis_title: str,
                paper: pd.DataFrame | None = None, height: int = 220) -> alt.Chart | alt.LayerChart:
    """One line per algorithm of ``field`` against the swept parameter ``x`` (a benchmark sweep).

    Numeric parameters spanning a decade or more go on a log x axis; others (an allocation
    strategy) are categories. The y scale is chosen by the data (:func:`choose_scale`).
    ``paper`` (rows ``algorithm, x, field``) draws the paper's figures as hollow diamonds
    beside ours (filled circles), each in its algorithm's colour.

    Examples
    --------
    >>> ours = pd.DataFrame({"algorithm": ["sap", "sap"], "k": [10, 100], "avg_candidates": [28.0, 290.0]})
    >>> paper = pd.DataFrame({"algorithm": ["sap"], "k": [10], "avg_candidates": [28.0]})
    >>> [layer.mark.type for layer in sweep_chart(ours, "k", "k", "avg_candidates", "candidates", paper).layer]
    ['line', 'point']
    """
    data = frame.dropna(subset=[field]).assign(source="ours")
    if paper is not None and len(paper):
        data = pd.concat([data, paper.assign(source="paper (as printed)")], ignore_index=True)
    numeric = pd.api.types.is_numeric_dtype(data[x])
    if numeric:
        values = data[x].astype(float)
        wide = (values > 0).all() and values.max() >= 10 * values.min()
        x_enc = alt.X(f"{x}:Q", title=x_title + (" (log scale)" if wide else ""),
                      scale=alt.Scale(type="log") if wide else alt.Scale(zero=False),
                      axis=alt.Axis(values=sorted(values.unique().tolist()), format="~s"))
    else:
        x_enc = alt.X(f"{x}:N", title=x_title, sort=list(dict.fromkeys(data[x])), axis=alt.Axis(labelAngle=0))
    kind = choose_scale(data[field])
    shown = data[data[field] > 0] if kind == "log" else data
    color = algorithm_color(shown["algorithm"].unique(), alt.Legend(orient="bottom", columns=5, title=None,
                                                                    symbolLimit=0))
    y = value_axis(field, axis_title, shown[field], kind)
    tips = ["algorithm:N", f"{x}:{'Q' if numeric else 'N'}", alt.Tooltip(f"{field}:Q", title=axis_title,
                                                                          format=",.4~g"), "source:N"]
    base = alt.Chart(shown, height=height).encode(x=x_enc, y=y, color=color, tooltip=tips)
    lines = base.transform_filter(alt.datum.source == "ours").mark_line(point=alt.OverlayMarkDef(size=40))
    if paper is None or not len(paper):
        return lines.properties(title=alt.TitleParams(axis_title, anchor="start", fontSize=13))
    marks = base.transform_filter(alt.datum.source != "ours").mark_point(shape="diamond", size=110, filled=False,
                                                                         strokeWidth=2)
    return alt.layer(lines, marks, title=alt.TitleParams(axis_title, subtitle="hollow diamonds: the paper's figures",
                                                         anchor="start", fontSize=13))


def query_times(frame: pd.DataFrame) -> alt.Chart:
    """Milliseconds each algorithm took to answer each weight vector at once (log scale when it spans decades).

    ``frame``: rows ``query, algorithm, ms`` (:meth:`app.session.LiveRun.any_weights_frame`).

    >>> frame = pd.DataFrame({"query": [1, 1], "algorithm": ["oracle", "sao"], "ms": [2.0, 0.01]})
    >>> query_times(frame).to_dict()["encoding"]["y"]["scale"]["type"]
    'log'
    """
    kind = choose_scale(frame["ms"])
    shown = frame[frame["ms"] > 0] if kind == "log" else frame
    return alt.Chart(shown, height=HEIGHT, title=alt.TitleParams("Time per query", anchor="start", fontSize=14)).mark_point(
        filled=True, size=45).encode(
        x=alt.X("query:O", title="weight vector (query number)", axis=alt.Axis(labelAngle=0)),
        y=value_axis("ms", "time per query (ms)", shown["ms"], kind),
        color=algorithm_color(shown["algorithm"].unique(), LEGEND),
        tooltip=["query:O", "algorithm:N", alt.Tooltip("ms:Q", format=",.4~g")])


def query_precision(frame: pd.DataFrame, name: str) -> alt.Chart:
    """Precision of ``name``'s answer to each weight vector against the exact one (bars, 0 to 1).

    >>> frame = pd.DataFrame({"query": [1, 1], "algorithm": ["oracle", "sao"], "precision": [1.0, 0.9]})
    >>> query_precision(frame, "sao").to_dict()["encoding"]["y"]["scale"]["domain"]
    [0, 1]
    """
    mine = frame[frame["algorithm"] == name]
    return alt.Chart(mine, height=HEIGHT, title=alt.TitleParams(f"Precision of {name} per query", anchor="start",
                                                                fontSize=14)).mark_bar(
        color=algorithm_colour(name)).encode(
        x=alt.X("query:O", title="weight vector (query number)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("precision:Q", title="precision (share of the exact ids)", scale=alt.Scale(domain=[0, 1])),
        tooltip=["query:O", alt.Tooltip("precision:Q", format=".2f")])
