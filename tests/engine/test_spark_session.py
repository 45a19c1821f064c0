"""The engine's Spark settings (docs/operations/spark.md) reach the JVM that runs the jobs."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rsp_jobs.spark import class_archive
from rsp_jobs.physical.planner import INTERPRETED_BELOW_ROWS
from rsp_jobs.spark.session import JVM_OPTIONS, batch_settings, cluster_conf, engine_conf


def test_the_driver_jvm_runs_with_the_engines_jit_and_collector_and_without_adaptive_execution(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(JVM_OPTIONS.split()) <= set(arguments)
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"


def test_memory_pages_are_small_for_batches_of_thousands_of_rows(spark):
    """The page size the memory manager hands out (docs/operations/spark.md): 4 MB, where
    Spark's own choice for this heap and two cores is 64 MB a broadcast."""
    manager = spark.sparkContext._jsc.sc().env().memoryManager()
    assert manager.pageSizeBytes() == 4 << 20


def test_jvm_options_are_a_setting_for_driver_and_executors(monkeypatch):
    monkeypatch.setenv("RSP_JVM_OPTIONS", "-XX:+UseG1GC")
    driver = engine_conf(Path("/tmp/home"))["spark.driver.extraJavaOptions"]
    assert "-XX:+UseG1GC" in driver.split() and "TieredStopAtLevel" not in driver
    assert cluster_conf()["spark.executor.extraJavaOptions"] == "-XX:+UseG1GC"
    monkeypatch.setenv("RSP_JVM_OPTIONS", "")  # the JVM's own defaults
    monkeypatch.setenv("RSP_CLASS_ARCHIVE", "off")
    driver = engine_conf(Path("/tmp/home"))["spark.driver.extraJavaOptions"].split()
    assert [o for o in driver if o.startswith("-XX")] == []
    assert driver[:2] == ["-Xlog:disable", "-Xlog:all=warning:stderr"]  # the JVM's warnings, on stderr


def test_the_class_archive_is_named_for_the_driver_only_when_it_exists(monkeypatch, tmp_path):
    archive = tmp_path / "spark-classes.jsa"
    monkeypatch.setattr(class_archive, "archive_path", lambda: archive)
    monkeypatch.delenv("RSP_CLASS_ARCHIVE", raising=False)
    assert class_archive.java_options() == ""  # not written (yet): Spark loads from its jars
    archive.write_bytes(b"")
    driver = engine_conf(Path("/tmp/home"))["spark.driver.extraJavaOptions"]
    assert f"-XX:SharedArchiveFile={archive}" in driver.split()
    assert "SharedArchiveFile" not in cluster_conf()["spark.executor.extraJavaOptions"]  # another class path
    monkeypatch.setenv("RSP_CLASS_ARCHIVE", "off")
    assert class_archive.java_options() == ""


@pytest.mark.spark
def test_a_driver_jvm_loads_sparks_classes_from_the_archive_setup_wrote(tmp_path):
    """A driver in a process of its own (as an ``rsp`` call or an Airflow task starts one) maps
    Spark's classes from the archive ``make setup`` writes, not from the jars."""
    # ``make setup`` writes it (a failure there does not stop set-up, so it shows here)
    assert class_archive.archive_path().is_file(), \
        f"no class archive at {class_archive.archive_path()}: see {sys.prefix}/class-archive.log"
    log = tmp_path / "classes.log"
    env = {**os.environ, "RSP_HOME": str(tmp_path),
           "RSP_JVM_OPTIONS": f"{JVM_OPTIONS} -Xlog:class+load=info:file={log}"}
    env.pop("RSP_CLASS_ARCHIVE", None)  # on, as set-up leaves it
    code = "from rsp_jobs.spark.session import get_spark; get_spark().range(3).count()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=300)
    loaded = [line for line in log.read_text().splitlines() if " org.apache.spark.SparkContext " in line]
    assert loaded and "shared objects file (top)" in loaded[0], loaded


