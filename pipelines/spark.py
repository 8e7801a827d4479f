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

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
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
    master = spark_master(master)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    java_options = f"-Dlog4j.configurationFile={LOG_CONFIG.as_uri()}"
    if light_jvm:
        java_options += " -XX:TieredStopAtLevel=1"
    settings = {"spark.app.name": app_name}
    if master is not None:
        settings["spark.master"] = master
    master = master or os.environ.get("MASTER", "")
    if master.startswith("local"):
        settings.update({"spark.python.daemon.module": "pipelines.spark_daemon",
                         "spark.executorEnv.PYTHONPATH": str(PROJECT_ROOT)})
    settings.update({
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.enabled": str(not master.startswith("local")).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_options,
    })
    conf = SparkConf().setAll(settings.items())
    sigint = signal.getsignal(signal.SIGINT)
    try:
        if submitted() or SparkContext._gateway is not None:  # a JVM to join: spark-submit's, or an earlier session's
            SparkContext.getOrCreate(conf)
        else:
            SparkContext(conf=conf, gateway=launch_driver_jvm(conf))
    finally:
        if sigint is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, sigint)  # pyspark's handler calls the JVM from inside a py4j call: tracebacks
    spark = SparkSession.builder.config(map=settings).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _ship_packages(spark)
    return spark


def launch_driver_jvm(conf: SparkConf) -> "py4j.java_gateway.JavaGateway":  # py4j: pyspark's, not imported here
    """Start the driver's JVM (the py4j gateway) in a session of its own, SIGINT and SIGTERM
    held until the driver is connected to it.

    A terminal sends Ctrl-C to its whole foreground process group, ``kill -- -PGID`` SIGTERM:
    in the driver's group, the JVM and the Python workers it forks got them too (a worker
    raises ``KeyboardInterrupt`` in the middle of its task).  In a session of their own only
    the driver gets them; it stops Spark, and the JVM ends when the driver does (its standard
    input closes).  A signal while the JVM started made pyspark stop waiting for it: the JVM,
    left behind, printed a Java stack trace and never ended.
    """
    with signals_held():
        return launch_gateway(conf, popen_kwargs={"start_new_session": True})


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM received in the block reach, when it ends, the handlers in place before it."""
    main_thread = threading.current_thread() is threading.main_thread()  # only it may set handlers
    held = [signum for signum in (signal.SIGINT, signal.SIGTERM)
            if main_thread and signal.getsignal(signum) is not None]
    received: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: received.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
        for signum in received:
            signal.raise_signal(signum)


def spark_master(master: str | None = None) -> str | None:
    """The master :func:`start_spark` starts on: ``master``, else ``$SPARK_MASTER``, else
    ``local[*]``; ``None`` when none is given to a driver ``spark-submit`` started (it set one).

    The commands call it before they announce or do anything, so that a bad master is refused
    first, not after the work that precedes Spark.

    Raises
    ------
    InputError
        A master Spark does not accept (Spark would stop its JVM with a Java stack trace).
    """
    master = master or os.environ.get("SPARK_MASTER")
    if master is None and not submitted():
        master = "local[*]"
    if master is not None and not MASTER_URL.fullmatch(master):
        raise InputError(f"Spark master {master!r} (--master or $SPARK_MASTER): expected local, local[N], local[*], "
                         "local-cluster[N,C,M], spark://HOST:PORT, k8s://URL or yarn")
    return master


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
