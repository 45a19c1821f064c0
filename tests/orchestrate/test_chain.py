"""Real DAG runs on a Spark standalone cluster: a deployment whose tasks get Spark from the
Airflow connection ``rsp_spark``, a Spark Connect server whose executors are the cluster's (a
master and worker started from the installed pyspark): the tasks start no JVM of their own.

- Chaining: triggering the root of the traffic chain (``congestion_readings``, REGISTER STREAM)
  makes the scheduler run ``congested_segments`` (REGISTER STREAM over its output) and then the
  alert query ``congestion_alert`` on the asset events, each over the interval the events carry;
  the results equal a local-mode evaluation of each stage over the same lake.
- Watermarks: a run whose interval the inputs have not reached yet waits deferred (in the
  triggerer, holding no worker slot) and completes once an ingest moves the watermark past it."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select

from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.orchestrate import registry, tasks
from rsp_jobs.times import to_us
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, Stream, StoredResult
from rsp_jobs.orchestrate.replay import run_states, trigger, unpause_all, wait_for_run
from rsp_jobs.demo_deployment import airflow_deployment
from tests.orchestrate.conftest import DAY, TRAFFIC, land
from tests.support.spark_cluster import spark_cluster  # noqa: F401  (fixture)

CHAIN = ("congestion_readings", "congested_segments", "congestion_alert")


@pytest.fixture(scope="module")
def airflow(tmp_path_factory, traffic, spark_cluster):
    """The deployment, its project home holding 06:30-08:00 of traffic (watermark 07:55). Its
    frame store is not the default one under the home: the tasks know it only from the
    ``rsp_store`` connection."""
    home = tmp_path_factory.mktemp("chain") / "home"
    store = home / "frames.sqlite"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RSP_HOME", str(home))
        env.delenv("RSP_STORE_URL", raising=False)
        overrides = {"RSP_SCHEDULED_RUNS": "false",  # no scheduled runs, only ours
                     # a replay triggered before its last file lands waits for it (dags/README.md)
                     "RSP_REPLAY_WAIT": "15m",
                     "AIRFLOW_CONN_RSP_STORE": json.dumps({"conn_type": "sqlite", "host": str(store)}),
                     # the cluster's shared secret, which the Connect server's driver reads
                     "SPARK_CONF_DIR": spark_cluster.driver_env()["SPARK_CONF_DIR"]}
        with airflow_deployment(home, overrides, spark_master=spark_cluster.master_url) as deployment:
            env.setenv("RSP_STORE_URL", f"sqlite:///{store}")  # this process's own reads and ingest
            from rsp_jobs.orchestrate.ingest import ingest_landing

            land(traffic(30, 120))
            ingest_landing(TRAFFIC)
            unpause_all(deployment, CHAIN + ("congestion_by_segment", "ingest_aarhus_traffic"))
            yield deployment
        assert not (home / "store.sqlite").exists()  # no task fell back to the default store


def test_a_chain_of_three_runs_on_asset_events_on_a_spark_cluster(airflow, spark_cluster, spark):
    root = registry.load_query(registry.queries_dir() / "traffic" / "congestion_readings.rsp")
    after = DAY + timedelta(minutes=45)
    until = after + timedelta(microseconds=root.batch_us)  # one batch of the root: 07:00
    run_id = trigger(airflow, CHAIN[0], after, until)
    assert wait_for_run(airflow, CHAIN[0], run_id, 900) == "success"

    def evaluated_through_until():
        with db.engine().connect() as conn:
            marks = dict(conn.execute(select(Stream.iri, Stream.watermark)).all())
        evaluated = all(marks.get(f"urn:rsp:query:{q}/stream") and marks[f"urn:rsp:query:{q}/stream"] >= until
                        for q in CHAIN)
        return evaluated and all(state in ("success", "failed") for q in CHAIN for state in run_states(airflow, q))
    airflow.wait_for(evaluated_through_until, 900, f"the chained queries evaluated up to {until:%H:%M}")

    for dag_id in CHAIN[1:]:
        runs = airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns").raise_for_status().json()["dag_runs"]
        assert runs and {r["run_type"] for r in runs} == {"asset_triggered"}
        assert {r["state"] for r in runs} == {"success"}
        events = airflow.client.get("/api/v2/assets/events", params={"source_dag_id": dag_id}).json()
        spans = sorted((e["extra"]["after"], e["extra"]["until"]) for e in events["asset_events"])
        assert spans[0][0] == after.isoformat() and spans[-1][1] == until.isoformat()
    served = [a for a in spark_cluster.status()["activeapps"] if a["name"] == "rsp-connect"]
    assert len(served) == 1 and served[0]["cores"] > 0  # the Connect server's driver, on the cluster's executors

    with db.engine().connect() as conn:
        for dag_id in CHAIN:
            rq = registry.load_query(registry.queries_dir() / "traffic" / f"{dag_id}.rsp")
            stored = [r.payload for r in conn.execute(
                select(StoredResult.payload).where(StoredResult.query_iri == rq.iri)
                .where(StoredResult.window_close > after).order_by(StoredResult.window_close))]
            local = [w.to_json() for w in evaluate(rq.query, tasks.lake(), rq.background, rq.t0_us,
                                                   Interval(to_us(after), to_us(until)))]
            assert stored == local and stored, dag_id
            apps = set(conn.scalars(select(Activity.spark_app_id).where(Activity.query_iri == rq.iri)
                                     .where(Activity.spark_app_id.is_not(None))))
            assert apps == {served[0]["id"]}, dag_id  # every stage ran there


def test_a_run_ahead_of_its_inputs_waits_deferred_until_the_ingest_dag_moves_the_watermark(airflow, traffic):
    dag = "congestion_by_segment"  # needs the watermark at 08:00 + 5 min allowed lateness
    run_id = trigger(airflow, dag, DAY + timedelta(minutes=105), DAY + timedelta(minutes=120))
    wait = f"/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances/wait_for_inputs"
    airflow.wait_for(lambda: airflow.client.get(wait).json().get("state") == "deferred", 300,
                     "the watermark wait deferred")
    assert airflow.client.get(f"/api/v2/dags/{dag}/dagRuns/{run_id}").json()["state"] == "running"
    land(traffic(120, 135), name="late-morning.nq")  # frames up to 08:10, picked up by the ingest DAG
    trigger(airflow, "ingest_aarhus_traffic")  # or its every-minute run gets there first
    assert wait_for_run(airflow, dag, run_id, 900) == "success"
    events = airflow.client.get("/api/v2/assets/events", params={"source_dag_id": "ingest_aarhus_traffic"}).json()
    loaded = [e["extra"] for e in events["asset_events"]]
    assert [(x["files"], x["watermark"][:16]) for x in loaded] == [(1, "2014-08-02T08:10")]
