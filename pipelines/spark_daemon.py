"""Spark's Python daemon, run from the installed (compiled) ``pyspark`` instead of Spark's zip of it.

Spark starts the daemon that forks its Python workers with ``pyspark.zip`` (the package's
sources) first on the path.  ``zipimport`` never caches bytecode, so the daemon compiles
``pyspark`` on every start (0.55 s, against 0.12 s from the installed package's bytecode),
and every forked worker compiles the worker module again.  On a local master
:func:`pipelines.spark.start_spark` names this module as ``spark.python.daemon.module``: it
drops the zip from the path when it is the installed package's own copy (so the very same
version), imports the worker module once, before any fork, and runs Spark's daemon.  The
first Python task of a session starts about 0.5 s sooner, a later job's workers about
0.2 s sooner.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys


def use_installed_pyspark(path: list[str]) -> list[str]:
    """``path`` without the ``pyspark.zip`` entries that are the installed ``pyspark``'s own copy.

    A zip from another Spark (a ``SPARK_HOME`` of a cluster, say) stays: only the package
    the zip was shipped in is known to hold the same version.
    """
    zips = [entry for entry in path if entry.endswith("pyspark.zip")]
    rest = [entry for entry in path if entry not in zips]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or spec.origin is None:
        return path
    package = os.path.dirname(os.path.realpath(spec.origin))
    own = {entry for entry in zips
           if os.path.realpath(entry) == os.path.join(package, "python", "lib", "pyspark.zip")}
    return [entry for entry in path if entry not in own]


if __name__ == "__main__":
    sys.path[:] = use_installed_pyspark(sys.path)
    importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "pyspark.worker")
    from pyspark import daemon

    daemon.manager()
