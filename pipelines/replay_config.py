"""The replay config: which dataset, which queries, which algorithms, how many shards.

A config is a JSON object::

    {
      "name": "demo",                 # optional: run name, default the file's stem
      "dataset": "spy",               # a dataset recorded by pipelines.ingest
      "shards": 1,                    # optional: C; object streams shard by seq % C,
                                      # attribute streams by a hash of the object id % C
      "snapshot_every": 100,          # optional: slides per segment (loaded into DuckDB and
                                      # snapshotted together; default about SEGMENT_ROWS rows)
      "keep_snapshots": 2,            # optional: complete snapshots kept per task (default 2)
      "plugins": ["my_algorithms"],   # optional: modules that register more algorithms
                                      # (importable on the driver and every executor)
      "queries": [{"weights": {"notional": 1.0}, "k": 10, "window": 10000, "slide": 500,
                   "kind": "count"}],
      "algorithms": [{"name": "oracle"}, {"name": "mintopk", "params": {"prefilter": true}},
                     {"name": "multi"}]
    }

``weights`` is a list (one per dataset feature) or a mapping feature -> weight (missing
features, or streams of an attribute-stream dataset, weigh 0). An algorithm entry may carry a
``label`` (its name in the results; by default the name, plus the parameters when there are
any). The exact answer every metric is measured against comes from ``oracle`` (object
streams) or ``oracle-incomplete`` (attribute streams), added when the config does not list it.
The algorithm ``multi`` (:data:`SHARED`, no ``params``) is the shared executor
(:class:`engine.multi.SharedTopK`): the config's queries are grouped by weights and each group
runs as one task per shard (:mod:`pipelines.replay_multi`), its answers stored per query under
the label ``multi`` like any algorithm's.  Object streams only.
Refused before Spark starts, besides malformed fields: a count window smaller than ``k``,
algorithms of the other stream model than the dataset's, ``approx`` with ``shards > 1`` (its
estimates need every object of the window), more than :data:`MAX_SHARDS` shards, and a ``name``
that is not one plain file name (:data:`RUN_NAME`). Weights that are all 0 are a query like any
other, as in the engine: every object scores 0 and each answer is the window's ``k`` newest
objects (equal scores rank the newer object first).
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import engine
from engine import Query
from engine.jsondata import DuplicateKey, unique_keys
from engine.multi import SharedTopK

from .errors import InputError

REFERENCES = {"single": "oracle", "incomplete": "oracle-incomplete"}
"""The exact algorithm every other is measured against, by stream model."""
SHARED = "multi"
"""The algorithm name that runs the config's queries through the shared executor, one task per
(weights group, shard)."""
SEGMENT_ROWS = 1_000_000
"""Rows per segment when ``snapshot_every`` is not given."""
KEEP_SNAPSHOTS = 2
CONFIG_KEYS = {"name", "dataset", "shards", "snapshot_every", "keep_snapshots", "plugins",
               "queries", "algorithms"}
QUERY_KEYS = {"weights", "k", "window", "slide", "kind"}
ALGORITHM_KEYS = {"name", "params", "label"}
INT64_MAX = 2**63 - 1
"""``window`` and ``slide`` are stored as DuckDB ``BIGINT`` and cut slides over int64 ``seq`` / ``t``."""
INT32_MAX = 2**31 - 1
"""``k`` is stored as DuckDB ``INTEGER`` (``queries.k``), and so is the rank of an answer (``answers.rank``)."""
MAX_SHARDS = 1024
"""More shards than this is a typo, not a plan: every shard is one task per (query, algorithm)."""
RUN_NAME = re.compile(r"\w[\w.,:;@+=()\[\] -]*")
"""A run name (the config's ``name``, a ``--run-id``): it names the run's staging and failure
files under the database's directory, so it is one path component, never ``..`` or absolute."""
RUN_NAME_BYTES = 200
"""Longest run name in UTF-8 bytes: with the run's time stamp and ``.txt`` it stays a file name (255 bytes)."""


@dataclass(frozen=True)
class AlgorithmSpec:
    """One algorithm of a run: ``label`` names it in DuckDB, ``name`` and ``params`` create it."""

    label: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "params": dict(self.params)}


