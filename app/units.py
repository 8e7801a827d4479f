"""Reading and writing the quantities a user types or reads: durations, counts, times, bytes.

Pure functions, no Streamlit. Durations are kept in the trace's time unit (``"ms"`` for the
stock traces, ``"ordinal"`` for a unitless clock); what the user types is parsed back to it.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import numpy as np

MS_PER = {"ms": 1, "s": 1_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
"""Milliseconds per duration unit, largest last."""

UNIT_NAMES = {"ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
              "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
              "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
              "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
              "d": "d", "day": "d", "days": "d"}
COUNT_SUFFIX = {"": 1, "k": 1_000, "m": 1_000_000}
MAX_LENGTH = 10**12
"""Longest window or slide that can be typed (objects or time units: 31 years of ms): longer
than any trace, and the page searches the window's divisors (``O(sqrt n)``) to suggest slides."""
MAX_SLIDES_PER_WINDOW = 100_000
"""Most slides a window may span (``C_nw = n / s``). The algorithms keep state per window an
object belongs to (MinTopK a counter per window, PreTopK a heap per window) and a new view
replays one window of slides: a slide typed in the wrong unit (``1`` ms for a ``7 d`` window,
604,800,000 windows) would take the server's memory and time."""
_NUMBER = r"([0-9][0-9_,]*(?:\.[0-9]+)?|\.[0-9]+)"


def parse_count(text: str, what: str = "value", examples: str = "10000 or 10k") -> int:
    """A positive whole number typed as ``10000``, ``10,000`` or ``10k``.

    Raises ``ValueError`` with a message meant for the user, suggesting ``examples``.

    Examples
    --------
    >>> parse_count("10,000"), parse_count("2.5k"), parse_count(" 7 ")
    (10000, 2500, 7)
    >>> parse_count("ten", "window")
    Traceback (most recent call last):
    ...
    ValueError: window: "ten" is not a number of objects (try 10000 or 10k)
    >>> parse_count("-5", "slide")
    Traceback (most recent call last):
    ...
    ValueError: slide must be positive, got -5
    """
    match = re.fullmatch(_NUMBER + r"\s*([kKmM]?)", text.strip())
    if not match:
        refuse_negative(text, what)
        raise ValueError(f'{what}: "{text.strip()}" is not a number of objects (try {examples})')
    value = float(match.group(1).replace(",", "").replace("_", "")) * COUNT_SUFFIX[match.group(2).lower()]
    if value > MAX_LENGTH:  # before the whole-number test: a number too long for a float reads as inf
        raise ValueError(f"{what} must be at most {MAX_LENGTH:,} objects, got {shorten(text.strip())}")
    if not value.is_integer() or value < 1:
        raise ValueError(f"{what} must be a whole number >= 1, got {shorten(text.strip())}")
    return int(value)


def parse_duration(text: str, t_unit: str, what: str = "value", examples: str | None = None) -> int:
    """A duration typed as ``30 min``, ``1 h``, ``500 ms`` or ``1.5 s``, in ``t_unit``.

    A bare number is taken in ``t_unit`` itself. A clock without a unit (``"ordinal"``)
    takes bare numbers only. Messages suggest ``examples`` (default: :func:`example_durations`).

    Examples
    --------
    >>> parse_duration("30 min", "ms"), parse_duration("1h", "ms"), parse_duration("500 ms", "ms")
    (1800000, 3600000, 500)
    >>> parse_duration("250", "ordinal")
    250
    >>> parse_duration("0.5 ms", "ms", "slide")
    Traceback (most recent call last):
    ...
    ValueError: slide must be a whole number of ms >= 1, got 0.5 ms
    """
    clean = text.strip()
    examples = examples or example_durations(t_unit)
    match = re.fullmatch(_NUMBER + r"\s*([a-zA-Z]*)", clean)
    if not match:
        refuse_negative(clean, what)
        raise ValueError(f'{what}: "{clean}" is not a duration (try {examples})')
    number = float(match.group(1).replace(",", "").replace("_", ""))
    unit = match.group(2).lower()
    if not unit:
        value = number
    elif t_unit in MS_PER and unit in UNIT_NAMES:
        value = number * MS_PER[UNIT_NAMES[unit]] / MS_PER[t_unit]
    else:
        raise ValueError(f'{what}: unknown unit "{match.group(2)}" (try {examples})')
    if value > MAX_LENGTH:
        raise ValueError(f"{what} must be at most {MAX_LENGTH:,} {unit_label(t_unit)}, got {shorten(clean)}")
    if not value.is_integer() or value < 1:
        raise ValueError(f"{what} must be a whole number of {unit_label(t_unit)} >= 1, got {shorten(clean)}")
    return int(value)


