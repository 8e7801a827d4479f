"""Loading the compiled kernels before anything is timed.

numba compiles a kernel at its first call (or loads it from its cache, ``NUMBA_CACHE_DIR``), so
the first slides an algorithm processes in a process pay for it (a replay's first MinTopK slide
took 1.5 s of wall clock with the kernels in the cache, on a loaded machine, and the next ones
about 0.02 ms).  Whatever reports a time per slide (the replay's
``slide_metrics.seconds``, the dashboard's ms / slide, the benchmarks) first calls
:func:`load_kernels`, so that its figures measure the algorithm.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .query import Query
from .registry import algorithm_class, create
from .stream import slides

ENGINE = __name__.split(".")[0] + "."

SHAPES = ((200, 10, 5), (2_000, 100, 10), (300, 1, 3), (600, 20, 20), (500, 10, 1))
"""``(window, slide, k)`` of the count windows run: together they reach every step (partition
and unit ends, S-AVL builds, rescans, the dynamic partitions' test with ``k > 10``, ``k = 1``)."""
SAO_SHAPES, SAO_MEMORY = ((40, 4, 3),), 12
"""SAO's: one small window and a budget small enough for its layers to fill, so its hull
kernels run (its index re-peels layers in Python: :data:`SHAPES` would take seconds)."""


@lru_cache(maxsize=None)
def _load(name: str, dimensions: int, params: tuple) -> None:
    kind = algorithm_class(name)
    if not kind.__module__.startswith(ENGINE):
        return
    single = kind.stream == "single"
    settings, shapes = dict(params), SHAPES
    if name == "sao":
        settings["memory"], shapes = min(settings.get("memory", SAO_MEMORY), SAO_MEMORY), SAO_SHAPES
        import scipy.spatial  # noqa: F401 - Qhull, where a hull kernel fails: 0.3-0.7 s to import in a slide
    rng = np.random.default_rng(3)
    for window, slide, k in shapes:
        rows = 3 * window
        ids, t = np.arange(rows), np.arange(rows)
        falling = 1.0 - np.arange(rows) / rows
        q = Query(weights=[1.0] * dimensions, k=k, window=window, slide=slide)
        for monotone in (False, True):
            if single:   # random points, then points on the diagonal whose scores keep falling
                features = (np.repeat(falling[:, None], dimensions, axis=1) if monotone
                            else rng.random((rows, dimensions)))
                data = (ids, t, features)
            else:
                data = (ids // dimensions, ids % dimensions, falling if monotone else rng.random(rows), t)
            alg = create(name, q, **settings)
            for batch in slides(data, q):
                alg.process(batch)
                alg.topk()
                alg.stats()


def load_kernels(name: str, dimensions: int = 1, **params) -> None:
    """Load (or, on a fresh clone, compile) every compiled kernel algorithm ``name`` (with
    ``params``) can call, untimed: three window turnovers of small count windows with random and
    monotone scores, ``dimensions`` features (the number of streams for an attribute-stream
    algorithm).  Once per process and arguments; ``O(1)`` after the first call.  An algorithm
    registered from outside the engine (a plugin) is left alone: its kernels, and the inputs it
    takes, are its own.

    Examples
    --------
    >>> load_kernels("mintopk")
    """
    _load(name, max(1, dimensions), tuple(sorted(params.items())))
