"""Spark from one setting, and the engine on a real Spark standalone cluster.

``rsp evaluate`` runs as a subprocess (this test process already holds a local SparkContext, and
there is one per process) against a master and worker started on 127.0.0.1 from the installed
pyspark; it must give CSRBench's published answers (what ``local[2]`` gives: the CSRBench suite).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rsp_jobs import settings
from rsp_jobs.errors import RspError
from rsp_jobs.orchestrate import spark_connection
from tests.support.spark_cluster import java_missing, spark_cluster  # noqa: F401 (fixture)

RSP = str(Path(sys.executable).with_name("rsp"))
QUERY = "q5"  # CSRBench: a join with a numeric FILTER over [RANGE 5s STEP 1s], 34 windows
RUN_TIMEOUT = 600  # seconds; the machine may be shared with other Spark jobs


# --- the master: RSP_SPARK_MASTER, else the Airflow connection, else local[2] ---

@pytest.fixture
def clean_spark_env(monkeypatch):
    for key in ("RSP_SPARK_MASTER", "RSP_SPARK_CONN_ID", "AIRFLOW_CONN_RSP_SPARK"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def test_environment_setting_wins_over_the_connection(clean_spark_env):
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK", "spark://127.0.0.1:7077")
    clean_spark_env.setenv("RSP_SPARK_MASTER", "local[1]")
    assert spark_connection.spark_master() == "local[1]"
    assert settings.spark_master() == "local[1]"


def test_airflow_connection_from_the_environment(clean_spark_env):
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK", "spark://127.0.0.1:7077")
    assert spark_connection.spark_master() == "spark://127.0.0.1:7077"
    assert settings.spark_master() == "local[2]"  # settings reads the environment only


@pytest.mark.parametrize("value, master", [
    ('{"conn_type": "spark", "host": "spark://10.0.0.5", "port": 7078}', "spark://10.0.0.5:7078"),
    ('{"conn_type": "spark", "host": "spark://10.0.0.5:7079"}', "spark://10.0.0.5:7079"),
    ('{"conn_type": "spark", "host": "local[3]"}', "local[3]"),
    ('{"conn_type": "spark", "host": "yarn"}', "yarn"),
    ('{"conn_type": "spark", "host": "sparkhost", "port": 7078}', "spark://sparkhost:7078"),
    ('{"conn_type": "spark", "host": "k8s://https://10.0.0.6", "port": 6443}', "k8s://https://10.0.0.6:6443"),
    ("k8s://10.0.0.6:6443", "k8s://10.0.0.6:6443"),
    ("spark://spark%3A%2F%2Fmaster.example%3A7077", "spark://master.example:7077"),
])
def test_connection_forms_are_read_as_the_spark_provider_reads_them(clean_spark_env, value, master):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    clean_spark_env.setenv("RSP_SPARK_CONN_ID", "rsp_spark_forms")
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK_FORMS", value)
    assert spark_connection.spark_master() == master
    if not master.startswith("k8s"):  # the hook wants the cncf.kubernetes provider for k8s (not installed)
        assert SparkSubmitHook(conn_id="rsp_spark_forms")._connection["master"] == master


@pytest.mark.parametrize("value, master", [
    ('{"conn_type": "spark", "host": "sparkhost"}', "spark://sparkhost:7077"),  # the provider: "sparkhost"
    ('{"conn_type": "spark", "extra": {"master": "local[1]"}}', "local[1]"),
])
def test_connection_forms_beyond_the_provider(clean_spark_env, value, master):
    clean_spark_env.setenv("RSP_SPARK_CONN_ID", "rsp_spark_forms")
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK_FORMS", value)
    assert spark_connection.spark_master() == master


def test_connection_extras(clean_spark_env):
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK", "spark://yarn?deploy-mode=client&queue=rsp&namespace=ns")
    target = spark_connection.spark_target()
    assert target.conf == {"spark.yarn.queue": "rsp", "spark.kubernetes.namespace": "ns"}
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK", "spark://127.0.0.1:7077?deploy-mode=cluster")
    with pytest.raises(RspError, match="deploy-mode 'cluster'"):
        spark_connection.spark_target()


def test_connection_without_a_master_is_an_error(clean_spark_env):
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK", '{"conn_type": "spark"}')
    with pytest.raises(RspError, match="rsp_spark"):
        spark_connection.spark_master()


def test_undefined_connection_falls_back_to_local(clean_spark_env):
    clean_spark_env.setenv("AIRFLOW_CONN_RSP_SPARK", "spark://127.0.0.1:7077")
    assert spark_connection.spark_master() == "spark://127.0.0.1:7077"  # Airflow is loaded now
    assert "airflow.sdk" in sys.modules
    clean_spark_env.delenv("AIRFLOW_CONN_RSP_SPARK")
    assert spark_connection.spark_master() == "local[2]"  # the SDK's not-found error, caught
    clean_spark_env.setenv("RSP_SPARK_CONN_ID", "rsp_spark_nowhere")
    assert spark_connection.spark_master() == "local[2]"


@pytest.mark.parametrize("module, extra, master", [
    ("orchestrate.spark_connection", {"RSP_SPARK_MASTER": "spark://127.0.0.1:7077"}, "spark://127.0.0.1:7077"),
    ("orchestrate.spark_connection", {}, "local[2]"),
    ("settings", {"AIRFLOW_CONN_RSP_SPARK": "spark://127.0.0.1:1"}, "local[2]"),
])
def test_airflow_is_not_imported_when_it_cannot_matter(tmp_path, module, extra, master):
    """A fresh process: with RSP_SPARK_MASTER set, or with no connection defined anywhere
    Airflow could look, the master is found without importing Airflow (which takes seconds);
    ``settings`` never imports it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "_AIRFLOW")) and k not in ("RSP_SPARK_MASTER", "RSP_SPARK_CONN_ID")}
    env.update({"RSP_HOME": str(tmp_path), "AIRFLOW_CONN_RSP_SPARK": "spark://127.0.0.1:1"} if extra else
               {"RSP_HOME": str(tmp_path)})
    env.update(extra)
    code = (f"import sys, importlib; m = importlib.import_module('rsp_jobs.{module}'); "
            "print(m.spark_master(), 'airflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [master, "False"]


# --- the engine on a standalone cluster ---

@pytest.fixture(scope="module")
def csrbench_stream(data_dir, tmp_path_factory) -> Path:
    from rsp_jobs.ingest import csrbench

    return csrbench.write_stream(tmp_path_factory.mktemp("csrbench") / "csrbench.nq")


class _Evaluation:
    """``rsp evaluate`` of the CSRBench query in a subprocess on ``master``."""

    def __init__(self, driver_env: dict[str, str], stream: Path, home: Path):
        from rsp_jobs.ingest import csrbench

        self.master = driver_env["RSP_SPARK_MASTER"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "RSP_SPARK_CONN"))}
        env.update({**driver_env, "RSP_HOME": str(home)})
        self.process = subprocess.Popen(
            [RSP, "evaluate", str(csrbench.query_path(QUERY)), "--stream", f"{csrbench.STREAM}={stream}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def windows(self) -> list[dict]:
        try:
            out, err = self.process.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate()
            pytest.fail(f"rsp evaluate on {self.master} did not finish in {RUN_TIMEOUT} s\n{err[-4000:]}")
        assert self.process.returncode == 0, f"rsp evaluate on {self.master} failed:\n{err[-4000:]}"
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


@pytest.mark.skipif(java_missing() is not None, reason=java_missing() or "")
def test_cluster_gives_the_published_answers(spark_cluster, csrbench_stream, tmp_path):  # noqa: F811
    from rsp_jobs.ingest import csrbench
    from rsp_jobs.results import WindowResult

    assert spark_cluster.status()["aliveworkers"] == 1
    on_cluster = _Evaluation(spark_cluster.driver_env(), csrbench_stream, tmp_path / "home-cluster")
    try:
        cluster_windows = on_cluster.windows()
    finally:
        on_cluster.stop()

    assert any(w["bindings"] for w in cluster_windows), "the cluster found no answers"
    windows = [WindowResult.from_json(w, "SELECT") for w in cluster_windows]
    assert csrbench.answers_of(windows) == csrbench.expected_answers(QUERY)

    # the answers came from the cluster: the master ran an application `rsp` to its end, and
    # the worker started an executor for it
    app = spark_cluster.wait_for_application("rsp")
    assert app["state"] == "FINISHED", app
    executors = list((spark_cluster.directory / "work" / app["id"]).glob("*/stderr"))
    assert executors, f"no executor ran for {app['id']} on the worker\n{spark_cluster.logs()}"


@pytest.mark.skipif(java_missing() is not None, reason=java_missing() or "")
def test_cluster_refuses_a_driver_without_its_secret(spark_cluster, tmp_path):  # noqa: F811
    """The cluster asks for its shared secret: a driver that does not hold it registers no
    application, and the master says why. The secret is in a file only this account reads, and
    on no process's command line."""
    defaults = spark_cluster.conf_dir / "spark-defaults.conf"
    assert defaults.stat().st_mode & 0o777 == 0o600
    secret = dict(line.split(maxsplit=1) for line in defaults.read_text().splitlines())["spark.authenticate.secret"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "RSP_SPARK"))}
    code = ("from pyspark.sql import SparkSession; "
            f"print(SparkSession.builder.master({spark_cluster.master_url!r}).getOrCreate().range(3).count())")
    driver = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        master = spark_cluster.daemons[0]
        deadline = time.monotonic() + 120
        while "Expected SaslMessage" not in master.tail(400) and time.monotonic() < deadline:
            assert driver.poll() is None or driver.returncode != 0, "a driver without the secret ran a job"
            time.sleep(0.5)
        assert "Expected SaslMessage" in master.tail(400), f"the master did not refuse the driver\n{spark_cluster.logs()}"
        state = spark_cluster.status()
        assert all(a["name"] != "pyspark-shell" for a in state["activeapps"] + state["completedapps"]), state
        on_command_lines = [pid for pid in os.listdir("/proc") if pid.isdigit() and _holds(pid, secret)]
        assert on_command_lines == [], "the cluster's secret is on a command line"
    finally:
        driver.kill()
        driver.communicate()


def _holds(pid: str, secret: str) -> bool:
    try:
        return secret.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # the process has ended
        return False
