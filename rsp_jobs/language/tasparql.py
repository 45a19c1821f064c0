"""TA-SPARQL text → syntax tree (Rodriguez, McGrath, Liu, Myers, SSN 2009, §6 and Table 2).

The grammar is ``tasparql.lark``, which shares its SPARQL terminals with the C-SPARQL and DOTR
grammars. The tree is frozen dataclasses and tuples, never changed once built;
``rsp_jobs.algebra.tasparql`` plans it and ``rsp_jobs/store/sql/`` writes the plan as SQL over the
frame store. Terms are kept as the store writes them (N-Triples text, through rdflib), frame
variables and their selectors are collected once per query, and every problem is a
QuerySyntaxError naming line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from rdflib import Literal, URIRef

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language.diagnostics import (
    check_depth,
    check_literals,
    excerpt,
    syntax_error,
    terminal_display,
)
from rsp_jobs.language.lexical import local_name, string_body, unescape
from rsp_jobs.terms import DSV, XSD, XSD_BOOLEAN, XSD_DATE, XSD_DATETIME, time_interval, to_nt
from rsp_jobs.times import parse_datetime

BELONGS_TO = DSV + "belongsTo"
HAS_TIMESTAMP = DSV + "hasTimestamp"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
# Declared unless the query declares them itself.
# Table 2 spells the vocabulary dso:, §4-§5 dsv:; both name it.
DEFAULT_PREFIXES = {
    "xsd": XSD,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "dsv": DSV,
    "dso": DSV,
}

_GRAMMAR = Path(__file__).with_name("tasparql.lark")
MAX_COUNT = 2**63 - 1  # LIMIT, OFFSET

# ------------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Pos:
    line: int
    column: int


@dataclass(frozen=True)
class Var:
    name: str
    pos: Pos


@dataclass(frozen=True)
class Const:
    """An IRI or literal in a triple pattern, as the N-Triples text the store keeps."""

    nt: str


Term = Var | Const


@dataclass(frozen=True)
class Selector:
    """``kind``: every, at, between, first, last. ``times``: for at and between the UTC
    interval (start, end, end included?): a date-time is one instant, an xsd:date its whole
    day, and ``t1 .. t2`` runs from t1's start to t2's end."""

    kind: str
    times: tuple
    pos: Pos


@dataclass(frozen=True)
class Triple:
    frame: str
    subject: Term | None  # None: any subject (the frame's content, TA-RDF's r[t] p o)
    predicate: Term
    obj: Term


@dataclass(frozen=True)
class Membership:
    frame: str
    stream: Term


@dataclass(frozen=True)
class Stamp:
    """``?F dsv:hasTimestamp ?t`` (Table 2): the frame's time, a variable or a constant."""

    frame: str
    time: Any  # Var or LiteralTerm


@dataclass(frozen=True)
class Link:
    """``s p ?x[sel]``: a time-invariant statement whose object is a stream; ?x ranges over that
    stream's frames (TA-RDF restriction 1, the object form: <x p S> ∧ <r belongsTo S> ⇒ <x p r>)."""

    subject: Term
    predicate: Term
    frame: str


@dataclass(frozen=True)
class Invariant:
    """A triple pattern about no frame: it matches the time-invariant statements (r[Nil])."""

    subject: Term
    predicate: Term
    obj: Term


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    pos: Pos


# expressions


@dataclass(frozen=True)
class Num:
    value: float
    text: str = ""  # the numeral as written: its exact value where it has no exponent


@dataclass(frozen=True)
class VarRef:
    name: str
    pos: Pos


@dataclass(frozen=True)
class FrameTime:
    name: str  # the frame variable
    pos: Pos


@dataclass(frozen=True)
class Op:
    """A comparison, arithmetic or boolean operator; unary ones have ``right`` None."""

    op: str
    left: Any
    right: Any
    pos: Pos


@dataclass(frozen=True)
class Aggregate:
    name: str  # sum avg min max count
    arg: Any  # None for COUNT(*)
    distinct: bool
    pos: Pos


@dataclass(frozen=True)
class Item:
    name: str
    expr: Any
    pos: Pos


