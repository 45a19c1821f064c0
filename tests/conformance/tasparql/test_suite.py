"""TA-SPARQL's conformance cases (``cases/paper.toml``: the paper's §6 queries and Table 2;
``cases/union_optional.toml``: UNION and OPTIONAL against rdflib), each check of each case run
through ``check`` on the store loaded with ``fig1.trig``, on SQLite and PostgreSQL (the ``fig1``
fixture). A case the paper contradicts is an expected failure with its reason, from the data."""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction

import pytest
from rdflib import BNode, Literal

from rsp_jobs import errors
from rsp_jobs.store.tasparql import run_query
from tests.conformance.tasparql.support import Case, load_cases

CASES = {case.id: case for case in load_cases()}


def params() -> list:
    """One test per check of each case, named manifest:case:check."""
    out = []
    for case in CASES.values():
        for check in case.checks():
            marks = [pytest.mark.xfail(strict=True, reason=case["xfail"])] if "xfail" in case.fields else []
            out.append(pytest.param(case.id, check, id=f"{case.manifest}:{case.id}:{check}", marks=marks))
    return out


@pytest.mark.parametrize("case_id, check", params())
def test_case(case_id, check, fig1, request):
    CHECKS[check](CASES[case_id], fig1, request)


# ----------------------------------------------------------------------------------- checks

def answers(case: Case, store, request) -> None:
    """The rows worked out by hand, in order: each value as text, or [text, datatype] (a
    decimal's text a fraction, compared as a number); ``columns`` names the ones compared."""
    got = run_query(store, case.text, f"{case.id}.rq").rows
    columns = case.get("columns")
    assert [typed(row, columns or row, want) for row, want in zip(got, case["rows"], strict=False)] == \
           [expected(want, columns or want) for want in case["rows"]]
    assert len(got) == len(case["rows"])


def typed(row: dict, names, want: dict) -> dict:
    out = {}
    for name in names:
        term = row.get(name)
        if term is None:
            out[name] = None
        elif isinstance(want.get(name), list):
            kind = term.get("datatype", "").rpartition("#")[2]
            out[name] = (float(term["value"]) if kind == "decimal" else term["value"], kind)
        else:
            out[name] = term["value"]
    return out


def expected(want: dict, names) -> dict:
    out = {}
    for name in names:
        value = want[name]
        if isinstance(value, list):
            text, kind = value
            out[name] = (pytest.approx(float(Fraction(text))), kind) if kind == "decimal" else (text, kind)
        else:
            out[name] = value
    return out


def terms(store, text: str) -> list[list]:
    return [list(r.values()) for r in run_query(store, text).rows]


def same_as(case: Case, store, request) -> None:
    """Another TA-SPARQL form of the question gives the same rows, term for term."""
    assert terms(store, case.text) == terms(store, case["same_as"])


def table2_tasparql(case: Case, store, request) -> None:
    """Table 2's translation runs in TA-SPARQL too: dsv:belongsTo and dsv:hasTimestamp are
    triples, and LAST's OPTIONAL / !BOUND form (q5) is the last frame."""
    assert terms(store, case.table2_tasparql()) == terms(store, case.text)


def bound(case: Case, store, request) -> None:
    """Which variables the rows bind: an unbound variable is absent from its row."""
    rows = run_query(store, case.text).rows
    assert {frozenset(row) for row in rows} == {frozenset(names) for names in case["bound"]}


def normal(term):
    """A term as a comparable value: numbers and times by value, the rest by text."""
    if term is None:
        return None
    if isinstance(term, dict):
        datatype = term.get("datatype", "")
        if term["type"] == "literal" and datatype.endswith(("#integer", "#decimal", "#double", "#float")):
            return Decimal(term["value"]).normalize()
        if datatype.endswith("#dateTime"):
            return datetime.fromisoformat(term["value"].replace("Z", "+00:00")).astimezone(timezone.utc)
        return term["value"]
    if isinstance(term, BNode):
        return str(term)
    value = term.toPython() if isinstance(term, Literal) else str(term)
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        return Decimal(str(value)).normalize()
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc)
    return str(value)


def rdflib_bag(case: Case, store, request) -> None:
    """rdflib over ``rsp export``'s output, an independent engine over the same frames: the same
    variables (SPARQL leaves the order of * open, rdflib's varies: ours is the written order),
    the same bag of solutions, in the same order under ORDER BY."""
    exported = request.getfixturevalue("exported")
    ours = run_query(store, case.text)
    theirs = exported.query(case.rdflib_text())
    names = [str(v) for v in theirs.vars]
    if "SELECT *" in case.query:
        assert ours.vars == sorted(names, key=lambda v: case.query.index("?" + v))
    else:
        assert ours.vars == names
    mine = Counter(tuple(normal(row.get(v)) for v in names) for row in ours.rows)
    other = Counter(tuple(normal(row[v]) for v in names) for row in theirs)
    assert mine == other
    assert mine  # each question has an answer in fig1.trig
    if "ORDER BY" in case.query:
        assert [tuple(normal(row.get(v)) for v in names) for row in ours.rows] == \
               [tuple(normal(row[v]) for v in names) for row in theirs]


def pairs_within_a_week(rows) -> list:
    """Table 2 for q6: ?x.t is ?xT, in ms; the week's test on the solutions, counted."""
    week = timedelta(days=7)
    return [len([r for r in rows if abs(r.xt.toPython() - r.yt.toPython()) < week])]


THEN = {"pairs-within-a-week": pairs_within_a_week}


def table2_rdflib(case: Case, store, request) -> None:
    """Table 2's translation, run by rdflib over the export, gives the selector form's values:
    numbers by value, times exactly."""
    exported = request.getfixturevalue("exported")
    values = []
    for row in run_query(store, case.text).rows:
        (term,) = row.values()
        kind = term.get("datatype", "").rpartition("#")[2]
        values.append(datetime.fromisoformat(term["value"]) if kind == "dateTime" else float(term["value"]))
    rows = list(exported.query(case.prefix + case["table2"]["sparql"]))
    if "then" in case["table2"]:
        theirs = THEN[case["table2"]["then"]](rows)
    else:
        theirs = [float(r[0].toPython()) if isinstance(r[0].toPython(), (int, float)) or hasattr(r[0].toPython(), "as_tuple")
                  else r[0].toPython() for r in rows]
    if all(isinstance(v, datetime) for v in values):
        assert values == theirs
    else:
        assert values == pytest.approx(theirs)
    assert values  # every question has an answer in fig1.trig


def error(case: Case, store, request) -> None:
    """The query is refused with the error the case names (its class, a message that matches,
    and where ``at`` says, the line and column of that text's first occurrence)."""
    spec = case["error"]
    with pytest.raises(getattr(errors, spec["type"]), match=spec["match"]) as err:
        run_query(store, case.text)
    if "at" in spec:
        i = case.text.index(spec["at"])
        assert (err.value.line, err.value.column) == (case.text.count("\n", 0, i) + 1, i - case.text.rfind("\n", 0, i))


CHECKS = {"answers": answers, "same-as": same_as, "bound": bound, "rdflib": rdflib_bag,
          "table2-rdflib": table2_rdflib, "table2-tasparql": table2_tasparql, "error": error}
