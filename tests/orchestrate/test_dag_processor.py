"""One bad file under ``queries/`` costs only the DAGs that depend on it, in the running DAG
processor (not a DagBag): Airflow 3 deactivates every DAG of a DAG file that has an import
error, so the factory's errors are the import error of ``rsp_query_errors.py``, a file with no
DAG of its own, and ``rsp_dags.py`` keeps loading the rest. Checked through the API and the UI
of a real deployment (API server, scheduler, DAG processor, triggerer) whose queries folder
holds a query with a syntax error, then a dangling link, then a broken ``streams.toml``."""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rsp_jobs import settings
from rsp_jobs.demo_deployment import airflow_deployment
from tests.orchestrate.test_airflow_api import PROJECT_DAGS
from tests.support.browser import browser, needs_chromium

pytestmark = pytest.mark.airflow

# the operator's file: a window without its closing bracket
BROKEN = ("REGISTER QUERY broken_query AS\nPREFIX ex: <http://ex.org/>\nSELECT ?s\n"
          "FROM STREAM <http://ex.org/s> [RANGE 1m STEP 1m\nWHERE { ?s ?p ?o }\n")
INGEST = {d for d in PROJECT_DAGS if d.startswith("ingest_")}
PARSED_WITHIN = 120  # the DAG files are parsed again every 5 s below; a cold parse takes longer


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    home = tmp_path_factory.mktemp("dag-processor")
    queries = home / "queries"
    shutil.copytree(settings.REPO_ROOT / "queries", queries)
    (queries / "citybench" / "broken_query.rsp").write_text(BROKEN)
    # no task runs here, so no Spark Connect server: the connection names a port nothing serves
    with airflow_deployment(home, {"RSP_QUERIES_DIR": str(queries),
                                   "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5",
                                   "AIRFLOW__DAG_PROCESSOR__STALE_DAG_THRESHOLD": "10",
                                   "AIRFLOW_CONN_RSP_SPARK": "spark-connect://127.0.0.1:9"}) as airflow:
        yield airflow, queries


def dags(airflow) -> dict[str, dict]:
    """Every DAG the metadata database knows, stale ones included, by id."""
    listed = airflow.client.get("/api/v2/dags", params={"limit": 100, "exclude_stale": False})
    return {d["dag_id"]: d for d in listed.raise_for_status().json()["dags"]}


def import_errors(airflow) -> dict[str, str]:
    listed = airflow.client.get("/api/v2/importErrors").raise_for_status().json()["import_errors"]
    return {Path(e["filename"]).name: e["stack_trace"] for e in listed}


def settles(airflow, active: set[str], error: str | None, what: str) -> dict[str, str]:
    """Wait until exactly ``active`` of the project's DAGs are active (the others stale) and the
    only import error is ``rsp_query_errors.py``'s, containing ``error`` (or there is none)."""
    def state():
        known, errors = dags(airflow), import_errors(airflow)
        now_active = {d for d, info in known.items() if not info["is_stale"]} & PROJECT_DAGS
        wanted_errors = (set(errors) == {"rsp_query_errors.py"} and error in errors["rsp_query_errors.py"]
                         if error else not errors)
        return errors or True if now_active == active and wanted_errors else None
    return airflow.wait_for(state, PARSED_WITHIN, what)


def triggered(airflow, dag_id: str, run_id: str) -> str:
    """Trigger a run of the (paused) DAG; its state as the API gives it back."""
    run = airflow.client.post(f"/api/v2/dags/{dag_id}/dagRuns", json={
        "dag_run_id": run_id, "logical_date": datetime.now(timezone.utc).isoformat()})
    assert run.status_code == 200, run.text
    return airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}").raise_for_status().json()["state"]


def test_a_query_with_a_syntax_error_is_reported_and_every_other_dag_stays_active_and_triggerable(deployment):
    airflow, queries = deployment
    errors = settles(airflow, PROJECT_DAGS, f"{queries}/citybench/broken_query.rsp:5:1: unexpected 'WHERE'",
                     "the other DAGs active beside the broken query's error")
    assert "expected one of: ']'" in errors["rsp_query_errors.py"]
    assert "1 registered file cannot become DAGs" in errors["rsp_query_errors.py"]
    assert "broken_query" not in dags(airflow)
    assert triggered(airflow, "congested_pairs", "beside_a_broken_query") in ("queued", "running")


def test_an_unreadable_query_file_costs_only_itself(deployment):
    airflow, queries = deployment
    (queries / "citybench" / "broken_query.rsp").unlink()
    (queries / "citybench" / "gone.rsp").symlink_to(queries / "nowhere.rsp")
    settles(airflow, PROJECT_DAGS, f"{queries}/citybench/gone.rsp: cannot be read (No such file or directory)",
            "the dangling link reported, the other DAGs active")
    assert triggered(airflow, "congestion_by_segment", "beside_an_unreadable_query") in ("queued", "running")


def test_a_broken_stream_catalog_costs_only_the_ingest_dags_and_mending_it_brings_them_back(deployment):
    airflow, queries = deployment
    (queries / "citybench" / "gone.rsp").unlink()
    catalog = queries / "streams.toml"
    good = catalog.read_text()
    catalog.write_text(good.replace('late_policy = "drop"', 'late_policy = "keep"', 1))
    settles(airflow, PROJECT_DAGS - INGEST, "late_policy must be drop or reevaluate, got 'keep'",
            "the ingest DAGs stale, the query DAGs active")
    assert triggered(airflow, "dart_mean10", "beside_a_broken_catalog") in ("queued", "running")
    catalog.write_text(good)
    settles(airflow, PROJECT_DAGS, None, "every DAG active again and no import error")


@needs_chromium
@pytest.mark.browser
def test_the_ui_lists_the_other_dags_and_names_the_broken_file(deployment, tmp_path):
    """What the operator saw: "0 Dags found" and every DAG "Deactivated". Now the DAG list
    shows the project's DAGs and the import errors name the query file and line."""
    from selenium.webdriver.common.by import By

    airflow, queries = deployment
    (queries / "citybench" / "broken_query.rsp").write_text(BROKEN)
    settles(airflow, PROJECT_DAGS, "broken_query.rsp:5:1", "the broken query reported again")
    with browser(tmp_path / "screenshots") as ui:
        ui.log_in(airflow.url, airflow.user, airflow.password)
        listed = ui.open(f"{airflow.url}/dags", showing=f"{len(PROJECT_DAGS)} Dags")
        assert PROJECT_DAGS <= set(listed.split())
        ui.screenshot("1-dag-list-beside-a-broken-query")
        # the red badge beside the count opens the import errors
        ui.driver.find_element(By.XPATH, f"//*[normalize-space(text())='{len(PROJECT_DAGS)} Dags']"
                                         "/following::button[1]").click()
        ui.wait_for_text("rsp_query_errors.py")
        ui.driver.find_element(By.XPATH, "//*[normalize-space(text())='rsp_query_errors.py']").click()
        shown = ui.wait_for_text("broken_query.rsp:5:1")
        assert "expected one of: ']'" in shown
        ui.screenshot("2-the-import-error-names-the-query-file")
        ui.driver.refresh()
        page = ui.open(f"{airflow.url}/dags/congested_pairs", showing="congested_pairs")
        assert "Deactivated" not in page
        ui.screenshot("3-a-dag-beside-a-broken-query")
