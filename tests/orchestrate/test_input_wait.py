"""A run does not wait for inputs that cannot come (rsp_jobs/orchestrate/watermark.py, dags/README.md):
unpaused over recorded data, a DAG's scheduled run for today fails at once and says why, so that
a replay triggered by hand is not queued behind it for hours; a run whose inputs may still come
waits RSP_INPUT_WAIT past its interval at most, then fails naming what lags. The sensor runs
here as a task runs it, on a real store and landing folder."""
from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
from airflow.sdk.exceptions import AirflowFailException, TaskDeferred

from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.watermark import WatermarkTrigger
from rsp_jobs.store import db
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.frames import advance_watermark
from tests.orchestrate.test_dag_factory import dag_bag

pytestmark = pytest.mark.airflow
TRAFFIC = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"


@pytest.fixture
def sensor(home, queries):
    db.upgrade()
    return dag_bag().dags["congestion_by_segment"].get_task("wait_for_inputs")


def today() -> dict:
    """The context of a scheduled run over the last whole batch (15 min on the 5-min grid)."""
    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    until = now - timedelta(minutes=now.minute % 5)
    return {"data_interval_start": until - timedelta(minutes=15), "data_interval_end": until, "run_id": "scheduled"}


def loaded_up_to(moment: datetime) -> None:
    with write_transaction(db.engine()) as conn:
        advance_watermark(conn, TRAFFIC, moment)


def test_a_scheduled_run_over_a_stream_of_recorded_data_fails_at_once_saying_why(sensor):
    loaded_up_to(datetime(2014, 8, 2, 8, 0, tzinfo=timezone.utc))
    with pytest.raises(AirflowFailException) as failed:
        sensor.execute(today())
    message = str(failed.value)
    assert f"<{TRAFFIC}> holds data up to 2014-08-02T08:00:00Z" in message
    assert f"nothing waits in {registry.stream_config(TRAFFIC).landing_dir}" in message
    assert "more than 30m behind the interval: RSP_INPUT_WAIT" in message and "trigger a run over its interval" in message


def test_a_stream_with_no_data_yet_is_named_as_such(sensor):
    with pytest.raises(AirflowFailException, match=f"<{TRAFFIC}> holds no data yet"):
        sensor.execute(today())


def test_a_stream_that_may_still_come_is_waited_for_until_the_documented_deadline(sensor, monkeypatch):
    context = today()
    until = context["data_interval_end"]
    for why in ("a file waits in the landing folder", "the stream is less than RSP_INPUT_WAIT behind"):
        if why.startswith("a file"):
            landing = registry.stream_config(TRAFFIC).landing_dir
            landing.mkdir(parents=True, exist_ok=True)
            (landing / "next.nq").write_text("")
        else:
            (landing / "next.nq").unlink()
            loaded_up_to(until - timedelta(minutes=40))
            monkeypatch.setenv("RSP_INPUT_WAIT", "1h")
        started = datetime.now(timezone.utc)
        with pytest.raises(TaskDeferred) as deferred:
            sensor.execute(context)
        wait = timedelta(hours=1) if why.startswith("the stream") else timedelta(minutes=30)
        deadline = datetime.fromisoformat(deferred.value.trigger.deadline)
        assert max(until, started) + wait <= deadline <= max(until, datetime.now(timezone.utc)) + wait, why

    loaded_up_to(until + timedelta(minutes=5))  # the watermark passes until + the 5 min allowed lateness
    assert sensor.execute(context) is None


def test_at_the_deadline_the_run_fails_naming_what_lags(sensor):
    until = datetime(2014, 8, 2, 8, 0, tzinfo=timezone.utc)
    loaded_up_to(until - timedelta(minutes=10))
    trigger = WatermarkTrigger([TRAFFIC], until.isoformat(), deadline=datetime.now(timezone.utc).isoformat(),
                               poll_seconds=0.1)

    async def first():
        async for event in trigger.run():
            return event.payload
    event = asyncio.run(first())
    assert event["status"] == "timeout" and event["lagging"] == {TRAFFIC: "2014-08-02T07:50:00+00:00"}
    with pytest.raises(AirflowFailException, match=(r"did not arrive by .*RSP_INPUT_WAIT past the run's interval ending "
                                                   rf"2014-08-02T08:00:00Z\): <{TRAFFIC}> holds data up to "
                                                   r"2014-08-02T07:50:00Z")):
        sensor.execute_complete({}, event)


