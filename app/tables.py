"""The comparison table: the exact answer rank by rank, one column per algorithm.

A cell holds ``✓`` where the algorithm returned the exact object at that rank, else the id it
returned. A cell is highlighted only when its object is not among the exact answer's objects
with that score (or the algorithm left the rank empty): an answer in another order, or tied
objects listed in another order, is shown by id but not highlighted, so the highlighted cells
are the misses :func:`engine.metrics.precision` counts.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from engine import Answer

DISAGREE = "background-color: rgba(255, 75, 75, 0.30); font-weight: 600"
EXACT_ID, EXACT_SCORE, EXACT_TIME = "exact id", "exact score", "time"
MISSING = "–"
SAME = "✓"


def comparison(exact: Answer | None, answers: Mapping[str, Answer],
               time_of: Callable[[np.ndarray], list[str]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The comparison frame and a same-shaped boolean frame of disagreeing cells.

    Parameters
    ----------
    exact
        The exact answer (``None`` when there is none: nothing is marked).
    answers
        Algorithm -> its answer; one column each, in this order.
    time_of
        Optional: object ``seq`` -> text of its time, for the exact answer's ``time`` column.

    Examples
    --------
    >>> a = Answer(np.array([7, 9]), np.array([3.0, 2.0]), np.array([7, 9]))
    >>> b = Answer(np.array([7, 4]), np.array([3.0, 2.5]), np.array([7, 4]))
    >>> frame, wrong = comparison(b, {"x": a})
    >>> frame.to_dict("list")
    {'rank': [1, 2], 'exact id': ['7', '4'], 'exact score': [3.0, 2.5], 'x': ['✓', '9']}
    >>> wrong["x"].tolist()
    [False, True]
    >>> swapped = Answer(np.array([4, 7]), np.array([2.5, 3.0]), np.array([4, 7]))
    >>> comparison(b, {"y": swapped})[1]["y"].tolist()  # the same objects in another order
    [False, False]
    """
    depth = max([len(exact) if exact is not None else 0, *(len(a) for a in answers.values())] or [0])
    frame = pd.DataFrame({"rank": np.arange(1, depth + 1)})
    wrong = pd.DataFrame({"rank": np.zeros(depth, bool)})

    def column(values: np.ndarray) -> list[str]:
        return [str(v) for v in values] + [MISSING] * (depth - len(values))

    if exact is not None:
        frame[EXACT_ID] = column(exact.ids)
        frame[EXACT_SCORE] = list(exact.scores) + [np.nan] * (depth - len(exact))
        wrong[EXACT_ID] = wrong[EXACT_SCORE] = False
        if time_of is not None:
            frame[EXACT_TIME] = list(time_of(exact.seq)) + [MISSING] * (depth - len(exact))
            wrong[EXACT_TIME] = False
    for name, answer in answers.items():
        cells = column(answer.ids)
        if exact is not None:
            cells = [SAME if i < len(exact) and i < len(answer) and answer.ids[i] == exact.ids[i] else cell
                     for i, cell in enumerate(cells)]
        frame[name] = cells
        if exact is None:
            wrong[name] = False
            continue
        marks = np.zeros(depth, bool)
        marks[:len(answer)] = misses(exact, answer)
        marks[len(answer):len(exact)] = True  # a rank the algorithm did not fill
        wrong[name] = marks
    return frame, wrong


def misses(exact: Answer, answer: Answer, rtol: float = 1e-9) -> np.ndarray:
    """Per rank of ``answer``: whether its object is not among ``exact``'s objects with that score.

    Order does not matter: the set of (id, score) pairs of the exact answer is what counts.

    >>> exact = Answer(np.array([1, 2, 3]), np.array([9.0, 5.0, 5.0]), np.array([1, 2, 3]))
    >>> misses(exact, Answer(np.array([1, 3, 2]), np.array([9.0, 5.0, 5.0]), np.array([1, 3, 2]))).tolist()
    [False, False, False]
    >>> misses(exact, Answer(np.array([1, 2, 8]), np.array([9.0, 5.0, 5.0]), np.array([1, 2, 8]))).tolist()
    [False, False, True]
    """
    scores_of: dict[int, list[float]] = {}
    for object_id, score in zip(exact.ids.tolist(), exact.scores.tolist()):
        scores_of.setdefault(object_id, []).append(score)
    return np.array([not any(np.isclose(score, s, rtol=rtol, atol=0.0) for s in scores_of.get(object_id, ()))
                     for object_id, score in zip(answer.ids.tolist(), answer.scores.tolist())], dtype=bool)


def score_text(value: float) -> str:
    """A score to read: thousands separated when large, 6 significant digits otherwise.

    >>> score_text(42073100.5), score_text(0.123456789), score_text(float("nan"))
    ('42,073,100', '0.123457', '–')
    """
    if not np.isfinite(value):
        return MISSING
    return f"{value:,.0f}" if abs(value) >= 1e5 else f"{value:.6g}"


def styled(frame: pd.DataFrame, wrong: pd.DataFrame, unit: str = "") -> Styler:
    """``frame`` with the cells marked in ``wrong`` highlighted and scores to 6 digits (with ``unit``)."""
    def highlight(_: pd.DataFrame) -> pd.DataFrame:
        return wrong.map(lambda w: DISAGREE if w else "")

    def with_unit(value: float) -> str:
        text = score_text(value)
        return f"{text} {unit}" if unit and text != MISSING else text

    formats = {EXACT_SCORE: with_unit} if EXACT_SCORE in frame else {}
    return frame.style.apply(highlight, axis=None).format(formats, na_rep=MISSING).hide(axis="index")
