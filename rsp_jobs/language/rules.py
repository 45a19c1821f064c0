"""Parse DOTR temporal rules (``queries/<app>/<name>.dotr``) into a ``Rule``.

A rule (Margara, Cugola, Collavini, Dell'Aglio, ESWC 2018, section 4) names the situation it
derives, the events it combines and how: a trigger event ``A``, further events selected
``last``, ``first`` or ``each`` within a time bound before another event, events that must
``not`` occur, aggregates, and the events a match ``consuming``s. Its events are not atomic
here: each is a SPARQL SELECT query over one time instant's graph (DOTR section 3: ontological
reasoning is decoupled from temporal reasoning and done per instant).

    PREFIX ex: <http://ex.org/>
    FROM STREAM <http://ex.org/sensors>
    define Fire { [] a ex:Fire ; ex:area ?area }
    from S = [SELECT ?area WHERE { ?e a ex:Smoke ; ex:area ?area }]
    and last T = [SELECT ?area ?v WHERE { ?e a ex:Temp ; ex:area ?area ; ex:value ?v }]
        within 5 min from S
    with S.?area = T.?area, T.?v > 45, ?area = S.?area
    consuming T

``dotr.lark`` finds the parts; everything SPARQL in them (the bracketed SELECT bodies, the
``define`` template, the ``with`` expressions) is parsed by the SPARQL parser of
``parser.py``, handed the rule text with all else blanked so that its errors name the rule's
own file, line and column. ``L.?x`` (variable ``?x`` of event ``L``) becomes the SPARQL
variable ``?L·x``, which is as long, so positions are kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Optional, Union

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from rsp_jobs.errors import QuerySyntaxError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.language.diagnostics import syntax_error, terminal_display
from rsp_jobs.language.parser import parse_query

__all__ = ["Rule", "Predicate", "Within", "Aggregate", "Condition", "Assignment",
           "parse_rule", "parse_rule_file", "qualified", "split_qualified", "expr_vars"]

_GRAMMAR = Path(__file__).with_name("dotr.lark")
SEP = "\u00b7"  # joins label and variable: A.?x is the variable ?A·x
_UNIT_US = {"ms": 1000, "s": 1_000_000, "min": 60_000_000, "h": 3_600_000_000, "d": 86_400_000_000}
_UNIT = {"ms": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "min",
         "mins": "min", "minute": "min", "minutes": "min", "h": "h", "hour": "h", "hours": "h",
         "d": "d", "day": "d", "days": "d"}
AGGREGATES = ("avg", "sum", "count", "min", "max")


def qualified(label: str, var: str) -> str:
    return f"{label}{SEP}{var}"


def split_qualified(name: str) -> Optional[tuple[str, str]]:
    label, sep, var = name.partition(SEP)
    return (label, var) if sep else None


@dataclass(frozen=True)
class Within:
    """``within <us> from <ref>``: a fact at t with ``t_ref - us <= t < t_ref``."""

    us: int
    ref: str


@dataclass(frozen=True)
class Predicate:
    """One event of the rule. ``kind``: ``trigger`` (A), ``positive`` (with ``policy`` last,
    first or each), ``negative`` (not) or ``aggregated`` (only read by aggregates)."""

    label: str
    kind: str
    policy: Optional[str]
    query: ast.Query
    within: Optional[Within]
    position: ast.Position


@dataclass(frozen=True)
class Aggregate:
    """``fn(L.?var within d from R)``, bound to the placeholder variable ``placeholder``."""

    fn: str
    label: str
    var: str
    within: Within
    placeholder: str


@dataclass(frozen=True)
class Condition:
    expr: ast.Expr
    labels: frozenset[str]
    aggregates: frozenset[str]  # placeholders it reads
    position: ast.Position


@dataclass(frozen=True)
class Assignment:
    var: str
    expr: ast.Expr
    position: ast.Position


@dataclass(frozen=True)
class Rule:
    name: str
    source: str
    text: str
    streams: tuple[str, ...]
    graphs: tuple[ast.GraphClause, ...]
    entailment: str
    template: tuple[ast.TriplePattern, ...]
    predicates: tuple[Predicate, ...]
    conditions: tuple[Condition, ...]
    assignments: tuple[Assignment, ...]
    aggregates: tuple[Aggregate, ...]
    consumes: frozenset[str]

    # A rule's matches instantiate its ``define`` template: its output is a derived RDF
    # stream, stored and scheduled like a CONSTRUCT query's (store/results.py, the DAG factory).
    form = "CONSTRUCT"
    derives_stream = True

    @property
    def trigger(self) -> Predicate:
        return self.predicates[0]

    def predicate(self, label: str) -> Predicate:
        return next(p for p in self.predicates if p.label == label)

    def reach_us(self, label: str) -> int:
        """How far before the trigger a fact of ``label`` can lie."""
        p = self.predicate(label)
        return 0 if p.within is None else p.within.us + self.reach_us(p.within.ref)

    @property
    def bound_us(self) -> int:
        """How far before a match's time its facts can lie: what a run must read back."""
        reaches = [self.reach_us(p.label) for p in self.predicates if p.within is not None]
        reaches += [a.within.us + self.reach_us(a.within.ref) for a in self.aggregates]
        return max(reaches, default=0)


