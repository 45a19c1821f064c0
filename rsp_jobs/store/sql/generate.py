"""A TA-SPARQL plan (``rsp_jobs.algebra.tasparql``) → one SQLAlchemy Core SELECT over frames,
frame_triples, streams and invariant_triples.

A ``Frames`` node is one FROM clause: every frame scan an alias of ``frames``, every triple
pattern an alias of ``frame_triples`` joined to its frame, where the plan's ``Binds`` gives a
variable its columns and ``Equals`` compares the N-Triples text (SPARQL term equality). Other
pattern nodes become solution tables (a column per variable part, ``PARTS``, NULL where
unbound) joined, left-joined and unioned: SPARQL 1.1 §18.5's algebra in SQL. User text reaches
the database only as bound parameters. Each dialect's SQL for what the dialects write
differently is in ``sqlite`` and ``postgresql``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Double,
    FromClause,
    Integer,
    Select,
    String,
    and_,
    cast,
    func,
    literal,
    null,
    or_,
    select,
    true,
    union_all,
)

from rsp_jobs.algebra.tasparql import nodes as N
from rsp_jobs.algebra.tasparql.expressions import Time
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.store.models import Frame, FrameTriple, InvariantTriple, Stream, UTCDateTime, table_of
from rsp_jobs.store.sql import postgresql, sqlite  # noqa: F401 - each registers its dialect's SQL
from rsp_jobs.store.sql.elements import FrameJoin
from rsp_jobs.store.sql.expressions import Binding, Columns, Value

FRAMES, TRIPLES, STREAMS = table_of(Frame), table_of(FrameTriple), table_of(Stream)
INVARIANT = table_of(InvariantTriple)

# tables one SELECT may join: SQLite's limit, kept on PostgreSQL too so a query runs on both or neither
MAX_TABLES = 64

# the columns of a variable in a solution table, by kind, and the one compatibility compares
PARTS = {"frame": ("id", "iri", "ts", "stream"), "time": ("ts",), "term": ("text", "num", "time")}
KEY_PART = {"frame": "id", "time": "ts", "term": "text"}
PART_TYPES = {
    "id": Integer,
    "iri": String,
    "ts": UTCDateTime,
    "stream": Integer,
    "text": String,
    "num": Double,
    "time": UTCDateTime,
}
_UNIT = select(literal(1).label("unit"))  # one solution binding nothing


@dataclass(frozen=True)
class Statement:
    """The SELECT and how to read its rows: ``outputs`` (variable, value kind, whether it has an
    exact value) per result column; when ``ranked``, each output column is followed, after all
    of them, by its numeric type rank, and when ``exact`` then by its exact value."""

    select: Select
    outputs: tuple[tuple[str, str, bool], ...]
    ranked: bool = False
    exact: bool = False


def generate(query: N.OneTimeQuery, stream_predicates: frozenset = frozenset()) -> Statement:
    """``stream_predicates``: those of the stored time-invariant statements about a stream; a
    frame pattern with one of them also matches those (restriction 1), at the price of a union,
    the others read the frames' triples alone."""
    return _Generator(query.source, stream_predicates).statement(query)


