"""SPARQL expressions (W3C SPARQL 1.1 Query, section 17) compiled to Spark Columns.

An expression evaluates to a ``Value``: the N-Triples text of the result term, with the number
or boolean it stands for when that is already known (so ``?v > 80`` compares doubles without
rendering a term). An integer or decimal is computed exactly (``rsp_jobs.spark.decimals``), and
its double is the nearest to that exact value, so two doubles that differ order their exact
values alike and only a tie needs the exact ones. A SPARQL error is NULL everywhere, and Spark's three-valued AND/OR is
exactly SPARQL's logical-and/or over errors (17.2).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F

from rsp_jobs import terms as T
from rsp_jobs.algebra import plan as P
from rsp_jobs.errors import UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.spark import builtins as B
from rsp_jobs.spark import casts as C
from rsp_jobs.spark import decimals as D
from rsp_jobs.spark import terms as ST
from rsp_jobs.times import US_PER_S, ms_to_us, parse_calendar_duration


@dataclass
class Value:
    term: Column
    num: Column | None = None  # double
    rank: Column | None = None  # numeric type rank, with num
    exact: Column | None = None  # an integer's or decimal's value as D.EXACT, with num
    boolean: Column | None = None
    duration: Column | None = None  # µs, for xsd:duration constants and getDURATION()
    months: int = 0  # a duration constant's years and months (its µs are the rest)
    anchor: Column | None = None  # getDURATION()'s start, µs: where months are counted from
    iri: bool = False  # a constant IRI: compared with anything by term identity alone

    @staticmethod
    def of_number(num: Column, rank: Column, exact: Column | None = None) -> Value:
        """A computed number: ``num`` its double, used where ``rank`` is a float's or a double's;
        ``exact`` its value where it is an integer's or a decimal's (None: ``num`` is whole and
        exact, as a count or a string's length is)."""
        if exact is None:
            return Value(ST.numeric_literal(num, rank, num.cast(D.EXACT)), num, rank)
        # a float's or a double's term is written from its own double
        term = ST.numeric_literal(num, rank, exact)
        return Value(term, F.when(rank <= 1, exact.cast("double")).otherwise(num), rank, exact)

    @staticmethod
    def of_boolean(value: Column) -> Value:
        return Value(ST.boolean_literal(value), boolean=value)

    def number(self) -> Column:
        return self.num if self.num is not None else ST.numeric_value(self.term)

    def number_rank(self) -> Column:
        return self.rank if self.rank is not None else ST.numeric_rank(self.term)

    def exact_number(self) -> Column:
        """The value as ``D.EXACT`` where it is an integer or a decimal (NULL where out of range)."""
        if self.exact is not None:
            return self.exact
        if self.num is not None:
            # a count or another whole number
            return F.when(self.number_rank() <= 1, self.num.cast(D.EXACT))
        return ST.exact_value(self.term)

    def ebv(self) -> Column:
        """Effective boolean value (17.2.2); NULL is an error."""
        if self.boolean is not None:
            return self.boolean
        t = self.term
        lex = ST.lexical(t)
        dt = ST.datatype(t)
        num = self.number()
        return (
            F.when(t.isNull(), F.lit(None))
            .when(
                dt == T.XSD_BOOLEAN,
                F.when(lex.isin("true", "1"), True).when(lex.isin("false", "0"), False),
            )
            .when(num.isNotNull(), (num != 0) & ~F.isnan(num))
            .when(ST.is_string_literal(t), F.length(lex) > 0)
            .otherwise(F.lit(None).cast("boolean"))
        )


class Scope:
    """Resolves variables to columns; ``timestamp`` resolves C-SPARQL timestamp() calls to the
    column the evaluator joined in for them; ``interval`` gives an EP-SPARQL solution's start
    and end (µs columns) to getDURATION(), getSTARTTIME() and getENDTIME(); ``now`` gives NOW()
    its instant (µs; the window's close, docs/semantics/functions.md) and ``solution`` a
    column that names the solution, for BNODE(str) (``evaluate.Evaluator._with_execution``
    adds them where an expression calls those)."""

    def __init__(
        self,
        columns: Callable[[str], Column | None],
        timestamp: Callable[[ast.Timestamp], Column] | None = None,
        source: str = "<query>",
        interval: Callable[[], tuple[Column, Column]] | None = None,
        numbers: dict[str, tuple[Column, Column]] | None = None,
        exists: Callable[[P.Exists], Column] | None = None,
        now: Callable[[], Column] | None = None,
        solution: Callable[[], Column] | None = None,
    ):
        self.columns = columns
        self.now = now
        self.solution = solution
        self.timestamp = timestamp
        self.exists = exists  # an EXISTS pattern's boolean column, joined in by the evaluator
        self.source = source
        self.interval = interval
        self.numbers = numbers or {}  # a variable's number and rank where a column holds them


def compile_expr(expr: ast.Expr, scope: Scope) -> Value:
    if isinstance(expr, ast.Var):
        col = scope.columns(expr.name)
        if col is not None and expr.name in scope.numbers:
            return Value(col, *scope.numbers[expr.name])
        return Value(col if col is not None else F.lit(None).cast("string"))
    if isinstance(expr, (ast.IRI, ast.Literal)):
        text = ast.to_nt(expr)
        value = Value(F.lit(text), iri=isinstance(expr, ast.IRI))
        rdf = ast.to_rdflib(expr)
        number = T.numeric_value(rdf)
        if number is not None and isinstance(expr, ast.Literal):
            rank = T.NUMERIC_RANK[str(expr.datatype)]
            value.rank = F.lit(rank)
            value.num = F.lit(number)
            if rank <= 1:  # an integer or decimal out of the exact range is an error where used
                value.exact = D.constant(expr.lexical)
                if value.exact is None:
                    value.num, value.exact = F.lit(None).cast("double"), F.lit(None).cast(D.EXACT)
        if isinstance(expr, ast.Literal) and expr.datatype in _DURATION_TYPES:
            value.months, value.duration = _duration_parts(expr, scope)
        return value
    if isinstance(expr, ast.BinaryOp):
        return _binary(expr, scope)
    if isinstance(expr, ast.UnaryOp):
        operand = compile_expr(expr.operand, scope)
        if expr.op == "!":
            return Value.of_boolean(~operand.ebv())
        num, num_rank, exact = operand.number(), operand.number_rank(), operand.exact_number()
        if expr.op == "-":
            return Value.of_number(-num, num_rank, -exact)
        return Value.of_number(num, num_rank, exact)
    if isinstance(expr, ast.In):
        left = compile_expr(expr.expr, scope)
        tests = [_compare("=", left, compile_expr(o, scope), scope) for o in expr.options]
        result = F.lit(False)
        for test in tests:
            result = result | test
        return Value.of_boolean(~result if expr.negated else result)
    if isinstance(expr, ast.FunctionCall):
        return _call(expr, scope)
    if isinstance(expr, P.Exists):
        if scope.exists is None:
            where = expr.position or ast.Position(1, 1)
            raise UnsupportedConstruct(
                scope.source, "EXISTS here (only in FILTER and BIND)", where.line, where.column
            )
        found = scope.exists(expr)
        return Value.of_boolean(~found if expr.negated else found)
    if isinstance(expr, ast.Timestamp):
        if scope.timestamp is None:
            raise UnsupportedConstruct(scope.source, "timestamp() outside a window")
        ms = scope.timestamp(expr)
        return Value.of_number(ms.cast("double"), F.lit(0), ms.cast(D.EXACT))
    if isinstance(expr, ast.Aggregate):
        raise UnsupportedConstruct(
            scope.source, f"{expr.name.upper()}() outside SELECT, HAVING or ORDER BY"
        )
    raise UnsupportedConstruct(scope.source, type(expr).__name__)


_ARITHMETIC = {
    "+": (lambda a, b: a + b, D.add),
    "-": (lambda a, b: a - b, D.subtract),
    "*": (lambda a, b: a * b, D.multiply),
}


def _binary(expr: ast.BinaryOp, scope: Scope) -> Value:
    left, right = compile_expr(expr.left, scope), compile_expr(expr.right, scope)
    op = expr.op
    if op == "||":
        return Value.of_boolean(left.ebv() | right.ebv())
    if op == "&&":
        return Value.of_boolean(left.ebv() & right.ebv())
    if op in ("=", "!=", "<", ">", "<=", ">="):
        return Value.of_boolean(_compare(op, left, right, scope))
    a, b = left.number(), right.number()
    ea, eb = left.exact_number(), right.exact_number()
    rank = F.greatest(left.number_rank(), right.number_rank())
    if op == "/":
        # integer / integer is a decimal (17.4.2.4); division by zero is an error
        quotient = F.when(b != 0, a / b)
        return Value.of_number(quotient, F.greatest(rank, F.lit(1)), D.divide(ea, eb, quotient))
    on_doubles, exactly = _ARITHMETIC[op]
    return Value.of_number(on_doubles(a, b), rank, exactly(ea, eb))


def _compare(op: str, left: Value, right: Value, scope: Scope) -> Column:
    """SPARQL's operator mapping for comparisons: numbers by value, strings, booleans and
    times by value, any other pair by term identity (only = and !=)."""
    lt, rt = left.term, right.term
    ordered = {
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        ">=": lambda a, b: a >= b,
    }[op]
    if left.iri or right.iri:
        # RDFterm-equal (17.4.1.7): an IRI is equal to itself only, a literal or another IRI is
        # a different term (no type error: that is for two literals); IRIs have no order
        if op in ("=", "!="):
            return ordered(lt, rt)
        return F.lit(None).cast("boolean")
    ln, rn = left.number(), right.number()

    def numeric(a: Column, b: Column) -> Column:
        """XPath's op:numeric-equal/less-than/greater-than: false when either side is NaN (so
        != is true); Spark's own NaN equals itself and sorts above every number. Doubles that
        differ decide (each is the nearest to its exact value); equal ones of two integers or
        decimals are compared exactly (``0.1 + 0.2 = 0.3``, ``0.100000000000000001 > 0.1``)."""
        exact = (left.number_rank() <= 1) & (right.number_rank() <= 1)
        return (
            F.when(F.isnan(a) | F.isnan(b), F.lit(op == "!="))
            .when(a != b, ordered(a, b))
            .when(exact, ordered(left.exact_number(), right.exact_number()))
            .otherwise(ordered(a, b))
        )

    if left.num is not None and right.num is not None:  # both known numeric: the fast path
        return numeric(ln, rn)
    if left.duration is not None and right.duration is not None:  # EP-SPARQL getDURATION() < "P30D"
        return ordered(*_comparable_durations(left, right, scope))
    if left.num is not None or right.num is not None:
        # One side is a number (a constant or arithmetic): only a numeric other side compares by
        # value; any other term is a different term (= false, != true) or an error (ordering).
        # Never rendering the number as a term keeps plans small (`?x < ?y * 0.7`).
        known, other = (left, right) if left.num is not None else (right, left)
        other_num = other.number()
        mismatch = F.lit(op == "!=") if op in ("=", "!=") else F.lit(None).cast("boolean")
        return (
            F.when(known.number().isNull() | other.term.isNull(), F.lit(None).cast("boolean"))
            .when(other_num.isNotNull(), numeric(ln, rn))
            .otherwise(mismatch)
        )
    lstr, rstr = ST.is_string_literal(lt), ST.is_string_literal(rt)
    ldt, rdt = ST.datatype(lt), ST.datatype(rt)
    ltime, rtime = ST.datetime_value(lt), ST.datetime_value(rt)
    result = (
        F.when(lt.isNull() | rt.isNull(), F.lit(None))
        .when(ln.isNotNull() & rn.isNotNull(), numeric(ln, rn))
        .when(lstr & rstr, ordered(ST.lexical(lt), ST.lexical(rt)))
        .when(
            (ldt == T.XSD_BOOLEAN) & (rdt == T.XSD_BOOLEAN),
            ordered(ST.lexical(lt).isin("true", "1"), ST.lexical(rt).isin("true", "1")),
        )
        .when(ltime.isNotNull() & rtime.isNotNull(), ordered(ltime, rtime))
    )
    if op in ("=", "!="):
        # RDF 1.1 §3.3: "Lexical representations of language tags MAY be converted to lower
        # case"; two literals that differ in the case of their tag alone are the same term
        tagged = ST.has_language(lt) & ST.has_language(rt)
        same = F.when(
            tagged,
            (ST.lexical(lt) == ST.lexical(rt))
            & (F.lower(ST.language(lt)) == F.lower(ST.language(rt))),
        ).otherwise(lt == rt)
        result = result.otherwise(same if op == "=" else ~same)
    else:
        result = result.otherwise(F.lit(None).cast("boolean"))
    return result


def _rounding(value: Value, function: Callable[[Column], Column]) -> Value:
    """abs, ceil, floor and round keep their argument's type (17.4.4), on its exact value for
    an integer or a decimal."""
    return Value.of_number(
        function(value.number()).cast("double"),
        value.number_rank(),
        function(value.exact_number()).cast(D.EXACT),
    )


def _string_arg(value: Value) -> Column:
    """The lexical form of a string literal argument (§17.4.3.1.1: simple, xsd:string or with a
    language tag); NULL (error) for other terms."""
    return B.string_arg(value.term)


def _concat(args: list[Value]) -> Column:
    """SPARQL 1.1 §17.4.3.12: "if all input literals are plain literals with identical language
    tag, then the returned literal is a plain literal with the same language tag, in all other
    cases, the returned literal is a simple literal"."""
    text = F.concat(*[_string_arg(a) for a in args])
    if not args:
        return ST.string_literal(text)
    tags = [ST.language(a.term) for a in args]
    same = functools.reduce(lambda acc, tag: acc & (tag == tags[0]), tags[1:], F.lit(True))
    return ST.lang_literal(text, F.when(same, tags[0]).otherwise(F.lit("")))


def _same_kind_string(source: Value, text: Column) -> Column:
    """String functions keep the language tag of their first argument (17.4.3)."""
    return ST.lang_literal(text, ST.language(source.term))


def _call(expr: ast.FunctionCall, scope: Scope) -> Value:
    name = expr.name
    if name in _INTERVAL_CALLS:
        if scope.interval is None:
            raise _unsupported(
                expr, scope, f"{_INTERVAL_CALLS[name]}() outside an EP-SPARQL pattern"
            )
        return _interval_call(name, *scope.interval())
    if name == "bound":
        arg = expr.args[0]
        col = scope.columns(arg.name) if isinstance(arg, ast.Var) else None
        return Value.of_boolean(col.isNotNull() if col is not None else F.lit(False))
    if name == "if":
        cond, yes, no = (compile_expr(a, scope) for a in expr.args)
        test = cond.ebv()
        return Value(F.when(test, yes.term).when(~test, no.term))
    if name == "coalesce":
        # SPARQL 1.1 §17.4.1.4: "If none of the arguments evaluates to an RDF term, an error is
        # raised", so COALESCE() with no argument is an error (unbound); Spark wants one.
        if not expr.args:
            return Value(F.lit(None).cast("string"))
        return Value(F.coalesce(*[compile_expr(a, scope).term for a in expr.args]))
    if name in ("iri", "uri") and isinstance(expr.args[0], ast.Literal):
        return _constant_iri(expr.args[0], expr.base)
    args = [compile_expr(a, scope) for a in expr.args]
    first = args[0].term if args else F.lit(None).cast("string")  # unread by nullary functions
    simple: dict[str, Callable[[], Value]] = {
        "isiri": lambda: Value.of_boolean(F.when(first.isNotNull(), ST.is_iri(first))),
        "isuri": lambda: Value.of_boolean(F.when(first.isNotNull(), ST.is_iri(first))),
        "isblank": lambda: Value.of_boolean(F.when(first.isNotNull(), ST.is_blank(first))),
        "isliteral": lambda: Value.of_boolean(F.when(first.isNotNull(), ST.is_literal(first))),
        "isnumeric": lambda: Value.of_boolean(
            F.when(first.isNotNull(), args[0].number().isNotNull())
        ),
        "str": lambda: _cast_string(args[0]),
        "lang": lambda: Value(F.when(ST.is_literal(first), ST.string_literal(ST.language(first)))),
        "datatype": lambda: Value(
            F.when(ST.is_literal(first), F.concat(F.lit("<"), ST.datatype(first), F.lit(">")))
        ),
        "sameterm": lambda: Value.of_boolean(first == args[1].term),
        "abs": lambda: _rounding(args[0], F.abs),
        "ceil": lambda: _rounding(args[0], F.ceil),
        "floor": lambda: _rounding(args[0], F.floor),
        # SPARQL rounds halves up (towards positive infinity), Spark's round() away from zero
        "round": lambda: _rounding(args[0], lambda x: F.floor(x + F.lit(Decimal("0.5")))),
        "strlen": lambda: Value.of_number(F.length(_string_arg(args[0])).cast("double"), F.lit(0)),
        "ucase": lambda: Value(_same_kind_string(args[0], F.upper(_string_arg(args[0])))),
        "lcase": lambda: Value(_same_kind_string(args[0], F.lower(_string_arg(args[0])))),
        "contains": lambda: Value.of_boolean(B.contains(first, args[1].term)),
        "strstarts": lambda: Value.of_boolean(B.strstarts(first, args[1].term)),
        "strends": lambda: Value.of_boolean(B.strends(first, args[1].term)),
        "strbefore": lambda: Value(B.strbefore(first, args[1].term)),
        "strafter": lambda: Value(B.strafter(first, args[1].term)),
        "substr": lambda: Value(
            B.substr(first, args[1].number(), args[2].number() if len(args) > 2 else None)
        ),
        "encode_for_uri": lambda: Value(B.encode_for_uri(first)),
        "strdt": lambda: Value(B.strdt(first, args[1].term)),
        "strlang": lambda: Value(B.strlang(first, args[1].term)),
        "iri": lambda: Value(B.iri(first, expr.base)),
        "uri": lambda: Value(B.iri(first, expr.base)),
        "tz": lambda: Value(B.tz(first)),
        "timezone": lambda: Value(B.timezone(first)),
        "seconds": lambda: _seconds(first),
        **{h: functools.partial(_hash, h, first) for h in _HASHES},
        # one call to Spark's rand() per row, read once: its term is the value as Spark (Java)
        # writes a double, a valid xsd:double lexical form (§17.4.4.5: "a pseudo-random number
        # between 0 (inclusive) and 1.0e0 (exclusive)")
        "rand": lambda: Value(
            F.concat(F.lit('"'), F.rand().cast("string"), F.lit(f'"^^<{T.XSD_DOUBLE}>'))
        ),
        # §17.4.5.2 UUID: "a fresh IRI from the UUID URN scheme"; §17.4.5.3 STRUUID: "a string
        # that is the scheme specific part of UUID" (Spark's uuid(): a random, version 4 UUID)
        "uuid": lambda: Value(F.concat(F.lit("<urn:uuid:"), F.expr("uuid()"), F.lit(">"))),
        "struuid": lambda: Value(ST.string_literal(F.expr("uuid()"))),
        "bnode": lambda: _bnode(expr, args, scope),
        "now": lambda: _now(expr, scope),
        "concat": lambda: Value(_concat(args)),
        "langmatches": lambda: Value.of_boolean(
            _lang_matches(_string_arg(args[0]), _string_arg(args[1]))
        ),
    }
    if name in simple:
        return simple[name]()
    if name == "regex":
        pattern = expr.args[1]
        flags = expr.args[2] if len(expr.args) > 2 else None
        if not isinstance(pattern, ast.Literal) or (
            flags is not None and not isinstance(flags, ast.Literal)
        ):
            raise _unsupported(
                expr, scope, "regex() with a pattern or flags that are not constant strings"
            )
        # XPath fn:matches (§17.4.3.14): its flags as fn:replace's; one that is not XPath's is
        # an error (FORX0001)
        letters = flags.lexical if flags else ""
        java = B.java_pattern(pattern.lexical, letters)
        if java is None:
            return Value.of_boolean(F.lit(None).cast("boolean"))
        try:
            re.compile(re.escape(pattern.lexical) if "q" in letters else pattern.lexical)
        except re.error as exc:
            raise _unsupported(expr, scope, f"regex pattern {pattern.lexical!r}: {exc}") from None
        return Value.of_boolean(_string_arg(args[0]).rlike(java))
    if name == "replace":
        return _replace(expr, args, scope)
    if name in _DATE_PARTS:
        part = B.datetime_part(first, _DATE_PARTS[name]).cast(D.EXACT)
        return Value.of_number(part.cast("double"), F.lit(0), part)
    if name in _CASTS:
        return _CASTS[name](args[0])
    raise _unsupported(expr, scope, f"function {name}()")


_INTERVAL_CALLS = {
    "getduration": "getDURATION",
    "getstarttime": "getSTARTTIME",
    "getendtime": "getENDTIME",
}
_DURATION_TYPES = {T.XSD + "duration", T.XSD + "dayTimeDuration", T.XSD + "yearMonthDuration"}


def _duration_parts(literal: ast.Literal, scope: Scope) -> tuple[int, Column]:
    """An xsd:duration constant as (months, µs of the rest)."""
    try:
        months, ms = parse_calendar_duration(literal.lexical)
    except ValueError as err:
        raise UnsupportedConstruct(scope.source, f"duration {literal.lexical!r}: {err}") from None
    return months, F.lit(ms_to_us(ms))


def _comparable_durations(left: Value, right: Value, scope: Scope) -> tuple[Column, Column]:
    """Two durations as µs to compare. A duration with years or months has no fixed length:
    against getDURATION() it is counted on the calendar from the match's start (getDURATION()
    < "P1M" holds when the match ends before its start plus one month, the day pinned to the
    month's last as XSD 1.1 appendix E adds them; docs/decisions/ep-sparql.md)."""
    if left.duration is None or right.duration is None:
        raise ValueError("only two durations are compared as durations")
    if not left.months and not right.months:
        return left.duration, right.duration
    anchor = left.anchor if left.anchor is not None else right.anchor
    if anchor is None:
        raise UnsupportedConstruct(
            scope.source,
            "comparing a duration with years or months to anything but "
            "getDURATION() (their order depends on a start time)",
        )

    def elapsed(months: int, duration: Column, start: Column) -> Column:
        if not months:
            return duration
        shifted = F.expr(f"make_interval(0, {months})")
        return F.unix_micros(F.timestamp_micros(start) + shifted) - start + duration

    return elapsed(left.months, left.duration, anchor), elapsed(
        right.months, right.duration, anchor
    )


def _interval_call(name: str, start: Column, end: Column) -> Value:
    """EP-SPARQL 3.1: getDURATION() is tw - ta as an xsd:duration; getSTARTTIME() and
    getENDTIME() are ta and tw as xsd:dateTime."""
    if name == "getduration":
        micros = end - start
        seconds = F.regexp_replace(
            F.regexp_replace(
                (micros / F.lit(US_PER_S)).cast("decimal(24,6)").cast("string"), r"0+$", ""
            ),
            r"\.$",
            "",
        )
        return Value(
            F.concat(F.lit('"PT'), seconds, F.lit(f'S"^^<{T.XSD}duration>')),
            duration=micros,
            anchor=start,
        )
    moment = F.date_format(
        F.timestamp_micros(start if name == "getstarttime" else end), "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"
    )
    lexical = F.regexp_replace(F.regexp_replace(moment, r"0+$", ""), r"\.$", "")
    return Value(F.concat(F.lit('"'), lexical, F.lit(f'Z"^^<{T.XSD_DATETIME}>')))


def _lang_matches(tag: Column, pattern: Column) -> Column:
    return F.when(pattern == "*", F.length(tag) > 0).otherwise(
        (F.lower(tag) == F.lower(pattern))
        | F.lower(tag).startswith(F.concat(F.lower(pattern), F.lit("-")))
    )


# §17.4.5.2-6: YEAR, MONTH, DAY, HOURS, MINUTES as integers, read from the lexical form in the
# time zone it is written in (the group of ``B.datetime_part``'s pattern)
_DATE_PARTS = {"year": 1, "month": 2, "day": 3, "hours": 4, "minutes": 5}
_HASHES = ("md5", "sha1", "sha256", "sha384", "sha512")


def _constant_iri(literal: ast.Literal, base: str | None) -> Value:
    """IRI("...") of a constant: resolved here, in full (RFC 3986 §5.2), against the query's
    BASE; an error where the literal is not simple, or the result is not an absolute IRI."""
    from rsp_jobs.language.parser import _resolve

    error = Value(F.lit(None).cast("string"))
    if literal.lang or literal.datatype not in (None, T.XSD_STRING):
        return error
    text = _resolve(base, literal.lexical) if base else literal.lexical
    if not re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:", text) or re.search(
        r'[<>"{}|^`\\\x00-\x20]', text
    ):
        return error
    return Value(F.lit(f"<{text}>"), iri=True)


