"""Parse DOTR temporal rules (``queries/<app>/<name>.dotr``) into a ``Rule``.

A rule (Margara, Cugola, Collavini, Dell'Aglio, ESWC 2018, §3) names the situation it derives,
the events it combines and how: a trigger event, further events selected ``last``, ``first``
or ``each`` within a time bound before another event, events that must ``not`` occur,
aggregates, and the events a match is ``consuming``. Its events are not atomic here: each is a
SPARQL SELECT query over one time instant's graph (DOTR §3: ontological reasoning is decoupled
from temporal reasoning and done per instant). Rule R of DOTR §3 parses as printed (with the
PREFIX lines the paper leaves out):

    define Fire = [dotr_id1 rdf:type :Fire. dotr_id1 :at_room ?room ]
    from Smoke = [SELECT ?read1 ?room1 WHERE
    { ?read1 rdf:type :Smoke. ?read1 :is_from_sensor ?sens1.
    ?sens1 :is_in_room ?room1 }
    ] and last HighTemp = [SELECT ?read2 ?room2 WHERE
    { ?read2 rdf:type :Temp. ?read2 :is_from_sensor ?sens2.
    ?sens2 :is_in_room ?room2. ?read2 :has_val ?v.
    FILTER (?v > 60 && ?room2 = Smoke.?room1). }
    ] within 5 min from Smoke
    with Fire.?room = Smoke.?room1
    consuming HighTemp

and so does the older form: ``define Fire { [] a ex:Fire ; ex:area ?area }``, conditions and
``?var = ...`` assignments in ``with``. Before ``define`` go ``PREFIX``, ``FROM STREAM``,
``FROM`` (background graphs), ``ENTAILMENT`` and the Datalog rules of the ontological part
(``language/datalog.py``).

``dotr.lark`` finds the parts; everything SPARQL in them (the bracketed SELECT bodies, the
``define`` template, the ``with`` expressions) is parsed by the SPARQL parser of
``parser.py``, handed the rule text with all else blanked so that its errors name the rule's
own file, line and column. ``L.?x`` (variable ``?x`` of event ``L``) becomes the SPARQL
variable ``?L·x``, which is as long, so positions are kept.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from rsp_jobs.errors import QuerySyntaxError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.language.datalog import DatalogRule, read_rule
from rsp_jobs.language.diagnostics import check_depth, syntax_error, terminal_display
from rsp_jobs.language.parser import parse_query
from rsp_jobs.textfile import read_text
from rsp_jobs.times import MAX_DURATION_MS, UNIT_MS, ms_to_us
from rsp_jobs.tree import transform, walk

__all__ = [
    "Aggregate",
    "Assignment",
    "Between",
    "Condition",
    "DatalogRule",
    "Predicate",
    "Rule",
    "Within",
    "expr_vars",
    "parse_rule",
    "parse_rule_file",
    "qualified",
    "split_qualified",
]

_GRAMMAR = Path(__file__).with_name("dotr.lark")
SEP = "\u00b7"  # joins label and variable: A.?x is the variable ?A·x
_UNIT = {
    "ms": "ms",
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "min": "min",
    "mins": "min",
    "minute": "min",
    "minutes": "min",
    "h": "h",
    "hour": "h",
    "hours": "h",
    "d": "d",
    "day": "d",
    "days": "d",
}
# DOTR §3: "unique resource identifiers like dotr_id1 that are automatically generated every
# time a new output graph is produced" (a bare name in the define template).
_FRESH = re.compile(r"(?<![\w:?$.\-])dotr_id\w*")


def qualified(label: str, var: str) -> str:
    return f"{label}{SEP}{var}"


def split_qualified(name: str) -> tuple[str, str] | None:
    label, sep, var = name.partition(SEP)
    return (label, var) if sep else None


@dataclass(frozen=True)
class Within:
    """``within <us> from <ref>``: a fact at t with ``t_ref - us <= t < t_ref``. DOTR §3:
    "Rule R requires Temperature to be within five minutes *before* Smoke"; decision (the
    paper is silent on the bounds): the fact may lie exactly ``us`` before, not at the instant
    of ``ref`` itself (not before it)."""

    us: int
    ref: str


@dataclass(frozen=True)
class Between:
    """``between <first> and <second>``: a fact at t with ``min(t1, t2) <= t < max(t1, t2)``.

    DOTR §3: negations and aggregates "operate on the set of events that appear in a given
    scope, defined with respect to the time of occurrence of other events in the rule"; the
    paper prints no such scope and gives no bounds. Decision: the scope is the half-open span
    between the two selected events, so that ``between X and R`` holds what ``within
    (t_R - t_X) from R`` holds (the bounds of ``Within``), whichever of the two is named first."""

    first: str
    second: str


@dataclass(frozen=True)
class Predicate:
    """One event of the rule. ``kind``: ``trigger`` (A), ``positive`` (with ``policy`` last,
    first or each), ``negative`` (not) or ``aggregated`` (only read by aggregates)."""

    label: str
    kind: str
    policy: str | None
    query: ast.Query
    within: Within | None
    position: ast.Position
    between: Between | None = None  # negations only
    text: str = field(default="", compare=False)  # the [SELECT ...] as written

    @property
    def scope(self) -> Within | Between | None:
        return self.within or self.between


@dataclass(frozen=True)
class Aggregate:
    """``fn(L.?var within d from R)`` or ``fn(L.?var between X and Y)``, bound to the
    placeholder variable ``placeholder``."""

    fn: str
    label: str
    var: str
    within: Within | None
    placeholder: str
    between: Between | None = None

    @property
    def scope(self) -> Within | Between:
        scope = self.within or self.between
        if scope is None:
            raise ValueError(f"aggregate {self.fn}({self.label}.?{self.var}) has no scope")
        return scope


@dataclass(frozen=True)
class Condition:
    """A constraint of the ``with`` clause, or the part of an event's FILTER that reads other
    events (``FILTER (?v > 60 && ?room2 = Smoke.?room1)``: its second conjunct)."""

    expr: ast.Expr
    labels: frozenset[str]
    aggregates: frozenset[str]  # placeholders it reads
    position: ast.Position
    text: str = field(default="", compare=False)  # as written
    event: str | None = None  # the event whose FILTER holds it; None: the with clause


@dataclass(frozen=True)
class Assignment:
    """``?var = expr`` or, as DOTR §3 prints it, ``Fire.?room = Smoke.?room1``: the value of
    a variable of the ``define`` template."""

    var: str
    expr: ast.Expr
    position: ast.Position
    text: str = field(default="", compare=False)


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
    program: tuple[DatalogRule, ...] = ()  # the ontological part (DOTR §3), per instant

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
        return self.scope_reach_us(self.predicate(label).scope)

    def scope_reach_us(self, scope: Within | Between | None) -> int:
        """How far before the trigger a fact in ``scope`` can lie."""
        if isinstance(scope, Within):
            return scope.us + self.reach_us(scope.ref)
        if isinstance(scope, Between):
            return max(self.reach_us(scope.first), self.reach_us(scope.second))
        return 0

    @property
    def bound_us(self) -> int:
        """How far before a match's time its facts can lie: what a run must read back."""
        reaches = [self.reach_us(p.label) for p in self.predicates if p.scope is not None]
        reaches += [self.scope_reach_us(a.scope) for a in self.aggregates]
        return max(reaches, default=0)