class _Generator:
    def __init__(self, source: str, stream_predicates: frozenset):
        self.source = source
        self.stream_predicates = stream_predicates
        self.names: dict[str, int] = {}  # variable -> its number in solution tables' column labels

    # ------------------------------------------------------------------------------ query

    def statement(self, query: N.OneTimeQuery) -> Statement:
        columns, where = Columns(), list[Any]()  # SQL conditions
        if isinstance(query.where, N.Frames):
            from_clause = self._frames(query.where, columns, where)
        else:
            from_clause = self._table(query.where).subquery("solutions")
            columns.read(self._columns(from_clause, query.where.schema))
        where += [columns.condition(c) for c in query.filters]
        selected, outputs, ranks, exacts = [], [], [], []
        for i, item in enumerate(query.items):
            value = columns.value(item.expr)
            kind, column = _output_column(value)
            selected.append(column.label(f"c{i}"))
            ranks.append(value.rank)
            exacts.append(value.exact)
            outputs.append((item.name, kind, value.exact is not None))
        ranked = any(rank is not None for rank in ranks)
        exact = any(e is not None for e in exacts)
        statement = select(
            *selected,
            *(_labelled_or_null(ranks, "r") if ranked else []),
            *(_labelled_or_null(exacts, "e") if exact else []),
        )
        statement = statement.select_from(from_clause)
        if where:
            statement = statement.where(and_(*where))
        if query.group is not None:
            statement = statement.group_by(*_group_columns(query.group.keys, columns))
            if query.group.having is not None:
                statement = statement.having(columns.condition(query.group.having))
        order, hidden = _order(query, selected, columns)
        if query.distinct:
            statement = statement.add_columns(*hidden).distinct()
        statement = statement.order_by(*order)
        if query.limit is not None:
            statement = statement.limit(query.limit)
        if query.offset is not None:
            statement = statement.offset(query.offset)
        return Statement(statement, tuple(outputs), ranked, exact)

    # ----------------------------------------------------------------------------- frames

    def _frames(self, node: N.Frames, columns: Columns, where: list):
        """FROM: each frame alias, its triple aliases joined to it, streams where named by a
        variable. Frames join with no condition (FILTERs link them), in the plan's order."""
        tables = (
            len(node.scans)
            + sum(len(scan.patterns) for scan in node.scans)
            + 2 * len(node.links)
            + len(node.invariants)
            + sum(
                not isinstance(stream, N.Constant) for scan in node.scans for stream in scan.streams
            )
        )
        if tables > MAX_TABLES:
            raise QuerySyntaxError(
                self.source,
                1,
                1,
                f"the query joins {tables} tables in one group; the limit is "
                f"{MAX_TABLES} (SQLite's, kept on every backend): split it",
            )
        from_clause: FromClause | None = None
        for index, scan in enumerate(node.scans):
            frame = FRAMES.alias(f"f{index}")
            columns.frames[scan.frame] = frame
            from_clause = frame if from_clause is None else FrameJoin(from_clause, frame)
            from_clause = _streams(scan, index, frame, from_clause, columns, where)
            where += _selector(scan, frame)
            for number, pattern in enumerate(scan.patterns):
                alias = self._frame_statements(pattern).alias(f"f{index}t{number}")
                on = [alias.c.frame_id == frame.c.id]
                for slot, column in (
                    (pattern.subject, "s"),
                    (pattern.predicate, "p"),
                    (pattern.object, "o"),
                ):
                    on += _slot(slot, alias, column, columns)
                from_clause = from_clause.join(alias, and_(*on))
            for stamp in scan.stamps:
                where += _stamp(stamp, frame, columns)
        for number, link in enumerate(node.links):
            if from_clause is None:
                raise ValueError(f"?{link.frame} links to a stream but is no frame scanned")
            # the stream the statement's object names, and the frames of it
            frame = columns.frames[link.frame]
            stream, alias = STREAMS.alias(f"l{number}s"), INVARIANT.alias(f"l{number}")
            from_clause = from_clause.join(stream, stream.c.id == frame.c.stream_id)
            on = [alias.c.o == _iri_text(stream.c.iri)]
            on += _slot(link.subject, alias, "s", columns) + _slot(
                link.predicate, alias, "p", columns
            )
            from_clause = from_clause.join(alias, and_(*on))
        for number, invariant in enumerate(node.invariants):
            alias = INVARIANT.alias(f"i{number}")
            on = []
            for slot, column in (
                (invariant.subject, "s"),
                (invariant.predicate, "p"),
                (invariant.object, "o"),
            ):
                on += _slot(slot, alias, column, columns)
            from_clause = (
                alias if from_clause is None else from_clause.join(alias, and_(true(), *on))
            )
            if from_clause is alias:
                where += on
        return from_clause

    def _frame_statements(self, pattern: N.FramePattern):
        """What a frame pattern matches: the frame's triples and, outside GRAPH, the
        time-invariant statements about its stream, which hold for every frame of it (TA-RDF
        restriction 1). The union is built only when such statements exist with a predicate
        the pattern can match."""
        predicate = pattern.predicate
        constant = predicate.nt if isinstance(predicate, N.Constant) else None
        wanted = self.stream_predicates if constant is None else self.stream_predicates & {constant}
        if pattern.subject is not None or not wanted:
            return TRIPLES
        stated = select(
            TRIPLES.c.frame_id,
            TRIPLES.c.s,
            TRIPLES.c.p,
            TRIPLES.c.o,
            TRIPLES.c.o_num,
            TRIPLES.c.o_time,
        )
        if constant is not None:
            stated = stated.where(TRIPLES.c.p == constant)
        frames, streams = FRAMES.alias(), STREAMS.alias()
        invariant = (
            select(
                frames.c.id,
                INVARIANT.c.s,
                INVARIANT.c.p,
                INVARIANT.c.o,
                INVARIANT.c.o_num,
                INVARIANT.c.o_time,
            )
            .select_from(
                frames.join(streams, streams.c.id == frames.c.stream_id).join(
                    INVARIANT, INVARIANT.c.s == _iri_text(streams.c.iri)
                )
            )
            .where(INVARIANT.c.p.in_(sorted(wanted)))
        )
        return stated.union_all(invariant).subquery()

    # -------------------------------------------------------------------- solution tables

    def _table(self, node: N.Pattern):
        """A pattern's solutions as a SELECT with the columns of ``node.schema``."""
        if isinstance(node, N.Frames):
            return self._frames_table(node, ())
        if isinstance(node, N.Filter):
            if isinstance(node.input, N.Frames):
                return self._frames_table(node.input, node.conditions)
            return self._filtered(node)
        if isinstance(node, (N.Join, N.LeftJoin)):
            return self._join(node)
        if isinstance(node, N.Union_):
            return self._union(node)
        return _UNIT

    def _frames_table(self, node: N.Frames, conditions) -> Select:
        """One FROM clause, as a query without OPTIONAL or UNION has, selecting every variable;
        its FILTERs test its own rows."""
        columns, where = Columns(), list[Any]()  # SQL conditions
        from_clause = self._frames(node, columns, where)
        where += [columns.condition(c) for c in conditions]
        parts = {name: (kind, _parts(name, kind, columns)) for name, kind in node.schema}
        statement = select(*self._labelled(parts)).select_from(from_clause)
        return statement.where(and_(*where)) if where else statement

    def _join(self, node) -> Select:
        """Join (or LeftJoin with its filters): solutions are compatible when every variable
        they share is bound to the same term in both, or unbound in one (SPARQL 1.1 §18.5's
        compatible mappings)."""
        left, right = node.left, node.right
        a, b = self._table(left).subquery(), self._table(right).subquery()
        ca, cb = self._columns(a, left.schema), self._columns(b, right.schema)
        merged, on = {}, []
        for name, kind in node.schema:
            if name in ca and name in cb:
                pa, pb = ca[name][1], cb[name][1]
                key = KEY_PART[kind]
                if name in left.maybe or name in right.maybe:
                    on.append(or_(pa[key].is_(None), pb[key].is_(None), pa[key] == pb[key]))
                    merged[name] = (kind, {part: func.coalesce(pa[part], pb[part]) for part in pa})
                else:
                    on.append(pa[key] == pb[key])
                    merged[name] = ca[name]
            else:
                merged[name] = ca.get(name) or cb[name]
        outer = isinstance(node, N.LeftJoin)
        if outer:
            scope = Columns().read(merged)
            on += [scope.condition(c) for c in node.filters]
        return select(*self._labelled(merged)).select_from(
            a.join(b, and_(true(), *on), isouter=outer)
        )

    def _union(self, node: N.Union_):
        """UNION: each branch's solutions, a variable a branch does not bind left unbound."""
        tables = [self._table(branch) for branch in node.branches]
        selects = []
        for branch, table in zip(node.branches, tables):
            sub = table.subquery()
            columns = self._columns(sub, branch.schema)
            full = {
                name: columns.get(name)
                or (kind, {p: cast(null(), PART_TYPES[p]) for p in PARTS[kind]})
                for name, kind in node.schema
            }
            selects.append(select(*self._labelled(full)).select_from(sub))
        return union_all(*selects)

    def _filtered(self, node: N.Filter) -> Select:
        sub = self._table(node.input).subquery()
        columns = self._columns(sub, node.input.schema)
        scope = Columns().read(columns)
        return (
            select(*self._labelled(columns))
            .select_from(sub)
            .where(and_(*[scope.condition(c) for c in node.conditions]))
        )

    def _label(self, name: str, part: str) -> str:
        """A variable's column in solution tables: v<n>_<part>, n its number in this query
        (variable names can be long or not valid SQL identifiers)."""
        return f"v{self.names.setdefault(name, len(self.names))}_{part}"

    def _labelled(self, columns: dict[str, tuple[str, dict]]) -> list:
        labelled = [
            (parts[part] if parts[part] is not None else cast(null(), PART_TYPES[part])).label(
                self._label(name, part)
            )
            for name, (kind, parts) in columns.items()
            for part in PARTS[kind]
        ]
        return labelled or [literal(1).label("unit")]

    def _columns(self, table, schema) -> dict[str, tuple[str, dict]]:
        return {
            name: (kind, {part: table.c[self._label(name, part)] for part in PARTS[kind]})
            for name, kind in schema
        }


