"""The session builder: Python workers run the installed, compiled pyspark on local masters."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark

from pipelines.spark_daemon import use_installed_pyspark


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
