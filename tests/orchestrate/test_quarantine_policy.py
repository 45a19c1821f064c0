"""A run whose input had rejected parts says so in its state (``RSP_QUARANTINE_POLICY``): the
ingest DAG's ``quarantined_input`` task is skipped when nothing was rejected, succeeds listing
the parts under ``warn`` and fails the run under ``fail``; the accepted input is loaded either
way. Real runs of the ingest DAG (``dag.test``: Airflow's own task runner, in this process)."""
from __future__ import annotations

import logging

import pytest

from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import drop
from rsp_jobs.store import db
from rsp_jobs.store.quarantine import quarantined
from tests.orchestrate.conftest import TRAFFIC
from tests.orchestrate.test_dag_factory import dag_bag

pytestmark = pytest.mark.airflow

SENSOR = "http://www.insight-centre.org/dataset/SampleEventService#sensor1"
PROP = "http://www.insight-centre.org/dataset/SampleEventService#level"


def _frame(minute: int, value: int) -> str:
    graph = f"<urn:test:frame/{minute}>"
    return (f'<{SENSOR}> <{PROP}> "{value}"^^<http://www.w3.org/2001/XMLSchema#integer> {graph} .\n'
            f'{graph} <http://www.w3.org/ns/prov#generatedAtTime> '
            f'"2014-08-02T06:{minute:02d}:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n')


def _land(tmp_path, name: str, malformed: bool) -> None:
    text = _frame(0, 1) + ("<urn:broken> this is not N-Quads .\n" if malformed else "") + _frame(5, 2)
    source = tmp_path / name
    source.write_text(text)
    drop(source, registry.stream_config(TRAFFIC))


def _run(monkeypatch, policy: str) -> dict[str, str]:
    monkeypatch.setenv("RSP_QUARANTINE_POLICY", policy)
    monkeypatch.setenv("RSP_LANDING_QUIET", "0")
    run = dag_bag().dags["ingest_aarhus_traffic"].test()
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


@pytest.mark.parametrize("policy, run_state", [("warn", "success"), ("fail", "failed")])
def test_a_malformed_line_marks_the_run_by_the_policy_and_the_rest_is_loaded(
        home, queries, airflow_db, tmp_path, monkeypatch, caplog, capfd, policy, run_state):
    _land(tmp_path, "morning.nq", malformed=True)
    with caplog.at_level(logging.WARNING):
        states = _run(monkeypatch, policy)
    assert states == {"wait_for_files": "success", "load_landing_files": "success",
                      "quarantined_input": run_state}
    parts, total = quarantined(db.engine(), TRAFFIC)
    assert total == 1 and parts[0].where.endswith("morning.nq:3") and parts[0].triples == 1
    assert parts[0].run is not None and parts[0].run.startswith("manual__")  # the run that rejected it
    task_log = caplog.text + "".join(capfd.readouterr())  # a warning logged, or the failure's reason
    assert "morning.nq:3: malformed N-Quads line" in task_log and "rsp quarantine --stream" in task_log
    assert (registry.stream_config(TRAFFIC).landing_dir / "loaded" / "morning.nq").exists()


def test_a_clean_file_skips_the_quarantine_task(home, queries, airflow_db, tmp_path, monkeypatch):
    _land(tmp_path, "clean.nq", malformed=False)
    assert _run(monkeypatch, "fail") == {"wait_for_files": "success", "load_landing_files": "success",
                                         "quarantined_input": "skipped"}


def test_an_unknown_policy_is_refused_naming_the_setting(monkeypatch):
    from rsp_jobs import settings
    from rsp_jobs.errors import InputError

    monkeypatch.setenv("RSP_QUARANTINE_POLICY", "ignore")
    with pytest.raises(InputError, match="RSP_QUARANTINE_POLICY: warn or fail, got 'ignore'"):
        settings.quarantine_policy()