# ------------------------------------------------------------------------- frame scans


def _slot(slot, alias, column: str, columns: Columns) -> list:
    """Conditions on one position of a triple alias; a ``Binds`` gives its variable this column."""
    if slot is None:
        return []
    if isinstance(slot, N.Constant):
        return [alias.c[column] == slot.nt]
    values = (alias.c.o_num, alias.c.o_time) if slot.values else (None, None)
    if isinstance(slot, N.Binds):
        columns.bindings[slot.var] = Binding(alias.c[column], *values)
        return []
    known = columns.bindings[slot.var]
    if slot.values:
        known.num, known.time = values
    return [alias.c[column] == known.text]


def _streams(
    scan: N.FrameScan, index: int, frame, from_clause: FromClause, columns: Columns, where: list
) -> FromClause:
    """``dsv:belongsTo``: a stream IRI is a condition on the frame's stream; a stream variable
    joins the streams table and is the stream's IRI as N-Triples text, grouped by the IRI column
    itself (PostgreSQL does not match two renderings of the expression, each with its own
    parameters)."""
    for number, stream in enumerate(scan.streams):
        if isinstance(stream, N.Constant):
            where.append(frame.c.stream_id == _stream_id(stream.nt[1:-1]))
            continue
        alias = STREAMS.alias(f"f{index}s{number}")
        from_clause = from_clause.join(alias, alias.c.id == frame.c.stream_id)
        text = _iri_text(alias.c.iri)
        if isinstance(stream, N.Binds):
            columns.bindings[stream.var] = Binding(text, key=alias.c.iri)
        else:
            where.append(text == columns.bindings[stream.var].text)
    return from_clause


