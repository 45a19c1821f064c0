"""EP-SPARQL's conformance suite: every case of ``cases/*.toml`` (the paper's example queries of
§3.1 as printed and restored, and the decisions where §3.2 is silent or contradicts itself) run
through one function, on Spark and on the brute-force evaluator (``support.run`` asserts that
both give the same), against the answers the case works out by hand. ``README.md`` gives the
format; a case the engine does not meet is a strict expected failure with its reason."""
from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Graph
from rdflib.compare import to_canonical_graph

from rsp_jobs import compiler
from rsp_jobs.errors import QuerySyntaxError
from tests.conformance import casefiles
from tests.conformance.epsparql.support import DAY, EPOCH_US, EX, PREFIXES, rows, run, stream

CASES = casefiles.load(Path(__file__).parent / "cases")
ERRORS = {"QuerySyntaxError": QuerySyntaxError}
NUMERIC = {f"http://www.w3.org/2001/XMLSchema#{t}" for t in ("integer", "decimal", "double", "float", "int", "long")}


def query_text(case: casefiles.Case) -> str:
    """The case's query: a named query in the case's ``form`` (default: restored), or its own
    ``text``; then the case's ``edits``."""
    where = f"{case.file}: {case.id}"
    if "text" in case:
        text = case["text"]
    else:
        text = casefiles.text_of(case.named("queries", case["query"]), case.get("form", "restored"), where)
    return casefiles.edit(text, case.get("edits", []), where)


def rule_texts(case: casefiles.Case) -> tuple[str, ...]:
    """The CONSTRUCT queries whose closure the case's stream is (§3.2), each in its restored form."""
    return tuple(casefiles.text_of(case.named("queries", n), "restored", f"{case.file}: {case.id}")
                 for n in case.get("rules", []))


def events_of(case: casefiles.Case):
    """The named ``streams`` in order, then the case's own ``events``."""
    rows_ = [row for name in case.get("streams", []) for row in case.named("streams", name)]
    return stream(*(tuple(r) for r in rows_ + case.get("events", [])))


def _term(binding: dict):
    if binding["type"] == "uri":
        return ":" + binding["value"][len(EX):] if binding["value"].startswith(EX) else f"<{binding['value']}>"
    if binding.get("datatype") in NUMERIC:
        return float(binding["value"])
    return binding["value"]


def _graph(turtle: str, fmt: str = "turtle") -> list[str]:
    """A graph as sorted N-Triples lines with canonical blank nodes: equal iff isomorphic."""
    graph = Graph().parse(data=(PREFIXES.replace("PREFIX", "@prefix").replace(">\n", "> .\n") + turtle
                                if fmt == "turtle" else turtle), format=fmt)
    return sorted(to_canonical_graph(graph).serialize(format="nt").splitlines())


def observed(match: dict, keys=None) -> dict:
    """A match in the answers' terms (those ``keys`` of them an answer gives; without, all but
    the frames): its interval in days, its bindings, its triples, the days of the stream frames
    behind it."""
    out = {"interval": [(match["start_us"] - EPOCH_US) / DAY, (match["end_us"] - EPOCH_US) / DAY]}
    if "bindings" in match:
        out["bindings"] = {n: _term(b) for n, b in match["bindings"].items()}
    if "triples" in match:
        out["triples"] = _graph("\n".join(match["triples"]), "nt")
    if keys is not None and "frames" in keys:
        out["frames"] = [float(f.rsplit("/", 1)[1]) for f in match["events"]]
    return out if keys is None else {k: v for k, v in out.items() if k in keys}


def expected(answer: dict) -> dict:
    out = {"interval": [float(t) for t in answer["interval"]]}
    if "bindings" in answer:
        out["bindings"] = {n: float(v) if isinstance(v, int | float) else v for n, v in answer["bindings"].items()}
    if "triples" in answer:
        out["triples"] = _graph(answer["triples"])
    if "frames" in answer:
        out["frames"] = [float(d) for d in answer["frames"]]
    return out


@pytest.mark.parametrize("case", casefiles.params([c for c in CASES if "error" in c]))
def test_printed_query_that_cannot_run(case):
    """A case with ``error``: compiling the query raises it (its message containing ``message``)."""
    error = case["error"]
    with pytest.raises(ERRORS[error["type"]]) as err:
        compiler.compile(PREFIXES + query_text(case), "q.rsp")
    assert error.get("message", "") in str(err.value), str(err.value)


@pytest.mark.parametrize("case", casefiles.params([c for c in CASES if "error" not in c]))
def test_case(spark, case):
    text = query_text(case)
    if "bound_days" in case:
        assert compiler.compile(PREFIXES + text).bound_us == case["bound_days"] * DAY
    matches = run(spark, text, events_of(case), rules=rule_texts(case))
    if "sparql" in case:
        _same_as_sparql(case, matches)
        return
    want = [expected(a) for a in case["answers"]]
    got = [observed(m, want[i] if i < len(want) else None) for i, m in enumerate(matches)]
    assert got == want


def _same_as_sparql(case: casefiles.Case, matches: list[dict]) -> None:
    """§3.2's downward compatibility: over one time stamp, SPARQL's solutions (rdflib's over the
    stream's triples as one graph), each over [t, t]."""
    reference = case["sparql"]
    graph = Graph()
    for e in events_of(case):
        graph.parse(data=f"{e.s} {e.p} {e.o} .", format="nt")
    result = graph.query(PREFIXES + reference["query"])
    names = [str(v) for v in result.vars]
    want = sorted((tuple(None if row[v] is None else str(row[v]) for v in names) for row in result), key=str)
    found = rows(matches, *names)
    assert all(list(r[:2]) == reference["interval"] for r in found)
    assert sorted((tuple(r[2:]) for r in found), key=str) == want and want
