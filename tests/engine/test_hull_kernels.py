"""The compiled hull kernels of SAO (``engine/kernels/hull.py``) against Qhull.

The reference is ``scipy.spatial.ConvexHull`` (Qhull) on the same points: the kernels' vertex
sets (as point sets, so that duplicates compare by position) must equal Qhull's on random
sets, integer grids (coplanar faces, collinear edges), duplicated points and points placed on
a cube's faces and edges; flat sets must be reported ``FLAT``.  The facets must be outward
planes through their three vertices with every point on their inner side.
"""

from __future__ import annotations


import numpy as np
import pytest
from scipy.spatial import ConvexHull

from engine.algorithms.sao_hull import convex_hull, layer_hull
from engine.kernels import hull as kernel
from tests.nojit import run_script

TOLERANCE = 1e-12
SAO_SCRIPT = """
import json, numpy as np, engine
rng = np.random.default_rng(5)
x = np.concatenate([rng.random((300, 3)), np.round(rng.random((300, 3)) * 4) / 4])
q = engine.Query(weights=[1.0, 0.5, -0.25], k=4, window=120, slide=10)
alg = engine.create("sao", q, memory=30, layers=3)
out = []
for batch in engine.slides((np.arange(600), np.arange(600), x), q):
    alg.process(batch)
    alg.check()
    out.append([alg.topk().ids.tolist(), [layer.tolist() for layer in alg.layers()]])
print(json.dumps(out))
"""


def vertex_points(points: np.ndarray, vertices) -> set[tuple]:
    return {tuple(points[v]) for v in np.asarray(vertices).tolist()}


def qhull_points(points: np.ndarray) -> set[tuple]:
    return vertex_points(points, ConvexHull(points).vertices)


def kernel_points(points: np.ndarray) -> set[tuple]:
    if points.shape[1] == 2:
        status, polygon = kernel.hull_2d(points, TOLERANCE)
        assert status == kernel.DONE
        return vertex_points(points, polygon)
    status, facets, normals, offsets = kernel.hull_3d(points, TOLERANCE)
    assert status == kernel.DONE
    check_facets(points, facets, normals, offsets)
    return vertex_points(points, np.unique(facets))


def check_facets(points, facets, normals, offsets):
    assert np.allclose(np.linalg.norm(normals, axis=1), 1.0)
    through = np.einsum("fcd,fd->fc", points[facets], normals) + offsets[:, None]
    assert np.abs(through).max() <= 1e-9, "a facet's plane misses one of its vertices"
    assert (points @ normals.T + offsets).max() <= 1e-9, "a point lies outside a facet"
    center = points[np.unique(facets)].mean(axis=0)
    assert (normals @ center + offsets).max() < 0, "a facet faces inwards"


def grid(d: int, side: int) -> np.ndarray:
    axes = np.meshgrid(*[np.arange(side, dtype=float)] * d, indexing="ij")
    return np.stack([a.ravel() for a in axes], axis=1)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("n", [4, 5, 9, 40, 300])
@pytest.mark.parametrize("seed", range(6))
def test_random_sets_have_qhulls_vertices(d, n, seed):
    rng = np.random.default_rng([d, n, seed])
    for points in (rng.random((n, d)), rng.normal(size=(n, d)), rng.random((n, d)) * [1.0, 1e-3, 50.0][:d]):
        assert kernel_points(points) == qhull_points(points)


@pytest.mark.parametrize("d,side", [(2, 2), (2, 5), (3, 2), (3, 3), (3, 5)])
def test_grids_keep_only_the_corners(d, side):
    points = grid(d, side)
    rng = np.random.default_rng(side)
    for order in (np.arange(len(points)), rng.permutation(len(points))):
        assert kernel_points(points[order]) == qhull_points(points[order]) == vertex_points(grid(d, 2) * (side - 1), range(2 ** d))


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("seed", range(5))
def test_duplicated_points_give_qhulls_vertex_points(d, seed):
    rng = np.random.default_rng([d, seed, 1])
    base = rng.random((30, d))
    points = base[rng.integers(0, 30, 120)]
    points = np.concatenate([base, points])[rng.permutation(150)]
    assert kernel_points(points) == qhull_points(points)


@pytest.mark.parametrize("seed", range(5))
def test_points_on_faces_and_edges_of_a_cube_are_not_vertices(seed):
    rng = np.random.default_rng(seed)
    corners = grid(3, 2)
    on_faces = rng.random((60, 3))
    on_faces[np.arange(60), rng.integers(0, 3, 60)] = rng.integers(0, 2, 60)
    on_edges = rng.integers(0, 2, (30, 3)).astype(float)
    on_edges[np.arange(30), rng.integers(0, 3, 30)] = rng.random(30)
    inside = rng.random((40, 3)) * 0.8 + 0.1
    points = np.concatenate([on_faces, on_edges, inside, corners])[rng.permutation(138)]
    assert kernel_points(points) == qhull_points(points) == vertex_points(corners, range(8))


