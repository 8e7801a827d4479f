"""Memory of an algorithm, two figures from one declaration per structure.

* ``bytes``, the **modelled** cost (``docs/algorithms/memory.md``): 8 bytes per word, the words of each record
  declared once per structure in a :class:`Layout` (fields per record, ``"d"`` for the feature
  vector), times the records the structure holds.  One structure costs the same wherever it
  is used: the dominance skyband is priced by ``DominanceSet.LAYOUT`` in k-skyband and in SMA.
* ``measured_bytes``, the **real** size of the structures: numpy buffers at their allocated
  capacity (``nbytes``, not the live part) plus, for structures made of Python objects, the
  sizes of their containers (``sys.getsizeof``, ``O(1)`` each) and a per-record size of the
  objects every record owns, measured once at import (:func:`python_bytes`).

Each structure returns a :class:`Footprint` (its layout, record counts and measured size) in
``O(1)`` (``O(blocks)`` for block lists); :meth:`engine.Algorithm.stats` adds them up.  An
algorithm that declares no footprints falls back to :func:`deep_size`, an exact but
``O(objects)`` walk of everything it references.
"""

from __future__ import annotations

import functools
import sys
import types
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np

WORD = 8
"""Bytes per feature value, id, seq, t, score, pointer, counter or window mark."""

OBJECT_FIELDS: Mapping[str, int | str] = {"id": 1, "seq": 1, "t": 1}
"""Words every retained object costs before its values."""

LAYOUTS: dict[str, "Layout"] = {}
"""Every declared layout by name; declaring a second layout with the same name is an error."""


@dataclass(frozen=True)
class Layout:
    """The cost model of one structure: the words of each kind of record it holds.

    ``records`` maps a record kind (``"object"``, ``"cell"``, ``"window"``, ...) to its fields,
    each a number of words or ``"d"`` (one word per feature).  Declaring a layout registers it
    in :data:`LAYOUTS` under ``name``; a second, different layout with that name is an error, so
    each structure declares its layout once, as a module constant, and every algorithm using
    the structure reuses it.

    Examples
    --------
    >>> band = Layout("doctest band", {"member": {"id": 1, "seq": 1, "t": 1, "x": "d", "count": 1}})
    >>> band.words("member", d=2), band.bytes(d=2, member=10)
    (6, 480)
    >>> Layout("doctest band", {"member": {"id": 1}})
    Traceback (most recent call last):
    ...
    ValueError: layout 'doctest band' is declared twice
    """

    name: str
    records: Mapping[str, Mapping[str, int | str]]

    def __post_init__(self) -> None:
        for kind, fields in self.records.items():
            for name, words in fields.items():
                if words != "d" and not (isinstance(words, int) and words >= 0):
                    raise ValueError(f"layout {self.name!r}: field {kind}.{name} must be a word count or 'd'")
        if self.name in LAYOUTS and LAYOUTS[self.name] != self:
            raise ValueError(f"layout {self.name!r} is declared twice")
        LAYOUTS[self.name] = self  # the same declaration again: a re-imported module

    def words(self, kind: str, d: int = 0) -> int:
        """Words of one record of ``kind`` for ``d`` features (``O(fields)``)."""
        return sum(d if words == "d" else words for words in self.records[kind].values())

    def bytes(self, d: int = 0, **counts: int) -> int:
        """Modelled bytes for ``counts[kind]`` records of every kind (all kinds required)."""
        missing = set(self.records) - set(counts)
        extra = set(counts) - set(self.records)
        if missing or extra:
            raise ValueError(f"layout {self.name!r} counts {sorted(self.records)}, got {sorted(counts)}")
        return WORD * sum(self.words(kind, d) * int(n) for kind, n in counts.items())


@dataclass(frozen=True)
class Footprint:
    """What one structure holds now: its layout, its record counts and its measured size.

    ``owners`` are the Python objects the footprint covers; the algorithm's remaining
    attributes are measured by :func:`deep_size` without entering them.
    """

    layout: Layout
    counts: Mapping[str, int]
    measured: int
    d: int = 0
    owners: tuple = field(default=(), compare=False, repr=False)

    @property
    def modelled(self) -> int:
        """``layout.bytes`` for the counts (``O(fields)``)."""
        return self.layout.bytes(self.d, **self.counts)


