"""The replay's catch-up for an asset event Airflow dropped (apache/airflow#56050): a consumer
DAG whose output lags its producers, with nothing running, gets one run for exactly the missing
interval, after three quiet looks, and none while anything runs. The store is real (watermarks);
the Airflow REST API is a recording stand-in, since what is under test is the decision."""
from __future__ import annotations

from datetime import datetime, timezone

from rsp_jobs import settings
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.replay import _CatchUp
from rsp_jobs.store import db
from rsp_jobs.store.db import write_transaction
from rsp_jobs.store.frames import advance_watermark

UTC = timezone.utc
AFTER, UNTIL = datetime(2011, 3, 11, 2, tzinfo=UTC), datetime(2011, 3, 11, 7, tzinfo=UTC)


class RecordingApi:
    """``airflow.client`` as replay uses it: run states per DAG, and the runs it is asked for."""

    def __init__(self):
        self.states: dict[str, list[str]] = {}
        self.triggered: list[tuple[str, dict]] = []
        self.client = self

    def get(self, path, params=None):
        dag_id = path.split("/")[4]
        return _Response({"dag_runs": [{"state": s} for s in self.states.get(dag_id, ["success"])]})

    def post(self, path, json):
        self.triggered.append((path.split("/")[4], json))
        return _Response({"dag_run_id": f"manual-{len(self.triggered)}"})


class _Response:
    def __init__(self, body):
        self.body = body

    def raise_for_status(self):
        return self

    def json(self):
        return self.body


def mark(stream: str, hour: int) -> None:
    with write_transaction(db.engine()) as conn:
        advance_watermark(conn, stream, datetime(2011, 3, 11, hour, tzinfo=UTC), kind="derived")


def test_a_consumer_left_behind_gets_one_run_for_the_missing_interval(home):
    db.upgrade()
    root = settings.REPO_ROOT / "queries"
    queries = [registry.load_query(root / "tsunami" / f"{name}.rsp", root) for name in ("dart_mean10", "dart_prediction")]
    mean, prediction = queries
    mark(mean.output_stream, 7)
    mark(prediction.output_stream, 6)  # the event for (06:00, 07:00] was lost
    api = RecordingApi()
    catch_up = _CatchUp(api, queries, AFTER, UNTIL)

    api.states["dart_mean10"] = ["success", "running"]  # a producer still running: wait
    for _ in range(5):
        assert catch_up() is None
    assert api.triggered == []

    api.states["dart_mean10"] = ["success"]
    catch_up(), catch_up()
    assert api.triggered == []  # two quiet looks are not enough
    catch_up()
    ((dag_id, body),) = api.triggered
    assert dag_id == "dart_prediction"
    assert (body["data_interval_start"], body["data_interval_end"]) == ("2011-03-11T06:00:00+00:00",
                                                                        "2011-03-11T07:00:00+00:00")

    mark(prediction.output_stream, 7)  # the run caught up: nothing more
    for _ in range(5):
        catch_up()
    assert len(api.triggered) == 1
