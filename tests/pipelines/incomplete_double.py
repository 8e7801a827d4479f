"""A stand-in exact algorithm over attribute streams, for replay tests until the engine has its own.

Registers ``oracle-incomplete`` only when the engine does not already provide it: brute force
over the window's tuples, an object's score the weighted sum of its valid attributes, ties
broken by the object's newest tuple.  A config names this module in ``plugins`` so that the
executors import it too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine
from engine import Algorithm, Answer, top_indices
from engine.registry import register

NAME = "oracle-incomplete"
COLUMNS = ("ids", "seq", "t", "stream", "value")


class IncompleteOracleDouble(Algorithm):
    """Every valid tuple in arrays; ``topk`` groups them by object (``O(n log n)``)."""

    name = NAME
    summary = "test double: brute force over attribute streams"
    stream = "incomplete"

    def _reset(self) -> None:
        self._tuples = {name: np.empty(0, np.float64 if name == "value" else np.int64) for name in COLUMNS}
        self._end = None

    def process(self, batch) -> None:
        new = {"ids": batch.ids, "seq": batch.seq, "t": batch.t, "stream": batch.stream, "value": batch.value}
        self._tuples = {name: np.concatenate([self._tuples[name], new[name]]) for name in COLUMNS}
        keys = self._tuples["seq" if self.q.kind == "count" else "t"]
        keep = keys >= batch.end - self.q.window
        self._tuples = {name: values[keep] for name, values in self._tuples.items()}
        self._end = batch.end

    def topk(self) -> Answer:
        ids = self._tuples["ids"]
        if not len(ids):
            return Answer.empty()
        objects, which = np.unique(ids, return_inverse=True)
        weights = np.asarray(self.q.weights, np.float64)
        scores = np.bincount(which, weights=weights[self._tuples["stream"]] * self._tuples["value"],
                             minlength=len(objects))
        newest = np.full(len(objects), -1, np.int64)
        np.maximum.at(newest, which, self._tuples["seq"])
        top = top_indices(scores, newest, self.q.k)
        return Answer(objects[top], scores[top], newest[top])

    def candidates(self) -> np.ndarray:
        return self._tuples["seq"].copy()

    def _stats(self) -> dict[str, Any]:
        n = len(self._tuples["ids"])
        return {"candidates": n, "retained": n, "bytes": 8 * 5 * n}

    def dump_state(self) -> dict[str, Any]:
        return {"end": self._end, **{name: values.tolist() for name, values in self._tuples.items()}}

    def load_state(self, data: dict[str, Any]) -> None:
        self._tuples = {name: np.asarray(data[name], np.float64 if name == "value" else np.int64) for name in COLUMNS}
        self._end = data["end"]


if NAME not in {info.name for info in engine.available()}:
    register(IncompleteOracleDouble)
