"""Generate ``docs/REPORT.md`` (and its plots in ``docs/report/``) from the benchmark results.

``python -m benchmarks.report [--results benchmarks/results]`` reads the CSV files the last
``make bench`` / ``make bench-quick`` wrote and ``benchmarks/paper_figures.json`` (the papers'
tables, their headline claims with the rule that judges each, the issues' targets), and writes:

* the **claims table**: every headline claim of the four papers, the paper's figure (as printed,
  or computed from its table), ours on the closest setting, how the settings differ, a verdict
  computed by rule (:func:`ratio_verdict`, :func:`value_verdict`, :func:`trend_verdict`,
  :func:`lowest_verdict`, :func:`series_verdict`; a tie is not a win) and the measured cause of
  a difference;
* every **target** of the issues, met or not (two-sided targets tested on both sides);
* each paper's section, the modules' own tables, and the Method section from the harness'
  constants;
* the tables between ``<!-- generated:NAME -->`` and ``<!-- /generated -->`` in
  ``docs/algorithms/*.md`` (:func:`write_doc_tables`; nothing outside the markers is touched).

A row timed over fewer slides than the harness minimum (one window turnover or 200 slides) is
*thin*: it never sets a figure or a range, and a verdict resting on thin rows only is marked
provisional.  Nothing in the report is typed by hand that the results or
``paper_figures.json`` hold.

Plots: Altair, saved as SVG with ``vl-convert-python`` (text, small, diff-friendly).  Without
that package the Vega-Lite JSON specs are written instead and linked.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import pathlib
import re

import altair as alt
import numpy as np
import pandas as pd

import engine
from benchmarks import harness
from benchmarks.common import MIN_TIMED_SLIDES, required_slides

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
REPORT = ROOT / "docs" / "REPORT.md"
PLOTS = ROOT / "docs" / "report"
PAPER = HERE / "paper_figures.json"
HEAVY_MODULE_NAMES = ("bench_dashboard", "bench_ingest", "bench_replay")   # not in quick runs (benchmarks.run)
PAPER_NAMES = {"time-u": "TIME-U", "time-r": "TIME-R", "stock": "STOCK", "taxi": "TRIP"}


# --------------------------------------------------------------------------- formatting

def fmt(value, digits: int = 3) -> str:
    """Compact human form: 1.23M, 45.6k, 0.912, 3; blanks for missing values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)) and abs(value) < 1_000:
        return str(int(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        value = float(value)
        if math.isinf(value):
            return "inf"
        value = float(f"{value:.{digits}g}")
        for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= size:
                return f"{value / size:.{max(digits, len(str(int(abs(value) / size))))}g}{unit}"
        return f"{value:.{max(digits, len(str(int(abs(value)))))}g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def md_table(frame: pd.DataFrame, columns: list[str] | None = None, headers: list[str] | None = None) -> str:
    columns = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    headers = headers or columns
    lines = ["| " + " | ".join(headers[:len(columns)]) + " |", "|" + "---|" * len(columns)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(fmt(row[c]) for c in columns) + " |")
    return "\n".join(lines)


def kb(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value) / 1024


class Plots:
    """Saves Altair charts under ``docs/report/`` and returns their Markdown links."""

    def __init__(self, directory: pathlib.Path, base: pathlib.Path) -> None:
        self.directory, self.base = directory, base
        directory.mkdir(parents=True, exist_ok=True)
        for old in list(directory.glob("*.svg")) + list(directory.glob("*.vl.json")):
            old.unlink()
        try:
            import vl_convert  # noqa: F401
            self.suffix = ".svg"
        except ImportError:
            self.suffix = ".vl.json"

    def save(self, chart: alt.Chart, name: str, title: str) -> str:
        path = self.directory / f"{name}{self.suffix}"
        chart.save(str(path))
        rel = pathlib.Path(os.path.relpath(path, self.base)).as_posix()
        return f"![{title}]({rel})" if self.suffix == ".svg" else f"[{title} (Vega-Lite spec)]({rel})"


def line_chart(frame: pd.DataFrame, x: str, y: str, title: str, *, facet: str | None = None,
               log_x: bool = True, log_y: bool = True, x_title: str | None = None, y_title: str | None = None):
    scale_x = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    scale_y = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    chart = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", scale=scale_x, title=x_title or x),
        y=alt.Y(f"{y}:Q", scale=scale_y, title=y_title or y),
        color=alt.Color("algorithm:N", scale=alt.Scale(scheme="category20")),
        strokeDash=alt.StrokeDash("algorithm:N"),
    ).properties(width=220, height=170)
    if facet:
        chart = chart.facet(column=alt.Column(f"{facet}:N", title=None))
    return chart.properties(title=title)


# --------------------------------------------------------------------------- loading

def load(results: pathlib.Path) -> dict[str, pd.DataFrame]:
    return {path.stem: pd.read_csv(path) for path in sorted(results.glob("*.csv"))}


def sweep_rows(frame: pd.DataFrame, sweep: str) -> pd.DataFrame:
    if frame.empty or "sweep" not in frame:
        return frame.iloc[0:0]
    return frame[frame["sweep"].fillna("").str.split(",").apply(lambda names: sweep in names)]


def family_rows(grid: pd.DataFrame, family: str) -> pd.DataFrame:
    """The grid rows of one family (none when the results hold no grid at all)."""
    return grid[grid["family"] == family] if "family" in grid else grid.iloc[0:0]


CLAIMS_LINK = "The papers' headline claims, ours beside them and their verdicts: [claims of the papers](#claims-of-the-papers)."


def registered_any(test) -> bool:
    """Whether some registered algorithm passes ``test`` (an empty section says which reason holds)."""
    return any(test(info) for info in engine.available())


def ok(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"] == "ok"] if "status" in frame else frame


# --------------------------------------------------------------------------- claims of the papers

VERDICTS = ("reproduced", "reproduced in shape", "not reproduced", "reversed")
TIE = 0.05
"""Two figures within 5% of each other are a tie, and a tie is not a win."""
FLAT = 0.05
"""A trend is flat when every step is within this share of the largest value (a claim may widen it)."""


def ratio_verdict(ours: float, paper: float, bound: str, tolerance: float = 0.0) -> str:
    """A ratio claim ("A takes ``paper`` of B's time", "A keeps ``paper`` x B's candidates").

    The direction comes first: the paper's ratio is below 1 (A beats B) or above 1; ours on the
    other side of 1 beyond :data:`TIE` is ``reversed``, within it ``not reproduced``.  In the
    paper's direction, the size decides: ``about`` within a factor ``1 + tolerance`` of the
    paper's figure, ``at_most``/``at_least`` at or beyond it, is ``reproduced``; otherwise
    ``reproduced in shape``.

    >>> ratio_verdict(0.2, 0.17, "about", 1.0), ratio_verdict(0.8, 0.17, "about", 1.0)
    ('reproduced', 'reproduced in shape')
    >>> ratio_verdict(1.01, 0.17, "about", 1.0), ratio_verdict(1.37, 0.17, "about", 1.0)
    ('not reproduced', 'reversed')
    """
    if abs(ours - 1.0) <= TIE:
        return "not reproduced"
    if (ours < 1.0) != (paper < 1.0):
        return "reversed"
    if bound == "at_most":
        close = ours <= paper
    elif bound == "at_least":
        close = ours >= paper
    else:
        close = paper / (1.0 + tolerance) <= ours <= paper * (1.0 + tolerance)
    return "reproduced" if close else "reproduced in shape"


def value_verdict(ours: float, paper: float, bound: str, tolerance: float = 0.0, absolute: bool = False) -> str:
    """A single figure: ``at_most``/``at_least`` one-sided, ``about`` two-sided (``tolerance``
    absolute or relative to the paper's figure).  Outside: ``not reproduced``.

    >>> value_verdict(0.9, 0.8, "about", 0.05, absolute=True), value_verdict(0.82, 0.8, "about", 0.05, absolute=True)
    ('not reproduced', 'reproduced')
    """
    if bound == "at_most":
        met = ours <= paper
    elif bound == "at_least":
        met = ours >= paper
    else:
        margin = tolerance if absolute else tolerance * abs(paper)
        met = abs(ours - paper) <= margin
    return "reproduced" if met else "not reproduced"


OPPOSITE = {"rises": "falls", "falls": "rises"}


def trend_verdict(ours: str, expected: str) -> str:
    """Our direction against the paper's: the same is ``reproduced``, the opposite ``reversed``,
    anything else (flat where the paper moves, mixed, moving where the paper is flat) ``not reproduced``."""
    if ours == expected:
        return "reproduced"
    if OPPOSITE.get(expected) == ours:
        return "reversed"
    return "not reproduced"


def lowest_verdict(wins: int, last: int, total: int) -> str:
    """The claim "A is lowest": ``wins`` groups where A is strictly lowest (ties are not wins),
    ``last`` where it is strictly highest, of ``total``.  All: ``reproduced``; a majority:
    ``reproduced in shape``; highest in a majority: ``reversed``."""
    if total and wins == total:
        return "reproduced"
    if wins * 2 > total:
        return "reproduced in shape"
    if last * 2 > total:
        return "reversed"
    return "not reproduced"


def series_verdict(ours: list[float], paper: list[float], tolerance: float, absolute: bool,
                   flat: float = FLAT) -> str:
    """A row of a paper's table: every point within ``tolerance`` is ``reproduced``; else the
    direction along the row decides (same: ``reproduced in shape``; opposite: ``reversed``)."""
    close = all(abs(a - b) <= (tolerance if absolute else tolerance * abs(b)) for a, b in zip(ours, paper))
    if close:
        return "reproduced"
    theirs, mine = direction(paper, flat), direction(ours, flat)
    if mine == theirs and mine in ("rises", "falls", "flat"):
        return "reproduced in shape"
    return "reversed" if OPPOSITE.get(theirs) == mine else "not reproduced"


def band_verdict(values: list[float], low: float, high: float, tolerance: float) -> str:
    """Every value inside ``[low - tolerance, high + tolerance]``: ``reproduced``."""
    return "reproduced" if all(low - tolerance <= v <= high + tolerance for v in values) else "not reproduced"


def beats(low: float, high: float) -> bool:
    """``low`` is below ``high`` by more than :data:`TIE` of ``high``: a tie is not a win.

    >>> beats(0.0107, 0.0117), beats(0.411, 0.411), beats(0.0, 0.0)
    (True, False, False)
    """
    return low < high and high - low > TIE * abs(high)


def direction(values, flat: float = FLAT) -> str:
    """``rises``, ``falls``, ``flat`` (every step within ``flat`` of the largest value) or ``mixed``."""
    values = np.asarray(values, float)
    if len(values) < 2:
        return "n/a"
    steps = np.diff(values)
    scale = max(float(np.max(np.abs(values))), 1e-12)
    if np.all(np.abs(steps) <= flat * scale):
        return "flat"
    if np.all(steps >= -flat * scale):
        return "rises"
    if np.all(steps <= flat * scale):
        return "falls"
    return "mixed"


def is_thin(frame: pd.DataFrame) -> pd.Series:
    """Rows with fewer timed slides than the harness minimum (one turnover or 200 slides): the
    ``thin`` column the harness writes, or computed from ``timed_slides``, ``n`` and ``s``."""
    thin = pd.Series(False, index=frame.index)
    if {"timed_slides", "n", "s"} <= set(frame.columns):
        known = frame["timed_slides"].notna() & frame["n"].notna() & frame["s"].notna() & (frame["s"] > 0)
        need = [required_slides(n, s) if ok_ else 0 for n, s, ok_ in zip(frame["n"].fillna(0), frame["s"].fillna(1), known)]
        thin = known & (frame["timed_slides"].fillna(0) < need)
    if "thin" in frame.columns:
        thin = thin | frame["thin"].astype("boolean").fillna(False).astype(bool)
    return thin


def with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns the claims read: time per object, candidates per k, the variation of response times."""
    out = frame.copy()
    if "objects_per_s" in out:
        out["time"] = 1.0 / out["objects_per_s"].where(out["objects_per_s"] > 0)
        if "us_per_object" not in out:
            out["us_per_object"] = 1e6 * out["time"]
        else:
            out["us_per_object"] = out["us_per_object"].fillna(1e6 * out["time"])
    if {"avg_candidates", "k"} <= set(out.columns):
        out["candidates_per_k"] = out["avg_candidates"] / out["k"]
    if "data" in out and "D" not in out:       # bench_sao names its drift in the data label ("gaussian D=1")
        out["D"] = pd.to_numeric(out["data"].astype(str).str.extract(r"D=([0-9.]+)", expand=False), errors="coerce")
    if {"response_ms_std", "response_ms_mean"} <= set(out.columns):
        out["response_cv"] = out["response_ms_std"] / out["response_ms_mean"]
    return out


def select(frames: dict[str, pd.DataFrame], source: dict) -> pd.DataFrame:
    """The rows of ``source["bench"]`` matching ``source["where"]`` (lists: any of; ``sweep``:
    one of the row's sweeps; ``case_contains``/``case_excludes``: substrings of ``case``), successful ones only."""
    frame = frames.get(source["bench"])
    if frame is None or frame.empty:
        return pd.DataFrame()
    rows = ok(frame)
    for key, value in source.get("where", {}).items():
        if key == "case_contains":
            wanted = value if isinstance(value, list) else [value]
            rows = rows[rows["case"].astype(str).apply(lambda c: any(w in c for w in wanted))]
        elif key == "case_excludes":
            rows = rows[~rows["case"].astype(str).str.contains(value, regex=False)]
        elif key not in rows:
            return rows.iloc[0:0]
        elif key == "sweep":
            rows = sweep_rows(rows, value)
        else:
            rows = rows[rows[key].isin(value)] if isinstance(value, list) else rows[rows[key] == value]
    return with_derived(rows)


def _case_key(rows: pd.DataFrame) -> list[str]:
    return ["bench", "case"] if "case" in rows else ["bench"]


def paper_cells(paper: dict, claim: dict) -> list[dict]:
    """Every cell of the paper table a claim names, as ``{algorithm: value}`` per (data set, column);
    a table without ``columns`` (Table 2: one list per row over its ``m``) per (data set, position)."""
    table = paper["papers"][claim["paper"]][claim["paper_table"]]
    cells = []
    for dataset, algorithms in table.items():
        if dataset in ("source", "columns") or not isinstance(algorithms, dict):
            continue
        if "columns" not in table:
            series = {a: values for a, values in algorithms.items() if isinstance(values, list)}
            cells.extend({a: values[i] for a, values in series.items()} for i in range(min(map(len, series.values()))))
            continue
        for column, xs in table["columns"].items():
            for i in range(len(xs)):
                cell = {a: values[column][i] for a, values in algorithms.items() if column in values}
                cells.append(cell)
    return cells


def paper_figure(paper: dict, claim: dict) -> tuple[float | None, str]:
    """The paper's figure for a claim: typed from its text (``paper_value``), or computed from the
    paper's table in ``paper_figures.json`` (the median ratio, the share of cells where A is lowest)."""
    if "paper_value" in claim:
        return float(claim["paper_value"]), fmt(claim["paper_value"])
    if "paper_table" not in claim:
        return None, ""
    table = paper["papers"][claim["paper"]][claim["paper_table"]]
    if claim["metric"] == "mstar_over_best":           # Table 2: the time at m* over the best m's
        ratios = {name: row["algo1-savl"][table["m"].index(row["m_star"])] / min(row["algo1-savl"])
                  for name, row in table.items() if isinstance(row, dict) and "m_star" in row}
        value = float(np.median(list(ratios.values())))
        return value, f"{fmt(value)} (median over " + ", ".join(f"{n} {fmt(v)}" for n, v in ratios.items()) + ")"
    if claim["kind"] == "series":
        return None, ", ".join(f"{fmt(x)}: {fmt(v)}" for x, v in zip(table[claim["paper_x"]], table[claim["paper_key"]]))
    cells = paper_cells(paper, claim)
    if claim["kind"] == "ratio":
        ratios = [c[claim["a"]] / c[claim["b"]] for c in cells if claim["a"] in c and claim["b"] in c and c[claim["b"]]]
        value = float(np.median(ratios))
        return value, f"{fmt(value)} (median of {len(ratios)} cells; {fmt(min(ratios))}-{fmt(max(ratios))})"
    if claim["kind"] == "lowest":
        full = [c for c in cells if all(a in c for a in claim["among"])]
        wins = sum(1 for c in full if all(c[claim["a"]] < c[o] for o in claim["among"] if o != claim["a"]))
        return wins / len(full), f"lowest in {wins} of {len(full)} cells"
    return None, ""


def _paired(rows: pd.DataFrame, metric: str, a: str, b: str, by: str = "algorithm") -> pd.Series:
    """``metric`` of A over B per case (both present; A and B are values of the column ``by``)."""
    if by not in rows:
        return pd.Series(dtype=float)
    pivot = rows.pivot_table(index=_case_key(rows), columns=by, values=metric, aggfunc="first")
    if a not in pivot or b not in pivot:
        return pd.Series(dtype=float)
    return (pivot[a] / pivot[b]).replace([np.inf, -np.inf], np.nan).dropna()


SHAPES = ("trend", "series", "band")
"""Claim kinds judged on every point of a sweep: a thin point makes the verdict provisional."""


def evaluate_claim(claim: dict, frames: dict[str, pd.DataFrame], paper: dict) -> dict:
    """One row of the claims table: the paper's figure, ours, the source, the verdict by rule.

    The first source holding rows decides; rows with fewer timed slides than the harness
    minimum are left out, and only when no other row exists are they used, the verdict then
    marked *provisional*.  Ranges quoted in ``ours`` come from the rows used."""
    value, paper_text = paper_figure(paper, claim)
    out = {"id": claim["id"], "paper": claim["paper"], "figure": claim["figure"], "claim": claim["claim"],
           "paper_figure": paper_text, "ours": "", "comparable": claim.get("comparable", ""),
           "source": "", "verdict": "not measured", "cause": claim.get("cause", "")}
    for source in claim["sources"]:
        rows = select(frames, source)
        metric = source.get("metric", claim["metric"])
        if "algorithm" in claim and claim["kind"] not in ("ratio", "lowest") and "algorithm" in rows:
            rows = rows[rows["algorithm"] == claim["algorithm"]]
        if rows.empty or metric not in rows or rows[metric].isna().all():
            continue
        rows = rows.dropna(subset=[metric])
        thin = is_thin(rows)
        scale = float(source.get("scale", claim.get("scale", 1.0)))
        # a figure or a range comes from full samples only; a trend or a table row needs every point
        found, provisional, used = None, True, rows
        if thin.any() and not thin.all() and claim["kind"] not in SHAPES:
            found = _judge(claim, rows[~thin], metric, scale, value, source, paper)
            if found is not None:
                provisional, used = False, rows[~thin]
        if found is None:
            found = _judge(claim, rows, metric, scale, value, source, paper)
            provisional = bool(thin.any())
        if found is None:
            continue
        verdict, ours = found
        out["ours"] = ours
        out["verdict"] = verdict + (" (provisional: thin samples)" if provisional else "")
        if verdict != "reproduced" and not out["cause"]:
            out["cause"] = "no cause measured yet"
        left = int(thin.sum()) if not provisional else 0
        out["source"] = (f"`{source['bench']}`, {len(used)} rows" + (f"; {left} thin rows left out" if left else "")
                         + (f"; {int(thin.sum())} of them below the minimum of timed slides" if provisional else ""))
        return out
    benches = sorted({s["bench"] for s in claim["sources"]})
    out["source"] = f"no rows in {', '.join(f'`{b}`' for b in benches)}: the experiment is not in these results"
    return out


def _judge(claim: dict, rows: pd.DataFrame, metric: str, scale: float, paper: float | None,
           source: dict, figures: dict) -> tuple[str, str] | None:
    """The verdict and our figure for ``claim`` on ``rows`` (``None``: these rows cannot judge it)."""
    kind = claim["kind"]
    if kind == "ratio":
        ratios = _paired(rows, metric, claim["a"], claim["b"], source.get("by", claim.get("by", "algorithm")))
        if ratios.empty:
            return None
        median = float(ratios.median())
        held = int(((ratios < 1 - TIE) if paper < 1 else (ratios > 1 + TIE)).sum())
        return (ratio_verdict(median, paper, claim["bound"], claim.get("tolerance", 0.0)),
                f"{fmt(median)} (median of {len(ratios)} cases, {fmt(ratios.min())}-{fmt(ratios.max())}; "
                f"the paper's direction in {held})")
    if kind == "value":
        values = rows[metric].astype(float) * scale
        ours = float(values.iloc[0]) if len(values) == 1 else float(values.median())
        return (value_verdict(ours, paper, claim["bound"], claim.get("tolerance", 0.0), claim.get("absolute", False)),
                fmt(ours) + (f" (median of {len(values)})" if len(values) > 1 else ""))
    if kind == "lowest":
        by = source.get("by", claim.get("by", "algorithm"))
        group = source.get("group", claim.get("group"))
        keys = [group] if group else _case_key(rows)
        wins = last = total = 0
        shown = []
        for key, part in rows.groupby(keys):
            values = part.groupby(by)[metric].first().reindex(claim["among"])
            if values.isna().any():
                continue
            total += 1
            mine, others = values[claim["a"]], values.drop(claim["a"])
            wins += all(beats(mine, other) for other in others)
            last += all(beats(other, mine) for other in others)
            shown.append(f"{fmt(key[-1] if isinstance(key, tuple) else key)}: " + ", ".join(f"{n} {fmt(v * scale)}" for n, v in values.items()))
        if not total:
            return None
        return (lowest_verdict(wins, last, total),
                f"lowest in {wins} of {total} (ties within {int(TIE * 100)}% are not wins); " + "; ".join(shown[:3])
                + (" ..." if len(shown) > 3 else ""))
    x = source.get("x", claim.get("x"))
    if x not in rows:
        return None
    points = rows.dropna(subset=[x]).groupby(x)[metric].median().sort_index() * scale
    if kind == "series":
        return _series(claim, points, figures)
    if len(points) < 2:
        return None
    listed = ", ".join(f"{fmt(a)}: {fmt(b)}" for a, b in points.items())
    if kind == "trend":
        ours = direction(points.to_numpy(), claim.get("flat_tolerance", FLAT))
        return trend_verdict(ours, claim["expected"]), f"{ours} ({x} {listed})"
    if kind == "band":
        return band_verdict(points.tolist(), claim["low"], claim["high"], claim.get("tolerance", 0.0)), listed
    raise ValueError(f"unknown claim kind {kind!r}")


def _series(claim: dict, points: pd.Series, figures: dict) -> tuple[str, str] | None:
    table = figures["papers"][claim["paper"]][claim["paper_table"]]
    xs, theirs = table[claim["paper_x"]], table[claim["paper_key"]]
    shared = [(x, t) for x, t in zip(xs, theirs) if x in points.index]
    if len(shared) < 1:
        return None
    ours = [float(points[x]) for x, _ in shared]
    paper = [t for _, t in shared]
    verdict = series_verdict(ours, paper, claim["tolerance"], claim.get("absolute", False)) if len(shared) > 1 else \
        value_verdict(ours[0], paper[0], "about", claim["tolerance"], claim.get("absolute", False))
    return verdict, ", ".join(f"{fmt(x)}: {fmt(o)}" for (x, _), o in zip(shared, ours)) + \
        (f" (paper's other columns not measured: {', '.join(fmt(x) for x in xs if x not in points.index)})"
         if len(shared) < len(xs) else "")


def claims_section(paper: dict, frames: dict[str, pd.DataFrame]) -> str:
    """The headline claims of the four papers, each with ours beside it and a verdict by rule."""
    rows = pd.DataFrame([evaluate_claim(c, frames, paper) for c in paper["claims"]])
    counts = rows["verdict"].str.replace(r" \(provisional.*", " (provisional)", regex=True).value_counts()
    titles = "\n".join(f"- **{key}**: {entry['title']}" for key, entry in paper["papers"].items())
    out = ["## Claims of the papers\n",
           "Every headline claim of the four papers, with the figure the paper prints (or the figure computed "
           "from the paper's own table in `benchmarks/paper_figures.json`), ours on the closest setting this "
           "machine runs, how the settings differ, and a verdict computed by rule "
           "(`benchmarks/report.py`: `ratio_verdict`, `value_verdict`, `trend_verdict`, `lowest_verdict`, "
           "`series_verdict`): *reproduced* (the paper's figure within the claim's tolerance), *reproduced in "
           f"shape* (the paper's direction, not its size), *not reproduced* (a tie within {int(TIE * 100)}% is "
           "not a win), *reversed* (the opposite direction). A trend is judged on the module's own table where "
           "one exists, else on the grid. Rows timed over fewer slides than the harness minimum are left out; "
           "where only such rows exist the verdict says *provisional*. The cause column is the measured reason "
           f"for a difference. Verdicts: {', '.join(f'{v} {k}' for k, v in counts.items())}.\n",
           "Papers:\n\n" + titles + "\n"]
    for key in paper["papers"]:
        part = rows[rows["paper"] == key]
        if part.empty:
            continue
        entry = paper["papers"][key]
        out.append(f"### {entry['title'].split('. ')[1]}\n")
        if entry.get("setting"):
            out.append(f"Setting and scale: {entry['setting']}\n")
        out.append(md_table(part, ["figure", "claim", "paper_figure", "ours", "verdict", "comparable", "source", "cause"],
                            ["paper and figure", "claim", "paper's figure", "ours", "verdict",
                             "comparable? how scaled", "source", "measured cause of a difference"]) + "\n")
    left = paper.get("experiments_left", [])
    if left:
        out.append("Experiments of the papers not run here, and why:\n\n" + "\n".join(
            f"- *{item['paper']}, {item['figure']}*: {item['why']}" for item in left) + "\n")
    models = paper.get("models", [])
    if models:
        out.append("Not papers' figures: our own models, in the notes they come from:\n\n"
                   + "\n".join(f"- *{m['source']}*: {m['text']}" for m in models) + "\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- targets

def evaluate_target(target: dict, grid: pd.DataFrame, registered: set[str]) -> dict:
    """Measured value, verdict and the data-driven reason for one target of the issues.

    A target's ``shortfall`` (in ``paper_figures.json``) is the analysis of why it is missed,
    shown beside the evidence when it is.
    """
    out = {"issue": target["issue"], "target": target["text"], "measured": "", "verdict": "not measured", "why": ""}
    module = target.get("module") or (f"bench_{target['where']['bench']}"
                                      if isinstance(target["where"], dict) and "bench" in target["where"] else None)
    if "module" in target and "metric" not in target:     # the module owns the figure and its table
        rows = grid[grid["module"] == target["module"]] if "module" in grid else grid.iloc[0:0]
        if rows.empty:
            quick = "quick" in grid and grid["quick"].fillna(False).astype(bool).any()
            out["why"] = (f"`{target['module']}.py` starts Spark or a browser: full run only (`make bench`)"
                          if quick and target["module"] in HEAVY_MODULE_NAMES
                          else f"`{target['module']}.py` is not in this run")
        else:
            failed = rows[rows["status"] != "ok"] if "status" in rows else rows.iloc[0:0]
            out["verdict"] = "see module table" if failed.empty else "module failed"
            out["why"] = (f"{len(rows)} rows in the `{target['module']}` table below" if failed.empty
                          else str(failed["status"].iloc[0]))
        return out
    alternatives = target["where"] if isinstance(target["where"], list) else [target["where"]]
    for where in alternatives:            # the first place that holds the case: the grid, then a module
        rows = grid
        for key, value in where.items():
            if key not in rows:
                rows = rows.iloc[0:0]
                break
            if key == "sweep":
                rows = sweep_rows(rows, value)
            else:
                rows = rows[rows[key].isin(value)] if isinstance(value, list) else rows[rows[key] == value]
        if len(rows):
            break
    wanted = [target["algorithm"]] if "algorithm" in target else target.get("order", [])
    missing = [name for name in wanted + ([target["relative_to"]] if "relative_to" in target else [])
               if name not in registered]
    if missing:
        out["why"] = f"{', '.join(missing)} not registered at this commit"
        return out
    if rows.empty:
        spark = module in HEAVY_MODULE_NAMES
        out["why"] = ("starts Spark or a browser: full run only (`make bench`)" if spark and grid["quick"].any()
                      else "case only in the full run (`make bench`)" if grid["quick"].any()
                      else "case not in the results")
        return out
    rows = with_derived(rows)
    thin = is_thin(rows)
    if thin.any() and not thin.all():      # full samples decide; thin rows only when they cannot
        judged = _judge_target(target, rows[~thin], dict(out))
        if judged["verdict"] != "not measured":
            return judged
    out = _judge_target(target, rows, out)
    if thin.any() and out["verdict"] in ("met", "NOT met"):
        out["verdict"] += " (provisional: thin samples)"
    return out


def _judge_target(target: dict, rows: pd.DataFrame, out: dict) -> dict:
    metric = target["metric"]
    if "log_growth" in target:
        return _log_growth(target, ok(rows), out)
    if "order" in target:
        holds, total, broken = 0, 0, []
        for case, part in ok(rows).groupby("case"):
            values = part.set_index("algorithm")[metric].reindex(target["order"])
            if values.isna().any():
                continue
            total += 1
            if all(a < b for a, b in zip(values, values[1:])):
                holds += 1
            else:
                broken.append(f"{case}: " + " / ".join(f"{n} {fmt(v)}" for n, v in values.items()))
        if not total:
            out["why"] = "no case with all of " + ", ".join(target["order"])
            return out
        out["measured"] = f"holds in {holds} of {total} cases"
        out["verdict"] = "met" if holds == total else "NOT met"
        out["why"] = "; ".join(broken[:3] + ([target["shortfall"]] if holds < total and "shortfall" in target else []))
        return out
    mine = ok(rows[rows["algorithm"] == target["algorithm"]]) if "algorithm" in target else ok(rows)
    if "lowest_by" in target:
        if mine.empty or metric not in mine:
            out["why"] = "no successful run"
            return out
        if mine[target["lowest_by"]].nunique() < 4:
            out["why"] = f"only {mine[target['lowest_by']].nunique()} of the 4 strategies in this run (all four in the full run)"
            return out
        values = mine.groupby(target["lowest_by"])[metric].first()
        expected = values.get(target["expect"])
        others = values.drop(target["expect"], errors="ignore")
        out["measured"] = ", ".join(f"{name}: {fmt(v)}" for name, v in values.items())
        won = expected is not None and all(beats(expected, other) for other in others)
        out["verdict"] = "met" if won else "NOT met"
        tied = [name for name, other in others.items() if expected is not None and not beats(expected, other)
                and not beats(other, expected)]
        out["why"] = (f"lowest: {values.idxmin()}" + (f"; a tie (within {int(TIE * 100)}%) with {', '.join(tied)} "
                      "is not a win" if tied else "")
                      + (f"; {int(mine['timed_slides'].min())} timed slides" if "timed_slides" in mine
                         and mine["timed_slides"].notna().any() else ""))
        return out
    if mine.empty or metric not in mine or mine[metric].isna().all():
        failed = rows[rows["algorithm"] == target["algorithm"]] if "algorithm" in target else rows
        out["why"] = failed["status"].iloc[0] if len(failed) else "no row"
        return out
    present = mine.dropna(subset=[metric])
    aggregate = target.get("aggregate")
    if aggregate is None and len(present) > 1:        # never judge on whichever row happens to come first
        out["why"] = ambiguous(present)
        return out
    value = float(present[metric].max() if aggregate == "max" else present[metric].min() if aggregate == "min"
                  else present[metric].iloc[0])
    context = []
    if "relative_to" in target:
        other = ok(rows[rows["algorithm"] == target["relative_to"]]).dropna(subset=[metric])
        if other.empty:
            out["why"] = f"no successful {target['relative_to']} run"
            return out
        if len(other) > 1:
            out["why"] = ambiguous(other)
            return out
        base = float(other[metric].iloc[0])
        context.append(f"{target['algorithm']} {fmt(value)} vs {target['relative_to']} {fmt(base)}")
        value = value / base if base else float("inf")
    out["measured"] = fmt(value)
    spread_column = f"{metric}_range"
    if spread_column in present and not pd.isna(present[spread_column].iloc[0]):
        out["measured"] += f" (every pair of runs: {present[spread_column].iloc[0]})"
    if "between" in target:                # a two-sided target ("around 0.8"): both bounds tested
        low, high = target["between"]
        met = low <= value <= high
        limit, relation = (low, ">=") if value < low else (high, "<=")
    else:
        limit = target.get("at_least", target.get("at_most"))
        met = value >= limit if "at_least" in target else value <= limit
        relation = ">=" if "at_least" in target else "<="
    out["verdict"] = "met" if met else "NOT met"
    if not met:
        context.insert(0, f"measured {fmt(value)}, needs {relation} {fmt(limit)} ({fmt(value / limit if limit else 0)} of it)"
                       + (f", in [{fmt(target['between'][0])}, {fmt(target['between'][1])}]" if "between" in target else ""))
        row = mine.iloc[0]
        for key in ("avg_candidates", "vs_oracle", "precision"):
            if key in row and not pd.isna(row[key]) and key != metric:
                context.append(f"{key} {fmt(row[key])}")
        if metric in ("vs_oracle", "objects_per_s") and "algorithm" in target:
            oracle = ok(rows[rows["algorithm"] == "oracle"])
            context.append(f"{target['algorithm']} {fmt(row.get('objects_per_s'))} objects/s"
                           + (f", oracle {fmt(oracle['objects_per_s'].iloc[0])}" if len(oracle) else ""))
        timed = {"vs_oracle", "objects_per_s", "speedup", "vs_engine_alone", "rows_per_s", "median_query_us"}
        load = row.get("load_1m_at", row.get("load_1m"))
        if metric in timed and load is not None and not pd.isna(load):
            context.append(f"load average {fmt(load)} on {fmt(row.get('cores'))} cores when it ran")
        if "shortfall" in target:
            context.append(target["shortfall"])
    out["why"] = "; ".join(context)
    return out


def ambiguous(rows: pd.DataFrame) -> str:
    """Why a target is not judged: its ``where`` matches several rows of one algorithm (a target
    names one row, or says how to aggregate them)."""
    cases = sorted({str(c) for c in rows["case"].dropna()}) if "case" in rows else []
    return (f"{len(rows)} rows match the target's case" + (f" ({'; '.join(cases[:3])})" if cases else "")
            + ": a target reads one row, or names an aggregate")


def _log_growth(target: dict, rows: pd.DataFrame, out: dict) -> dict:
    """Cost per object growing at most logarithmically in ``x``: along the rows where ``s`` is a
    fixed multiple of ``x`` (``log_growth``: ``{"x": "k", "s_per_x": 10}``), the cost at the largest
    ``x`` over the cost at the smallest must not exceed ``1 + ln(x_max / x_min)`` (a cost
    ``a + b ln x`` with ``b <= a``); a linear cost at 100x the ``x`` would be 100x."""
    spec, metric = target["log_growth"], target["metric"]
    x = spec["x"]
    part = rows[(rows["s"] == spec["s_per_x"] * rows[x])].dropna(subset=[metric]).sort_values(x)
    if part[x].nunique() < 2:
        out["why"] = f"fewer than two values of {x} with s = {spec['s_per_x']} {x}"
        return out
    first, last = part.iloc[0], part.iloc[-1]
    growth = float(last[metric] / first[metric])
    limit = 1.0 + math.log(float(last[x]) / float(first[x]))
    out["measured"] = (f"{fmt(growth)}x from {x} = {fmt(first[x])} to {fmt(last[x])} ("
                       + ", ".join(f"{x} {fmt(r[x])}: {fmt(r[metric])}" for _, r in part.iterrows()) + ")")
    out["verdict"] = "met" if growth <= limit else "NOT met"
    out["why"] = f"bound 1 + ln({fmt(last[x])} / {fmt(first[x])}) = {fmt(limit)}"
    return out


def targets_section(paper: dict, grid: pd.DataFrame) -> str:
    registered = {info.name for info in engine.available()}
    rows = pd.DataFrame([{"id": t["id"], **evaluate_target(t, grid, registered)} for t in paper["targets"]])
    rows = rows.sort_values("issue", kind="stable")
    counts = rows["verdict"].value_counts().to_dict()
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    return ("## Targets of the issues\n\n"
            f"Every performance target the issues set, evaluated on these results ({summary}). "
            "*not measured* says why (an algorithm not yet registered, or a case only the full "
            "grid runs); *NOT met* gives the measured figure against the target and the evidence "
            "beside it.\n\n" + md_table(rows, ["issue", "id", "target", "measured", "verdict", "why"]) + "\n")


# --------------------------------------------------------------------------- single stream (MinTopK, SAP)

def _pivot(frame: pd.DataFrame, column: str, metric: str) -> pd.DataFrame:
    table = frame.pivot_table(index="algorithm", columns=column, values=metric, aggfunc="first")
    order = [a for a in frame["algorithm"].drop_duplicates()]
    return table.reindex(order)


def pivot_md(frame: pd.DataFrame, column: str, metric: str, label: str, cell=None) -> str:
    table = _pivot(frame, column, metric)
    headers = ["algorithm"] + [f"{label}={fmt(c)}" for c in table.columns]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for name, values in table.iterrows():
        cells = []
        for c, v in values.items():
            cells.append(cell(name, c, v) if cell else fmt(v))
        lines.append("| " + " | ".join([name] + cells) + " |")
    return "\n".join(lines)


def throughput_md(frame: pd.DataFrame, column: str, label: str) -> str:
    """objects/s with the ratio to the oracle and to SQL in one cell."""
    idx = frame.set_index(["algorithm", column])

    def cell(name, c, v):
        if pd.isna(v):
            status = idx["status"].get((name, c)) if (name, c) in idx.index else None
            return "" if status in (None, "ok") or pd.isna(status) else status.split(":")[0]
        r = idx.loc[(name, c)]
        return f"{fmt(v)} ({fmt(r.get('vs_oracle'), 2)}x o, {fmt(r.get('vs_sql'), 2)}x sql, ±{fmt(r.get('spread_pct'), 2)}%)"
    return pivot_md(frame, column, "objects_per_s", label, cell)


def paper_candidates_md(frame: pd.DataFrame, workload: str, paper: dict, column: str) -> str:
    """Our average candidates beside the SAP paper's Table 6 at the shared columns."""
    name = PAPER_NAMES.get(workload)
    table6 = paper["papers"]["sap"]["table6_candidates"]
    if name not in table6:
        return ""
    if column == "k":
        ours = frame.set_index(["algorithm", "k"])["avg_candidates"]
        paper_cols = table6["columns"]["k"]
        keys = sorted(set(frame["k"]) & set(paper_cols))
        key_of = {c: c for c in keys}
        label = "k"
    else:
        frame = frame.assign(s_pct=(100 * frame["s"] / frame["n"]).round(4))
        ours = frame.set_index(["algorithm", "s_pct"])["avg_candidates"]
        paper_cols = table6["columns"]["s_pct_of_n"]
        keys = sorted(set(frame["s_pct"]) & set(paper_cols))
        key_of = {c: c for c in keys}
        label = "s/n %"
        column = "s_pct_of_n"
    if not keys:
        return ""
    headers = ["algorithm"] + [f"{label}={fmt(c)} ours / paper" for c in keys]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for algorithm in ("sap", "mintopk", "kskyband"):
        published = table6[name].get(algorithm, {}).get(column)
        cells = []
        for c in keys:
            mine = ours.get((algorithm, key_of[c]))
            theirs = published[paper_cols.index(c)] if published else None
            cells.append(f"{fmt(mine)} / {fmt(theirs)}")
        lines.append("| " + " | ".join([algorithm] + cells) + " |")
    return f"Beside the SAP paper's Table 6 ({name}):\n\n" + "\n".join(lines)


def shape_md(frame: pd.DataFrame, paper: dict, workload: str) -> str:
    """The comparisons the papers make, as ratios (absolute sizes depend on n, which differs)."""
    lines = []
    name = PAPER_NAMES.get(workload)
    table6 = paper["papers"]["sap"]["table6_candidates"].get(name)
    for case, part in ok(frame).groupby("case", sort=False):
        c = part.set_index("algorithm")["avg_candidates"]
        parts = []
        if {"kskyband", "mintopk"} <= set(c.index):
            parts.append(f"k-skyband/MinTopK candidates {fmt(c['kskyband'] / c['mintopk'], 2)}")
        if {"mintopk", "sap"} <= set(c.index):
            parts.append(f"MinTopK/SAP {fmt(c['mintopk'] / c['sap'], 2)}")
        if parts:
            lines.append(f"- {case}: " + ", ".join(parts))
    if table6 and lines:
        ks, mt, sp = (np.array(table6[a]["k"] + table6[a]["s_pct_of_n"], float) for a in ("kskyband", "mintopk", "sap"))
        lines.append(f"- paper ({name}, Table 6, mean over its k and s columns): k-skyband/MinTopK "
                     f"{fmt(float(np.mean(ks / mt)), 2)}, MinTopK/SAP {fmt(float(np.mean(mt / sp)), 2)}")
    return "\n".join(lines)



def harmonic(c: int) -> float:
    return float(np.sum(1.0 / np.arange(1, int(c) + 1)))


def sap_variants_md(part: pd.DataFrame, workload: str, paper: dict) -> str:
    """Our SAP variants' time relative to ``sap`` beside the paper's Table 3 (seconds ratios)."""
    variants = ("sap-dynamic", "sap-equal")
    rows = ok(part[part["algorithm"].isin(("sap",) + variants)])
    if rows.empty or "sap" not in set(rows["algorithm"]):
        return ""
    table3 = paper["papers"]["sap"]["table3_seconds_variants"].get(PAPER_NAMES.get(workload, ""), {})
    lines = ["| case | " + " | ".join(f"{v} time / sap time, ours" for v in variants)
             + " | paper (Table 3, same k or s/n column) |", "|---|---|---|---|"]
    for case, group in rows.groupby("case", sort=False):
        speed = group.set_index("algorithm")["objects_per_s"]
        if "sap" not in speed:  # its row was skipped in this run (over the harness' CPU budget)
            continue
        ours = [fmt(speed["sap"] / speed[v], 2) if v in speed else "" for v in variants]
        first = group.iloc[0]
        published = []
        for column, key in (("k", first["k"]), ("s_pct_of_n", round(100 * first["s"] / first["n"], 4))):
            values = table3.get("sap", {}).get(column)
            cols = paper["papers"]["sap"]["table3_seconds_variants"]["columns"][column]
            if values and key in cols:
                i = cols.index(key)
                published.append(f"{column}={fmt(key)}: " + ", ".join(
                    f"{v} {fmt(table3[v][column][i] / values[i], 2)}" for v in variants))
        lines.append(f"| {case} | " + " | ".join(ours) + " | " + "; ".join(published) + " |")
    return "\n".join(lines)


def mintopk_model_md(part: pd.DataFrame, paper: dict) -> str:
    """MinTopK's list size against k·H(C_nw), ours and the paper's (TIME-U, Table 6)."""
    lines = ["| source | k | C_nw | MinTopK candidates | k·H(C_nw) | measured / model |", "|---|---|---|---|---|---|"]
    table6 = paper["papers"]["sap"]["table6_candidates"]
    columns, published = table6["columns"], table6["TIME-U"]["mintopk"]
    for k, value in zip(columns["k"], published["k"]):              # paper default s = 0.1% n
        lines.append(f"| paper Table 6, TIME-U | {k} | 1000 | {fmt(value)} | {fmt(k * harmonic(1000))} | "
                     f"{fmt(value / (k * harmonic(1000)), 2)} |")
    for pct, value in zip(columns["s_pct_of_n"], published["s_pct_of_n"]):   # paper default k = 100
        cnw = round(100 / pct)
        lines.append(f"| paper Table 6, TIME-U | 100 | {cnw} | {fmt(value)} | {fmt(100 * harmonic(cnw))} | "
                     f"{fmt(value / (100 * harmonic(cnw)), 2)} |")
    ours = ok(part[part["algorithm"] == "mintopk"])
    for _, row in ours.iterrows():
        model = row["k"] * harmonic(row["cnw"])
        lines.append(f"| ours, {row['case']} | {int(row['k'])} | {int(row['cnw'])} | {fmt(row['avg_candidates'])} | "
                     f"{fmt(model)} | {fmt(row['avg_candidates'] / model, 2)} |")
    return "\n".join(lines)


def single_differences(data: pd.DataFrame, paper: dict) -> str:
    """What differs from the SAP and MinTopK papers, stated from the measurements."""
    out = ["### What differs from the papers, and why\n"]
    data = ok(data)
    thin = is_thin(data)
    if thin.any():
        out.append(f"Ranges below leave out the {int(thin.sum())} rows timed over fewer slides than the harness "
                   "minimum (see the note at the top).\n")
        data = data[~thin]
    mt = data[(data["algorithm"] == "mintopk") & (data["workload"] == "time-u")]
    table6 = paper["papers"]["sap"]["table6_candidates"]
    cols, tu = table6["columns"], table6["TIME-U"]["mintopk"]
    model = [k * harmonic(1000) for k in cols["k"]] + [100 * harmonic(round(100 / p)) for p in cols["s_pct_of_n"]]
    published = np.array(tu["k"] + tu["s_pct_of_n"], float) / np.array(model)
    if len(mt):
        ratio = mt["avg_candidates"] / [k * harmonic(c) for k, c in zip(mt["k"], mt["cnw"])]
        out.append(f"- **Absolute candidate counts.** On i.i.d. scores MinTopK keeps k·H(C_nw) objects: our TIME-U "
                   f"runs measure {fmt(ratio.min(), 2)}-{fmt(ratio.max(), 2)} of that model, the paper's own TIME-U "
                   f"column {fmt(published.min(), 2)}-{fmt(published.max(), 2)} of it (table above). Our counts differ from Table 6 because our C_nw = n/s "
                   f"({', '.join(sorted({fmt(c) for c in data['cnw']}))}) differs from the paper's (1000 at its "
                   "default s = 0.1% n), not because the algorithm keeps a different set.")
    for workload in ("time-u", "time-r", "stock", "taxi"):
        part = data[data["workload"] == workload]
        pivot = part.pivot_table(index="case", columns="algorithm", values="avg_candidates", aggfunc="first")
        name = PAPER_NAMES[workload]
        sizes = table6.get(name)
        if {"kskyband", "mintopk"} <= set(pivot.columns) and sizes:
            ours = (pivot["kskyband"] / pivot["mintopk"]).dropna()
            theirs = np.array(sizes["kskyband"]["k"] + sizes["kskyband"]["s_pct_of_n"], float) / np.array(
                sizes["mintopk"]["k"] + sizes["mintopk"]["s_pct_of_n"], float)
            out.append(f"- **{name}: k-skyband / MinTopK candidates** ours {fmt(ours.min(), 2)}-{fmt(ours.max(), 2)} "
                       f"(median {fmt(ours.median(), 2)}), paper {fmt(theirs.min(), 2)}-{fmt(theirs.max(), 2)} "
                       f"(median {fmt(float(np.median(theirs)), 2)}).")
    u = data[(data["workload"] == "time-u") & (data["algorithm"] == "mintopk")].set_index(["n", "k", "s"])["avg_candidates"]
    r = data[(data["workload"] == "time-r") & (data["algorithm"] == "mintopk")].set_index(["n", "k", "s"])["avg_candidates"]
    shared = u.index.intersection(r.index)
    if len(shared):
        ratio = (r[shared] / u[shared])
        tr = table6["TIME-R"]["mintopk"]
        theirs = np.array(tr["k"] + tr["s_pct_of_n"], float) / np.array(tu["k"] + tu["s_pct_of_n"], float)
        window_share = (r[shared] / np.array([n for n, _, _ in shared], float))
        out.append(f"- **TIME-R against TIME-U.** The paper's MinTopK keeps {fmt(theirs.min(), 2)}-{fmt(theirs.max(), 2)}x "
                   "more on TIME-R than on TIME-U (Table 6): its figure averages a stream many windows long, "
                   "rising flanks of `sin(pi t / 10^6)` (where candidates stay near k) and falling ones (where every "
                   f"arrival outlives the better older objects). Ours keep {fmt(ratio.min(), 2)}-{fmt(ratio.max(), 2)}x "
                   f"({fmt(100 * window_share.min(), 2)}-{fmt(100 * window_share.max(), 2)}% of the window): a Python "
                   "run times a few windows only, and they are taken on the falling flank, the hard half of the "
                   "paper's average, so our TIME-R counts are upper bounds of theirs at the same n, k, s.\n")
    mem = data[data["algorithm"].isin(["mintopk", "kskyband", "pretopk"])].dropna(subset=["bytes", "measured_bytes"])
    if len(mem):
        ratio = mem.groupby("algorithm").apply(lambda g: float((g["measured_bytes"] / g["bytes"]).median()),
                                               include_groups=False)
        out.append("- **Memory.** The paper's KB (Table 8) are C++ structure sizes, close to our cost model "
                   "`bytes`; the measured size of our Python structures is " + ", ".join(
                       f"{a} {fmt(v, 2)}x" for a, v in ratio.items()) + " the model (median over cases).")
    out.append("- **Time.** The papers time C++ over whole data sets (seconds); we time a Python engine per "
               "object after a warm-up window (CPU seconds, median of several runs). Only ratios measured in "
               "the same process are compared with the papers' ratios.")
    return "\n".join(out) + "\n"


def single_section(grid: pd.DataFrame, paper: dict, plots: Plots) -> str:
    out = ["## Single stream: MinTopK (paper 002) and SAP (paper 001) against their competitors\n",
           "Every registered single-stream algorithm on the same slides, with the two baselines a user "
           "would otherwise write: the `oracle` (numpy window + `argpartition`, **o**) and one DuckDB "
           "SQL query per slide (**sql**). Cells of throughput tables: median objects/s of the timed "
           "runs (ratio to the oracle, to SQL, spread of the runs).  The SAP paper reports seconds "
           "over a whole data set in C++ (Fig. 9, Tables 5-9); we report objects/s of a Python "
           "engine, so the comparison is of shapes and ratios, not of absolute values.\n"]
    out.append(CLAIMS_LINK)
    out.append("")
    data = family_rows(grid, "sap")
    if data.empty:
        return "\n".join(out + ["No single-stream results in this run.\n"])
    for sweep, column, label, title in (("k", "k", "k", "throughput vs k"), ("s", "s", "s", "throughput vs s"),
                                        ("n", "n", "n", "throughput vs n (s = n/100)"),
                                        ("cnw", "cnw", "C_nw", "throughput vs C_nw = n/s (s = 100)")):
        part = ok(sweep_rows(data, sweep))
        if part["workload"].nunique() and part[column].nunique() > 1:
            out.append(plots.save(line_chart(part, column, "objects_per_s", title, facet="workload",
                                             y_title="objects/s (median)"), f"single-throughput-{sweep}", title))
    for sweep, column in (("k", "k"), ("s", "s"), ("n", "n"), ("cnw", "cnw")):
        part = ok(sweep_rows(data, sweep))
        if part[column].nunique() > 1:
            shown = part[part["algorithm"] != "duckdb-sql"]
            if sweep == "k":                       # the paper's Table 6 columns, dotted, beside ours
                table6 = paper["papers"]["sap"]["table6_candidates"]
                extra = [{"workload": w, "k": k, "avg_candidates": table6[PAPER_NAMES[w]][a]["k"][i],
                          "algorithm": f"paper: {a}"}
                         for w in shown["workload"].unique() if PAPER_NAMES.get(w) in table6
                         for a in ("sap", "mintopk", "kskyband") for i, k in enumerate(table6["columns"]["k"])]
                shown = pd.concat([shown, pd.DataFrame(extra)], ignore_index=True)
            out.append(plots.save(line_chart(shown, column, "avg_candidates", f"candidates vs {column}"
                                             + (" (paper: Table 6 at its n, s = 0.1% n)" if sweep == "k" else ""),
                                             facet="workload", y_title="average candidates"),
                                  f"single-candidates-{sweep}", f"candidates vs {column}"))
            out.append(plots.save(line_chart(part, column, "measured_bytes", f"measured memory vs {column}",
                                             facet="workload", y_title="measured bytes"),
                                  f"single-memory-{sweep}", f"memory vs {column}"))
    out.append("")
    for workload, part in data.groupby("workload", sort=False):
        default = sweep_rows(part, "default")
        trace = part["data_rows"].dropna()
        out.append(f"### {workload}" + (f" ({PAPER_NAMES[workload]} in the SAP paper)" if workload in PAPER_NAMES else ""))
        if len(trace):
            out.append(f"\nTrace of {fmt(int(trace.iloc[0]))} rows; the default window is "
                       f"{fmt(100 * float(part['n_frac_of_data'].dropna().iloc[0]), 2)}% of it "
                       "(the paper's n is 0.01%-1% of far longer traces).\n")
        for sweep, column, label in (("k", "k", "k"), ("s", "s", "s"), ("n", "n", "n"), ("cnw", "cnw", "C_nw")):
            rows = sweep_rows(part, sweep)
            if rows[column].nunique() > 1 or (sweep == "k" and len(rows)):
                n, k, s = (rows[c].iloc[0] for c in ("n", "k", "s"))
                fixed = {"k": f"n={fmt(n)}, s={fmt(s)}", "s": f"n={fmt(n)}, k={fmt(k)}",
                         "n": f"k={fmt(k)}, s=n/100", "cnw": f"k={fmt(k)}, s={fmt(s)}"}[sweep]
                out.append(f"\n**Objects/s vs {label}** ({fixed}):\n\n" + throughput_md(rows, column, label))
                out.append(f"\n**Average candidates vs {label}**:\n\n" + pivot_md(rows, column, "avg_candidates", label))
                if sweep in ("k", "s"):
                    extra = paper_candidates_md(ok(rows), workload, paper, column)
                    if extra:
                        out.append("\n" + extra)
        known = {"default", "k", "s", "n", "cnw"}
        other = part[part["sweep"].fillna("").str.split(",").apply(lambda names: not set(names) & known)]
        for case, rows in other.groupby("case", sort=False):
            out.append(f"\n**{case}** ({rows['kind'].iloc[0]} window; sweep `{rows['sweep'].iloc[0]}`):\n\n"
                       + md_table(rows, ["algorithm", "objects_per_s", "vs_oracle", "vs_sql", "avg_candidates",
                                         "avg_retained", "measured_bytes", "precision", "status"]))
        if len(default):
            out.append(f"\n**Default point** ({default['case'].iloc[0]}): median objects/s, ratios to the "
                       "oracle and to SQL, spread of the timed runs, precision against the oracle at every "
                       "timed slide:\n")
            out.append(md_table(default, ["algorithm", "objects_per_s", "vs_oracle", "vs_sql", "spread_pct", "runs",
                                          "timed_slides", "precision", "agrees_with_oracle", "status"],
                                ["algorithm", "objects/s", "x oracle", "x SQL", "spread %", "runs", "timed slides",
                                 "precision", "equals oracle", "status"]))
            memory = default.assign(bytes_kb=default["bytes"].map(kb), measured_kb=default["measured_bytes"].map(kb),
                                    tracemalloc_kb=default["peak_tracemalloc_bytes"].map(kb))
            memory = memory.assign(model_over_measured=memory["bytes"] / memory["measured_bytes"])
            out.append(f"\n**Memory at the default point** ({default['case'].iloc[0]}; KB; `bytes` is the "
                       "cost model (docs/algorithms/memory.md), `measured` the real size of the structures, `tracemalloc` the peak "
                       "allocated during the warm-up run, input excluded):\n")
            out.append(md_table(memory, ["algorithm", "avg_candidates", "avg_retained", "bytes_kb", "measured_kb",
                                         "tracemalloc_kb", "model_over_measured"],
                                ["algorithm", "candidates", "retained", "model KB", "measured KB",
                                 "tracemalloc peak KB", "model/measured"]))
            table8 = paper["papers"]["sap"]["table8_memory_kb"].get(PAPER_NAMES.get(workload, ""))
            if table8:
                out.append("\nSAP paper Table 8 (KB, default column k = 100): " + ", ".join(
                    f"{a} {table8[a]['k'][2]}" for a in ("sap", "mintopk", "kskyband")))
        shape = shape_md(sweep_rows(part, "k"), paper, workload)
        if shape:
            out.append("\n**Shape against the paper** (candidate ratios per case):\n\n" + shape)
        if workload == "time-u":
            out.append("\n**MinTopK list size against k·H(C_nw)** (docs/algorithms/mintopk.md, i.i.d. scores), the "
                       "paper's TIME-U column and ours:\n\n" + mintopk_model_md(part, paper))
        variants = sap_variants_md(part, workload, paper)
        if variants:
            out.append("\n**SAP partition variants** (paper Table 3: enhanced dynamic fastest):\n\n" + variants)
        out.append("")
    out.append(single_differences(data, paper))
    errors = data[data["status"] != "ok"]
    if len(errors):
        out.append("**Runs that did not complete:**\n\n" + md_table(errors, ["case", "algorithm", "status"]) + "\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- SAO


SAO_SWEEPS = (("memory", "m_over_w_pct", "M/W %"), ("layers", "param_layers", "L"), ("k", "k", "K"),
              ("d", "d", "d"), ("allocation", "param_allocation", "allocation"), ("drift", "opt_drift", "D"),
              ("skew", "opt_p", "p"), ("target", "n", "W"))


def sao_section(grid: pd.DataFrame, paper: dict, plots: Plots) -> str:
    sao = paper["papers"]["sao"]
    out = ["## SAO index (paper 000): error, filtering and throughput vs M/W, L, K, d\n",
           f"Paper defaults: W = {fmt(sao['defaults']['W'])}, M = {sao['defaults']['M']}, L = {sao['defaults']['L']}, "
           f"K = {sao['defaults']['K']}, d = {sao['defaults']['d']}, 100 queries with weights uniform in [-1, 1]. "
           "Here W = 100,000 (20,000 quick) with the paper's absolute M (500; 150-1,000 in the M sweep, so "
           "M/W = 0.15%-1%: at M/W = 0.05% of this W the layers would hold 50 tuples, too few for hulls in "
           "3-d to filter); K and the issue's target point W = 10^6, M = 500 are `bench_sao.py`'s (its table "
           "below). Error: the notes' weighted relative error (u_i = 1) of the "
           "index's `query(weights, K)` against the oracle's, averaged over the queries after the last timed "
           "slide; `range error` divides by the window's score range instead of |F| (robust near 0).\n"]
    out.append(CLAIMS_LINK)
    data = family_rows(grid, "sao")
    if data.empty:
        out.append("\nNo any-weights index (`sao`) registered at this commit: this section fills in when it lands.\n"
                   if not registered_any(lambda info: info.name == "sao")
                   else "\nNo SAO grid results in these results files (`grid-sao.csv`): run `make bench`.\n")
        return "\n".join(out)
    data = data.assign(m_over_w_pct=100 * data.get("param_memory", np.nan) / data["n"])
    columns = ["algorithm", "avg_error", "max_error", "avg_range_error", "filtering_ratio", "objects_per_s",
               "vs_oracle", "query_ms_median", "retained", "measured_bytes", "status"]
    for sweep, column, label in SAO_SWEEPS:
        rows = sweep_rows(data, sweep)
        if rows.empty or column not in rows:
            continue
        out.append(f"\n**{label}** ({sweep}):\n\n" + md_table(rows.sort_values(column), [column] + columns,
                                                              [label] + columns))
        part = ok(rows[rows["algorithm"] != "oracle"])
        if part[column].nunique() > 1 and pd.api.types.is_numeric_dtype(part[column]) and "avg_error" in part:
            long = part.melt(id_vars=[column], value_vars=[c for c in ("avg_error", "max_error") if c in part],
                             var_name="algorithm", value_name="error")
            out.append(plots.save(line_chart(long, column, "error", f"SAO error vs {label}", log_x=sweep == "memory",
                                             log_y=False, x_title=label), f"sao-error-{sweep}", f"error vs {label}"))
            out.append(plots.save(line_chart(part, column, "filtering_ratio", f"filtering ratio vs {label}",
                                             log_x=sweep == "memory", log_y=False, x_title=label),
                                  f"sao-filtering-{sweep}", f"filtering vs {label}"))
            out.append(plots.save(line_chart(part, column, "objects_per_s", f"throughput vs {label}",
                                             log_x=sweep == "memory", x_title=label, y_title="tuples/s"),
                                  f"sao-throughput-{sweep}", f"throughput vs {label}"))
    out.append("\n### What differs from the paper, and why\n")
    out.append("Every trend the paper reports is judged in the [claims table](#claims-of-the-papers), on "
               "`bench_sao`'s table where it has the sweep, else on this grid.\n")
    out.append("- **Data.** The paper's real set (UC data mining competition 2005) is not available here; every sweep "
               "runs on the drifting Gaussian (D = 0), on which the paper repeated its M/W experiment (Figs. 11-13) "
               "with the same conclusions, and the skew and drift sweeps on the paper's own synthetic sets.")
    out.append("- **Scale.** W = 100,000 instead of 10^6 keeps a sweep within minutes in Python, with the "
               "paper's absolute M, so our M/W is 2-20x the paper's. The paper's own point W = 10^6, M = 500 "
               "(the issue's targets) is measured by `bench_sao.py` (table below, targets above).")
    head = sao["headline"]
    out.append(f"\nPaper headline at M/W = {head['M_over_W_pct']}%: filtering {head['filtering_ratio']}, avg error "
               f"{head['avg_error']}, max error {head['max_error']}, over {fmt(head['tuples_per_s_at_least'])} tuples/s, "
               f"queries under {head['query_ms_at_most']} ms (C++ prototype).\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- incomplete streams

SQL_BASELINE = "duckdb-sql"


def with_paper(part: pd.DataFrame, column: str, metric: str, inc: dict, published, series: dict) -> pd.DataFrame:
    """``part`` plus the paper's points as extra series ``paper: <algorithm>`` (same axes)."""
    if not published:
        return part
    table = inc[published[0]]
    extra = [{column: x, metric: table[key][i], "algorithm": f"paper: {name}"}
             for name, key in series.items() for i, x in enumerate(table[published[1]])]
    return pd.concat([part, pd.DataFrame(extra)], ignore_index=True)


def incomplete_section(grid: pd.DataFrame, paper: dict, plots: Plots) -> str:
    inc = paper["papers"]["incomplete"]
    out = ["## Incomplete streams (paper 003): retained size and precision vs W, k, streams, ξ\n",
           "Attribute streams, count windows over the merged stream, slide W/100 (the paper slides per "
           "tuple; a per-slide answer keeps the Python run short). `retained` = instances (EAA, approx) "
           "or tuples (SLA) averaged over the timed slides; precision and `abs error` ((1/k) Σ|a_i − b_i|, "
           "the paper's errorApprox) against `oracle-incomplete` at every timed slide. World Cup: the "
           "ingest's mapping (`pipelines/worldcup.py`, read here without Spark): clients are objects, the "
           "site sections images, english, french, other are the streams (the first d of them), bytes per "
           "client, section and 5 s chunk over the largest chunk are the values; EAA's `occurrences` is the "
           "most chunks one client has in one stream within a window, measured on the stream.\n",
           f"Choices these figures rest on: {inc['setting']}\n"]
    out.append(CLAIMS_LINK)
    data = family_rows(grid, "incomplete")
    if data.empty:
        out.append("\nNo incomplete-stream algorithms registered at this commit: this section fills in when "
                   "`oracle-incomplete`, `sla`, `eaa` and `approx` land. The paper's tables, for reference:\n"
                   if not registered_any(lambda info: info.stream == "incomplete")
                   else "\nNo incomplete-stream grid results in these results files (`grid-incomplete.csv`): run "
                   "`make bench`. The paper's tables, for reference:\n")
    published = (("correlated", {"n": 1000, "k": 10, "opt_xi": 0.5}, "d", "table1_streams", "streams"),
                 ("correlated", {"n": 1000, "d": 3, "opt_xi": 0.5}, "k", "table2_k", "k"),
                 ("worldcup", {"n": 500, "k": 20}, "d", "table3_worldcup_streams", "streams"),
                 ("worldcup", {"d": 2, "k": 20}, "n", "table4_worldcup_window", "W"))
    for workload, fixed, column, key, paper_column in published:
        table = inc[key]
        rows = ok(data[data["workload"] == workload]) if len(data) else data
        for name, value in fixed.items():
            rows = rows[rows[name] == value] if name in rows else rows.iloc[0:0]
        lines = [f"\n**{table['source']}** — ours / paper:\n",
                 f"| {paper_column} | EAA retained | approx retained | approx precision | approx abs error | SLA retained | oracle retained |",
                 "|---|---|---|---|---|---|---|"]
        for i, value in enumerate(table[paper_column]):
            mine = rows[rows[column] == value].set_index("algorithm") if len(rows) else pd.DataFrame()

            def get(algorithm, metric):
                return mine.loc[algorithm, metric] if algorithm in mine.index and metric in mine else None
            lines.append(f"| {value} | {fmt(get('eaa', 'avg_retained'))} / {table['eaa'][i]} | "
                         f"{fmt(get('approx', 'avg_retained'))} / {table['approx'][i]} | "
                         f"{fmt(get('approx', 'precision'))} / {table['precision'][i]} | "
                         f"{fmt(get('approx', 'abs_error'))} / {table['error'][i]} | "
                         f"{fmt(get('sla', 'avg_retained'))} | {fmt(get('oracle-incomplete', 'avg_retained'))} |")
        out.append("\n".join(lines))
    if len(data):
        columns = ["case", "algorithm", "avg_retained", "precision", "abs_error", "objects_per_s", "vs_oracle",
                   "vs_sql", "measured_bytes", "status"]
        for sweep, column, label in (("xi", "opt_xi", "ξ"), ("n", "n", "W"), ("k", "k", "k"), ("streams", "d", "streams")):
            rows = sweep_rows(data[data["workload"] == "correlated"], sweep)
            if len(rows) and column in rows:
                if sweep in ("xi", "n"):
                    out.append(f"\n**Synthetic, {label} sweep** (paper Fig. 5):\n\n"
                               + md_table(rows.sort_values(column), columns))
                part = ok(rows[rows["algorithm"] != SQL_BASELINE])   # SQL keeps the whole table
                if part[column].nunique() > 1:
                    published = {"k": ("table2_k", "k"), "streams": ("table1_streams", "streams")}.get(sweep)
                    retained = with_paper(part, column, "avg_retained", inc, published,
                                          {"eaa": "eaa", "approx": "approx"})
                    precision = with_paper(part, column, "precision", inc, published, {"approx": "precision"})
                    out.append(plots.save(line_chart(retained, column, "avg_retained", f"retained vs {label}",
                                                     log_x=False, x_title=label),
                                          f"incomplete-retained-{sweep}", f"retained vs {label}"))
                    out.append(plots.save(line_chart(precision, column, "precision", f"precision vs {label}",
                                                     log_x=False, log_y=False, x_title=label),
                                          f"incomplete-precision-{sweep}", f"precision vs {label}"))
        cup = ok(data[data["workload"] == "worldcup"])
        out.append("\n### What differs from the paper, and why\n")
        out.append("Every table row and trend of the paper is judged in the [claims table](#claims-of-the-papers).\n")
        out.append("- **Slides.** The paper answers after every tuple; we answer every W/100 tuples, so retained "
                   "sizes and precision are averages over fewer, coarser answers.")
        occurrences = cup["param_occurrences"].dropna() if "param_occurrences" in cup else pd.Series(dtype=float)
        out.append("- **World Cup streams.** The paper's streams are the site's servers; the shipped sample has no "
                   "server field, so our streams are site sections. Values are bytes per 5 s chunk over the "
                   "largest chunk, a heavy-tailed distribution unlike the synthetic uniform one"
                   + (f"; a client has up to {fmt(occurrences.max())} chunks in one stream within a window, and "
                      "EAA's bounds grow with that count (paper Section 5), so it prunes far less than on the "
                      "synthetic streams where every object occurs once per stream." if len(occurrences) else "."))
        rest = data[~data["sweep"].fillna("").str.contains("xi")]
        out.append("\n**Every incomplete-stream case:**\n\n" + md_table(rest, columns))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- other modules

def modules_section(frames: dict[str, pd.DataFrame]) -> str:
    out = ["## Algorithm-specific experiments (`benchmarks/bench_*.py`)\n",
           "Each module's own table, as it printed it (its `COLUMNS`), from the same run.\n"]
    for bench, frame in frames.items():
        if bench.startswith("grid-"):
            continue
        module = frame["module"].dropna().iloc[0] if "module" in frame and frame["module"].notna().any() else None
        columns = None
        if module:
            try:
                columns = list(importlib.import_module(f"benchmarks.{module}").COLUMNS)
            except Exception:  # a module that no longer imports: show every column
                columns = None
        columns = [c for c in (columns or list(frame.columns)[:12]) if c in frame.columns]
        if "status" in frame and (frame["status"] != "ok").any():
            columns.append("status")
        doc = ""
        if module:
            try:
                doc = (importlib.import_module(f"benchmarks.{module}").__doc__ or "").strip().split("\n\n")[0]
            except Exception:
                doc = ""
        took = (f" ({len(frame)} rows in {fmt(frame['module_seconds'].iloc[0])} s wall)"
                if "module_seconds" in frame else "")
        out.append(f"### {bench} (`{module}`){took}\n\n{doc}\n\n" + md_table(frame, columns) + "\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- tables in docs/algorithms

BLOCK = re.compile(r"(?P<open><!-- generated:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- /generated -->)", re.S)
DOCS = ROOT / "docs" / "algorithms"


def rewrite_blocks(text: str, blocks: dict[str, str]) -> str:
    """``text`` with the body of every ``<!-- generated:NAME -->`` ... ``<!-- /generated -->`` block
    named in ``blocks`` replaced; everything outside the markers, and blocks not named, unchanged."""
    def body(match: re.Match) -> str:
        name = match.group("name")
        if name not in blocks:
            return match.group(0)
        return match.group("open") + blocks[name].rstrip("\n") + "\n" + match.group("close")
    return BLOCK.sub(body, text)


def provenance(frame: pd.DataFrame, bench: str) -> str:
    first = frame.iloc[0]
    commit = str(first.get("commit", ""))
    return (f"*Generated by `benchmarks/report.py` from `benchmarks/results/{bench}.csv`: run "
            f"{first.get('run_id', '')}, commit `{commit[:12]}{'+dirty' if commit.endswith('+dirty') else ''}`, "
            f"{'quick' if bool(first.get('quick')) else 'full'} mode, load average {fmt(first.get('load_1m'))} on "
            f"{fmt(first.get('cores'))} cores (a shared machine: absolute figures are noisy).*")


def mb(value) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value) / 1e6:.2f} MB"


def sap_doc_tables(frame: pd.DataFrame) -> dict[str, str]:
    """The grid's TIME-U and TIME-R cases (SAP against MinTopK and the k-skyband) and the SAP
    variants at s = 10, k = 100, for docs/algorithms/sap.md."""
    rows = ok(frame)
    rows = rows[rows["workload"].isin(["time-u", "time-r"])] if "workload" in rows else rows.iloc[0:0]
    lines = ["| case | SAP obj/s | MinTopK obj/s | SAP / MinTopK | candidates SAP | MinTopK | k-skyband | retained SAP "
             "| bytes SAP (model / measured) | bytes MinTopK (model / measured) | timed slides |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, part in rows.groupby("case", sort=False):
        by = part.set_index("algorithm")
        if not {"sap", "mintopk"} <= set(by.index):
            continue
        sap, mtk = by.loc["sap"], by.loc["mintopk"]
        sky = by.loc["kskyband"]["avg_candidates"] if "kskyband" in by.index else None
        lines.append(f"| {case} | {fmt(sap['objects_per_s'])} | {fmt(mtk['objects_per_s'])} | "
                     f"{fmt(sap['objects_per_s'] / mtk['objects_per_s'], 2)} | {fmt(sap['avg_candidates'])} | "
                     f"{fmt(mtk['avg_candidates'])} | {fmt(sky)} | {fmt(sap.get('avg_retained'))} | "
                     f"{mb(sap.get('bytes'))} / {mb(sap.get('measured_bytes'))} | "
                     f"{mb(mtk.get('bytes'))} / {mb(mtk.get('measured_bytes'))} | {fmt(sap.get('timed_slides'))} |")
    head = provenance(frame, "grid-sap")
    variants = rows[(rows["n"] == 100_000) & (rows["s"] == 10) & (rows["k"] == 100)
                    & rows["algorithm"].isin(["sap", "sap-equal", "sap-dynamic", "mintopk", "kskyband"])]
    speed = variants[variants["algorithm"] == "mintopk"].set_index("case")["objects_per_s"]
    variants = variants.assign(vs_mintopk=variants["objects_per_s"] / variants["case"].map(speed))
    return {"sap-table": head + "\n\n" + "\n".join(lines),
            "sap-variants": head + "\n\n" + md_table(variants, ["case", "algorithm", "objects_per_s", "vs_mintopk",
                                                                "avg_candidates", "avg_retained", "timed_slides"],
                                                        ["case", "algorithm", "obj/s", "vs MinTopK", "candidates",
                                                         "retained", "timed slides"])}


def sao_doc_tables(frame: pd.DataFrame) -> dict[str, str]:
    """``bench_sao``'s allocation strategies (avg / max error %) for docs/algorithms/sao.md."""
    rows = ok(frame)
    strategies = ["dynamic-errmin", "dynamic-uniform", "static-errmin", "static-uniform"]
    part = rows[rows["allocation"].isin(strategies)] if "allocation" in rows else rows.iloc[0:0]
    grouped = part.groupby(["W", "M"]).filter(lambda g: g["allocation"].nunique() == len(strategies))
    lines = ["| W | M (M/W) | " + " | ".join(strategies) + " |", "|---|---|" + "---|" * len(strategies)]
    for (w, m), group in grouped.groupby(["W", "M"]):
        by = group.groupby("allocation")[["avg_error_pct", "max_error_pct"]].first()
        best = by["avg_error_pct"]
        winners = [a for a in strategies if all(beats(best[a], best[o]) for o in strategies if o != a)]
        cells = [(f"**{fmt(by.loc[a, 'avg_error_pct'])}**" if a in winners else fmt(by.loc[a, "avg_error_pct"]))
                 + f" / {fmt(by.loc[a, 'max_error_pct'])}" for a in strategies]
        lines.append(f"| {fmt(w)} | {fmt(m)} ({fmt(100 * m / w, 2)} %) | " + " | ".join(cells) + " |")
    note = (f"avg / max error %; bold: strictly lowest average (by more than {int(TIE * 100)}%: a tie is not a win).")
    return {"sao-allocation": provenance(frame, "sao") + " " + note + "\n\n" + "\n".join(lines)}


def mintopk_doc_tables(frame: pd.DataFrame) -> dict[str, str]:
    """``bench_competitors``' C_nw sweep (objects/s) for docs/algorithms/mintopk.md."""
    rows = ok(frame)
    part = rows[rows["section"] == "c_nw"] if "section" in rows else rows.iloc[0:0]
    names = list(part["algorithm"].drop_duplicates())
    lines = ["| C_nw | scores | " + " | ".join(names) + " | timed slides |", "|---|---|" + "---|" * (len(names) + 1)]
    for (distribution, cnw), group in part.groupby(["distribution", "c_nw"], sort=False):
        speed = group.set_index("algorithm")["objects_per_s"]
        slides = group["timed_slides"].min() if "timed_slides" in group else None
        lines.append(f"| {fmt(cnw)} | {distribution} | " + " | ".join(fmt(speed.get(n)) for n in names)
                     + f" | {fmt(slides)} |")
    return {"mintopk-cnw": provenance(frame, "competitors") + "\n\n" + "\n".join(lines)}


DOC_TABLES = {"sap.md": ("grid-sap", sap_doc_tables), "sao.md": ("sao", sao_doc_tables),
              "mintopk.md": ("competitors", mintopk_doc_tables)}


def write_doc_tables(frames: dict[str, pd.DataFrame], docs: pathlib.Path) -> list[pathlib.Path]:
    """Rewrite the generated blocks of the per-algorithm docs from the results (only the blocks)."""
    written = []
    for name, (bench, make) in DOC_TABLES.items():
        path = docs / name
        if bench not in frames or not path.exists():
            continue
        text = path.read_text()
        updated = rewrite_blocks(text, make(frames[bench]))
        if updated != text:
            path.write_text(updated)
            written.append(path)
    return written


# --------------------------------------------------------------------------- header and methods

def runs_of(frames: dict[str, pd.DataFrame]) -> list[tuple[pd.Series, list[str]]]:
    """Each run the results come from (its first row) and the benchmarks it wrote, newest first.

    A run with ``--families``/``--only`` replaces the CSV files of what it ran only, so the
    files may come from several runs."""
    runs: dict = {}
    for bench, frame in frames.items():
        firsts = frame.drop_duplicates("run_id") if "run_id" in frame else frame.iloc[:1]
        for _, row in firsts.iterrows():
            runs.setdefault(row.get("run_id"), (row, []))[1].append(bench)
    return sorted(runs.values(), key=lambda run: str(run[0].get("when")), reverse=True)


def stale_note(frames: dict[str, pd.DataFrame], runs: list) -> str:
    """Which figures are stale: runs at uncommitted code or several commits, rows timed over fewer
    slides than the harness minimum (one turnover or 200 slides)."""
    commits = {str(first.get("commit")) for first, _ in runs}
    dirty = [c for c in commits if c.endswith("+dirty")]
    thin = {bench: frame[is_thin(frame)] for bench, frame in frames.items()}
    timed = {bench: int(frame["timed_slides"].notna().sum()) for bench, frame in frames.items() if "timed_slides" in frame}
    parts = [f"`{bench}` {len(thin[bench])} of {timed[bench]}"
             + (" (" + ", ".join(map(str, thin[bench]["case"].drop_duplicates())) + ")" if "case" in thin[bench] else "")
             for bench in sorted(timed) if len(thin[bench])]
    clean = len(commits) <= 1 and not dirty
    if clean and not parts:
        return "**Figures:** one run at one clean commit; every timed row covers its minimum of slides."
    thin_text = (f"Timed rows below the harness minimum of slides (one window turnover or {MIN_TIMED_SLIDES} slides, "
                 "because the trace or the case's budget ended first; left out of every quoted figure, verdicts "
                 "resting on them say *provisional*): " + ", ".join(parts) + "." if parts else "")
    if clean:
        return "**Figures:** one run at one clean commit. " + thin_text
    return ("**Stale figures.** " + (f"The results come from {len(commits)} commits" if len(commits) > 1 else "One commit")
            + (f", {len(dirty)} of them with uncommitted changes (`+dirty`)" if dirty else "") + ". "
            + (thin_text + " " if thin_text else "")
            + "Claims and targets of experiments added after these runs say *not measured*. A full `make bench` "
            "at a clean commit replaces all of this.")


def header(frames: dict[str, pd.DataFrame]) -> str:
    runs = runs_of(frames)
    loads = pd.concat([f["load_1m_at"] for f in frames.values() if "load_1m_at" in f]).dropna() \
        if any("load_1m_at" in f for f in frames.values()) else pd.Series(dtype=float)
    during = f"; {fmt(loads.min())}-{fmt(loads.max())} while cases ran" if len(loads) else ""
    quick = [bool(first.get("quick")) for first, _ in runs]
    kind = ("QUICK RUN (`make bench-quick`): small windows and short timings, for shape and smoke "
            "only; regenerate with `make bench` for the figures the issues ask for."
            if all(quick) else "Full run (`make bench`)." if not any(quick) else
            "Full and QUICK runs mixed: the benchmarks of the quick runs (marked below) have small windows "
            "and short timings; regenerate with `make bench` for the figures the issues ask for.")
    if len(runs) > 1:
        kind += f" The results come from {len(runs)} runs (one row each below, with the benchmarks it wrote)."
    lines = []
    for first, benches in runs:
        commit = str(first.get("commit"))
        lines.append(
            f"| {first.get('run_id')} | {first.get('when')} | `{commit[:12]}{'+dirty' if commit.endswith('+dirty') else ''}` | "
            f"{first.get('cores')} x {first.get('cpu_model')} | {first.get('python')} | "
            f"{fmt(first.get('load_1m'))} / {fmt(first.get('load_1m_end'))} on {first.get('cores')} cores"
            f"{during if len(runs) == 1 else ''} | {fmt(first.get('total_seconds'))} s |"
            + (f" {', '.join(benches)}{' (quick run)' if first.get('quick') else ''} |" if len(runs) > 1 else ""))
    return "\n".join([
        "# Top-k Watch: benchmark and paper-reproduction report",
        "",
        "*Generated by `benchmarks/report.py` from `benchmarks/results/*.csv`; do not edit by hand.*",
        "",
        f"**{kind}**",
        "",
        "| run | when (UTC) | commit | machine | Python | load average (1 min) at start / end | total |"
        + (" benchmarks |" if len(runs) > 1 else ""),
        "|---|---|---|---|---|---|---|" + ("---|" if len(runs) > 1 else ""),
        *lines,
        "",
        stale_note(frames, runs),
        "",
        "Timings are CPU seconds of the benchmark process (`time.process_time`), median of several "
        "timed runs after a warm-up run; a load average above the number of cores means other work "
        "shared the machine during the run (it did while this project was being built by several "
        "agents at once), so treat absolute objects/s as noisy and the ratios measured in the same "
        "process as the evidence.",
        "",
        "Contents: [claims of the papers](#claims-of-the-papers) · [targets of the issues](#targets-of-the-issues) · "
        "[single stream: MinTopK and SAP](#single-stream-mintopk-paper-002-and-sap-paper-001-against-their-competitors) · "
        "[SAO index](#sao-index-paper-000-error-filtering-and-throughput-vs-mw-l-k-d) · "
        "[incomplete streams](#incomplete-streams-paper-003-retained-size-and-precision-vs-w-k-streams-ξ) · "
        "[algorithm-specific experiments](#algorithm-specific-experiments-benchmarksbench_py) · [method](#method)",
        ""])


def timing_md(frames: dict[str, pd.DataFrame]) -> str:
    """How long each part of the run took, from the rows themselves (grid: the wall seconds of its
    algorithms' rows; modules: the module's wall time), with the load average while it ran."""
    lines = ["| part | rows | wall seconds | mode | load average (1 min) |", "|---|---|---|---|---|"]
    for bench, frame in frames.items():
        seconds = (frame["wall_seconds"].sum() if bench.startswith("grid-") and "wall_seconds" in frame
                   else frame["module_seconds"].dropna().iloc[0] if "module_seconds" in frame
                   and frame["module_seconds"].notna().any() else None)
        load = frame["load_1m_at"].dropna() if "load_1m_at" in frame else pd.Series(dtype=float)
        mode = "quick" if "quick" in frame and frame["quick"].fillna(False).astype(bool).any() else "full"
        lines.append(f"| {bench} | {len(frame)} | {fmt(seconds)} | {mode} | "
                     + (f"{fmt(load.min())}-{fmt(load.max())}" if len(load) else "") + " |")
    return "\n".join(lines)


def methods() -> str:
    """The Method section; every number in it is read from the harness' own constants."""
    full, quick = harness.FULL_SETTINGS, harness.QUICK_SETTINGS
    return f"""## Method

- **Harness** (`benchmarks/run.py`, `harness.py`, `registry.py`, `workloads.py`, `baselines.py`,
  `common.py`). Every case cuts its stream into slides once; the baselines and every algorithm
  registered for the case's stream model (`engine.available()`: `stream == "single"` or
  `"incomplete"`) run over the same `Batch` objects in one process. Per algorithm: a warm-up run
  under `tracemalloc` (fills one window, then times slides; records the candidates and retained
  objects after every timed slide, every answer, `stats()` at the end and the peak traced memory),
  then up to {full['repeats']} timed runs of fresh instances over the same slides ({quick['repeats']} in a quick run).
  **Every timed row covers one full window turnover (n/s slides) or {MIN_TIMED_SLIDES} slides, whichever is
  more** (`common.required_slides`); a CPU budget ({full['budget']:g} s full, {quick['budget']:g} s quick) only extends a
  row beyond that minimum where the stream holds more slides (time windows). An algorithm whose timed
  runs would exceed {full['repeat_budget']:g} s of CPU in all ({quick['repeat_budget']:g} s quick) gets fewer of them (column
  `runs`); a traced window fill over {full['fill_limit']:g} s ({quick['fill_limit']:g} s quick), or a minimum of slides that would take
  over {full['turnover_limit']:g} s traced ({quick['turnover_limit']:g} s quick), skips the algorithm for that case with the
  reason in `status`: no row is cut short of its minimum. A row of an older run with fewer timed
  slides than this minimum (or a trace too short for it) is *thin*: it is left out of every figure
  and range the report quotes, and a verdict resting on thin rows only says *provisional*.
  Reported: the median objects/s and the spread (max − min) / median of the timed runs.
- **Baselines.** `oracle`: the engine's brute force (numpy window buffer, `argpartition` per
  slide). `duckdb-sql`: the stream in an in-memory DuckDB table (loaded before timing, the load
  time is in `load_seconds`), one query per slide, `WHERE seq (or t) in the window ORDER BY score
  DESC, seq DESC LIMIT k`, DuckDB on one thread so CPU times compare; for attribute streams
  `SUM(weight * value) GROUP BY id`. Its answers are checked against the oracle like every
  algorithm's (`precision`, `agrees_with_oracle` in the CSV). Its `peak_tracemalloc_bytes` misses
  DuckDB's own allocator.
- **Memory.** `bytes`: the cost model (docs/algorithms/memory.md) from `stats()`; `measured_bytes`: the real size of
  the structures (`stats()`, engine/memory.py); `peak_tracemalloc_bytes`: the peak of Python
  allocations during the warm-up run, inputs excluded.
- **Workloads.** TIME-U: uniform scores. TIME-R: the paper's `sin(π t / 10^6)` (no noise), the
  stream starting at the crest so that the timed windows lie on the falling flank (the paper's
  average also covers rising flanks; `bench_sap.py` uses the same stream).
  Stock: SPY trades (full: the 5 SPY and 5 BAC days, 2.4 M trades; quick: the shipped SPY day),
  suspicious trades dropped, score = notional (price × size, dollars). Taxi: the 12 monthly samples
  of 2019 by pickup time, trips with non-positive duration, zero distance or over 100 mph dropped,
  score = speed (mph). SAO sets and the correlated attribute streams come from
  `engine.generators`; the World Cup sample is read by a local loader.
- **Storage.** Every row (grid and `bench_*.py` modules) carries `run_id`, `when`, `cores`,
  `cpu_model`, `python`, `commit`, `load_1m`, and is appended to the DuckDB table `bench_results`
  (main fields as columns, `when`, `case`, `commit` named `run_at`, `case_name`, `git_commit`; the
  whole row in `row_json`; file `var/bench.duckdb`; a file of its own so a benchmark never contends for the pipelines' lock on
  `var/topk.duckdb`; `python -m benchmarks.run --db var/topk.duckdb` puts it there) and written as
  `benchmarks/results/<bench>.csv` (the latest run of each benchmark: a run with `--families` or
  `--only` replaces only the files of what it ran) plus `latest.json` (that run's rows) for the dashboard.
"""


GRID_COLUMNS = ["family", "sweep", "case", "workload", "algorithm", "status", "quick", "n", "k", "s", "d", "cnw",
                "kind", "objects_per_s", "spread_pct", "runs", "vs_oracle", "vs_sql", "avg_candidates",
                "avg_retained", "bytes", "measured_bytes", "peak_tracemalloc_bytes", "precision", "abs_error",
                "agrees_with_oracle", "data_rows", "n_frac_of_data", "filtering_ratio", "avg_error", "max_error",
                "avg_range_error", "query_ms_median", "retained", "param_memory", "param_layers",
                "param_allocation", "param_occurrences", "opt_xi", "opt_drift", "opt_p"]


def main(argv=None) -> pathlib.Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS)
    parser.add_argument("--out", type=pathlib.Path, default=REPORT)
    parser.add_argument("--docs", type=pathlib.Path, default=None,
                        help="directory of the per-algorithm docs whose generated blocks are rewritten "
                             "(default: algorithms/ beside the report)")
    args = parser.parse_args(argv)
    frames = load(args.results)
    if not frames:
        raise SystemExit(f"no results in {args.results}: run `make bench-quick` or `make bench` first")
    paper = json.loads(PAPER.read_text())
    grid_frames = [f for name, f in frames.items() if name.startswith("grid-")]
    grid = pd.concat(grid_frames, ignore_index=True) if grid_frames else pd.DataFrame(
        columns=["family", "workload", "algorithm", "status", "quick", "sweep"])
    for column in GRID_COLUMNS:            # columns a run may lack (no real trace, no index, ...)
        if column not in grid:
            grid[column] = np.nan
    everything = pd.concat(frames.values(), ignore_index=True)
    plots = Plots(args.out.parent / PLOTS.name, args.out.parent)
    parts = [header(frames), claims_section(paper, frames), targets_section(paper, everything),
             single_section(grid, paper, plots),
             sao_section(grid, paper, plots), incomplete_section(grid, paper, plots), modules_section(frames),
             methods() + "\n**Time per part in these results** (`python -m benchmarks.run --estimate` projects "
             "each part under the current harness from them):\n\n" + timing_md(frames) + "\n",
             f"*Report written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.*\n"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("\n".join(parts))
    tmp.replace(args.out)
    write_doc_tables(frames, args.docs or args.out.parent / DOCS.name)
    return args.out


if __name__ == "__main__":
    print(main())
