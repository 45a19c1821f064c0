"""One SparkSession per process, configured for the engine's semantics.

ANSI mode is off because SPARQL maps expression errors (a bad cast, a division by zero) to
an unbound value, which is what Spark's non-ANSI NULL results give. Times are UTC.

The master is the caller's, else ``settings.spark_master()`` (the environment only: jobs that
may run under Airflow start the session through ``orchestrate.spark_connection``, which reads
its connection too). With a cluster master (``spark://``, ``yarn``, ``k8s://``) the executors
run in other JVMs, started by the cluster's workers: they reach the driver at
``SPARK_LOCAL_IP`` (``spark.driver.host``, default 127.0.0.1, right for a cluster on this
machine; set it to an address the workers can reach otherwise), run Python with this
interpreter, and get ``RSP_EXECUTOR_MEMORY`` (default 1g) each and ``RSP_SPARK_CORES_MAX``
(default 2) cores in all. The lake is Parquet at a filesystem path, which must be the same path for the
driver and the workers (one machine, or a shared filesystem). Local mode is unchanged.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from rsp_jobs import settings
from rsp_jobs.physical.planner import interpreted
from rsp_jobs.spark import class_archive

_SESSION = None
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def get_spark(master: str | None = None, app_name: str = "rsp", conf: dict[str, str] | None = None):
    """The process's SparkSession, created on first use (``master`` and ``conf`` apply then)."""
    global _SESSION
    if _SESSION is not None and _alive(_SESSION):
        return _SESSION
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    home = settings.home_dir()
    master = master or settings.spark_master() or settings.DEFAULT_SPARK_MASTER
    # a Spark Connect server: the JVM and its settings are the server's
    if master.startswith("sc://"):
        _SESSION = SparkSession.builder.remote(master).getOrCreate()
        settable = {k: v for k, v in engine_conf(home).items() if k in SESSION_SQL_KEYS}
        for key, value in {**settable, **(conf or {})}.items():
            _SESSION.conf.set(key, value)
        return _SESSION
    from rsp_jobs.spark.jvm_names import cache_jvm_names

    cache_jvm_names()
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in engine_conf(home).items():
        builder = builder.config(key, value)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    if not master.startswith("local"):
        for key, value in cluster_conf().items():
            builder = builder.config(key, value)
    _SESSION = builder.getOrCreate()
    _SESSION.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return _SESSION


# The JVM of a driver (or executor) that plans many small jobs: the quick (C1) JIT only and a
# single-threaded collector. On two cores C2's compiler threads and a parallel collector spent
# more CPU than they saved on batches of thousands of rows: CSRBench's seven queries cost the
# driver 84 s of CPU with the JVM's defaults and 45 s with these (docs/operations/spark.md).
# Without tiered compilation the JVM reserves 48 MB for compiled code, not 240 MB: a long-lived
# JVM planning many queries (a Spark Connect server, a hundred queries a batch) fills it, and
# then the JIT stops for good ("CodeCache is full. Compiler has been disabled") and every job
# after runs interpreted, many times slower. So the tiered size is reserved (virtual memory:
# only what is compiled is resident).
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=240m"


# The JVM's unified logging writes warnings to stdout unless told otherwise
JVM_WARNINGS_TO_STDERR = "-Xlog:disable -Xlog:all=warning:stderr"


# Memory pages of 4 MB, not the 64 MB Spark derives from a 4 GB driver on two cores (``engine_conf``)
PAGE_SIZE = "4m"


def jvm_options() -> str:
    return os.environ.get("RSP_JVM_OPTIONS", JVM_OPTIONS)


def shuffle_partitions() -> int:
    """The session's shuffle partitions (``RSP_SHUFFLE_PARTITIONS``, default 4)."""
    return int(os.environ.get("RSP_SHUFFLE_PARTITIONS", "4"))


def engine_conf(home: Path) -> dict[str, str]:
    """The Spark settings of every session the engine runs on (in this process, or the Spark
    Connect server's, ``rsp_jobs.spark.connect_server``): the semantics (module docstring), two
    cores' parallelism, no UI, scratch under the project home, a JVM for small jobs
    (``JVM_OPTIONS``). Adaptive query execution is off: it re-plans every join stage at run time,
    which on window batches of thousands of rows tripled the jobs (114 for CSRBench's queries
    instead of 40) and cost CPU without saving time; the engine's own plans already broadcast
    the small sides (cached and local relations have known sizes)."""
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.ansi.enabled": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions()),
        "spark.default.parallelism": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": os.environ.get("RSP_DRIVER_MEMORY", "4g"),
        "spark.local.dir": str(home / "spark-tmp"),
        "spark.sql.warehouse.dir": str(home / "spark-warehouse"),
        "spark.driver.extraJavaOptions": " ".join(
            filter(
                None,
                [
                    # the JVM's own warnings (an archive it cannot use on another class path, as
                    # a cluster's SPARK_CONF_DIR makes) on stderr: stdout is `rsp evaluate`'s
                    # results. First: an -Xlog of RSP_JVM_OPTIONS still applies after it
                    JVM_WARNINGS_TO_STDERR,
                    jvm_options(),
                    class_archive.java_options(),  # the driver's classes
                    f"-Dderby.system.home={home / 'derby'}",
                    f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}",
                ],
            )
        ),
        "spark.sql.adaptive.enabled": "false",
        # Tungsten's memory pages: Spark sizes them from the heap and cores, 64 MB here, and
        # every broadcast hash relation and aggregation map takes at least one; a small batch's
        # tiny broadcasts then held gigabytes of zeroed pages until a GC (docs/operations/spark.md)
        "spark.buffer.pageSize": PAGE_SIZE,
        # the lake's folders (stream x hour) are listed by the driver, not by a Spark job of a task
        # per folder: over 32 of them (Spark's default) a week of DART data ran two listing jobs
        # of ~90 tasks at every read
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "4096",
        # PySpark 4 records the Python call site of every DataFrame and function call in the JVM
        # (for error messages pointing at user code): five py4j round trips and a Python stack
        # walk per ``F.col``/``F.lit``/..., which was most of the driver's time building a plan.
        # The engine's plans are generated, so the call site would name the engine, not the query;
        # errors name the query's file, line and column already (``language.diagnostics``).
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        # an aggregation with a list in it (COUNT DISTINCT, GROUP_CONCAT, a window's result
        # rows) hashes its groups; past this many in a task Spark sorts the rest instead (its
        # default, 128, is a fraction of one day's CityBench windows x sensors in a task)
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "65536",
    }


