"""XPath casts (SPARQL 1.1 Query §17.5, XPath F&O 3.1 §19) as Spark Columns.

SPARQL §17.5: "SPARQL imports a subset of the XPath constructor functions ... The function
is applied to an RDF term ... [its] lexical form, for a simple literal or xsd:string, or its
value otherwise"; a cast that F&O §19 does not allow, or whose input is not in the target's
lexical space, is an error (unbound). As F&O §19.1 ("Casting from primitive types to
primitive types") and §19.2 say:

- *from a string* (simple literal or xsd:string, F&O §19.2: "cast as if to xs:untypedAtomic"):
  the lexical form, whitespace collapsed, must be in the target type's lexical space:
  ``xsd:integer("-10.2E3")`` and ``xsd:integer("1.5")`` are errors, ``xsd:decimal("1E0")`` is
  an error (xsd:decimal has no exponent), ``xsd:boolean("1")`` is true;
- *from a number* (§19.1, "Casting to numeric types"): to xsd:integer truncated towards
  zero, NaN and infinities are errors (FOCA0002) to xsd:integer and xsd:decimal; to
  xsd:boolean, 0 and NaN are false;
- *from a boolean* (§19.1, to each numeric type): true is 1, false is 0;
- *to xsd:string* (§19.1, "Casting to xs:string and xs:untypedAtomic"): the canonical form
  of the value: an xsd:decimal that is whole is written as an integer (``xsd:string(1.0)`` is
  "1"), a float or double between 10^-6 and 10^6 as such a decimal, any other one in
  mantissa-exponent form; an IRI its text;
- *to xsd:dateTime* (§19.1 and SPARQL's table): from a string in its lexical space, or from
  an xsd:dateTime (itself); from anything else an error;
- an IRI, a blank node, a literal with a language tag or another datatype is an error
  (except an IRI to xsd:string, SPARQL's table in §17.5).

The results have the target type's canonical lexical form (XSD 1.1 Part 2 §3.3): an
xsd:double is written ``1.0E0``, an xsd:decimal ``1.0``.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from rsp_jobs import terms as T
from rsp_jobs.spark import builtins as B
from rsp_jobs.spark import decimals as D
from rsp_jobs.spark import terms as ST

# XSD 1.1 Part 2 lexical spaces (§3.3.13 integer, §3.3.3 decimal, §3.3.5 double, §3.3.2 boolean)
INTEGER_LEXICAL = r"^[+-]?[0-9]+$"
DECIMAL_LEXICAL = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"
DOUBLE_LEXICAL = r"^([+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN)$"
_SPECIAL = {"INF": float("inf"), "+INF": float("inf"), "-INF": float("-inf"), "NaN": float("nan")}


def _collapsed(t: Column) -> Column:
    """A string literal's lexical form, whitespace collapsed at its ends (XSD's ``collapse``
    facet of the numeric and boolean types); NULL for other terms."""
    return F.when(ST.is_string_literal(t), F.trim(ST.lexical(t), F.lit(" \t\n\r")))


def source_boolean(t: Column) -> Column:
    """An xsd:boolean literal's value; NULL for other terms and invalid lexical forms."""
    lex = F.when(ST.datatype(t) == T.XSD_BOOLEAN, ST.lexical(t))
    return F.when(lex.isin("true", "1"), True).when(lex.isin("false", "0"), False)


def _double_of_text(text: Column) -> Column:
    special = F.lit(None).cast("double")
    for word, value in _SPECIAL.items():
        special = F.when(text == word, F.lit(value)).otherwise(special)
    return F.when(text.rlike(DOUBLE_LEXICAL), F.coalesce(special, text.cast("double")))


def _finite(num: Column) -> Column:
    return ~F.isnan(num) & (F.abs(num) != float("inf"))


