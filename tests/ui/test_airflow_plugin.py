"""The answers pages as the Airflow plugin serves them (``plugins/rsp_answers.py``): a real
deployment (API server, scheduler, DAG processor, triggerer, as ``make airflow`` runs them, but
with no DAG to parse and no Spark: the store already holds a run) loads the plugin from the
project's plugins folder; its pages refuse a caller without Airflow's login; and in headless
Chromium with no network, an operator who logged in reaches them through the UI's nav entry,
sees the query's windows with their answers, opens the run's Data Docs page over HTTP, a
result's lineage and the quarantined part of its input. Screenshots of each step are left under the test's folder."""
from __future__ import annotations

import json
import sys

import httpx
import pytest

from rsp_jobs.demo_deployment import airflow_deployment
from tests.support.answers import LABEL, answered_home
from tests.support.browser import browser, needs_chromium

pytestmark = pytest.mark.gx  # the stored run's output check


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    home = tmp_path_factory.mktemp("plugin-deployment")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RSP_HOME", str(home))
        patch.delenv("RSP_STORE_URL", raising=False)
        patch.setenv("RSP_QUERIES_DIR", str(home / "queries"))
        yield answered_home(home, home / "queries")


@pytest.fixture(scope="module")
def airflow(answered, tmp_path_factory, request):
    """A deployment on the answered home: no DAG files (nothing to parse), no Spark Connect
    server (no task runs), and the store found as a task finds it (no RSP_STORE_URL)."""
    dags = tmp_path_factory.mktemp("no-dags")
    overrides = {
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW_CONN_RSP_SPARK": json.dumps({"conn_type": "spark", "host": "local[1]"}),
        "RSP_QUERIES_DIR": str(answered.queries),
        "RSP_STORE_URL": "",
    }
    with airflow_deployment(answered.home, overrides) as deployment:
        failed = request.session.testsfailed
        yield deployment
        if request.session.testsfailed > failed:
            with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
                print(f"\n{deployment.log_tails()}", file=sys.stderr)


def test_the_plugin_is_loaded_and_its_pages_need_airflow_login(airflow):
    plugins = airflow.client.get("/api/v2/plugins").raise_for_status().json()["plugins"]
    (ours,) = [p for p in plugins if p["name"] == "rsp_answers"]
    assert [a["url_prefix"] for a in ours["fastapi_apps"]] == ["/rsp"]
    assert [(v["href"], v["url_route"]) for v in ours["external_views"]] == [("/rsp/", "rsp-answers")]

    for path in ("/rsp/", "/rsp/query/avg_temp", "/rsp/docs/index.html", "/rsp/quarantine/1",
                 "/rsp/lineage?frame=urn:rsp:query:avg_temp/stream/frame/2026-01-05T06:01:00Z"):
        assert httpx.get(f"{airflow.url}{path}").status_code == 401, path
        forged = httpx.get(f"{airflow.url}{path}", headers={"Authorization": "Bearer not-a-token"})
        assert forged.status_code == 403, path
        assert httpx.get(f"{airflow.url}{path}", cookies={"_token": "not-a-token"}).status_code == 403, path
    page = airflow.client.get("/rsp/")
    assert page.status_code == 200 and "avg_temp" in page.text and "30.0" in page.text


@needs_chromium
@pytest.mark.browser
def test_an_operator_finds_answers_quality_and_lineage_through_the_nav_entry(airflow, answered, tmp_path):
    from selenium.webdriver.common.by import By

    shots = tmp_path / "screenshots"
    with browser(shots) as ui:
        ui.log_in(airflow.url, airflow.user, airflow.password)
        ui.wait_for_text("Answers")  # the nav entry, once the UI has read the plugins
        ui.screenshot("0-home-with-the-nav-entry")
        text = ui.open_plugin_view("Answers", showing="window [2026-01-05T06:01:00Z, 2026-01-05T06:02:00Z)")
        assert ui.driver.current_url.startswith(f"{airflow.url}/plugin/rsp-answers")
        ui.screenshot("1-answers-in-the-airflow-ui")
        for shown in ("avg_temp", "urn:ex:s1", "north", "12.0", "30.0", LABEL, "passed",
                      "Quarantined input of its streams", "sensors.trig:"):
            assert shown in text, shown

        # the page itself, as the frame shows it, for the links
        ui.open(f"{airflow.url}/rsp/", showing="Data Docs")
        ui.screenshot("2-answers-page")
        ui.driver.find_elements(By.LINK_TEXT, "Data Docs")[0].click()
        docs = ui.wait_for_text("rsp_output_batch")
        assert ui.driver.current_url.startswith(f"{airflow.url}/rsp/docs/validations/rsp_output_batch/")
        assert "Succeeded" in docs or "success" in docs.lower()
        assert ui.driver.find_elements(By.CSS_SELECTOR, "link[href*='static/vendor/bootstrap']")
        ui.screenshot("3-data-docs-over-http")

        ui.driver.back()
        ui.wait_for_text("lineage")
        ui.driver.find_elements(By.LINK_TEXT, "lineage")[-1].click()
        lineage = ui.wait_for_text("activities (")
        assert "window_evaluation" in lineage and "ingest" in lineage and answered.frames[0] in lineage
        assert "Derived from 2 frame(s)" in lineage
        ui.screenshot("4-lineage")

        ui.driver.back()
        ui.wait_for_text("Quarantined input of its streams")
        ui.driver.find_element(By.PARTIAL_LINK_TEXT, "#").click()
        part = ui.wait_for_text("Its text as it was read")
        assert "this is not a term" in part and "malformed TriG" in part
        ui.screenshot("5-quarantined-part")
    print(f"screenshots: {shots}")