def parse_rule_file(path: str | Path) -> Rule:
    return parse_rule(read_text(path, "rule"), source=str(path))


def parse_rule(text: str, source: str = "<rule>") -> Rule:
    """Parse one rule; errors are ``QuerySyntaxError``s naming ``source:line:col``."""
    try:
        tree = _parser().parse(text)
    except (UnexpectedToken, UnexpectedCharacters) as err:
        raise syntax_error(err, text, source, _display()) from None
    return _Builder(text, source).build(check_depth(tree, source))


@cache
def _parser() -> Lark:
    return Lark.open(str(_GRAMMAR), parser="lalr", lexer="contextual", propagate_positions=True)


@cache
def _display() -> dict[str, str]:
    return terminal_display(
        _parser(),
        {
            "IRIREF": "IRI",
            "PNAME_LN": "prefixed name",
            "PNAME_NS": "prefix",
            "LABEL": "event label",
            "NAME": "rule name",
            "BODY": "[SELECT ...]",
            "TEMPLATE": "{ template }",
            "INT": "integer",
            "UNIT": "time unit (ms, s, min, h, d)",
            "POLICY": "LAST, FIRST or EACH",
            "NOT": "NOT",
            "WITH_TEXT": "conditions",
            "REGIME": "simple, rdfs or rdfs++",
            "$END": "end of input",
        },
    )


