"""Errors the pipeline commands report as one ``error:`` line, and their exit statuses."""

from __future__ import annotations

import sys
from typing import Callable


class InputError(ValueError):
    """An input the job cannot use: unreadable or malformed file, bad config, bad dataset (exit 2)."""


class StoreError(RuntimeError):
    """The database cannot be opened or written (locked by another process, not DuckDB, ...) (exit 1)."""


class JobFailed(RuntimeError):
    """The job ran but part of its work failed (a Spark task raised); what it finished is kept (exit 1)."""


def exit_status(job: Callable[[], int]) -> int:
    """Run a command's ``job``; report an :class:`InputError` (2), a :class:`StoreError` or a
    :class:`JobFailed` (1) in one line."""
    try:
        return job()
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (StoreError, JobFailed) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