@pytest.mark.parametrize("seed", range(4))
def test_flat_sets_are_reported_flat(seed):
    rng = np.random.default_rng(seed)
    line = rng.random((20, 1)) * rng.random((1, 2)) + rng.random((1, 2))
    assert kernel.hull_2d(line, TOLERANCE)[0] == kernel.FLAT
    assert kernel.hull_2d(np.repeat(rng.random((1, 2)), 5, axis=0), TOLERANCE)[0] == kernel.FLAT
    span = rng.random((2, 3))
    plane = rng.random((25, 2)) @ span + rng.random(3)
    assert kernel.hull_3d(plane, TOLERANCE)[0] == kernel.FLAT
    segment = rng.random((10, 1)) * rng.random((1, 3))
    assert kernel.hull_3d(segment, TOLERANCE)[0] == kernel.FLAT
    assert kernel.hull_3d(np.repeat(rng.random((1, 3)), 6, axis=0), TOLERANCE)[0] == kernel.FLAT


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_convex_hull_contains_exactly_the_points_qhull_contains(d, seed):
    rng = np.random.default_rng([d, seed, 2])
    points = rng.random((60, d))
    hull, reference = convex_hull(points), ConvexHull(points)
    assert vertex_points(points, hull.vertices) == vertex_points(points, reference.vertices)
    probes = rng.random((400, d)) * 1.4 - 0.2
    expected = (probes @ reference.equations[:, :-1].T + reference.equations[:, -1]).max(axis=1) <= 1e-9
    assert np.array_equal(hull.contains(probes), expected)
    pairs = {frozenset(pair) for cell in hull.cells.tolist() for pair in zip(cell, cell[1:] + cell[:1])}
    qhull_pairs = {frozenset(pair) for cell in reference.simplices.tolist() for pair in zip(cell, cell[1:] + cell[:1])}
    assert pairs == qhull_pairs


def qhull_layers(points: np.ndarray) -> list[set[tuple]]:
    """Convex layers by repeated Qhull runs, while the rest is full-dimensional."""
    layers, rest = [], points
    while len(rest) >= 4:
        try:
            hull = ConvexHull(rest)
        except Exception:
            break
        layers.append(vertex_points(rest, hull.vertices))
        keep = np.ones(len(rest), dtype=bool)
        keep[hull.vertices] = False
        rest = rest[keep]
    return layers


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", ["uniform", "slab", "grid"])
def test_peel_gives_qhulls_layers(seed, shape):
    rng = np.random.default_rng([seed, 3])
    if shape == "uniform":
        points = rng.random((200, 3))
    elif shape == "slab":
        size = rng.integers(1, 400, 300).astype(float)
        price = 100 + rng.integers(0, 20, 300) / 100
        points = np.unique(np.stack([price * size, price, size], axis=1), axis=0)
        points = (points - points.min(axis=0)) / np.ptp(points, axis=0)
    else:
        points = grid(3, 4)[rng.permutation(64)]
    members, member_starts, facets, facet_starts, normals, offsets, _, kept_from = kernel.repeel_3d(
        points, TOLERANCE, np.full(len(points), -1, np.int64), np.zeros(0, dtype=bool), len(points), len(points))
    assert kept_from == -1
    peeled = [vertex_points(points, members[a:b]) for a, b in zip(member_starts[:-1], member_starts[1:])]
    expected = qhull_layers(points)
    assert peeled == expected
    for j in range(len(peeled)):
        layer = points[members[member_starts[j]:member_starts[j + 1]]]
        faces = slice(facet_starts[j], facet_starts[j + 1])
        check_facets(layer, facets[faces], normals[faces], offsets[faces])


def run_sao(no_jit: bool) -> list:
    return run_script(SAO_SCRIPT, no_jit=no_jit)


def test_sao_runs_the_kernels_as_plain_python_with_the_same_layers():
    """A small 3-D stream (random and grid points: coplanar faces, ties) through an index of 30
    places: with ``NUMBA_DISABLE_JIT=1`` every slide's answer and layers equal the compiled run's."""
    plain, compiled = run_sao(no_jit=True), run_sao(no_jit=False)
    assert plain == compiled
    assert max(len(layers) for _, layers in compiled) >= 3, "the index was never peeled into layers"


def test_a_kernel_failure_falls_back_to_qhull(monkeypatch):
    points = np.random.default_rng(9).random((50, 3))
    failed = (kernel.FAILED, np.empty((0, 3), np.int64), np.empty((0, 3)), np.empty(0))
    monkeypatch.setattr(kernel, "hull_3d", lambda points, tolerance: failed)
    hull = convex_hull(points)
    assert vertex_points(points, hull.vertices) == qhull_points(points)
    assert hull.exact and hull.contains(points).all()


