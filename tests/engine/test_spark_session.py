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
