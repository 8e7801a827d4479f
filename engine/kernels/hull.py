"""Convex hulls of the small point sets of SAO's layers (2-D and 3-D), compiled.

SAO peels a few hundred points into convex layers once per slide (section 3.6 of the paper:
the insertion and deletion cascades); Qhull costs about 90 µs a call on such sets, mostly in
its set-up.  These kernels compute the same hull, vertices, facet simplices and facet planes,
in microseconds.  A kernel that meets a case it does not settle with certainty returns a status
instead of an answer, and the caller (:mod:`engine.algorithms.sao_hull`) takes another route:

- ``FLAT``: the points span fewer than ``d`` dimensions (duplicates, collinear or coplanar
  sets); the caller computes the hull inside the points' affine span.
- ``FAILED``: a numerical inconsistency (a horizon that is not one cycle, a new facet without
  area or facing inwards); the caller asks Qhull.

Tolerances are distances in the points' coordinates: a point within ``tolerance`` of a facet's
plane counts as on it (not outside), and the hull's vertices are its extreme points (a point in
the middle of a flat face or of a straight edge is not a vertex, as with Qhull).
"""

from __future__ import annotations

import numpy as np
from numba import njit

DONE = 0
FLAT = 1
FAILED = 2

SCANNED_EDGES = 48
"""The horizon among at most this many edges of visible facets (16 facets) is found by
scanning them for each edge's reverse (no sort, no allocation); more edges are sorted."""

EXTREME_SINE = 1e-9
"""Facet normals around a vertex closer than this (sine of their angle) count as one plane."""


@njit(cache=True)
def hull_2d(points: np.ndarray, tolerance: float):
    """Andrew's monotone chain: ``(status, polygon)``, the vertex indices counter-clockwise.

    A point within ``tolerance`` of the line through its two neighbours on the chain is not a
    vertex; fewer than three vertices left is ``FLAT`` if every point lies within ``tolerance``
    of one line (else ``FAILED``).  Points nearly in line but out of the
    sort's order along it (``x`` equal to within rounding) can make the chain drop an extreme
    point: a point farther than ``tolerance`` outside the polygon is ``FAILED``.  ``O(n log n)``
    plus ``O(n h)`` for that test over the ``h`` vertices.
    """
    n = points.shape[0]
    by_y = np.argsort(points[:, 1], kind="mergesort")
    order = by_y[np.argsort(points[by_y, 0], kind="mergesort")]
    chain = np.empty(2 * n + 1, np.int64)
    size = 0
    for sweep in range(2):
        start = size
        for step in range(n):
            p = order[step] if sweep == 0 else order[n - 1 - step]
            while size - start >= 2 and not _turns_left(points, chain[size - 2], chain[size - 1], p, tolerance):
                size -= 1
            chain[size] = p
            size += 1
        size -= 1
    if size < 3:
        return (FLAT if _flat_2d(points, order[0], order[n - 1], tolerance) else FAILED), chain[:0].copy()
    for i in range(size):
        a, b = chain[i], chain[(i + 1) % size]
        for p in range(n):
            if _turns_left(points, b, a, p, tolerance):
                return FAILED, chain[:0].copy()
    return DONE, chain[:size].copy()


@njit(cache=True)
def _flat_2d(points, a, b, tolerance):
    """Whether every point lies within ``tolerance`` of the line through ``a`` and ``b`` (of
    point ``a`` when they coincide).  The chain can collapse on a set that is not flat: a
    point within ``tolerance`` of another but later in the sort (``x`` larger by less than
    ``tolerance``) pops a true vertex, the tolerant line test seeing the three in line."""
    ax, ay = points[b, 0] - points[a, 0], points[b, 1] - points[a, 1]
    length = np.sqrt(ax * ax + ay * ay)
    for p in range(points.shape[0]):
        px, py = points[p, 0] - points[a, 0], points[p, 1] - points[a, 1]
        if length <= tolerance:
            if np.sqrt(px * px + py * py) > tolerance:
                return False
        elif abs(ax * py - ay * px) > tolerance * length:
            return False
    return True


