"""Record pools: fixed-width int64 rows with a float score each, free rows chained through one column."""

from __future__ import annotations

import numpy as np


def grown_pool(rows: np.ndarray, scores: np.ndarray, meta: np.ndarray, capacity: int, *, link: int, free: int,
               fill: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` and ``scores`` copied into ``capacity`` rows (``O(capacity)``).

    The new rows hold ``fill`` and join the front of the free chain: each links through column
    ``link`` to the next, the last to the chain's old head ``meta[free]``, which becomes the
    first new row.

    >>> meta = np.array([-1])
    >>> rows, scores = grown_pool(np.zeros((2, 2), np.int64), np.ones(2), meta, 4, link=1, free=0, fill=-1)
    >>> rows[:, 1].tolist(), meta.tolist(), scores.tolist()
    ([0, 0, 3, -1], [2], [1.0, 1.0, 0.0, 0.0])
    """
    old = len(rows)
    more = np.full((capacity, rows.shape[1]), fill, np.int64)
    more[:old] = rows
    more[old:, link] = np.arange(old + 1, capacity + 1)
    more[-1, link] = meta[free]
    meta[free] = old
    wider = np.zeros(capacity)
    wider[:old] = scores
    return more, wider
