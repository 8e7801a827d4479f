"""Brute force over attribute streams: every valid tuple, objects aggregated afresh per answer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..attributes import AttributeAlgorithm, aggregate, check_weights
from ..base import check_answer_size
from ..jsondata import floats_in, ints_in
from ..memory import WORD, Footprint, Layout, attribute_bytes
from ..ranking import Answer, finite_score, score, top_indices
from ..registry import register
from ..stream import Batch
from ..window import WindowBuffer

WINDOW = Layout("oracle-incomplete window", {"tuple": {"id": 1, "stream": 1, "value": 1, "t": 1, "seq": 1}})
"""A raw tuple: id, stream, value, t and seq (``TUPLE_WORDS``)."""


TUPLE_PRICE = WINDOW.bytes(tuple=1)
"""``WINDOW``'s price of one tuple."""


class TupleWindow(WindowBuffer):
    """The window's tuples in arrival order: id, stream, value, t and seq (layout ``WINDOW``)."""

    def __init__(self) -> None:
        super().__init__({"ids": np.int64, "stream": np.int64, "value": np.float64, "t": np.int64, "seq": np.int64})

    def footprint(self) -> Footprint:
        """Modelled and measured memory (``O(columns)``)."""
        return Footprint(WINDOW, {"tuple": len(self)}, self.measured_bytes(), 0, (self,))


@register
class OracleIncomplete(AttributeAlgorithm):
    """The exact reference for incomplete streams: the window's tuples in a buffer.

    Every answer aggregates the valid tuples per object (:func:`engine.attributes.aggregate`:
    each attribute summed in arrival order, unseen or expired attributes 0) and selects the
    top ``k`` by ``(score, seq of the newest tuple)``.  ``process`` is ``O(s)`` amortised,
    ``topk`` ``O(n log n + n d)``; ``query(weights, k)`` answers any non-negative weights.
    ``retained`` counts tuples, ``candidates`` valid objects (counted by the slide's
    aggregation, shared with ``topk``); ``bytes`` is ``8 * TUPLE_WORDS`` per tuple (layout
    ``WINDOW``).  ``stats`` is ``O(1)`` after ``topk``, else ``O(n log n)`` once per slide.

    Examples
    --------
    >>> import numpy as np, engine
    >>> q = engine.Query(weights=[1.0, 1.0], k=2, window=4, slide=2)
    >>> alg = engine.create("oracle-incomplete", q)
    >>> data = ([1, 2, 1, 3, 2, 3], [0, 0, 1, 1, 1, 0], [0.5, 0.9, 0.5, 0.2, 0.3, 0.4], range(6))
    >>> for batch in engine.slides(data, q):
    ...     alg.process(batch)
    >>> alg.topk().ids.tolist(), alg.topk().scores.tolist()
    ([3, 1], [0.6000000000000001, 0.5])
    >>> alg.query([0.0, 1.0], 1).ids.tolist()
    [1]
    """

    name = "oracle-incomplete"
    summary = "brute force over the window's attribute tuples (exact reference; answers any weights)"

    def _reset(self) -> None:
        self._window = TupleWindow()
        self._answer: Answer | None = Answer.empty()
        self._objects: int | None = 0
        self._end: int | None = None
        self._fixed_bytes = attribute_bytes(self, exclude=(self.q, self.params, self._window))

    def last_end(self) -> int | None:
        return self._end

    def process(self, batch: Batch) -> None:
        ids, stream, value, _, seq = self._tuples(batch)
        self._window.append(ids=ids, stream=stream, value=value, t=batch.t, seq=seq)
        self._window.expire_before(self.q.expiry_key, batch.window_start(self.q))
        self._end = batch.end
        self._answer = None
        self._objects = None

    def topk(self) -> Answer:
        if self._answer is None:
            w = self._window
            objects, attributes, newest = aggregate(w.view("ids"), w.view("stream"), w.view("value"),
                                                    w.view("seq"), self.q.dimensions)
            self._objects = len(objects)
            scores = score(attributes, self.q.weights) if len(objects) else np.empty(0)
            self._answer = self._ranked(objects, scores, newest, self.q.k)
        return self._answer

    def query(self, weights, k: int) -> Answer:
        """The top ``k`` valid objects under any non-negative ``weights``, one per stream
        (``O(n log n + n d)``)."""
        query = self.q.with_weights(weights)
        if query.dimensions != self.q.dimensions:
            raise ValueError(f"weights must hold one weight per stream ({self.q.dimensions}), "
                             f"got {query.dimensions}")
        check_weights(query, self.name)
        check_answer_size(k)
        w = self._window
        objects, attributes, newest = aggregate(w.view("ids"), w.view("stream"), w.view("value"),
                                                w.view("seq"), self.q.dimensions)
        scores = finite_score(attributes, query.weights) if len(objects) else np.empty(0)
        return self._ranked(objects, scores, newest, int(k))

    @staticmethod
    def _ranked(objects, scores, newest, k: int) -> Answer:
        top = top_indices(scores, newest, k)
        return Answer(objects[top], scores[top], newest[top])

    def candidates(self) -> np.ndarray:
        if not len(self._window):
            return np.empty(0, np.int64)
        w = self._window
        return aggregate(w.view("ids"), w.view("stream"), w.view("value"), w.view("seq"), self.q.dimensions)[2]

    def _stats(self) -> dict[str, Any]:
        if self._objects is None:
            self._objects = len(np.unique(self._window.view("ids")))
        return {"candidates": self._objects, "retained": len(self._window)}

    def footprints(self) -> list[Footprint]:
        return [self._window.footprint()]

    def memory(self) -> tuple[int, int]:
        """Both figures from the tuple count and the buffer's size: ``O(1)``."""
        window = self._window
        answer = 0 if self._answer is None else 3 * WORD * len(self._answer)
        return TUPLE_PRICE * len(window), window.measured_bytes() + self._fixed_bytes + answer

    def dump_state(self) -> dict[str, Any]:
        w = self._window
        return {"end": self._end, "ids": w.view("ids").tolist(), "stream": w.view("stream").tolist(),
                "value": w.view("value").tolist(), "t": w.view("t").tolist(), "seq": w.view("seq").tolist(),
                "buffer": w.placement()}

    def load_state(self, data: dict[str, Any]) -> None:
        """Read :meth:`dump_state` data; ``buffer`` (absent before the buffer's placement was
        saved) places the window where it was."""
        columns = {name: ints_in(data[name], name) for name in ("ids", "stream", "t", "seq")}
        columns["value"] = floats_in(data["value"])
        if len({len(column) for column in columns.values()}) > 1:
            raise ValueError("state columns have different lengths")
        if "buffer" in data:
            self._window.place(**data["buffer"])
        self._window.append(**columns)
        self._end = data["end"]
        self._answer = None
        self._objects = None

    def check(self) -> None:
        w = self._window
        assert np.all(np.diff(w.view("seq")) > 0), "window seq must increase"
        assert self.q.kind == "count" or np.all(np.diff(w.view("t")) >= 0), "t must not decrease"
        stream, value = w.view("stream"), w.view("value")
        assert np.all((stream >= 0) & (stream < self.q.dimensions)), "stream number out of range"
        assert np.all((value >= 0.0) & (value <= 1.0)), "value outside [0, 1]"
        if self._end is not None and len(w):
            keys = w.view(self.q.expiry_key)
            assert keys[0] >= self._end - self.q.window and keys[-1] < self._end, "tuple outside the window"
