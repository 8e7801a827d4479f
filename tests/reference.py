"""An independent reference for the conformance tests: plain Python, nothing shared with the engine.

It implements the documented semantics (``docs/CONTRACTS.md``) from the text, not from the
engine's code: no ``engine.slides``, ``engine.score``, ``top_indices`` or ``Answer``.  Scores are ``w . x``
summed feature by feature in order (the documented way, so equal inputs give bit-equal
scores); the window of every slide is rebuilt from scratch and sorted by the documented total
order: score descending, and among equal scores the newer object (larger ``seq``) first.
"""

from __future__ import annotations


def object_score(features: list[float], weights: list[float]) -> float:
    """``F(o) = w . x(o)``, accumulated from the first feature on."""
    total = features[0] * weights[0]
    for value, weight in zip(features[1:], weights[1:]):
        total += value * weight
    return total


def boundaries(times: list[int], kind: str, slide: int) -> list[int]:
    """Ends of the complete slides: multiples of ``s`` in seq (count) or time (time windows).

    Count windows: slide ``j`` holds seq ``(j-1) s .. j s - 1``; it is complete once its last
    object has arrived.  Time windows: boundaries are multiples of ``s`` starting from the one at
    or below the first time; the slide ending at ``T`` is complete once an object with time at
    least ``T`` is known to exist, that is ``T <= last time``.
    """
    if kind == "count":
        return [slide * j for j in range(1, len(times) // slide + 1)]
    if not times:
        return []
    ends = []
    end = (times[0] // slide) * slide + slide
    while end <= times[-1]:
        ends.append(end)
        end += slide
    return ends


def reference_answers(ids, times, features, weights, k: int, window: int, slide: int, kind: str = "count"):
    """``[(end, [(id, score, seq), ...]), ...]``: the ranked answer after every complete slide.

    ``features`` is a sequence of rows (or of single values for one feature).

    >>> reference_answers([10, 11, 12, 13], [0, 1, 2, 3], [5.0, 1.0, 5.0, 2.0], [1.0], k=2, window=4, slide=2)
    [(2, [(10, 5.0, 0), (11, 1.0, 1)]), (4, [(12, 5.0, 2), (10, 5.0, 0)])]
    """
    weights = [float(w) for w in weights]
    objects = []
    for seq, (oid, when, row) in enumerate(zip(ids, times, features)):
        row = [float(v) for v in row] if hasattr(row, "__len__") else [float(row)]
        objects.append({"id": int(oid), "seq": seq, "t": int(when), "score": object_score(row, weights)})
    key = "seq" if kind == "count" else "t"
    out = []
    for end in boundaries([o["t"] for o in objects], kind, slide):
        inside = [o for o in objects if end - window <= o[key] < end]
        inside.sort(key=lambda o: (o["score"], o["seq"]), reverse=True)
        out.append((end, [(o["id"], o["score"], o["seq"]) for o in inside[:k]]))
    return out