def _selector(scan: N.FrameScan, frame) -> list:
    selector = scan.selector
    if isinstance(selector, N.Every):
        return []
    if isinstance(selector, (N.At, N.Between)):
        start, end = selector.start, selector.end
        if start == end and selector.end_included:
            return [frame.c.ts == start]
        return [
            frame.c.ts >= start,
            frame.c.ts <= end if selector.end_included else frame.c.ts < end,
        ]
    # FIRST, LAST: per stream, by the (stream_id, ts) index, one look-up per stream
    inner, streams = FRAMES.alias(), STREAMS.alias()
    ts = inner.c.ts.desc() if isinstance(selector, N.Last) else inner.c.ts.asc()
    pick = (
        select(inner.c.id)
        .where(inner.c.stream_id == streams.c.id)
        .order_by(ts)
        .limit(1)
        .correlate(streams)
        .scalar_subquery()
    )
    ids = select(pick).select_from(streams)
    named = [stream.nt[1:-1] for stream in scan.streams if isinstance(stream, N.Constant)]
    if named:
        ids = ids.where(streams.c.iri.in_(named))
    return [frame.c.id.in_(ids)]


def _stamp(stamp, frame, columns: Columns) -> list:
    """``?x dsv:hasTimestamp ?t``: ?t is the frame's time; a later one, or a constant, an equality."""
    if isinstance(stamp, Time):
        return [frame.c.ts == stamp.value]
    if isinstance(stamp, N.Binds):
        columns.times[stamp.var] = frame.c.ts
        return []
    known = columns.times.get(stamp.var)
    return [frame.c.ts == (known if known is not None else columns.bindings[stamp.var].time)]


