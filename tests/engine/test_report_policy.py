"""The reporting policy (``rsp_jobs.algebra.schedule``): ``non-empty``, C-SPARQL's as CSRBench
fixes it, reports the windows that hold data; ``every-close`` reports every close of the
interval, a window without data answering as SPARQL does over an empty graph. Checked against
rdflib over the same window contents (an empty graph where a window holds nothing), on a sensor
stream shaped as users send it: several frames at one time, uneven gaps, one gap longer than
the window, a background graph."""
from __future__ import annotations

import pytest
from rdflib import Graph, Literal, URIRef

from rsp_jobs import compiler
from rsp_jobs.bench.reference import Elem, WindowSpec, rdflib_answer, window_contents
from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.errors import InputError, QueryError
from rsp_jobs.ingest.lake import Lake, load_files
from rsp_jobs.orchestrate import registry
from rsp_jobs.terms import to_nt
from tests.engine.test_differential import assert_same, close_ms
from tests.support.stream_files import in_delivery_order, write_stream_files

EX = "http://ex.org/"
SENSORS = EX + "stream/sensors"
PREFIXES = f"PREFIX ex: <{EX}>\n"
RANGE_MS, STEP_MS = 1000, 500
# an hour's worth of nothing after 6.1 s would be 7,200 windows: 13 s holds a gap of 5.9 s
UNTIL_MS = 13_000

BACKGROUND = Graph()
for sensor, room in (("t1", "kitchen"), ("t2", "hall")):
    BACKGROUND.add((URIRef(EX + sensor), URIRef(EX + "in"), URIRef(EX + room)))

CASES = {
    # an aggregate without GROUP BY has one group, empty where the window is (SPARQL 1.1 §18.5)
    "count_without_group_by": "SELECT (COUNT(?v) AS ?n) (SUM(?v) AS ?total) WHERE { ?s ex:val ?v }",
    "grouped_count": "SELECT ?s (COUNT(?v) AS ?n) WHERE { ?s ex:val ?v } GROUP BY ?s",
    "plain_pattern": "SELECT ?s ?v WHERE { ?s ex:val ?v }",
    # the background and VALUES answer in every window, data or not
    "background_with_values": "SELECT ?s ?room WHERE { VALUES ?s { ex:t1 ex:t2 } ?s ex:in ?room "
                              "OPTIONAL { ?s ex:val ?v } FILTER(!BOUND(?v)) }",
    "ask": "ASK WHERE { ?s ex:val ?v FILTER(?v > 20) }",
    "silent_sensors": "SELECT ?s WHERE { ?s ex:in ?room FILTER NOT EXISTS { ?s ex:val ?v } }",
}


def _readings() -> list[Elem]:
    """Two sensors' readings: two frames at 0 s, gaps of 0.3, 0.8, 4.7 (longer than the window)
    and 0.3 s, then none after 6.1 s."""
    out, number = [], 0
    for t, readings in ((0, [("t1", 20)]), (0, [("t2", 21)]), (300, [("t1", 22)]), (1100, [("t2", 19)]),
                        (5800, [("t1", 25), ("t2", 18)]), (6100, [("t1", 24)])):
        for sensor, value in readings:
            out.append(Elem(SENSORS, t, f"<{EX}{sensor}>", f"<{EX}val>", to_nt(Literal(value)),
                            graph=f"{SENSORS}/g{number}"))
        number += 1
    return in_delivery_order(out)


def _every_close(elements, spec, after_ms, until_ms) -> dict[int, list]:
    """{close: content} for every close of the grid in (after, until]: the reference's windows
    that hold data, and an empty content for each of the others."""
    holding = window_contents(elements, [spec])
    closes = range(RANGE_MS, until_ms + 1, STEP_MS)
    return {c: holding.get(c, []) for c in closes if c > after_ms}


