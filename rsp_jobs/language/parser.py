"""Parse C-SPARQL and RSP-QL query text into the syntax tree of ``ast.py``.

``rsp.lark`` holds the grammar; lark's LALR(1) parser turns the text into a parse tree and
``_AstBuilder`` turns that into ``ast`` nodes, expanding prefixed names, resolving IRIs against
BASE, unescaping strings and expanding blank-node property lists on the way. Every problem is
reported as a ``QuerySyntaxError`` or ``UnsupportedConstruct`` naming the file, line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from lark.visitors import Discard

from rsp_jobs.errors import QuerySyntaxError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.language.diagnostics import (
    check_depth,
    check_literals,
    syntax_error,
    terminal_display,
)
from rsp_jobs.language.lexical import local_name, string_value, unescape
from rsp_jobs.textfile import read_text
from rsp_jobs.times import parse_duration
from rsp_jobs.tree import walk

__all__ = ["parse_query", "parse_query_file"]

_GRAMMAR = Path(__file__).with_name("rsp.lark")


def parse_query(text: str, source: str = "<query>") -> ast.Query:
    """Parse one query; ``source`` names it (usually its file) in error messages."""
    parser = _parser()
    try:
        tree = parser.parse(text)
    except (UnexpectedToken, UnexpectedCharacters) as err:
        raise _syntax_error(err, text, source) from None
    check_depth(tree, source)
    check_literals(tree, source)
    _check_size(tree, source)
    used_labels = {
        str(t)[2:]
        for t in tree.scan_values(lambda v: isinstance(v, Token) and v.type == "BLANK_NODE_LABEL")
    }
    try:
        fields = _AstBuilder(source, used_labels).transform(tree)
    except VisitError as err:  # lark wraps whatever a callback raises
        raise err.orig_exc from None
    query = ast.Query(**fields, text=text, source=source)
    _check_blank_nodes(query, source)
    _check_registration(query)
    return query


def _check_size(tree: Tree, source: str) -> None:
    """At most MAX_PATTERNS triple patterns and MAX_BINDS BINDs, refused where the first one
    past the limit is written. A property path counts a pattern for each IRI it names: each
    is a triple pattern (section 18.2.2.4) or a join or union of the path's."""
    patterns = binds = 0
    for node in tree.iter_subtrees_topdown():
        if node.data == "property_list":
            for verb, objects in zip(node.children[::2], node.children[1::2]):
                weight = max(1, sum(1 for _ in verb.find_pred(_names_a_predicate)))
                for obj in objects.children:
                    patterns += weight
                    if patterns > MAX_PATTERNS:
                        where = obj.meta if isinstance(obj, Tree) else obj
                        raise QuerySyntaxError(
                            source,
                            where.line,
                            where.column,
                            f"more than {MAX_PATTERNS} triple patterns in one query; split it "
                            "into queries chained by REGISTER STREAM",
                        )
        elif node.data == "bind":
            binds += 1
            if binds > MAX_BINDS:
                raise QuerySyntaxError(
                    source,
                    node.meta.line,
                    node.meta.column,
                    f"more than {MAX_BINDS} BINDs in one query; compute fewer values per query",
                )


def _names_a_predicate(node: Tree) -> bool:
    return node.data in ("iri", "rdf_type", "bare_name")


def _check_registration(query: ast.Query) -> None:
    """C-SPARQL §3.3: "only CONSTRUCT and DESCRIBE queries can be registered [as streams], as
    they produce RDF triples that, once associated with a timestamp, yield RDF streams"."""
    reg = query.registration
    if reg is None or reg.kind != "STREAM" or query.form in ("CONSTRUCT", "DESCRIBE"):
        return
    where = reg.position or ast.Position(1, 1)
    raise QuerySyntaxError(
        query.source,
        where.line,
        where.column,
        f"REGISTER STREAM needs a query that yields triples, CONSTRUCT or DESCRIBE "
        f"(C-SPARQL: only those can be registered as streams); this one is {query.form}: "
        "register it as REGISTER QUERY, or CONSTRUCT the triples its stream should carry",
    )


def _check_blank_nodes(node, source: str) -> None:
    """A blank node in an expression is only a timestamp() argument (tutorial 004:
    ``timestamp(variable|IRI|bn, variable|IRI, variable|IRI|bn|literal)``)."""
    for n in walk(node):
        if isinstance(n, _BlankInExpression):
            raise QuerySyntaxError(
                source,
                n.line,
                n.column,
                "a blank node can stand in an expression only as an argument of timestamp()",
            )


def parse_query_file(path: str | Path) -> ast.Query:
    """Parse the query in a file, naming the file in error messages."""
    return parse_query(read_text(path, "query"), source=str(path))


