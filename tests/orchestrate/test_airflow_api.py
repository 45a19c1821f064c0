"""The Airflow UI and REST API v2, end to end: a real deployment (API server, scheduler, DAG
processor, triggerer, as ``make airflow`` runs them) on the project's ``dags/``, behind a login;
a query DAG run triggered through the API evaluates its data interval in Spark, and the asset
event it emits for its output stream says which windows, how many rows and which provenance
activity."""
from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, StoredResult
from rsp_jobs.demo_deployment import Deployment, airflow_deployment
from tests.orchestrate.conftest import DAY, TRAFFIC, land
from tests.support.browser import browser, needs_chromium

PROJECT_DAGS = {"congestion_by_segment", "congested_pairs", "congestion_readings", "congested_segments",
                "congestion_alert", "congestion_rising", "segment_silent", "dart_mean10", "dart_prediction",
                "dart_pairs", "tsunami_detection", "alert_congestion_alert", "alert_congestion_rising", "alert_segment_silent",
                "alert_tsunami_detection", "ingest_aarhus_traffic", "ingest_dart_21418", "ingest_dart_21401"}
QUERY_DAG = "congestion_by_segment"  # RANGE 1h STEP 5m over the Aarhus traffic, 15-min batches
OUTPUT_STREAM = "urn:rsp:query:congestion_by_segment/stream"


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, request):
    """One deployment for the module, scheduling as ``make airflow`` does."""
    home = tmp_path_factory.mktemp("airflow-deployment")
    with airflow_deployment(home) as deployment:
        failed = request.session.testsfailed
        yield deployment
        if request.session.testsfailed > failed:  # show what Airflow said about the failure
            with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
                print(f"\n{deployment.log_tails()}", file=sys.stderr)


def listed_dags(airflow: Deployment) -> set[str]:
    """The DAG ids of ``GET /api/v2/dags`` once the DAG processor has parsed the project's."""
    def dag_ids():
        ids = {d["dag_id"] for d in airflow.client.get("/api/v2/dags", params={"limit": 100})
               .raise_for_status().json()["dags"]}
        return ids if PROJECT_DAGS <= ids else None
    return airflow.wait_for(dag_ids, 120, f"DAGs {sorted(PROJECT_DAGS)} listed")


def test_the_api_and_ui_need_a_login(airflow):
    assert httpx.get(f"{airflow.url}/api/v2/dags").status_code in (401, 403)
    assert airflow.login(airflow.user, "not the password").status_code == 401
    assert httpx.get(f"{airflow.url}/auth/token").status_code == 403  # no token without credentials
    assert airflow.login(airflow.user, airflow.password).status_code == 201


def test_the_project_dags_are_listed_without_import_errors(airflow):
    assert listed_dags(airflow) == PROJECT_DAGS
    errors = airflow.client.get("/api/v2/importErrors").raise_for_status().json()
    assert errors["total_entries"] == 0, errors