@njit(cache=True)
def _turns_left(points, o, a, b, tolerance):
    """Whether ``b`` lies farther than ``tolerance`` to the left of the line from ``o`` to ``a``."""
    ax, ay = points[a, 0] - points[o, 0], points[a, 1] - points[o, 1]
    bx, by = points[b, 0] - points[o, 0], points[b, 1] - points[o, 1]
    length = np.sqrt(ax * ax + ay * ay)
    if length <= tolerance:
        return False
    return (ax * by - ay * bx) > tolerance * length


@njit(cache=True)
def _plane(points, a, b, c, normal):
    """Unit normal of the triangle ``a, b, c`` (right-hand order) into ``normal``; its offset,
    and the length of the cross product (twice the area; ``0`` without area)."""
    ux, uy, uz = points[b, 0] - points[a, 0], points[b, 1] - points[a, 1], points[b, 2] - points[a, 2]
    vx, vy, vz = points[c, 0] - points[a, 0], points[c, 1] - points[a, 1], points[c, 2] - points[a, 2]
    nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    length = np.sqrt(nx * nx + ny * ny + nz * nz)
    if length == 0.0:
        return 0.0, 0.0
    normal[0], normal[1], normal[2] = nx / length, ny / length, nz / length
    return -(normal[0] * points[a, 0] + normal[1] * points[a, 1] + normal[2] * points[a, 2]), length


@njit(cache=True)
def _farthest_from_line(points, a, b):
    """The point farthest from the line through ``a`` and ``b``, and its distance."""
    dx, dy, dz = points[b, 0] - points[a, 0], points[b, 1] - points[a, 1], points[b, 2] - points[a, 2]
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    best, far = -1.0, -1
    for p in range(points.shape[0]):
        px, py, pz = points[p, 0] - points[a, 0], points[p, 1] - points[a, 1], points[p, 2] - points[a, 2]
        cx, cy, cz = py * dz - pz * dy, pz * dx - px * dz, px * dy - py * dx
        gap = np.sqrt(cx * cx + cy * cy + cz * cz) / length
        if gap > best:
            best, far = gap, p
    return far, best


