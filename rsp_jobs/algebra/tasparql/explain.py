"""A TA-SPARQL plan as text, one operator a line, children indented (what ``rsp explain``
prints). Selectors, patterns and expressions are written as TA-SPARQL writes them.

    >>> from rsp_jobs.algebra.tasparql import plan
    >>> from rsp_jobs.language.tasparql import parse
    >>> print(explain(plan(parse("SELECT ?h WHERE { ?x[LAST] <urn:height> ?h FILTER(?h > 2) }"))), end="")
    Project ?h
      Filter (?h > 2)
        Frames
          Scan ?x[LAST]
            ?x <urn:height> ?h
"""

from __future__ import annotations

from rsp_jobs.algebra.tasparql import expressions as E
from rsp_jobs.algebra.tasparql import nodes as N
from rsp_jobs.times import datetime_lexical


def explain(query: N.OneTimeQuery) -> str:
    """The modifiers outermost, as SPARQL 1.1 §18.2.5 applies them last: Slice(Distinct(
    Project(OrderBy(Group(Filter(pattern))))))."""
    chain = []
    if query.limit is not None or query.offset is not None:
        chain.append(
            "Slice"
            + "".join(
                f" {name}={value}"
                for name, value in (("limit", query.limit), ("offset", query.offset))
                if value is not None
            )
        )
    if query.distinct:
        chain.append("Distinct")
    chain.append("Project " + " ".join(_item(p) for p in query.items))
    if query.order:
        chain.append("OrderBy " + " ".join(_order_key(key, query) for key in query.order))
    if query.group is not None:
        having = "" if query.group.having is None else f" having={expr(query.group.having)}"
        chain.append("Group (" + " ".join(expr(k) for k in query.group.keys) + ")" + having)
    if query.filters:
        chain.append("Filter " + " ".join(expr(c) for c in query.filters))
    lines = ["  " * depth + line for depth, line in enumerate(chain)]
    lines += _pattern(query.where, len(chain))
    return "\n".join(lines) + "\n"


def _item(projection: N.Projection) -> str:
    written = expr(projection.expr)
    return written if written == f"?{projection.name}" else f"({written} AS ?{projection.name})"


def _order_key(key: N.OrderKey, query: N.OneTimeQuery) -> str:
    if key.item is not None:
        written = f"?{query.items[key.item].name}"
    elif key.expr is not None:
        written = expr(key.expr)
    else:
        raise ValueError("an ORDER BY key names neither a value nor a projected item")
    return f"DESC({written})" if key.descending else written


def _pattern(node: N.Pattern, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(node, N.Frames):
        lines = [f"{pad}Frames"]
        for scan in node.scans:
            lines += _scan(scan, depth + 1)
        lines += [
            f"{pad}  Link {_slot(link.subject)} {_slot(link.predicate)} stream of ?{link.frame}"
            for link in node.links
        ]
        lines += [
            f"{pad}  Invariant {_slot(p.subject)} {_slot(p.predicate)} {_slot(p.object)}"
            for p in node.invariants
        ]
        return lines
    if isinstance(node, N.Filter):
        return [
            f"{pad}Filter " + " ".join(expr(c) for c in node.conditions),
            *_pattern(node.input, depth + 1),
        ]
    if isinstance(node, N.LeftJoin):
        head = f"{pad}LeftJoin" + "".join(" " + expr(c) for c in node.filters)
        return [head, *_pattern(node.left, depth + 1), *_pattern(node.right, depth + 1)]
    if isinstance(node, N.Join):
        return [f"{pad}Join", *_pattern(node.left, depth + 1), *_pattern(node.right, depth + 1)]
    if isinstance(node, N.Union_):
        return [f"{pad}Union"] + [
            line for branch in node.branches for line in _pattern(branch, depth + 1)
        ]
    return [f"{pad}Unit"]


def _scan(scan: N.FrameScan, depth: int) -> list[str]:
    """``Scan ?x[sel] in <stream>``; a frame of ``<stream>[sel]`` is written so."""
    pad = "  " * depth
    streams = [_slot(s) for s in scan.streams]
    frame = streams.pop(0) if scan.hidden else f"?{scan.frame}"
    lines = [
        f"{pad}Scan {frame}{selector(scan.selector)}"
        + (" in " + " ".join(streams) if streams else "")
    ]
    for p in scan.patterns:
        triple = f"{_slot(p.predicate)} {_slot(p.object)}"
        lines.append(
            f"{pad}  {frame} {triple}"
            if p.subject is None
            else f"{pad}  GRAPH {frame} {{ {_slot(p.subject)} {triple} }}"
        )
    lines += [f"{pad}  {frame} dsv:hasTimestamp {_slot(stamp)}" for stamp in scan.stamps]
    return lines


def selector(sel: N.Selector) -> str:
    """``[*]``, ``[FIRST]``, ``[LAST]``, ``[t]``, or an interval, ``[t1 .. t2]`` or, its end
    excluded (an xsd:date's day), ``[t1 .. t2)``."""
    if isinstance(sel, N.Every):
        return "[*]"
    if isinstance(sel, (N.First, N.Last)):
        return f"[{type(sel).__name__.upper()}]"
    start, end = datetime_lexical(sel.start), datetime_lexical(sel.end)
    if isinstance(sel, N.At) and sel.start == sel.end and sel.end_included:
        return f"[{start}]"
    return f"[{start} .. {end}" + ("]" if sel.end_included else ")")


def _slot(slot) -> str:
    if isinstance(slot, N.Constant):
        return slot.nt
    if isinstance(slot, E.Time):
        return expr(slot)
    return f"?{slot.var}"


def expr(e: E.Typed) -> str:
    """An expression in TA-SPARQL syntax (operators fully parenthesized)."""
    if isinstance(e, E.Number):
        return e.exact if e.exact is not None else repr(e.value)
    if isinstance(e, E.Time):
        return f'"{datetime_lexical(e.value)}"^^xsd:dateTime'
    if isinstance(e, E.Boolean):
        return "true" if e.value else "false"
    if isinstance(e, E.Term):
        return e.nt
    if isinstance(e, E.FrameTime):
        return f"?{e.var}.t"
    if isinstance(e, (E.TermOf, E.FrameOf, E.TimeOf)):
        return f"?{e.var}"
    if isinstance(e, E.Logical):
        return f"!{expr(e.left)}" if e.right is None else f"({expr(e.left)} {e.op} {expr(e.right)})"
    if isinstance(e, E.Negate):
        return f"-{expr(e.operand)}"
    if isinstance(e, (E.Arithmetic, E.Compare)):
        return f"({expr(e.left)} {e.op} {expr(e.right)})"
    if isinstance(e, E.Function):
        return f"{e.name.upper()}({', '.join(expr(a) for a in e.args)})"
    arg = "*" if e.arg is None else expr(e.arg)
    return f"{e.name.upper()}({'DISTINCT ' if e.distinct else ''}{arg})"
