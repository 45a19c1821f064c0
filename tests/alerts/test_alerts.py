"""Alerts end to end without Airflow: a registered pattern's stored matches raise one alert per
solution, stored as frames of its alert stream with provenance naming the result frames, listed
by ``rsp alerts --since``, and delivered once through each configured notifier (JSON file,
webhook, an Airflow notifier) however often the interval is re-run. The gazetteer step warns
exactly the places within the radius, by great-circle distance."""
from __future__ import annotations

import json
import math
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from sqlalchemy import select

from rsp_jobs.times import datetime_lexical
from rsp_jobs.alerts import notify
from rsp_jobs.alerts.enrich import gazetteer, places_within
from rsp_jobs.cli import main
from rsp_jobs.errors import InputError
from rsp_jobs.orchestrate import lineage_events, registry, tasks
from rsp_jobs.orchestrate.alerting import alert_run
from rsp_jobs.orchestrate.ingest import ingest_file
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, ActivityUsed, Alert, Frame, Stream, StoredResult
from tests.orchestrate.test_pattern_runs import RISE, START, STREAM, stream_file

RECEIVED: list[dict] = []


class Recorder:
    """Stands for an Airflow BaseNotifier subclass (what ``airflow:module.Class`` loads)."""

    def __init__(self, channel: str = "ops"):
        self.channel = channel

    def notify(self, context):
        RECEIVED.append({"channel": self.channel, **context["rsp_alert"]})


@pytest.fixture
def alerting(tmp_path, monkeypatch):
    root = tmp_path / "queries"
    (root / "alarms").mkdir(parents=True)
    (root / "alarms" / "rise.rsp").write_text(RISE)
    (root / "alarms" / "rise.toml").write_text('batch = "2m"\n[alert]\nkind = "plain"\nsubject = "area"\n')
    (root / "streams.toml").write_text(f'[streams.alarms]\niri = "{STREAM}"\n')
    home = tmp_path / "home"
    home.mkdir()
    for name, value in {"RSP_QUERIES_DIR": root, "RSP_HOME": home,
                        "RSP_STORE_URL": f"sqlite:///{home / 'store.sqlite'}"}.items():
        monkeypatch.setenv(name, str(value))
    db.upgrade()
    config = registry.stream_config(STREAM)
    ingest_file(stream_file(tmp_path / "alarms.nq"), config)
    return root / "alarms" / "rise.rsp", home


