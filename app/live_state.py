"""The Live page's state as plain data: widget values <-> query <-> URL query parameters.

No Streamlit here: the page reads and writes ``st.session_state`` / ``st.query_params`` with
these functions, and the tests check the round trip without a server.

URL parameters: ``ds`` dataset, ``alg`` algorithms (comma separated), ``kind``, ``k``,
``window`` and ``slide`` as typed (``30 min``), ``w`` weights in feature order (comma
separated), ``p.<algorithm>.<parameter>`` non-default algorithm parameters, ``at`` the slide
shown, ``speed`` slides per second.

Playback's pace is plain data too, on this page and the Watch list's: the slides (rows) and engine
seconds of a tick (:func:`tick_work`) and the caption comparing the pace reached with the speed
(:func:`pace_caption`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import engine
from app import units
from app.presets import Preset, Profile


K_MAX = 1000
"""Largest ``k`` the page's input takes."""

TICK = 1.0  # least seconds between two playback ticks (at most one refresh per second)
BUDGET = 0.6  # least of the most seconds of engine work per tick
ENGINE_SHARE = 0.5  # share of a tick's real length the engines may take, between BUDGET and MAX_BUDGET
MAX_BUDGET = 2.0  # most seconds of engine work per tick, so that a Pause is served soon
CATCH_UP = 10.0  # most seconds of playback one tick makes up for (a tab shown again after a while)


WEIGHT_STEP = 0.05
"""Step of the weight sliders (Live's and the Watch list form's), which run up to 1."""


def weight_key(feature: str) -> str:
    return f"w_{feature}"


def param_key(algorithm: str, name: str) -> str:
    return f"param_{algorithm}_{name}"


def typed(value: int, kind: str, t_unit: str) -> str:
    """A window or slide length as the user would type it for ``kind``."""
    return units.format_count(value) if kind == "count" else units.format_duration(value, t_unit)


def preset_values(preset: Preset, profile: Profile) -> dict[str, Any]:
    """Widget values that show ``preset`` on ``profile``'s dataset."""
    values: dict[str, Any] = {"kind": preset.kind, "k": preset.k, "window": preset.window, "slide": preset.slide}
    for feature, weight in zip(profile.features, preset.weight_vector(profile.features)):
        values[weight_key(feature)] = weight
    return values


def matching_preset(values: Mapping[str, Any], profile: Profile) -> str | None:
    """Name of the preset whose query the widget ``values`` show, else ``None``."""
    for preset in profile.presets:
        try:
            if query_of(values, profile) == query_of(preset_values(preset, profile), profile):
                return preset.name
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class Problem:
    """A bad value: the widget it belongs to, the message, and nearby valid typed values."""

    field: str
    message: str
    suggestions: tuple[str, ...] = ()


def k_problem(k: float) -> str | None:
    """Why ``k`` cannot be taken (a message for the user), else ``None``.

    >>> k_problem(-3), k_problem(10)
    ('k must be a whole number from 1 to 1,000 (the most objects the page lists in an answer), got -3', None)
    """
    if k == int(k) and 1 <= k <= K_MAX:
        return None
    shown = f"{int(k):,}" if k == int(k) else f"{k:g}"
    return f"k must be a whole number from 1 to {K_MAX:,} (the most objects the page lists in an answer), got {shown}"


