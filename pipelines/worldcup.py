"""The ``worldcup`` trace family: 1998 World Cup web site access logs -> an attribute stream.

Input: headerless CSV lines ``client_id,dd/Mon/yyyy,HH:MM:SS,url,status,size`` (times in
GMT; ``size`` may be ``-`` for a response without body, counted as 0 bytes; a URL may hold
commas, so the URL is everything between the third field and the last two), plain or in a
``.tar.bz2`` archive whose only other members are notices.

Mapping (the incomplete-streams paper, Section 6.1.1, with site sections in place of the
servers, which this sample lacks):

- **stream** = site section, the first segment of the URL path. Each name in
  ``params["sections"]`` (default :data:`DEFAULT_SECTIONS`: ``images``, ``english``,
  ``french``, 98% of the sample's requests) is one stream, numbered in that order; every
  other request (the home page, ``cgi-bin``, ``robots.txt``, rare language folders, ...) goes
  to a last stream ``other``.
- **object** = client: ``id`` is the log's client id.
- **chunk**: the requests of one client to one section are pre-aggregated per chunk of
  ``delta_t_ms`` (default 5,000 ms, the paper's delta_t): one tuple per (section, chunk, client)
  at ``t`` = the chunk's start (UTC epoch milliseconds). A client active in several chunks of
  a section has several occurrences in that stream (the engine adds them up; paper Section 5).
- **value** = the bytes of the chunk divided by ``params["bytes_scale"]``, the largest chunk's
  bytes at the first ingest, so values lie in ``[0, 1]`` and a weight-1 sum ranks clients by
  bytes downloaded. An ``--append`` keeps the dataset's scale and clips larger chunks to 1.

Dataset rows: ``id, seq, t, stream, value`` (``seq`` by ``t``, then stream, then client),
partitioned by the UTC ``date`` of ``t``; ``datasets.features`` lists the stream names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .cleaned import Cleaned, Raw, judged_once
from .errors import InputError
from .ordering import with_seq
from .rawfiles import lines_table, read_lines

KIND = "attribute"
T_UNIT = "ms"
PARTITION_BY = ("date",)
DEFAULT_SECTIONS = ("images", "english", "french")
OTHER_SECTION = "other"
DEFAULT_DELTA_T_MS = 5_000
TIME_FORMAT = "dd/MMM/yyyy HH:mm:ss"
MIN_FIELDS = 6

REASONS = (
    "wrong_field_count",
    "bad_client",
    "bad_time",
    "bad_size",
    "before_dataset_end",
)
"""Why a request is rejected, in the order the checks apply: fewer than 6 fields; a client id
that is not a non-negative integer; a date and time that do not parse; a size neither ``-``
nor a non-negative integer; (``--append``) a request before the end of the dataset's last chunk."""


def default_name(paths: Sequence[Path], options: dict[str, Any] | None = None) -> str:
    return "worldcup"


def merged_as(params: dict[str, Any]) -> str:
    """How accepted requests become fewer tuples, for the ingest's log (``N merged <this>``).

    >>> merged_as({"delta_t_ms": 5000})
    'into one tuple per client, section and 5 s chunk'
    """
    return f"into one tuple per client, section and {int(params['delta_t_ms']) / 1000:g} s chunk"


def settings(options: dict[str, Any] | None, existing: dict[str, Any] | None) -> dict[str, Any]:
    """The mapping's parameters: those of the dataset appended to, else the options, else defaults.

    >>> settings({"sections": "images,english", "delta_t_ms": 1000}, None)
    {'sections': ['images', 'english'], 'delta_t_ms': 1000}
    """
    if existing:
        return {key: existing[key] for key in ("sections", "delta_t_ms", "bytes_scale")}
    options = options or {}
    sections = options.get("sections") or DEFAULT_SECTIONS
    if isinstance(sections, str):
        sections = [name.strip() for name in sections.split(",") if name.strip()]
    sections = list(sections)
    if not sections or OTHER_SECTION in sections or len(set(sections)) != len(sections):
        raise InputError(f"--sections must name distinct site sections other than {OTHER_SECTION!r}, "
                         f"got {','.join(sections)!r}")
    delta_t_ms = DEFAULT_DELTA_T_MS if options.get("delta_t_ms") is None else int(options["delta_t_ms"])
    if delta_t_ms <= 0:
        raise InputError(f"--delta-t-ms must be positive, got {delta_t_ms}")
    return {"sections": sections, "delta_t_ms": delta_t_ms}


