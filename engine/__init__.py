"""Top-k Watch engine: continuous top-k queries over sliding windows.

>>> import numpy as np, engine
>>> q = engine.Query(weights=[1.0], k=2, window=4, slide=2)
>>> alg = engine.create("mintopk", q)
>>> for batch in engine.slides((np.arange(6), np.arange(6), [5.0, 1.0, 4.0, 2.0, 3.0, 0.0]), q):
...     alg.process(batch)
>>> alg.topk().ids.tolist()
[2, 4]
"""

from .base import Algorithm
from .query import Query
from . import metrics
from .ranking import Answer, score, top_indices
from .registry import AlgorithmInfo, available, create
from .jsondata import FORMAT_VERSION, StateError
from .state import restore
from .stream import Batch, slides
from . import algorithms  # noqa: F401  (each algorithm's module is imported when it is first created)

__all__ = ["Algorithm", "AlgorithmInfo", "Answer", "Batch", "FORMAT_VERSION", "Query", "StateError",
           "available", "create", "metrics", "restore", "score", "slides", "top_indices"]