# Limits on numbers in a query, checked when it is parsed (docs/operations/limits.md): past them a value
# no longer fits where it goes (Spark's int LIMIT and window sizes, Python's datetime range for
# a window), so a query that names one is refused, naming the line and column. Durations
# (RANGE, STEP, WITHIN) are parsed and limited by ``rsp_jobs.times.parse_duration``.
MAX_COUNT = 2**31 - 1  # TRIPLES n, LIMIT, OFFSET: Spark takes them as a Java int
# Spark plans each triple pattern as a join and each BIND as a projection: a 100-pattern BGP ran
# its driver out of memory (50 took 20 s), 200 BINDs took a minute to plan (docs/operations/limits.md).
MAX_PATTERNS = 64
MAX_BINDS = 100


# ------------------------------------------------------------------------------ the parser


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


# Names for the terminals that are patterns, in "expected one of: ..." lists; keywords and
# punctuation are shown as written.
_TERMINAL_NAMES = {
    "IRIREF": "IRI",
    "PNAME_LN": "prefixed name",
    "PNAME_NS": "prefix",
    "VAR": "variable",
    "BLANK_NODE_LABEL": "blank node",
    "STRING": "string",
    "NUMBER": "number",
    "SIGNED_NUMBER": "number",
    "INTEGER": "integer",
    "LANGTAG": "language tag",
    "DURATION": "duration (e.g. 3s, PT3S)",
    "ISO_DURATION": "duration (e.g. 3s, PT3S)",
    "NAME": "query name",
    "FUNCTION_NAME": "function name",
    "$END": "end of input",
}


@cache
def _terminal_display() -> dict[str, str]:
    return terminal_display(_parser(), _TERMINAL_NAMES)


def _syntax_error(
    err: UnexpectedToken | UnexpectedCharacters, text: str, source: str
) -> QuerySyntaxError:
    return syntax_error(err, text, source, _terminal_display())


# -------------------------------------------------------------------------- the AST builder

_XSD_STRING = ast.XSD + "string"
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_NUMERIC = {ast.XSD + "integer", ast.XSD + "decimal", ast.XSD + "double"}
_TIMESTAMP_IRI = ast.CSPARQL_FUNCTIONS + "timestamp"

# Built-in functions: lower-case name -> (fewest, most) arguments.
_BUILTINS: dict[str, tuple[int, int | None]] = {
    **dict.fromkeys(
        [
            "str",
            "lang",
            "datatype",
            "bound",
            "iri",
            "uri",
            "abs",
            "ceil",
            "floor",
            "round",
            "strlen",
            "ucase",
            "lcase",
            "encode_for_uri",
            "year",
            "month",
            "day",
            "hours",
            "minutes",
            "seconds",
            "timezone",
            "tz",
            "md5",
            "sha1",
            "sha256",
            "sha384",
            "sha512",
            "isiri",
            "isuri",
            "isblank",
            "isliteral",
            "isnumeric",
        ],
        (1, 1),
    ),
    **dict.fromkeys(
        [
            "langmatches",
            "contains",
            "strstarts",
            "strends",
            "strbefore",
            "strafter",
            "strlang",
            "strdt",
            "sameterm",
        ],
        (2, 2),
    ),
    **dict.fromkeys(["now", "rand", "uuid", "struuid"], (0, 0)),
    **dict.fromkeys(["concat", "coalesce"], (0, None)),  # any number
    "bnode": (0, 1),
    "regex": (2, 3),
    "substr": (2, 3),
    "replace": (3, 4),
    "if": (3, 3),
    "timestamp": (3, 3),
    # EP-SPARQL's interval built-ins (section 3.1): the duration, start and end of a match.
    **dict.fromkeys(["getduration", "getstarttime", "getendtime"], (0, 0)),
}


def _position(item) -> ast.Position:
    """Where a token or a rule's ``meta`` starts."""
    return ast.Position(item.line, item.column)


@dataclass(frozen=True)
class _BlankInExpression:
    """A blank node written in an expression: only timestamp() takes one (``_check_blank_nodes``)."""

    node: ast.BNode
    line: int
    column: int


class _WithTriples(NamedTuple):
    """A blank-node property list: the fresh node and the triples that describe it."""

    node: ast.BNode
    triples: list[ast.TriplePattern | ast.PathPattern]


class _PathVerb(NamedTuple):
    """A property path in a verb's place, and where it is written."""

    path: ast.PathExpr
    position: ast.Position


