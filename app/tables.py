"""Tables of ranked answers, marked where they disagree with the exact answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from engine import Answer
from engine import metrics

DISAGREE = "background-color: rgba(255, 75, 75, 0.25)"


def answer_frame(answer: Answer, exact: Answer | None) -> pd.DataFrame:
    """``rank, id, score, exact`` rows of ``answer``; ``exact`` is ``✓``, ``✗ <exact id>`` or blank.

    Parameters
    ----------
    answer
        The ranked answer to show.
    exact
        The exact answer to compare with, or ``None`` when there is none.

    Examples
    --------
    >>> import numpy as np
    >>> a = Answer(np.array([7, 9]), np.array([3.0, 2.0]), np.array([7, 9]))
    >>> b = Answer(np.array([7, 4]), np.array([3.0, 2.5]), np.array([7, 4]))
    >>> answer_frame(a, b)["exact"].tolist()
    ['✓', '✗ 4']
    """
    frame = pd.DataFrame({"rank": np.arange(1, len(answer) + 1), "id": answer.ids, "score": answer.scores})
    if exact is None:
        return frame.assign(exact="")
    wrong = metrics.disagreements(exact, answer)
    expected = [str(exact.ids[i]) if i < len(exact) else "none" for i in range(len(answer))]
    return frame.assign(exact=[f"✗ {e}" if w else "✓" for w, e in zip(wrong, expected)])


def styled(frame: pd.DataFrame) -> Styler:
    """``frame`` from :func:`answer_frame` with disagreeing rows highlighted and scores to 6 digits."""
    def highlight(row: pd.Series) -> list[str]:
        return [DISAGREE if row["exact"].startswith("✗") else ""] * len(row)

    return frame.style.apply(highlight, axis=1).format({"score": "{:.6g}"})
