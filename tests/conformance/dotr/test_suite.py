"""DOTR's conformance suite: every case of ``cases/*.toml`` (the rules the paper prints, §3 and
§5, and its operators one by one) run through one function, on Spark and on the brute-force
evaluator (``support.run`` asserts that both give the same matches and consumed facts), against
the facts derived per instant that the case works out by hand. ``README.md`` gives the format;
a case the engine does not meet is a strict expected failure with its reason. A rule that
cannot run is a case too: its ``error`` names the file, line and column and the message."""
from __future__ import annotations

from pathlib import Path

import pytest

from rsp_jobs.errors import QuerySyntaxError
from tests.conformance import casefiles
from tests.conformance.dotr import brute_force as ref
from tests.conformance.dotr.support import EPOCH_US, MINUTE, SECOND, outputs, rule, run

CASES = casefiles.load(Path(__file__).parent / "cases")
UNITS = {"minute": MINUTE, "second": SECOND}


def rule_text(case: casefiles.Case) -> str:
    """The named texts of ``rule`` one after the other (a Datalog header before its rule), each
    in its restored form, or the case's own ``text``; then the case's ``edits``."""
    where = f"{case.file}: {case.id}"
    if "text" in case:
        text = case["text"]
    else:
        text = "".join(casefiles.text_of(case.named("rules", n), "restored", where) for n in case["rule"])
    return casefiles.edit(text, case.get("edits", []), where)


def stream_of(case: casefiles.Case) -> dict[float, str]:
    """The named ``streams`` merged in order, then the case's own ``instants`` (a later graph
    for an instant replaces an earlier one)."""
    graphs: dict[float, str] = {}
    for table in [case.named("streams", n) for n in case.get("streams", [])] + [case.get("instants", {})]:
        graphs.update({float(t): text for t, text in table.items()})
    return graphs


def knowledge_of(case: casefiles.Case) -> str:
    return "\n".join(case.named("knowledge", n) for n in case.get("knowledge", []))


def _time(key: str, unit: int) -> float:
    """The instant of a fact from its key, ``label@<µs>#digest[.copy]``."""
    return (int(key.split("@", 1)[1].split("#", 1)[0]) - EPOCH_US) / unit


@pytest.mark.parametrize("case", casefiles.params([c for c in CASES if "error" in c]))
def test_rule_that_cannot_run(case):
    """A case with ``error``: compiling the rule fails at ``file:at`` with ``message``."""
    source = case.get("source", "rule.dotr")
    with pytest.raises(QuerySyntaxError) as err:
        rule(rule_text(case), source)
    assert str(err.value).startswith(f"{source}:{case['error']['at']}"), str(err.value)
    assert case["error"]["message"] in str(err.value), str(err.value)


@pytest.mark.parametrize("case", casefiles.params([c for c in CASES if "error" not in c]))
def test_case(spark, case):
    unit = UNITS[case.get("unit", "minute")]
    r = rule(rule_text(case), case.get("source", "rule.dotr"))
    if "bound" in case:
        assert r.bound_us == case["bound"] * unit
    matches, consumed = run(spark, r, stream_of(case), knowledge_of(case), unit=unit)
    matches = sorted(matches, key=lambda m: ref.comparable([m]))  # the order ``outputs`` gives
    want = [{"at": float(d["at"]), "triples": sorted(d["triples"]),
             **({"facts": {n: float(t) for n, t in d["facts"].items()}} if "facts" in d else {})}
            for d in sorted(case["derived"], key=lambda d: (d["at"], sorted(d["triples"])))]
    got = [{"at": t, "triples": lines} for t, lines in outputs(matches, unit)]
    for i, (g, m) in enumerate(zip(got, matches, strict=True)):
        if i < len(want) and "facts" in want[i]:
            g["facts"] = {n: _time(m["facts"][n], unit) for n in want[i]["facts"]}
    assert got == want
    _check_consumed(case, matches, consumed)
    if "fresh" in case:
        _check_fresh(case["fresh"], r.name, matches)


def _check_consumed(case: casefiles.Case, matches: list[dict], consumed: set[str]) -> None:
    """``consumed.count`` facts newly used up; ``facts_of``: exactly the matches' facts of that
    label, a distinct one each; ``copies``: the copy numbers their keys carry (equal solutions
    of one instant are distinct facts, §4)."""
    spec = case.get("consumed")
    if spec is None:
        return
    assert len(consumed) == spec["count"]
    if "facts_of" in spec:
        used = [m["facts"][spec["facts_of"]] for m in matches]
        assert sorted(used) == sorted(consumed) and len(set(used)) == len(used)
        assert all(k.startswith(spec["facts_of"] + "@") for k in consumed)
    if "copies" in spec:
        assert sorted(k.rsplit("#", 1)[1].count(".") for k in consumed) == spec["copies"]


def _check_fresh(name: str, rule_name: str, matches: list[dict]) -> None:
    """Each output graph has its own fresh node for ``name`` (§3 ``define``: ``dotr_id1`` is new
    per match), an IRI of the rule's matches."""
    fresh = {line.split(" ")[0] for m in matches for line in m["triples"]}
    assert len(fresh) == len(matches)
    assert all(f.startswith(f"<urn:rsp:rule:{rule_name}/match/") and f.endswith(f"/{name}>") for f in fresh)


def test_the_rule_grammar_has_no_lalr_conflicts(caplog):
    """The paper's syntax beside the older one (bracketed templates, captions, Datalog rules,
    `between`): lark would resolve a shift/reduce conflict silently, as a shift."""
    from lark import Lark

    from rsp_jobs.language.dotr import _GRAMMAR

    with caplog.at_level("DEBUG", logger="lark"):
        Lark.open(str(_GRAMMAR), parser="lalr", debug=True)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]