def _normalized(path: ast.PathExpr) -> ast.PathExpr:
    """``path`` with every inverse pushed down to an IRI or a negated set (SPARQL 1.1 section
    18.4: eval(Path(X, inv(P), Y)) is eval(Path(Y, P, X)), so inv(seq(P, Q)) has the solutions
    of seq(inv(Q), inv(P)), inv(alt(P, Q)) those of alt(inv(P), inv(Q)), inv(P*) those of
    inv(P)*, and inv(NPS) reverses which members are forward), and a sequence in a sequence,
    or an alternative in an alternative, made one (``(p/q)/r`` is ``p/q/r``)."""
    if isinstance(path, ast.PathInverse):
        return _inverted(_normalized(path.path))
    if isinstance(path, ast.PathSequence):
        steps = [_normalized(p) for p in path.steps]
        return ast.PathSequence(
            tuple(s for p in steps for s in (p.steps if isinstance(p, ast.PathSequence) else (p,)))
        )
    if isinstance(path, ast.PathAlternative):
        alts = [_normalized(p) for p in path.alternatives]
        return ast.PathAlternative(
            tuple(
                a
                for p in alts
                for a in (p.alternatives if isinstance(p, ast.PathAlternative) else (p,))
            )
        )
    if isinstance(path, (ast.PathZeroOrMore, ast.PathOneOrMore, ast.PathZeroOrOne)):
        return type(path)(_normalized(path.path))
    return path


def _inverted(path: ast.PathExpr) -> ast.PathExpr:
    """inv(``path``) for a normalized ``path``, normalized."""
    if isinstance(path, ast.PathInverse):
        return path.path
    if isinstance(path, ast.PathSequence):
        return ast.PathSequence(tuple(_inverted(p) for p in reversed(path.steps)))
    if isinstance(path, ast.PathAlternative):
        return ast.PathAlternative(tuple(_inverted(p) for p in path.alternatives))
    if isinstance(path, (ast.PathZeroOrMore, ast.PathOneOrMore, ast.PathZeroOrOne)):
        return type(path)(_inverted(path.path))
    if isinstance(path, ast.PathNegated) and (path.forward or path.inverse):
        return ast.PathNegated(path.inverse, path.forward)
    return ast.PathInverse(path)  # an IRI, or !() (every triple, reversed)


