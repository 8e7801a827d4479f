"""Convex hulls for the SAO index: compiled kernels or Qhull, every degenerate case handled, never raising.

A :class:`Hull` describes the convex hull of a point set by its vertices (indices into the
points), a containment test written as half-spaces ``normals · x + offsets <= tol`` and the
vertex pairs that share a hull edge (for the nearest-hull-neighbour rule of SAO's overflow).

Cases (``n`` points in ``d`` dimensions):

- ``d = 1``: the hull is the minimum and the maximum (the newest copy on ties).
- Full rank (``n >= d + 1`` and not flat), ``d = 2`` or ``3``: the compiled kernels of
  :mod:`engine.kernels.hull` (monotone chain; Quickhull), which answer in microseconds
  where Qhull spends about 90 µs setting up; a set they do not settle goes on as below.
- Full rank, ``d >= 4`` (or a set the kernels found numerically inconsistent):
  ``scipy.spatial.ConvexHull`` (Qhull), after the rank test below; on a thin set (smallest
  singular value below ``THIN`` times the largest) a hull Qhull returns that leaves a point
  outside (beyond the containment tolerance) counts as a failure.
- Flat (fewer than ``d + 1`` points, duplicates, collinear or coplanar sets): the hull of the
  points inside their affine span, computed in the span's coordinates, plus two half-spaces per
  direction orthogonal to the span.  A single distinct point is its own hull (the newest copy).
- Qhull still failing (precision on a nearly flat set): retried with ``qhull_options="QJ"``;
  if that fails too (or the SVD does not converge, or a coordinate is not finite, or the
  points minus their mean overflow), every point is a vertex and the containment test says
  "outside" for every point (``exact = False``).

Points are expected in a canonical order (the SAO index sorts by ``seq``) so that the same set
always gives the same hull.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import hull as kernel

RANK_TOLERANCE = 1e-12
"""Singular values below this fraction of the largest one count as zero (a flat set), as do those
below the kernels' tolerance (a spread the kernels call flat is flat here too)."""

KERNEL_TOLERANCE = 1e-12
"""The compiled kernels count a point within this distance (times the coordinates' scale) of a
facet's plane as on it."""

THIN = 1e-6
"""A full-rank set whose smallest singular value is below this fraction of the largest is thin:
Qhull's hull of it is checked to contain every point (it is not, cheaply, on well-spread sets)."""

CONTAINMENT_TOLERANCE = 1e-9
"""A point within this distance (times the coordinates' scale) of the hull counts as inside."""


