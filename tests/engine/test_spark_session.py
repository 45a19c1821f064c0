"""The engine's Spark settings (README, "Spark settings") reach the JVM that runs the jobs."""
from __future__ import annotations

from pathlib import Path

from rsp_jobs.spark.session import JVM_OPTIONS, cluster_conf, engine_conf


def test_the_driver_jvm_runs_with_the_engines_jit_and_collector_and_without_adaptive_execution(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert set(JVM_OPTIONS.split()) <= set(arguments)
    assert spark.conf.get("spark.sql.adaptive.enabled") == "false"


def test_jvm_options_are_a_setting_for_driver_and_executors(monkeypatch):
    monkeypatch.setenv("RSP_JVM_OPTIONS", "-XX:+UseG1GC")
    driver = engine_conf(Path("/tmp/home"))["spark.driver.extraJavaOptions"]
    assert driver.startswith("-XX:+UseG1GC ") and "TieredStopAtLevel" not in driver
    assert cluster_conf()["spark.executor.extraJavaOptions"] == "-XX:+UseG1GC"
    monkeypatch.setenv("RSP_JVM_OPTIONS", "")  # the JVM's own defaults
    assert engine_conf(Path("/tmp/home"))["spark.driver.extraJavaOptions"].startswith("-Dderby")


def test_building_a_column_makes_no_call_site_round_trips(spark):
    """PySpark's DataFrame debugging (the Python call site of every function, set in the JVM)
    is off: ``F.col("x") + F.lit(1)`` costs the calls that build it, not five more per call."""
    import py4j.clientserver
    import py4j.java_gateway
    from pyspark.sql import functions as F

    F.col("x") + F.lit(1)  # PySpark reads the setting once
    calls = []
    originals = {}
    for cls in (py4j.clientserver.ClientServerConnection, py4j.java_gateway.GatewayConnection):
        originals[cls] = cls.send_command

        def counted(self, command, *args, _original=originals[cls], **kwargs):
            calls.append(command)
            return _original(self, command, *args, **kwargs)
        cls.send_command = counted
    try:
        F.col("x") + F.lit(1)
    finally:
        for cls, original in originals.items():
            cls.send_command = original
    assert len(calls) <= 8, [c.splitlines()[:3] for c in calls]
    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
