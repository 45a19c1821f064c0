"""The README's "Add your own stream", walked as someone new to the project walks it, from a
clean home: a settings file naming the home and a queries folder that holds the stream and the
query exactly as the README declares them (read from the README itself), ``make airflow``'s
deployment on it, the CSV handed to the landing folder with ``rsp ingest --to landing``, the
two DAGs in the UI's list, the ingest run that says it quarantined two lines, the replay the
README triggers and the one it says fails at once, and in headless Chromium the Answers page
with the README's answers, the quarantined line with its reason, and a result's lineage; the
OpenLineage events of both runs in the file transport. Screenshots of each step are left under
the test's folder."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rsp_jobs.demo_deployment import Deployment, airflow_deployment
from tests.support.browser import browser, needs_chromium

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.gx, pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CSV = REPO / "tests" / "fixtures" / "ingest" / "rooms.csv"
STREAM = "http://example.org/streams/rooms"
OUTPUT = "urn:rsp:query:room_temperature/stream"


def readme_block(language: str, after: str) -> str:
    """The first fenced block in ``language`` after ``after`` in the README's section."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Add your own stream"):]
    section = section[:section.index("\n## ", 5)]
    return re.search(rf"```{language}\n(.*?)```", section[section.index(after):], re.S).group(1)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A user's project folder: ``rsp.toml`` and the queries folder of the README's steps 1 and 3."""
    root = tmp_path_factory.mktemp("own-stream")
    (root / "queries" / "rooms").mkdir(parents=True)
    (root / "queries" / "streams.toml").write_text(readme_block("toml", "**1. Declare the stream**"))
    (root / "queries" / "rooms" / "room_temperature.rsp").write_text(readme_block("sparql", "**3. Write a query**"))
    (root / "rsp.toml").write_text('home = "home"\nqueries_dir = "queries"\n')
    return root


def user_environment(project: Path) -> dict[str, str]:
    """A shell that has set nothing of the project's but where its settings file is."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RSP_", "AIRFLOW"))}
    return {**env, "RSP_SETTINGS": str(project / "rsp.toml")}


def rsp(project: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(Path(sys.executable).parent / "rsp"), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=user_environment(project))
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def airflow(project, request):
    """``make airflow`` on the project's settings: the settings file is all it is told."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("RSP_") and n != "RSP_DATA_DIR"]:
            patch.delenv(name)
        patch.setenv("RSP_SETTINGS", str(project / "rsp.toml"))
        with airflow_deployment(project / "home") as deployment:
            failed = request.session.testsfailed
            yield deployment
            if request.session.testsfailed > failed:
                with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
                    print(f"\n{deployment.log_tails()}", file=sys.stderr)


def finished_run(airflow: Deployment, dag_id: str, run_id: str | None = None, timeout: float = 600) -> dict:
    """The DAG's run ``run_id`` (else its first run with a task that did something) once it ended."""
    def ended():
        runs = airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns").raise_for_status().json()["dag_runs"]
        for run in runs:
            if run_id in (None, run["dag_run_id"]) and run["state"] in ("success", "failed"):
                return run
        return None
    return airflow.wait_for(ended, timeout, f"a run {run_id or ''} of {dag_id} ended")


def task_states(airflow: Deployment, dag_id: str, run_id: str) -> dict[str, str]:
    instances = airflow.client.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances").raise_for_status()
    return {ti["task_id"]: ti["state"] for ti in instances.json()["task_instances"]}


def task_log(airflow: Deployment, dag_id: str, run_id: str, task_id: str) -> str:
    (path,) = airflow.logs.glob(f"dag_id={dag_id}/run_id={run_id}/task_id={task_id}/attempt=*.log")
    return path.read_text()


def replay(airflow: Deployment, run_id: str, after: str, until: str) -> dict:
    """A run of ``room_temperature`` triggered as the form's **Replay from** and **Replay until** do."""
    airflow.client.post("/api/v2/dags/room_temperature/dagRuns", json={
        "dag_run_id": run_id, "logical_date": datetime.now(timezone.utc).isoformat(), "conf": {"after": after, "until": until},
    }).raise_for_status()
    return finished_run(airflow, "room_temperature", run_id)