_QUALIFIED = re.compile(r"(?<![\w?$:/#.])([A-Za-z][A-Za-z0-9_]*)\.\?(\w+)")
_AGGREGATE = re.compile(
    r"\b(avg|sum|count|min|max)\s*\(\s*([A-Za-z][A-Za-z0-9_]*)\.\?(\w+)\s+"
    r"(?:within\s+(\d+)\s*([A-Za-z]+)\s+from\s+([A-Za-z][A-Za-z0-9_]*)"
    r"|between\s+([A-Za-z][A-Za-z0-9_]*)\s+and\s+([A-Za-z][A-Za-z0-9_]*))\s*\)",
    re.IGNORECASE,
)


class _Builder:
    """Walks the lark tree; hands SPARQL parts to ``parse_query`` with the rest blanked."""

    def __init__(self, text: str, source: str):
        self.text, self.source = text, source
        self.prologue: list[str] = []
        self.prefixes: dict[str, str] = {}
        self.base: str | None = None

    # ------------------------------------------------------------------ helpers

    def _pos(self, offset: int) -> ast.Position:
        line = self.text.count("\n", 0, offset) + 1
        return ast.Position(line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1)

    def _error(self, offset: int, message: str) -> QuerySyntaxError:
        pos = self._pos(offset)
        return QuerySyntaxError(self.source, pos.line, pos.column, message)

    def _sparql(
        self, start: int, end: int, replacement: str, before: str = "", after: str = ""
    ) -> ast.Query:
        """Parse ``replacement`` (the text at ``start:end``, rewritten to the same length) as
        SPARQL: the prologue and ``before`` on a first line of their own, then the rule text
        blanked except for that span, then ``after``. Errors are moved back one line."""
        blank = re.sub(r"[^\n]", " ", self.text)
        body = blank[:start] + replacement + blank[end:]
        wrapper = " ".join([*self.prologue, before]) + "\n" + body + "\n" + after
        try:
            return parse_query(wrapper, self.source)
        except QuerySyntaxError as err:
            head = f"{err.source}:{err.line}:{err.column}: "
            message = str(err)[len(head) :].split("; expected one of: ")[0]
            raise QuerySyntaxError(
                self.source, max(err.line - 1, 1), err.column, message, err.expected
            ) from None
        except UnsupportedConstruct as err:
            match = re.match(rf"{re.escape(self.source)}:(\d+):(\d+):", str(err))
            if not match:
                raise
            raise UnsupportedConstruct(
                self.source, err.construct, int(match[1]) - 1, int(match[2])
            ) from None

    def _iri(self, tree: Tree) -> str:
        (child,) = tree.children
        token = _leaf(child)
        if token.type == "IRIREF":
            return token[1:-1]
        prefix, _, local = token.partition(":")
        if prefix not in self.prefixes:
            raise self._error(_span(token)[0], f"undeclared prefix {prefix + ':'!r}")
        return self.prefixes[prefix] + local

    def _qualify(self, start: int, end: int) -> str:
        """The text at ``start:end`` with ``L.?x`` written ``?L·x`` (same length)."""
        return _QUALIFIED.sub(lambda m: f"?{m[1]}{SEP}{m[2]}", self.text[start:end])

    def _duration(self, number: str, unit: str, start: int) -> int:
        """``number unit`` in µs; ``start``: where ``number`` stands, for the error."""
        ms = int(number) * UNIT_MS[_UNIT[unit.lower()]]
        if ms > MAX_DURATION_MS:
            raise self._error(start, f"{number} {unit} is longer than the limit of 100 years")
        return ms_to_us(ms)

    # ------------------------------------------------------------------ the rule

    def build(self, tree: Tree) -> Rule:
        streams, graphs, entailment, program = [], [], "simple", []
        define, trees, with_text, consumed = None, [], None, []
        for child in tree.children:
            if child.data in ("base_decl", "prefix_decl"):
                self.prologue.append(self.text[child.meta.start_pos : child.meta.end_pos])
                if child.data == "prefix_decl":
                    name, iri = map(_leaf, child.children)
                    self.prefixes[name[:-1]] = iri[1:-1]
            elif child.data == "caption":
                continue  # "Rule R": the paper's caption of a listing
            elif child.data == "from_stream":
                streams.append(self._iri(child.children[0]))
            elif child.data == "from_graph":
                graphs.append(
                    ast.GraphClause(
                        self._iri(child.children[0]),
                        False,
                        ast.Position(child.meta.line, child.meta.column),
                    )
                )
            elif child.data == "entailment":
                entailment = _leaf(child.children[0]).lower()
            elif child.data == "datalog_rule":
                program.append(read_rule(child, self.text, self._iri, self._error, self._pos))
            elif child.data in ("define_braces", "define_brackets"):
                define = child
            elif child.data in ("trigger", "positive", "negative", "aggregated"):
                trees.append(child)
            elif child.data == "with_clause":
                with_text = _leaf(child.children[0])
            elif child.data == "consuming":
                consumed = list(child.children)
        # No FROM STREAM: the rule reads the stream it is given, as the paper's rules do; a run
        # over the lake asks for one (algebra/patterns.py, pattern_streams).
        if define is None:
            raise ValueError("the DOTR grammar admits no rule without define")
        *named, template_branch = define.children
        template = _leaf(template_branch)
        self.name = str(named[0]) if named and named[0] is not None else None
        labels = {
            str(t.children[1] if t.data in ("positive", "negative") else t.children[0])
            for t in trees
        }
        if self.name is not None and self.name in labels:
            raise self._error(
                _span(_leaf(named[0]))[0],
                f"the rule's event {self.name!r} and an event of its pattern "
                f"share a name: {self.name}.?x would be ambiguous",
            )
        pending: list[
            tuple[ast.Expr, int, int, str]
        ] = []  # FILTER conjuncts that read other events
        predicates = [self._predicate(t, pending) for t in trees]
        self._check_labels(predicates)
        kinds = {p.label: p.kind for p in predicates}
        conditions = [
            self._condition(expr, kinds, s, e, "", event) for expr, s, e, event in pending
        ]
        aggregates, assignments = [], []
        if with_text:
            aggregates, more, assignments = self._with(with_text, predicates)
            conditions += more
        for p in predicates:
            if p.kind == "aggregated" and not any(a.label == p.label for a in aggregates):
                raise self._error_at(
                    p.position,
                    f"event {p.label} is read by no aggregate "
                    f"(give it LAST, FIRST, EACH or NOT and a WITHIN)",
                )
        for token in consumed:
            if token not in kinds:
                raise self._error(token.start_pos, f"unknown event label {str(token)!r}")
            if kinds[token] not in ("trigger", "positive"):
                raise self._error(
                    token.start_pos, f"only selected events can be consumed, not {str(token)!r}"
                )
        construct = self._template(template)
        self._check_template(construct, kinds, assignments, _span(template)[0])
        return Rule(
            name=self.name or _default_name(self.source),
            source=self.source,
            text=self.text,
            streams=tuple(streams),
            graphs=tuple(graphs),
            entailment=entailment,
            template=construct,
            predicates=tuple(predicates),
            conditions=tuple(conditions),
            assignments=tuple(assignments),
            aggregates=tuple(aggregates),
            consumes=frozenset(map(str, consumed)),
            program=tuple(program),
        )

    def _template(self, token: Token) -> tuple[ast.TriplePattern, ...]:
        """The ``define`` template: ``{ ... }``, or DOTR §3's ``= [ ... ]`` whose bare
        ``dotr_id1`` names are fresh per output graph: read as blank nodes (same length,
        ``_:tr_id1``), which ``spark/dotr.py`` instantiates as a fresh IRI per match, and
        named back."""
        start, end = _span(token)
        text = self._qualify(start, end)
        fresh: dict[str, str] = {}
        if text.startswith("["):

            def blank(m: re.Match) -> str:
                fresh[m[0][2:]] = m[0]
                return "_:" + m[0][2:]

            text = "{" + _FRESH.sub(blank, text[1:-1]) + "}"
        template = self._sparql(start, end, text, before="CONSTRUCT", after="WHERE {}").template

        def named(term):
            return (
                ast.BNode(fresh[term.label])
                if isinstance(term, ast.BNode) and term.label in fresh
                else term
            )

        return tuple(
            ast.TriplePattern(named(t.subject), named(t.predicate), named(t.object))
            for t in template
        )

    def _error_at(self, pos: ast.Position, message: str) -> QuerySyntaxError:
        return QuerySyntaxError(self.source, pos.line, pos.column, message)

    def _predicate(self, tree: Tree, pending: list) -> Predicate:
        children = list(tree.children)
        policy = None
        if tree.data == "positive":
            policy = _leaf(children.pop(0)).lower()
        elif tree.data == "negative":
            children.pop(0)
        label, body = _leaf(children[0]), _leaf(children[1])
        scope = children[2:]
        body_start, body_end = _span(body)
        stripped = body[1:-1]
        if not re.match(r"\s*select\b", stripped, re.IGNORECASE):
            raise self._error(body_start + 1, f"event {label} must be a [SELECT ...] query")
        query = self._sparql(
            body_start + 1,
            body_end - 1,
            self._qualify(body_start + 1, body_end - 1),
        )
        if query.streams or query.graphs:
            clause = (query.streams + query.graphs)[0]
            raise self._error_at(
                clause.position or self._pos(body_start + 1),
                "FROM clauses go at the top of the rule, not in an event",
            )
        query = self._split_filters(str(label), query, body_start, body_end, pending)
        within = between = None
        if scope and scope[0] is not None:
            if scope[0].data == "within":
                (duration, ref) = scope[0].children
                number, unit = map(_leaf, duration.children)
                within = Within(self._duration(number, unit, _span(number)[0]), str(ref))
                self._refs = [*getattr(self, "_refs", []), (ref, label)]
            else:
                first, second = scope[0].children
                between = Between(str(first), str(second))
                self._refs = [*getattr(self, "_refs", []), (first, label), (second, label)]
        elif tree.data in ("positive", "negative"):
            raise self._error(
                _span(label)[1],
                f"{(policy or 'not').upper()} {label} needs "
                f"WITHIN <duration> FROM <event>"
                + (" or BETWEEN <event> AND <event>" if policy is None else ""),
            )
        kind = "trigger" if tree.data == "trigger" else tree.data
        return Predicate(
            str(label),
            kind,
            policy,
            query,
            within,
            self._pos(_span(label)[0]),
            between=between,
            text=str(body),
        )

    def _split_filters(
        self, label: str, query: ast.Query, start: int, end: int, pending: list
    ) -> ast.Query:
        """DOTR §3 (Rule R): ``FILTER (?v > 60 && ?room2 = Smoke.?room1)`` in event HighTemp
        constrains HighTemp by another event. The query itself is evaluated per instant, where
        no Smoke is bound, so the conjuncts of a top-level FILTER that read other events leave
        the query and become conditions of the rule, its own variables read as
        ``HighTemp.?room2`` (the event's attributes are the variables it selects, DOTR §4).
        ``FILTER (a && b)`` keeps a solution exactly when ``FILTER (a) FILTER (b)`` does, so the
        split changes nothing of SPARQL's meaning."""
        selected = (
            {v.name for v in _vars_in(query.where)}
            if query.projection is None
            else {item.var.name for item in query.projection}
        )
        elements = []
        for element in query.where.elements:
            if not isinstance(element, ast.Filter) or not _reads_events(element.expr):
                elements.append(element)
                continue
            kept = []
            for conjunct in _conjuncts(element.expr):
                if not _reads_events(conjunct):
                    kept.append(conjunct)
                    continue
                first = next(
                    v.name for v in expr_vars(conjunct) if split_qualified(v.name) is not None
                )
                reference = self._find_var(first, start, end)
                keyword = max(self.text.upper().rfind("FILTER", start, reference), start)
                for var in expr_vars(conjunct):
                    if split_qualified(var.name) is None and var.name not in selected:
                        raise self._error(
                            self._find_var(var.name, keyword, end),
                            f"?{var.name} is not selected by {label}: a FILTER conjunct that reads "
                            f"another event can read only the variables {label} selects",
                        )
                own = _map_vars(
                    conjunct,
                    lambda v: (
                        v
                        if split_qualified(v.name) is not None
                        else ast.Var(qualified(label, v.name))
                    ),
                )
                pending.append((own, reference, end, label))
            if kept:
                expr = kept[0]
                for more in kept[1:]:
                    expr = ast.BinaryOp("&&", expr, more)
                elements.append(ast.Filter(expr))
        query = dataclasses.replace(
            query, where=dataclasses.replace(query.where, elements=tuple(elements))
        )
        for var in _vars_in(query):
            if (parts := split_qualified(var.name)) is not None:
                raise self._error(
                    self._find_var(var.name, start, end),
                    f"{'.?'.join(parts)}: another event's variable can be read "
                    f"only in a FILTER of the event's top-level group (or in WITH)",
                )
        return query

    def _check_labels(self, predicates: list[Predicate]) -> None:
        seen: dict[str, Predicate] = {}
        selected = {p.label for p in predicates if p.kind in ("trigger", "positive")}
        for p in predicates:
            if p.label in seen:
                raise self._error_at(p.position, f"event label {p.label!r} is declared twice")
            if p.within is not None:
                ref = next(r for r, owner in self._refs if owner == p.label)
                target = seen.get(p.within.ref)
                if target is None or target.kind not in ("trigger", "positive"):
                    raise self._error(
                        ref.start_pos,
                        f"WITHIN ... FROM {p.within.ref}: no earlier selected "
                        f"event is labelled {p.within.ref!r}",
                    )
            if p.between is not None:
                for ref in (r for r, owner in self._refs if owner == p.label):
                    if str(ref) not in selected:
                        raise self._error(
                            ref.start_pos,
                            f"BETWEEN ... {ref}: no selected event (the trigger, "
                            f"LAST, FIRST or EACH) is labelled {str(ref)!r}",
                        )
                if p.between.first == p.between.second:
                    raise self._error_at(
                        p.position, f"BETWEEN {p.between.first} AND {p.between.first} is empty"
                    )
            seen[p.label] = p

    # ------------------------------------------------------------------ with

    def _with(self, token: Token, predicates: list[Predicate]):
        kinds = {p.label: p.kind for p in predicates}
        aggregates: list[Aggregate] = []
        conditions: list[Condition] = []
        assignments: list[Assignment] = []
        for start, end in _split_items(self.text, *_span(token)):
            rewritten = list(self._qualify(start, end))
            for m in _AGGREGATE.finditer(self.text, start, end):
                fn, label, var, number, unit, ref, first, second = m.groups()
                if label not in kinds:
                    raise self._error(m.start(2), f"unknown event label {label!r}")
                if kinds[label] != "aggregated":
                    raise self._error(
                        m.start(2),
                        f"aggregates read events declared as `and {label} = [...]` "
                        f"(no LAST/FIRST/EACH/NOT); {label} is not",
                    )
                placeholder = f"__g{len(aggregates)}"
                if ref is not None:
                    if ref not in kinds or kinds[ref] not in ("trigger", "positive"):
                        raise self._error(
                            m.start(6),
                            f"WITHIN ... FROM {ref}: no selected event is labelled {ref!r}",
                        )
                    if unit.lower() not in _UNIT:
                        raise self._error(m.start(5), f"unknown time unit {unit!r}")
                    aggregates.append(
                        Aggregate(
                            fn.lower(),
                            label,
                            var,
                            Within(self._duration(number, unit, m.start(4)), ref),
                            placeholder,
                        )
                    )
                else:
                    for group in (7, 8):
                        if kinds.get(m[group]) not in ("trigger", "positive"):
                            raise self._error(
                                m.start(group),
                                f"BETWEEN ... {m[group]}: no selected event is "
                                f"labelled {m[group]!r}",
                            )
                    if first == second:
                        raise self._error(m.start(7), f"BETWEEN {first} AND {first} is empty")
                    aggregates.append(
                        Aggregate(fn.lower(), label, var, None, placeholder, Between(first, second))
                    )
                text = f"?{placeholder}"
                span = self.text[m.start() : m.end()]
                filler = text + "".join("\n" if c == "\n" else " " for c in span[len(text) :])
                rewritten[m.start() - start : m.end() - start] = list(filler)
            query = self._sparql(
                start, end, "".join(rewritten), before="SELECT * WHERE { FILTER (", after=") }"
            )
            lead = len(self.text[start:end]) - len(self.text[start:end].lstrip())
            elements = query.where.elements
            # An item that closes the parenthesis (``1) BIND (...``) parses, but as more than
            # the one FILTER it is wrapped in.
            if len(elements) != 1 or not isinstance(elements[0], ast.Filter):
                raise self._error(
                    start + lead, "a WITH item is one expression (items are separated by commas)"
                )
            expr = elements[0].expr
            pos = self._pos(start + lead)
            item = self.text[start:end].strip()
            assigned = _assigned(expr, self.name)
            if assigned is not None:
                target, value = assigned
                self._check_vars(value, kinds, start, end, allow_aggregated=False)
                assignments.append(Assignment(target, value, pos, item))
                continue
            conditions.append(self._condition(expr, kinds, start + lead, end, item))
        return aggregates, conditions, assignments

    def _condition(
        self, expr: ast.Expr, kinds: dict, start: int, end: int, text: str, event: str | None = None
    ) -> Condition:
        """A constraint over the events it names: at most one NOT or aggregated event, and an
        aggregate's value never beside a NOT or aggregated event's variable."""
        pos = self._pos(start)
        for call in walk(expr):
            # a condition is tested on combinations of facts, no query execution of its own
            # (NOW()) and no solution to name (BNODE(str)): spark/expressions.py
            if isinstance(call, ast.FunctionCall) and (
                call.name == "now" or (call.name == "bnode" and call.args)
            ):
                where = call.position or ast.Position(pos.line + 1, pos.column)
                raise UnsupportedConstruct(
                    self.source,
                    f"{'NOW()' if call.name == 'now' else 'BNODE(str)'} in a DOTR condition "
                    "(an event's SELECT may call it)",
                    where.line - 1,  # parsed below the prologue's line (_sparql)
                    where.column,
                )
        labels = self._check_vars(expr, kinds, start, end, allow_aggregated=True)
        used = frozenset(v.name for v in expr_vars(expr) if v.name.startswith("__g"))
        kinds_used = {kinds[label] for label in labels}
        if (
            len(kinds_used & {"negative", "aggregated"}) > 1
            or len({label for label in labels if kinds[label] in ("negative", "aggregated")}) > 1
        ):
            raise self._error_at(pos, "a condition can mention at most one NOT or aggregated event")
        if used and kinds_used & {"negative", "aggregated"}:
            raise self._error_at(
                pos, "a condition on an aggregate cannot also mention a NOT or aggregated event"
            )
        return Condition(expr, frozenset(labels), used, pos, text, event)

    def _check_vars(
        self, expr: ast.Expr, kinds: dict, start: int, end: int, allow_aggregated: bool
    ) -> set[str]:
        labels = set()
        for var in expr_vars(expr):
            parts = split_qualified(var.name)
            if var.name.startswith("__g"):
                continue
            offset = self._find_var(var.name, start, end)
            if parts is None:
                raise self._error(
                    offset, f"?{var.name}: write the event's variable as <label>.?{var.name}"
                )
            label, _ = parts
            if label not in kinds:
                raise self._error(offset, f"unknown event label {label!r}")
            if kinds[label] in ("negative", "aggregated") and not allow_aggregated:
                raise self._error(
                    offset, f"{label} is a NOT or aggregated event: it has no value in a match"
                )
            labels.add(label)
        return labels

    def _find_var(self, name: str, start: int, end: int) -> int:
        parts = split_qualified(name)
        needle = f"{parts[0]}.?{parts[1]}" if parts else f"?{name}"
        found = re.compile(re.escape(needle) + r"(?!\w)").search(self.text, start, end)
        return found.start() if found else start

    def _check_template(
        self, template, kinds: dict, assignments: list[Assignment], start: int
    ) -> None:
        for t in template:
            for term in (t.subject, t.predicate, t.object):
                if isinstance(term, ast.Var):
                    parts = split_qualified(term.name)
                    if parts and (
                        parts[0] not in kinds or kinds[parts[0]] not in ("trigger", "positive")
                    ):
                        raise self._error(
                            self._find_var(term.name, start, len(self.text)),
                            f"the template reads {parts[0]}.?{parts[1]}, but {parts[0]} is not "
                            f"a selected event",
                        )


