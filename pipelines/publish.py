"""Publishing an ingest's Parquet parts: committed in DuckDB first, then moved, never half-done.

An ingest writes its parts into a staging directory beside the dataset directory, hidden
(``.<dataset dir>-staging-...``: readers skip names that start with ``.``).  :func:`publish`
then takes three steps:

1. it writes a journal, ``.<dataset dir>.journal.json`` beside the dataset directory, naming
   the staged parts, where they go, the database file and the ``ingested_at`` of the
   ``datasets`` row about to be committed;
2. it commits the ``datasets`` row (and the ``rejected_rows``) in one DuckDB transaction:
   the commit point of the ingest;
3. it moves the parts into the dataset (an append: one rename per part, into its partition
   directory; a new dataset: its directory replaces the old one in two renames), then deletes
   the journal.

A process killed anywhere leaves either no journal (nothing was published; at most a hidden
staging directory) or a journal that :func:`recover` settles: the next writer of the database
the journal names (ingest or replay, under the writer lock of :mod:`pipelines.locks`) asks
DuckDB whether the commit happened; if it did, it finishes the moves, if not it drops the
staged parts.  Either way it removes the hidden leftovers, but not the working directories of
an ingest still running (into another database file: each is ``flock``-ed by its ingest,
:func:`working_directory`).  A writer of another database file leaves the journal, and the
directories it names, to that database (only its commit says which way to settle), unless that
file no longer exists.  A dataset directory belongs to the one database that records it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from . import locks, store
from .errors import InputError


def journal_path(target: Path) -> Path:
    """``<parent>/.<dataset dir>.journal.json``: beside the directory, which a new dataset replaces."""
    return target.parent / f".{target.name}.journal.json"


def hidden_prefix(target: Path) -> str:
    """Names of an ingest's hidden working directories beside ``target``: staging, raw rows, retired."""
    return f".{target.name}-"


@contextlib.contextmanager
def working_directory(target: Path, kind: str, log: Callable[[str], None] = print) -> Iterator[Path]:
    """A new hidden working directory beside ``target`` (``.<dataset dir>-<kind>-...``), removed after the block.

    It is ``flock``-ed while the block runs, so that :func:`recover` run by an ingest into another
    database file with the same dataset directory leaves it; the kernel releases the lock of a
    killed process, whose directory the next writer removes.  It is created and locked holding
    the dataset directory's lock (:func:`pipelines.locks.dataset_lock`, logging to ``log`` while
    it waits), which every caller of :func:`recover` holds: a recovery between the creation and
    the ``flock`` took the new directory for a killed ingest's and removed it.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with locks.dataset_lock(target, log=log):
        directory = Path(tempfile.mkdtemp(prefix=f"{hidden_prefix(target)}{kind}-", dir=target.parent))
        descriptor = os.open(directory, os.O_RDONLY)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        os.close(descriptor)


def _in_use(directory: Path) -> bool:
    """Whether a running ingest holds working directory ``directory`` (:func:`working_directory`)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)


def publish(staging: Path, written: Path, parts: list[Path], target: Path, *, name: str, db: Path,
            append: bool, ingested_at: dt.datetime, commit: Callable[[], None]) -> None:
    """Commit (``commit()``: the DuckDB transaction recording ``ingested_at``), then move the parts.

    ``written`` (inside the working directory ``staging``) holds ``parts`` (paths relative to
    it).  With ``append`` each part moves to the same relative path in ``target``; otherwise
    ``written`` replaces ``target``.  If ``commit`` fails, nothing is moved; if the process
    dies, :func:`recover` completes or cancels the publication.
    """
    journal = {"dataset": name, "database": str(Path(db).resolve()), "target": str(target),
               "staging": str(staging), "written": str(written),
               "append": append, "parts": [str(part) for part in parts], "ingested_at": ingested_at.isoformat(),
               "retired": str(target.with_name(f"{hidden_prefix(target)}retired"))}
    path = journal_path(target)
    write_atomically(path, json.dumps(journal))
    try:
        commit()
    except BaseException:
        path.unlink(missing_ok=True)  # not committed: the staged parts are dropped with the staging directory
        raise
    complete(journal)
    path.unlink()


def complete(journal: dict) -> None:
    """Move a committed journal's parts into place; idempotent, so a later writer can finish it."""
    target, written, retired = Path(journal["target"]), Path(journal["written"]), Path(journal["retired"])
    if journal["append"]:
        for part in journal["parts"]:
            source = written / part
            if source.exists():
                (target / part).parent.mkdir(parents=True, exist_ok=True)
                _move(source, target / part)
        os.utime(target)  # the directory's mtime says "changed" to readers that cache on it
    elif written.exists():
        if target.exists():
            _move(target, retired)
        _move(written, target)
    shutil.rmtree(retired, ignore_errors=True)
    shutil.rmtree(journal["staging"], ignore_errors=True)


