"""An exact algorithm that raises on its third slide, for the replay's task-failure test.

A config names this module in ``plugins`` so that the executors import it too.
"""

from __future__ import annotations

import engine
from engine.algorithms.oracle import Oracle
from engine.registry import register

NAME = "fails-at-slide-3"


class FailsAtSlide3(Oracle):
    """The oracle, until its third slide raises ``RuntimeError``."""

    name = NAME
    summary = "test double: the oracle, failing on its third slide"

    def process(self, batch) -> None:
        if batch.index == 2:
            raise RuntimeError("the test double fails on slide 2")
        super().process(batch)


if NAME not in {info.name for info in engine.available()}:
    register(FailsAtSlide3)
