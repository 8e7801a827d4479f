"""One writer per database file: the lock every pipeline command holds while it writes.

Every writer of a database file or of the datasets it records (``ingest``, ``ingest
--append``, ``replay``, ``replay --resume``) takes :func:`writer_lock` *before* it reads what it
builds on (a dataset's rows and ``seq``, a run's snapshots) and keeps it until its last write.
The lock is an ``flock`` on ``<db dir>/<db file>.locks/writer.lock``: the kernel releases it
when its process dies, even by SIGKILL, so a killed writer never leaves it taken.  The file
also holds the holder's PID, command and start time, for the message a waiting writer gives.

Readers (the dashboard) take no lock: they open the database read-only for one query at a
time, and writers open it only to write, so neither blocks the other for long.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from .errors import InputError, StoreError

WAIT_ENVIRONMENT = "TOPK_LOCK_WAIT"
"""Environment variable giving the default wait for the lock, in seconds."""
DEFAULT_WAIT_SECONDS = 600.0
"""How long a writer waits for another by default: longer than a day's ingest or resumed
replay of the shipped samples, so that overlapping cron entries run one after the other."""
RETRY_SECONDS = 0.2


def lock_path(db: str | Path) -> Path:
    """``<db dir>/<db file name>.locks/writer.lock``: two database files never share a lock."""
    db = Path(db).resolve()
    return db.parent / f"{db.name}.locks" / "writer.lock"


def wait_seconds(given: float | None = None) -> float:
    """The wait: ``given`` (the command's ``--lock-wait``), else ``$TOPK_LOCK_WAIT``, else the default."""
    if given is None:
        text = os.environ.get(WAIT_ENVIRONMENT)
        if text is None:
            return DEFAULT_WAIT_SECONDS
        try:
            given = float(text)
        except ValueError:
            raise InputError(f"${WAIT_ENVIRONMENT} must be a number of seconds, got {text!r}") from None
    if not given >= 0:
        raise InputError(f"the lock wait must be a number of seconds >= 0, got {given}")
    return float(given)


def holder(path: Path) -> str:
    """``process 4242 (python -m pipelines.replay ...) since 2026-11-26 10:02:03 UTC``, from the lock file."""
    try:
        info = json.loads(path.read_text())
        return f"process {info['pid']} ({info['command']}) since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"  # it has the lock but has not written its name yet


def this_command() -> str:
    """This process's command line, as typed (``python -m pipelines.ingest ...``), at most 200 characters."""
    words = list(getattr(sys, "orig_argv", sys.argv))
    if words and os.path.isabs(words[0]):
        words[0] = os.path.basename(words[0])
    text = " ".join(shlex.join(words).split())  # one line, even for python -c with a script
    return text if len(text) <= 200 else text[:197] + "..."


@contextlib.contextmanager
def writer_lock(db: str | Path, *, wait: float | None = None,
                log: Callable[[str], None] = print) -> Iterator[Path]:
    """Hold the writer lock of database file ``db`` for the block.

    Another writer holding it is waited for up to ``wait`` seconds (:func:`wait_seconds`),
    with one log line naming it; after that :class:`StoreError` names the holder (PID,
    command, since when).  Not re-entrant: a process that holds the lock and asks again waits
    for itself.
    """
    seconds = wait_seconds(wait)
    path = lock_path(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        _take(handle.fileno(), seconds, lambda: f"{db} is being written by {holder(path)}",
              lambda: f"{holder(path)}, which is writing {db}", log)
        since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "command": this_command(), "since": since}))
        handle.flush()
        yield path
    finally:
        handle.close()  # closing the file releases the lock


@contextlib.contextmanager
def dataset_lock(target: str | Path, *, wait: float | None = None,
                 log: Callable[[str], None] = print) -> Iterator[Path]:
    """Hold, for the block, the lock of the directory holding dataset directory ``target`` (``--out``).

    Ingests into two database files hold two writer locks, yet may publish into one dataset
    directory (one ``--out`` and ``--name``): each holds this lock from its check of the
    directory's owner (``.database``) to the end of its publication, so the second one checks
    after the first has published and refuses the other database's dataset.  An ``flock`` on
    the directory itself, so no file is left beside the datasets; waits as :func:`writer_lock`.
    """
    out = Path(target).resolve().parent
    out.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(out, os.O_RDONLY)
    try:
        _take(descriptor, wait_seconds(wait), lambda: f"{out} is being published into by another process",
              lambda: f"another process, which is publishing into {out}", log)
        yield out
    finally:
        os.close(descriptor)  # closing the descriptor releases the lock


def _take(descriptor: int, seconds: float, busy: Callable[[], str], other: Callable[[], str],
          log: Callable[[str], None]) -> None:
    """``flock`` ``descriptor``, waiting up to ``seconds`` with one log line, then :class:`StoreError`."""
    deadline = time.monotonic() + seconds
    waiting = False
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise StoreError(f"{busy()}; gave up after waiting {seconds:g} s "
                                 f"(--lock-wait or ${WAIT_ENVIRONMENT}); retry when it has finished") from None
            if not waiting:
                log(f"waiting up to {seconds:g} s for {other()}")
                waiting = True
            time.sleep(RETRY_SECONDS)


def add_wait_option(parser) -> None:
    """``--lock-wait SECONDS`` on a command's argument parser."""
    parser.add_argument("--lock-wait", type=float, metavar="SECONDS",
                        help=f"wait at most this long for another process writing the database "
                             f"(default ${WAIT_ENVIRONMENT}, else {DEFAULT_WAIT_SECONDS:g})")