def to_integer(t: Column, num: Column, rank: Column, exact: Column) -> tuple[Column, Column]:
    """(double, exact) of xsd:integer(t) (F&O §19.1, "Casting to xs:integer": "towards
    zero"); NULL where an error."""
    text = _collapsed(t)
    boolean = source_boolean(t)
    value = (
        F.when(rank <= 1, D.truncate(exact))
        .when(rank.isNotNull() & _finite(num), D.truncate(D.from_double(num)))
        .when(boolean.isNotNull(), F.when(boolean, F.lit(1)).otherwise(F.lit(0)).cast(D.EXACT))
        .when(text.rlike(INTEGER_LEXICAL), D.parse(text))
    )
    return value.cast("double"), value


def to_decimal(t: Column, num: Column, rank: Column, exact: Column) -> tuple[Column, Column]:
    """(double, exact) of xsd:decimal(t) (F&O §19.1, "Casting to xs:decimal"); NULL where an
    error."""
    text = _collapsed(t)
    boolean = source_boolean(t)
    value = (
        F.when(rank <= 1, exact)
        .when(rank.isNotNull() & _finite(num), D.from_double(num))
        .when(boolean.isNotNull(), F.when(boolean, F.lit(1)).otherwise(F.lit(0)).cast(D.EXACT))
        .when(text.rlike(DECIMAL_LEXICAL), D.parse(text))
    )
    return value.cast("double"), value


def to_floating(t: Column, num: Column, rank: Column, single: bool) -> Column:
    """The double of xsd:double(t), or of xsd:float(t) with ``single`` (rounded to a float's
    precision, F&O §19.1, "Casting to xs:float"); NULL where an error."""
    boolean = source_boolean(t)
    value = (
        F.when(rank.isNotNull(), num)
        .when(boolean.isNotNull(), F.when(boolean, F.lit(1.0)).otherwise(F.lit(0.0)))
        .otherwise(_double_of_text(_collapsed(t)))
    )
    return value.cast("float").cast("double") if single else value


def to_boolean(t: Column, num: Column, rank: Column) -> Column:
    """xsd:boolean(t) (F&O §19.1, "Casting to xs:boolean": from a number, "false if SV is 0,
    +0, -0, NaN"; from a string, its lexical form: "true", "false", "1", "0")."""
    text = _collapsed(t)
    return (
        F.when(rank.isNotNull(), F.when(num.isNotNull(), (num != 0) & ~F.isnan(num)))
        .when(ST.datatype(t) == T.XSD_BOOLEAN, source_boolean(t))
        .when(text.isin("true", "1"), True)
        .when(text.isin("false", "0"), False)
    )


def floating_lexical(num: Column, single: bool) -> Column:
    """The canonical lexical form of an xsd:double or, with ``single``, an xsd:float (XSD 1.1
    Part 2 §3.3.5.2: a mantissa with one non-zero digit before the point and at least one
    after it, ``E``, the exponent: ``1.0E0``, ``-1.02E4``, ``0.0E0``; ``NaN``, ``INF``,
    ``-INF``). Written from Java's shortest form of the value (which Spark's cast to string
    is), moving the point where Java writes a number between 10^-3 and 10^7 without one."""
    java = (num.cast("float") if single else num).cast("string")
    sign = F.when(java.startswith("-"), F.lit("-")).otherwise(F.lit(""))
    unsigned = F.regexp_replace(java, "^-", "")
    whole, fraction = F.substring_index(unsigned, ".", 1), F.substring_index(unsigned, ".", -1)
    fraction_digits = F.regexp_replace(fraction, "^0*", "")
    digits = F.when(whole == "0", fraction_digits).otherwise(F.concat(whole, fraction))
    exponent = F.when(
        whole == "0", -(F.length(fraction) - F.length(fraction_digits) + 1)
    ).otherwise(F.length(whole) - 1)
    tail = F.regexp_replace(F.substring(digits, 2, 2**31 - 1), "0+$", "")
    mantissa = F.concat(
        F.substring(digits, 1, 1), F.lit("."), F.when(tail == "", F.lit("0")).otherwise(tail)
    )
    plain = F.concat(sign, mantissa, F.lit("E"), exponent.cast("string"))
    return (
        F.when(F.isnan(num), F.lit("NaN"))
        .when(num == float("inf"), F.lit("INF"))
        .when(num == float("-inf"), F.lit("-INF"))
        .when(num == 0, F.concat(sign, F.lit("0.0E0")))
        .when(java.contains("E"), java)
        .otherwise(plain)
    )