@dataclass(frozen=True)
class BasicPattern:
    """Frame, stream-membership, timestamp, link and time-invariant patterns, all joined: the
    triples of a group that no OPTIONAL or UNION separates."""

    triples: tuple[Triple, ...] = ()
    memberships: tuple[Membership, ...] = ()
    links: tuple[Link, ...] = ()
    invariants: tuple[Invariant, ...] = ()
    stamps: tuple[Stamp, ...] = ()

    @classmethod
    def of(cls, patterns) -> BasicPattern:
        """The patterns of a group, as written, sorted by kind (each kind keeps its order)."""

        def kind(k):
            return tuple(p for p in patterns if isinstance(p, k))

        return cls(kind(Triple), kind(Membership), kind(Link), kind(Invariant), kind(Stamp))

    def frames(self) -> tuple[str, ...]:
        """The frame variables this pattern binds, in order of appearance."""
        names = [t.frame for t in self.triples] + [m.frame for m in self.memberships]
        names += [s.frame for s in self.stamps] + [link.frame for link in self.links]
        return tuple(dict.fromkeys(names))

    def patterns(self) -> tuple:
        """Every pattern, kind by kind (``of``'s inverse, as a nested group merges into its parent)."""
        return self.triples + self.memberships + self.links + self.invariants + self.stamps


@dataclass(frozen=True)
class UnionPattern:
    """``{ P1 } UNION { P2 } ...``: the solutions of each branch (SPARQL 1.1 §18.2.2.6)."""

    branches: tuple[GroupPattern, ...]


@dataclass(frozen=True)
class OptionalPattern:
    """``OPTIONAL { P FILTER(F) }``: LeftJoin(what comes before, P, F) (SPARQL 1.1 §18.2.2.6)."""

    group: GroupPattern


@dataclass(frozen=True)
class GroupPattern:
    """``{ ... }``: its elements joined in order (an OptionalPattern left-joins what comes before
    it), then its FILTERs. Nested groups with no OPTIONAL or UNION are merged into their parent,
    FILTERs and all (TA-SPARQL §6, example 6)."""

    elements: tuple = ()  # BasicPattern, UnionPattern, OptionalPattern, GroupPattern
    filters: tuple = ()

    @property
    def basic(self) -> BasicPattern | None:
        """The one BasicPattern of a group with no OPTIONAL or UNION, else None."""
        if len(self.elements) == 1 and isinstance(self.elements[0], BasicPattern):
            return self.elements[0]
        return None

    @property
    def flat(self) -> bool:
        return not self.elements or self.basic is not None


@dataclass(frozen=True)
class FrameVariable:
    """A frame variable of the query (or one made for ``<stream>[sel]``) and its selector: one
    selector per variable, query-wide; None is ``[*]``."""

    name: str
    pos: Pos
    selector: Selector | None


@dataclass(frozen=True)
class Query:
    """A one-time TA-SPARQL SELECT over the frame store."""

    distinct: bool
    items: tuple[Item, ...]
    frames: tuple[FrameVariable, ...]  # in order of appearance
    where: GroupPattern
    group_by: tuple[Any, ...] | None
    having: Any | None
    order_by: tuple[tuple[Any, bool], ...]
    limit: int | None
    offset: int | None
    source: str = "<query>"  # the file or argument it came from, for messages


# ------------------------------------------------------------------------------------ parser


@cache
def _parser() -> Lark:
    """Built once per process: building the LALR tables costs far more than a parse."""
    return Lark.open(
        str(_GRAMMAR),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
    )


def parse(text: str, source: str = "<query>") -> Query:
    """Query text → syntax tree; every problem is a QuerySyntaxError naming line and column."""
    try:
        tree = _parser().parse(text)
    except (UnexpectedToken, UnexpectedCharacters) as err:
        raise _syntax_error(err, text, source) from None
    check_depth(tree, source)
    check_literals(tree, source)
    try:
        return _Builder(source).transform(tree)
    except VisitError as err:  # lark wraps whatever a callback raises
        raise err.orig_exc from None


_TERMINAL_NAMES = {
    "IRIREF": "IRI",
    "PNAME_LN": "prefixed name",
    "PNAME_NS": "prefix",
    "VAR": "variable",
    "VAR_TIME": "frame time (?x.t)",
    "STRING": "string",
    "NUMBER": "number",
    "INTEGER": "integer",
    "LANGTAG": "language tag",
    "ISO_TIME": "date-time",
    "COMPARE": "comparison",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*' or '/'",
    "AGGREGATE": "SUM, AVG, MIN or MAX",
    "$END": "end of input",
}