def _move(source: Path, destination: Path) -> None:
    os.replace(source, destination)


def recover(target: Path, db: Path, name: str) -> str | None:
    """Settle what a killed ingest of dataset ``name`` (directory ``target``) into ``db`` left; say what was done.

    Call it holding the database's writer lock and the dataset directory's (:func:`settle`),
    before reading the dataset.  Returns
    ``None`` when there was nothing to settle.  The journal of an ingest into another database
    file that still exists is left as it is, with its staged parts (:func:`pending_elsewhere`
    names that file), and so said.
    """
    path = journal_path(target)
    done, kept = None, set()
    journal = read_journal(path)
    if journal is not None:
        owner = _another_database(journal, db)
        if owner is not None:
            kept = {Path(journal["staging"]).name, Path(journal["retired"]).name}
            done = (f"left the interrupted ingest of {name} into {owner}: only a writer of that database "
                    "(an ingest or a replay) settles it")
        else:
            if committed(db, name, journal["ingested_at"]):
                complete(journal)
                done = f"completed the interrupted ingest of {name} committed at {journal['ingested_at']}"
            else:
                done = f"dropped the uncommitted parts of an interrupted ingest of {name}"
            path.unlink()
    path.with_name(f"{path.name}.tmp").unlink(missing_ok=True)
    leftovers = [p for p in target.parent.glob(f"{hidden_prefix(target)}*")
                 if p.is_dir() and p.name not in kept and not _in_use(p)] if target.parent.is_dir() else []
    for leftover in leftovers:
        shutil.rmtree(leftover, ignore_errors=True)
    if leftovers and done is None:
        done = f"removed {len(leftovers)} working director{'y' if len(leftovers) == 1 else 'ies'} of an interrupted ingest of {name}"
    return done


def settle(target: str | Path, db: Path, name: str, *, wait: float | None = None,
           log: Callable[[str], None] = print) -> tuple[str | None, Path | None]:
    """:func:`recover` holding the dataset directory's lock (:func:`pipelines.locks.dataset_lock`,
    at most ``wait`` seconds), as every writer must: an ingest into another database file may be
    publishing into that directory.  Returns what was done and :func:`pending_elsewhere`'s file.
    Without the directory there is nothing to settle (and the lock would create it)."""
    target = Path(target)
    if not target.parent.is_dir():
        return None, None
    with locks.dataset_lock(target, wait=wait, log=log):
        return recover(target, db, name), pending_elsewhere(target, db)


def pending_elsewhere(target: Path, db: Path) -> Path | None:
    """The other database file (still there) whose killed ingest's journal beside ``target`` is unsettled."""
    journal = read_journal(journal_path(target))
    return None if journal is None else _another_database(journal, db)


JOURNAL_TEXTS = ("dataset", "target", "staging", "written", "ingested_at", "retired")


def read_journal(path: Path) -> dict | None:
    """A killed ingest's journal (``None`` if there is none), or :class:`~pipelines.errors.InputError`
    naming it when it cannot be read as one (only it says whether the staged parts were
    committed, so no writer guesses)."""
    try:
        journal = json.loads(path.read_bytes().decode())
        well_formed = isinstance(journal, dict) and all(isinstance(journal.get(key), str) for key in JOURNAL_TEXTS) \
            and isinstance(journal.get("append"), bool) and isinstance(journal.get("parts"), list) \
            and all(isinstance(part, str) for part in journal["parts"]) \
            and isinstance(journal.get("database", ""), str)
        problem = None if well_formed else "not an ingest journal"
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        problem = str(error)
    if problem is not None:
        raise InputError(f"{path}: the journal of an interrupted ingest cannot be read ({problem}); it alone says "
                         "whether its staged parts were committed: restore it, or remove it with the hidden "
                         "staging directories beside it and ingest the dataset again")
    return journal


def _another_database(journal: dict, db: Path) -> Path | None:
    """The database file a journal's ingest commits to, when it is not ``db`` and still exists.

    ``None`` also for a journal written before journals named their database: ``db`` settles it.
    """
    owner = Path(journal["database"]) if journal.get("database") else None
    return owner if owner is not None and owner != Path(db).resolve() and owner.is_file() else None


def committed(db: Path, name: str, ingested_at: str) -> bool:
    """Whether DuckDB holds the ``datasets`` row of ``name`` that a journal was about to commit."""
    if not Path(db).is_file():
        return False
    with store.connection(db) as con:
        found = con.execute("SELECT ingested_at FROM datasets WHERE name = ?", [name]).fetchone()
    return found is not None and found[0] is not None and found[0].isoformat() == ingested_at


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` under a temporary name, flush it to disk, then rename it to ``path``."""
    temporary = path.with_name(f"{path.name}.tmp")
    with open(temporary, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
