"""The compiler's one entry: text → syntax tree → logical plan → optimized plan, for every
language the platform reads. The Spark evaluators (``rsp_jobs.engine``) and the store's
one-time queries (``rsp_jobs.store.tasparql``, through its SQL generator) then only execute what
this returns.

    >>> query = compile("REGISTER QUERY q AS SELECT ?s FROM STREAM <urn:s> [RANGE 1m STEP 10s] "
    ...                 "WHERE { ?s <urn:p> ?o }")
    >>> type(query).__name__, sorted(query.predicates)
    ('WindowQuery', ['<urn:p>'])
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan, plan_rule, plan_rule_set
from rsp_jobs.algebra.optimize import optimize
from rsp_jobs.algebra.plan import PatternQuery, WindowQuery
from rsp_jobs.algebra.tasparql import OneTimeQuery
from rsp_jobs.algebra.tasparql import plan as plan_one_time
from rsp_jobs.algebra.translate import translate
from rsp_jobs.language import tasparql
from rsp_jobs.language.dotr import parse_rule
from rsp_jobs.language.parser import parse_query
from rsp_jobs.textfile import read_text

# what compile returns: a C-SPARQL window query, an EP-SPARQL pattern, a DOTR rule, or a
# one-time TA-SPARQL query over the frame store
CompiledQuery = WindowQuery | PatternQuery | RulePlan | OneTimeQuery

# file suffix → language; anything else is C-SPARQL/EP-SPARQL (``.rsp``). ``.rq`` is not
# TA-SPARQL: CSRBench and the C-SPARQL papers write continuous queries as ``q1.rq``, so a
# one-time TA-SPARQL file is ``.tasparql`` (``rsp query`` reads its text as TA-SPARQL anyway).
LANGUAGES = {".dotr": "dotr", ".tasparql": "tasparql"}


def compile(
    text: str, source: str = "<query>", language: str | None = None, skip: Iterable[str] = ()
) -> CompiledQuery:
    """``language``: ``rsp`` (C-SPARQL and EP-SPARQL), ``dotr`` or ``tasparql``; by default
    the suffix of ``source`` says (``LANGUAGES``). ``skip`` names optimizer rules to leave out
    (``rsp_jobs.algebra.optimize.RULES``; by default those ``RSP_OPTIMIZER_SKIP`` lists,
    comma-separated: to see whether a rule is to blame for an answer). Errors name ``source``, line and column."""
    language = language or LANGUAGES.get(Path(source).suffix.lower(), "rsp")
    skip = _skipped(skip)
    if language == "tasparql":
        return plan_one_time(tasparql.parse(text, source))
    if language == "dotr":
        return optimize(plan_rule(parse_rule(text, source)), skip)
    if language != "rsp":
        raise ValueError(f"unknown query language {language!r}: rsp, dotr or tasparql")
    return optimize(translate(parse_query(text, source)), skip)


def _skipped(skip: Iterable[str]) -> tuple[str, ...]:
    """``skip``, or by default the rules ``RSP_OPTIMIZER_SKIP`` lists."""
    return tuple(skip) or tuple(
        r.strip() for r in os.environ.get("RSP_OPTIMIZER_SKIP", "").split(",") if r.strip()
    )


def compile_file(
    path: str | Path, language: str | None = None, skip: Iterable[str] = ()
) -> CompiledQuery:
    """A query or rule file, compiled; a file that is not UTF-8 is named with its line."""
    return compile(read_text(path, "query"), str(path), language, skip)


def compile_rule_set(rules: Iterable[RulePlan], skip: Iterable[str] = ()) -> RuleSetPlan:
    """DOTR rules (each compiled) to be evaluated together (``engine.match_rules``): grouped by
    the instants they read, and optimized as a set (``optimize.SET_RULES``)."""
    rules = tuple(rules)
    names = [r.name for r in rules]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(
            f"rules evaluated together need distinct names: {', '.join(twice)} given twice"
        )
    skip = _skipped(skip)
    return optimize(plan_rule_set(rules), skip)


def is_pattern(compiled: CompiledQuery) -> bool:
    """Whether ``compiled`` is matched on events (EP-SPARQL, DOTR) rather than windowed."""
    return isinstance(compiled, (PatternQuery, RulePlan))