class _AstBuilder(Transformer):
    """Turns the parse tree into ``ast`` nodes, bottom-up and left to right, so PREFIX and BASE
    declarations are known before the names that use them (as SPARQL requires)."""

    def __init__(self, source: str, used_labels: set[str]):
        super().__init__(visit_tokens=False)
        self._source = source
        self._used_labels = used_labels
        self._next_label = 0
        self._prefixes: dict[str, str] = {}
        self._base: str | None = None
        self._path_positions: list[ast.Position] = []  # every property path's (``verb``)

    def _error(self, where, message: str) -> QuerySyntaxError:
        """An error at a token or a rule's ``meta``."""
        return QuerySyntaxError(self._source, where.line, where.column, message)

    def _unsupported(self, meta, construct: str) -> UnsupportedConstruct:
        return UnsupportedConstruct(self._source, construct, meta.line, meta.column)

    def _fresh_bnode(self) -> ast.BNode:
        """A label no ``_:label`` in the query uses."""
        while True:
            label = f"_b{self._next_label}"
            self._next_label += 1
            if label not in self._used_labels:
                return ast.BNode(label)

    def _iri_ref(self, token: Token) -> str:
        iri = unescape(token[1:-1])
        return _resolve(self._base, iri) if self._base else iri

    # ---------------------------------------------------------------- prologue, registration

    def start(self, children):
        *registration, fields = children
        return dict(
            fields,
            registration=registration[0] if registration else None,
            prefixes=tuple(self._prefixes.items()),
            base=self._base,
        )

    def prologue(self, _):
        return Discard

    def base_decl(self, children):
        self._base = self._iri_ref(children[0])

    def prefix_decl(self, children):
        name, iri = children
        self._prefixes[name[:-1]] = self._iri_ref(iri)

    @v_args(meta=True)
    def registration(self, meta, children):
        kind, name, every = children
        return ast.Registration(
            kind, name.value if isinstance(name, ast.IRI) else str(name), every, _position(meta)
        )

    def registration_kind(self, children):
        return children[0].upper()

    # ------------------------------------------------------------------------- query forms

    def _form(self, form: str, children: list, **fields) -> dict:
        """The fields common to every form, from ``dataset_clause* where aggregate_clause*
        modifiers values?`` (DESCRIBE's where may be missing: the empty group)."""
        where = next(
            (c for c in children if isinstance(c, (ast.GroupPattern, ast.SubSelect))),
            ast.GroupPattern(()),
        )
        # WHERE { SELECT ... }: the group holding just the subquery
        if isinstance(where, ast.SubSelect):
            where = ast.GroupPattern((where,))
        modifiers = next(c for c in children if isinstance(c, dict))
        return dict(
            fields,
            **modifiers,
            values=next((c for c in children if isinstance(c, ast.InlineData)), None),
            form=form,
            where=where,
            aggregates=tuple(c for c in children if isinstance(c, ast.AggregateClause)),
            streams=tuple(c for c in children if isinstance(c, ast.StreamClause)),
            graphs=tuple(c for c in children if isinstance(c, ast.GraphClause)),
        )

    def select_query(self, children):
        (distinct, projection), *rest = children
        return self._form("SELECT", rest, distinct=distinct, projection=projection)

    def select_clause(self, children):
        modifier, *items = children
        return modifier is not None, tuple(items) or None

    @v_args(meta=True)
    def select_item(self, meta, children):
        if len(children) == 1:
            return ast.SelectItem(children[0], position=_position(meta))
        expr, var = children
        return ast.SelectItem(var, expr, _position(meta))

    def select_item_named_first(self, children):
        """``?count AS ?prevcount + 1``: EP-SPARQL's example (5) names the variable first."""
        var, first, *operations = children
        return ast.SelectItem(var, _arithmetic(first, operations), None)

    def select_item_named_last(self, children):
        """``?sum / ?count AS ?average``: example (6), SPARQL's order without the brackets."""
        first, *operations, var = children
        return ast.SelectItem(var, _arithmetic(first, operations), None)

    def select_operation(self, children):
        op, operand = children
        return str(op), operand

    @v_args(meta=True)
    def bare_template(self, meta, children):
        self._check_no_paths(meta, "a CONSTRUCT template")
        return tuple(children[0])

    def bare_name(self, children):
        (token,) = children
        if "" not in self._prefixes:
            raise self._error(
                token,
                f"the bare name {str(token)!r} is read as ':{token}' (EP-SPARQL's examples "
                "write names so), but the default prefix is not declared: add PREFIX : <...>",
            )
        return ast.IRI(self._prefixes[""] + str(token))

    def construct_query(self, children):
        template, *rest = children
        return self._form("CONSTRUCT", rest, template=template)

    def construct_where(self, children):
        template = next(c for c in children if isinstance(c, tuple))
        where = ast.GroupPattern((ast.TriplesBlock(template),) if template else ())
        return self._form(
            "CONSTRUCT", [c for c in children if c is not template] + [where], template=template
        )

    @v_args(meta=True)
    def construct_template(self, meta, children):
        self._check_no_paths(meta, "a CONSTRUCT template")
        return tuple(children[0] or ())

    def ask_query(self, children):
        return self._form("ASK", children)

    def describe_query(self, children):
        """``DESCRIBE ?x <iri> ...`` or ``DESCRIBE *`` (``described`` None), WHERE optional."""
        described = tuple(c for c in children if isinstance(c, (ast.Var, ast.IRI)))
        return self._form("DESCRIBE", children, described=described or None)

    @v_args(meta=True)
    def aggregate_clause(self, meta, children):
        var, aggregate, group, condition = children
        return ast.AggregateClause(
            var, aggregate, group, condition.expr if condition else None, _position(meta)
        )

    def aggregate_function(self, children):
        """``COUNT`` as the paper prints it (the group's solutions), or ``FUN([DISTINCT] ?x)``;
        SUM, AVG, MIN and MAX need the variable they aggregate."""
        name = children[0]
        distinct = any(isinstance(c, Token) and c.type == "DISTINCT" for c in children[1:])
        arg = next((c for c in children[1:] if isinstance(c, ast.Var)), None)
        if arg is None and name.upper() != "COUNT":
            raise self._error(
                name,
                f"{name.upper()} in an AGGREGATE clause needs the variable it aggregates, "
                f"e.g. (?total, {name.upper()}(?x), {{?group}}); only COUNT counts the "
                "group's solutions without one",
            )
        return ast.Aggregate(name.lower(), arg, distinct)

    def aggregate_group(self, children):
        return tuple(children)

    # ----------------------------------------------------------------------------- dataset

    @v_args(meta=True)
    def from_graph(self, meta, children):
        return ast.GraphClause(children[0].value, False, _position(meta))

    @v_args(meta=True)
    def from_named_graph(self, meta, children):
        return ast.GraphClause(children[0].value, True, _position(meta))

    @v_args(meta=True)
    def from_stream(self, meta, children):
        """``window`` is None for an EP-SPARQL pattern's stream; the algebra checks that."""
        iri, window = children
        return ast.StreamClause(iri.value, window, None, _position(meta))

    @v_args(meta=True)
    def from_named_stream(self, meta, children):
        iri, window = children
        return ast.StreamClause(iri.value, window, iri.value, _position(meta))

    @v_args(meta=True)
    def from_named_window(self, meta, children):
        name, stream, window = children
        return ast.StreamClause(stream.value, window, name.value, _position(meta))

    def sliding_window(self, children):
        return ast.TimeWindow(*children)

    def tumbling_window(self, children):
        return ast.TimeWindow(children[0], children[0])

    def count_window(self, children):
        (count,) = children
        if int(count) == 0:
            raise self._error(count, "a TRIPLES window must hold at least one triple")
        return ast.CountWindow(self._count(count, "TRIPLES"))

    def _count(self, token, what: str) -> int:
        if int(token) > MAX_COUNT:
            raise self._error(token, f"{what} {token} is over the limit of {MAX_COUNT}")
        return int(token)

    def duration(self, children):
        (token,) = children
        try:
            ms = parse_duration(str(token))
        except ValueError as err:
            raise self._error(token, str(err)) from None
        if ms <= 0:
            raise self._error(token, f"duration {str(token)!r} must be positive")
        return ms

    # ------------------------------------------------------------------ solution modifiers

    def solution_modifier(self, children):
        group_by, having, order_by, limit_offset = children
        return dict(
            group_by=group_by or (),
            having=having or (),
            order_by=order_by or (),
            **(limit_offset or {}),
        )

    def group_clause(self, children):
        return tuple(children)

    def group_condition(self, children):
        return ast.GroupCondition(*children)

    def having_clause(self, children):
        return tuple(children)

    def order_clause(self, children):
        return tuple(children)

    def order_condition(self, children):
        if len(children) == 1:
            return ast.OrderCondition(children[0])
        direction, expr = children
        return ast.OrderCondition(expr, descending=direction.type == "DESC")

    def limit_offset(self, children):
        return dict(child for child in children if child is not None)

    def limit(self, children):
        return "limit", self._count(children[0], "LIMIT")

    def offset(self, children):
        return "offset", self._count(children[0], "OFFSET")

    @v_args(meta=True)
    def values_clause(self, meta, children):
        """SPARQL 1.1 section 10.2: "each row of the data block must have the same number of
        values as there are variables"; a variable named twice would bind two values."""
        ((vars_, rows),) = children
        for var in vars_:
            if vars_.count(var) > 1:
                raise self._error(meta, f"VALUES names ?{var.name} twice")
        for row, row_meta in rows:
            if len(row) != len(vars_):
                raise self._error(
                    row_meta,
                    f"this VALUES row has {len(row)} value(s) for {len(vars_)} variable(s)",
                )
        return ast.InlineData(tuple(vars_), tuple(row for row, _ in rows), _position(meta))

    @v_args(meta=True)
    def values_of_one(self, meta, children):
        var, *data = children
        return [var], [((self._data_value(d),), meta) for d in data]

    def values_of_many(self, children):
        vars_ = [c for c in children if isinstance(c, ast.Var)]
        return vars_, [c for c in children if not isinstance(c, ast.Var)]

    @v_args(meta=True)
    def values_row(self, meta, children):
        return tuple(self._data_value(d) for d in children), meta

    @staticmethod
    def _data_value(value):
        """UNDEF leaves the variable unbound in that row."""
        return None if isinstance(value, Token) and value.type == "UNDEF" else value

    # ---------------------------------------------------------------------- graph patterns

    def group_graph_pattern(self, children):
        return ast.GroupPattern(
            tuple(ast.TriplesBlock(tuple(c)) if isinstance(c, list) else c for c in children)
        )

    def subquery(self, children):
        """SPARQL 1.1 section 12: a SELECT nested in a pattern, evaluated on its own."""
        (distinct, projection), where, modifiers, *values = children
        return ast.SubSelect(
            ast.Query(
                form="SELECT",
                where=where,
                projection=projection,
                distinct=distinct,
                **modifiers,
                values=values[0] if values else None,
                source=self._source,
            )
        )

    def group_or_union(self, children):
        return _fold_operators(children)

    def event_operator(self, children):
        return children[0].upper()

    def bare_where(self, children):
        """``WHERE {..} SEQ {..} FILTER (..)`` as the paper writes it: the same as the braced
        ``WHERE { {..} SEQ {..} FILTER (..) }``."""
        chain = [c for c in children if not isinstance(c, ast.Filter)]
        filters = [c for c in children if isinstance(c, ast.Filter)]
        return ast.GroupPattern((_fold_operators(chain), *filters))

    # ``{ SELECT ... }`` after OPTIONAL, MINUS or GRAPH is a group holding the subquery
    def optional_pattern(self, children):
        return ast.OptionalPattern(_as_group(children[0]))

    def minus_pattern(self, children):
        return ast.MinusPattern(_as_group(children[0]))

    def graph_pattern(self, children):
        name, group = children
        return ast.GraphPattern(name, _as_group(group))

    window_pattern = graph_pattern

    @v_args(meta=True)
    def service_pattern(self, meta, _):
        raise self._unsupported(meta, "SERVICE")

    def filter(self, children):
        return ast.Filter(children[0])

    def bind(self, children):
        return ast.Bind(*children)

    # ----------------------------------------------------------------------------- triples

    def triples_block(self, children):
        return [triple for triples in children for triple in triples]

    def triples_same_subject(self, children):
        subject, properties = children if len(children) == 2 else (children[0], [])
        if isinstance(subject, _WithTriples):
            return subject.triples + self._expand(subject.node, properties)
        return self._expand(subject, properties)

    def _expand(self, subject: ast.Term, properties) -> list[ast.TriplePattern | ast.PathPattern]:
        """Triples for ``subject verb object, ... ; ...``; a blank-node property list in object
        position contributes its node, then its own triples right after; a property path its
        patterns (``_path_patterns``)."""
        triples: list[ast.TriplePattern | ast.PathPattern] = []
        for verb, objects in properties:
            for obj in objects:
                node = obj.node if isinstance(obj, _WithTriples) else obj
                if isinstance(verb, _PathVerb):
                    triples.extend(self._path_patterns(subject, verb.path, node, verb.position))
                else:
                    triples.append(ast.TriplePattern(subject, verb, node))
                if isinstance(obj, _WithTriples):
                    triples.extend(obj.triples)
        return triples

    def _path_patterns(
        self, subject: ast.Term, path: ast.PathExpr, obj: ast.Term, position: ast.Position
    ) -> list[ast.TriplePattern | ast.PathPattern]:
        """SPARQL 1.1 section 18.2.2.4, Translate Property Path Patterns: "X link(iri) Y" is
        the triple pattern "X iri Y", "X inv(iri) Y" is "Y iri X", "X seq(P, Q) Y" is
        "X P ?V . ?V Q Y" with ?V a fresh variable, and any other "X P Y" is Path(X, P, Y).
        Inverses are pushed down to the IRIs first (``_inverted``), so ``^(p/q)`` becomes
        triples as ``^q/^p`` does. The fresh variables are blank nodes: non-distinguished
        variables, never in SELECT * (section 18.2.1)."""
        path = _normalized(path)
        if isinstance(path, ast.IRI):
            return [ast.TriplePattern(subject, path, obj)]
        if isinstance(path, ast.PathInverse) and isinstance(path.path, ast.IRI):
            return [ast.TriplePattern(obj, path.path, subject)]
        if isinstance(path, ast.PathSequence):
            patterns: list[ast.TriplePattern | ast.PathPattern] = []
            start = subject
            for i, step in enumerate(path.steps):
                end = obj if i == len(path.steps) - 1 else self._fresh_bnode()
                patterns += self._path_patterns(start, step, end, position)
                start = end
            return patterns
        return [ast.PathPattern(subject, path, obj, position)]

    def property_list(self, children):
        return list(zip(children[::2], children[1::2]))

    def object_list(self, children):
        return children

    def blank_node_property_list(self, children):
        node = self._fresh_bnode()
        return _WithTriples(node, self._expand(node, children[0]))

    def collection(self, children):
        """SPARQL 1.1 section 4.2.5: ``(1 ?x)`` is a fresh blank node heading an rdf:first /
        rdf:rest list of its members, ending in rdf:nil; ``()`` is rdf:nil itself. In a pattern
        the nodes are non-distinguished variables, in a template fresh nodes per solution."""
        if not children:
            return ast.IRI(_RDF + "nil")
        head = node = self._fresh_bnode()
        triples: list[ast.TriplePattern] = []
        for i, member in enumerate(children):
            value, described = (
                (member.node, member.triples) if isinstance(member, _WithTriples) else (member, [])
            )
            rest = self._fresh_bnode() if i < len(children) - 1 else ast.IRI(_RDF + "nil")
            triples.append(ast.TriplePattern(node, ast.IRI(_RDF + "first"), value))
            triples.extend(described)
            triples.append(ast.TriplePattern(node, ast.IRI(_RDF + "rest"), rest))
            node = rest
        return _WithTriples(head, triples)

    def rdf_type(self, _):
        return ast.IRI(ast.RDF_TYPE)

    # ---------------------------------------------------------------------- property paths

    @v_args(meta=True)
    def verb(self, meta, children):
        """A variable or IRI as it is; a property path with where it is written, for
        ``_expand`` (section 18.2.2.4) and for messages."""
        (verb,) = children
        if isinstance(verb, (ast.Var, ast.IRI)):
            return verb
        position = _position(meta)
        self._path_positions.append(position)
        return _PathVerb(verb, position)

    def path(self, children):
        return ast.PathAlternative(tuple(children))

    def path_sequence(self, children):
        return ast.PathSequence(tuple(children))

    def path_inverse(self, children):
        return ast.PathInverse(children[0])

    def path_zero_or_one(self, children):
        return ast.PathZeroOrOne(children[0])

    def path_zero_or_more(self, children):
        return ast.PathZeroOrMore(children[0])

    def path_one_or_more(self, children):
        return ast.PathOneOrMore(children[0])

    def path_negated(self, children):
        """Rules [95]-[96]: ``!iri``, ``!^iri``, ``!()`` and ``!(iri|^iri|...)``."""
        return ast.PathNegated(
            tuple(iri for inverse, iri in children if not inverse),
            tuple(iri for inverse, iri in children if inverse),
        )

    def path_in_set(self, children):
        return False, children[0]

    def path_in_set_inverse(self, children):
        return True, children[0]

    def _check_no_paths(self, meta, what: str) -> None:
        """A CONSTRUCT template is TriplesTemplate (SPARQL 1.1 rules [73]-[75], [52]): its verbs
        are variables and IRIs, never paths, which have no triples to construct."""
        start, end = (meta.line, meta.column), (meta.end_line, meta.end_column)
        for position in self._path_positions:
            if start <= (position.line, position.column) <= end:
                raise self._error(
                    position, f"a property path cannot stand in {what}; write one triple a step"
                )

    # ------------------------------------------------------------------------- expressions

    def _binary(self, children):
        left, op, right = children
        return ast.BinaryOp(op.value, left, right)

    or_expr = and_expr = relational = additive = multiplicative = _binary

    def unary(self, children):
        """``-1`` arrives as ``-`` and ``1``: it is the literal -1, as in SPARQL."""
        op, operand = children
        if (
            op in "+-"
            and isinstance(operand, ast.Literal)
            and operand.datatype in _NUMERIC
            and operand.lexical[0] not in "+-"
        ):
            return ast.Literal(op + operand.lexical, operand.datatype)
        return ast.UnaryOp(op.value, operand)

    def in_expr(self, children):
        return ast.In(children[0], children[-1])

    def not_in_expr(self, children):
        return ast.In(children[0], children[-1], negated=True)

    def expression_list(self, children):
        return tuple(children)

    arg_list = expression_list

    def builtin_call(self, children):
        name_token, args = children
        name = name_token.lower()
        if name not in _BUILTINS:
            raise self._error(name_token, f"unknown function {str(name_token)!r}")
        fewest, most = _BUILTINS[name]
        if len(args) < fewest or (most is not None and len(args) > most):
            wanted = f"{fewest}" if fewest == most else f"{fewest} or {most}"
            raise self._error(name_token, f"{name}() takes {wanted} argument(s), not {len(args)}")
        if name == "bound" and not isinstance(args[0], ast.Var):
            raise self._error(name_token, "bound() takes a variable")
        if name == "timestamp":
            return self._timestamp(name_token, args)
        where = _position(name_token)
        if name in ("iri", "uri") and self._base:
            return ast.FunctionCall(name, args, base=self._base, position=where)
        return ast.FunctionCall(name, args, position=where)

    @v_args(meta=True)
    def function_call(self, meta, children):
        iri, args = children
        if iri.value == _TIMESTAMP_IRI:
            if len(args) != 3:
                raise self._error(meta, f"timestamp() takes 3 argument(s), not {len(args)}")
            return self._timestamp(meta, args)
        return ast.FunctionCall(iri.value, args)

    def _timestamp(self, where, args) -> ast.Timestamp:
        """Tutorial 004: ``timestamp(variable|IRI|bn, variable|IRI, variable|IRI|bn|literal)``;
        a blank node matches any term there."""
        args = [a.node if isinstance(a, _BlankInExpression) else a for a in args]
        allowed = (
            (ast.Var, ast.IRI, ast.BNode),
            (ast.Var, ast.IRI),
            (ast.Var, ast.IRI, ast.BNode, ast.Literal),
        )
        for arg, kinds, position in zip(args, allowed, ("subject", "predicate", "object")):
            if not isinstance(arg, kinds):
                names = {
                    ast.Var: "a variable",
                    ast.IRI: "an IRI",
                    ast.BNode: "a blank node",
                    ast.Literal: "a literal",
                }
                raise self._error(
                    where,
                    f"timestamp()'s {position} must be {' or '.join(names[k] for k in kinds)}",
                )
        return ast.Timestamp(*args)

    def aggregate(self, children):
        name, distinct, expr, separator = children
        if separator is not None and name.upper() != "GROUP_CONCAT":
            raise self._error(separator, "only GROUP_CONCAT takes a SEPARATOR")
        return ast.Aggregate(
            name.lower(),
            expr,
            distinct is not None,
            None if separator is None else string_value(separator),
        )

    def count_all(self, children):
        return ast.Aggregate("count", None, children[1] is not None)

    @v_args(meta=True)
    def exists(self, meta, children):
        return ast.Exists(_as_group(children[0]), False, _position(meta))

    @v_args(meta=True)
    def not_exists(self, meta, children):
        return ast.Exists(_as_group(children[0]), True, _position(meta))

    # ------------------------------------------------------------------------------- terms

    def var(self, children):
        return ast.Var(children[0][1:])

    expression_var = var

    def expression_blank_node(self, children):
        (token,) = children
        return _BlankInExpression(ast.BNode(token[2:]), token.line, token.column)

    @v_args(meta=True)
    def expression_anonymous_blank_node(self, meta, _):
        return _BlankInExpression(self._fresh_bnode(), meta.line, meta.column)

    def iri(self, children):
        (token,) = children
        if token.type == "IRIREF":
            return ast.IRI(self._iri_ref(token))
        prefix, _, local = token.partition(":")
        if prefix not in self._prefixes:
            raise self._error(token, f"undeclared prefix {prefix + ':'!r} in {str(token)!r}")
        return ast.IRI(self._prefixes[prefix] + local_name(local))

    def rdf_literal(self, children):
        string, annotation = children
        lexical = string_value(string)
        if isinstance(annotation, ast.IRI):
            datatype = None if annotation.value == _XSD_STRING else annotation.value
            return ast.Literal(lexical, datatype)
        return ast.Literal(lexical, lang=annotation[1:] if annotation else None)

    def numeric_literal(self, children):
        """Integer, decimal or double by the form of the number, as in SPARQL."""
        (token,) = children
        kind = "double" if "e" in token.lower() else "decimal" if "." in token else "integer"
        return ast.Literal(str(token), ast.XSD + kind)

    expression_number = numeric_literal

    def boolean_literal(self, children):
        return ast.Literal(children[0].lower(), ast.XSD + "boolean")

    def blank_node(self, children):
        return ast.BNode(children[0][2:])

    def anonymous_blank_node(self, _):
        return self._fresh_bnode()