@njit(cache=True)
def _quickhull_3d(points: np.ndarray, tolerance: float):
    """Convex hull of ``points`` (``n x 3``): ``(status, facets, normals, offsets)``.

    Quickhull (Barber, Dobkin, Huhdanpaa): starts from the widest tetrahedron found by three
    farthest-point searches; every point waits in the outside set of one facet it lies above
    by more than ``tolerance``; the farthest point of a nonempty set replaces the facets it
    sees by a cone over their horizon, and the points of the replaced facets' sets are tested
    again against the cone's facets only; a point above none is inside for good (a point above a
    replaced facet and outside the new hull lies above one of the cone's facets).  Facets are
    triangles, counter-clockwise seen from outside.  ``O(n log n)`` expected, ``O(n h)`` at
    worst for ``h`` insertions.
    """
    n = points.shape[0]
    empty_facets = np.empty((0, 3), np.int64)
    empty_normals = np.empty((0, 3))
    empty_offsets = np.empty(0)
    first = 0
    for p in range(n):
        if points[p, 0] < points[first, 0]:
            first = p
    second, spread = first, 0.0
    for p in range(n):
        gap = np.sqrt((points[p, 0] - points[first, 0]) ** 2 + (points[p, 1] - points[first, 1]) ** 2
                      + (points[p, 2] - points[first, 2]) ** 2)
        if gap > spread:
            second, spread = p, gap
    if spread <= tolerance:
        return FLAT, empty_facets, empty_normals, empty_offsets
    third, gap = _farthest_from_line(points, first, second)
    if gap <= tolerance:
        return FLAT, empty_facets, empty_normals, empty_offsets
    normal = np.empty(3)
    offset, _ = _plane(points, first, second, third, normal)
    fourth, height = -1, 0.0
    for p in range(n):
        distance = abs(normal[0] * points[p, 0] + normal[1] * points[p, 1] + normal[2] * points[p, 2] + offset)
        if distance > height:
            fourth, height = p, distance
    if height <= tolerance:
        return FLAT, empty_facets, empty_normals, empty_offsets
    inner = (points[first] + points[second] + points[third] + points[fourth]) / 4.0

    capacity = min(4 * n + 16, 256)
    facets = np.empty((capacity, 3), np.int64)
    normals = np.empty((capacity, 3))
    offsets = np.empty(capacity)
    alive = np.empty(capacity, np.bool_)  # this and the other per-facet arrays: set as facets are created
    count = 0
    corners = (first, second, third, fourth)
    for a, b, c in ((0, 1, 2), (0, 3, 1), (1, 3, 2), (0, 2, 3)):
        u, v, w = corners[a], corners[b], corners[c]
        offsets[count], _ = _plane(points, u, v, w, normals[count])
        if normals[count, 0] * inner[0] + normals[count, 1] * inner[1] + normals[count, 2] * inner[2] + offsets[count] > 0:
            v, w = w, v
            offsets[count], _ = _plane(points, u, v, w, normals[count])
        facets[count, 0], facets[count, 1], facets[count, 2] = u, v, w
        alive[count] = True
        count += 1

    visible = np.empty(capacity, np.int64)
    edges = np.empty((3 * capacity, 2), np.int64)
    rim = np.empty((3 * capacity, 2), np.int64)
    starts = np.zeros(n, np.int64)
    live = np.empty(capacity, np.int64)
    living = count
    following = np.empty(n, np.int64)  # set when a point joins an outside set, read only after
    head = np.empty(capacity, np.int64)
    farthest = np.empty(capacity, np.int64)
    height = np.empty(capacity)
    for f in range(count):
        live[f], head[f], farthest[f], height[f] = f, -1, -1, 0.0
    # The outside-set partition and the distance tests are written out in the loops below: as
    # calls taking the arrays they cost about half of the hull's time (same arithmetic either way).
    for p in range(n):
        if p != first and p != second and p != third and p != fourth:
            for f in range(count):
                distance = normals[f, 0] * points[p, 0] + normals[f, 1] * points[p, 1] \
                    + normals[f, 2] * points[p, 2] + offsets[f]
                if distance > tolerance:  # the first facet it lies above: its outside set
                    following[p] = head[f]
                    head[f] = p
                    if distance > height[f]:
                        farthest[f], height[f] = p, distance
                    break  # a point above none is inside for good
    while True:
        p = -1
        for i in range(living):
            if head[live[i]] >= 0:
                p = farthest[live[i]]
                break
        if p < 0:
            break
        seen = 0
        for i in range(living):
            f = live[i]
            if normals[f, 0] * points[p, 0] + normals[f, 1] * points[p, 1] + normals[f, 2] * points[p, 2] \
                    + offsets[f] > tolerance:
                visible[seen] = f
                seen += 1
        listed = 0
        for i in range(seen):
            f = visible[i]
            for e in range(3):
                edges[listed, 0], edges[listed, 1] = facets[f, e], facets[f, (e + 1) % 3]
                listed += 1
            alive[f] = False
        horizon = 0
        keys = edges[:0, 0] if listed <= SCANNED_EDGES else np.sort(edges[:listed, 0] * n + edges[:listed, 1])
        for i in range(listed):
            a, b = edges[i, 0], edges[i, 1]
            if listed <= SCANNED_EDGES:
                shared = False
                for j in range(listed):
                    if edges[j, 0] == b and edges[j, 1] == a:
                        shared = True
                        break
            else:
                j = np.searchsorted(keys, b * n + a)
                shared = j < listed and keys[j] == b * n + a
            if not shared:
                rim[horizon, 0], rim[horizon, 1] = a, b
                horizon += 1
        for i in range(horizon):
            starts[rim[i, 0]] += 1
        cycle = True
        for i in range(horizon):
            if starts[rim[i, 0]] != 1:
                cycle = False
        for i in range(horizon):
            starts[rim[i, 0]] = 0
        if seen == 0 or not cycle or horizon < 3:
            return FAILED, empty_facets, empty_normals, empty_offsets
        if count + horizon > capacity:
            capacity = 2 * (count + horizon)
            facets, normals, offsets = _grown(facets, capacity), _grown(normals, capacity), _grown(offsets, capacity)
            alive, visible, live = _grown(alive, capacity), _grown(visible, capacity), _grown(live, capacity)
            head, farthest, height = _grown(head, capacity), _grown(farthest, capacity), _grown(height, capacity)
            edges, rim = _grown(edges, 3 * capacity), _grown(rim, 3 * capacity)
        created = count
        for i in range(horizon):
            a, b = rim[i, 0], rim[i, 1]
            offsets[count], area = _plane(points, a, b, p, normals[count])
            if area == 0.0 or normals[count, 0] * inner[0] + normals[count, 1] * inner[1] \
                    + normals[count, 2] * inner[2] + offsets[count] >= 0:
                return FAILED, empty_facets, empty_normals, empty_offsets
            facets[count, 0], facets[count, 1], facets[count, 2] = a, b, p
            alive[count] = True
            head[count], farthest[count], height[count] = -1, -1, 0.0
            count += 1
        for i in range(seen):
            q = head[visible[i]]
            while q >= 0:
                after = following[q]
                if q != p:  # into the outside set of the first cone facet it lies above
                    for f in range(created, count):
                        distance = normals[f, 0] * points[q, 0] + normals[f, 1] * points[q, 1] \
                            + normals[f, 2] * points[q, 2] + offsets[f]
                        if distance > tolerance:
                            following[q] = head[f]
                            head[f] = q
                            if distance > height[f]:
                                farthest[f], height[f] = q, distance
                            break
                q = after
        kept = 0
        for i in range(living):
            if alive[live[i]]:
                live[kept] = live[i]
                kept += 1
        for f in range(created, count):
            live[kept] = f
            kept += 1
        living = kept

    kept = live[:living].copy()
    kept.sort()
    return DONE, facets[kept], normals[kept], offsets[kept]