@dataclass(frozen=True)
class ReplayConfig:
    """A validated config, with weights resolved against the dataset's features."""

    name: str
    dataset: str
    queries: tuple[Query, ...]
    algorithms: tuple[AlgorithmSpec, ...]
    shards: int = 1
    snapshot_every: int | None = None
    """Slides per segment (snapshot and DuckDB transaction); ``None``: about :data:`SEGMENT_ROWS` rows."""
    keep_snapshots: int = KEEP_SNAPSHOTS
    plugins: tuple[str, ...] = ()
    stream: str = "single"
    """The dataset's stream model: ``single`` (object stream) or ``incomplete`` (attribute streams)."""

    @property
    def reference(self) -> str:
        """Label of the algorithm whose answers are exact (the oracle of the stream model)."""
        return next(spec.label for spec in self.algorithms if spec.name == REFERENCES[self.stream])

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as stored in ``runs.config``."""
        return {"name": self.name, "dataset": self.dataset, "shards": self.shards,
                "snapshot_every": self.snapshot_every, "keep_snapshots": self.keep_snapshots,
                "plugins": list(self.plugins), "stream": self.stream,
                "reference": self.reference,
                "queries": [query.to_dict() for query in self.queries],
                "algorithms": [spec.to_dict() for spec in self.algorithms]}

    def same_work(self, stored: dict[str, Any]) -> bool:
        """Whether a stored run config replays the same queries and algorithms the same way."""
        mine = self.to_dict()
        return all(stored.get(key) == mine[key] for key in ("dataset", "shards", "queries", "algorithms"))


def read_config(path: Path) -> dict[str, Any]:
    """The raw JSON object of a config file, with ``name`` defaulting to the file's stem.

    A key given twice in one object is refused (``json`` keeps the last one silently), as
    ``run-many`` refuses it in its queries file, and so is nesting too deep to read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"), object_pairs_hook=unique_keys)
    except DuplicateKey as error:
        raise InputError(f"{path}: key {error.args[0]!r} appears twice in one object; which one to use is not "
                         "clear, give it once") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read the config ({error})") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    except RecursionError:
        raise InputError(f"{path}: lists or objects nested too deeply to read") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: the config must be a JSON object")
    data.setdefault("name", Path(path).stem)
    if not isinstance(data["name"], str):
        raise InputError(f"{path}: 'name' must be a string, got {data['name']!r}")
    if not isinstance(data.get("dataset"), str):
        raise InputError(f"{path}: 'dataset' must name a dataset")
    return data


def parse_config(data: dict[str, Any], features: Sequence[str], stream: str = "single") -> ReplayConfig:
    """Validate a raw config against the dataset's ``features`` (stream names of an attribute-stream
    dataset) and stream model; problems raise :class:`InputError`."""
    _check_keys(data, CONFIG_KEYS, "top level")
    check_run_name(str(data["name"]), "config: name")
    shards = _positive_int(data, "shards", 1)
    if shards > MAX_SHARDS:
        raise InputError(f"config: shards must be at most {MAX_SHARDS:,} (one task per query, algorithm and shard), "
                         f"got {shards:,}")
    snapshot_every = _positive_int(data, "snapshot_every", None)
    keep_snapshots = _positive_int(data, "keep_snapshots", KEEP_SNAPSHOTS)
    plugins = data.get("plugins", [])
    if not isinstance(plugins, list) or not all(isinstance(name, str) for name in plugins):
        raise InputError("config: 'plugins' must be a list of module names")
    for name in plugins:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - a plugin's own failure (SyntaxError, ...) is the config's problem
            raise InputError(f"config: plugin {name!r} cannot be imported ({type(error).__name__}: {error})") from None
    queries = data.get("queries")
    if not isinstance(queries, list) or not queries:
        raise InputError("config: 'queries' must be a non-empty list")
    parsed_queries = tuple(_parse_query(i, query, features) for i, query in enumerate(queries))
    algorithms = data.get("algorithms")
    if not isinstance(algorithms, list) or not algorithms:
        raise InputError("config: 'algorithms' must be a non-empty list")
    specs = [_parse_algorithm(i, entry, parsed_queries, stream) for i, entry in enumerate(algorithms)]
    if shards > 1 and any(spec.name == "approx" for spec in specs):
        raise InputError("config: approx cannot run on shards > 1: its best scores come from the window's "
                         "appearance statistics over every object, and a shard sees only the objects hashed "
                         "to it, so sharded answers would differ from one shard's; set shards to 1")
    reference = REFERENCES[stream]
    if not any(spec.name == reference for spec in specs):
        if reference not in {info.name for info in engine.available()}:
            raise InputError(f"config: the reference algorithm {reference} is not registered in the engine")
        specs.append(AlgorithmSpec(label=reference, name=reference))
    labels = [spec.label for spec in specs]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise InputError(f"config: algorithm labels must be unique, repeated: {', '.join(repeated)}")
    return ReplayConfig(name=str(data["name"]), dataset=data["dataset"], queries=parsed_queries,
                        algorithms=tuple(specs), shards=shards, snapshot_every=snapshot_every,
                        keep_snapshots=keep_snapshots, plugins=tuple(plugins),
                        stream=stream)