def test_the_trigger_forms_interval_wins_over_the_data_interval_and_is_checked_first(sensor):
    """dags/README.md, Replays: ``after`` and ``until`` as params (the trigger form, a REST
    trigger's ``conf``), whatever the run's data interval."""
    at = lambda h, m: datetime(2014, 8, 2, h, m, tzinfo=timezone.utc).isoformat()  # noqa: E731
    replay = {**today(), "run_id": "manual"}
    with pytest.raises(AirflowFailException, match="give both params, after and until, or neither"):
        sensor.execute({**replay, "params": {"after": at(6, 30), "until": None}})
    with pytest.raises(AirflowFailException, match="params after/until"):
        sensor.execute({**replay, "params": {"after": "half past six", "until": at(6, 45)}})
    with pytest.raises(AirflowFailException, match=r"\(2014-08-02T06:31:00Z, 2014-08-02T06:46:00Z\] is not whole batches"):
        sensor.execute({**replay, "params": {"after": at(6, 31), "until": at(6, 46)}})
    loaded_up_to(datetime(2014, 8, 2, 8, 5, tzinfo=timezone.utc))
    assert sensor.execute({**replay, "params": {"after": at(6, 0), "until": at(8, 0)}}) is None  # 2014 is loaded
    with pytest.raises(AirflowFailException, match="cannot arrive"):
        sensor.execute({**replay, "params": {"after": None, "until": None}})  # today's is not

    params = dag_bag().dags["congestion_by_segment"].params
    assert {name: params.get_param(name).schema["format"] for name in ("after", "until")} == \
        {"after": "date-time", "until": "date-time"}


def replay(after: datetime, until: datetime) -> dict:
    """The context of a run triggered by hand with the trigger form's interval."""
    return {"params": {"after": after.isoformat(), "until": until.isoformat()}, "run_id": "manual__replay"}


def test_a_replay_past_the_end_of_recorded_data_fails_at_once_naming_where_it_ends(sensor):
    """The file ends at 07:55, the replay asks for (07:45, 08:00]: waiting RSP_INPUT_WAIT would
    hold the DAG's one active run and end the same way."""
    loaded_up_to(datetime(2014, 8, 2, 7, 55, tzinfo=timezone.utc))
    context = replay(datetime(2014, 8, 2, 7, 45, tzinfo=timezone.utc), datetime(2014, 8, 2, 8, 0, tzinfo=timezone.utc))
    with pytest.raises(AirflowFailException) as failed:
        sensor.execute(context)
    message = str(failed.value)
    assert message.startswith("the replay of (2014-08-02T07:45:00Z, 2014-08-02T08:00:00Z] cannot finish: ")
    assert f"<{TRAFFIC}> holds data up to 2014-08-02T07:55:00Z, short of the interval's end plus its " \
           "allowed lateness (2014-08-02T08:05:00Z)" in message
    assert "up to where the data ends" in message
    # the same replay up to where the data ends needs nothing more
    loaded_up_to(datetime(2014, 8, 2, 8, 5, tzinfo=timezone.utc))
    assert sensor.execute(context) is None


def test_a_replay_waits_for_a_file_in_its_landing_folder_or_for_rsp_replay_wait(sensor, monkeypatch):
    loaded_up_to(datetime(2014, 8, 2, 7, 55, tzinfo=timezone.utc))
    context = replay(datetime(2014, 8, 2, 7, 45, tzinfo=timezone.utc), datetime(2014, 8, 2, 8, 0, tzinfo=timezone.utc))
    landing = registry.stream_config(TRAFFIC).landing_dir
    (landing / "rest.nq").write_text("")  # the rest of the data, about to be loaded
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context)
    assert deferred.value.trigger.why is None  # the usual wait: its deadline is RSP_INPUT_WAIT's
    (landing / "rest.nq").unlink()
    monkeypatch.setenv("RSP_REPLAY_WAIT", "2m")
    started = datetime.now(timezone.utc)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context)
    trigger = deferred.value.trigger
    deadline = datetime.fromisoformat(trigger.deadline)
    assert started + timedelta(minutes=2) <= deadline <= datetime.now(timezone.utc) + timedelta(minutes=2)
    trigger.deadline, trigger.poll_seconds = datetime.now(timezone.utc).isoformat(), 0.1

    async def first():
        async for event in trigger.run():
            return event.payload
    event = asyncio.run(first())  # nothing came: at the deadline it fails as it would have at once
    with pytest.raises(AirflowFailException, match=r"the replay of .* cannot finish: .*holds data up to 2014-08-02T07:55"):
        sensor.execute_complete({}, event)