@njit(cache=True)
def _grown(values, size):
    grown = np.empty((size,) + values.shape[1:], values.dtype)
    grown[:len(values)] = values
    return grown


@njit(cache=True)
def extreme_vertices(facets: np.ndarray, normals: np.ndarray, n: int) -> np.ndarray:
    """Mask of the facets' vertices that are extreme points: those whose facets' normals span
    three dimensions (a vertex inside a flat face sees one normal, inside a straight edge
    two).  ``O(f)`` plus ``O(f)`` per vertex."""
    extreme = np.zeros(n, np.bool_)
    on_hull = np.zeros(n, np.bool_)
    for f in range(len(facets)):
        for e in range(3):
            on_hull[facets[f, e]] = True
    rank_of = np.zeros(n, np.int64)
    firsts = np.full(n, -1, np.int64)
    seconds = np.full(n, -1, np.int64)
    for f in range(len(facets)):
        for e in range(3):
            v = facets[f, e]
            if rank_of[v] == 0:
                firsts[v], rank_of[v] = f, 1
            elif rank_of[v] == 1:
                a = firsts[v]
                cx = normals[a, 1] * normals[f, 2] - normals[a, 2] * normals[f, 1]
                cy = normals[a, 2] * normals[f, 0] - normals[a, 0] * normals[f, 2]
                cz = normals[a, 0] * normals[f, 1] - normals[a, 1] * normals[f, 0]
                if np.sqrt(cx * cx + cy * cy + cz * cz) > EXTREME_SINE:
                    seconds[v], rank_of[v] = f, 2
            elif rank_of[v] == 2:
                a, b = firsts[v], seconds[v]
                cx = normals[a, 1] * normals[b, 2] - normals[a, 2] * normals[b, 1]
                cy = normals[a, 2] * normals[b, 0] - normals[a, 0] * normals[b, 2]
                cz = normals[a, 0] * normals[b, 1] - normals[a, 1] * normals[b, 0]
                volume = cx * normals[f, 0] + cy * normals[f, 1] + cz * normals[f, 2]
                if abs(volume) > EXTREME_SINE * np.sqrt(cx * cx + cy * cy + cz * cz):
                    rank_of[v] = 3
    for v in range(n):
        extreme[v] = on_hull[v] and rank_of[v] == 3
    return extreme