def _hash(name: str, t: Column) -> Value:
    return Value(B.hashed(name, t))


def _seconds(t: Column) -> Value:
    """§17.4.5.7 SECONDS: "Returns the seconds part of the lexical form of arg", an xsd:decimal."""
    exact = D.parse(B.datetime_part(t, 6))
    return Value.of_number(exact.cast("double"), F.lit(1), exact)


def _now(expr: ast.FunctionCall, scope: Scope) -> Value:
    """§17.4.5.1 NOW: "Returns an XSD dateTime value for the current query execution. All
    calls to this function in any one query execution must return the same value." One
    execution of a continuous query is the evaluation of one window, and its instant is the
    window's close (docs/semantics/functions.md): the same in every call over that window,
    and the same when the window is evaluated again. An EP-SPARQL pattern is executed as its
    events arrive (ETALIS, §4): a solution is found when its last event arrives, so NOW() is
    its getENDTIME(). A DOTR condition is no query execution (the event SELECTs are, and
    there NOW() is their instant): it refuses NOW() where it is written."""
    if scope.now is not None:
        return _interval_call("getendtime", scope.now(), scope.now())
    if scope.interval is not None:
        end = scope.interval()[1]
        return _interval_call("getendtime", end, end)
    raise _unsupported(expr, scope, "NOW() outside a window or an EP-SPARQL pattern")