def _stream_id(iri: str):
    return select(STREAMS.c.id).where(STREAMS.c.iri == iri).scalar_subquery()


def _iri_text(iri):
    """A stored IRI as N-Triples text."""
    return literal("<", String) + iri + literal(">", String)


def _parts(name: str, kind: str, columns: Columns) -> dict[str, Any]:
    """A variable's columns in a solution table, from a FROM clause's."""
    if kind == "frame":
        frame = columns.frames[name]
        return {
            "id": frame.c.id,
            "iri": frame.c.frame_iri,
            "ts": frame.c.ts,
            "stream": frame.c.stream_id,
        }
    if kind == "time":
        return {"ts": columns.times[name]}
    binding = columns.bindings[name]
    return {"text": binding.text, "num": binding.num, "time": binding.time}


# --------------------------------------------------------------------- the query's modifiers


def _output_column(value: Value) -> tuple[str, Any]:
    if value.kind == "term":
        return "term", value.text
    if value.kind == "frame":
        return "frame", value.sql.c.frame_iri
    return value.kind, value.sql


def _labelled_or_null(values: list, prefix: str) -> list:
    return [
        (value if value is not None else null()).label(f"{prefix}{i}")
        for i, value in enumerate(values)
    ]


def _group_columns(keys, columns: Columns) -> list:
    """A frame groups by its id, IRI and time; a term by its text (or a stream's IRI column)
    and its values, which are equal for equal terms."""
    out = []
    for key in keys:
        value = columns.value(key)
        if value.kind == "frame":
            out += [value.sql.c.id, value.sql.c.frame_iri, value.sql.c.ts]
        elif value.kind == "term":
            binding = columns.bindings[key.var]
            out += [c for c in (binding.key, binding.num, binding.time) if c is not None]
            if binding.key is None:
                out.append(binding.text)
        else:
            out.append(value.sql)
    return out


def _order(query: N.OneTimeQuery, selected: list, columns: Columns) -> tuple[list, list]:
    """ORDER BY terms and, for DISTINCT, the columns they sort by, added to the select list
    and sorted by label (PostgreSQL requires it). Those are values of projected terms, and
    the same term has the same value, so DISTINCT keeps the same rows."""
    order: list[Any] = []
    hidden: list[Any] = []
    for key in query.order:
        if key.item is not None:
            keys = [selected[key.item]]
        elif key.expr is None:
            raise ValueError("an ORDER BY key names neither a value nor a projected item")
        else:
            value = columns.value(key.expr)
            if value.kind == "term":
                keys = [c for c in (value.num, value.time, value.text) if c is not None]
            elif value.kind == "frame":
                keys = [value.sql.c.ts, value.sql.c.frame_iri]
            else:
                keys = [value.sql]
            if query.distinct:
                keys = [k.label(f"h{len(hidden) + i}") for i, k in enumerate(keys)]
                hidden += keys
        order += [(k.desc() if key.descending else k.asc()).nulls_last() for k in keys]
    return order, hidden