def _arithmetic(first: ast.Expr, operations: list[tuple[str, ast.Expr]]) -> ast.Expr:
    """``first op1 e1 op2 e2 ...`` with * and / binding tighter than + and -, left to right."""
    terms, ops = [first], []
    for op, operand in operations:
        if op in ("*", "/"):
            terms[-1] = ast.BinaryOp(op, terms[-1], operand)
        else:
            ops.append(op)
            terms.append(operand)
    expr = terms[0]
    for op, operand in zip(ops, terms[1:]):
        expr = ast.BinaryOp(op, expr, operand)
    return expr


def _fold_operators(chain: list) -> ast.GroupPattern | ast.UnionPattern | ast.EventPattern:
    """``g (op g)*`` folded left to right, all operators at one precedence (EP-SPARQL 3.1);
    a chain of UNIONs alone stays one ``UnionPattern``, as plain SPARQL has it."""
    node = chain[0]
    for op, written in zip(chain[1::2], chain[2::2]):
        right = _as_group(written)  # ``{ SELECT ... }`` is a group holding the subquery
        if op == "UNION":
            alternatives = (
                node.alternatives if isinstance(node, ast.UnionPattern) else (_as_group(node),)
            )
            node = ast.UnionPattern((*alternatives, right))
        else:
            node = ast.EventPattern(op, _as_group(node), right)
    return node


