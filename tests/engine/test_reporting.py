"""Reporting: ISTREAM and DSTREAM against the RSTREAM reference, intervals that split a run into
micro-batches without losing or repeating a window, and the t0 origin of the window grid."""
from __future__ import annotations

from collections import Counter
from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st
from rdflib import Literal

from rsp_jobs.bench.reference import WindowSpec, rdflib_answer, window_contents
from rsp_jobs import compiler
from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.terms import nt_to_json, to_nt
from tests.engine.test_differential import PREFIXES, S1, S2, SETTINGS, close_ms, run_engine, streams
from tests.support.compare import canonical_bindings

BODY = "SELECT ?x ?v WHERE { ?x ex:val ?v }"


def rows(bindings) -> Counter:
    return Counter(canonical_bindings([b])[0] for b in bindings)


@SETTINGS
@given(elements=streams(), kind=st.sampled_from(["ISTREAM", "DSTREAM"]))
def test_istream_and_dstream_report_the_changes_between_consecutive_windows(elements, kind, tmp_path_factory, spark):
    text = f"REGISTER {kind} <http://ex.org/q> AS {PREFIXES}SELECT ?x ?v FROM STREAM <{S1}> [RANGE 2000ms STEP 1000ms] WHERE {{ ?x ex:val ?v }}"
    engine = run_engine(tmp_path_factory.mktemp("r2s"), text, elements)
    contents = window_contents(elements, [WindowSpec(S1, 2000, 1000)])
    full = {c: rows([{k: nt_to_json(to_nt(v)) for k, v in b.items()} for b in rdflib_answer(
        f"{PREFIXES}{BODY}", content)]) for c, content in contents.items()}
    assert [close_ms(w) for w in engine] == sorted(contents)
    for window in engine:
        close = close_ms(window)
        now, before = full[close], full.get(close - 1000, Counter())
        expected = now - before if kind == "ISTREAM" else before - now
        assert rows(window["bindings"]) == expected


@SETTINGS
@given(elements=streams(), cuts=st.lists(st.integers(0, 16_000), min_size=1, max_size=4, unique=True))
def test_consecutive_intervals_report_each_window_exactly_once(elements, cuts, tmp_path_factory, spark):
    """Evaluating (a, b], (b, c], ... one by one gives the windows of one run over everything."""
    text = f"REGISTER QUERY q AS {PREFIXES}SELECT ?x ?v FROM STREAM <{S1}> [RANGE 3000ms STEP 1000ms] WHERE {{ ?x ex:val ?v }}"
    whole = run_engine(tmp_path_factory.mktemp("whole"), text, elements)
    lake = tmp_path_factory.mktemp("parts")
    run_engine(lake, text, elements)  # loads the lake
    from rsp_jobs.ingest.lake import Lake

    bounds = [None] + [c * 1000 for c in sorted(cuts)] + [None]
    parts = []
    for after, until in zip(bounds, bounds[1:]):
        parts += [w.to_json() for w in evaluate(compiler.compile(text), Lake(lake / "lake"), [], 0, Interval(after, until))]
    assert [w["window_close"] for w in parts] == [w["window_close"] for w in whole]
    assert parts == whole


def test_t0_moves_the_window_grid(tmp_path, spark):
    from rsp_jobs.bench.reference import Elem

    elements = [Elem(S1, ts, "<http://ex.org/a0>", "<http://ex.org/val>", to_nt(Literal(ts))) for ts in (100, 900, 1700)]
    text = f"{PREFIXES}SELECT ?v FROM STREAM <{S1}> [RANGE 1000ms STEP 1000ms] WHERE {{ ?x ex:val ?v }}"
    lake_dir = tmp_path / "a"
    run_engine(lake_dir, text, elements)
    from rsp_jobs.ingest.lake import Lake

    shifted = [w.to_json() for w in evaluate(compiler.compile(text), Lake(lake_dir / "lake"), [], t0_us=500_000)]
    def second(lexical: str) -> float:
        instant = datetime.fromisoformat(lexical)
        return instant.second + instant.microsecond / 1e6

    assert [(second(w["window_open"]), second(w["window_close"]), sorted(int(b["v"]["value"]) for b in w["bindings"]))
            for w in shifted] == [(0.5, 1.5, [900]), (1.5, 2.5, [1700])]


@SETTINGS
@given(elements=streams(names=(S1, S2)), every=st.sampled_from([700, 1000, 1500, 4000]))
def test_computed_every_evaluates_every_d_over_the_windows_that_end_then(elements, every, tmp_path_factory, spark):
    """Tutorial 004, "Query and Stream Registration": ``REGISTER QUERY name COMPUTED EVERY d AS``.
    Evaluated at the ticks t0 + k*d once every window is full, each window [close - its RANGE,
    close), whatever the STEPs, which may differ between the streams (rsp_jobs.algebra.schedule)."""
    text = (f"REGISTER QUERY q COMPUTED EVERY {every}ms AS {PREFIXES}SELECT ?x ?v "
            f"FROM STREAM <{S1}> [RANGE 3000ms STEP 1000ms] FROM STREAM <{S2}> [RANGE 2000ms STEP 500ms] "
            "WHERE { ?x ex:val ?v }")
    engine = run_engine(tmp_path_factory.mktemp("every"), text, elements)
    contents = window_contents(elements, [WindowSpec(S1, 3000, 1000), WindowSpec(S2, 2000, 500)], every_ms=every)
    assert [close_ms(w) for w in engine] == sorted(contents)
    assert all(close_ms(w) % every == 0 and close_ms(w) >= 3000 for w in engine)
    for window in engine:
        expected = [{k: nt_to_json(to_nt(v)) for k, v in b.items()}
                    for b in rdflib_answer(f"{PREFIXES}{BODY}", contents[close_ms(window)])]
        assert rows(window["bindings"]) == rows(expected)


def test_without_computed_every_streams_with_different_steps_are_refused():
    import pytest

    from rsp_jobs.errors import UnsupportedConstruct
    from rsp_jobs.algebra.schedule import schedule

    text = (f"{PREFIXES}SELECT ?x FROM STREAM <{S1}> [RANGE 3s STEP 1s] FROM STREAM <{S2}> [RANGE 2s STEP 500ms] "
            "WHERE { ?x ex:val ?v }")
    with pytest.raises(UnsupportedConstruct, match="COMPUTED EVERY"):
        schedule(compiler.compile(text), 0)
    every = schedule(compiler.compile(f"REGISTER QUERY q COMPUTED EVERY 2s AS {text}"), 0)
    assert (every.step, every.first_close) == (2_000_000, 4_000_000)