@njit(cache=True)
def hull_3d(points: np.ndarray, tolerance: float):
    """Hull of ``points`` (``n x 3``): ``(status, facets, normals, offsets)``, every facet
    vertex an extreme point.

    Quickhull can keep a point that a later point left in the middle of a flat face
    (or edge) as a vertex of its triangulation; such points are dropped and the hull of the
    extreme points computed again (at most three rounds, else ``FAILED``).  On a nearly flat
    set the search and the normals around a true vertex can both go wrong and the vertex be
    left out: a point farther than ``tolerance`` outside the final hull is ``FAILED``.
    ``O(n log n)`` expected per round, plus ``O(n f)`` for that test.
    """
    chosen = np.arange(points.shape[0])
    for attempt in range(3):
        status, facets, normals, offsets = _quickhull_3d(points if attempt == 0 else points[chosen], tolerance)
        if status != DONE:
            return status, facets, normals, offsets
        extreme = extreme_vertices(facets, normals, len(chosen))
        on_hull = np.zeros(len(chosen), np.bool_)
        for f in range(len(facets)):
            for e in range(3):
                on_hull[facets[f, e]] = True
        renamed = chosen[facets]
        if np.array_equal(extreme, on_hull):
            if _outside(points, normals, offsets, tolerance):
                return FAILED, facets[:0], normals[:0], offsets[:0]
            return DONE, renamed, normals, offsets
        chosen = chosen[np.flatnonzero(extreme)]
        if len(chosen) < 4:
            return FAILED, facets[:0], normals[:0], offsets[:0]
    return FAILED, facets[:0], normals[:0], offsets[:0]


@njit(cache=True)
def _outside(points, normals, offsets, tolerance):
    """Whether a point lies farther than ``tolerance`` above a facet's plane (``O(n f)``)."""
    for p in range(points.shape[0]):
        for f in range(len(offsets)):
            if normals[f, 0] * points[p, 0] + normals[f, 1] * points[p, 1] + normals[f, 2] * points[p, 2] \
                    + offsets[f] > tolerance:
                return True
    return False