def refuse_negative(text: str, what: str) -> None:
    """``ValueError`` saying ``what`` must be positive when ``text`` is a number with a minus sign."""
    if re.fullmatch(r"-\s*" + _NUMBER + r"\s*[a-zA-Z]*", text.strip()):
        raise ValueError(f"{what} must be positive, got {shorten(text.strip())}")


def slides_per_window_problem(window: int, slide: int) -> str | None:
    """Why ``window`` may not span that many slides of ``slide`` (more than
    :data:`MAX_SLIDES_PER_WINDOW`), a message for the user; ``None`` when it may.

    >>> slides_per_window_problem(604_800_000, 1)
    'the window spans 604,800,000 slides, more than the 100,000 allowed: choose a longer slide'
    >>> slides_per_window_problem(604_800_000, 86_400_000) is None
    True
    """
    if window // slide <= MAX_SLIDES_PER_WINDOW:
        return None
    return (f"the window spans {window // slide:,} slides, more than the {MAX_SLIDES_PER_WINDOW:,} allowed: "
            "choose a longer slide")


def example_durations(t_unit: str) -> str:
    """How to type a duration on this clock, for messages."""
    return "30 min, 1 h, 500 ms" if t_unit in MS_PER else "a whole number such as 500"


def unit_label(t_unit: str) -> str:
    """The clock's unit in words (``"ms"`` or ``"time units"``)."""
    return t_unit if t_unit in MS_PER else "time units"


SHOWN_CHARACTERS = 40
"""Most characters of a typed or linked value repeated in a message."""
LINK_NUMBER_MAX = 10**18
"""Largest number :func:`link_number` gives back: every count a link holds (k, a slide, a row) is
checked against a far smaller bound, and Python refuses to read integers of more than 4,300 digits."""