def _assigned(expr: ast.Expr, name: str | None) -> tuple[str, ast.Expr] | None:
    """The template variable ``expr`` assigns (``?x = ...``, or ``Fire.?x = ...`` in rule
    ``define Fire``) and the expression it is assigned, else None."""
    if not (isinstance(expr, ast.BinaryOp) and expr.op == "=" and isinstance(expr.left, ast.Var)):
        return None
    left = expr.left.name
    if left.startswith("__g"):
        return None
    parts = split_qualified(left)
    if parts is None:
        return left, expr.right
    return (parts[1], expr.right) if name is not None and parts[0] == name else None


def _reads_events(expr: ast.Expr) -> bool:
    return any(split_qualified(v.name) is not None for v in expr_vars(expr))


def _conjuncts(expr: ast.Expr) -> list[ast.Expr]:
    if isinstance(expr, ast.BinaryOp) and expr.op == "&&":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


def _map_vars(node, fn):
    """``node`` with each ``ast.Var`` replaced by ``fn(var)``."""
    return transform(node, lambda n: fn(n) if isinstance(n, ast.Var) else n)


def _vars_in(node) -> list[ast.Var]:
    """Every ``ast.Var`` anywhere in an AST node."""
    return [n for n in walk(node) if isinstance(n, ast.Var)]