@dataclass(eq=False)
class Hull:
    """Vertices, half-spaces and edges of the convex hull of a point set.

    ``vertices`` are indices into the points, ascending; ``normals`` (``f x d``, unit rows) and
    ``offsets`` (``f``) give the hull as ``normals · x + offsets <= 0``; ``cells`` (rows of
    vertex indices: the facet simplices, or the segment of a 1-D hull) name the hull edges,
    every pair inside one cell (``None`` when unknown); ``exact`` is ``False`` for the
    all-vertices fallback, which contains no point; ``scale`` (the largest absolute coordinate)
    sets the containment tolerance.
    """

    vertices: np.ndarray
    normals: np.ndarray
    offsets: np.ndarray
    cells: np.ndarray | None
    exact: bool = True
    scale: float = 1.0
    center: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.tolerance = CONTAINMENT_TOLERANCE * max(self.scale, 1.0)
        self.radius = -1.0

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Boolean mask: which rows of ``points`` lie inside or on the hull (``O(m f d)``).

        Points inside the largest ball around the facets' mean point that fits the hull are
        accepted after an ``O(m d)`` test; only the others meet every facet.
        """
        if not self.exact or len(self.offsets) == 0:
            return np.zeros(len(points), dtype=bool)
        if self.radius < 0:
            slack = -(self.normals @ self.center + self.offsets) if self.center is not None else np.zeros(1)
            self.radius = float(max(slack.min(), 0.0))
        gap = points - self.center if self.center is not None else points
        inside = np.einsum("ij,ij->i", gap, gap) < self.radius ** 2
        rest = np.flatnonzero(~inside)
        if len(rest):
            distance = points[rest] @ self.normals.T + self.offsets
            inside[rest] = distance.max(axis=1) <= self.tolerance
        return inside

    def reindexed(self, kept: np.ndarray, size: int) -> "Hull":
        """The same hull with point ``kept[i]`` renamed ``i`` (``kept`` ascending, every vertex in it)."""
        rename = np.full(size, -1, np.int64)
        rename[kept] = np.arange(len(kept))
        cells = None if self.cells is None else rename[self.cells]
        return Hull(rename[self.vertices], self.normals, self.offsets, cells, self.exact, self.scale, self.center)


def convex_hull(points: np.ndarray) -> Hull:
    """The convex hull of ``points`` (``n x d``); degenerate inputs never raise.

    ``O(n log n)`` for full-rank sets in 2-D and 3-D (the kernels; Qhull beyond), plus an
    ``O(n d^2)`` SVD for flat ones.

    Examples
    --------
    >>> import numpy as np
    >>> square = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]], float)
    >>> convex_hull(square).vertices.tolist()
    [0, 1, 2, 3]
    >>> line = np.array([[0, 0], [1, 1], [2, 2]], float)
    >>> hull = convex_hull(line)
    >>> hull.vertices.tolist(), hull.contains(np.array([[1.5, 1.5], [1.0, 0.0]])).tolist()
    ([0, 2], [True, False])
    >>> convex_hull(np.array([[3.0], [1.0], [2.0], [3.0]])).vertices.tolist()
    [1, 3]
    """
    points = np.asarray(points, np.float64)
    n, d = points.shape
    scale = float(np.abs(points).max(initial=1.0))
    if n == 0:
        return Hull(np.empty(0, np.int64), np.empty((0, d)), np.empty(0), np.empty((0, 2), np.int64), True, scale)
    if not np.isfinite(scale):
        return _every_vertex(n, d, 1.0)
    if d == 1:
        hull = _interval(points[:, 0], scale)
    else:
        hull = _compiled(points, scale) if n >= d + 1 and d in (2, 3) else None
        if hull is None:
            hull = _degenerate(points, scale, (None, "QJ") if d >= 4 and n >= d + 1 else ("QJ",))
    if hull.exact:
        hull.center = points[hull.vertices].mean(axis=0)
    return hull


def layer_hull(points: np.ndarray) -> Hull:
    """The hull of ``points`` whose vertices are all vertices of their own hull: a convex layer.

    The tolerances make "vertex" depend on the other points: a vertex of the whole set can
    be within tolerance of the hull of the other vertices (two points closer than about the
    tolerance, which a rank test on singular values and the kernels' distance test judge
    apart; a near-duplicate out of the monotone chain's order), and then :func:`convex_hull`
    of the vertices alone drops it.  So the hull is taken again of its vertices until it
    keeps them all; the hull returned is that last one, with its vertices named as rows of
    ``points``.  Its vertices are what :func:`convex_hull` finds on them, and the points
    dropped lie within the tolerance of it.  One more hull of the vertices (usually the
    last) when a point is not a vertex, ``O(h log h)`` in 2-D and 3-D.

    >>> import numpy as np
    >>> layer_hull(np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]], float)).vertices.tolist()
    [0, 1, 2, 3]
    """
    points = np.asarray(points, np.float64)
    hull = convex_hull(points)
    kept = hull.vertices
    while hull.exact and 1 < len(kept) < len(points):  # every point a vertex: the same hull again
        again = convex_hull(points[kept])
        if len(again.vertices) == len(kept):
            break
        hull = Hull(kept[again.vertices], again.normals, again.offsets,
                    None if again.cells is None else kept[again.cells], again.exact, again.scale, again.center)
        kept = hull.vertices
    return hull


def _degenerate(points: np.ndarray, scale: float, tries: tuple[str | None, ...]) -> Hull:
    """Flat sets in their affine span; else Qhull with each of the options ``tries`` in turn
    until one succeeds; else every point a vertex.  The rank test comes before Qhull: on a
    nearly flat set (a line or plane in 5-D with noise of 1e-13) Qhull can return a hull that
    leaves points far outside without raising."""
    n, d = points.shape
    with np.errstate(over="ignore", invalid="ignore"):
        center = points.mean(axis=0)
        centered = points - center
    if not np.isfinite(centered).all():
        return _every_vertex(n, d, scale)  # coordinates near the largest float: the SVD of inf hangs
    try:
        # every direction of the space is needed (the ones across the span), not the n x n left
        # factor: full_matrices=True costs O(n^2) per call, 2.5 ms at n = 500
        _, singular, basis = np.linalg.svd(centered, full_matrices=n < d)
    except np.linalg.LinAlgError:
        return _every_vertex(n, d, scale)
    largest = singular[0] if len(singular) else 0.0
    rank = int(np.count_nonzero(singular > max(RANK_TOLERANCE * largest, KERNEL_TOLERANCE * scale)))
    if rank < d:
        return _flat(points, center, basis, rank, scale)
    thin = bool(singular[-1] < THIN * largest)
    for options in tries:
        hull = _qhull(points, options, scale, verify=thin)
        if hull is not None:
            return hull
    return _every_vertex(n, d, scale)


def _every_vertex(n: int, d: int, scale: float) -> Hull:
    """The fallback: every point a vertex, no point inside (``exact = False``)."""
    return Hull(np.arange(n, dtype=np.int64), np.empty((0, d)), np.empty(0), None, False, scale)


def _interval(values: np.ndarray, scale: float) -> Hull:
    last = len(values) - 1
    low = last - int(np.argmin(values[::-1]))
    high = last - int(np.argmax(values[::-1]))
    vertices = np.unique([low, high]).astype(np.int64)
    cells = np.array([[low, high]], np.int64) if low != high else np.empty((0, 2), np.int64)
    return Hull(vertices, np.array([[1.0], [-1.0]]), np.array([-values[high], values[low]]), cells, True, scale)


def _compiled(points: np.ndarray, scale: float) -> Hull | None:
    """The kernels' hull; ``None`` for a flat set (or Qhull's hull where the kernel failed)."""
    tolerance = KERNEL_TOLERANCE * scale
    if points.shape[1] == 2:
        status, polygon = kernel.hull_2d(points, tolerance)
        if status == kernel.FLAT:
            return None
        if status == kernel.FAILED:
            return _qhull(points, None, scale)
        following = np.roll(polygon, -1)
        edge = points[following] - points[polygon]
        normals = np.stack([edge[:, 1], -edge[:, 0]], axis=1)
        normals /= np.linalg.norm(normals, axis=1)[:, None]
        cells = np.stack([polygon, following], axis=1)
        return Hull(np.sort(polygon), normals, -(normals * points[polygon]).sum(axis=1), cells, True, scale)
    status, facets, normals, offsets = kernel.hull_3d(points, tolerance)
    if status == kernel.FLAT:
        return None
    if status == kernel.FAILED:
        return _qhull(points, None, scale)
    return Hull(np.unique(facets), normals, offsets, facets, True, scale)


def _qhull(points: np.ndarray, options: str | None, scale: float, verify: bool = True) -> Hull | None:
    """Qhull's hull, or ``None`` where Qhull fails (imported here: ``scipy.spatial`` is slow to import)
    or, with ``verify``, returns a hull that leaves a point outside (``O(n f d)``)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points, qhull_options=options)
    except (QhullError, ValueError):
        return None
    result = Hull(np.sort(hull.vertices).astype(np.int64), hull.equations[:, :-1].copy(),
                  hull.equations[:, -1].copy(), hull.simplices.astype(np.int64), True, scale)
    if verify:
        with np.errstate(over="ignore", invalid="ignore"):
            farthest = (np.einsum("ij,fj->if", points, result.normals) + result.offsets).max()
        if not farthest <= result.tolerance:
            return None  # Qhull's merging went wrong on a sliver
    return result