def _unsupported(expr: ast.FunctionCall, scope: Scope, what: str) -> UnsupportedConstruct:
    where = expr.position
    return UnsupportedConstruct(
        scope.source, what, where.line if where else None, where.column if where else None
    )


def _bnode(expr: ast.FunctionCall, args: list[Value], scope: Scope) -> Value:
    """§17.4.2.9 BNODE: "The BNODE function constructs a blank node that is distinct from all
    blank nodes in the dataset being queried and distinct from all blank nodes created by calls
    to this constructor for other query solutions. If the no argument form is used, every call
    results in a distinct blank node. If the form with a simple literal is used, every call
    results in distinct blank nodes for different simple literals, and the same blank node for
    calls with the same simple literal within expressions for one solution mapping."
    BNODE() is a random UUID per call; BNODE(str) is named by the solution's own name (a
    random UUID the evaluator gives each solution) and the string. Data's blank nodes are
    ``_:`` and other labels, never ``_:b`` and 40 hex digits. An EP-SPARQL pattern's solution
    and a DOTR condition's candidate have no such name (a match found again in a later batch
    must construct the same result): BNODE(str) is refused there where it is written, and a
    CONSTRUCT template's blank node is the fresh node per match."""
    if not args:
        return Value(B.bnode_label(F.expr("uuid()")))
    if scope.solution is None:
        raise _unsupported(expr, scope, "BNODE(str) outside a window query's FILTER or BIND")
    text = B.simple_arg(args[0].term)
    return Value(
        F.when(text.isNotNull(), B.bnode_label(F.concat(scope.solution(), F.lit(" "), text)))
    )


