"""The DOTR rule parser's errors on WITH items (parsed as SPARQL expressions)."""
from __future__ import annotations

import pytest

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language.dotr import parse_rule

RULE = """PREFIX ex: <http://ex.org/>
define Out { [] a ex:Out ; ex:v ?v }
from A = [SELECT ?x WHERE { ?x a ex:A }]
with {with}
"""


@pytest.mark.parametrize("item, column", [
    ("A.?x > 1) BIND (2 AS ?y", 6),
    ("A.?x > 1) } UNION { FILTER (1", 6),
    ("?v = A.?x, A.?x > 1) FILTER (2", 17),
])
def test_a_with_item_that_closes_its_parenthesis_is_an_error(item, column):
    """Each item is parsed wrapped in ``FILTER ( ... )``; one that closes the parenthesis and
    writes more patterns is a syntax error at the item, not an internal error."""
    with pytest.raises(QuerySyntaxError) as info:
        parse_rule(RULE.replace("{with}", item), "r.dotr")
    assert str(info.value) == (
        f"r.dotr:4:{column}: a WITH item is one expression (items are separated by commas)"
    )


def test_with_items_assign_and_constrain():
    rule = parse_rule(RULE.replace("{with}", "?v = A.?x, A.?x != ex:none"), "r.dotr")
    assert [(a.var, a.text) for a in rule.assignments] == [("v", "?v = A.?x")]
    assert [c.text for c in rule.conditions] == ["A.?x != ex:none"]

