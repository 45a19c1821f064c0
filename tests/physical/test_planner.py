"""Golden tests of the physical planner (no Spark): every window query under ``queries/`` is
planned for three slices (a 15-minute micro-batch's rows, a day of CityBench's, more than the
driver reads) and the steps must be those in ``tests/fixtures/physical/<application>.<name>.physical``;
``RSP_REGOLD=1`` rewrites them from the current planner (then read the diff before committing it).
That the choices keep the answers is checked by the differential, CSRBench and CityBench suites,
which run both sides of each size threshold."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rsp_jobs import settings
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.compiler import compile_file
from rsp_jobs.errors import InputError
from rsp_jobs.physical import planner
from rsp_jobs.times import parse_us

FIXTURES = Path(__file__).parents[1] / "fixtures" / "physical"
QUERIES = settings.REPO_ROOT / "queries"
WINDOW_QUERIES = sorted(p for p in QUERIES.rglob("*.rsp")
                        if isinstance(q := compile_file(p), ContinuousQuery) and not q.pattern)
SLICES = (2_000, 188_000, 6_000_000)  # under INTERPRETED_BELOW_ROWS, a day, past FACTS_ON_DRIVER_BELOW_ROWS
AFTER, UNTIL = parse_us("2014-08-02T06:00:00Z"), parse_us("2014-08-02T07:00:00Z")


def physical_plans(path: Path) -> str:
    query = compile_file(path)
    return "".join(f"-- a slice of {rows:,} stream rows\n"
                   + planner.plan_windows(query, planner.SliceOf(rows, AFTER), AFTER, UNTIL).explain()
                   for rows in SLICES)


@pytest.mark.parametrize("path", WINDOW_QUERIES, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_the_physical_plan_of_each_registered_query_is_the_golden_one(path: Path):
    plans = physical_plans(path)
    golden = FIXTURES / f"{path.parent.name}.{path.stem}.physical"
    if os.environ.get("RSP_REGOLD"):
        golden.write_text(plans)
    assert plans == golden.read_text()


def test_every_golden_file_has_its_query():
    """Window queries' plans are pinned here, patterns' and rules' in test_patterns_and_rules.py."""
    planned = sorted(p for p in QUERIES.rglob("*") if p.suffix in (".rsp", ".dotr"))
    assert sorted(p.name for p in FIXTURES.glob("*.physical")) == sorted(
        f"{p.parent.name}.{p.stem}.physical" for p in planned)


def test_the_size_thresholds_choose_where_facts_come_from_and_how_expressions_run(monkeypatch):
    query = compile_file(QUERIES / "citybench" / "congestion_by_segment.rsp")
    small, day, large = (planner.plan_windows(query, planner.SliceOf(rows, AFTER), AFTER, UNTIL) for rows in SLICES)
    assert (small.interpreted, day.interpreted, large.interpreted) == (True, False, False)
    assert (small.facts_on_driver, day.facts_on_driver, large.facts_on_driver) == (True, True, False)
    assert day.ranked and not large.ranked  # MAX by rank needs the terms the driver lists
    assert {small.windowing, day.windowing, large.windowing} == {planner.SOLUTIONS}
    entailed = planner.plan_windows(query, planner.SliceOf(188_000, AFTER), AFTER, UNTIL, entailment="rdfs")
    assert (entailed.windowing, entailed.facts_on_driver, entailed.ranked) == (planner.ENTAILED, False, frozenset())
    monkeypatch.setenv("RSP_INTERPRETED_BELOW_ROWS", "0")
    assert not planner.plan_windows(query, planner.SliceOf(2_000, AFTER), AFTER, UNTIL).interpreted


def test_a_plan_past_the_windows_limit_is_refused_by_the_planner(monkeypatch):
    query = compile_file(QUERIES / "citybench" / "congestion_by_segment.rsp")
    monkeypatch.setenv("RSP_MAX_WINDOWS", "11")  # the hour (06:00, 07:00] has 12 closes of STEP 5m
    with pytest.raises(InputError, match="would compute 12 window closes, from 2014-08-02T06:05:00Z to "
                                         "2014-08-02T07:00:00Z, more than RSP_MAX_WINDOWS"):
        planner.plan_windows(query, planner.SliceOf(188_000, AFTER), AFTER, UNTIL)


def test_rsp_explain_prints_the_physical_plan(capsys):
    from rsp_jobs.cli import main

    path = QUERIES / "citybench" / "congestion_by_segment.rsp"
    assert main(["explain", str(path), "--physical", "--rows", "188000",
                 "--from", "2014-08-02T06:00:00Z", "--to", "2014-08-02T07:00:00Z"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("WindowQuery congestion_by_segment")
    assert printed.endswith(planner.plan_windows(compile_file(path), planner.SliceOf(188_000, AFTER),
                                                 AFTER, UNTIL).explain())


def test_a_plan_with_property_paths_names_them_and_their_bound(monkeypatch):
    from rsp_jobs.compiler import compile

    monkeypatch.setenv("RSP_MAX_PATH_STEPS", "40")
    query = compile("PREFIX ex: <http://ex.org/> SELECT * FROM STREAM <urn:s> [RANGE 1h STEP 10m] "
                    "WHERE { ?room ex:partOf+ ?building ; ex:temperature ?t . ?building a/ex:subClassOf* ex:Site }")
    steps = {s.name: s.detail for s in planner.plan_windows(query, planner.SliceOf(2_000, AFTER), AFTER, UNTIL).steps()}
    assert steps["Paths"].startswith("2 property path(s) over the window rows and the background's triples")
    assert "at most 40 (RSP_MAX_PATH_STEPS)" in steps["Paths"]


def test_the_queries_of_one_slice_share_its_scan_in_the_golden_plan():
    """Multi-query execution: every registered window query planned together for a 15-minute
    batch. The queries that read the same streams (the traffic stream's, whatever their windows)
    share one plan whose scan spans the widest look-back of theirs; a query over other streams
    gets a plan of its own; the order is the queries'. Pinned in ``together.shared``."""
    queries = [compile_file(p) for p in WINDOW_QUERIES]
    after, until = UNTIL - 15 * 60_000_000, UNTIL
    shared = planner.plan_together(queries, planner.SliceOf(2_000, AFTER), after, until)
    assert sorted(i for plan in shared for i in plan.members) == list(range(len(queries)))
    for plan in shared:
        assert len({tuple(sorted(set(p.streams))) for p in plan.plans}) == 1
        assert plan.start == min(p.start for p in plan.plans) and plan.until == until
    assert any(len(plan.plans) > 1 for plan in shared)
    text = "".join(f"-- {', '.join(p.query.name for p in plan.plans)}\n" + plan.explain()
                   for plan in shared)
    golden = FIXTURES / "together.shared"
    if os.environ.get("RSP_REGOLD"):
        golden.write_text(text)
    assert text == golden.read_text()