def _parse_query(index: int, query: Any, features: Sequence[str]) -> Query:
    if not isinstance(query, dict):
        raise InputError(f"config: query {index} must be an object")
    _check_keys(query, QUERY_KEYS, f"query {index}")
    weights = query.get("weights")
    if isinstance(weights, dict):
        unknown = sorted(set(weights) - set(features))
        if unknown:
            raise InputError(f"config: query {index}: unknown feature(s) {', '.join(unknown)}; "
                             f"the dataset has {', '.join(features)}")
        weights = [weights.get(feature, 0.0) for feature in features]
    elif isinstance(weights, list) and len(weights) != len(features):
        raise InputError(f"config: query {index}: {len(weights)} weight(s) for {len(features)} "
                         f"feature(s) ({', '.join(features)})")
    if isinstance(weights, list) and any(isinstance(w, bool) or not isinstance(w, (int, float)) for w in weights):
        raise InputError(f"config: query {index}: weights must be numbers, got {weights!r}")
    for key, limit, kind in (("k", INT32_MAX, "32"), ("window", INT64_MAX, "64"), ("slide", INT64_MAX, "64")):
        value = query.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > limit:
            raise InputError(f"config: query {index}: {key} must be at most {limit:,} (a {kind}-bit integer), "
                             f"got {value:,}")
    try:
        parsed = Query(weights=weights, k=query.get("k"), window=query.get("window"),
                       slide=query.get("slide"), kind=query.get("kind", "count"))
    except ValueError as error:
        raise InputError(f"config: query {index}: {error}") from None
    if parsed.kind == "count" and parsed.k > parsed.window:
        raise InputError(f"config: query {index}: k ({parsed.k}) is larger than the count window "
                         f"({parsed.window}); no answer could hold k objects")
    return parsed


def _parse_algorithm(index: int, entry: Any, queries: Sequence[Query], stream: str) -> AlgorithmSpec:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise InputError(f"config: algorithm {index} must be an object with a 'name'")
    _check_keys(entry, ALGORITHM_KEYS, f"algorithm {index}")
    name, params = entry["name"], entry.get("params") or {}
    if not isinstance(params, dict):
        raise InputError(f"config: algorithm {index} ({name}): 'params' must be an object")
    if name == SHARED:
        return _parse_shared(index, entry, queries, stream)
    try:
        for query in queries:
            engine.create(name, query, **params)
    except ValueError as error:
        raise InputError(f"config: algorithm {index} ({name}): {error}") from None
    info = next(info for info in engine.available() if info.name == name)
    if info.stream != stream:
        kind = "attribute streams (id, stream, value, t)" if stream == "incomplete" else "object streams"
        raise InputError(f"config: algorithm {index} ({name}) reads {info.stream} streams, but the dataset "
                         f"holds {kind}")
    label = _label(index, name, entry) or (name if not params else
                                           f"{name}({','.join(f'{key}={params[key]}' for key in sorted(params))})")
    return AlgorithmSpec(label=label, name=name, params=dict(params))


def _parse_shared(index: int, entry: dict, queries: Sequence[Query], stream: str) -> AlgorithmSpec:
    """The shared executor's entry: no parameters, object streams, a workload it accepts."""
    if entry.get("params"):
        raise InputError(f"config: algorithm {index} ({SHARED}): the shared executor takes no params")
    if stream != "single":
        raise InputError(f"config: algorithm {index} ({SHARED}) reads single streams, but the dataset holds "
                         "attribute streams (id, stream, value, t)")
    try:
        SharedTopK(queries)
    except ValueError as error:
        raise InputError(f"config: algorithm {index} ({SHARED}): {error}") from None
    return AlgorithmSpec(label=_label(index, SHARED, entry) or SHARED, name=SHARED)


def _label(index: int, name: str, entry: dict) -> str | None:
    """The entry's ``label`` (``None`` or ``""``: the default); a label that is not text is
    refused (``5`` was stored as ``"5"``, ``false`` or ``0`` silently became the default)."""
    label = entry.get("label")
    if label is not None and not isinstance(label, str):
        raise InputError(f"config: algorithm {index} ({name}): label must be text, got {json.dumps(label)}")
    return label


def check_run_name(name: str, where: str) -> None:
    """Refuse a run name that is not :data:`RUN_NAME` (it would not name one file under the
    database's directory: ``..``, ``/``, an absolute path, a hidden name)."""
    if not RUN_NAME.fullmatch(name) or len(name.encode()) > RUN_NAME_BYTES:
        raise InputError(f"{where} {name!r}: use letters, digits, spaces and _ . , : ; @ + = ( ) [ ] -, starting "
                         f"with a letter, digit or _, at most {RUN_NAME_BYTES} bytes (it names the run's files)")


def _positive_int(data: dict, key: str, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is not default and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InputError(f"config: {key} must be an integer >= 1, got {value!r}")
    if value is not None and value > INT64_MAX:
        raise InputError(f"config: {key} must be at most {INT64_MAX:,} (a 64-bit integer), got {value:,}")
    return value


def _check_keys(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InputError(f"config: {where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(sorted(allowed))}")
