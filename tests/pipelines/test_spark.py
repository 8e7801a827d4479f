"""The session builder: Python workers run the installed, compiled pyspark on local masters."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pyspark
import pytest

from pipelines import store
from pipelines.spark import PROJECT_ROOT
from pipelines.spark_daemon import use_installed_pyspark
from tests.pipelines.conftest import small_replay


def pyspark_of_a_worker(_rows):
    import sys

    yield sys.modules["pyspark"].__file__


def test_workers_import_the_installed_pyspark_not_the_zip_of_its_sources(spark):
    files = spark.sparkContext.parallelize([0, 1], 2).mapPartitions(pyspark_of_a_worker).collect()
    assert files == [pyspark.__file__] * 2


def test_only_the_installed_packages_own_zip_leaves_the_path(tmp_path):
    installed = Path(pyspark.__file__).parent
    own = str(installed / "python" / "lib" / "pyspark.zip")
    foreign = tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip"
    foreign.parent.mkdir(parents=True)
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("pyspark/__init__.py", "")
    path = [own, str(foreign), str(installed.parent), "/somewhere/else"]
    assert use_installed_pyspark(path) == [str(foreign), str(installed.parent), "/somewhere/else"]


def test_without_an_installed_pyspark_the_path_is_kept(tmp_path):
    path = [str(tmp_path / "lib" / "pyspark.zip"), str(tmp_path)]
    assert use_installed_pyspark(path) == path


@pytest.mark.parametrize("master", ["nonsense://x", "local[abc]", "local[0]", "spark://"])
def test_a_master_spark_cannot_take_is_one_line_and_status_2_before_any_jvm(tmp_path, master):
    """Spark's own refusal is a Java stack trace from its JVM, then a Python traceback.  The
    master is checked with the other arguments, before the command announces anything (the
    replay said it was starting its run, the ingest read and cleaned its input, then refused)."""
    db, config = small_replay(tmp_path, rows=8, window=2, slide=1)
    commands = (["pipelines.replay", "--config", str(config)],
                ["pipelines.ingest", "synthetic:time-u", "--rows", "5", "--out", str(tmp_path / "datasets")])
    for command in commands:
        done = subprocess.run([sys.executable, "-m", *command, "--db", str(db), "--master", master], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, timeout=300)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr.splitlines() == [f"error: Spark master {master!r} (--master or $SPARK_MASTER): expected "
                                            "local, local[N], local[*], local-cluster[N,C,M], spark://HOST:PORT, "
                                            "k8s://URL or yarn"]
    with store.connection(db) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    assert not (tmp_path / "datasets").exists()


def test_starting_spark_keeps_the_callers_sigint_handler():
    """pyspark installs a SIGINT handler that calls the JVM; a Ctrl-C while the main thread waits
    in a py4j call (an ingest's write) then printed py4j's tracebacks before the one line."""
    script = ("import signal\n"
              "from pipelines.spark import start_spark\n"
              "def mine(signum, frame): raise KeyboardInterrupt\n"
              "signal.signal(signal.SIGINT, mine)\n"
              "spark = start_spark('sigint', 'local[1]')\n"
              "print(signal.getsignal(signal.SIGINT) is mine)\n"
              "spark.stop()\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "True"
