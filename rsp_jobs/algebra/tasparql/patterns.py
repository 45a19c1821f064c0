"""WHERE → pattern operators: a group's frames scanned and joined (``Frames``), OPTIONAL, UNION
and FILTER as SPARQL 1.1's algebra (§18.2.2), every variable resolved where it is bound and
every FILTER typed in the scope it is tested in."""

from __future__ import annotations

from dataclasses import dataclass, field

from rsp_jobs.algebra.tasparql.expressions import Scope, Time, Types, constant
from rsp_jobs.algebra.tasparql.nodes import (
    At,
    Between,
    Binds,
    Constant,
    Equals,
    Every,
    Filter,
    First,
    FramePattern,
    Frames,
    FrameScan,
    Invariant,
    Join,
    Last,
    LeftJoin,
    Pattern,
    Selector,
    Slot,
    StreamLink,
    Union_,
    Unit,
)
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language import tasparql as ast

UNIT = Unit()

# join order: a point or one frame per stream first, then a range, then every frame
_SELECTIVITY = {At: 0, First: 0, Last: 0, Between: 1, Every: 2}


def selector(written: ast.Selector | None) -> Selector:
    """The operator of a selector as the parser read it; none is ``[*]``."""
    if written is None or written.kind == "every":
        return Every()
    if written.kind == "at":
        return At(*written.times)
    if written.kind == "between":
        return Between(*written.times)
    return First() if written.kind == "first" else Last()


def scope_of(node: Pattern) -> Scope:
    """Where an expression over ``node`` is read: a ``Frames``' own columns, else a table."""
    return node.scope if isinstance(node, Frames) else Scope.of_solutions(node.schema)


@dataclass
class _Bound:
    """The variables of one ``Frames`` bound so far, in the order the scans bind them."""

    frames: list = field(default_factory=list)
    times: list = field(default_factory=list)
    terms: dict = field(default_factory=dict)  # variable -> whether it has a number and a time

    def term(self, name: str, values: bool) -> Slot:
        """A term variable met at a position: bound there the first time, else the same term."""
        known = self.terms.get(name)
        if known is None:
            self.terms[name] = values
            return Binds(name, values)
        takes = values and not known
        if takes:
            self.terms[name] = True
        return Equals(name, takes)

    def scope(self) -> Scope:
        return Scope(tuple(self.frames), tuple(self.times), tuple(self.terms.items()))


