"""The examples in the docstrings run as printed (no Spark: the modules whose examples need a
session mark them ``+SKIP``)."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["rsp_jobs.compiler", "rsp_jobs.results", "rsp_jobs.tree", "rsp_jobs.times", "rsp_jobs.reasoning.entailment",
           "rsp_jobs.language.ast", "rsp_jobs.algebra.tasparql", "rsp_jobs.algebra.tasparql.exact",
           "rsp_jobs.algebra.tasparql.explain"]


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_run(name):
    failed, attempted = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert attempted and not failed, f"{name}: {failed} of {attempted} examples failed"
