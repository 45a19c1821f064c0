"""Checks of the C-SPARQL examples that are not a query and its answers per window (those are
the cases of ``cases/*.toml``, run by ``test_suite.py``): how the paper's stream file is read, a
chain of two registered queries, and the values ``timestamp()`` gives in one row."""
from __future__ import annotations

from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.ingest.lake import Lake, load_files
from rsp_jobs.store.results import result_batch
from tests.conformance.csparql.support import DATA, answers, closes, load_cases, local, run

GLUE = "http://c-sparql.cefriel.it/glue/stream"
FB = "http://.../fb"
TUTORIAL = {case.id: case for case in load_cases(["tutorial"])}


def test_the_nquads_timestamp_context_is_read_as_the_stream(tmp_path):
    """Paper 001 §3.1's serialization: each timestamp is one frame holding the triples stamped
    with it, in the order of the file; nothing is rejected."""
    from rsp_jobs.ingest.rdf_stream import read_stream_file

    batch = read_stream_file(DATA / "glue.nq", GLUE)
    assert not batch.rejections and batch.read_triples == 14 == len(batch.elements)
    per_frame = {}
    for e in batch.elements:
        per_frame.setdefault(e.frame.rsplit("/", 1)[-1], []).append(local(e.p.strip("<>")))
    assert per_frame == {"2009-07-20T22:48:52Z": ["type", "content", "has_container", "title", "type",
                                                 "has_creator", "topic"],
                         "2009-07-20T22:48:54Z": ["type"],
                         "2009-07-20T22:48:55Z": ["content", "has_container", "title", "type", "has_creator", "topic"]}


def test_query_chaining_a_stream_of_results_feeds_a_downstream_query(tmp_path, spark):
    """Tutorial, slide "Query Chaining" (its example is a picture): SWhoIsWhereOnFb's output
    (the case s-who-is-where-on-fb), a frame per window "timestamped" at the window's close
    ("dependent on the query execution time only"), read by a downstream query over a window of
    its own. The windows of SWhoIsWhereOnFb that constructed nothing are empty frames: nothing
    of them reaches the downstream query, whose first window with data closes a minute after...
    the first non-empty frame (10:00:50): at 10:01:00; the last frame (10:01:40) is in windows
    up to 10:02:40."""
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(FB, DATA / "fb.trig")])
    upstream = compiler.compile(TUTORIAL["s-who-is-where-on-fb"].query)
    derived, _ = result_batch(upstream, list(evaluate(upstream, lake)))
    lake.write(derived, batch_id="SWhoIsWhereOnFb")
    assert [p.statements for p in derived.parts] == [0, 0, 0] + [2] * 6
    downstream = compiler.compile(f"""REGISTER QUERY WhoIsInTheRedRoom AS
PREFIX : <http://.../sr4ld2013-onto#>
SELECT ?person
FROM STREAM <{derived.stream}> [RANGE 1m STEP 10s]
WHERE {{ ?person :isIn :RedRoom }}
""")
    found = answers([w.to_json() for w in evaluate(downstream, lake)], "person")
    assert found == {c: [("David",), ("Elena",)] for c in closes("10:01:00", "10:02:40", 10)}


def test_timestamp_is_the_latest_time_of_a_matching_triple_in_the_window(tmp_path, spark):
    """Tutorial, slide "TimeStamp Function - Syntax and Semantics": a triple not in the window is
    a type error, one that appears once gives its timestamp, one that appears several times the
    most recent. u1 posts about the RedRoom at 10:00:05 and again at 10:00:40 (the same triple);
    timestamp(variable|IRI|bn, variable|IRI, variable|IRI|bn|literal): a blank node matches any
    term, a variable the solution does not bind too."""
    text = """PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>
PREFIX : <http://.../sr4ld2013-onto#>
SELECT ?who ?t ?any ?missing
FROM STREAM <http://.../fb> [RANGE 1m STEP 1m]
WHERE { ?who :posts :RedRoomPost .
        BIND(f:timestamp(?who, :posts, :RedRoomPost) AS ?t)
        BIND(f:timestamp([], :where, ?anywhere) AS ?any)
        BIND(f:timestamp(?who, :posts, :NoSuchPost) AS ?missing) }
"""
    (window,) = run(tmp_path, text, [(FB, "fb_repeated.trig")])
    (row,) = window["bindings"]
    assert row["who"]["value"].endswith("#u1") and "missing" not in row
    assert int(row["t"]["value"]) == 1413799240000  # 2014-10-20T10:00:40Z, the later of the two
    assert int(row["any"]["value"]) == 1413799245000  # the latest :where triple, u2's at 10:00:45
