"""Typed results: the JSON ``rsp evaluate`` prints and the store keeps, and back; matches as
the per-close results the store keeps. No Spark."""
from __future__ import annotations

from rsp_jobs.results import Match, RuleMatch, WindowResult
from rsp_jobs.times import iso_ms

S = 1_000_000
A = {"x": {"type": "uri", "value": "urn:a"}}
LINE = "<urn:a> <urn:p> <urn:b> ."


def test_each_form_prints_its_own_key_and_reads_back():
    windows = [WindowResult(0, 10 * S, "SELECT", bindings=(A, A)),
               WindowResult(0, 10 * S, "ASK", boolean=False),
               WindowResult(0, 10 * S, "CONSTRUCT", triples=(LINE,)),
               WindowResult(0, 10 * S, "DESCRIBE")]
    printed = [w.to_json() for w in windows]
    assert [sorted(p) for p in printed] == [["bindings", "window_close", "window_open"],
                                            ["boolean", "window_close", "window_open"],
                                            ["triples", "window_close", "window_open"],
                                            ["triples", "window_close", "window_open"]]
    assert printed[1]["boolean"] is False and printed[0]["window_close"] == "1970-01-01T00:00:10Z"
    assert [WindowResult.from_json(p, w.form) for p, w in zip(printed, windows)] == windows
    assert [w.rows for w in windows] == [2, 0, 1, 0]


def test_matches_become_one_result_per_end_time_opening_at_the_earliest_start():
    matches = [Match(2 * S, 5 * S, ("f2",), bindings=A), Match(1 * S, 5 * S, ("f1",), bindings=A),
               Match(6 * S, 7 * S, ("f3",), bindings={})]
    results = WindowResult.of_matches(matches)
    assert [(r.open_us, r.close_us, r.rows) for r in results] == [(1 * S, 5 * S, 2), (6 * S, 7 * S, 1)]


def test_constructed_matches_keep_each_triples_interval_unless_instantaneous():
    over = WindowResult.of_matches([Match(1 * S, 5 * S, ("f",), triples=(LINE,)),
                                    Match(3 * S, 5 * S, ("g",), triples=(LINE,))])
    assert over[0].triples == (LINE,)
    assert over[0].derived == ((iso_ms(1 * S), LINE), (iso_ms(3 * S), LINE))
    assert over[0].to_json()["derived"] == [[iso_ms(1 * S), LINE], [iso_ms(3 * S), LINE]]
    (instant,) = WindowResult.of_matches([RuleMatch(4 * S, 4 * S, ("f",), triples=(LINE,), facts={"S": "k"})])
    assert instant.derived == () and "derived" not in instant.to_json()


def test_a_rule_match_prints_dotrs_shape_and_a_pattern_match_ep_sparqls():
    rule = RuleMatch(4 * S, 4 * S, ("f1",), triples=(LINE,), facts={"S": "S@4000000#ab"})
    assert rule.to_json() == {"time": "1970-01-01T00:00:04Z", "time_us": 4 * S, "triples": [LINE],
                              "events": ["f1"], "facts": {"S": "S@4000000#ab"}}
    assert Match(1, 2, ("f",), bindings=A).to_json() == {
        "start": "1970-01-01T00:00:00Z", "end": "1970-01-01T00:00:00Z", "start_us": 1, "end_us": 2,
        "events": ["f"], "bindings": A}


def test_matches_ending_together_are_all_select_or_all_construct():
    import pytest

    mixed = [Match(0, S, ("urn:f1",), bindings=A), Match(0, S, ("urn:f2",), triples=(LINE,))]
    with pytest.raises(ValueError, match="not all SELECT"):
        WindowResult.of_matches(mixed)
