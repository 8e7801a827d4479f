"""Structures shared by the incomplete-stream kernels, compiled: an id table and sorted arrays.

Haghani, Michel, Aberer (CIKM 2009) look objects up by id in a hash table (SLA's object
table, EAA's validity table) and keep entries sorted by score (SLA's per-stream lists, EAA's
``csorted`` and ``bsorted``).  Here:

* the **id table** is open addressing with linear probing over two int64 arrays, ``keys`` and
  ``slots`` (``slots[i] == NONE``: position ``i`` is free), capacity a power of two kept at
  most half full; deletion shifts the following run back, so no tombstones accumulate
  (``O(1)`` expected per operation);
* a **sorted array** holds ``(score, tie)`` pairs in ascending order in a float64 and an int64
  array with its length kept by the caller; insertion and removal find the place by binary
  search (``O(log n)``) and shift the tail (``O(n)`` moves of 16 bytes, a ``memmove``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

NONE = -1
_PRIME = 2147483647


def empty_table(capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """``keys, slots`` of an empty id table of ``capacity`` positions (a power of two)."""
    return np.zeros(capacity, np.int64), np.full(capacity, NONE, np.int64)


def table_capacity(entries: int) -> int:
    """The smallest power of two at least ``2 * entries`` (and 16)."""
    capacity = 16
    while capacity < 2 * entries:
        capacity *= 2
    return capacity


@njit(cache=True)
def _home(key, mask):
    """The first position probed for ``key`` (a multiplicative hash of its low 31 bits)."""
    x = (key ^ (key >> 31)) & 0x7FFFFFFF
    x = (x * 48271) % _PRIME
    x ^= x >> 13
    return (x * 69621) % _PRIME & mask


@njit(cache=True)
def find(keys, slots, key):
    """The slot stored under ``key``, or ``NONE`` (``O(1)`` expected)."""
    mask = len(keys) - 1
    i = _home(key, mask)
    while slots[i] != NONE:
        if keys[i] == key:
            return slots[i]
        i = (i + 1) & mask
    return NONE


@njit(cache=True)
def insert(keys, slots, key, slot):
    """Store ``slot`` under ``key``, which is absent (``O(1)`` expected; the table has room)."""
    mask = len(keys) - 1
    i = _home(key, mask)
    while slots[i] != NONE:
        i = (i + 1) & mask
    keys[i] = key
    slots[i] = slot


@njit(cache=True)
def erase(keys, slots, key):
    """Remove ``key``, which is present, shifting its run back over the hole (``O(1)`` expected)."""
    mask = len(keys) - 1
    i = _home(key, mask)
    while keys[i] != key or slots[i] == NONE:
        i = (i + 1) & mask
    hole = i
    j = i
    while True:
        j = (j + 1) & mask
        if slots[j] == NONE:
            break
        home = _home(keys[j], mask)
        # the entry at j may fill the hole unless its home lies cyclically in (hole, j]
        if (j > hole and (home <= hole or home > j)) or (j < hole and home <= hole and home > j):
            keys[hole] = keys[j]
            slots[hole] = slots[j]
            hole = j
    slots[hole] = NONE


@njit(cache=True)
def rehashed(keys, slots, capacity):
    """The table's entries in a new table of ``capacity`` positions (``O(capacity)``)."""
    new_keys = np.zeros(capacity, np.int64)
    new_slots = np.full(capacity, NONE, np.int64)
    for i in range(len(keys)):
        if slots[i] != NONE:
            insert(new_keys, new_slots, keys[i], slots[i])
    return new_keys, new_slots


@njit(cache=True)
def sorted_position(scores, ties, size, score, tie):
    """How many of the first ``size`` pairs are below ``(score, tie)`` (``O(log size)``)."""
    low, high = 0, size
    while low < high:
        mid = (low + high) // 2
        if scores[mid] < score or (scores[mid] == score and ties[mid] < tie):
            low = mid + 1
        else:
            high = mid
    return low


@njit(cache=True)
def sorted_insert(scores, ties, size, score, tie):
    """Insert ``(score, tie)`` among the first ``size`` pairs (room for one more); returns its
    position (``O(log size)`` search, ``O(size)`` shift)."""
    at = sorted_position(scores, ties, size, score, tie)
    for i in range(size, at, -1):
        scores[i] = scores[i - 1]
        ties[i] = ties[i - 1]
    scores[at] = score
    ties[at] = tie
    return at


@njit(cache=True)
def sorted_remove(scores, ties, size, score, tie):
    """Remove the pair ``(score, tie)``, which is among the first ``size`` (``O(log size)``
    search, ``O(size)`` shift)."""
    at = sorted_position(scores, ties, size, score, tie)
    for i in range(at, size - 1):
        scores[i] = scores[i + 1]
        ties[i] = ties[i + 1]


@njit(cache=True)
def combine(attributes, weights):
    """``Σ_i w_i a_i`` in stream order, bit for bit as :func:`engine.attributes.combine` (``O(d)``)."""
    total = attributes[0] * weights[0]
    for i in range(1, len(weights)):
        total += attributes[i] * weights[i]
    return total