def parse_rule_file(path: Union[str, Path]) -> Rule:
    return parse_rule(Path(path).read_text(encoding="utf-8"), source=str(path))


def parse_rule(text: str, source: str = "<rule>") -> Rule:
    """Parse one rule; errors are ``QuerySyntaxError``s naming ``source:line:col``."""
    try:
        tree = _parser().parse(text)
    except (UnexpectedToken, UnexpectedCharacters) as err:
        raise syntax_error(err, text, source, _display()) from None
    return _Builder(text, source).build(tree)


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
                propagate_positions=True)


@cache
def _display() -> dict[str, str]:
    return terminal_display(_parser(), {
        "IRIREF": "IRI", "PNAME_LN": "prefixed name", "PNAME_NS": "prefix", "LABEL": "event label",
        "NAME": "rule name", "BODY": "[SELECT ...]", "TEMPLATE": "{ template }", "INT": "integer",
        "UNIT": "time unit (ms, s, min, h, d)", "POLICY": "LAST, FIRST or EACH", "NOT": "NOT",
        "WITH_TEXT": "conditions", "REGIME": "simple, rdfs or rdfs++", "$END": "end of input"})


_QUALIFIED = re.compile(r"(?<![\w?$:/#.])([A-Za-z][A-Za-z0-9_]*)\.\?(\w+)")
_AGGREGATE = re.compile(
    r"\b(avg|sum|count|min|max)\s*\(\s*([A-Za-z][A-Za-z0-9_]*)\.\?(\w+)\s+within\s+(\d+)\s*([A-Za-z]+)"
    r"\s+from\s+([A-Za-z][A-Za-z0-9_]*)\s*\)", re.IGNORECASE)


