"""The shared base class of every algorithm; memory figures come from ``engine.memory``."""

from __future__ import annotations

import abc
import functools
from typing import Any, ClassVar

import numpy as np

from .jsondata import pack, pack_text
from .memory import OBJECT_FIELDS, WORD, Footprint, attribute_bytes
from .query import Query
from .ranking import Answer
from .stream import Batch

OBJECT_WORDS = sum(OBJECT_FIELDS.values())
"""Words every retained object costs before its values: id, seq and t (the cost model, ``docs/algorithms/memory.md``)."""

__all__ = ["Algorithm", "OBJECT_WORDS", "WORD", "check_answer_size", "coerce_param", "plain_digits"]


class Algorithm(abc.ABC):
    """A continuous top-k algorithm over the slides of one query.

    Settings (the query and the parameters) are fixed in the constructor; the working state
    lives in ``_private`` attributes.  ``dump_state`` / ``load_state`` convert that state to and
    from plain JSON data, kept apart from the working structures; ``check`` asserts every
    invariant (``engine.restore`` calls it after ``load_state``, tests after every slide).
    Subclasses implement ``_stats``; the public ``stats`` adds the memory figures.

    **Memory.**  An algorithm whose structures report :class:`~engine.memory.Footprint` s
    overrides :meth:`footprints`; ``stats`` then computes ``bytes`` (the modelled cost, from
    each structure's declared layout) and ``measured_bytes`` (their real size plus a walk of
    the algorithm's remaining, ``O(k)``-sized attributes) without visiting the records.  An
    algorithm that declares none returns ``bytes`` from ``_stats`` and is measured by the
    generic ``O(size)`` deep walk.  An algorithm that keeps its structures in numpy arrays can
    also override :meth:`memory` to return both figures in ``O(1)`` (the layouts' prices times
    its record counts; the arrays' bytes, kept as they are allocated, see
    :func:`~engine.memory.owned_bytes`, plus fixed overheads measured once): ``stats`` then
    uses it and skips the walk; ``footprints`` still declares the same structures.

    Subclasses set ``name``, ``summary``, ``exact``, ``stream`` (``"single"`` or
    ``"incomplete"``) and ``defaults`` (parameter name -> default value).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    exact: ClassVar[bool] = True
    stream: ClassVar[str] = "single"
    defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "process" in cls.__dict__:
            cls.process = _checking_shape(cls.__dict__["process"])

    def __init__(self, query: Query, **params: Any) -> None:
        if not isinstance(query, Query):
            raise ValueError(f"query must be an engine.Query, got {type(query).__name__}")
        self.q = query
        self.params = self._resolve_params(params)
        self._reset()

    @classmethod
    def _resolve_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - set(cls.defaults))
        if unknown:
            valid = ", ".join(sorted(cls.defaults)) or "none"
            raise ValueError(f"unknown parameter(s) for {cls.name}: {', '.join(unknown)}; valid: {valid}")
        resolved = dict(cls.defaults)
        for key, value in params.items():
            resolved[key] = coerce_param(cls.name, key, cls.defaults[key], value)
        return resolved

    @abc.abstractmethod
    def _reset(self) -> None:
        """Create empty working structures."""

    @abc.abstractmethod
    def process(self, batch: Batch) -> None:
        """Take one slide (possibly empty) and move the window to ``batch.end``."""

    def last_end(self) -> int | None:
        """End of the last slide processed (restored: of the slide the state was saved at),
        ``None`` before the first (``O(1)``).  The next slide :meth:`process` takes ends at
        ``last_end() + slide``.  Every built-in algorithm says; one that does not (a plugin's)
        takes any later slide, as every algorithm did."""
        return None

    @abc.abstractmethod
    def topk(self) -> Answer:
        """The ranked answer for the window ending at the last processed slide."""

    @abc.abstractmethod
    def candidates(self) -> np.ndarray:
        """``seq`` of every object in the candidate structures (int64, any order)."""

    @abc.abstractmethod
    def _stats(self) -> dict[str, Any]:
        """``candidates``, ``retained``, algorithm counters and, unless :meth:`footprints` is
        declared, ``bytes`` (the cost model)."""

    def footprints(self) -> list[Footprint] | None:
        """The footprint of every structure held, or ``None`` (not declared: deep walk)."""
        return None

    def memory(self) -> tuple[int, int] | None:
        """``(bytes, measured_bytes)`` in ``O(1)``, or ``None`` (computed from :meth:`footprints`).

        Overridden by algorithms that keep both figures current as their structures change:
        ``bytes`` must equal the footprints' modelled sum, ``measured_bytes`` their measured sum
        plus the other attributes (``tests/engine/test_memory.py`` checks both).
        """
        return None

    def stats(self) -> dict[str, Any]:
        """``candidates``, ``retained``, ``bytes`` (modelled), ``measured_bytes`` and counters.

        ``O(1)`` plus ``_stats`` for algorithms declaring :meth:`memory` or footprints, else
        ``O(size)``.
        """
        out = self._stats()
        figures = self.memory()
        if figures is not None:
            out["bytes"], out["measured_bytes"] = figures
            return out
        parts = self.footprints()
        if parts is not None:
            out["bytes"] = sum(part.modelled for part in parts)
        out["measured_bytes"] = self.measured_bytes(parts)
        return out

    def measured_bytes(self, parts: list[Footprint] | None = None) -> int:
        """The real size of the working structures (settings excluded).

        With footprints: their measured sizes plus a deep walk of the other attributes, which
        never enters the structures (``O(k)``); without: a deep walk of everything.  ``parts``
        are the footprints when the caller has them already.
        """
        if parts is None:
            figures = self.memory()
            if figures is not None:
                return figures[1]
            parts = self.footprints()
        if parts is None:
            return attribute_bytes(self, exclude=(self.q, self.params))
        owners = tuple(owner for part in parts for owner in part.owners)
        rest = attribute_bytes(self, exclude=(self.q, self.params, *owners))
        return rest + sum(part.measured for part in parts)

    @abc.abstractmethod
    def dump_state(self) -> dict[str, Any]:
        """The working state as plain JSON data."""

    @abc.abstractmethod
    def load_state(self, data: dict[str, Any]) -> None:
        """Rebuild the working structures from :meth:`dump_state` data (after ``_reset``)."""

    def check(self) -> None:
        """Assert every invariant of the working structures (``O(size)``; for tests and restore)."""

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot; :func:`engine.restore` continues from it exactly."""
        return pack(self.name, self.q.to_dict(), self.params, self.dump_state())

    def to_state_text(self) -> tuple[str, str]:
        """:meth:`to_state` as JSON text, and its checksum; the data is encoded once."""
        return pack_text(self.name, self.q.to_dict(), self.params, self.dump_state())

    def __repr__(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.q!r}{params})"