def _replace(expr: ast.FunctionCall, args: list[Value], scope: Scope) -> Value:
    """§17.4.3.15 REPLACE(arg, pattern, replacement[, flags]), XPath fn:replace (F&O 3.1
    §5.6.4) on the lexical form, keeping arg's kind (its language tag). Pattern, replacement
    and flags must be constants (as regex()'s): they are checked and translated to Java's
    here. Errors: a flag that is not XPath's (FORX0001), a pattern that "matches a zero-length
    string" (FORX0003), an invalid replacement (FORX0004): each makes the call unbound."""
    constants = expr.args[1:]
    if not all(isinstance(c, ast.Literal) for c in constants):
        raise _unsupported(
            expr, scope, "replace() with a pattern, replacement or flags that are not constants"
        )
    pattern, replacement = constants[0].lexical, constants[1].lexical  # type: ignore[union-attr]
    flags = constants[2].lexical if len(constants) > 2 else ""  # type: ignore[union-attr]
    unbound = Value(F.lit(None).cast("string"))
    java = B.java_pattern(pattern, flags)
    if java is None:
        return unbound
    try:
        compiled = re.compile(re.escape(pattern) if "q" in flags else pattern)
    except re.error as exc:
        raise _unsupported(expr, scope, f"replace pattern {pattern!r}: {exc}") from None
    java_replacement = B.java_replacement(replacement, compiled.groups, "q" in flags)
    if java_replacement is None or compiled.search("") is not None:
        return unbound
    text = _string_arg(args[0])
    return Value(
        _same_kind_string(args[0], F.regexp_replace(text, F.lit(java), F.lit(java_replacement)))
    )


