"""Structures shared by the incomplete-stream kernels, compiled: an id table and sorted arrays.

Haghani, Michel, Aberer (CIKM 2009) look objects up by id in a hash table (SLA's object
table, EAA's validity table) and keep entries sorted by score (SLA's per-stream lists, EAA's
``csorted`` and ``bsorted``).  Here:

* the **id table** is open addressing with linear probing over two int64 arrays, ``keys`` and
  ``slots`` (``slots[i] == NONE``: position ``i`` is free), capacity a power of two kept at
  most half full; deletion shifts the following run back, so no tombstones accumulate
  (``O(1)`` expected per operation);
* a **sorted list** is a treap over rows of a pool: node ``x`` sorts by ``(values[x], x)``,
  ``links[x]`` holds its ``LEFT``, ``RIGHT`` and ``PARENT`` nodes and ``roots[tree]`` the root;
  the heap priority is a hash of the row.  Insertion, removal (by node, whatever its key has
  become) and the search for a value are ``O(log n)`` expected, a walk to the next node
  ``O(1)`` amortised.  Several treaps over the same rows share one ``links`` block
  (``links[tree]``), as an object sits in one list per stream.
"""

from __future__ import annotations

import numpy as np
from numba import njit

NONE = -1
LEFT, RIGHT, PARENT = range(3)


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
def _mix(x):
    """A 31-bit integer hash of ``x``'s low 31 bits (multiply-xorshift; every product fits in
    63 bits, so plain Python computes the same as the compiled code)."""
    x &= 0x7FFFFFFF
    x = (x * 0x5BD1E995) & 0x7FFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0x7FFFFFFF
    return x ^ (x >> 12)


@njit(cache=True)
def _home(key, mask):
    """The first position probed for ``key``: its bits 0-30, 31-61 and 62-63 mixed in turn, so
    that ids differing only in high bits do not share a home (folding them by one xor did:
    every multiple of ``2**31 + 1`` hashed alike, making the table a linear scan)."""
    return _mix(_mix(_mix(key) ^ (key >> 31)) ^ (key >> 62)) & mask


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
def _priority(row):
    """A node's heap priority: a hash of its row, fixed for the row (``O(1)``)."""
    return _mix(row + 1)


@njit(cache=True)
def _below(values, a, b):
    """Node ``a`` sorts below node ``b``: ``(values[a], a) < (values[b], b)``."""
    return values[a] < values[b] or (values[a] == values[b] and a < b)


@njit(cache=True)
def _rotate_up(links, roots, tree, x):
    """Rotate node ``x`` above its parent, keeping the search order (``O(1)``)."""
    p = links[x, PARENT]
    g = links[p, PARENT]
    if links[p, LEFT] == x:
        b = links[x, RIGHT]
        links[p, LEFT] = b
        links[x, RIGHT] = p
    else:
        b = links[x, LEFT]
        links[p, RIGHT] = b
        links[x, LEFT] = p
    if b != NONE:
        links[b, PARENT] = p
    links[p, PARENT] = x
    links[x, PARENT] = g
    if g == NONE:
        roots[tree] = x
    elif links[g, LEFT] == p:
        links[g, LEFT] = x
    else:
        links[g, RIGHT] = x


@njit(cache=True)
def tree_insert(links, roots, tree, values, x):
    """Insert node ``x`` (key ``(values[x], x)``) into treap ``tree`` (``O(log n)`` expected)."""
    links[x, LEFT] = NONE
    links[x, RIGHT] = NONE
    links[x, PARENT] = NONE
    node = roots[tree]
    if node == NONE:
        roots[tree] = x
        return
    while True:
        side = LEFT if _below(values, x, node) else RIGHT
        child = links[node, side]
        if child == NONE:
            links[node, side] = x
            links[x, PARENT] = node
            break
        node = child
    while links[x, PARENT] != NONE and _priority(x) > _priority(links[x, PARENT]):
        _rotate_up(links, roots, tree, x)


@njit(cache=True)
def tree_remove(links, roots, tree, x):
    """Remove node ``x`` from treap ``tree``: rotated down to a leaf, then cut (``O(log n)``
    expected; its key is not read, so it may have changed since the insertion)."""
    while True:
        left, right = links[x, LEFT], links[x, RIGHT]
        if left == NONE and right == NONE:
            break
        if right == NONE or (left != NONE and _priority(left) > _priority(right)):
            _rotate_up(links, roots, tree, left)
        else:
            _rotate_up(links, roots, tree, right)
    parent = links[x, PARENT]
    if parent == NONE:
        roots[tree] = NONE
    elif links[parent, LEFT] == x:
        links[parent, LEFT] = NONE
    else:
        links[parent, RIGHT] = NONE
    links[x, PARENT] = NONE


@njit(cache=True)
def tree_last(links, roots, tree):
    """The treap's highest node, or ``NONE`` (``O(log n)`` expected)."""
    node = roots[tree]
    if node != NONE:
        while links[node, RIGHT] != NONE:
            node = links[node, RIGHT]
    return node


@njit(cache=True)
def tree_previous(links, x):
    """The node just below ``x``, or ``NONE`` (``O(log n)`` worst, ``O(1)`` amortised in a walk)."""
    if links[x, LEFT] != NONE:
        x = links[x, LEFT]
        while links[x, RIGHT] != NONE:
            x = links[x, RIGHT]
        return x
    parent = links[x, PARENT]
    while parent != NONE and links[parent, LEFT] == x:
        x = parent
        parent = links[x, PARENT]
    return parent


@njit(cache=True)
def tree_next(links, x):
    """The node just above ``x``, or ``NONE`` (``O(log n)`` worst, ``O(1)`` amortised in a walk)."""
    if links[x, RIGHT] != NONE:
        x = links[x, RIGHT]
        while links[x, LEFT] != NONE:
            x = links[x, LEFT]
        return x
    parent = links[x, PARENT]
    while parent != NONE and links[parent, RIGHT] == x:
        x = parent
        parent = links[x, PARENT]
    return parent


@njit(cache=True)
def tree_first_from(links, roots, tree, values, score):
    """The lowest node whose value is at least ``score``, or ``NONE`` (``O(log n)`` expected)."""
    node = roots[tree]
    found = NONE
    while node != NONE:
        if values[node] >= score:
            found = node
            node = links[node, LEFT]
        else:
            node = links[node, RIGHT]
    return found


@njit(cache=True)
def combine(attributes, weights):
    """``Σ_i w_i a_i`` in stream order, bit for bit as :func:`engine.attributes.combine` (``O(d)``)."""
    total = attributes[0] * weights[0]
    for i in range(1, len(weights)):
        total += attributes[i] * weights[i]
    return total