def _decimal_string(exact: Column) -> Column:
    """F&O §19.1 (casting to xs:string) from xs:decimal: "If SV is in the value space of
    xs:integer, the result is the canonical lexical representation of the integer, i.e. no decimal
    point", else the decimal's canonical form."""
    return F.when(exact == F.floor(exact), D.integer_lexical(exact)).otherwise(
        D.decimal_lexical(exact)
    )


def _floating_string(num: Column, single: bool) -> Column:
    """F&O §19.1 (casting to xs:string) from xs:float or xs:double: "If SV has an absolute value
    that is greater than or equal to 0.000001 (one millionth) and less than 1000000 (one million),
    then the value is converted to an xs:decimal and the resulting xs:decimal is converted to an
    xs:string according to the rules above ... If SV has the value positive or negative zero, TV is
    "0" or "-0" respectively"; else the canonical form. The decimal is the shortest form of the
    value, with 30 digits after the point (a decimal(36,18) would round 10^-6 · 1.2345678)."""
    java = (num.cast("float") if single else num).cast("string")
    decimal = java.cast("decimal(38,30)").cast("string")
    trimmed = F.regexp_replace(F.regexp_replace(decimal, "0+$", ""), r"\.$", "")
    return (
        F.when(num == 0, F.when(java.startswith("-"), F.lit("-0")).otherwise(F.lit("0")))
        .when(
            _finite(num) & (F.abs(num) >= 1e-6) & (F.abs(num) < 1e6),
            trimmed,
        )
        .otherwise(floating_lexical(num, single))
    )


def to_string(t: Column, num: Column, rank: Column, exact: Column) -> Column:
    """The lexical form of xsd:string(t) (the rules in this module's docstring)."""
    boolean = source_boolean(t)
    dt = ST.datatype(t)
    xsd = dt.startswith(T.XSD)
    return (
        F.when(ST.is_iri(t), F.regexp_extract(t, r"^<(.*)>$", 1))
        .when(rank == 0, D.integer_lexical(exact))
        .when(rank == 1, _decimal_string(exact))
        .when(rank == 2, _floating_string(num, True))
        .when(rank == 3, _floating_string(num, False))
        .when(dt == T.XSD_BOOLEAN, F.when(boolean, F.lit("true")).when(~boolean, F.lit("false")))
        # a string, an xsd:dateTime and the other XSD types: their lexical form (rank NULL
        # here also where a numeric literal is ill-typed: that is an error, not its text)
        .when(xsd & ~dt.isin(*T.NUMERIC_RANK), ST.lexical(t))
    )


def to_datetime(t: Column) -> Column:
    """The term of xsd:dateTime(t): a string whose collapsed lexical form is an xsd:dateTime's
    (``B.DATETIME_LEXICAL``, and a real instant: not February 30th) or an xsd:dateTime as it
    is; NULL where an error (SPARQL §17.5's table: no other type casts to xsd:dateTime)."""
    text = _collapsed(t)
    valid_text = F.when(text.rlike(B.DATETIME_LEXICAL) & F.to_timestamp(text).isNotNull(), text)
    lexical = F.when(
        ST.datatype(t) == T.XSD_DATETIME, F.when(ST.datetime_value(t).isNotNull(), ST.lexical(t))
    ).otherwise(valid_text)
    return F.concat(F.lit('"'), lexical, F.lit(f'"^^<{T.XSD_DATETIME}>'))