def _cast_number(rank: int) -> Callable[[Value], Value]:
    """xsd:integer, xsd:decimal, xsd:float and xsd:double as XPath casts (``rsp_jobs.spark.casts``),
    written in the target type's canonical form."""

    def cast(value: Value) -> Value:
        t, num, source = value.term, value.number(), value.number_rank()
        if rank >= 2:
            result = C.to_floating(t, num, source, single=rank == 2)
            datatype = T.XSD_FLOAT if rank == 2 else T.XSD_DOUBLE
            term = F.concat(
                F.lit('"'), C.floating_lexical(result, rank == 2), F.lit(f'"^^<{datatype}>')
            )
            return Value(F.when(result.isNotNull(), term), result, F.lit(rank))
        to = C.to_integer if rank == 0 else C.to_decimal
        double, exact = to(t, num, source, value.exact_number())
        return Value.of_number(double, F.lit(rank), exact)

    return cast


def _cast_string(value: Value) -> Value:
    t = value.term
    return Value(
        ST.string_literal(
            F.when(ST.is_iri(t), F.regexp_extract(t, r"^<(.*)>$", 1)).when(
                ST.is_literal(t), ST.lexical(t)
            )
        )
    )


def _cast_bounded_integer(datatype: str, bits: int) -> Callable[[Value], Value]:
    """xsd:int and xsd:long: xsd:integer's cast, then F&O 3.1 §19.3 ("Casting to derived
    types"): "if the value ... is not in the value space of the target type, a dynamic error
    [FORG0001]" (xsd:int holds 32 bits, xsd:long 64; a value past 18 digits is already an
    error, ``rsp_jobs.spark.decimals``). The result has the target datatype."""
    integer = _cast_number(0)
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def cast(value: Value) -> Value:
        result = integer(value)
        exact = result.exact_number()
        exact = F.when((exact >= F.lit(low)) & (exact <= F.lit(high)), exact)
        term = F.concat(F.lit('"'), D.integer_lexical(exact), F.lit(f'"^^<{datatype}>'))
        return Value(term, exact.cast("double"), F.lit(0), exact)

    return cast


def _cast_boolean(value: Value) -> Value:
    return Value.of_boolean(C.to_boolean(value.term, value.number(), value.number_rank()))


def _cast_to_string(value: Value) -> Value:
    """xsd:string(): the canonical form of the value (F&O §19.1, casting to xs:string), not
    STR()'s lexical form."""
    t = value.term
    return Value(
        ST.string_literal(C.to_string(t, value.number(), value.number_rank(), value.exact_number()))
    )


_CASTS = {
    T.XSD_INTEGER: _cast_number(0),
    T.XSD + "int": _cast_bounded_integer(T.XSD + "int", 32),
    T.XSD + "long": _cast_bounded_integer(T.XSD + "long", 64),
    T.XSD_DECIMAL: _cast_number(1),
    T.XSD_FLOAT: _cast_number(2),
    T.XSD_DOUBLE: _cast_number(3),
    T.XSD_STRING: _cast_to_string,
    T.XSD_BOOLEAN: _cast_boolean,
    T.XSD_DATETIME: lambda value: Value(C.to_datetime(value.term)),
}