def array_bytes(arrays: Iterable[np.ndarray]) -> int:
    """Real bytes of numpy arrays: each header, and each data buffer once at full capacity.

    ``O(len(arrays))``.  A view costs its header plus its base's buffer, counted once (a base
    that does not own its buffer either, as numba's arrays, costs its header and ``nbytes``).

    >>> a = np.zeros(1000)
    >>> array_bytes([a, a[10:]]) == sys.getsizeof(a) + sys.getsizeof(a[10:])
    True
    """
    total, seen = 0, set()
    for array in arrays:
        owner = array
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        if owner is array:
            total += sys.getsizeof(array) if array.flags.owndata else sys.getsizeof(array) + array.nbytes
            seen.add(id(array))
            continue
        total += sys.getsizeof(array)
        if id(owner) not in seen:
            seen.add(id(owner))
            total += sys.getsizeof(owner) if owner.flags.owndata else sys.getsizeof(owner) + owner.nbytes
    return total


ARRAY_HEADERS = tuple(sys.getsizeof(np.empty((0,) * ndim)) for ndim in range(8))
"""Bytes of a numpy array object of ``ndim`` dimensions owning its buffer, the buffer excluded."""


def owned_bytes(*arrays: np.ndarray) -> int:
    """Real bytes of numpy arrays that own their buffers: header plus ``nbytes`` each.

    ``O(len(arrays))``, no ``sys.getsizeof`` call: an array-backed algorithm adds this up when
    it (re)allocates its arrays and reports the total from :meth:`engine.Algorithm.memory`.

    >>> a = np.zeros((100, 3), np.int64)
    >>> owned_bytes(a, np.zeros(5)) == sys.getsizeof(a) + sys.getsizeof(np.zeros(5))
    True
    """
    return sum(ARRAY_HEADERS[array.ndim] + array.nbytes for array in arrays)


def python_bytes(*objects: object) -> int:
    """``sys.getsizeof`` summed over sample objects: the per-record size of a Python structure.

    Structures call it once at import on a record built like theirs (e.g. a list of 7
    pointers, its key tuple, a float and five non-cached ints), so the measured size costs
    ``O(1)`` per call whatever the number of records.

    >>> python_bytes(0.5, 10 ** 6) == sys.getsizeof(0.5) + sys.getsizeof(10 ** 6)
    True
    """
    return sum(sys.getsizeof(item) for item in objects)


PY_INT = python_bytes(10 ** 6)
"""A non-cached Python int below 2**30 (seq, id, t, window numbers of realistic streams)."""

PY_FLOAT = python_bytes(0.5)
"""A Python float (a score)."""

POPULATION = 64
"""Instances of one class after which its attribute dicts have shrunk to their floor."""


@functools.lru_cache(maxsize=None)
def _attribute_dict_bytes(attributes: int) -> int:
    holder_class = type("Holder", (), {})
    holders = []
    for _ in range(POPULATION):
        holder = holder_class()
        for index in range(attributes):
            setattr(holder, f"attribute_{index}", None)
        holders.append(holder)
    return sys.getsizeof(holders[-1].__dict__)


def attribute_dict_bytes(attributes: dict) -> int:
    """Bytes of an object's attribute dict (``vars(obj)``) holding ``len(attributes)`` entries, as
    Python lays it out once its class has many instances (:data:`POPULATION`; ``O(1)`` once a
    length is seen): the first instance's larger figure overstated a workload of 1,000 queries
    by 45 % against tracemalloc.

    ``sys.getsizeof`` of an attribute dict is not the object's own: CPython 3.11 sizes it from
    its class's shared keys, which every new instance of the class shrinks by one slot (so the
    same object measured 8 B less for each instance of its class created before it in the
    process, down to the attributes it holds).  This figure depends on the length only.

    >>> class Point: pass
    >>> first, second = Point(), Point()
    >>> first.x = second.x = 1
    >>> attribute_dict_bytes(vars(first)) == attribute_dict_bytes(vars(second))
    True
    """
    return _attribute_dict_bytes(len(attributes))


SMALL_DICT = 64
"""Up to this many keys :func:`dict_bytes` churns a dict of that length itself."""


