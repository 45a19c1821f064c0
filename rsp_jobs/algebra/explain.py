"""A plan as text, one operator a line, children indented: what ``rsp explain`` prints and
what the optimizer's golden files (``tests/fixtures/optimizer/<rule>.txt``) hold as each case's
expected plan. Expressions and triple patterns are written in SPARQL syntax, so a plan reads
like the query it came from; a TA-SPARQL plan is written by ``algebra/tasparql/explain.py``."""

from __future__ import annotations

import dataclasses

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan
from rsp_jobs.algebra.tasparql import OneTimeQuery
from rsp_jobs.algebra.tasparql.explain import explain as explain_one_time
from rsp_jobs.language import ast
from rsp_jobs.tree import children, is_node


def explain(compiled: P.ContinuousQuery | RulePlan | RuleSetPlan | OneTimeQuery) -> str:
    if isinstance(compiled, OneTimeQuery):
        return explain_one_time(compiled)
    if isinstance(compiled, RuleSetPlan):
        lines = [f"RuleSet {' '.join(r.name for r in compiled.rules)}"]
        for group in compiled.groups:
            lines.append("  Instants of " + " ".join(compiled.rules[i].name for i in group.rules))
            for event in group.events:
                uses = [f"{compiled.rules[i].name}.{label}" for i, label in event.uses]
                if event.split:  # optimize.share_events_differing_in_an_iri
                    uses = [f"{use}={iri}" for use, iri in zip(uses, event.iris)] + [
                        f"split by ?{event.split}"
                    ]
                lines.append("    Event " + " ".join(uses))
                lines += ["    " + line for line in explain(event.query).splitlines()[1:]]
        for ids in compiled.candidates:
            lines.append("  Candidates of " + " ".join(compiled.rules[i].name for i in ids))
        return "\n".join(lines) + "\n"
    if isinstance(compiled, RulePlan):
        lines = [f"Rule {compiled.name}"]
        for condition in compiled.pushed:
            lines.append(f"  pushed to {next(iter(condition.labels))}: {expr(condition.expr)}")
        for rule_event in compiled.events:
            lines.append(f"  Event {' '.join(rule_event.labels)}")
            lines += ["  " + line for line in explain(rule_event.query).splitlines()[1:]]
        return "\n".join(lines) + "\n"
    lines = [f"{type(compiled).__name__} {compiled.name} {compiled.form} {compiled.r2s}"]
    for w in compiled.windows:
        lines.append(
            f"  Stream <{w.stream}> {_window(w.window)}" + (f" as <{w.graph}>" if w.graph else "")
        )
    if compiled.predicates is not None:
        lines.append("  predicates " + " ".join(sorted(compiled.predicates)))
    if compiled.window_solutions:
        lines.append("  windows solutions, not triples")
    lines += _node(compiled.plan, 1)
    return "\n".join(lines) + "\n"


def _node(node, depth: int) -> list[str]:
    pad = "  " * depth
    kids = [c for c in children(node) if _is_plan(c)]
    head = f"{pad}{type(node).__name__.rstrip('_')}"
    details = []
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if (
            _is_plan(value)
            or f.name == "position"
            or (f.name == "triples" and isinstance(node, P.BGP))
        ):
            continue
        if isinstance(node, P.Path) and f.name in ("subject", "path", "object", "position"):
            continue
        if value in (None, (), frozenset()) or (f.name == "offset" and value == 0):
            continue
        details.append(f"{f.name}={_value(value)}")
    lines = [head + (" " + " ".join(details) if details else "")]
    if isinstance(node, P.BGP):
        lines += [
            f"{pad}  {_term(t.subject)} {_term(t.predicate)} {_term(t.object)} ."
            for t in node.triples
        ]
    if isinstance(node, P.Path):
        lines.append(f"{pad}  {_term(node.subject)} {path(node.path)} {_term(node.object)} .")
    for child in kids:
        lines += _node(child, depth + 1)
    return lines


def path(p) -> str:
    """A property path in SPARQL syntax (bracketed where its parts are paths of two or more)."""
    if isinstance(p, ast.IRI):
        return _term(p)
    if isinstance(p, ast.PathInverse):
        return "^" + _path_part(p.path)
    if isinstance(p, ast.PathSequence):
        return "/".join(_path_part(s) for s in p.steps)
    if isinstance(p, ast.PathAlternative):
        return "|".join(_path_part(a) for a in p.alternatives)
    if isinstance(p, ast.PathNegated):
        members = [_term(i) for i in p.forward] + ["^" + _term(i) for i in p.inverse]
        return "!(" + "|".join(members) + ")"
    modifier = {ast.PathZeroOrMore: "*", ast.PathOneOrMore: "+", ast.PathZeroOrOne: "?"}
    inner = path(p.path)
    if not isinstance(p.path, (ast.IRI, ast.PathNegated)):
        inner = f"({inner})"
    return inner + modifier[type(p)]


def _path_part(p) -> str:
    text = path(p)
    return f"({text})" if isinstance(p, (ast.PathSequence, ast.PathAlternative)) else text


def _is_plan(value) -> bool:
    return is_node(value) and type(value).__module__ == P.__name__


def _value(value) -> str:
    if isinstance(value, P.TermsAt):
        return f"{value.position} of {value.predicate}"
    if isinstance(value, frozenset):
        return "{" + ",".join(sorted(map(str, value))) + "}"
    if isinstance(value, tuple):
        return "(" + " ".join(_value(v) for v in value) + ")"
    if isinstance(value, ast.OrderCondition):
        return ("DESC" if value.descending else "ASC") + f"({expr(value.expr)})"
    if is_node(value):
        return expr(value)
    return str(value)


def expr(e) -> str:
    """An expression in SPARQL syntax (operators fully parenthesized)."""
    if isinstance(e, (ast.Var, ast.IRI, ast.Literal, ast.BNode)):
        return _term(e)
    if isinstance(e, ast.BinaryOp):
        return f"({expr(e.left)} {e.op} {expr(e.right)})"
    if isinstance(e, ast.UnaryOp):
        return f"{e.op}{expr(e.operand)}"
    if isinstance(e, ast.FunctionCall):
        return f"{e.name}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, ast.In):
        return f"({expr(e.expr)} {'NOT IN' if e.negated else 'IN'} ({', '.join(expr(o) for o in e.options)}))"
    if isinstance(e, ast.Aggregate):
        arg = "*" if e.arg is None else expr(e.arg)
        return f"{e.name.upper()}({'DISTINCT ' if e.distinct else ''}{arg})"
    if isinstance(e, ast.Timestamp):
        return f"timestamp({_term(e.subject)}, {_term(e.predicate)}, {_term(e.object)})"
    if isinstance(e, ast.TriplePattern):
        return f"{_term(e.subject)} {_term(e.predicate)} {_term(e.object)}"
    return type(e).__name__ + "(" + ", ".join(expr(c) for c in children(e)) + ")"


def _term(t) -> str:
    if isinstance(t, ast.Var):
        return f"?{t.name}"
    if isinstance(t, ast.BNode):
        return f"_:{t.label}"
    if isinstance(t, ast.IRI):
        return f"<{t.value}>"
    if isinstance(t, ast.Literal):
        text = '"' + t.lexical.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return text + (f"@{t.lang}" if t.lang else f"^^<{t.datatype}>" if t.datatype else "")
    return expr(t)


def _window(window) -> str:
    if isinstance(window, ast.TimeWindow):
        return f"[RANGE {window.range_ms}ms STEP {window.step_ms}ms]"
    if isinstance(window, ast.CountWindow):
        return f"[TRIPLES {window.triples}]"
    return "(whole stream)"