class OnePassStats:
    """For an algorithm whose own :meth:`Algorithm.stats` builds every figure in one pass (the
    memory figures included: no method calls on the per-slide path): :meth:`_stats` and
    :meth:`memory` derived from it (``O(1)``).  Listed before :class:`Algorithm` in the bases."""

    def _stats(self) -> dict[str, Any]:
        """:meth:`stats` without the memory figures (``O(1)``)."""
        out = self.stats()
        del out["bytes"], out["measured_bytes"]
        return out

    def memory(self) -> tuple[int, int]:
        """``(bytes, measured_bytes)`` of :meth:`stats` (``O(1)``)."""
        out = self.stats()
        return out["bytes"], out["measured_bytes"]


def _checking_shape(process):
    """``process``, refusing first (``O(1)``) what is not a :class:`~engine.stream.Batch` of the
    algorithm's query: an object, a batch whose features are not the query's or an object-stream
    batch given to an attribute-stream algorithm (they raised ``AttributeError`` or
    ``IndexError``, or were taken), a slide whose end is not a multiple of the query's slide,
    and one that is not the next, ending a slide after :meth:`Algorithm.last_end` (a later one
    skipped the slides between silently: a time stream continued with ``engine.slides`` from
    its first time rather than from the last slide's end).  A batch's columns were checked when
    it was made (:class:`~engine.stream.Batch`); its values are trusted as :func:`engine.slides`
    checked them."""

    @functools.wraps(process)
    def checked(self: "Algorithm", batch: Batch) -> None:
        if not isinstance(batch, Batch):
            raise ValueError(f"{self.name}: process takes an engine.Batch (from engine.slides), "
                             f"got {type(batch).__name__}")
        if self.stream == "single":
            if batch.x.shape[1] != self.q.dimensions:
                raise ValueError(f"{self.name}: the batch has {batch.x.shape[1]} feature(s), "
                                 f"the query {self.q.dimensions} weight(s)")
        elif batch.stream is None or batch.value is None:
            raise ValueError(f"{self.name} reads attribute streams (id, stream, value, t); "
                             "this batch is an object stream")
        if batch.end % self.q.slide:
            raise ValueError(f"{self.name}: the slide ending at {batch.end} does not end at a multiple of the "
                             f"slide ({self.q.slide}), as engine.slides cuts them")
        last = self.last_end()
        if last is not None and batch.end != last + self.q.slide:
            raise ValueError(_not_the_next_slide(self, batch.end, last))
        process(self, batch)

    return checked


