"""The Datalog rules of a DOTR rule file: errors point at the offending argument."""
from __future__ import annotations

import pytest

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language.dotr import parse_rule

RULE = """PREFIX ex: <http://ex.org/>
{datalog}
define Out { [] a ex:Out }
from A = [SELECT ?x WHERE { ?x a ex:A }]
"""


@pytest.mark.parametrize("datalog, message", [
    ("ex:p(?a, ?z) :- ex:q(?a, ?b).",
     "2:10: ?z of the head occurs in no body atom: a Datalog rule must be safe"),
    ('ex:p("lit", ?b) :- ex:q(?a, ?b).', "2:6: a literal cannot be the subject of a triple"),
])
def test_datalog_errors_point_at_the_argument(datalog, message):
    text = RULE.replace("{datalog}", datalog)
    with pytest.raises(QuerySyntaxError) as info:
        parse_rule(text, "r.dotr")
    assert str(info.value).startswith(f"r.dotr:{message}")
