"""Named queries per dataset and the defaults that suit its clock and size.

The default preset of a dataset is the query ``make run`` replays (``pipelines/configs/demo.json``)
when that config is about the dataset, so Live and Runs show the same query at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from app import units

CONFIGS = Path(__file__).resolve().parent.parent / "pipelines" / "configs"
"""The replay configs (``demo.json`` first)."""
MAKE_RUN_CONFIGS = ("demo.json", "families.json")
"""The configs ``make run`` replays (the Makefile's ``run`` target); the others are run by hand."""
TIME_ZONES = {"stock": "America/New_York", "taxi": "America/New_York", "worldcup": "Europe/Paris"}
"""Time zone of each dataset family's clock (the exchange's for trades, the city's for taxis, the
host country's for the 1998 World Cup logs, which are recorded in GMT)."""
CUSTOM = "Custom"


@dataclass(frozen=True)
class Preset:
    """A named query: weights by feature name (missing ones weigh 0) and typed window/slide.

    ``window`` and ``slide`` are what the user would type (``"30 min"``, ``"10,000"``).
    """

    name: str
    weights: dict[str, float]
    k: int
    window: str
    slide: str
    kind: str = "count"
    note: str = ""

    def weight_vector(self, features: Sequence[str]) -> list[float]:
        return [float(self.weights.get(f, 0.0)) for f in features]


@dataclass(frozen=True)
class Profile:
    """How one dataset is shown: its clock, time zone, presets and per-kind defaults."""

    name: str
    family: str
    features: tuple[str, ...]
    t_unit: str
    tz: str | None
    presets: tuple[Preset, ...] = field(default_factory=tuple)

    @property
    def timed(self) -> bool:
        """Whether ``t`` is a real clock (epoch ms), shown as date-times."""
        return self.t_unit in units.MS_PER

    def defaults(self, kind: str) -> tuple[str, str]:
        """Typed ``(window, slide)`` that suit this dataset for a window kind.

        >>> stock = profile("spy", "stock", ("notional", "price", "size"), "ms")
        >>> stock.defaults("time"), stock.defaults("count")
        (('30 min', '1 min'), ('10,000', '500'))
        """
        if kind == "time":
            if not self.timed:
                return ("1000", "50")
            return ("7 d", "1 d") if self.family == "taxi" else ("30 min", "1 min")  # taxis: a few trips an hour
        return ("10,000", "500") if self.family == "stock" else ("1,000", "50")

    def preset(self, name: str) -> Preset | None:
        return next((p for p in self.presets if p.name == name), None)

    @property
    def default_preset(self) -> Preset:
        return self.presets[0]


FEATURE_UNITS = {
    "stock": {"notional": "$", "price": "$", "size": "shares"},
    "taxi": {"duration": "s", "distance": "miles", "speed": "mph", "fare": "$", "tip": "$"},
}
"""Unit of each feature per dataset family (``pipelines/stock.py``, ``pipelines/taxi.py``)."""
STREAM_UNIT = {"worldcup": "× largest chunk"}
"""Attribute streams: the unit of a value (World Cup: a chunk's bytes over the largest chunk's)."""


def configs(folder: Path = CONFIGS) -> list[dict]:
    """The replay configs, ``demo.json`` first (unreadable ones left out), each with its ``_file`` name.

    Read as the replay reads them: UTF-8, a byte order mark allowed, ``name`` the file's stem
    when not given."""
    found = []
    for path in sorted(folder.glob("*.json"), key=lambda p: (p.name != "demo.json", p.name)):
        try:
            config = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        if isinstance(config, dict):
            found.append({"name": path.stem, **config, "_file": path.name})
    return found


def demo(folder: Path = CONFIGS) -> dict:
    """The config ``make run`` replays first (``demo.json``: name, dataset, queries, algorithms).

    >>> demo()["dataset"], [a["name"] for a in demo()["algorithms"]]
    ('spy', ['oracle', 'mintopk', 'sap', 'sao'])
    """
    return next((c for c in configs(folder) if c.get("name") == "demo"), {})


def replayed_queries(dataset: str, folder: Path = CONFIGS) -> list[dict]:
    """The queries the replay configs run over ``dataset`` (``demo.json`` first), each with its config's ``_file``.

    >>> [q["_file"] for q in replayed_queries("worldcup")]
    ['worldcup.json', 'worldcup.json']
    """
    return [{**q, "_file": config["_file"]} for config in configs(folder) if config.get("dataset") == dataset
            for q in config.get("queries", []) if isinstance(q, dict)]


def replayed_algorithms(dataset: str, folder: Path = CONFIGS) -> dict[str, dict]:
    """Algorithm -> parameters that ``make run`` replays over ``dataset`` (first config that has it).

    >>> replayed_algorithms("spy")["sao"]
    {'memory': 500}
    """
    for config in configs(folder):
        if config.get("dataset") == dataset:
            return {a["name"]: dict(a.get("params") or {}) for a in config.get("algorithms", [])
                    if isinstance(a, dict) and isinstance(a.get("name"), str)}
    return {}


def score_unit(family: str, weights: dict[str, float]) -> tuple[str, str]:
    """``(unit, axis title)`` of a score ``Σ weight × feature`` on a dataset family.

    The unit is the features' own when every weighed feature has the same one; a mix gets no
    unit and a title that names each feature's.

    >>> score_unit("taxi", {"speed": 1.0, "tip": 0.0})
    ('mph', 'score (mph)')
    >>> score_unit("stock", {"notional": 1.0, "size": -0.5})
    ('', 'score (mixed units: notional in $, size in shares)')
    >>> score_unit("synthetic", {"x_0": 1.0})
    ('', 'score (no unit: synthetic features)')
    """
    if family in STREAM_UNIT:
        return STREAM_UNIT[family], f"score (sum of values, {STREAM_UNIT[family]}'s bytes)"
    known = FEATURE_UNITS.get(family)
    used = [f for f, w in weights.items() if w]
    if not known or not used or any(f not in known for f in used):
        return "", "score (no unit: synthetic features)" if family == "synthetic" else "score"
    found = {known[f] for f in used}
    if len(found) == 1:
        unit = found.pop()
        return unit, f"score ({unit})"
    return "", "score (mixed units: " + ", ".join(f"{f} in {known[f]}" for f in used) + ")"


def objects_word(family: str) -> str:
    """What the objects of a dataset family are called in labels (``trades``, ``trips``, ...)."""
    return {"stock": "trades", "taxi": "trips", "worldcup": "tuples"}.get(family, "objects")


def describe_weights(weights: dict[str, float]) -> str:
    """``{"notional": 1}`` as ``largest notional``; a mix as ``notional − 0.5·size``.

    >>> describe_weights({"notional": 1.0, "price": 0.0}), describe_weights({"notional": 1.0, "size": -0.5})
    ('largest notional', 'notional − 0.5·size')
    """
    used = {f: w for f, w in weights.items() if w}
    if len(used) == 1:
        (feature, weight), = used.items()
        return f"{'largest' if weight > 0 else 'smallest'} {feature}"
    text = ""
    for feature, weight in used.items():
        term = feature if abs(weight) == 1 else f"{abs(weight):g}·{feature}"
        text += (" − " if weight < 0 else " + ") + term if text else ("−" if weight < 0 else "") + term
    return text or "all weights 0"


def profile(name: str, family: str, features: Sequence[str], t_unit: str) -> Profile:
    """The profile of a dataset, with its presets (the ``make run`` query first when it has one)."""
    features = tuple(features)
    presets: list[Preset] = []
    things = objects_word(family)
    for replayed in replayed_queries(name):
        try:
            weights = replayed["weights"]
            if isinstance(weights, list):
                weights = dict(zip(features, weights))
            kind = replayed.get("kind", "count")
            window, slide, k = int(replayed["window"]), int(replayed["slide"]), int(replayed["k"])
        except (KeyError, TypeError, ValueError):
            continue
        fmt = (lambda v: units.format_count(v)) if kind == "count" else (lambda v: units.format_duration(v, t_unit))
        span = f"last {fmt(window)} {things}" if kind == "count" else f"last {fmt(window)}"
        by_make_run = replayed.get("_file") in MAKE_RUN_CONFIGS
        source = "make run" if by_make_run else f"pipelines/configs/{replayed.get('_file')}"
        presets.append(Preset(f"{describe_weights(weights)}, {span} ({source})", weights, k, fmt(window), fmt(slide),
                              kind, note="the query `make run` replays" if by_make_run else
                              f"a query of `{source}` (run by hand: `python -m pipelines.replay --config {source}`)"))
    if family == "stock" and {"notional", "size", "price"} <= set(features):
        presets += [
            Preset("largest notional, last 30 min", {"notional": 1.0}, 10, "30 min", "1 min", "time"),
            Preset("largest trades by size, last 10,000 trades", {"size": 1.0}, 10, "10,000", "500", "count"),
            Preset("highest price, last 5 min", {"price": 1.0}, 10, "5 min", "10 s", "time"),
            Preset("lowest price, last 5 min", {"price": -1.0}, 10, "5 min", "10 s", "time"),
        ]
    elif family == "taxi" and {"fare", "tip", "distance"} <= set(features):
        presets += [
            Preset("largest tips, last 7 days", {"tip": 1.0}, 10, "7 d", "1 d", "time"),
            Preset("longest trips, last 1,000 trips", {"distance": 1.0}, 10, "1,000", "100", "count"),
            Preset("highest fares, last 30 days", {"fare": 1.0}, 10, "30 d", "1 d", "time"),
        ]
    elif family == "worldcup":
        presets += [
            Preset("most bytes over every section, last 30 min", {f: 1.0 for f in features}, 10, "30 min", "1 min",
                   "time"),
            Preset("most bytes over every section, last 10,000 tuples", {f: 1.0 for f in features}, 10, "10,000",
                   "500", "count"),
        ] + ([Preset("most image bytes, last 30 min", {"images": 1.0}, 10, "30 min", "1 min", "time")]
             if "images" in features else [])
    elif features:
        presets += [
            Preset("sum of all features, last 1,000 objects", {f: 1.0 for f in features}, 10, "1,000", "50"),
            Preset(f"largest {features[0]}, last 1,000 objects", {features[0]: 1.0}, 10, "1,000", "50"),
        ]
    unique = {p.name: p for p in presets}
    return Profile(name, family, features, t_unit, TIME_ZONES.get(family), tuple(unique.values()))
