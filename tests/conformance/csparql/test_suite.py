"""The C-SPARQL paper's and tutorial's examples (``cases/paper.toml``, ``cases/tutorial.toml``),
each case run through ``check``: its printed text refused where the case says it cannot run, its
query refused where it is an error, its answer per window equal to the one worked out by hand
(and, where the case names one, to rdflib's answer to the paper's SPARQL over a repository).
A case the paper contradicts is an expected failure with its reason, from the data."""
from __future__ import annotations

import re

import pytest
from rdflib import Graph, Literal, URIRef

from rsp_jobs import compiler, errors
from rsp_jobs.bench.reference import rdflib_answer
from tests.conformance.csparql.support import DATA, Case, answers, load_cases, local, run, triples

CASES = {case.id: case for case in load_cases()}


def params() -> list:
    """One test per check of each case, named manifest:case:check; the answers start Spark, and
    a case the paper contradicts is expected to fail them."""
    out = []
    for case in CASES.values():
        for check in case.checks():
            marks = [pytest.mark.spark] if check.startswith("answers") else []
            if check.startswith("answers") and "xfail" in case.fields:
                marks.append(pytest.mark.xfail(strict=True, reason=case["xfail"]))
            out.append(pytest.param(case.id, check, id=f"{case.manifest}:{case.id}:{check}", marks=marks))
    return out


@pytest.mark.parametrize("case_id, check", params())
def test_case(case_id, check, tmp_path, request):
    case = CASES[case_id]
    if check == "printed":
        refused(case.printed, case["printed_error"], tmp_path)
    elif check == "error":
        refused(case.query, case["error"], tmp_path)
    else:
        request.getfixturevalue("spark")
        regime = check.partition("[")[2].rstrip("]") or case.regimes[0]
        answered(case, regime, tmp_path)


def refused(text: str, error: dict, tmp_path) -> None:
    """The text is refused with the error the case names: its class, and a message that
    matches (``{path}`` standing for the file's path when the case compiles a file)."""
    kind = getattr(errors, error["type"])
    if "file" in error:
        path = tmp_path / error["file"]
        path.write_text(text)
        with pytest.raises(kind, match=error["match"].replace("{path}", re.escape(str(path)))):
            compiler.compile_file(path)
    else:
        with pytest.raises(kind, match=error["match"]):
            compiler.compile(text, error.get("source", "<query>"))


def answered(case: Case, regime: str, tmp_path) -> None:
    windows = run(tmp_path, case.query, [tuple(s) for s in case["streams"]], case.get("background", ()), regime)
    found = answers(windows, *case["select"]) if "select" in case.fields else triples(windows)
    if case.get("nonempty_only"):  # windows are reported; only those with rows are compared
        assert found
        found = {c: rows for c, rows in found.items() if rows}
    assert found == case.expected()
    if "rdflib" in case.fields:
        reference = case["rdflib"]
        repository = Graph()
        for name in reference["repository"]:
            repository.parse(DATA / name)
        theirs = sorted(tuple(plain_rdflib(b[v]) for v in case["select"])
                        for b in rdflib_answer(reference["query"], [], [repository]))
        assert theirs == found[reference["window"]]


def plain_rdflib(term) -> object:
    """An rdflib term as ``support.plain`` prints an engine's: IRIs by local name, numbers as
    numbers, the rest as text."""
    if isinstance(term, URIRef):
        return local(str(term))
    value = term.toPython() if isinstance(term, Literal) else str(term)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