def extract(paths: Sequence[Path], options: dict[str, Any] | None = None,
            existing: dict[str, Any] | None = None) -> Raw:
    """Read access-log lines (latin-1: URLs hold raw bytes) and fix the mapping's parameters.

    Returns
    -------
    Raw
        ``table``: ``source_index``, ``source_file``, ``line``, ``raw``; ``params``:
        ``sections`` and ``delta_t_ms`` (and ``bytes_scale`` when appending); ``features``:
        the stream names, the sections then ``other``.
    """
    params = settings(options, existing)
    table = lines_table(paths, [read_lines(path, encoding="latin-1") for path in paths])
    return Raw(table=table, params=params, features=(*params["sections"], OTHER_SECTION))


def transform(raw: DataFrame, *, seq_start: int = 0, t_after: int | None = None,
              params: dict[str, Any] | None = None) -> Cleaned:
    """Validate requests, pre-aggregate bytes per (section, chunk, client) and order the tuples (no I/O).

    Returns
    -------
    Cleaned
        ``rows``: ``id`` (client), ``seq``, ``t`` (chunk start, UTC epoch ms), ``stream``
        (section number), ``value`` (bytes / scale, in ``[0, 1]``), partition column ``date``;
        ``rejected``: every request rejected, with the first reason of :data:`REASONS`;
        ``learned``: ``bytes_scale`` (the scale used).
    """
    params = params or settings(None, None)
    sections, delta_t_ms = params["sections"], int(params["delta_t_ms"])
    fields = F.split("raw", ",", -1)
    count = F.size(fields)
    client_text, size_text = fields.getItem(0), F.element_at(fields, -1)
    url = F.array_join(F.slice(fields, 4, F.greatest(count - 5, F.lit(1))), ",")
    section = F.regexp_extract(url, r"^/?([^/?]*)", 1)
    stream = F.lit(len(sections))
    for index, name in reversed(list(enumerate(sections))):
        stream = F.when(section == name, F.lit(index)).otherwise(stream)
    parsed = raw.select(
        "source_index", "source_file", "line", "raw", count.alias("field_count"),
        F.when(client_text.rlike(r"^\d{1,18}$"), client_text.cast("long")).alias("client"),
        F.unix_millis(F.try_to_timestamp(F.concat_ws(" ", F.get(fields, 1), F.get(fields, 2)),
                                         F.lit(TIME_FORMAT))).alias("request_ms"),
        F.when(size_text == "-", F.lit(0.0))
         .when(size_text.rlike(r"^\d{1,15}$"), size_text.cast("double")).alias("bytes"),
        stream.alias("stream"),
    )
    chunk_start = F.floor(F.col("request_ms") / delta_t_ms).cast("long") * delta_t_ms
    checks = [
        ("wrong_field_count", F.col("field_count") < MIN_FIELDS),
        ("bad_client", F.col("client").isNull()),
        ("bad_time", F.col("request_ms").isNull()),
        ("bad_size", F.col("bytes").isNull()),
        ("before_dataset_end", F.lit(False) if t_after is None else chunk_start <= F.lit(t_after)),
    ]
    reason = F.lit(None).cast("string")
    for name, failed in reversed(checks):
        reason = F.when(failed, F.lit(name)).otherwise(reason)
    judged = judged_once(parsed.withColumn("reason", reason))

    chunks = (judged.where(F.col("reason").isNull())
              .groupBy(chunk_start.alias("t"), F.col("stream"), F.col("client").alias("id"))
              .agg(F.sum("bytes").alias("bytes")))
    if params.get("bytes_scale"):
        scale = chunks.sparkSession.range(1).select(F.lit(float(params["bytes_scale"])).alias("bytes_scale"))
    else:
        scale = chunks.agg(F.greatest(F.max("bytes"), F.lit(1.0)).alias("bytes_scale"))
    scaled = chunks.crossJoin(F.broadcast(scale))
    rows = with_seq(scaled, ["t", "stream", "id"], seq_start).select(
        "id",
        "seq",
        "t",
        F.col("stream").cast("long").alias("stream"),
        F.least(F.col("bytes") / F.col("bytes_scale"), F.lit(1.0)).alias("value"),
        F.date_format(F.timestamp_millis("t"), "yyyy-MM-dd").alias("date"),
    )
    rejected = judged.where(F.col("reason").isNotNull()).select("source_file", "line", "reason", "raw")
    return Cleaned(rows=rows, rejected=rejected, learned=scale)
