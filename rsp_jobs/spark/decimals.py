"""Exact xsd:integer and xsd:decimal numbers inside Spark, as ``decimal(36,18)`` columns.

XSD 1.0 Part 2 §3.2.3: "All ·minimally conforming· processors ·must· support decimal numbers
with a minimum of 18 decimal digits"; xsd:integer (§3.3.13) is a decimal with no fraction.
Doubles hold neither (``0.1 + 0.2`` is not ``0.3``, integers past 2^53 are rounded), so an
integer or decimal is also carried as ``EXACT``: 18 digits before the point and 18 after. A
value or a result outside that range is an error (NULL: XPath F&O 3.1 §4.2, FOAR0002), never
a nearby number (docs/semantics/numbers.md).

Spark types a decimal operation by its operands' declared precision and keeps 38 digits, so
36-digit operands would lose digits: a product of two of them is typed ``decimal(38,6)`` and
a quotient too. Hence a product is the sum of four products of 18-digit halves (each exact
in 38 digits), and a quotient divides by the divisor declared with two digits after the
point where it has no more (exact to 18 digits: ``/ ?count``, ``/ 3``, ``/ 3.6``); any other
quotient is computed on doubles (F&O §4.2 leaves a quotient's precision to the
implementation: about 16 significant digits).
"""

from __future__ import annotations

from decimal import Context, Decimal, InvalidOperation

from pyspark.sql import Column
from pyspark.sql import functions as F

EXACT = "decimal(36,18)"
DIGITS = 18  # before the point, and after it
_FRACTION = "decimal(18,18)"  # the part after the point
_WHOLE = "decimal(18,0)"  # the part before it
_DIVISOR = (
    "decimal(38,2)"  # a divisor with at most two digits after the point: quotient exact to 18
)


def constant(lexical: str) -> Column | None:
    """A numeric constant as ``EXACT``; None where it is out of range (an error where used)."""
    try:
        value = Decimal(lexical)
    except InvalidOperation:
        return None
    if not value.is_finite() or abs(value) >= Decimal(10) ** DIGITS:
        return None
    exact = value.quantize(Decimal(1).scaleb(-DIGITS), context=Context(prec=2 * DIGITS))
    return F.lit(exact).cast(EXACT)


def parse(text: Column) -> Column:
    """A numeric lexical form as ``EXACT`` (NULL past 18 digits before the point; more than 18
    after it are rounded, as XSD allows a processor that keeps 18)."""
    return text.cast(EXACT)


def add(a: Column, b: Column) -> Column:
    return (a + b).cast(EXACT)


def subtract(a: Column, b: Column) -> Column:
    return (a - b).cast(EXACT)


def _halves(x: Column) -> tuple[Column, Column]:
    """``x`` as its whole part and its fraction, each exact in 18 digits (same sign as ``x``)."""
    fraction = (x % 1).cast(_FRACTION)
    return (x - fraction).cast(_WHOLE), fraction


def multiply(a: Column, b: Column) -> Column:
    """The product, exact to 18 digits after the point (the fractions' product is rounded
    there): ``(A + a)(B + b) = AB + Ab + aB + ab``, each term and partial sum in 38 digits."""
    (aw, af), (bw, bf) = _halves(a), _halves(b)
    total = (aw * bw).cast(EXACT)
    for term in (aw * bf, af * bw, af * bf):
        total = (total + term.cast(EXACT)).cast(EXACT)
    return total


def divide(a: Column, b: Column, approximate: Column) -> Column:
    """``a / b``, NULL where ``b`` is 0; ``approximate`` is the quotient of the doubles, taken
    where the divisor has more than two digits after the point."""
    short = b.cast(_DIVISOR)
    return (
        F.when(b == 0, F.lit(None).cast(EXACT))
        # (Spark's common type would drop b's digits)
        .when(short.cast(EXACT) == b, (a / short).cast(EXACT))
        .otherwise(from_double(approximate))
    )


def from_double(value: Column) -> Column:
    """A double as the decimal its shortest form writes (``0.1e0`` is 0.1, not the binary
    fraction's 0.1000000000000000055...); NULL for NaN, infinities and out of range."""
    return F.when(~F.isnan(value), value.cast("string").cast(EXACT))


def truncate(x: Column) -> Column:
    """Towards zero, as a cast to xsd:integer does (F&O §19.1.2.2)."""
    return F.when(x >= 0, F.floor(x)).otherwise(F.ceil(x)).cast(EXACT)


def integer_lexical(x: Column) -> Column:
    """An integral ``EXACT`` in xsd:integer's canonical form."""
    return x.cast(_WHOLE).cast("string")


def decimal_lexical(x: Column) -> Column:
    """``x`` in xsd:decimal's canonical form: no exponent, no trailing zeros, one digit after
    the point at least (``0.3``, ``5.0``, ``-0.000000000000000001``). Written from its digits
    (its unscaled value): Spark writes a decimal under 10^-6 with an exponent (``1E-18``)."""
    unscaled = (x * F.lit(10**DIGITS)).cast("decimal(36,0)")
    # (lpad would cut a longer one)
    digits = F.concat(F.lit("0" * DIGITS), F.abs(unscaled).cast("string"))
    pointed = F.regexp_replace(digits, rf"^0*(\d+)(\d{{{DIGITS}}})$", "$1.$2")
    canonical = F.regexp_replace(F.regexp_replace(pointed, "0+$", ""), r"\.$", ".0")
    return F.concat(F.when(unscaled < 0, F.lit("-")).otherwise(F.lit("")), canonical)
