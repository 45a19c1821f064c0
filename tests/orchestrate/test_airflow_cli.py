"""``make airflow`` writes its settings into ``airflow.cfg`` and the platform's connections into
the metadata database, so that the ``airflow`` CLI run by hand in the project's Airflow home
(only ``AIRFLOW_HOME`` set, as dags/README.md says) sees the project's DAGs and not the
examples, and Admin -> Connections shows ``rsp_spark`` and ``rsp_store``. The steps are ``airflow_env.main``'s, on a new home."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from rsp_jobs import settings
from rsp_jobs.orchestrate import airflow_env

pytestmark = pytest.mark.airflow


def test_the_airflow_cli_in_the_project_home_lists_the_projects_dags_and_connections(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RSP_"))}
    env = airflow_env.environment(tmp_path / "home", clean)
    airflow_env.migrate(env)  # creates airflow.cfg with Airflow's defaults
    cfg = airflow_env.write_config(env)
    # make airflow runs a Spark Connect server: the connection is the provider's spark_connect type;
    # one made before the server asked for a token is given the token
    airflow_env.ensure_connections(env, connect_port=15002)
    token = airflow_env.ensure_connect_token(env)
    airflow_env.ensure_connections(env, connect_port=15002, connect_token=token)
    text = cfg.read_text()
    assert f"dags_folder = {settings.REPO_ROOT / 'dags'}" in text and "load_examples = False" in text
    assert text.splitlines().count("[core]") == 1 and "# " in text  # edited in place: Airflow's comments stay

    by_hand = {**clean, "AIRFLOW_HOME": env["AIRFLOW_HOME"]}  # what a user's shell has

    def airflow(*args: str) -> str:
        done = subprocess.run(airflow_env.airflow_command(*args), env=by_hand, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()[-1] if "json" in args else done.stdout  # after any warning

    def connections() -> dict[str, tuple]:
        listed = json.loads(airflow("connections", "list", "--show-values", "-o", "json"))
        return {c["conn_id"]: (c["conn_type"], c["host"], c["port"] and str(c["port"]), c["password"] or None)
                for c in listed}

    dags = {d["dag_id"] for d in json.loads(airflow("dags", "list", "--local", "-o", "json"))}
    assert {"congestion_by_segment", "tsunami_detection", "ingest_aarhus_traffic"} <= dags
    assert not any(d.startswith("example_") for d in dags)
    assert airflow("tasks", "list", "congestion_by_segment").split() == ["evaluate", "wait_for_inputs"]
    store = ("sqlite", str(tmp_path / "home" / "store.sqlite"), None, None)
    # localhost: the one host pyspark sends a token to without TLS
    assert connections() == {"rsp_spark": ("spark_connect", "localhost", "15002", token), "rsp_store": store}
    airflow_env.ensure_connections(env)  # a connection that exists is left as it is
    assert connections() == {"rsp_spark": ("spark_connect", "localhost", "15002", token), "rsp_store": store}

    # a writer that holds Airflow's SQLite database longer than Python's 5 s default makes the
    # others wait, not fail with "database is locked" (airflow_sqlite)
    holder = sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    released = threading.Timer(8, holder.rollback)  # past Python's 5 s default
    released.start()
    started = time.monotonic()
    try:
        airflow("variables", "set", "rsp_lock_probe", "waited")
    finally:
        released.join()
    assert time.monotonic() - started >= 8  # it waited for the lock
    assert airflow("variables", "get", "rsp_lock_probe").strip() == "waited"


def test_without_a_connect_server_the_tasks_spark_is_a_jvm_of_their_own(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_RSP_SPARK", raising=False)
    monkeypatch.delenv("RSP_STORE_URL", raising=False)
    env = airflow_env.environment(tmp_path / "home", {})
    assert airflow_env.platform_connections(env)["rsp_spark"]["conn_type"] == "spark"
    assert airflow_env.platform_connections(env)["rsp_spark"]["host"] == "local[2]"
    assert airflow_env.platform_connections(env, 15002)["rsp_spark"]["port"] == 15002
    monkeypatch.setenv("AIRFLOW_CONN_RSP_SPARK", "spark://127.0.0.1:7077")  # the environment wins
    assert set(airflow_env.platform_connections(env)) == {"rsp_store"}


def test_the_connect_token_is_made_once_and_kept_readable_by_its_owner_only(tmp_path, monkeypatch):
    monkeypatch.delenv("RSP_SPARK_CONNECT_TOKEN", raising=False)
    env = airflow_env.environment(tmp_path / "home", {})
    token = airflow_env.ensure_connect_token(env)
    path = Path(env["AIRFLOW_HOME"]) / airflow_env.CONNECT_TOKEN_FILE
    assert len(token) >= 40 and path.read_text().strip() == token and path.stat().st_mode & 0o777 == 0o600
    assert airflow_env.ensure_connect_token(env) == token  # kept
    monkeypatch.setenv("RSP_SPARK_CONNECT_TOKEN", "given-token")  # a deployment's own secret wins
    assert airflow_env.ensure_connect_token(env) == "given-token" == path.read_text().strip()


@pytest.mark.spark  # the run's evaluation starts a local Spark in the `airflow dags test` process
def test_airflow_dags_test_runs_the_interval_the_docs_say_and_its_lines_are_the_projects(tmp_path, traffic):
    """dags/README.md: `airflow dags test DAG -c '{"after": ..., "until": ...}'` evaluates that
    interval; a logical date alone is the end of a batch, and a run that finds nothing says where
    the data is. Scheduler lines do not bury the project's."""
    from datetime import datetime, timezone

    from rsp_jobs.ingest.lake import stream_key
    from rsp_jobs.orchestrate import registry
    from rsp_jobs.orchestrate.ingest import drop, ingest_landing
    from tests.orchestrate.conftest import TRAFFIC

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RSP_"))}
    home = tmp_path / "home"
    env = airflow_env.environment(home, clean)
    airflow_env.migrate(env)
    airflow_env.write_config(env)
    by_hand = {**clean, "AIRFLOW_HOME": env["AIRFLOW_HOME"], "RSP_HOME": str(home), "RSP_SETTINGS": "none",
               "RSP_SPARK_MASTER": "local[2]", "RSP_DATA_DIR": str(settings.data_dir())}
    previous = {k: os.environ.get(k) for k in ("RSP_HOME", "RSP_STORE_URL")}
    os.environ["RSP_HOME"] = str(home)
    os.environ.pop("RSP_STORE_URL", None)
    try:
        drop(traffic(60, 90), registry.stream_config(TRAFFIC))  # 07:00 to 07:30
        ingest_landing(TRAFFIC)
    finally:
        for key, value in previous.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)

    def dags_test(*args: str) -> list[str]:
        done = subprocess.run(airflow_env.airflow_command("dags", "test", "congestion_by_segment", *args),
                              env=by_hand, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        return (done.stdout + done.stderr).splitlines()

    replay = dags_test("-c", json.dumps({"after": "2014-08-02T07:00:00Z", "until": "2014-08-02T07:15:00Z"}))
    assert any("run over (2014-08-02T07:00:00Z, 2014-08-02T07:15:00Z]" in line for line in replay)
    assert any("done in" in line and "3 windows" in line for line in replay)
    assert len(replay) < 80, "\n".join(replay)  # the project's lines are a good part of it
    # the evaluation's OpenLineage run event (docs/openlineage.md), through the provider's file
    # transport: what the stored activity used and generated
    events = [json.loads(line) for line in airflow_env.openlineage_file(home).read_text().splitlines()]
    (done,) = [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"] == "congestion_by_segment.evaluate"]
    activity = next(line.split("'activity': '")[1].split("'")[0] for line in replay if "asset event for" in line)
    assert done["run"]["facets"]["rspProvenance"]["activities"] == [activity]
    inputs = {(d["namespace"], d["name"]) for d in done["inputs"]}
    partition = home / "lake" / f"stream_key={stream_key(TRAFFIC)}" / "hour=2014-08-02T07"
    assert inputs == {("rsp", TRAFFIC), ("file", str(partition)),
                      ("file", str(settings.data_dir() / "citybench" / "background" / "SensorRepository.n3"))}
    assert [(d["namespace"], d["name"]) for d in done["outputs"]] == [("rsp", "urn:rsp:query:congestion_by_segment/stream")]
    query_file = settings.REPO_ROOT / "queries" / "citybench" / "congestion_by_segment.rsp"  # by_hand names no other
    assert done["job"]["facets"]["sourceCode"]["sourceCode"] == query_file.read_text()
    by_date = dags_test(datetime(2014, 8, 2, tzinfo=timezone.utc).isoformat())
    assert any("run over (2014-08-01T23:45:00Z, 2014-08-02T00:00:00Z]" in line for line in by_date)
    assert any("reported anything" in line and "has frames from 2014-08-02T07:00:00Z to 2014-08-02T07:25:00Z"
               in line for line in by_date), "\n".join(by_date)