def test_points_in_line_out_of_sort_order_are_not_dropped():
    """Found by fuzzing (SAO's layers over features from -1e15 to 1e15): three points nearly on
    the line x = 0.5, the lowest one ulps to the right, sort out of order along it; the chain kept
    the middle one and dropped the top, which then lay outside the polygon.  The kernel now says
    ``FAILED`` and the hull is Qhull's: the top point is a vertex and every point is inside."""
    points = np.array([[0.5, 0.2178234178593784], [0.5000000000000006, 0.11140857758015121],
                       [0.0, 0.6502185494917123], [0.5, 0.27803053298836017]])
    status, polygon = kernel.hull_2d(points, TOLERANCE)
    assert status == kernel.FAILED or 3 in polygon.tolist()
    hull = convex_hull(points)
    assert hull.vertices.tolist() == [1, 2, 3]
    assert hull.contains(points).all()


@pytest.mark.parametrize("seed", range(6))
def test_repeel_after_insertions_and_deletions_gives_qhulls_layers(seed):
    """Layers peeled (by Qhull), then some points deleted and some inserted: the re-peel that
    starts from those layers (each layer from the points down to the first intact one, stopping
    where intact layers follow) gives Qhull's layers of the changed set, and names the first
    earlier layer it keeps exactly when the layers from there on are unchanged."""
    rng = np.random.default_rng([seed, 11])
    points = rng.random((160, 3))
    before = qhull_layers(points)
    layer_of = {point: j for j, layer in enumerate(before) for point in layer}
    deleted = rng.random(len(points)) < [0.0, 0.02, 0.1][seed % 3]
    deleted |= np.array([layer_of.get(tuple(p), -1) < 0 for p in points])  # leave out an unpeeled rest
    kept = points[~deleted]
    inserted = rng.random((int(rng.integers(0, 6)), 3)) * [1.0, 1.0, 0.2 + 0.8 * (seed % 2)]
    pool = np.concatenate([kept, inserted])
    origin = np.array([layer_of[tuple(p)] for p in kept] + [-1] * len(inserted), np.int64)
    damaged = np.zeros(len(before), dtype=bool)
    for p in points[deleted]:
        if tuple(p) in layer_of:
            damaged[layer_of[tuple(p)]] = True
    members, member_starts, _, _, _, _, _, kept_from = kernel.repeel_3d(pool, TOLERANCE, origin, damaged,
                                                                        len(pool), len(pool))
    peeled = [vertex_points(pool, members[a:b]) for a, b in zip(member_starts[:-1], member_starts[1:])]
    expected = qhull_layers(pool)
    if kept_from >= 0:
        assert not damaged[kept_from:].any()
        rest = [{p for p, o in zip(map(tuple, pool), origin) if o == j} for j in range(kept_from, len(before))]
        assert rest == before[kept_from:]
        peeled += rest
    assert peeled == expected



@pytest.mark.parametrize("free_layers, room", [(0, 10), (2, 40), (3, -1), (1, 0), (100, 1000)])
def test_repeel_stops_at_the_layer_where_the_budget_binds(free_layers, room):
    """With a budget the peel is the unlimited peel's layers up to and including the first one
    after ``free_layers`` whose places, with those before it, exceed ``room`` (SAO trims that
    layer and drops the rest); every layer, facet and plane equals the unlimited peel's."""
    points = np.random.default_rng(21).random((150, 3))
    origin, damaged = np.full(len(points), -1, np.int64), np.zeros(0, dtype=bool)
    whole = kernel.repeel_3d(points, TOLERANCE, origin, damaged, len(points), len(points))
    sizes = np.diff(whole[1])
    binding = next((j for j in range(len(sizes)) if j >= free_layers and sizes[:j + 1].sum() > room), len(sizes) - 1)
    members, member_starts, facets, facet_starts, normals, offsets, scales, kept_from = kernel.repeel_3d(
        points, TOLERANCE, origin, damaged, free_layers, room)
    assert len(scales) == binding + 1 and kept_from == -1
    assert np.array_equal(member_starts, whole[1][:binding + 2])
    assert np.array_equal(members, whole[0][:member_starts[-1]])
    assert np.array_equal(facet_starts, whole[3][:binding + 2])
    for got, expected in zip((facets, normals, offsets, scales), (whole[2], whole[4], whole[5], whole[6])):
        assert np.array_equal(got, expected[:len(got)])