@njit(cache=True)
def repeel_3d(points: np.ndarray, tolerance: float, origin: np.ndarray, damaged: np.ndarray,
              free_layers: int, room: int):
    """Convex layers of ``points`` (``n x 3``) that were layers before a change (the insertion
    and deletion cascades of SAO, section 3.6, for a whole slide): ``origin[i]`` is the earlier
    layer of point ``i`` (``-1``: an inserted point), ``damaged[l]`` whether earlier layer ``l``
    lost points (no earlier layers: a peel from scratch).  Peeled outermost first while
    :func:`hull_3d` settles them (a flat or failed remainder is left to the caller), and no
    further than the layer at which the budget binds: the first one after the first
    ``free_layers`` whose places, with those of the layers before it, exceed ``room`` (SAO
    trims that layer and drops every point below it, so deeper layers would be wasted work;
    a ``room`` below zero stops at the first layer after ``free_layers``).

    An earlier layer that is *intact* (it lost no point and none of its points is peeled yet)
    contains every point of the deeper earlier layers, so each layer is the hull of the points
    left that are inserted or come from earlier layers down to the first intact one, not of
    all the points left; and once every point left forms intact earlier layers, those are the
    layers that follow, and peeling stops.  Returns ``(members, member_starts, facets,
    facet_starts, normals, offsets, scales, kept_from)``: layer ``j`` is
    ``members[member_starts[j]:member_starts[j + 1]]`` (ascending indices into ``points``),
    its facets ``facets[facet_starts[j]:facet_starts[j + 1]]`` numbered by position within the
    layer, with their planes; ``scales[j]`` is the largest absolute coordinate (at least 1) of
    all the points left when it was peeled, which scales ``tolerance`` as for one hull;
    ``kept_from`` the first earlier layer that follows unchanged (``-1``: none).
    ``O(Σ c_j f_j + n)`` per layer for ``c_j`` candidates of layer ``j``.
    """
    n = points.shape[0]
    earlier = damaged.shape[0]
    members = np.empty(n, np.int64)
    member_starts = np.zeros(n + 1, np.int64)
    facets = np.empty((2 * n + 8, 3), np.int64)
    normals = np.empty((2 * n + 8, 3))
    offsets = np.empty(2 * n + 8)
    facet_starts = np.zeros(n + 1, np.int64)
    scales = np.empty(n)
    peeled = np.zeros(n, np.bool_)
    left_in = np.zeros(earlier, np.int64)
    for i in range(n):
        if origin[i] >= 0:
            left_in[origin[i]] += 1
    intact = ~damaged
    candidates = np.empty(n, np.int64)
    position = np.full(n, -1, np.int64)
    magnitude = np.ones(n)
    for i in range(n):
        for c in range(3):
            magnitude[i] = max(magnitude[i], abs(points[i, c]))
    by_magnitude = np.argsort(-magnitude, kind="mergesort")
    largest = 0  # position in by_magnitude of the largest magnitude left
    left = n
    layers = 0
    placed = 0
    kept_from = -1
    while left > 0 and not (layers > free_layers and placed > room):
        first_intact = -1
        for layer in range(earlier):
            if intact[layer] and left_in[layer] > 0:
                first_intact = layer
                break
        while peeled[by_magnitude[largest]]:
            largest += 1
        scale = magnitude[by_magnitude[largest]]
        chosen = 0
        for i in range(n):
            if not peeled[i]:
                if first_intact < 0 or origin[i] <= first_intact:
                    candidates[chosen] = i
                    chosen += 1
        if first_intact >= 0:
            settled = True
            for i in range(chosen):
                if origin[candidates[i]] < first_intact:
                    settled = False
                    break
            for layer in range(first_intact, earlier):
                if left_in[layer] > 0 and not intact[layer]:
                    settled = False
            if settled:
                kept_from = first_intact
                break
        if chosen < 4:
            break
        pool = candidates[:chosen]
        status, found, planes, shifts = hull_3d(points[pool], tolerance * scale)
        if status != DONE:
            break
        on_hull = np.zeros(chosen, np.bool_)
        for f in range(len(found)):
            for e in range(3):
                on_hull[found[f, e]] = True
        vertices = np.flatnonzero(on_hull)
        for v in range(len(vertices)):
            position[vertices[v]] = v
        first, last = member_starts[layers], member_starts[layers] + len(vertices)
        for v in range(len(vertices)):
            i = pool[vertices[v]]
            members[first + v] = i
            peeled[i] = True
            if origin[i] >= 0:
                left_in[origin[i]] -= 1
                intact[origin[i]] = False
        start, stop = facet_starts[layers], facet_starts[layers] + len(found)
        for f in range(len(found)):
            for e in range(3):
                facets[start + f, e] = position[found[f, e]]
        normals[start:stop], offsets[start:stop] = planes, shifts
        scales[layers] = scale
        layers += 1
        member_starts[layers], facet_starts[layers] = last, stop
        left -= len(vertices)
        placed += len(vertices)
    stop = facet_starts[layers]
    return (members[:member_starts[layers]], member_starts[:layers + 1], facets[:stop], facet_starts[:layers + 1],
            normals[:stop], offsets[:stop], scales[:layers], kept_from)
