"""One SparkSession per process, configured for the engine's semantics.

ANSI mode is off because SPARQL maps expression errors (a bad cast, a division by zero) to
an unbound value, which is what Spark's non-ANSI NULL results give. Times are UTC.
"""
from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from rsp_jobs import settings

_SESSION = None
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def get_spark(master: str | None = None, app_name: str = "rsp"):
    """The process's SparkSession, created on first use."""
    global _SESSION
    if _SESSION is not None and not _SESSION.sparkContext._jsc.sc().isStopped():
        return _SESSION
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    home = settings.home_dir()
    builder = (
        SparkSession.builder.master(master or settings.spark_master()).appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.ansi.enabled", "false")
        .config("spark.sql.shuffle.partitions", os.environ.get("RSP_SHUFFLE_PARTITIONS", "4"))
        .config("spark.default.parallelism", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", os.environ.get("RSP_DRIVER_MEMORY", "4g"))
        .config("spark.local.dir", str(home / "spark-tmp"))
        .config("spark.sql.warehouse.dir", str(home / "spark-warehouse"))
        .config("spark.driver.extraJavaOptions",
                f"-Dderby.system.home={home / 'derby'} -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}")
        .config("spark.sql.adaptive.enabled", "true")
    )
    _SESSION = builder.getOrCreate()
    _SESSION.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return _SESSION
