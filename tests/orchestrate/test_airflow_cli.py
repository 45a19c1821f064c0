"""``make airflow`` writes its settings into ``airflow.cfg`` and the platform's connections into
the metadata database, so that the ``airflow`` CLI run by hand in the project's Airflow home
(only ``AIRFLOW_HOME`` set, as dags/README.md says) sees the project's DAGs and not the
examples, and Admin -> Connections shows ``rsp_spark`` and ``rsp_store``. The steps are ``airflow_env.main``'s, on a new home."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from rsp_jobs import settings
from rsp_jobs.orchestrate import airflow_env

pytestmark = pytest.mark.airflow


def test_the_airflow_cli_in_the_project_home_lists_the_projects_dags_and_connections(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RSP_"))}
    env = airflow_env.environment(tmp_path / "home", clean)
    airflow_env.migrate(env)  # creates airflow.cfg with Airflow's defaults
    cfg = airflow_env.write_config(env)
    airflow_env.ensure_connections(env)
    text = cfg.read_text()
    assert f"dags_folder = {settings.REPO_ROOT / 'dags'}" in text and "load_examples = False" in text
    assert text.splitlines().count("[core]") == 1 and "# " in text  # edited in place: Airflow's comments stay

    by_hand = {**clean, "AIRFLOW_HOME": env["AIRFLOW_HOME"]}  # what a user's shell has

    def airflow(*args: str) -> str:
        done = subprocess.run(airflow_env.airflow_command(*args), env=by_hand, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1] if "json" in args else done.stdout  # after any warning

    dags = {d["dag_id"] for d in json.loads(airflow("dags", "list", "--local", "-o", "json"))}
    assert {"congestion_by_segment", "tsunami_detection", "ingest_aarhus_traffic"} <= dags
    assert not any(d.startswith("example_") for d in dags)
    assert airflow("tasks", "list", "congestion_by_segment").split() == ["evaluate", "wait_for_inputs"]
    (spark,) = json.loads(airflow("connections", "get", "rsp_spark", "-o", "json"))
    assert (spark["conn_type"], spark["host"]) == ("spark", "local[2]")
    (store,) = json.loads(airflow("connections", "get", "rsp_store", "-o", "json"))
    assert (store["conn_type"], store["host"]) == ("sqlite", str(tmp_path / "home" / "store.sqlite"))
    airflow_env.ensure_connections(env)  # again: left as it is
    assert len(json.loads(airflow("connections", "list", "-o", "json"))) == 2
    # make airflow runs a Spark Connect server: the connection is the provider's spark_connect type
    airflow("connections", "delete", "rsp_spark")
    airflow_env.ensure_connections(env, connect_port=15002)
    (connect,) = json.loads(airflow("connections", "get", "rsp_spark", "-o", "json"))
    assert (connect["conn_type"], connect["host"], connect["port"]) == ("spark_connect", "127.0.0.1", "15002")
