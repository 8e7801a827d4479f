"""Altair chart builders: pure functions from DataFrames to charts, no Streamlit.

Every metric has one name and one definition (:data:`METRICS`), used by the charts' subtitles
and tooltips and by the pages' metric tiles, so Live and Runs say the same thing.
"""

from __future__ import annotations

import math
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from app import units

ALGORITHM = alt.Color("algorithm:N", title="algorithm", scale=alt.Scale(scheme="tableau10"))
HEIGHT = 240

METRICS: dict[str, tuple[str, str]] = {
    "precision": ("Precision", "share of the exact top-k ids the algorithm returned (1 = every one)"),
    "error": ("Score error", "object streams: mean over ranks of (exact − returned score) / |exact score|; "
                             "attribute streams: mean absolute difference of the ranked scores; 0 = exact"),
    "candidates": ("Candidates", "objects the algorithm keeps as possible answers of this or a later window"),
    "retained": ("Retained objects", "objects the algorithm stores in any structure (candidates and "
                                     "bookkeeping)"),
    "memory": ("Memory", "modelled = SPEC cost model (8 bytes per value, id, seq, t, pointer); "
                         "measured = real size of the algorithm's structures in Python"),
    "ms": ("Time per slide (ms)", "wall-clock milliseconds to process one slide and produce its answer"),
}


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


def _y(field: str, axis_title: str, values, log: bool) -> alt.Y:
    if not log:
        return alt.Y(f"{field}:Q", title=axis_title)
    ticks = log_ticks(values)
    return alt.Y(f"{field}:Q", title=axis_title + " (log scale)",
                 scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False),
                 axis=alt.Axis(values=ticks, format=tick_format(ticks)))


def _rule(at: int | None) -> alt.Chart | None:
    if at is None:
        return None
    return alt.Chart(pd.DataFrame({"slide": [at]})).mark_rule(strokeDash=[4, 4], color="gray").encode(x="slide:Q")


def over_time(frame: pd.DataFrame, field: str, *, at: int | None = None, log: bool = False,
              stroke: str | None = None) -> alt.Chart | alt.LayerChart:
    """A line per algorithm of the metric ``field`` against the slide number.

    Parameters
    ----------
    frame
        Long format: columns ``slide``, ``algorithm`` and ``field`` (a key of :data:`METRICS`).
    at
        Slide to mark with a vertical rule (the Runs page's scrubber), or ``None``.
    log
        A log y scale with 1-2-5 or decade ticks, for sizes that span orders of magnitude
        (the oracle's whole window against MinTopK's few candidates); values <= 0 are left out.
    stroke
        A column telling lines of the same algorithm apart by dash (two runs compared).

    Examples
    --------
    >>> frame = pd.DataFrame({"slide": [0, 1], "algorithm": ["oracle"] * 2, "precision": [1.0, 1.0]})
    >>> over_time(frame, "precision").mark.type
    'line'
    """
    name, definition = METRICS[field]
    data = frame[frame[field] > 0] if log else frame
    encoding = dict(
        x=alt.X("slide:Q", title="slide", axis=alt.Axis(format="d")),
        y=_y(field, name, data[field], log),
        color=alt.Color("algorithm:N", title="algorithm", scale=alt.Scale(scheme="tableau10"), legend=LEGEND),
        tooltip=["algorithm:N", "slide:Q", alt.Tooltip(f"{field}:Q", title=name, format=",.4~g"),
                 alt.Tooltip("definition:N", title="definition")],
    )
    data = data.assign(definition=definition)
    if stroke:
        encoding["strokeDash"] = alt.StrokeDash(f"{stroke}:N", title=stroke, legend=LEGEND)
        encoding["tooltip"] = [f"{stroke}:N", *encoding["tooltip"]]
    chart = alt.Chart(data, title=title(field), height=HEIGHT).mark_line(point=len(data) < 60).encode(**encoding)
    rule = _rule(at)
    return chart if rule is None else alt.layer(chart, rule)


def memory_over_time(frame: pd.DataFrame, *, at: int | None = None) -> alt.Chart | alt.LayerChart:
    """Modelled (dashed) and measured (solid) memory per algorithm, in KiB or MiB on a log axis.

    ``frame`` has ``slide``, ``algorithm``, ``bytes`` (modelled) and optionally ``measured_bytes``.

    Examples
    --------
    >>> frame = pd.DataFrame({"slide": [0], "algorithm": ["a"], "bytes": [4096], "measured_bytes": [9000]})
    >>> sorted(memory_over_time(frame).data["memory"])
    ['measured', 'modelled']
    """
    columns = {"bytes": "modelled"}
    if "measured_bytes" in frame.columns and frame["measured_bytes"].notna().any():
        columns["measured_bytes"] = "measured"
    long = frame.melt(id_vars=["slide", "algorithm"], value_vars=list(columns), var_name="memory",
                      value_name="value").dropna()
    long["memory"] = long["memory"].map(columns)
    unit, size = units.bytes_unit(float(long["value"].max()) if len(long) else 0.0)
    long[unit] = long["value"] / size
    long = long[long[unit] > 0].assign(definition=METRICS["memory"][1])
    chart = alt.Chart(long, title=title("memory", f" ({unit})"), height=HEIGHT).mark_line().encode(
        x=alt.X("slide:Q", title="slide", axis=alt.Axis(format="d")),
        y=_y(unit, f"memory ({unit})", long[unit], True),
        color=alt.Color("algorithm:N", title="algorithm", scale=alt.Scale(scheme="tableau10"), legend=LEGEND),
        strokeDash=alt.StrokeDash("memory:N", title="memory", sort=["measured", "modelled"], legend=LEGEND),
        tooltip=["algorithm:N", "slide:Q", "memory:N", alt.Tooltip(f"{unit}:Q", format=",.4~g"),
                 alt.Tooltip("definition:N", title="definition")],
    )
    rule = _rule(at)
    return chart if rule is None else alt.layer(chart, rule)