class _Builder:
    """Walks the lark tree; hands SPARQL parts to ``parse_query`` with the rest blanked."""

    def __init__(self, text: str, source: str):
        self.text, self.source = text, source
        self.prologue: list[str] = []
        self.prefixes: dict[str, str] = {}
        self.base: Optional[str] = None

    # ------------------------------------------------------------------ helpers

    def _pos(self, offset: int) -> ast.Position:
        line = self.text.count("\n", 0, offset) + 1
        return ast.Position(line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1)

    def _error(self, offset: int, message: str) -> QuerySyntaxError:
        pos = self._pos(offset)
        return QuerySyntaxError(self.source, pos.line, pos.column, message)

    def _sparql(self, start: int, end: int, replacement: str, before: str = "", after: str = "") -> ast.Query:
        """Parse ``replacement`` (the text at ``start:end``, rewritten to the same length) as
        SPARQL: the prologue and ``before`` on a first line of their own, then the rule text
        blanked except for that span, then ``after``. Errors are moved back one line."""
        blank = re.sub(r"[^\n]", " ", self.text)
        body = blank[:start] + replacement + blank[end:]
        wrapper = " ".join(self.prologue + [before]) + "\n" + body + "\n" + after
        try:
            return parse_query(wrapper, self.source)
        except QuerySyntaxError as err:
            head = f"{err.source}:{err.line}:{err.column}: "
            message = str(err)[len(head):].split("; expected one of: ")[0]
            raise QuerySyntaxError(self.source, max(err.line - 1, 1), err.column, message,
                                   err.expected) from None
        except UnsupportedConstruct as err:
            match = re.match(rf"{re.escape(self.source)}:(\d+):(\d+):", str(err))
            if not match:
                raise
            raise UnsupportedConstruct(self.source, err.construct, int(match[1]) - 1,
                                       int(match[2])) from None

    def _iri(self, tree: Tree) -> str:
        (token,) = tree.children
        if token.type == "IRIREF":
            return token[1:-1]
        prefix, _, local = token.partition(":")
        if prefix not in self.prefixes:
            raise self._error(token.start_pos, f"undeclared prefix {prefix + ':'!r}")
        return self.prefixes[prefix] + local

    def _qualify(self, start: int, end: int) -> str:
        """The text at ``start:end`` with ``L.?x`` written ``?L·x`` (same length)."""
        return _QUALIFIED.sub(lambda m: f"?{m[1]}{SEP}{m[2]}", self.text[start:end])

    def _duration(self, number: str, unit: Token) -> int:
        return int(number) * _UNIT_US[_UNIT[unit.lower()]]

    # ------------------------------------------------------------------ the rule

    def build(self, tree: Tree) -> Rule:
        prologue, *rest = tree.children
        for decl in prologue.children:
            self.prologue.append(self.text[decl.meta.start_pos:decl.meta.end_pos])
            if decl.data == "prefix_decl":
                name, iri = decl.children
                self.prefixes[name[:-1]] = iri[1:-1]
        streams, graphs, entailment = [], [], "simple"
        name, template, predicates, with_text, consumed = None, None, [], None, []
        for child in rest:
            if isinstance(child, Token):
                if child.type == "NAME":
                    name = str(child)
                elif child.type == "TEMPLATE":
                    template = child
                continue
            if child.data == "from_stream":
                streams.append(self._iri(child.children[0]))
            elif child.data == "from_graph":
                graphs.append(ast.GraphClause(self._iri(child.children[0]), False,
                                              ast.Position(child.meta.line, child.meta.column)))
            elif child.data == "entailment":
                entailment = child.children[0].lower()
            elif child.data in ("trigger", "positive", "negative", "aggregated"):
                predicates.append(self._predicate(child))
            elif child.data == "with_clause":
                with_text = child.children[0]
            elif child.data == "consuming":
                consumed = list(child.children)
        if not streams:
            raise self._error(0, "the rule reads no stream (add FROM STREAM <iri>)")
        self._check_labels(predicates)
        aggregates, conditions, assignments = self._with(with_text, predicates) if with_text else ([], [], [])
        kinds = {p.label: p.kind for p in predicates}
        for p in predicates:
            if p.kind == "aggregated" and not any(a.label == p.label for a in aggregates):
                raise self._error_at(p.position, f"event {p.label} is read by no aggregate "
                                                 f"(give it LAST, FIRST, EACH or NOT and a WITHIN)")
        for token in consumed:
            if token not in kinds:
                raise self._error(token.start_pos, f"unknown event label {str(token)!r}")
            if kinds[token] not in ("trigger", "positive"):
                raise self._error(token.start_pos, f"only selected events can be consumed, not {str(token)!r}")
        start = template.start_pos
        construct = self._sparql(start, template.end_pos, self._qualify(start, template.end_pos),
                                 before="CONSTRUCT", after="WHERE {}")
        self._check_template(construct.template, kinds, assignments, start)
        return Rule(name=name or _default_name(self.source), source=self.source, text=self.text,
                    streams=tuple(streams), graphs=tuple(graphs), entailment=entailment,
                    template=construct.template, predicates=tuple(predicates),
                    conditions=tuple(conditions), assignments=tuple(assignments),
                    aggregates=tuple(aggregates), consumes=frozenset(map(str, consumed)))

    def _error_at(self, pos: ast.Position, message: str) -> QuerySyntaxError:
        return QuerySyntaxError(self.source, pos.line, pos.column, message)

    def _predicate(self, tree: Tree) -> Predicate:
        children = list(tree.children)
        policy = None
        if tree.data == "positive":
            policy = children.pop(0).lower()
        elif tree.data == "negative":
            children.pop(0)
        label, body, *scope = children
        stripped = body[1:-1]
        if not re.match(r"\s*select\b", stripped, re.IGNORECASE):
            raise self._error(body.start_pos + 1, f"event {label} must be a [SELECT ...] query")
        query = self._sparql(body.start_pos + 1, body.end_pos - 1, stripped)
        if query.streams or query.graphs:
            clause = (query.streams + query.graphs)[0]
            raise self._error_at(clause.position, "FROM clauses go at the top of the rule, not in an event")
        within = None
        if scope and scope[0] is not None:
            (duration, ref) = scope[0].children
            within = Within(self._duration(*duration.children), str(ref))
            self._refs = getattr(self, "_refs", []) + [(ref, label)]
        elif tree.data in ("positive", "negative"):
            raise self._error(label.end_pos, f"{(policy or 'not').upper()} {label} needs "
                                             f"WITHIN <duration> FROM <event>")
        kind = "trigger" if tree.data == "trigger" else tree.data
        return Predicate(str(label), kind, policy, query, within, self._pos(label.start_pos))

    def _check_labels(self, predicates: list[Predicate]) -> None:
        seen: dict[str, Predicate] = {}
        for p in predicates:
            if p.label in seen:
                raise self._error_at(p.position, f"event label {p.label!r} is declared twice")
            if p.within is not None:
                ref = next(r for r, owner in self._refs if owner == p.label)
                target = seen.get(p.within.ref)
                if target is None or target.kind not in ("trigger", "positive"):
                    raise self._error(ref.start_pos, f"WITHIN ... FROM {p.within.ref}: no earlier selected "
                                                     f"event is labelled {p.within.ref!r}")
            seen[p.label] = p

    # ------------------------------------------------------------------ with

    def _with(self, token: Token, predicates: list[Predicate]):
        kinds = {p.label: p.kind for p in predicates}
        aggregates: list[Aggregate] = []
        conditions: list[Condition] = []
        assignments: list[Assignment] = []
        for start, end in _split_items(self.text, token.start_pos, token.end_pos):
            rewritten = list(self._qualify(start, end))
            for m in _AGGREGATE.finditer(self.text, start, end):
                fn, label, var, number, unit, ref = m.groups()
                if label not in kinds:
                    raise self._error(m.start(2), f"unknown event label {label!r}")
                if kinds[label] != "aggregated":
                    raise self._error(m.start(2), f"aggregates read events declared as `and {label} = [...]` "
                                                  f"(no LAST/FIRST/EACH/NOT); {label} is not")
                if ref not in kinds or kinds[ref] not in ("trigger", "positive"):
                    raise self._error(m.start(6), f"WITHIN ... FROM {ref}: no selected event is labelled {ref!r}")
                if unit.lower() not in _UNIT:
                    raise self._error(m.start(5), f"unknown time unit {unit!r}")
                placeholder = f"__g{len(aggregates)}"
                aggregates.append(Aggregate(fn.lower(), label, var, Within(
                    int(number) * _UNIT_US[_UNIT[unit.lower()]], ref), placeholder))
                text = f"?{placeholder}"
                span = self.text[m.start():m.end()]
                filler = text + "".join("\n" if c == "\n" else " " for c in span[len(text):])
                rewritten[m.start() - start:m.end() - start] = list(filler)
            query = self._sparql(start, end, "".join(rewritten), before="SELECT * WHERE { FILTER (", after=") }")
            (element,) = query.where.elements
            expr = element.expr
            pos = self._pos(start + len(self.text[start:end]) - len(self.text[start:end].lstrip()))
            if (isinstance(expr, ast.BinaryOp) and expr.op == "=" and isinstance(expr.left, ast.Var)
                    and split_qualified(expr.left.name) is None and not expr.left.name.startswith("__g")):
                self._check_vars(expr.right, kinds, start, end, allow_aggregated=False)
                assignments.append(Assignment(expr.left.name, expr.right, pos))
                continue
            labels = self._check_vars(expr, kinds, start, end, allow_aggregated=True)
            used = frozenset(v.name for v in expr_vars(expr) if v.name.startswith("__g"))
            kinds_used = {kinds[label] for label in labels}
            if len(kinds_used & {"negative", "aggregated"}) > 1 or \
                    len({label for label in labels if kinds[label] in ("negative", "aggregated")}) > 1:
                raise self._error_at(pos, "a condition can mention at most one NOT or aggregated event")
            if used and kinds_used & {"negative", "aggregated"}:
                raise self._error_at(pos, "a condition on an aggregate cannot also mention a NOT or aggregated event")
            conditions.append(Condition(expr, frozenset(labels), used, pos))
        return aggregates, conditions, assignments

    def _check_vars(self, expr: ast.Expr, kinds: dict, start: int, end: int, allow_aggregated: bool) -> set[str]:
        labels = set()
        for var in expr_vars(expr):
            parts = split_qualified(var.name)
            if var.name.startswith("__g"):
                continue
            offset = self._find_var(var.name, start, end)
            if parts is None:
                raise self._error(offset, f"?{var.name}: write the event's variable as <label>.?{var.name}")
            label, _ = parts
            if label not in kinds:
                raise self._error(offset, f"unknown event label {label!r}")
            if kinds[label] in ("negative", "aggregated") and not allow_aggregated:
                raise self._error(offset, f"{label} is a NOT or aggregated event: it has no value in a match")
            labels.add(label)
        return labels

    def _find_var(self, name: str, start: int, end: int) -> int:
        parts = split_qualified(name)
        needle = f"{parts[0]}.?{parts[1]}" if parts else f"?{name}"
        found = self.text.find(needle, start, end)
        return found if found >= 0 else start

    def _check_template(self, template, kinds: dict, assignments: list[Assignment], start: int) -> None:
        for t in template:
            for term in (t.subject, t.predicate, t.object):
                if isinstance(term, ast.Var):
                    parts = split_qualified(term.name)
                    if parts and (parts[0] not in kinds or kinds[parts[0]] not in ("trigger", "positive")):
                        raise self._error(self._find_var(term.name, start, len(self.text)),
                                          f"the template reads {parts[0]}.?{parts[1]}, but {parts[0]} is not "
                                          f"a selected event")


def expr_vars(expr) -> list[ast.Var]:
    """The variables an expression reads (with repetitions)."""
    if isinstance(expr, ast.Var):
        return [expr]
    out = []
    for value in getattr(expr, "__dict__", {}).values():
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, (ast.Var, ast.BinaryOp, ast.UnaryOp, ast.FunctionCall, ast.In, ast.Aggregate)):
                out += expr_vars(item)
    return out


def _split_items(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Top-level comma-separated spans of ``text[start:end]`` (commas in brackets, strings or
    IRIs do not split)."""
    items, depth, quote, item_start, i = [], 0, None, start, start
    while i < end:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "<" and re.match(r"<[^<>\s\"{}|^`\\]*>", text[i:end]):
            i += re.match(r"<[^<>\s\"{}|^`\\]*>", text[i:end]).end() - 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append((item_start, i))
            item_start = i + 1
        i += 1
    items.append((item_start, end))
    return [(s, e) for s, e in items if text[s:e].strip()]


def _default_name(source: str) -> str:
    name = source.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name
