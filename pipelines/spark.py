"""The one SparkSession builder every pipeline job uses."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Iterator

from pyspark.sql import SparkSession

from .errors import InputError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHIPPED_PACKAGES = ("engine", "pipelines")
LOG_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"
MASTER_URL = re.compile(r"local(\[(\*|[1-9]\d*)(,\s*\d+)?\])?|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"
                        r"|yarn|(spark|k8s)://\S+")
"""The master URLs Spark accepts; any other stops its JVM with a Java stack trace."""


@contextlib.contextmanager
def spark_session(app_name: str, master: str | None = None, *, light_jvm: bool = False) -> Iterator[SparkSession]:
    """A :func:`start_spark` session that is stopped when the block ends."""
    spark = start_spark(app_name, master, light_jvm=light_jvm)
    try:
        yield spark
    finally:
        spark.stop()


def start_spark(app_name: str, master: str | None = None, *, light_jvm: bool = False) -> SparkSession:
    """Start (or join) a SparkSession set up for the pipelines.

    Parameters
    ----------
    app_name
        Name shown in the Spark UI and logs.
    master
        Spark master URL; default the ``SPARK_MASTER`` environment variable, else the master
        ``spark-submit`` was given, else ``local[*]``.
    light_jvm
        For jobs whose JVM only schedules Python tasks and moves small results (the replay):
        the driver JVM compiles with the quick compiler only (``-XX:TieredStopAtLevel=1``).
        Spark starts about 1 s sooner and, on a local master, the JVM leaves the cores to the
        Python workers (replay of issue 9 (b): the JVM's CPU while the job runs 1.8 s -> 0.9 s).
        JVM-heavy jobs (ingest: parsing, sorting, writing Parquet) run about 1.5x slower that
        way and keep the default.  Has no effect on a driver started by ``spark-submit``.

    Returns
    -------
    SparkSession
        A session with UTC session time, few shuffle partitions, error-only logging (and no
        web UI on local masters), Python workers running this interpreter, and the ``engine``
        and ``pipelines`` packages shipped to the executors (so any master works, not only
        local ones).  On local masters the workers' daemon is :mod:`pipelines.spark_daemon`:
        workers run the installed, compiled ``pyspark`` instead of compiling Spark's zip of
        its sources at every start (a session's first Python task starts 0.84 s -> 0.34 s
        after its job, a later job's 0.27 s -> 0.08 s).
    """
    master = master or os.environ.get("SPARK_MASTER")
    if master is None and not submitted():
        master = "local[*]"
    if master is not None and not MASTER_URL.fullmatch(master):
        raise InputError(f"Spark master {master!r} (--master or $SPARK_MASTER): expected local, local[N], local[*], "
                         "local-cluster[N,C,M], spark://HOST:PORT, k8s://URL or yarn")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    java_options = f"-Dlog4j.configurationFile={LOG_CONFIG.as_uri()}"
    if light_jvm:
        java_options += " -XX:TieredStopAtLevel=1"
    sigint = signal.getsignal(signal.SIGINT)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    master = master or os.environ.get("MASTER", "")
    if master.startswith("local"):
        builder = (builder.config("spark.python.daemon.module", "pipelines.spark_daemon")
                   .config("spark.executorEnv.PYTHONPATH", str(PROJECT_ROOT)))
    spark = (
        builder
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.enabled", str(not master.startswith("local")).lower())
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", java_options)
        .getOrCreate()
    )
    if sigint is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, sigint)  # pyspark's handler calls the JVM from inside a py4j call: tracebacks
    spark.sparkContext.setLogLevel("ERROR")
    _ship_packages(spark)
    return spark


def submitted() -> bool:
    """Whether this driver was launched by ``spark-submit`` (which sets the master itself)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


_shipped_to: set[str] = set()
"""Spark application ids that already have the packages (Spark refuses a second file of one name)."""


def _ship_packages(spark: SparkSession) -> None:
    """Zip ``engine`` and ``pipelines`` once per application and add them to the executors' path."""
    context = spark.sparkContext
    if context.applicationId in _shipped_to:
        return
    staging = tempfile.mkdtemp(prefix="topk-pyfiles-")
    atexit.register(shutil.rmtree, staging, ignore_errors=True)
    archive = Path(staging) / "topk_packages.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for package in SHIPPED_PACKAGES:
            for source in sorted((PROJECT_ROOT / package).rglob("*.py")):
                bundle.write(source, source.relative_to(PROJECT_ROOT).as_posix())
    context.addPyFile(str(archive))
    _shipped_to.add(context.applicationId)