@needs_chromium
def test_from_a_csv_file_to_its_answers_lineage_and_quarantined_lines_in_the_ui(project, airflow, tmp_path):
    from selenium.webdriver.common.by import By

    home = project / "home"
    shown = rsp(project, "settings").stdout
    assert str(project / "rsp.toml") in shown and str(project / "queries") in shown

    # step 4: the deployment lists the stream's ingest DAG and the query's DAG, and nothing fails to import
    def listed():
        ids = {d["dag_id"] for d in airflow.client.get("/api/v2/dags").raise_for_status().json()["dags"]}
        return ids if {"ingest_rooms", "room_temperature"} <= ids else None
    assert airflow.wait_for(listed, 180, "the DAGs of the project listed") == {"ingest_rooms", "room_temperature"}
    assert airflow.client.get("/api/v2/importErrors").raise_for_status().json()["total_entries"] == 0
    assert (home / "landing" / "rooms").is_dir()  # declared, so its landing folder is there

    handed = rsp(project, "ingest", "--stream", "rooms", "--to", "landing", str(CSV))
    assert (home / "landing" / "rooms" / "rooms.csv").read_bytes() == CSV.read_bytes(), handed.stdout
    for dag_id in ("ingest_rooms", "room_temperature"):  # as the DAG list's toggles do
        airflow.client.patch(f"/api/v2/dags/{dag_id}", json={"is_paused": False}).raise_for_status()

    ingest = finished_run(airflow, "ingest_rooms")
    assert ingest["state"] == "success"  # RSP_QUARANTINE_POLICY warn: the run says so, in a task
    assert task_states(airflow, "ingest_rooms", ingest["dag_run_id"]) == {
        "wait_for_files": "success", "load_landing_files": "success", "quarantined_input": "success"}
    said = task_log(airflow, "ingest_rooms", ingest["dag_run_id"], "quarantined_input")
    assert "rooms.csv:5" in said and "rooms.csv:8" in said

    run = replay(airflow, "readme_replay", "2024-03-01T10:00:00Z", "2024-03-01T10:01:00Z")
    assert run["state"] == "success", task_log(airflow, "room_temperature", "readme_replay", "wait_for_inputs")
    (event,) = airflow.client.get("/api/v2/assets/events", params={
        "source_dag_id": "room_temperature", "source_run_id": "readme_replay"}).raise_for_status().json()["asset_events"]
    assert event["extra"]["windows"] == 2  # the closes 10:00:30 and 10:01:00

    past_the_data = replay(airflow, "past_the_data", "2024-03-01T10:00:00Z", "2024-03-01T10:02:00Z")
    assert past_the_data["state"] == "failed"
    why = task_log(airflow, "room_temperature", "past_the_data", "wait_for_inputs")
    assert "cannot finish" in why and f"<{STREAM}> holds data up to 2024-03-01T10:01" in why

    # step 5, where an operator looks: the Answers entry of the Airflow UI
    with browser(tmp_path / "screenshots") as ui:
        ui.log_in(airflow.url, airflow.user, airflow.password)
        listed_page = ui.open(f"{airflow.url}/dags", showing="room_temperature")
        assert "ingest_rooms" in listed_page
        ui.screenshot("1-the-two-dags")
        page = ui.open_plugin_view("Answers", showing="window [2024-03-01T10:00:00Z, 2024-03-01T10:01:00Z)")
        ui.screenshot("2-answers")
        # the README's answers of the window closing at 10:01, its quality check, the rejected lines
        for expected in ("room_temperature", "kitchen", "21.75", "bedroom", "19.0", "passed",
                         "Quarantined input of its streams", "rooms.csv:5", "rooms.csv:8"):
            assert expected in page, expected

        ui.open(f"{airflow.url}/rsp/query/room_temperature", showing="rooms.csv:5")
        ui.driver.find_element(By.XPATH, "//tr[td[contains(., 'rooms.csv:5')]]//a").click()  # its id
        part = ui.wait_for_text("Its text as it was read")
        assert "warm" in part and "temperature" in part
        ui.screenshot("3-the-quarantined-line")
        ui.driver.back()
        ui.wait_for_text("lineage")
        ui.driver.find_elements(By.LINK_TEXT, "lineage")[0].click()
        lineage = ui.wait_for_text("activities (")
        assert "window_evaluation" in lineage and "ingest" in lineage and "rooms.csv" in lineage
        ui.screenshot("4-lineage")

    # the same runs in OpenLineage's words, in the default file transport
    events = [json.loads(line) for line in (home / "openlineage" / "events.jsonl").read_text().splitlines()]
    done = {e["job"]["name"]: e for e in events if e["eventType"] == "COMPLETE"}
    evaluated = done["room_temperature.evaluate"]
    assert ("rsp", STREAM) in {(d["namespace"], d["name"]) for d in evaluated["inputs"]}
    assert [(d["namespace"], d["name"]) for d in evaluated["outputs"]] == [("rsp", OUTPUT)]
    assert evaluated["job"]["facets"]["sourceCode"] == {  # what the job computes, in its own words
        **evaluated["job"]["facets"]["sourceCode"], "language": "sparql",
        "sourceCode": (project / "queries" / "rooms" / "room_temperature.rsp").read_text()}
    loaded = done["ingest_rooms.load_landing_files"]
    assert ("rsp", STREAM) in {(d["namespace"], d["name"]) for d in loaded["outputs"]}