_EXPRESSIONS = (ast.Var, ast.BinaryOp, ast.UnaryOp, ast.FunctionCall, ast.In, ast.Aggregate)


def expr_vars(expr) -> list[ast.Var]:
    """The variables an expression reads (with repetitions), not those of a graph pattern
    or a timestamp() call inside it."""
    return [
        n
        for n in walk(expr, prune=lambda n: not isinstance(n, _EXPRESSIONS))
        if isinstance(n, ast.Var)
    ]


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
        elif c == "<" and (iri := re.match(r"<[^<>\s\"{}|^`\\]*>", text[i:end])):
            i += iri.end() - 1
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


def _leaf(branch: Token | Tree) -> Token:
    """The token the grammar puts at ``branch``: a terminal, never a subtree."""
    if not isinstance(branch, Token):
        raise TypeError(f"expected a token of the DOTR grammar, found the subtree {branch.data!r}")
    return branch


def _span(token: Token) -> tuple[int, int]:
    """Where ``token`` starts and ends in the rule text; lark's parser sets both on every token
    it makes (only a token built by hand lacks them)."""
    if token.start_pos is None or token.end_pos is None:
        raise ValueError(f"token {token!r} carries no position in the rule text")
    return token.start_pos, token.end_pos


def _default_name(source: str) -> str:
    name = source.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name