def _as_group(node) -> ast.GroupPattern:
    return node if isinstance(node, ast.GroupPattern) else ast.GroupPattern((node,))


# RFC 3986 appendix B: scheme, authority, path, query, fragment.
_IRI_PARTS = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL
)


def _resolve(base: str, reference: str) -> str:
    """A relative ``reference`` resolved against ``base`` as RFC 3986 section 5.2 says; absolute
    IRIs stay as written. (urllib's urljoin would drop an empty fragment, turning
    ``<http://ex.org/ns#>`` into ``http://ex.org/ns``, and ignores unknown schemes.)"""
    scheme, authority, path, query, fragment = _iri_parts(reference)
    if scheme is not None:
        return reference
    scheme, base_authority, base_path, base_query, _ = _iri_parts(base)
    if authority is None:
        authority = base_authority
        if not path:
            path, query = base_path, base_query if query is None else query
        elif not path.startswith("/"):
            if base_authority is not None and not base_path:
                path = "/" + path
            else:
                path = base_path[: base_path.rfind("/") + 1] + path
    return "".join(
        [
            f"{scheme}:" if scheme is not None else "",
            f"//{authority}" if authority is not None else "",
            _remove_dot_segments(path),
            f"?{query}" if query is not None else "",
            f"#{fragment}" if fragment is not None else "",
        ]
    )


def _iri_parts(iri: str) -> tuple[str | None, str | None, str, str | None, str | None]:
    """``iri``'s scheme, authority, path, query and fragment (None where absent; the path is
    always there, maybe empty)."""
    parts = _IRI_PARTS.fullmatch(iri)
    if parts is None:  # every part is optional, so any text matches
        raise ValueError(f"{iri!r} does not split into the parts of RFC 3986")
    scheme, authority, path, query, fragment = parts.groups()
    return scheme, authority, path, query, fragment


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on whole segments."""
    if "." not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1 or (output and output[0] != ""):
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/".join(output)
