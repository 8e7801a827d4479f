"""Compiled kernels: the per-object and per-slide structural work of the algorithms.

Each kernel is a plain numba ``@njit(cache=True)`` function over numpy arrays and does one step
of its paper; the algorithm modules (``engine.algorithms``) keep the settings, the JSON state
and the order of the steps.  The compiled code is cached on disk beside the sources (or under
``NUMBA_CACHE_DIR``), so a process compiles a kernel once per machine, not once per start;
``NUMBA_DISABLE_JIT=1`` runs the same functions as plain Python (slow, but debuggable).

numba stamps a cached kernel with its own module's source only, yet a kernel carries compiled
into it the kernels it calls from other modules (``select.py`` from ``mintopk.py`` and
``pretopk.py``, ``incomplete.py`` from ``sla.py`` and ``eaa.py``, ...).  After an upgrade that
changed only a callee, its callers would load their old copies of it.  So the first import of
this package compares a digest of every kernel source with the one stored beside the cache and,
when they differ, drops this package's cached kernels (:func:`drop_stale_cache`).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

STAMP = "topk-kernel-sources.sha256"
"""The file, in the kernels' cache directory, holding the digest of the sources cached there."""


def sources_digest(package: Path) -> str:
    """A digest of every ``.py`` file of ``package`` (``O(bytes)``, about 1 ms here)."""
    digest = hashlib.sha256()
    for path in sorted(package.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_directory(package: Path) -> Path | None:
    """Where numba caches the kernels of ``package`` (``NUMBA_CACHE_DIR``, else the package's
    ``__pycache__`` if writable, else the user-wide cache), found with numba's own locators;
    ``None`` when nothing is cached (``NUMBA_DISABLE_JIT=1``, no writable place)."""
    from numba.core import config
    from numba.core.caching import CacheImpl

    if config.DISABLE_JIT:
        return None
    source = str(package / "__init__.py")
    for locator_class in CacheImpl._locator_classes:
        locator = locator_class.from_function(cache_directory, source)
        if locator is not None:
            return Path(locator.get_cache_path())
    return None


def drop_stale_cache(package: Path) -> None:
    """Delete the cached kernels of ``package`` if any of its sources changed since they were
    cached, then record the sources' digest.  Processes starting together may each delete;
    numba then recompiles, and an index naming a deleted file is a cache miss."""
    directory = cache_directory(package)
    if directory is None:
        return
    digest = sources_digest(package)
    stamp = directory / STAMP
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    modules = {path.stem for path in package.glob("*.py")}
    try:
        for entry in directory.iterdir():
            if entry.suffix in (".nbi", ".nbc") and entry.name.split(".", 1)[0] in modules:
                entry.unlink(missing_ok=True)
        partial = directory / f"{STAMP}.{os.getpid()}"
        partial.write_text(digest)
        partial.replace(stamp)
    except OSError:
        pass


drop_stale_cache(Path(__file__).parent)
