"""The `rsp` command as a user runs it: output format, progress-free pipes, clear errors."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark  # rsp evaluate runs Spark in a subprocess

RSP = str(Path(sys.executable).with_name("rsp"))
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"


def rsp(*args, cwd=None):
    return subprocess.run([RSP, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_evaluate_writes_one_json_object_per_window_in_the_documented_format(tmp_path):
    stream = tmp_path / "s.nq"
    stream.write_text(f"""<http://ex/f1> {AT} "2024-01-01T00:00:00.250Z"^^{DT} .
<http://ex/a> <http://ex/temp> "21.5"^^<http://www.w3.org/2001/XMLSchema#double> <http://ex/f1> .
<http://ex/a> <http://ex/label> "Küche"@de <http://ex/f1> .
<http://ex/f2> {AT} "2024-01-01T00:00:12Z"^^{DT} .
<http://ex/a> <http://ex/temp> "23"^^<http://www.w3.org/2001/XMLSchema#integer> <http://ex/f2> .
malformed
""")
    query = tmp_path / "q.rsp"
    query.write_text("""REGISTER QUERY temps AS PREFIX ex: <http://ex/>
SELECT ?s ?t ?l FROM STREAM <http://ex/stream> [RANGE 10s STEP 10s]
WHERE { ?s ex:temp ?t OPTIONAL { ?s ex:label ?l } }""")
    result = rsp("evaluate", str(query), "--stream", f"http://ex/stream={stream}", "--from", "2024-01-01T00:00:00Z")
    assert result.returncode == 0, result.stderr
    windows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [w["window_close"] for w in windows] == ["2024-01-01T00:00:10Z", "2024-01-01T00:00:20Z"]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z", w["window_open"]) for w in windows)
    assert windows[0]["bindings"] == [{
        "s": {"type": "uri", "value": "http://ex/a"},
        "t": {"type": "literal", "value": "21.5", "datatype": "http://www.w3.org/2001/XMLSchema#double"},
        "l": {"type": "literal", "value": "Küche", "xml:lang": "de"}}]
    assert windows[1]["bindings"] == [{"s": {"type": "uri", "value": "http://ex/a"},
                                       "t": {"type": "literal", "value": "23",
                                             "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]
    assert f"{stream}:6: malformed N-Quads line" in result.stderr
    assert "rejected 1 triple(s)" in result.stderr


def test_a_syntax_error_names_file_line_and_column_and_exits_2(tmp_path):
    query = tmp_path / "bad.rsp"
    query.write_text("SELECT ?x\nFROM STREAM <http://ex/s> [RANGE 1s STEP 1s]\nWHERE { ?x ?p }\n")
    result = rsp("evaluate", str(query), "--stream", f"http://ex/s={tmp_path / 'none.nq'}")
    assert result.returncode == 2
    assert re.search(rf"rsp: error: {re.escape(str(query))}:3:\d+: unexpected", result.stderr)


def test_a_stream_without_a_file_is_named(tmp_path):
    query = tmp_path / "q.rsp"
    query.write_text("SELECT ?x FROM STREAM <http://ex/s> [RANGE 1s STEP 1s] WHERE { ?x ?p ?o }")
    result = rsp("evaluate", str(query))
    assert result.returncode == 2 and "no --stream given for <http://ex/s>" in result.stderr


def test_a_one_time_tasparql_file_is_refused_by_evaluate_and_pointed_to_rsp_query(tmp_path):
    query = tmp_path / "rain.tasparql"
    query.write_text("SELECT ?x WHERE { ?x[LAST] <urn:p> ?v }")
    result = rsp("evaluate", str(query))
    assert result.returncode == 2
    assert f"rsp: error: {query}: a TA-SPARQL query is one-time, over the store: run it with rsp query" in result.stderr


FIRE_RULE = """PREFIX : <http://ex/>
FROM STREAM <http://ex/stream>
define Fire = [dotr_id1 :at ?room]
from S = [SELECT ?room WHERE { ?s a :Smoke ; :in ?room }]
and each T = [SELECT ?room WHERE { ?t a :Temp ; :in ?room . FILTER (?room = S.?room) }] within 10 s from S
with Fire.?room = S.?room
consuming T
"""


def test_consecutive_intervals_of_a_consuming_rule_give_what_one_run_gives(tmp_path, spark):
    """DOTR §3: consumed events "cannot be used in subsequent evaluations of the same rule".
    A reading at 1 s, smoke at 2 s (fires, consumes the reading), smoke at 5 s (the reading is
    used up: nothing). `rsp evaluate` over (0, 3] then (3, 10] keeps what the first consumed in
    the store, as the DAG runs do, and the two give the one run's single match; a second
    interval evaluated against a store that never saw the first would fire again at 5 s."""
    stream = tmp_path / "s.nq"
    stream.write_text("".join(
        f'<http://ex/f{s}> {AT} "2024-01-01T00:00:0{s}Z"^^{DT} .\n' + "".join(
            f"<http://ex/{x}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/{kind}> <http://ex/f{s}> .\n"
            f"<http://ex/{x}> <http://ex/in> <http://ex/r1> <http://ex/f{s}> .\n" for x, kind in events)
        for s, events in ((1, [("t1", "Temp")]), (2, [("s2", "Smoke")]), (5, [("s5", "Smoke")]))))
    rule = tmp_path / "fire.dotr"
    rule.write_text(FIRE_RULE)

    def evaluate(store: str, *interval: str) -> list[dict]:
        """``rsp evaluate`` in this process (one Spark for the four runs), the store by setting."""
        from rsp_jobs.cli import main

        out = tmp_path / f"{store}-{len(interval)}-{interval[:1]}.jsonl".replace(":", "")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RSP_STORE_URL", f"sqlite:///{tmp_path / store}")
            assert main(["evaluate", str(rule), "--stream", f"http://ex/stream={stream}", *interval,
                         "--output", str(out)]) == 0
        return [json.loads(line) for line in out.read_text().splitlines()]

    one = evaluate("one.sqlite")
    assert [m["time"] for m in one] == ["2024-01-01T00:00:02Z"]
    first = evaluate("batches.sqlite", "--from", "2024-01-01T00:00:00Z", "--to", "2024-01-01T00:00:03Z")
    second = evaluate("batches.sqlite", "--from", "2024-01-01T00:00:03Z", "--to", "2024-01-01T00:00:10Z")
    assert first + second == one
    alone = evaluate("fresh.sqlite", "--from", "2024-01-01T00:00:03Z", "--to", "2024-01-01T00:00:10Z")
    assert [m["time"] for m in alone] == ["2024-01-01T00:00:05Z"]


def dense_hour(path: Path, every_ms: int = 100) -> Path:
    """A sensor read every ``every_ms`` for an hour: one frame a reading."""
    lines = []
    for i in range(3_600_000 // every_ms):
        ms = i * every_ms
        at = f"2024-01-01T00:{ms // 60_000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}Z"
        lines.append(f'<http://ex/f{i}> {AT} "{at}"^^{DT} .\n'
                     f'<http://ex/a> <http://ex/temp> "{i % 40}"^^<http://www.w3.org/2001/XMLSchema#integer> <http://ex/f{i}> .\n')
    path.write_text("".join(lines))
    return path


def test_an_evaluation_of_millions_of_windows_is_refused_before_spark_starts(tmp_path):
    """``[RANGE 1s STEP 1ms]`` over an hour of data is 3.6 million window closes, each of whose
    results would come back to the driver: refused at once past ``RSP_MAX_WINDOWS``, naming the
    window, the span and the setting; a narrower interval of the same query runs."""
    stream = dense_hour(tmp_path / "hour.nq")
    query = tmp_path / "fine.rsp"
    query.write_text("REGISTER QUERY fine AS PREFIX ex: <http://ex/>\nSELECT (AVG(?t) AS ?avg)\n"
                     "FROM STREAM <http://ex/stream> [RANGE 1s STEP 1ms]\nWHERE { ?s ex:temp ?t }\n")
    result = rsp("evaluate", str(query), "--stream", f"http://ex/stream={stream}")
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("rsp: error:")]
    # data in the lake's hour [00:00, 01:00) reaches the closes of (00:00, 01:00:00.999]
    assert (f"{query}: [RANGE 1s STEP 1ms] would compute 3,600,999 window closes, from 2024-01-01T00:00:00.001Z "
            "to 2024-01-01T01:00:00.999Z") in line
    assert "more than RSP_MAX_WINDOWS (500,000)" in line
    assert "Traceback" not in result.stderr and "SparkSession" not in result.stderr
    assert result.stdout == ""

    ran = rsp("evaluate", str(query), "--stream", f"http://ex/stream={stream}",
              "--from", "2024-01-01T00:10:00Z", "--to", "2024-01-01T00:10:00.005Z")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(ran.stdout.splitlines()) == 5  # the closes of (10:00, 10:00.005], on the millisecond grid