# what a Connect client may set on its own session (the rest is fixed when the server starts)
SESSION_SQL_KEYS = (
    "spark.sql.session.timeZone",
    "spark.sql.ansi.enabled",
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.enabled",
    "spark.sql.sources.parallelPartitionDiscovery.threshold",
    "spark.sql.objectHashAggregate.sortBased.fallbackThreshold",
)


# Joins shuffle rather than broadcast by size, for one action whose sides are computed or read
# from Parquet: each such broadcast is a Spark job of its own (explicit broadcasts stay).
NO_SIZE_BROADCASTS = {"spark.sql.autoBroadcastJoinThreshold": "-1"}


# Spark compiles Java for every stage of a plan (whole-stage code generation) and for the
# expressions in it, before a row runs: on a few thousand rows the compiling is most of the work.
# So an action over fewer rows than ``planner.INTERPRETED_BELOW_ROWS`` runs interpreted
# (``batch_settings``), and on one shuffle partition a core (a stage's task over a few rows
# costs more than it computes). RSP_INTERPRETED_BELOW_ROWS sets the bound.
SMALL_BATCH_PARTITIONS = 2  # the two cores of the machine this is tuned for


def small_batch() -> dict[str, str]:
    """The settings of a small batch's actions: interpreted expressions, few partitions."""
    return {
        "spark.sql.codegen.wholeStage": "false",
        # marked internal (Spark's tests choose with it), the one switch for expressions
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.shuffle.partitions": str(min(shuffle_partitions(), SMALL_BATCH_PARTITIONS)),
    }


def batch_settings(rows: int) -> dict[str, str]:
    """The settings for an action that reads ``rows`` stream rows (``LakeStatistics.rows``): none
    (the session's: Spark's generated code) from ``INTERPRETED_BELOW_ROWS`` on, ``small_batch()``
    below."""
    return small_batch() if interpreted(rows) else {}


@contextmanager
def settings_while(session, settings: dict[str, str]):
    """``settings`` on ``session`` for the block, then what they were: a query's SQL settings
    are read when an action plans it, so they apply to the actions inside the block."""
    before = {key: session.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        session.conf.set(key, value)
    try:
        yield session
    finally:
        for key, value in before.items():
            if value is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, value)


def is_remote(session) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


def _alive(session) -> bool:
    if is_remote(session):
        return not session.is_stopped
    return not session.sparkContext._jsc.sc().isStopped()


def application_id(session) -> str:
    """The Spark application that ran the jobs (recorded in provenance)."""
    return (
        session.conf.get("spark.app.id")
        if is_remote(session)
        else session.sparkContext.applicationId
    )


def release_memory() -> int | None:
    """Drop cached DataFrames and the JVM objects Python no longer holds, then report the
    driver's used heap in bytes (None without a session). A process that runs many jobs in one
    JVM (the test suite runs hundreds) otherwise fills the heap until a broadcast fails."""
    if _SESSION is None or is_remote(_SESSION) or not _alive(_SESSION):
        return None
    gc.collect()  # py4j releases a JVM object when its Python proxy is collected
    _SESSION.catalog.clearCache()
    jvm = _SESSION.sparkContext._jvm
    if jvm is None:  # the gateway is gone with its JVM
        return None
    runtime = jvm.java.lang.Runtime.getRuntime()
    jvm.java.lang.System.gc()
    return runtime.totalMemory() - runtime.freeMemory()


def cluster_conf() -> dict[str, str]:
    """What executors in other JVMs (a standalone, YARN or Kubernetes cluster) need, for a driver
    in this process or in a Spark Connect server (``connect_server``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return {
        "spark.driver.host": os.environ["SPARK_LOCAL_IP"],
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.executorEnv.PYSPARK_PYTHON": os.environ["PYSPARK_PYTHON"],
        "spark.executor.memory": os.environ.get("RSP_EXECUTOR_MEMORY", "1g"),
        "spark.executor.extraJavaOptions": jvm_options(),
        "spark.cores.max": os.environ.get("RSP_SPARK_CORES_MAX", "2"),
    }
