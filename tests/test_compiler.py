"""The compiler's one entry picks the language from the file's suffix and returns one of the
four compiled kinds; no Spark."""
from __future__ import annotations

import pytest

from rsp_jobs.algebra.plan import PatternQuery, WindowQuery
from rsp_jobs.algebra.dotr import RulePlan
from rsp_jobs.compiler import OneTimeQuery, compile, compile_file, is_pattern
from rsp_jobs.settings import REPO_ROOT

WINDOW = "REGISTER QUERY q AS SELECT ?s FROM STREAM <urn:s> [RANGE 1m STEP 10s] WHERE { ?s <urn:p> ?o }"
PATTERN = ("REGISTER QUERY p AS SELECT ?a ?b FROM STREAM <urn:s> "
           "WHERE { { ?a <urn:p> ?x } SEQ { ?b <urn:q> ?x } }")
ONE_TIME = "SELECT ?x WHERE { ?x[LAST] <urn:p> ?o }"


@pytest.mark.parametrize("source, text, kind", [
    ("q.rsp", WINDOW, WindowQuery),
    ("q1.rq", WINDOW, WindowQuery),          # CSRBench's spelling of a continuous query
    ("q.txt", WINDOW, WindowQuery),          # CityBench's
    ("p.rsp", PATTERN, PatternQuery),
    ("last.tasparql", ONE_TIME, OneTimeQuery),
])
def test_the_suffix_picks_the_language(source, text, kind):
    assert isinstance(compile(text, source), kind)


def test_an_explicit_language_overrides_the_suffix():
    assert isinstance(compile(ONE_TIME, "q.rq", "tasparql"), OneTimeQuery)
    with pytest.raises(ValueError, match="unknown query language 'sql'"):
        compile(WINDOW, "q.rsp", "sql")


def test_every_csrbench_query_compiles_as_a_continuous_query(data_dir):
    files = sorted((data_dir / "csrbench/queries").glob("*.rq"))
    assert files
    for path in files:
        assert isinstance(compile_file(path), WindowQuery), path


def test_every_shipped_rule_compiles_to_a_rule_plan():
    rules = sorted((REPO_ROOT / "queries").rglob("*.dotr"))
    assert rules
    for path in rules:
        compiled = compile_file(path)
        assert isinstance(compiled, RulePlan) and is_pattern(compiled), path
