"""A small batch runs on Spark's interpreted expressions, a large one on its generated code
(``session.batch_settings``, by the rows ``LakeStatistics.rows`` counts): DOTR's benchmark rules
(``rsp_jobs.bench.patterns``, Margara et al. 2018 §5) find the same matches either way, and
so does a rule evaluated on its own."""
from __future__ import annotations

import pytest

from rsp_jobs.bench import patterns
from rsp_jobs.compiler import compile, compile_rule_set
from rsp_jobs.engine import Interval, match, match_rules
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.physical.planner import INTERPRETED_BELOW_ROWS
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.times import to_us

MINUTES, PER_SECOND, RULES = 3, 5, 3


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, spark):
    work = tmp_path_factory.mktemp("rules-interpreted")
    background = work / "sensors.nt"
    patterns.background().serialize(background, format="nt", encoding="utf-8")
    batch = patterns.stream(MINUTES, PER_SECOND)
    lake = Lake(work / "lake")
    lake.write(batch, batch_id="scenario")
    rules = [compile(patterns.rule_text(i), f"<rule {i}>", "dotr") for i in range(RULES)]
    return lake, [f"{patterns.BACKGROUND}={background}"], rules


def _matches(each) -> list:
    return sorted((i, m.time, m.triples) for i, (found, _) in enumerate(each) for m in found)


def test_rules_match_alike_interpreted_and_compiled(scenario, monkeypatch):
    lake, files, rules = scenario
    assert LakeStatistics(lake).rows([patterns.STREAM]) < INTERPRETED_BELOW_ROWS
    origin = to_us(patterns.START)
    interval = Interval(origin - 1, origin + MINUTES * 60 * patterns.S)
    interpreted = _matches(match_rules(compile_rule_set(rules), lake, files, interval))
    alone = _matches([match(rule, lake, files, interval) for rule in rules])
    monkeypatch.setenv("RSP_INTERPRETED_BELOW_ROWS", "0")
    compiled = _matches(match_rules(compile_rule_set(rules), lake, files, interval))
    assert interpreted and {i for i, _, _ in interpreted} == set(range(RULES))
    assert interpreted == compiled == alone