def shorten(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` for a message: cut after ``limit`` characters, saying how long it was.

    >>> shorten("30 min"), shorten("9" * 5000, 8)
    ('30 min', '99999999… (5,000 characters)')
    """
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def link_number(text: str) -> int | None:
    """A whole number ``>= 0`` written in a link with the digits 0-9 only, else ``None``; one
    beyond :data:`LINK_NUMBER_MAX` (however many digits) reads as ``LINK_NUMBER_MAX + 1``.

    Python's ``int`` also reads ``١٢`` and ``１２`` (which no page writes into a link) and refuses
    more than 4,300 digits with a ``ValueError``.

    >>> link_number("12"), link_number("-1"), link_number("１２"), link_number("1e3"), link_number("9" * 5000) > 10**18
    (12, None, None, None, True)
    """
    text = str(text)
    if not (text.isascii() and text.isdecimal()):
        return None
    digits = text.lstrip("0")
    return LINK_NUMBER_MAX + 1 if len(digits) > len(str(LINK_NUMBER_MAX)) else min(int(text), LINK_NUMBER_MAX + 1)


def weights_text(weights) -> str:
    """Weights for a link, each as short as ``:g`` writes it when that reads back as the same
    float, else in full (``repr``): a link must give back the query it was made from.

    >>> weights_text([1.0, -0.0, 0.5, 0.123456789, 0.1 + 0.05])
    '1,-0,0.5,0.123456789,0.15000000000000002'
    """
    return ",".join(f"{w:g}" if float(f"{w:g}") == w else repr(float(w)) for w in weights)


def format_duration(value: int, t_unit: str) -> str:
    """``value`` (in ``t_unit``) in the largest unit that shows it exactly.

    Examples
    --------
    >>> format_duration(1_800_000, "ms"), format_duration(90_000, "ms"), format_duration(1500, "ms")
    ('30 min', '90 s', '1500 ms')
    >>> format_duration(250, "ordinal")
    '250'
    """
    if t_unit not in MS_PER:
        return f"{value:,}".replace(",", "")
    ms = value * MS_PER[t_unit]
    for unit in ("d", "h", "min", "s"):
        if ms % MS_PER[unit] == 0:
            return f"{ms // MS_PER[unit]} {unit}"
    return f"{ms} ms"


def format_count(value: int) -> str:
    """``10000`` as ``10,000``."""
    return f"{value:,}"


def format_bytes(value: float) -> str:
    """Bytes in B, KiB, MiB or GiB with three significant digits.

    Examples
    --------
    >>> format_bytes(512), format_bytes(4456), format_bytes(8_502_822)
    ('512 B', '4.35 KiB', '8.11 MiB')
    """
    if not math.isfinite(value):
        return "–"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def bytes_unit(largest: float) -> tuple[str, int]:
    """``(name, size)`` of the unit that suits values up to ``largest`` bytes on an axis."""
    if largest >= 4 << 20:
        return "MiB", 1 << 20
    return "KiB", 1 << 10


def tz_info(tz: str | None) -> ZoneInfo | timezone:
    """A time zone by name (``None`` = UTC)."""
    return ZoneInfo(tz) if tz else timezone.utc


def format_time(t: int | None, t_unit: str, tz: str | None) -> str:
    """An event time as a date-time in ``tz`` (epoch ``ms`` clocks) or as a plain number.

    Examples
    --------
    >>> format_time(1381148299950, "ms", "America/New_York")
    '2013-10-07 08:18:19.950 EDT'
    >>> format_time(1234, "ordinal", None)
    't = 1,234'
    """
    if t is None:
        return "–"
    if t_unit not in MS_PER:
        return f"t = {int(t):,}"
    moment = datetime.fromtimestamp(int(t) * MS_PER[t_unit] / 1000, tz=tz_info(tz))
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} {moment:%Z}"


def wall_clock_ms(t: np.ndarray, t_unit: str, tz: str | None) -> np.ndarray:
    """Epoch-ms numbers that show ``tz``'s wall-clock time when read as UTC (for Vega-Lite axes).

    Vega-Lite shows times in the browser's zone or in UTC; shifting by the zone's offset and
    plotting on a UTC scale shows the dataset's own local time everywhere.

    Examples
    --------
    >>> wall_clock_ms(np.array([1381148299950]), "ms", "America/New_York").tolist()
    [1381133899950]
    """
    ms = np.asarray(t, dtype=np.int64) * MS_PER.get(t_unit, 1)
    if len(ms) == 0:
        return ms
    zone = tz_info(tz)
    # The offset changes at most at daylight-saving switches: look it up at distinct hours only.
    hours = ms // 3_600_000
    unique, inverse = np.unique(hours, return_inverse=True)
    offsets = np.array([datetime.fromtimestamp(h * 3600, tz=zone).utcoffset().total_seconds() * 1000
                        for h in unique], dtype=np.int64)
    return ms + offsets[inverse]


def divisors(n: int) -> list[int]:
    """Every divisor of ``n`` in increasing order (``O(sqrt n)``).

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small, large = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    return small + large[::-1]


def nearest_slides(window: int, slide: int, granularity: int = 1) -> list[int]:
    """The divisors of ``window`` closest to ``slide`` (one below, one above when they exist).

    Divisors that are multiples of ``granularity`` (a whole minute, say) are preferred.

    >>> nearest_slides(1000, 7), nearest_slides(1000, 5000)
    ([5, 8], [1000])
    >>> nearest_slides(1_800_000, 420_000, 60_000)
    [360000, 600000]
    """
    found = [d for d in divisors(window) if d % granularity == 0] or divisors(window)
    below = [d for d in found if d <= slide]
    above = [d for d in found if d > slide]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])


def granularity(value: int, t_unit: str) -> int:
    """The largest of 1 min, 1 s, 1 unit that ``value`` (in ``t_unit``) reaches, in ``t_unit``.

    >>> granularity(420_000, "ms"), granularity(1500, "ms"), granularity(7, "ordinal")
    (60000, 1000, 1)
    """
    if t_unit not in MS_PER:
        return 1
    for unit in ("min", "s"):
        size = MS_PER[unit] // MS_PER[t_unit]
        if value >= size:
            return size
    return 1


def time_texts(t: np.ndarray, t_unit: str, tz: str | None, spans_days: bool) -> list[str]:
    """Event times as text for a table: the time of day, with the date when the data spans days.

    >>> time_texts(np.array([1381148299950]), "ms", "America/New_York", False)
    ['08:18:19.950']
    >>> time_texts(np.array([1381148299950]), "ms", "America/New_York", True)
    ['2013-10-07 08:18:19']
    """
    full = [format_time(int(v), t_unit, tz) for v in t]
    return [text[:19] if spans_days else text[11:23] for text in full]


def spans_days(t_first: int, t_last: int, t_unit: str) -> bool:
    """Whether a clock's span covers more than one day (dates must then be shown).

    >>> spans_days(0, 3_600_000, "ms"), spans_days(0, 3 * 86_400_000, "ms"), spans_days(0, 10**9, "ordinal")
    (False, True, False)
    """
    return t_unit in MS_PER and (t_last - t_first) * MS_PER[t_unit] > MS_PER["d"]