def test_matches_become_stored_alerts_with_provenance_notified_once(alerting, monkeypatch, spark):
    path, home = alerting
    RECEIVED.clear()
    server, posts = _webhook()
    monkeypatch.setenv("RSP_NOTIFIERS", f"json,webhook:http://127.0.0.1:{server.server_port}/hook,"
                                        f"airflow:{__name__}.Recorder")
    monkeypatch.setenv("RSP_AIRFLOW_NOTIFIER_KWARGS", '{"channel": "tsunami-desk"}')
    after, until = START, START + timedelta(minutes=10)
    tasks.evaluate_run(str(path), after, until)
    with db.engine().connect() as conn:
        results = conn.execute(select(StoredResult.window_close, StoredResult.payload)
                               .where(StoredResult.row_count > 0)).all()
    expected = {(b["area"]["value"], r.window_close) for r in results for b in r.payload["bindings"]}
    assert expected, "the pattern matched nothing: the test would prove nothing"

    first = alert_run(str(path), after, until)
    assert first.alerts == len(expected) == first.notified
    with db.engine().connect() as conn:
        rows = conn.execute(select(Alert.subject, Alert.event_time, Alert.frame_id, Alert.activity_iri)).all()
        assert {(r.subject, r.event_time) for r in rows} == expected
        frames = conn.execute(select(Frame.frame_iri).join(Stream, Stream.id == Frame.stream_id)
                              .where(Stream.iri == "urn:rsp:query:rise/alerts")).scalars().all()
        assert len(frames) == len({close for _, close in expected})
        activity = conn.execute(select(Activity.id).where(Activity.iri == first.activity)).scalar_one()
        used = set(conn.execute(select(ActivityUsed.entity_iri).where(ActivityUsed.activity_id == activity)).scalars())
    assert used == {f"urn:rsp:query:rise/stream/frame/{datetime_lexical(close)}"
                    for _, close in expected}
    # its OpenLineage datasets (docs/openlineage.md): the result stream in, the alert stream out
    with db.engine().connect() as conn:
        inputs, outputs = lineage_events.datasets(conn, [first.activity], home / "lake")
    assert [(d.namespace, d.name) for d in inputs] == [("rsp", "urn:rsp:query:rise/stream")]
    assert [(d.namespace, d.name) for d in outputs] == [("rsp", "urn:rsp:query:rise/alerts")]

    again = alert_run(str(path), after, until)  # a re-run re-derives the same alerts, notifies none
    assert (again.alerts, again.notified) == (first.alerts, 0)
    lines = (home / "alerts" / "alerts.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["subject"] for line in lines) == sorted(s for s, _ in expected)
    assert sorted(p["subject"] for p in posts) == sorted(s for s, _ in expected)
    assert {r["channel"] for r in RECEIVED} == {"tsunami-desk"} and len(RECEIVED) == len(expected)
    server.shutdown()


def test_rsp_alerts_lists_since_a_time(alerting, capsys, monkeypatch, spark):
    path, _ = alerting
    monkeypatch.setenv("RSP_NOTIFIERS", "log")
    tasks.evaluate_run(str(path), START, START + timedelta(minutes=10))
    alert_run(str(path), START, START + timedelta(minutes=10))
    assert main(["alerts", "--json"]) == 0
    everything = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert everything and all(a["frame"].startswith("urn:rsp:query:rise/alerts/frame/") for a in everything)
    middle = sorted(a["event_time"] for a in everything)[len(everything) // 2]
    assert main(["alerts", "--json", "--since", middle]) == 0
    later = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert later == [a for a in everything if a["event_time"] >= middle] and len(later) < len(everything) + 1


def test_an_alert_table_naming_a_missing_variable_is_an_error(alerting, spark):
    path, _ = alerting
    path.with_suffix(".toml").write_text('[alert]\nkind = "plain"\nsubject = "sensor"\n')
    tasks.evaluate_run(str(path), START, START + timedelta(minutes=10))
    with pytest.raises(InputError, match="subject 'sensor' is not in its results"):
        alert_run(str(path), START, START + timedelta(minutes=10))


def test_bad_notifier_settings_are_clear_errors():
    with pytest.raises(InputError, match="unknown notifier 'pager'"):
        notify.configured("log,pager")
    with pytest.raises(InputError, match="cannot import it"):
        notify.configured("airflow:no.such.Notifier")


def test_places_within_the_radius_by_great_circle_distance():
    station = (38.711, 148.694)  # DART 21418
    def cosines_km(lat, lon):  # the spherical law of cosines: an independent formula
        a, b = math.radians(station[0]), math.radians(lat)
        c = math.sin(a) * math.sin(b) + math.cos(a) * math.cos(b) * math.cos(math.radians(lon - station[1]))
        return 6371.0088 * math.acos(max(-1.0, min(1.0, c)))
    for radius in (300, 1000, 2500):
        warned = places_within(*station, radius)
        expected = {p["iri"] for p in gazetteer() if cosines_km(p["lat"], p["lon"]) <= radius}
        assert {p["iri"] for p in warned} == expected
        assert [p["distance_km"] for p in warned] == sorted(p["distance_km"] for p in warned)
        for p in warned:
            assert abs(p["distance_km"] - cosines_km(p["lat"], p["lon"])) < 0.1
    assert places_within(*station, 1000) and len(places_within(*station, 2500)) > len(places_within(*station, 1000))


def _webhook():
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, posts


def test_a_congestion_alert_carries_a_route_around_every_segment_in_alert(data_dir):
    """158505's shortest way round uses 158415 (tests/reasoning/test_routes.py checks it against
    a plain Dijkstra over the CSV); when 158415 is in alert too, the route avoids it."""
    from rsp_jobs.alerts.build import AlertConfig, raise_alerts
    from rsp_jobs.alerts.enrich import Context, _roads, enrich_alerts
    from rsp_jobs.results import WindowResult

    ses = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"
    def match(segment: str, node: str) -> list[str]:
        return [f"{node} <urn:rsp:ns:traffic/segment> <{ses}{segment}> .",
                f'{node} <urn:rsp:ns:traffic/time3> "2014-08-02T09:30:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .']
    result = WindowResult.from_json({"window_open": "2014-08-02T09:20:00Z", "window_close": "2014-08-02T09:30:00Z",
                                     "triples": match("158505", "_:a") + match("158415", "_:b")}, "CONSTRUCT")
    config = AlertConfig("congestion", subject="segment", time="time3")
    raised = enrich_alerts(raise_alerts("urn:rsp:query:rising", config, [result], {}), config, Context())
    alerts = {a.subject.rsplit("Data", 1)[-1]: a for a in raised}
    assert set(alerts) == {"158505", "158415"}
    network = _roads()
    alone = network.alternative_route(f"{ses}158505")
    assert f"{ses}158415" in [str(s) for s in alone.sensors]  # the free way round uses the other one
    route = alerts["158505"].enrichment["route"]
    expected = network.alternative_route(f"{ses}158505", avoid=[f"{ses}158415"])
    assert route is not None and route == expected.as_dict()
    assert f"{ses}158415" not in [s["sensor"] for s in route["segments"]]
    assert route["length_m"] == pytest.approx(sum(s["length_m"] for s in route["segments"]))
    assert alerts["158505"].enrichment["avoided"] == [f"{ses}158415"]
    assert "alternative route" in alerts["158505"].message