@cache
def _terminal_display() -> dict[str, str]:
    return terminal_display(_parser(), _TERMINAL_NAMES)


def _syntax_error(
    err: UnexpectedToken | UnexpectedCharacters, text: str, source: str
) -> QuerySyntaxError:
    return syntax_error(err, text, source, _terminal_display())


_ISO_DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")


def iso_time(text: str) -> datetime | None:
    """An ISO 8601 date-time in UTC (no offset: UTC), or None when ``text`` is not one."""
    if not _ISO_DATETIME.fullmatch(text):
        return None
    try:
        return parse_datetime(text)
    except ValueError:
        return None


def _pos(item) -> Pos:
    return Pos(item.line, item.column)


@dataclass
class _Frames:
    """The frame variables of a query and their selectors, as the builder meets them."""

    names: dict[str, Pos] = field(default_factory=dict)
    selectors: dict[str, Selector] = field(default_factory=dict)
    hidden: set = field(default_factory=set)  # frame variables made for <iri>[sel]


class _Builder(Transformer):
    """Parse tree → ``Query``: prefixed names expanded, strings unescaped, terms written as the
    store writes them (through rdflib, ``terms.to_nt``), frame variables and selectors found.
    What it collects on the way is its own; the tree it returns is frozen."""

    def __init__(self, source: str):
        super().__init__(visit_tokens=False)
        self._source = source
        self._prefixes = dict(DEFAULT_PREFIXES)
        self._frames = _Frames()
        self._variables: dict[str, Pos] = {}  # every variable, in order of appearance (SELECT *)

    def _error(self, where, message: str) -> QuerySyntaxError:
        return QuerySyntaxError(self._source, where.line, where.column, message)

    # ------------------------------------------------------------------------ query

    def start(self, children):
        return children[-1]

    def prefix_decl(self, children):
        name, iri = children
        self._prefixes[str(name)[:-1]] = unescape(iri[1:-1])

    def select_query(self, children):
        distinct, items, where, group_by, having, order_by, limit_offset = children
        f = self._frames
        if items is None:  # SELECT *: every variable, in order of appearance
            items = tuple(
                Item(name, VarRef(name, pos), pos)
                for name, pos in self._variables.items()
                if name not in f.hidden
            )
        names = set()
        for item in items:
            if item.name in names:
                raise self._error(item.pos, f"?{item.name} is projected twice")
            names.add(item.name)
        limit, offset = limit_offset or (None, None)
        frames = tuple(
            FrameVariable(name, pos, f.selectors.get(name)) for name, pos in f.names.items()
        )
        return Query(
            distinct is not None,
            items,
            frames,
            where,
            group_by,
            having,
            order_by or (),
            limit,
            offset,
            self._source,
        )

    def select_items(self, children):
        return tuple(children)

    def select_all(self, _):
        return None

    def select_aggregate(self, children):
        """The paper's ``SELECT sum(?rain)``: an aggregate without AS, named after what it
        aggregates (``sum_rain``; ``count`` for COUNT(*))."""
        (agg,) = children
        name = (
            agg.name
            if agg.arg is None
            else (
                f"{agg.name}_{agg.arg.name}"
                if isinstance(agg.arg, (VarRef, FrameTime))
                else f"{agg.name}_{agg.pos.column}"
            )
        )
        return Item(name, agg, agg.pos)

    def select_var(self, children):
        (token,) = children
        return Item(token[1:], VarRef(token[1:], _pos(token)), _pos(token))

    def select_time(self, children):
        (token,) = children
        return Item(token[1:], FrameTime(token[1:-2], _pos(token)), _pos(token))

    @v_args(meta=True)
    def select_expr(self, meta, children):
        expr, var = children
        return Item(var[1:], expr, _pos(meta))

    # --------------------------------------------------------------------- patterns

    def group(self, children) -> GroupPattern:
        """Consecutive patterns (triples, GRAPH blocks, merged nested groups) make one
        BasicPattern; an OPTIONAL, a UNION or a group that has one starts the next."""
        elements: list[list | GroupPattern | UnionPattern | OptionalPattern] = []
        filters: list = []

        def patterns() -> list:  # the patterns of the BasicPattern being written
            last = elements[-1] if elements else None
            if not isinstance(last, list):
                last = []
                elements.append(last)
            return last

        for child in children:
            if child is None:
                continue
            if isinstance(child, list):
                for subject, selector, verb, obj in child:
                    self._top_level_triple(subject, selector, verb, obj, patterns())
            elif isinstance(child, _GraphBlock):
                patterns().extend(child.triples)
                filters.extend(child.filters)
            elif isinstance(child, GroupPattern) and child.flat:
                if child.basic is not None:
                    patterns().extend(child.basic.patterns())
                filters.extend(child.filters)
            elif isinstance(child, (GroupPattern, UnionPattern, OptionalPattern)):
                elements.append(child)
            else:
                filters.append(child)
        return GroupPattern(
            tuple(BasicPattern.of(e) if isinstance(e, list) else e for e in elements),
            tuple(filters),
        )

    def group_or_union(self, children):
        return children[0] if len(children) == 1 else UnionPattern(tuple(children))

    def optional(self, children):
        return OptionalPattern(children[0])

    def _top_level_triple(self, subject, selector, verb, obj, patterns: list):
        """Outside GRAPH (TA-RDF §6, Table 2): a frame in the object (``s p ?x[sel]``) makes a
        time-invariant statement linking to a stream; an IRI with a selector is that stream's
        frames; an IRI without one a time-invariant resource; a variable subject a frame.
        The patterns it makes are added to ``patterns``, the group's current ones."""
        if isinstance(obj, _FrameRef):
            frame = self._frame_ref(obj, patterns)
            if isinstance(subject, Located) and selector is not None:
                raise self._error(
                    selector.pos,
                    "a statement about two frames is not supported: "
                    "select the frame in the subject or in the object",
                )
            if isinstance(subject, Var) and selector is not None:
                raise self._error(
                    selector.pos,
                    "a statement about two frames is not supported: "
                    "select the frame in the subject or in the object",
                )
            patterns.append(
                Link(subject.const if isinstance(subject, Located) else subject, verb, frame.name)
            )
            return
        if isinstance(subject, Located):
            if selector is None:
                patterns.append(Invariant(subject.const, verb, obj))
                return
            subject = self._frame_ref(_FrameRef(subject, selector), patterns)
            selector = None
        self._frame(subject, selector)
        if verb == Const(f"<{HAS_TIMESTAMP}>"):
            if not isinstance(obj, (Var, LiteralTerm)):
                raise self._error(
                    subject.pos, "dsv:hasTimestamp takes a variable or an xsd:dateTime"
                )
            patterns.append(Stamp(subject.name, obj))
            return
        if verb == Const(f"<{BELONGS_TO}>"):
            if isinstance(obj, LiteralTerm):
                raise self._error(subject.pos, "dsv:belongsTo takes a stream IRI or a variable")
            patterns.append(Membership(subject.name, obj))
        else:
            patterns.append(Triple(subject.name, None, verb, obj))

    def graph_block(self, children):
        var, selector, *rest = children
        frame = self._var(var)
        self._frame(frame, selector)
        triples, filters = [], []
        for child in rest:
            if isinstance(child, list):
                for subject, inner_selector, verb, obj in child:
                    if inner_selector is not None:
                        raise self._error(
                            inner_selector.pos,
                            "a selector inside GRAPH: the frame is "
                            f"?{frame.name}, selected after GRAPH",
                        )
                    triples.append(Triple(frame.name, subject, verb, obj))
            elif child is not None:
                filters.append(child)
        return _GraphBlock(tuple(triples), tuple(filters))

    def _frame_ref(self, ref: _FrameRef, patterns: list) -> Var:
        """The frame variable of ``?x[sel]`` or ``<stream>[sel]`` (a hidden variable, one per
        stream and selector, that dsv:belongsTo the stream in each group that names it)."""
        if isinstance(ref.term, Var):
            self._frame(ref.term, ref.selector)
            return ref.term
        name = f"{ref.term.const.nt}[{ref.selector.kind}{ref.selector.times}]"
        var = Var(name, ref.term.pos)
        self._frames.hidden.add(name)
        self._frame(var, ref.selector)
        membership = Membership(name, ref.term.const)
        if membership not in patterns:
            patterns.append(membership)
        return var

    def _frame(self, var: Var, selector: Selector | None) -> None:
        self._frames.names.setdefault(var.name, var.pos)
        if selector is None:
            return
        known = self._frames.selectors.setdefault(var.name, selector)
        if (known.kind, known.times) != (selector.kind, selector.times):
            raise self._error(
                selector.pos,
                f"?{var.name} already has another selector "
                f"(line {known.pos.line}, column {known.pos.column})",
            )

    def filter(self, children):
        return children[0]

    def triples_block(self, children):
        return [triple for triples in children for triple in triples]

    def triples_same_subject(self, children):
        (subject, selector), properties = children
        return [(subject, selector, verb, obj) for verb, objects in properties for obj in objects]

    def var_subject(self, children):
        token, selector = children
        return self._var(token), selector

    @v_args(meta=True)
    def iri_subject(self, meta, children):
        return Located(children[0], _pos(meta)), children[1]

    @v_args(meta=True)
    def frame_object(self, meta, children):
        term, selector = children
        term = Located(term, _pos(meta)) if isinstance(term, Const) else self._var(term)
        return _FrameRef(term, selector)

    def _var(self, token) -> Var:
        var = Var(token[1:], _pos(token))
        self._variables.setdefault(var.name, var.pos)
        return var

    def property_list(self, children):
        return list(zip(children[::2], children[1::2]))

    def object_list(self, children):
        return children

    def var_term(self, children):
        (token,) = children
        return self._var(token)

    def rdf_type(self, _):
        return Const(f"<{RDF_TYPE}>")

    # --------------------------------------------------------------------- selectors

    @v_args(meta=True)
    def selector(self, meta, children):
        kind, times = children[0]
        return Selector(kind, times, _pos(meta))

    def last(self, _):
        return "last", ()

    def first(self, _):
        return "first", ()

    def every(self, _):
        return "every", ()

    def at(self, children):
        ((start, end, date),) = children
        return "at", (start, end, not date)

    def between(self, children):
        (start, _, _), (_, end, date) = children
        return "between", (start, end, not date)

    def time(self, children):
        """(start, end, is a date) of a selector's time: an xsd:dateTime, a plain string or a
        bare date-time is an instant; an xsd:date the whole day. Offsets as the paper prints
        them ('Z-06:00') are read as the offset (``terms.time_interval``)."""
        token, datatype = children if len(children) == 2 else (children[0], None)
        text = unescape(string_body(token)) if token.type == "STRING" else str(token)
        date = datatype == Const(f"<{XSD_DATE}>")
        if datatype is not None and not date and datatype != Const(f"<{XSD_DATETIME}>"):
            raise self._error(token, "a selector's time is an xsd:dateTime or an xsd:date")
        interval = time_interval(text, date=date)
        if interval is None:
            kind = "xsd:date (YYYY-MM-DD with an optional offset)" if date else "ISO 8601 date-time"
            raise self._error(token, f"not an {kind}: {excerpt(text)}")
        return interval[0], interval[1], date

    # ---------------------------------------------------------------- modifiers

    def group_clause(self, children):
        return tuple(children)

    def key_var(self, children):
        return VarRef(children[0][1:], _pos(children[0]))

    def key_time(self, children):
        return FrameTime(children[0][1:-2], _pos(children[0]))

    def having_clause(self, children):
        return children[0]

    def order_clause(self, children):
        return tuple(children)

    def order_condition(self, children):
        if len(children) == 1:
            return children[0], False
        direction, expr = children
        return expr, direction.type == "DESC"

    def order_var(self, children):
        return self.key_var(children), False

    def order_time(self, children):
        return self.key_time(children), False

    def limit_offset(self, children):
        values = dict(child for child in children if child is not None)
        return values.get("limit"), values.get("offset")

    def limit(self, children):
        return "limit", self._count(children[0], "LIMIT")

    def offset(self, children):
        return "offset", self._count(children[0], "OFFSET")

    def _count(self, token, what: str) -> int:
        """SQL's LIMIT and OFFSET are 64-bit on both backends: past that, refused on both alike."""
        if int(token) > MAX_COUNT:
            raise self._error(token, f"{what} {token} is over the limit of {MAX_COUNT}")
        return int(token)

    # -------------------------------------------------------------------- expressions

    def _binary(self, children):
        left, op, right = children
        return Op(str(op), left, right, _pos(op))

    compare = arithmetic = _binary

    @v_args(meta=True)
    def or_(self, meta, children):
        return Op("||", children[0], children[1], _pos(meta))

    @v_args(meta=True)
    def and_(self, meta, children):
        return Op("&&", children[0], children[1], _pos(meta))

    @v_args(meta=True)
    def not_(self, meta, children):
        return Op("!", children[0], None, _pos(meta))

    @v_args(meta=True)
    def negate(self, meta, children):
        (operand,) = children
        if isinstance(operand, Num):
            return Num(-operand.value, "-" + operand.text if operand.text else "")
        return Op("neg", operand, None, _pos(meta))

    def aggregate(self, children):
        name, distinct, expr = children
        return Aggregate(str(name).lower(), expr, distinct is not None, _pos(name))

    def count_all(self, children):
        name, distinct = children
        return Aggregate("count", None, distinct is not None, _pos(name))

    def expression_var(self, children):
        return VarRef(children[0][1:], _pos(children[0]))

    def call(self, children):
        name, *args = children
        return Call(str(name).lower(), tuple(a for a in args if a is not None), _pos(name))

    def frame_time(self, children):
        return self.key_time(children)

    def number(self, children):
        return Num(float(children[0]), str(children[0]))

    # ---------------------------------------------------------------------------- terms

    def _no_nul(self, token, text: str) -> str:
        """U+0000 is refused on every backend alike: PostgreSQL's text cannot hold it, so no
        stored term has it (``rdf_stream.NUL_TERM``)."""
        if "\x00" in text:
            raise self._error(
                token, "U+0000 (NUL) cannot be in a term: the store keeps no term that holds it"
            )
        return text

    def iri(self, children):
        (token,) = children
        if token.type == "IRIREF":
            return Const(f"<{self._no_nul(token, unescape(token[1:-1]))}>")
        prefix, _, local = token.partition(":")
        if prefix not in self._prefixes:
            raise self._error(token, f"undeclared prefix {prefix + ':'!r} in {str(token)!r}")
        return Const("<" + self._prefixes[prefix] + local_name(local) + ">")

    def rdf_literal(self, children):
        """A literal in a triple pattern is its N-Triples text; in an expression the caller
        turns it into a value (``_expression_constant``)."""
        string, annotation = children
        lexical = self._no_nul(string, unescape(string_body(string)))
        if isinstance(annotation, Const):
            term = Literal(lexical, datatype=URIRef(annotation.nt[1:-1]))
        else:
            term = Literal(lexical, lang=annotation[1:] if annotation else None)
        return LiteralTerm(Const(to_nt(term)), term, _pos(string))

    def numeric_literal(self, children):
        (token,) = children
        kind = "double" if "e" in token.lower() else "decimal" if "." in token else "integer"
        term = Literal(str(token), datatype=URIRef(XSD + kind))
        return LiteralTerm(Const(to_nt(term)), term, _pos(token))

    def boolean_literal(self, children):
        term = Literal(children[0].lower(), datatype=URIRef(XSD_BOOLEAN))
        return LiteralTerm(Const(to_nt(term)), term, _pos(children[0]))

    def __default__(self, data, children, meta):
        raise AssertionError(f"no rule for {data}")  # the grammar and this class out of step


@dataclass(frozen=True)
class _GraphBlock:
    """A GRAPH block's frame patterns and FILTERs, for the group around it."""

    triples: tuple
    filters: tuple


@dataclass(frozen=True)
class _FrameRef:
    """``?x[sel]`` or ``<stream>[sel]`` in the object of a triple pattern."""

    term: Any  # Var or Located
    selector: Selector


@dataclass(frozen=True)
class Located:
    """An IRI subject, kept with where it is for the error that rejects it at the top level."""

    const: Const
    pos: Pos


@dataclass(frozen=True)
class LiteralTerm:
    """A literal as written: its store text for patterns, its value for expressions."""

    const: Const
    term: Literal
    pos: Pos
