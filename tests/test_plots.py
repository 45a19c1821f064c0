"""What ``rsp plot dart`` shows is read back from a real store: the station's samples as
ingested, the prediction query's results for that station's sensor only, and that station's
tsunami alerts, within the range asked for; the PNG is written. The store is filled the way the
DAGs fill it: a raw DART file through ingest, prediction windows through ``store_evaluation``,
alerts through ``store_alerts``."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from rsp_jobs import plots
from rsp_jobs.alerts.build import Alert, alert_iri
from rsp_jobs.alerts.store import store_alerts
from rsp_jobs.store.models import Alert as AlertRow
from rsp_jobs.demo import TOHOKU, generated_dart
from rsp_jobs.ingest import dart
from rsp_jobs.ingest.sources import to_stream_file
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import ingest_file
from rsp_jobs.store import db
from rsp_jobs.store.results import store_evaluation
from rsp_jobs.results import WindowResult
from rsp_jobs.times import to_us

XSD = "http://www.w3.org/2001/XMLSchema#"
PREDICTION = "urn:rsp:query:dart_prediction"
DETECTION = "urn:rsp:query:tsunami_detection"


def _prediction(station: str, moment: datetime, prediction: float, residual: float) -> list[str]:
    """A prediction as dart_prediction constructs it: a resource with var:NAME triples."""
    node = f"_:p{station}{int(moment.timestamp())}"
    values = {"sensor": f"<{dart.sensor_iri(station)}>", "time": f'"{moment.isoformat()}"^^<{XSD}dateTime>',
              "prediction": f'"{prediction!r}"^^<{XSD}double>', "residual": f'"{residual!r}"^^<{XSD}double>'}
    return [f"{node} <urn:rsp:ns:var/{name}> {value} ." for name, value in values.items()]


def _alert(station: str, moment: datetime) -> Alert:
    subject = str(dart.sensor_iri(station))
    return Alert(alert_iri(DETECTION, subject, moment), "tsunami", DETECTION, subject, moment, moment,
                 f"Tsunami detected by DART {station}", {"sensor": subject})


@pytest.mark.gx  # the raw DART file is ingested through the input gate
def test_a_dart_plot_shows_its_own_station_within_the_range(tmp_path, monkeypatch, data_dir):
    home = tmp_path / "home"
    monkeypatch.setenv("RSP_HOME", str(home))
    monkeypatch.setenv("RSP_STORE_URL", f"sqlite:///{home / 'store.sqlite'}")
    db.upgrade()
    engine = db.engine()
    stream = dart.stream_iri("21418")
    raw = generated_dart(home / "landing", "21418", TOHOKU + timedelta(minutes=6))
    mapped, rejections = to_stream_file(raw, "dart", stream)
    assert any("9999.000" in r.text for r in rejections)  # its missing value, rejected with its line
    ingest_file(mapped, registry.stream_config(stream))

    start, end = TOHOKU - timedelta(hours=1), TOHOKU + timedelta(hours=1)
    close = TOHOKU + timedelta(minutes=30)
    ours = [(close - timedelta(minutes=m), 5662.1 + m / 1000, 0.001 * m) for m in (1, 2, 3)]
    earlier = (start - timedelta(minutes=1), 5662.0, 0.0)  # before the range: not shown
    triples = [t for p in ours + [earlier] for t in _prediction("21418", *p)]
    triples += _prediction("21401", close - timedelta(minutes=1), 5263.2, 0.5)  # another station
    windows = [WindowResult(to_us(close - timedelta(hours=3)), to_us(close), "CONSTRUCT", triples=tuple(sorted(triples)))]
    query = registry.load_query(registry.queries_dir() / "tsunami" / "dart_prediction.rsp").query
    store_evaluation(engine, query, windows, datetime.now(timezone.utc))
    detected = TOHOKU + timedelta(minutes=3)
    store_alerts(engine, DETECTION, [_alert("21418", detected), _alert("21401", detected),
                                     _alert("21418", start - timedelta(hours=1))], datetime.now(timezone.utc))

    view = plots.dart_view(engine, "21418", start, end)
    assert view.samples and all(start <= t < end for t, _ in view.samples)
    assert len(view.samples) == len({t for t, _ in view.samples})  # one sample per instant
    assert [(t, round(p, 6), round(r, 6)) for t, p, r in view.predictions] == \
        sorted((t, round(p, 6), round(r, 6)) for t, p, r in ours)
    assert [a["event_time"] for a in view.detections] == [detected.isoformat().replace("+00:00", "Z")]

    out = plots.plot_dart(engine, "21418", tmp_path / "dart.png", start, end)
    assert out.read_bytes().startswith(b"\x89PNG")

    # no range given: from 2 h before the station's first detection to 4 h after its last
    first = start - timedelta(hours=1)
    shown = plots.dart_view(engine, "21418")
    assert (shown.start, shown.end) == (first - timedelta(hours=2), detected + timedelta(hours=4))
    assert len(shown.detections) == 2 and shown.samples[0][0] >= shown.start
    # a station without detections: its last day of samples
    with engine.begin() as conn:
        conn.execute(AlertRow.__table__.delete())
    last = max(t for t, _ in plots.dart_view(engine, "21418", start=TOHOKU - timedelta(days=30)).samples)
    quiet = plots.dart_view(engine, "21418")
    assert (quiet.start, quiet.end) == (last - timedelta(days=1), last + timedelta(microseconds=1))
    assert quiet.samples[-1][0] == last
