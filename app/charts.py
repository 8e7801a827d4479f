"""Altair chart builders: pure functions from DataFrames to charts, no Streamlit."""

from __future__ import annotations

import altair as alt
import pandas as pd

ALGORITHM = alt.Color("algorithm:N", title="algorithm", scale=alt.Scale(scheme="tableau10"))


def over_time(frame: pd.DataFrame, field: str, title: str, *, at: int | None = None,
              log: bool = False) -> alt.Chart | alt.LayerChart:
    """A line per algorithm of ``field`` against ``slide``.

    Parameters
    ----------
    frame
        Long format: columns ``slide``, ``algorithm`` and ``field``.
    field
        The column to plot (``precision``, ``candidates``, ``ms``, ...).
    title
        Chart and y-axis title.
    at
        Slide to mark with a vertical rule (the Runs page's scrubber), or ``None``.
    log
        A symmetric-log y scale, for sizes that differ by orders of magnitude between
        algorithms (the oracle's whole window against MinTopK's few candidates).

    Examples
    --------
    >>> frame = pd.DataFrame({"slide": [0, 1], "algorithm": ["oracle"] * 2, "precision": [1.0, 1.0]})
    >>> over_time(frame, "precision", "Precision").mark
    'line'
    """
    chart = alt.Chart(frame, title=title).mark_line().encode(
        x=alt.X("slide:Q", title="slide"),
        y=alt.Y(f"{field}:Q", title=title, scale=alt.Scale(type="symlog") if log else alt.Undefined),
        color=ALGORITHM,
        tooltip=["algorithm:N", "slide:Q", alt.Tooltip(f"{field}:Q", format=",.4~g")],
    )
    if at is None:
        return chart
    rule = alt.Chart(pd.DataFrame({"slide": [at]})).mark_rule(strokeDash=[4, 4]).encode(x="slide:Q")
    return alt.layer(chart, rule)


def window_scores(window: pd.DataFrame, candidates: pd.DataFrame, answers: pd.DataFrame,
                  time_title: str) -> alt.LayerChart:
    """Scores of the window's objects against time, each algorithm's candidates and answer marked.

    Parameters
    ----------
    window
        Objects of the window: columns ``t`` and ``score`` (grey points).
    candidates
        Candidate objects: columns ``algorithm``, ``t`` and ``score`` (small coloured points).
    answers
        Answer objects: columns ``algorithm``, ``rank``, ``t`` and ``score`` (coloured shapes).
    time_title
        Title of the time axis (with the trace's unit).

    Examples
    --------
    >>> window = pd.DataFrame({"t": [0, 1, 2], "score": [0.1, 0.5, 0.3]})
    >>> candidates = pd.DataFrame({"algorithm": ["mintopk"] * 2, "t": [1, 2], "score": [0.5, 0.3]})
    >>> answers = pd.DataFrame({"algorithm": ["oracle"], "rank": [1], "t": [1], "score": [0.5]})
    >>> len(window_scores(window, candidates, answers, "t").layer)
    3
    """
    x = alt.X("t:Q", title=time_title, scale=alt.Scale(zero=False))
    y = alt.Y("score:Q", title="score", scale=alt.Scale(zero=False))
    points = alt.Chart(window).mark_circle(size=12, color="lightgray", opacity=0.7).encode(x=x, y=y)
    kept = alt.Chart(candidates).mark_circle(size=28, opacity=0.55).encode(
        x=x, y=y, color=ALGORITHM, tooltip=["algorithm:N", "t:Q", alt.Tooltip("score:Q", format=",.6~g")])
    marks = alt.Chart(answers).mark_point(size=110, filled=False).encode(
        x=x, y=y, color=ALGORITHM, shape=alt.Shape("algorithm:N", title="algorithm"),
        tooltip=["algorithm:N", "rank:Q", "t:Q", alt.Tooltip("score:Q", format=",.6~g")],
    )
    return alt.layer(points, kept, marks, title="Window: scores against time · candidates (dots), answers (rings)")


def benchmark_bars(frame: pd.DataFrame, field: str, title: str) -> alt.Chart:
    """Grouped bars of ``field`` per benchmark ``case``, one bar per ``algorithm``.

    Examples
    --------
    >>> frame = pd.DataFrame({"algorithm": ["a", "b"], "case": ["c", "c"], "objects_per_s": [1.0, 2.0]})
    >>> benchmark_bars(frame, "objects_per_s", "Throughput").mark
    'bar'
    """
    return alt.Chart(frame, title=title).mark_bar().encode(
        x=alt.X("case:N", title="case"),
        xOffset="algorithm:N",
        y=alt.Y(f"{field}:Q", title=title),
        color=ALGORITHM,
        tooltip=["case:N", "algorithm:N", alt.Tooltip(f"{field}:Q", format=",.4~g")],
    )
