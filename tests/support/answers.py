"""A project home whose store holds what a query DAG run leaves, without Spark or Airflow: a
registered query, its input stream ingested (one malformed line quarantined), one run's windows
stored with their provenance and the run's output quality check (with its Data Docs page), as
``orchestrate/tasks.py`` does it. The windows' answers are worked out by hand from the frames.

A sensor's label is markup, so that a page that does not escape it shows."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

STREAM = "http://ex.org/sensors"
QUERY = """REGISTER QUERY avg_temp AS
SELECT ?sensor ?label (AVG(?v) AS ?avg) (COUNT(?v) AS ?n)
FROM STREAM <http://ex.org/sensors> [RANGE 1m STEP 1m]
WHERE { ?obs <urn:ex:sensor> ?sensor ; <urn:ex:value> ?v . ?sensor <urn:ex:label> ?label }
GROUP BY ?sensor ?label
"""
LABEL = "<script>alert('x')</script> & co"
DAY = datetime(2026, 1, 5, 6, 0, tzinfo=timezone.utc)
XSD = "http://www.w3.org/2001/XMLSchema#"


def _frame(second: int, lines: list[str]) -> str:
    moment = (DAY + timedelta(seconds=second)).isoformat().replace("+00:00", "Z")
    graph = f"<{STREAM}/g/{second}>"
    return (f"{graph} {{\n" + "".join(f"  {line}\n" for line in lines) + "}\n"
            f'{graph} <http://www.w3.org/ns/prov#generatedAtTime> "{moment}"^^<{XSD}dateTime> .\n')


STREAM_TEXT = (
    _frame(10, ["<urn:o1> <urn:ex:sensor> <urn:ex:s1> .", "<urn:o1> <urn:ex:value> 10 .",
                "<urn:o2> <urn:ex:sensor> <urn:ex:s2> .", "<urn:o2> <urn:ex:value> 20 .",
                '<urn:ex:s1> <urn:ex:label> "north" .', f'<urn:ex:s2> <urn:ex:label> "{LABEL}" .'])
    + _frame(40, ["<urn:o3> <urn:ex:sensor> <urn:ex:s1> .", "<urn:o3> <urn:ex:value> 14 .",
                  '<urn:ex:s1> <urn:ex:label> "north" .'])
    # quarantined whole, as a TriG block is: its frame is not stored
    + _frame(50, ["<urn:o4> <urn:ex:sensor> <urn:ex:s1> .", "<urn:o4> <urn:ex:value> this is not a term ."])
    + _frame(80, ["<urn:o5> <urn:ex:sensor> <urn:ex:s1> .", "<urn:o5> <urn:ex:value> 30 .",
                  '<urn:ex:s1> <urn:ex:label> "north" .'])
)


def _term(value: str, datatype: str | None = None) -> dict:
    if datatype is None:
        return {"type": "uri", "value": value}
    return {"type": "literal", "value": value, **({"datatype": datatype} if datatype != XSD + "string" else {})}


# the windows [06:00, 06:01) and [06:01, 06:02) over the frames above (10 s and 40 s; 80 s)
WINDOWS = [
    {"window_open": "2026-01-05T06:00:00Z", "window_close": "2026-01-05T06:01:00Z", "bindings": [
        {"sensor": _term("urn:ex:s1"), "label": _term("north", XSD + "string"),
         "avg": _term("12.0", XSD + "decimal"), "n": _term("2", XSD + "integer")},
        {"sensor": _term("urn:ex:s2"), "label": _term(LABEL, XSD + "string"),
         "avg": _term("20.0", XSD + "decimal"), "n": _term("1", XSD + "integer")}]},
    {"window_open": "2026-01-05T06:01:00Z", "window_close": "2026-01-05T06:02:00Z", "bindings": [
        {"sensor": _term("urn:ex:s1"), "label": _term("north", XSD + "string"),
         "avg": _term("30.0", XSD + "decimal"), "n": _term("1", XSD + "integer")}]},
]


@dataclass(frozen=True)
class AnsweredHome:
    home: Path
    queries: Path
    store_url: str
    output_stream: str
    activity: str  # the evaluation's
    frames: list[str]  # the result frames, in window order


def answered_home(home: Path, queries: Path) -> AnsweredHome:
    """Fill ``home`` (RSP_HOME, its SQLite store) and ``queries`` (RSP_QUERIES_DIR), which the
    caller has set in the environment, with one stored run of ``avg_temp`` over 06:00-06:02."""
    import pandas as pd

    from rsp_jobs.ingest.rdf_stream import read_stream_file
    from rsp_jobs.orchestrate import registry
    from rsp_jobs.quality import gate
    from rsp_jobs.results import WindowResult
    from rsp_jobs.store import db
    from rsp_jobs.store.provenance import store_ingest
    from rsp_jobs.store.results import store_evaluation

    (queries / "demo").mkdir(parents=True, exist_ok=True)
    (queries / "streams.toml").write_text(f'[streams.sensors]\niri = "{STREAM}"\n')
    (queries / "demo" / "avg_temp.rsp").write_text(QUERY)
    registered = registry.load_query(queries / "demo" / "avg_temp.rsp")
    url = f"sqlite:///{home / 'store.sqlite'}"
    db.upgrade(url)
    engine = db.engine(url)

    source = home / "sensors.trig"
    source.write_text(STREAM_TEXT)
    batch = read_stream_file(source, STREAM)
    assert len(batch.rejections) == 1, batch.rejections
    store_ingest(engine, batch, str(source), datetime.now(timezone.utc))

    after, until = DAY, DAY + timedelta(minutes=2)  # one run, as a DAG run of two batches
    windows = [WindowResult.from_json(w, "SELECT") for w in WINDOWS]
    started = datetime.now(timezone.utc)
    outcome = gate.check_output_batch(
        pd.DataFrame({
            "query_iri": [registered.iri] * len(windows),
            "window_open": pd.to_datetime([w.open_us for w in windows], unit="us", utc=True),
            "window_close": pd.to_datetime([w.close_us for w in windows], unit="us", utc=True),
            "row_count": [w.rows for w in windows],
        }),
        query_iri=registered.iri, first_close_us=registered.first_close_us, step_us=registered.step_us,
        interval=(after, until), engine=engine,
        batch_id=f"{registered.dag_id}/{after.isoformat()}/{until.isoformat()}")
    assert outcome.success, outcome.summary()
    stored = store_evaluation(engine, registered.query, windows, started, evaluated_until=until,
                              t0_us=registered.t0_us, entailment="simple", report=registered.report)
    return AnsweredHome(home, queries, url, registered.output_stream, stored.activity_iri,
                        [f"{registered.output_stream}/frame/{w['window_close']}" for w in WINDOWS])