@pytest.fixture(scope="module")
def lake_and_background(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    lake = Lake(tmp / "lake")
    load_files(lake, write_stream_files(_readings(), tmp / "files"))
    background = tmp / "rooms.ttl"
    BACKGROUND.serialize(background, format="turtle")
    return lake, background


def _query(body: str) -> str:
    head, _, where = body.partition(" WHERE ")
    return (f"REGISTER QUERY q AS {PREFIXES}{head}\nFROM STREAM <{SENSORS}> [RANGE {RANGE_MS}ms STEP {STEP_MS}ms]\n"
            f"FROM <{EX}rooms.ttl>\nWHERE {where}")


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("after_ms", [0, 2500])
def test_every_close_reports_windows_without_data_as_rdflib_answers_an_empty_graph(
        case, after_ms, lake_and_background, spark):
    lake, background = lake_and_background
    spec = WindowSpec(SENSORS, RANGE_MS, STEP_MS)
    reference = {c: rdflib_answer(f"{PREFIXES}{CASES[case]}", content, [BACKGROUND])
                 for c, content in _every_close(_readings(), spec, after_ms, UNTIL_MS).items()}
    windows = [w.to_json() for w in evaluate(
        compiler.compile(_query(CASES[case])), lake, [str(background)],
        interval=Interval(after_ms * 1000, UNTIL_MS * 1000), report="every-close")]
    assert any(not content for content in _every_close(_readings(), spec, after_ms, UNTIL_MS).values())
    assert_same(windows, reference, CASES[case].split()[0].upper(), ordered=False)


def test_non_empty_is_the_default_and_reports_only_the_windows_that_hold_data(lake_and_background, spark):
    lake, background = lake_and_background
    query = compiler.compile(_query(CASES["count_without_group_by"]))
    interval = Interval(0, UNTIL_MS * 1000)
    holding = sorted(window_contents(_readings(), [WindowSpec(SENSORS, RANGE_MS, STEP_MS)]))
    default = [close_ms(w.to_json()) for w in evaluate(query, lake, [str(background)], interval=interval)]
    assert default == holding
    every = [close_ms(w.to_json()) for w in evaluate(query, lake, [str(background)], interval=interval,
                                                     report="every-close")]
    assert every == list(range(RANGE_MS, UNTIL_MS + 1, STEP_MS)) and set(holding) < set(every)


def test_an_open_interval_reports_the_gaps_between_the_first_and_last_window_with_data(
        lake_and_background, spark):
    """The grid starts at t0 (the epoch by default) and an open run has no last close: an
    unbounded side ends where the data does."""
    lake, background = lake_and_background
    query = compiler.compile(_query(CASES["count_without_group_by"]))
    holding = sorted(window_contents(_readings(), [WindowSpec(SENSORS, RANGE_MS, STEP_MS)]))
    every = [close_ms(w.to_json()) for w in evaluate(query, lake, [str(background)], report="every-close")]
    assert every == list(range(holding[0], holding[-1] + 1, STEP_MS))


def test_a_query_evaluated_on_each_arrival_has_no_closes_without_data(lake_and_background, spark):
    lake, _ = lake_and_background
    query = compiler.compile(f"REGISTER QUERY q AS {PREFIXES}SELECT ?s WHERE {{ ?s ex:val ?v }}"
                             .replace("WHERE", f"FROM STREAM <{SENSORS}> [TRIPLES 2]\nWHERE"))
    with pytest.raises(QueryError, match="every-close.*needs a grid of closes.*each arrival"):
        list(evaluate(query, lake, report="every-close"))
    with pytest.raises(InputError, match="report is one of non-empty, every-close, not 'sometimes'"):
        list(evaluate(query, lake, report="sometimes"))


def test_the_query_settings_file_names_the_policy_and_is_refused_where_it_cannot_apply(tmp_path):
    queries = tmp_path / "queries"
    (queries / "app").mkdir(parents=True)
    window = queries / "app" / "counts.rsp"
    window.write_text(_query(CASES["count_without_group_by"]).replace(f"FROM <{EX}rooms.ttl>\n", ""))
    window.with_suffix(".toml").write_text('report = "every-close"\n')
    assert registry.load_query(window, queries).report == "every-close"
    window.with_suffix(".toml").write_text('report = "always"\n')
    with pytest.raises(InputError, match=r"counts\.toml: report: report is one of non-empty, every-close"):
        registry.load_query(window, queries)
    pattern = queries / "app" / "rising.rsp"
    pattern.write_text(f"REGISTER QUERY rising AS {PREFIXES}SELECT ?s FROM STREAM <{SENSORS}>\n"
                       "WHERE { { ?s ex:val ?a } SEQ { ?s ex:val ?b } }")
    pattern.with_suffix(".toml").write_text('report = "every-close"\n')
    with pytest.raises(InputError, match=r"rising\.toml: report applies to window queries"):
        registry.load_query(pattern, queries)


def test_every_close_starts_at_the_first_tick_at_which_every_window_is_full(lake_and_background, spark):
    """COMPUTED EVERY 500ms over a 3 s window: the ticks before 3 s have no full window and
    report nothing, data or not, whatever the interval asks for."""
    lake, background = lake_and_background
    text = _query(CASES["count_without_group_by"]).replace("[RANGE 1000ms STEP 500ms]", "[RANGE 3s STEP 1s]")
    text = text.replace("REGISTER QUERY q AS", "REGISTER QUERY q COMPUTED EVERY 500ms AS")
    closes = [close_ms(w.to_json()) for w in evaluate(compiler.compile(text), lake, [str(background)],
                                                      interval=Interval(-10_000_000, 5_000_000),
                                                      report="every-close")]
    assert closes == list(range(3000, 5001, 500))