def time_encoding(timed: bool, tz: str | None) -> alt.X:
    """The x encoding of event time: date-times in the dataset's zone, else the raw clock.

    With ``timed`` the frame must carry ``when`` (:func:`app.units.wall_clock_ms` numbers) and
    ``time`` (the same as text, for tooltips).
    """
    if timed:
        return alt.X("when:T", title=f"time ({tz or 'UTC'})", scale=alt.Scale(type="utc"),
                     axis=alt.Axis(format="%H:%M:%S", labelAngle=0))
    return alt.X("t:Q", title="t", scale=alt.Scale(zero=False))


def window_panels(window: pd.DataFrame, candidates: pd.DataFrame, answers: pd.DataFrame,
                  algorithms: Sequence[str], *, timed: bool = False, tz: str | None = None,
                  columns: int = 3, width: int = 280) -> alt.FacetChart:
    """Small multiples of the window's scores against time, one panel per algorithm.

    Each panel draws every window object in grey, the algorithm's candidates as coloured dots
    and its answer as black rings, so six or more algorithms stay distinguishable. One faceted
    chart over one long table (``role`` = window / candidate / answer), so the spec stays small.

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
    scores = window["score"] if len(window) else pd.Series([1.0])
    log = bool((scores > 0).all() and scores.max() / scores.min() > 100)
    x = time_encoding(timed, tz)
    y = alt.Y("score:Q", title="score (log scale)" if log else "score",
              scale=alt.Scale(type="log") if log else alt.Scale(zero=False),
              axis=alt.Axis(format=tick_format(log_ticks(scores)), values=log_ticks(scores)) if log else
              alt.Axis(format="~s" if scores.abs().max() >= 1000 else ",~g"))
    time_tip = alt.Tooltip("time:N", title="time") if timed else alt.Tooltip("t:Q")
    tips = ["algorithm:N", "rank:Q", time_tip, alt.Tooltip("score:Q", format=",.6~g")]
    base = alt.Chart(width=width, height=200).encode(x=x, y=y)
    points = base.transform_filter(alt.datum.role == "window").mark_circle(size=10, color="#c8c8c8", opacity=0.6)
    kept = base.transform_filter(alt.datum.role == "candidate").mark_circle(size=26, opacity=0.8).encode(
        color=alt.Color("algorithm:N", scale=alt.Scale(scheme="tableau10", domain=list(algorithms)), legend=None),
        tooltip=tips[:1] + tips[2:])
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


def current_vs_best(frame: pd.DataFrame, kth: float) -> alt.LayerChart:
    """Attribute streams: each valid object's current score against the best it could still reach.

    ``frame`` has ``id``, ``current``, ``best`` and ``status`` (in the answer / may still enter /
    cannot enter). The horizontal rule is the k-th current score: objects below it cannot
    reach the answer whatever arrives (EAA's pruning); the diagonal is best = current.

    Examples
    --------
    >>> frame = pd.DataFrame({"id": [1, 2], "current": [0.9, 0.1], "best": [1.9, 0.5],
    ...                       "status": ["in the answer", "cannot enter"]})
    >>> len(current_vs_best(frame, 0.9).layer)
    3
    """
    statuses = ["in the answer", "may still enter", "cannot enter"]
    points = alt.Chart(frame).mark_circle(size=30, opacity=0.75).encode(
        x=alt.X("current:Q", title="current score (valid values so far)"),
        y=alt.Y("best:Q", title="best possible score"),
        color=alt.Color("status:N", sort=statuses, scale=alt.Scale(domain=statuses,
                                                                  range=["#e15759", "#f28e2b", "#bab0ac"]),
                        legend=LEGEND),
        tooltip=["id:Q", alt.Tooltip("current:Q", format=",.4~g"), alt.Tooltip("best:Q", format=",.4~g"),
                 "status:N"])
    top = float(max(frame["best"].max(), frame["current"].max())) if len(frame) else 1.0
    diagonal = alt.Chart(pd.DataFrame({"current": [0.0, top], "best": [0.0, top]})).mark_line(
        color="gray", strokeDash=[2, 2]).encode(x="current:Q", y="best:Q")
    rule = alt.Chart(pd.DataFrame({"best": [kth]})).mark_rule(color="#e15759", strokeDash=[6, 3]).encode(y="best:Q")
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
        color=ALGORITHM,
        tooltip=["case:N", "algorithm:N", alt.Tooltip(f"{field}:Q", title=axis_title, format=",.4~g")],
    ).properties(height=alt.Step(9))