class Patterns:
    """The pattern operators of one query's WHERE."""

    def __init__(self, query: ast.Query):
        self.source = query.source
        self.frame_names = frozenset(frame.name for frame in query.frames)
        self.selectors = {frame.name: selector(frame.selector) for frame in query.frames}

    def error(self, pos: ast.Pos, message: str) -> QuerySyntaxError:
        return QuerySyntaxError(self.source, pos.line, pos.column, message)

    # ------------------------------------------------------------------------------ groups

    def group(self, group: ast.GroupPattern, filtered: bool = True) -> Pattern:
        """A group's elements joined in order, an OPTIONAL left-joined to what comes before it
        with its FILTERs as the condition (SPARQL 1.1 §18.2.2.6), then the group's own FILTERs
        (§18.2.2.7) unless ``filtered`` is False (the caller applies them)."""
        if group.basic is not None:
            frames = self.frames(group.basic)
            return self.filter(frames, group.filters) if filtered else frames
        node: Pattern | None = None
        for element in group.elements:
            if isinstance(element, ast.OptionalPattern):
                right = self.group(element.group, filtered=False)
                node = self.join(node or UNIT, right, element.group.filters, outer=True)
                continue
            part: Pattern
            if isinstance(element, ast.BasicPattern):
                part = self.frames(element)
            elif isinstance(element, ast.UnionPattern):
                part = self.union(element.branches)
            else:
                part = self.group(element)
            node = part if node is None else self.join(node, part)
        node = node or UNIT
        return self.filter(node, group.filters) if filtered else node

    def filter(self, node: Pattern, filters) -> Pattern:
        if not filters:
            return node
        types = Types(scope_of(node), self.source)
        return Filter(tuple(types.condition(expr, "FILTER") for expr in filters), node)

    def join(self, left: Pattern, right: Pattern, filters=(), outer: bool = False) -> Pattern:
        """Join, or LeftJoin (``outer``) with ``filters``: a variable both sides bind is one
        kind in both; it may be unbound after the join where it may be on the side that keeps
        its solutions (both, for Join; the left, for LeftJoin) or on the right of a LeftJoin."""
        left_kinds, right_kinds = dict(left.schema), dict(right.schema)
        kinds: dict[str, str] = {}
        maybe: set[str] = set()
        for name in dict.fromkeys([*left_kinds, *right_kinds]):
            kind, other = left_kinds.get(name), right_kinds.get(name)
            if kind and other and kind != other:
                raise QuerySyntaxError(
                    self.source,
                    1,
                    1,
                    f"?{name} is a {kind} in one pattern and a {other} in another",
                )
            kinds[name] = kind or right_kinds[name]
            if other is None:
                unbound = name in left.maybe
            elif kind is None:
                unbound = outer or name in right.maybe
            else:
                unbound = name in left.maybe and (outer or name in right.maybe)
            if unbound:
                maybe.add(name)
        schema, unbound_names = tuple(kinds.items()), frozenset(maybe)
        if not outer:
            return Join(left, right, schema, unbound_names)
        types = Types(Scope.of_solutions(schema), self.source)
        return LeftJoin(
            left,
            right,
            tuple(types.condition(expr, "FILTER") for expr in filters),
            schema,
            unbound_names,
        )

    def union(self, branches) -> Pattern:
        parts = [self.group(branch) for branch in branches]
        kinds: dict[str, str] = {}
        for part in parts:
            for name, kind in part.schema:
                if kinds.setdefault(name, kind) != kind:
                    raise QuerySyntaxError(
                        self.source,
                        1,
                        1,
                        f"?{name} is a {kinds[name]} in one branch of a "
                        f"UNION and a {kind} in another",
                    )
        maybe = frozenset(
            name
            for name in kinds
            if any(name not in dict(p.schema) or name in p.maybe for p in parts)
        )
        return Union_(tuple(parts), tuple(kinds.items()), maybe)

    # ----------------------------------------------------------------------------- frames

    def frames(self, basic: ast.BasicPattern) -> Frames:
        """A group's frame scans, the most selective first; each variable bound at its first
        occurrence in that order (a scan's streams, its patterns, its timestamps), then the
        links and the time-invariant patterns."""
        bound = _Bound()
        scans = []
        for name in sorted(
            basic.frames(), key=lambda frame: _SELECTIVITY[type(self.selectors[frame])]
        ):
            bound.frames.append(name)
            streams = tuple(
                self._stream(m.stream, bound) for m in basic.memberships if m.frame == name
            )
            patterns = tuple(self._pattern(t, bound) for t in basic.triples if t.frame == name)
            stamps = tuple(self._stamp(s, bound) for s in basic.stamps if s.frame == name)
            scans.append(FrameScan(name, self.selectors[name], streams, patterns, stamps))
        links = tuple(
            StreamLink(
                link.frame, self._slot(link.subject, bound), self._slot(link.predicate, bound)
            )
            for link in basic.links
        )
        invariants = tuple(
            Invariant(*self._positions(p.subject, p.predicate, p.obj, bound))
            for p in basic.invariants
        )
        return Frames(tuple(scans), links, invariants, bound.scope())

    def _pattern(self, triple: ast.Triple, bound: _Bound) -> FramePattern:
        return FramePattern(*self._positions(triple.subject, triple.predicate, triple.obj, bound))

    def _positions(self, subject, predicate, obj, bound: _Bound) -> tuple:
        """Subject, predicate and object, in that order (the first occurrence binds); only an
        object gives a variable its number and time."""
        subject = None if subject is None else self._slot(subject, bound)
        predicate = self._slot(predicate, bound)
        return subject, predicate, self._slot(obj, bound, values=True)

    def _slot(self, term, bound: _Bound, values: bool = False) -> Slot:
        if isinstance(term, (ast.LiteralTerm, ast.Located)):
            term = term.const
        if isinstance(term, ast.Const):
            return Constant(term.nt)
        if term.name in self.frame_names:
            raise self.error(
                term.pos,
                f"?{term.name} is a frame; it can only be a subject, a GRAPH "
                f"name, or ?{term.name}.t in expressions",
            )
        return bound.term(term.name, values)

    def _stream(self, stream, bound: _Bound) -> Slot:
        """``?x dsv:belongsTo S``: a stream IRI, or a variable bound to the stream's IRI."""
        if isinstance(stream, ast.Const):
            return Constant(stream.nt)
        if stream.name in self.frame_names:
            raise self.error(stream.pos, f"?{stream.name} is a frame, not a stream")
        return bound.term(stream.name, False)

    def _stamp(self, stamp: ast.Stamp, bound: _Bound):
        """``?x dsv:hasTimestamp ?t`` binds ?t to the frame's time, or equals an earlier ?t;
        a constant is a time the frame's must equal."""
        if isinstance(stamp.time, ast.Var):
            name = stamp.time.name
            if name in bound.times or name in bound.terms:
                return Equals(name)
            bound.times.append(name)
            return Binds(name)
        value = constant(stamp.time, self.source)
        if not isinstance(value, Time):
            raise self.error(stamp.time.pos, "dsv:hasTimestamp takes an xsd:dateTime")
        return value