def test_a_near_duplicate_out_of_the_chains_order_does_not_make_a_triangle_flat():
    """Found by fuzzing SAO: (1e-300, 0) sorts after (0, 1) though it lies 1e-300 from (0, 0);
    the chain's tolerant line test popped (0, 1) and the set came out ``FLAT``."""
    points = np.array([[-1.0, 0.5], [-1.0, 0.5], [0.0, 1.0], [1e-300, 0.0], [0.0, 0.0], [0.0, 0.0]])
    status, _ = kernel.hull_2d(points, TOLERANCE)
    assert status != kernel.FLAT
    assert vertex_points(points, convex_hull(points).vertices) == {(-1.0, 0.5), (0.0, 1.0), (1e-300, 0.0)}


def test_a_nearly_flat_3d_hull_leaves_no_point_outside():
    """Points near the unit square with heights from 1 down to 1e-14 and jitter from 1e-15 to
    1e-10 (slivers of tetrahedra): whenever the kernel answers, every point lies within the
    tolerance of every facet (else the extreme-point test dropped a true vertex)."""
    answered = 0
    for seed in range(600):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 20))
        points = rng.choice([0.0, 1.0], (n, 3))
        points[:, 2] *= rng.choice([1.0, 1e-9, 1e-10, 1e-11, 1e-14], n)
        points += rng.choice([0, 1], (n, 3)) * rng.choice([1e-15, 1e-13, 1e-12, 1e-10], (n, 3))
        status, facets, normals, offsets = kernel.hull_3d(points, TOLERANCE)
        if status == kernel.DONE:
            answered += 1
            assert (points @ normals.T + offsets).max() <= TOLERANCE * (1 + 1e-9), f"seed {seed}"
    assert answered > 100


def test_the_outside_test_agrees_with_a_plain_one():
    """``_outside`` says whether some point lies farther than the tolerance above some facet,
    as the plain test over every pair does: points inside, on and
    just beyond (by 0.5 and 2 tolerances) the unit cube's six planes, and a NaN point."""
    normals = np.concatenate([np.eye(3), -np.eye(3)])
    offsets = np.array([-1.0, -1.0, -1.0, 0.0, 0.0, 0.0])
    rng = np.random.default_rng(4)
    for beyond in (0.0, 0.5 * TOLERANCE, 2 * TOLERANCE, np.nan):
        for face in range(6):
            points = rng.random((40, 3))
            points[17] = 0.5
            points[17, face % 3] = (1.0 + beyond) if face < 3 else -beyond
            plain = bool(((points @ normals.T + offsets) > TOLERANCE).any())
            assert kernel._outside(points, normals, offsets, TOLERANCE) == plain
            assert plain == (beyond == 2 * TOLERANCE)

@pytest.mark.parametrize("d", [2, 3])
def test_a_layer_hulls_vertices_are_all_vertices_of_their_own_hull(d):
    """Points at the corners of the unit square (cube) moved by 1e-13 to 2e-12, about the
    tolerance: a vertex of the whole set can be inside the hull of the other vertices by the
    tolerance, so ``convex_hull`` of the vertices alone drops it; ``layer_hull``'s vertices keep
    themselves, and every point lies within the containment tolerance of its hull."""
    for seed in range(400):
        rng = np.random.default_rng([d, seed])
        corners = rng.choice([0.0, 1.0], (int(rng.integers(2, 6)), d))
        n = int(rng.integers(3, 12))
        points = corners[rng.integers(0, len(corners), n)]
        points += rng.choice([0, 1], (n, d)) * rng.choice([1e-12, 1.5e-12, 2e-12, 1e-13], (n, d))
        hull = layer_hull(points)
        assert len(convex_hull(points[hull.vertices]).vertices) == len(hull.vertices), f"seed {seed}"
        assert hull.contains(points).all(), f"seed {seed}"


@pytest.mark.parametrize("seed", range(3))
def test_horizon_by_scan_and_by_sort_give_the_same_hull(monkeypatch, seed):
    """Quickhull finds the horizon by scanning the visible facets' edges up to
    ``SCANNED_EDGES`` of them and by sorting beyond; both ways give the same facets, in the
    same order (run as plain Python, where the constant can be changed)."""
    rng = np.random.default_rng(seed)
    sphere = rng.standard_normal((120, 3))
    quickhull = getattr(kernel._quickhull_3d, "py_func", kernel._quickhull_3d)  # plain already without the JIT
    for points in (rng.random((80, 3)), np.round(rng.random((80, 3)) * 3) / 3,
                   sphere / np.linalg.norm(sphere, axis=1)[:, None]):
        monkeypatch.setattr(kernel, "SCANNED_EDGES", 0)
        sorted_ = quickhull(points, TOLERANCE)
        monkeypatch.setattr(kernel, "SCANNED_EDGES", 10 ** 9)
        scanned = quickhull(points, TOLERANCE)
        assert sorted_[0] == scanned[0] == kernel.DONE
        for a, b in zip(sorted_[1:], scanned[1:]):
            np.testing.assert_array_equal(a, b)