@functools.lru_cache(maxsize=None)
def dict_bytes(entries: int) -> int:
    """``sys.getsizeof`` of a dict holding ``entries`` keys while keys keep coming and going (each
    new key replacing the oldest, as a window's slides do), once its size has settled.  A dict's
    own size depends on the most it ever held and on its deletions, which a restored copy does
    not know; this depends on the length only.

    ``O(1)`` (cached per length) after the first call for a table size: a churned dict resizes
    to the smallest power of two of at least ``3 * entries`` slots (CPython's growth rate), so beyond
    :data:`SMALL_DICT` keys the size is that of the smallest length settling at that table,
    churned once per power of two (``O(entries)`` in all, not per length: a window of 10,000
    slides meets every length up to 10,000 while it fills).

    >>> def churned(entries):
    ...     keys = dict.fromkeys(range(entries))
    ...     for key in range(entries, 4 * entries + 200):
    ...         keys[key] = None
    ...         del keys[key - entries]
    ...     return sys.getsizeof(keys)
    >>> all(dict_bytes(n) == churned(n) for n in (0, 1, 10, 64, 65, 1000, 5461, 5462, 10000))
    True
    """
    if entries <= SMALL_DICT:
        return _churned_dict_bytes(entries)
    return _churned_dict_bytes((1 << ((3 * entries - 1).bit_length() - 1)) // 3 + 1)


@functools.lru_cache(maxsize=None)
def _churned_dict_bytes(entries: int) -> int:
    churned = dict.fromkeys(range(entries))
    for key in range(entries, 5 * entries + 64):
        churned[key] = None
        del churned[key - entries]
    return sys.getsizeof(churned)


def attribute_bytes(obj: object, exclude: tuple = ()) -> int:
    """Bytes of ``obj``'s attributes: its attribute dict (:func:`attribute_dict_bytes`) and
    :func:`deep_size` of everything it references, ``obj`` itself and ``exclude`` left out."""
    attributes = vars(obj)
    return attribute_dict_bytes(attributes) + _walk(list(attributes.values()), {id(attributes), *map(id, exclude)})


_ATOMS = (str, bytes, bytearray, int, float, complex, bool, type(None))
_PLAIN_ATOMS = frozenset({int, float, str, bytes, complex})
"""Exact atom types: sized at once, before the general checks (most objects walked are these)."""
_FREE = frozenset({type(None), bool})
_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def deep_size(root: object, exclude: tuple = ()) -> int:
    """Bytes held by ``root`` and everything it references (``O(objects)``).

    Objects in ``exclude`` (and everything only they reference) are not counted; small
    integers and other interned singletons cost nothing since they are never allocated.
    Containers walked: dict, list, tuple, set, frozenset, deque, and the ``__dict__`` (sized by
    :func:`attribute_dict_bytes`) and ``__slots__`` of other objects.

    Examples
    --------
    >>> a = np.zeros(1000)
    >>> deep_size([a, a[10:]]) >= 8000
    True
    >>> deep_size(deque([a])) > deep_size(deque()) + 8000
    True
    """
    return _walk([root], {id(item) for item in exclude})


def _walk(stack: list, seen: set[int]) -> int:
    """:func:`deep_size` of the objects on ``stack``, those whose ids are in ``seen`` left out."""
    total = 0
    while stack:
        obj = stack.pop()
        kind = type(obj)
        if kind in _FREE or id(obj) in seen:
            continue
        if kind in _PLAIN_ATOMS:
            seen.add(id(obj))
            if kind is not int or not -5 <= obj <= 256:
                total += sys.getsizeof(obj)
            continue
        if isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        if isinstance(obj, int) and -5 <= obj <= 256:
            continue
        if isinstance(obj, np.ndarray):
            owner = obj
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            total += sys.getsizeof(obj) if owner is not obj else 0
            if id(owner) not in seen or owner is obj:
                seen.add(id(owner))
                total += sys.getsizeof(owner) if owner.flags.owndata else owner.nbytes
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, _ATOMS) or isinstance(obj, np.generic):
            continue
        if isinstance(obj, dict):  # string keys are names (attributes, counters): interned, shared
            stack.extend(key for key in obj if type(key) is not str)
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset, deque)):
            stack.extend(obj)
        else:
            attributes = getattr(obj, "__dict__", None)
            if attributes is not None:
                seen.add(id(attributes))
                total += attribute_dict_bytes(attributes)
                stack.extend(attributes.values())
            for cls in type(obj).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                        stack.append(getattr(obj, slot))
    return total