def _not_the_next_slide(algorithm: Algorithm, end: int, last: int) -> str:
    """Why a slide ending at ``end`` cannot follow the last slide, which ended at ``last``, and
    how to cut the slides that do: the answers of a run that never stopped, one per slide."""
    q = algorithm.q
    if q.kind == "time":
        how = (f"time slides may be empty: continue with engine.slides(data, query, start={last}), which cuts "
               "every slide from there")
    else:
        how = f"continue with engine.slides(data, query, seq_start={last})"
    skipped = (end - last) // q.slide - 1
    order = f"skips {skipped:,} slide(s)" if skipped > 0 else "is not the next slide"
    return (f"{algorithm.name}: the slide ending at {end} {order}: the last slide ended at {last}, "
            f"the next one ends at {last + q.slide}; {how}")


def check_answer_size(k: Any) -> None:
    """Refuse the ``k`` of an ad-hoc ``query(weights, k)`` unless it is an integer >= 1 (``O(1)``).

    >>> check_answer_size(2.5)
    Traceback (most recent call last):
    ...
    ValueError: k must be an integer >= 1, got 2.5
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def plain_digits(text: str) -> bool:
    """Whether ``text`` has only ASCII characters and no ``_``: Python's ``int`` and ``float``
    (and numpy's parsers, which call them) also read ``1_000``, ``١٢`` and ``１２``, which no CSV
    reader (Spark's cast in ``pipelines.ingest`` among them) takes for numbers."""
    return text.isascii() and "_" not in text


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def coerce_param(algorithm: str, key: str, default: Any, value: Any) -> Any:
    """Convert ``value`` (possibly a CLI string) to the type of ``default``.

    >>> coerce_param("sao", "memory", 500, "300")
    300
    >>> coerce_param("mintopk", "prefilter", True, -3)
    Traceback (most recent call last):
    ...
    ValueError: parameter prefilter of mintopk must be bool, got -3
    >>> coerce_param("approx", "repeats", 0, True)
    Traceback (most recent call last):
    ...
    ValueError: parameter repeats of approx must be int, got True
    >>> coerce_param("sla", "k_max", 0, 1e30)
    Traceback (most recent call last):
    ...
    ValueError: parameter k_max of sla must fit in int64 (at most 9223372036854775807), got 1e+30
    """
    kind = type(default)
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                return lowered in ("true", "1", "yes")
            if not isinstance(value, (bool, np.bool_, int, np.integer)) or value not in (0, 1):
                raise ValueError
            return bool(value)
        if isinstance(value, (bool, np.bool_)):  # int(True) is 1: a flag where a number is asked
            raise ValueError
        if kind is str and not isinstance(value, str):
            raise ValueError
        if isinstance(value, str) and kind in (int, float) and not plain_digits(value):
            raise ValueError
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            integer = int(value)
        elif kind is float:
            return float(value)
        else:
            return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {key} of {algorithm} must be {kind.__name__}, got {value!r}") from None
    if not INT64_MIN <= integer <= INT64_MAX:
        bound = f"at most {INT64_MAX}" if integer > INT64_MAX else f"at least {INT64_MIN}"
        raise ValueError(f"parameter {key} of {algorithm} must fit in int64 ({bound}), got {value!r}")
    return integer