def lengths(values: Mapping[str, Any], profile: Profile) -> tuple[int | None, int | None, list[Problem]]:
    """Parse the typed window and slide; problems name the field and suggest valid values.

    Examples
    --------
    >>> from app.presets import profile
    >>> prof = profile("x", "synthetic", ("a",), "ordinal")
    >>> lengths({"kind": "count", "window": "1,000", "slide": "7"}, prof)[2][0].suggestions
    ('5', '8')
    """
    kind, t_unit = values["kind"], profile.t_unit
    problems: list[Problem] = []
    parsed: dict[str, int | None] = {}
    for field, default in zip(("window", "slide"), profile.defaults(kind)):
        suggestions = (default,)
        if field == "slide" and parsed["window"] is not None:  # slides that divide the window typed
            suggestions = slides_near(parsed["window"], parse_length(default, kind, t_unit), kind, t_unit) or suggestions
        try:
            parsed[field] = parse_length(str(values[field]), kind, t_unit, field, " or ".join(suggestions))
        except ValueError as exc:
            parsed[field] = None
            problems.append(Problem(field, str(exc), suggestions))
    window, slide = parsed["window"], parsed["slide"]
    if window is not None and slide is not None:
        if slide > window:
            problems.append(Problem("slide", f"slide ({typed(slide, kind, t_unit)}) must not be longer than the "
                                             f"window ({typed(window, kind, t_unit)})",
                                    slides_near(window, slide, kind, t_unit)))
        elif window // slide > units.MAX_SLIDES_PER_WINDOW:
            shortest = -(-window // units.MAX_SLIDES_PER_WINDOW)
            problems.append(Problem("slide", f"slide ({typed(slide, kind, t_unit)}): "
                                             f"{units.slides_per_window_problem(window, slide)}",
                                    slides_near(window, shortest, kind, t_unit)))
        elif window % slide:
            problems.append(Problem("slide", f"the window ({typed(window, kind, t_unit)}) must be a whole number "
                                             f"of slides ({typed(slide, kind, t_unit)})",
                                    slides_near(window, slide, kind, t_unit)))
    return window, slide, problems


def parse_length(text: str, kind: str, t_unit: str, field: str = "value", examples: str | None = None) -> int:
    """A window or slide length typed for ``kind``; ``ValueError`` with a message for the user."""
    if kind == "count":
        return units.parse_count(text, field, examples or "10000 or 10k")
    return units.parse_duration(text, t_unit, field, examples)


def slides_near(window: int, slide: int, kind: str, t_unit: str) -> tuple[str, ...]:
    """The valid slides of ``window`` nearest ``slide`` (dividing it, within
    :data:`app.units.MAX_SLIDES_PER_WINDOW`), as typed.

    >>> slides_near(1_800_000, 420_000, "time", "ms"), slides_near(1000, 0, "count", "ordinal")
    (('6 min', '10 min'), ('1',))
    """
    step = units.granularity(slide, t_unit) if kind == "time" else 1
    return tuple(typed(s, kind, t_unit) for s in units.nearest_slides(window, slide, step)
                 if window // s <= units.MAX_SLIDES_PER_WINDOW)


def query_of(values: Mapping[str, Any], profile: Profile) -> engine.Query:
    """The query the widget ``values`` describe; ``ValueError`` when a value is bad."""
    window, slide, problems = lengths(values, profile)
    if problems:
        raise ValueError(problems[0].message)
    weights = [float(values.get(weight_key(f), 0.0)) for f in profile.features]
    return engine.Query(weights=weights, k=int(values["k"]), window=window, slide=slide, kind=values["kind"])


def setup_values(query: engine.Query, algorithms: Sequence[str], params: Mapping[str, Mapping[str, Any]],
                 features: Sequence[str], t_unit: str) -> dict[str, Any]:
    """Widget values that show a setup again (Cancel of a rebuild puts the sidebar back with these).

    Examples
    --------
    >>> q = engine.Query(weights=[1.0, 0.0], k=5, window=1_800_000, slide=60_000, kind="time")
    >>> setup_values(q, ["oracle"], {"mintopk": {"prefilter": False}}, ["a", "b"], "ms")["slide"]
    '1 min'
    """
    values: dict[str, Any] = {"kind": query.kind, "k": query.k, "window": typed(query.window, query.kind, t_unit),
                              "slide": typed(query.slide, query.kind, t_unit), "algorithms": list(algorithms)}
    values.update({weight_key(f): w for f, w in zip(features, query.weights)})
    values.update({param_key(name, key): value for name, chosen in params.items() for key, value in chosen.items()})
    return values


def to_url(dataset: str, algorithms: Sequence[str], query: engine.Query, params: Mapping[str, Mapping[str, Any]],
           t_unit: str, at: int | None, speed: int | None = None) -> dict[str, str]:
    """URL query parameters of a view.

    Examples
    --------
    >>> q = engine.Query(weights=[1.0, 0.0], k=5, window=1_800_000, slide=60_000, kind="time")
    >>> to_url("spy", ["oracle", "mintopk"], q, {"mintopk": {"prefilter": False}}, "ms", 41)
    {'ds': 'spy', 'alg': 'oracle,mintopk', 'kind': 'time', 'k': '5', 'window': '30 min', 'slide': '1 min', \
'w': '1,0', 'at': '41', 'p.mintopk.prefilter': 'false'}
    """
    out = {"ds": dataset, "alg": ",".join(algorithms), "kind": query.kind, "k": str(query.k),
           "window": typed(query.window, query.kind, t_unit), "slide": typed(query.slide, query.kind, t_unit),
           "w": units.weights_text(query.weights)}
    if at is not None:
        out["at"] = str(at)
    if speed is not None:
        out["speed"] = str(speed)
    defaults = {info.name: info.defaults for info in engine.available()}
    for name, values in params.items():
        for key, value in values.items():
            if defaults.get(name, {}).get(key) != value:
                out[f"p.{name}.{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def from_url(params: Mapping[str, str], profile: Profile, notes: list[str] | None = None,
             shown: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Widget values (session-state keys) from URL parameters about ``profile``'s dataset.

    Unknown or malformed parameters (an algorithm parameter its engine refuses among them) are
    skipped (a shared link from an older page version must still open) and values outside a
    widget's range are brought into it (``k`` to at most
    :data:`K_MAX`, weights to ``[-1, 1]``); ``notes``, when given, receives one line per
    parameter skipped or changed, for the page to show. A window or slide that is not a length
    is replaced by the kind's default on this dataset (as switching the kind does), or without a
    kind in the link by the one ``shown`` (the widget values before the link); valid lengths are
    passed as typed, their widgets saying what does not fit together.

    Examples
    --------
    >>> from app.presets import profile
    >>> prof = profile("x", "synthetic", ("a", "b"), "ordinal")
    >>> from_url({"k": "5", "w": "1,-0.5", "kind": "time", "p.mintopk.prefilter": "false"}, prof)
    {'kind': 'time', 'k': 5, 'window': '1000', 'slide': '50', 'w_a': 1.0, 'w_b': -0.5, 'param_mintopk_prefilter': False}
    >>> notes = []
    >>> from_url({"k": "5000", "w": "nan,1"}, prof, notes), notes
    ({'k': 1000}, ['k = 5000 is more than 1000: k = 1000 is used', 'w = nan,1 is not 2 finite numbers (a, b) \
separated by commas: left out'])
    >>> notes = []
    >>> from_url({"window": "abc", "slide": "0"}, prof, notes, {"kind": "count", "window": "500", "slide": "10"}), notes
    ({'window': '500', 'slide': '10'}, ['window = abc is not a number of objects from 1 to 1,000,000,000,000: window = 500 is used', 'slide = 0 is not a number of objects from 1 to 1,000,000,000,000: slide = 10 is used'])
    """
    notes = [] if notes is None else notes
    shown = {} if shown is None else shown
    values: dict[str, Any] = {}
    if params.get("kind") in ("count", "time"):
        values["kind"] = params["kind"]
    elif "kind" in params:
        notes.append(f"kind = {units.shorten(params['kind'])} is neither count nor time: left out")
    k = units.link_number(params.get("k", ""))
    if k is not None and k >= 1:
        values["k"] = min(K_MAX, k)
        if k > K_MAX:
            notes.append(f"k = {units.shorten(params['k'])} is more than {K_MAX}: k = {K_MAX} is used")
    elif "k" in params:
        notes.append(f"k = {units.shorten(params['k'])} is not a whole number >= 1: left out")
    kind = values.get("kind", shown.get("kind", "count"))
    fallback = dict(zip(("window", "slide"), profile.defaults(kind)))
    if "kind" in values:  # the kind's own lengths, not the preset's read in another unit
        values.update(fallback)
    elif "window" in shown:
        fallback = {"window": str(shown["window"]), "slide": str(shown["slide"])}
    noun = "number of objects" if kind == "count" else f"duration in {units.unit_label(profile.t_unit)}"
    for field in ("window", "slide"):
        if not params.get(field):
            continue
        try:
            parse_length(str(params[field]), kind, profile.t_unit, field)
            values[field] = str(params[field])
        except ValueError:
            values[field] = fallback[field]
            notes.append(f"{field} = {units.shorten(params[field])} is not a {noun} from 1 to "
                         f"{units.MAX_LENGTH:,}: {field} = {fallback[field]} is used")
    if "w" in params:
        try:
            if not engine.base.plain_digits(str(params["w"])):
                raise ValueError
            weights = [float(w) for w in str(params["w"]).split(",")]
            if len(weights) != len(profile.features) or not all(math.isfinite(w) for w in weights):
                raise ValueError
            values.update({weight_key(f): max(-1.0, min(1.0, w)) for f, w in zip(profile.features, weights)})
            if any(abs(w) > 1 for w in weights):
                notes.append(f"w = {units.shorten(params['w'])} has weights outside [-1, 1]: brought to the nearest "
                             "of -1 and 1")
        except ValueError:
            notes.append(f"w = {units.shorten(params['w'])} is not {len(profile.features)} finite numbers "
                         f"({', '.join(profile.features)}) separated by commas: left out")
    defaults = {info.name: info.defaults for info in engine.available()}
    for key, value in params.items():
        parts = key.split(".")
        if len(parts) != 3 or parts[0] != "p":
            continue
        if parts[2] not in defaults.get(parts[1], {}):
            notes.append(f"{units.shorten(key)}: {units.shorten(parts[1])} has no parameter "
                         f"{units.shorten(parts[2])}: left out")
            continue
        try:
            coerced = engine.base.coerce_param(parts[1], parts[2], defaults[parts[1]][parts[2]], value)
            engine.create(parts[1], engine.Query(weights=[1.0] * max(1, len(profile.features)), k=1, window=1, slide=1),
                          **{parts[2]: coerced})  # refuses a value out of the parameter's range
            values[param_key(parts[1], parts[2])] = coerced
        except (ValueError, MemoryError) as exc:
            why = str(exc) if isinstance(exc, ValueError) else f"needs more memory than the server has ({exc})"
            notes.append(f"{key} = {units.shorten(value)}: {units.shorten(why, 200)}: left out")
    return values


def tick_work(speed: float, elapsed: float) -> tuple[int, float]:
    """Slides due and most engine seconds for a tick that starts ``elapsed`` s after the last one.

    The browser asks for a tick once it has drawn the last, so a tick lasts as long as the
    engines, building and drawing the page take (at least :data:`TICK`). Playing ``speed``
    slides per second means processing ``speed`` times that real length (at most
    :data:`CATCH_UP` seconds' worth), not ``speed`` times :data:`TICK`. The engines may take
    :data:`ENGINE_SHARE` of the tick's length, between :data:`BUDGET` and :data:`MAX_BUDGET`, so a
    slow drawing does not starve them and a Pause still comes within a couple of seconds.

    >>> tick_work(200, 1.0), tick_work(200, 3.0), tick_work(200, 60.0)
    ((200, 0.6), (600, 1.5), (2000, 2.0))
    """
    seconds = min(CATCH_UP, max(TICK, elapsed))
    return max(1, round(speed * seconds)), min(MAX_BUDGET, max(BUDGET, ENGINE_SHARE * seconds))


def pace_caption(speed: float, slides: int, due: int, objects: int | None, seconds: float, engine_s: float,
                 budget: float, unit: str = "slides") -> str:
    """What a tick played against what was asked; when short of it, why (the machine is the limit).

    ``unit`` names what ``speed``, ``slides`` and ``due`` count (the Watch list plays rows);
    ``objects`` (``None`` when they are the unit) are the stream objects those brought.

    >>> pace_caption(200, 400, 400, 400, 2.0, 0.5, 1.0)
    'Playing at 200 slides/s of the 200 asked (200 objects/s; engines 0.50 s of this 2.00 s tick).'
    >>> pace_caption(200, 100, 400, 100, 2.0, 1.0, 1.0)[-90:]
    'the machine is the limit: the engines processed 100 of the 400 slides due in their 1.00 s.'
    >>> pace_caption(5000, 1500, 6000, None, 1.2, 0.6, 0.6, unit="rows")[:56]
    'Playing at 1,250 rows/s of the 5,000 asked (engines 0.60'
    """
    rate = slides / seconds
    per_object = "" if objects is None else f"{objects / seconds:,.0f} objects/s; "
    text = (f"Playing at {rate:,.0f} {unit}/s of the {speed:,} asked ({per_object}engines "
            f"{engine_s:.2f} s of this {seconds:.2f} s tick)")
    if slides < due:
        return text + f": the machine is the limit: the engines processed {slides:,} of the {due:,} {unit} due in " \
                      f"their {budget:.2f} s."
    return text + "."
