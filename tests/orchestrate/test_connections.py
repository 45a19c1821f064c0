"""The frame store as an Airflow connection (``rsp_store``): what ``make airflow`` writes for a
store URL reads back as the same URL; ``RSP_STORE_URL`` wins; a connection that cannot name a
store is an error naming it. A DAG run on the connection alone: tests/orchestrate/test_chain.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rsp_jobs.errors import RspError
from rsp_jobs.orchestrate import airflow_env, connections


@pytest.mark.parametrize("url", [
    "sqlite:////var/lib/rsp/store.sqlite",
    "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "postgresql+psycopg://rsp:p%40ss%3Aword@store-db/rsp?options=-csearch_path%3Drsp",
])
def test_a_store_url_written_as_a_connection_reads_back_the_same(url):
    fields = airflow_env.store_connection(url)
    extra = json.loads(fields.get("extra", "{}"))
    assert connections.url_of_connection("rsp_store", fields["conn_type"], fields["host"], fields.get("login"),
                                         fields.get("password"), fields.get("port"), fields.get("schema"),
                                         extra) == url


def test_a_connection_may_give_the_url_outright():
    url = "postgresql+psycopg://u@h/db"
    assert connections.url_of_connection("rsp_store", "generic", None, extra={"url": url}) == url


@pytest.mark.parametrize("conn_type, host, message", [
    ("mysql", "h", "frame store is SQLite or PostgreSQL: give it type sqlite or postgres"),
    ("sqlite", None, "needs the file's path as its host"),
    ("postgres", "", "needs a host"),
])
def test_a_connection_that_names_no_store_is_an_error_naming_it(conn_type, host, message):
    with pytest.raises(RspError, match=f"Airflow connection 'rsp_store': .*{message}"):
        connections.url_of_connection("rsp_store", conn_type, host)


@pytest.mark.airflow
def test_the_environment_wins_over_the_connection(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_RSP_STORE", json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "c.sqlite")}))
    monkeypatch.delenv("RSP_STORE_URL", raising=False)
    assert connections.store_url() == f"sqlite:///{tmp_path / 'c.sqlite'}"
    assert connections.use_store_connection() == f"sqlite:///{tmp_path / 'c.sqlite'}"
    monkeypatch.setenv("RSP_STORE_URL", "sqlite:////elsewhere.sqlite")
    assert connections.store_url() == "sqlite:////elsewhere.sqlite"


def test_without_airflow_or_the_connection_the_store_keeps_its_default(tmp_path):
    """A fresh interpreter, as ``rsp`` by hand: no Airflow settings, so Airflow is not imported."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RSP_"))}
    code = ("import sys; from rsp_jobs.orchestrate import connections; "
            "print(connections.store_url(), 'airflow' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env={**clean, "RSP_HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["None", "False"], done.stderr[-2000:]


def test_airflow_on_sqlite_waits_a_minute_for_its_database_lock_and_on_postgresql_is_left_alone(tmp_path):
    import importlib

    on_sqlite = airflow_env.environment(tmp_path, {})
    for key in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC"):
        module, _, name = on_sqlite[key].rpartition(".")  # as Airflow's conf.getimport reads it
        assert getattr(importlib.import_module(module), name)["timeout"] >= 30
    on_postgres = airflow_env.environment(tmp_path, {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql+psycopg2://airflow@airflow-db/airflow"})
    assert not any("CONNECT_ARGS" in key for key in on_postgres)  # psycopg takes no `timeout`


def test_a_connect_server_that_is_not_running_fails_the_job_at_once_naming_it(monkeypatch):
    """pyspark's client would retry for about ten minutes (``airflow dags test`` with no
    ``make airflow`` running); the job says at once which server it needs and how to do without."""
    import socket
    import time

    from rsp_jobs.orchestrate.spark_connection import get_spark

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.delenv("RSP_SPARK_MASTER", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_RSP_SPARK", json.dumps(
        {"conn_type": "spark_connect", "host": "127.0.0.1", "port": port}))
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=rf"no Spark Connect server at 127\.0\.0\.1:{port} .*'rsp_spark'.*"
                                              r"make airflow.*RSP_SPARK_MASTER=local\[2\]"):
        get_spark()
    assert time.monotonic() - started < 30
