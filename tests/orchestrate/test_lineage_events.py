"""OpenLineage run events through Airflow's OpenLineage provider (docs/openlineage.md): a real
run of the ingest DAG (``dag.test``: Airflow's own task runner and the provider's listener, in
this process) writes, through the default file transport, a COMPLETE event of its load task
naming the landing file read, the stream and the lake partitions written, and the PROV activity
that holds the full record."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sqlalchemy import select

from rsp_jobs.ingest.lake import project_lake, stream_key
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import drop
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity
from tests.orchestrate.conftest import TRAFFIC
from tests.orchestrate.test_dag_factory import dag_bag
from tests.orchestrate.test_quarantine_policy import _frame

pytestmark = pytest.mark.airflow


def _task_events(run_id: str) -> list[dict]:
    """The events of the tasks of one DAG run, from the file the default transport appends to."""
    transport = json.loads(os.environ["AIRFLOW__OPENLINEAGE__TRANSPORT"])
    events = [json.loads(line) for line in Path(transport["log_file_path"]).read_text().splitlines()]
    return [e for e in events if e["run"]["facets"].get("airflow", {}).get("dagRun", {}).get("run_id") == run_id]


def test_an_ingest_run_event_names_the_file_read_and_the_stream_and_partitions_written(
        home, queries, airflow_db, tmp_path):
    source = tmp_path / "morning.nq"
    source.write_text(_frame(0, 1) + _frame(5, 2))
    config = registry.stream_config(TRAFFIC)
    drop(source, config)
    run = dag_bag().dags["ingest_aarhus_traffic"].test()
    assert run.state == "success"

    (done,) = [e for e in _task_events(run.run_id)
               if e["eventType"] == "COMPLETE" and e["job"]["name"] == "ingest_aarhus_traffic.load_landing_files"]
    (activity,) = done["run"]["facets"]["rspProvenance"]["activities"]
    with db.engine().connect() as conn:
        assert conn.execute(select(Activity.kind).where(Activity.iri == activity)).scalar_one() == "ingest"
    (read,) = done["inputs"]
    assert read["namespace"] == "file" and Path(read["name"]).name == "morning.nq"
    partition = project_lake().root / f"stream_key={stream_key(TRAFFIC)}" / "hour=2014-08-02T06"
    assert partition.is_dir()
    assert [(d["namespace"], d["name"]) for d in done["outputs"]] == [("rsp", TRAFFIC), ("file", str(partition))]