def test_few_rows_run_interpreted_on_a_partition_a_core_and_many_on_generated_code(monkeypatch):
    monkeypatch.delenv("RSP_INTERPRETED_BELOW_ROWS", raising=False)
    monkeypatch.delenv("RSP_SHUFFLE_PARTITIONS", raising=False)
    assert batch_settings(INTERPRETED_BELOW_ROWS - 1) == {
        "spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.shuffle.partitions": "2"}
    assert batch_settings(INTERPRETED_BELOW_ROWS) == {}
    monkeypatch.setenv("RSP_SHUFFLE_PARTITIONS", "1")  # never more partitions than the session's
    assert batch_settings(0)["spark.sql.shuffle.partitions"] == "1"
    monkeypatch.setenv("RSP_INTERPRETED_BELOW_ROWS", "0")  # always generated code
    assert batch_settings(0) == {}


def _round_trips(block) -> list[str]:
    """The py4j commands the driver sends while ``block()`` runs. Not py4j's memory commands
    (``m``): its finalizer thread releases collected objects whenever it runs, not for the block."""
    import py4j.clientserver
    import py4j.java_gateway

    calls, originals = [], {}
    for cls in (py4j.clientserver.ClientServerConnection, py4j.java_gateway.GatewayConnection):
        originals[cls] = cls.send_command

        def counted(self, command, *args, _original=originals[cls], **kwargs):
            calls.append(command)
            return _original(self, command, *args, **kwargs)
        cls.send_command = counted
    try:
        block()
    finally:
        for cls, original in originals.items():
            cls.send_command = original
    return [c for c in calls if not c.startswith("m\n")]


def test_building_a_column_makes_no_call_site_round_trips(spark):
    """PySpark's DataFrame debugging (the Python call site of every function, set in the JVM)
    is off: ``F.col("x") + F.lit(1)`` costs the calls that build it, not five more per call."""
    from pyspark.sql import functions as F

    F.col("x") + F.lit(1)  # PySpark reads the setting once
    calls = _round_trips(lambda: F.col("x") + F.lit(1))
    assert len(calls) <= 8, [c.splitlines()[:3] for c in calls]
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"


def test_jvm_names_are_looked_up_once_and_field_values_every_time(spark):
    """``jvm_names``: a function call is one round trip once its class and method are known,
    not three (two reflective lookups of what ``functions`` and ``lit`` are); a static field
    is read from the JVM at every use."""
    from pyspark.sql import functions as F

    F.col("x") + F.lit(1)
    calls = _round_trips(lambda: F.col("x") + F.lit(1))
    assert [c.splitlines()[0] for c in calls] == ["c"] * 3, [c.splitlines()[:3] for c in calls]
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.Integer.MAX_VALUE == 2 ** 31 - 1
    reads = _round_trips(lambda: jvm.java.lang.Integer.MAX_VALUE)
    assert len(reads) == 1 and reads[0].startswith("r\nm\njava.lang.Integer\nMAX_VALUE")


def test_an_evaluation_plans_what_it_caches_under_its_batchs_settings(spark, tmp_path, monkeypatch):
    """Spark plans a DataFrame when ``cache()`` is called: a small batch's cached window rows
    and active windows must be planned interpreted too, not only its last action (``engine``)."""
    from rsp_jobs import compiler
    from rsp_jobs.engine import evaluate
    from tests.support.lakes import STREAM as stream
    from tests.support.lakes import small_lake

    ex = "http://example.org/#"
    lake = small_lake(tmp_path / "lake", [(n, [(f"<{ex}a{n}>", f"<{ex}p>", f"<{ex}b>")]) for n in range(1, 9)])
    planned, frames = [], type(spark.range(1))  # PySpark's classic DataFrame
    cache = frames.cache
    monkeypatch.setattr(frames, "cache", lambda self: planned.append(
        spark.conf.get("spark.sql.codegen.wholeStage")) or cache(self))
    one_window = f"SELECT ?s FROM STREAM <{stream}> [RANGE 4s STEP 2s] WHERE {{ ?s <{ex}p> ?o }}"
    two_windows = (f"SELECT ?s FROM STREAM <{stream}> [RANGE 4s STEP 2s] FROM STREAM <{stream}> [RANGE 2s STEP 2s] "
                   f"WHERE {{ ?s <{ex}p> ?o }}")
    for text in (one_window, two_windows):  # solutions to windows (Spans), triples to windows
        assert sum(len(w.bindings) for w in evaluate(compiler.compile(text), lake)) > 0
    assert planned and set(planned) == {"false"}
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"  # and only while it runs