def _flat(points: np.ndarray, center: np.ndarray, basis: np.ndarray, rank: int, scale: float) -> Hull:
    """Hull of a set spanning a ``rank``-dimensional affine subspace (``rank < d``)."""
    n, d = points.shape
    across = basis[rank:]
    normals_across = np.concatenate([across, -across])
    offsets_across = -normals_across @ center
    if rank == 0:
        return Hull(np.array([n - 1], np.int64), normals_across, offsets_across,
                    np.empty((0, 2), np.int64), True, scale)
    along = basis[:rank]
    inner = convex_hull((points - center) @ along.T)
    if not inner.exact:
        return _every_vertex(n, d, scale)
    normals = inner.normals @ along
    offsets = inner.offsets - normals @ center
    return Hull(inner.vertices, np.concatenate([normals, normals_across]),
                np.concatenate([offsets, offsets_across]), inner.cells, True, scale)


def neighbour_distances(points: np.ndarray, hull: Hull) -> np.ndarray:
    """``R_t`` for every vertex: the distance to its nearest neighbour along a hull edge.

    Indexed like ``hull.vertices``; ``inf`` for a vertex without neighbours (a lone point).
    Without known edges (the fallback) every other vertex counts as a neighbour.
    ``O(f d^2)`` (``O(n^2 d)`` in the fallback).

    >>> import numpy as np
    >>> pts = np.array([[0, 0], [4, 0], [0, 1]], float)
    >>> neighbour_distances(pts, convex_hull(pts)).tolist()
    [1.0, 4.0, 1.0]
    """
    vertices = hull.vertices
    if hull.cells is None:
        coords = points[vertices]
        gaps = np.sqrt(((coords[:, None, :] - coords[None, :, :]) ** 2).sum(axis=2))
        np.fill_diagonal(gaps, np.inf)
        return gaps.min(axis=1) if len(vertices) > 1 else np.full(len(vertices), np.inf)
    best = np.full(len(points), np.inf)
    width = hull.cells.shape[1] if hull.cells.ndim == 2 else 0
    for a in range(width):
        for b in range(a + 1, width):
            first, second = hull.cells[:, a], hull.cells[:, b]
            lengths = np.sqrt(((points[first] - points[second]) ** 2).sum(axis=1))
            np.minimum.at(best, first, lengths)
            np.minimum.at(best, second, lengths)
    return best[vertices]
