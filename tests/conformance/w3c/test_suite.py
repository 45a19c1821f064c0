"""The W3C SPARQL 1.1 query tests, from their manifests: every applicable evaluation test run
as the body of a continuous query over the one window holding its data, every syntax test
through the parser. A test listed in expected_failures.toml is a strict expected failure with
its reason; any other must pass (README.md)."""

from __future__ import annotations

import pytest

from rsp_jobs import settings
from tests.conformance.w3c.support import (
    evaluation_tests,
    expected_failures,
    run,
    syntax_outcome,
    syntax_tests,
)

SUITE = settings.data_dir() / "w3c-sparql11"
FAILURES = expected_failures()


def _cases(tests):
    return [pytest.param(t, id=t.id, marks=[pytest.mark.xfail(reason=FAILURES[t.id], strict=True)]
                         if t.id in FAILURES else []) for t in tests]


EVALUATION = [t for t in evaluation_tests(SUITE) if t.applicable] if SUITE.is_dir() else []
SYNTAX = syntax_tests(SUITE) if SUITE.is_dir() else []


def test_the_suite_is_where_the_data_setting_says(data_dir):
    assert (data_dir / "w3c-sparql11").is_dir()
    # the count the issue measured: 219 applicable evaluation tests in 14 folders
    assert len(EVALUATION) == 219


def test_every_expected_failure_names_a_test_of_the_suite(data_dir):
    known = {t.id for t in EVALUATION} | {t.id for t in SYNTAX}
    assert set(FAILURES) <= known
    assert all(reason.strip() for reason in FAILURES.values())


@pytest.mark.parametrize("test", _cases(EVALUATION))
def test_evaluation(test, spark, tmp_path):
    got, expected = run(test, tmp_path)
    assert got.same_as(expected), f"{test.name}\n engine: {got}\n W3C:    {expected}"


@pytest.mark.parametrize("test", _cases(SYNTAX))
def test_syntax(test, data_dir):
    assert syntax_outcome(test) is None