def test_a_query_run_triggered_through_the_api_emits_an_asset_event_for_its_interval(
        airflow, traffic, monkeypatch):
    monkeypatch.setenv("RSP_HOME", airflow.env["RSP_HOME"])  # the deployment's lake and store
    monkeypatch.delenv("RSP_STORE_URL", raising=False)
    from rsp_jobs.orchestrate.ingest import ingest_landing

    land(traffic(0, 60))  # 06:00-07:00: the watermark passes 06:45 + 5 min allowed lateness
    assert ingest_landing(TRAFFIC).as_dict()["loaded"] == 1
    listed_dags(airflow)

    # as dags/README.md: unpause (the scheduler starts a run for today's interval, whose inputs
    # cannot come), then replay a batch of 2014 through the trigger form's params
    after, until = DAY + timedelta(minutes=30), DAY + timedelta(minutes=45)  # one batch: 3 closes
    dag = f"/api/v2/dags/{QUERY_DAG}"
    airflow.client.patch(dag, json={"is_paused": False}).raise_for_status()
    run = airflow.client.post(f"{dag}/dagRuns", json={
        "dag_run_id": "api_e2e", "logical_date": datetime.now(timezone.utc).isoformat(),
        "conf": {"after": after.isoformat(), "until": until.isoformat()},
    }).raise_for_status().json()

    def finished():
        state = airflow.client.get(f"{dag}/dagRuns/{run['dag_run_id']}").raise_for_status().json()["state"]
        return state if state in ("success", "failed") else None
    assert airflow.wait_for(finished, 600, f"run {run['dag_run_id']} finished") == "success"

    def scheduled_failed():  # at once, saying why, so the replay did not queue behind it
        runs = airflow.client.get(f"{dag}/dagRuns", params={"run_type": "scheduled"}).raise_for_status().json()
        return [r for r in runs["dag_runs"] if r["state"] == "failed"] or None
    (scheduled,) = airflow.wait_for(scheduled_failed, 300, "the scheduled run of today failed")
    (wait_log,) = airflow.logs.glob(f"dag_id={QUERY_DAG}/run_id={scheduled['dag_run_id']}/task_id=wait_for_inputs/attempt=*.log")
    assert f"<{TRAFFIC}> holds data up to 2014-08-02T0" in wait_log.read_text()
    assert "cannot arrive" in wait_log.read_text()

    events = airflow.client.get("/api/v2/assets/events", params={
        "source_dag_id": QUERY_DAG, "source_run_id": run["dag_run_id"]}).raise_for_status().json()
    (event,) = events["asset_events"]
    assert event["uri"] == f"x-rsp:{OUTPUT_STREAM}" and event["source_task_id"] == "evaluate"
    extra = event["extra"]
    assert (extra["after"], extra["until"], extra["windows"]) == (after.isoformat(), until.isoformat(), 3)
    assert extra["query"] == "urn:rsp:query:congestion_by_segment"
    assert extra["rows"] > 0  # per window, a row per traffic sensor with readings

    with db.engine().connect() as conn:  # what the event says is what the store holds
        activity = conn.execute(select(Activity).where(Activity.iri == extra["activity"])).one()
        results = conn.scalars(select(StoredResult.payload).where(StoredResult.query_iri == extra["query"])).all()
    assert len(results) == 3 and sum(len(r["bindings"]) for r in results) == extra["rows"]
    assert (activity.dag_id, activity.run_id, activity.task_id, activity.status) == (
        QUERY_DAG, run["dag_run_id"], "evaluate", "success")

    # the task ran as a client of the deployment's Spark Connect server (no JVM of its own), and
    # its log says what it did, in the project's words
    (task_log,) = airflow.logs.glob(f"dag_id={QUERY_DAG}/run_id={run['dag_run_id']}/task_id=evaluate/attempt=*.log")
    text = task_log.read_text()
    for said in ("congestion_by_segment: run over (2014-08-02T06:30:00Z, 2014-08-02T06:45:00Z]",
                 "congestion_by_segment: evaluated 3 window closes", "congestion_by_segment: quality: batch",
                 f"asset event for <{OUTPUT_STREAM}>"):
        assert said in text, said
    assert "great_expectations" not in text and '"level":"error"' not in text  # no GX import noise, no errors
    server = airflow.spark_connect
    ask = ("from pyspark.sql import SparkSession; "
           f"print(SparkSession.builder.remote({server!r}).getOrCreate().conf.get('spark.app.id'))")
    served = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, timeout=120)
    assert activity.spark_app_id == served.stdout.strip().splitlines()[-1], served.stderr[-2000:]


@needs_chromium
@pytest.mark.browser
def test_what_a_user_sees_in_the_ui_without_network(airflow, tmp_path, data_dir):
    """After the replay above, in headless Chromium with no network beyond this machine, as
    the README's Airflow section walks through it: the login form, the DAG list, a DAG's
    description, the replay's run and its task log in the project's words, the output stream's
    asset graph, and the Data Docs of the run's quality check. Screenshots of each are left
    under the test's folder."""
    from selenium.webdriver.common.by import By

    description = airflow.client.get(f"/api/v2/dags/{QUERY_DAG}").raise_for_status().json()["description"]
    (asset,) = airflow.client.get("/api/v2/assets", params={"uri_pattern": OUTPUT_STREAM}).json()["assets"]
    with browser(tmp_path / "screenshots") as ui:
        ui.log_in(airflow.url, airflow.user, airflow.password)
        ui.screenshot("1-home")

        listed = ui.open(f"{airflow.url}/dags", showing=f"{len(PROJECT_DAGS)} Dags")
        assert PROJECT_DAGS <= set(listed.split()), PROJECT_DAGS - set(listed.split())
        ui.screenshot("2-dag-list")
        ui.open(f"{airflow.url}/dags/{QUERY_DAG}/details", showing=description)
        assert "[RANGE 1h STEP 5m]" in description  # the query's own words, no Python repr
        ui.screenshot("3-dag-details")

        run = ui.open(f"{airflow.url}/dags/{QUERY_DAG}/runs/api_e2e", showing="evaluate")
        assert "success" in run.lower()
        ui.screenshot("4-replay-run")
        ui.open(f"{airflow.url}/dags/{QUERY_DAG}/runs/api_e2e/tasks/evaluate",
                showing="congestion_by_segment: evaluated 3 window closes")
        ui.screenshot("5-task-log")

        graph = ui.open(f"{airflow.url}/assets/{asset['id']}", showing="1 Asset Event")
        assert f"Source:\n{QUERY_DAG}" in graph  # the replay's event
        nodes = ui.driver.execute_script(  # the graph's nodes, read at once (React redraws them)
            "return [...document.querySelectorAll('.react-flow__node')].map(n => n.innerText.trim())")
        assert {QUERY_DAG, OUTPUT_STREAM} <= set(nodes), nodes
        ui.screenshot("6-asset-graph")

        (index,) = (Path(airflow.env["RSP_HOME"]) / "gx").rglob("data_docs/local_site/index.html")
        docs = ui.open(index.as_uri(), showing="Showing 1 to")
        assert "rsp_output_batch" in docs and "https://" not in index.read_text().split("<body")[0]
        assert ui.driver.find_elements(By.CSS_SELECTOR, "div.bootstrap-table")  # built by its script
        ui.screenshot("7-data-docs")
