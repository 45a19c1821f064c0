"""RDF terms inside Spark: Column functions over N-Triples text.

A solution's variable is one string column holding the term's N-Triples text (NULL when
unbound). Everything SPARQL needs to know about a term (its kind, lexical form, datatype,
language, numeric value) is derived from that text with Spark SQL functions, so no Python
runs per row.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from rsp_jobs import terms as T

_LITERAL_RE = r'(?s)^"(.*)"(\^\^<[^>]*>|@[A-Za-z0-9-]+)?$'


def is_iri(t: Column) -> Column:
    return t.startswith("<")


def is_blank(t: Column) -> Column:
    return t.startswith("_:")


def is_literal(t: Column) -> Column:
    return t.startswith('"')


def lexical(t: Column) -> Column:
    """The unescaped lexical form of a literal; NULL for other terms."""
    escaped = F.regexp_extract(t, _LITERAL_RE, 1)
    return F.when(is_literal(t), unescape(escaped))


def unescape(escaped: Column) -> Column:
    out = F.regexp_replace(escaped, r"\\\\", "\u0001")
    out = F.regexp_replace(out, r'\\"', '"')
    out = F.regexp_replace(out, r"\\n", "\n")
    out = F.regexp_replace(out, r"\\r", "\r")
    out = F.regexp_replace(out, r"\\t", "\t")
    return F.regexp_replace(out, "\u0001", r"\\\\")


def escape(text: Column) -> Column:
    out = F.regexp_replace(text, r"\\", r"\\\\")
    out = F.regexp_replace(out, '"', r'\\"')
    out = F.regexp_replace(out, "\n", r"\\n")
    return F.regexp_replace(out, "\r", r"\\r")


def datatype(t: Column) -> Column:
    """The datatype IRI of a literal (xsd:string for plain, rdf:langString for tagged)."""
    typed = F.regexp_extract(t, r'"\^\^<([^>]*)>$', 1)
    return F.when(is_literal(t), F.when(typed != "", typed)
                  .when(t.rlike(r'"@[A-Za-z0-9-]+$'), F.lit(T.RDF_LANGSTRING))
                  .otherwise(F.lit(T.XSD_STRING)))


def language(t: Column) -> Column:
    return F.when(is_literal(t), F.coalesce(
        F.when(t.rlike(r'"@[A-Za-z0-9-]+$'), F.regexp_extract(t, r'"@([A-Za-z0-9-]+)$', 1)), F.lit("")))


def numeric_rank(t: Column) -> Column:
    """0 integer, 1 decimal, 2 float, 3 double (SPARQL type promotion order); NULL if not numeric."""
    return F.try_element_at(F.expr(_RANKS), F.regexp_extract(t, r'^"[^"]*"\^\^<([^>]*)>$', 1))


# the rank map as SQL text: one call to the JVM instead of one per datatype IRI and rank (about
# 35 for each numeric comparison, sum or rendering; an eighth of a window query's plan-building calls)
_RANKS = "map(" + ", ".join(f"'{iri}', {rank}" for iri, rank in T.NUMERIC_RANK.items()) + ")"


def numeric_value(t: Column) -> Column:
    """The value of a numeric literal as a double (numeric lexical forms need no unescaping)."""
    return F.when(numeric_rank(t).isNotNull(), F.regexp_extract(t, r'^"([^"]*)"', 1).cast("double"))


def is_string_literal(t: Column) -> Column:
    """Simple literals and xsd:string: the ones SPARQL compares as strings."""
    return is_literal(t) & ~t.rlike(r'"(\^\^<[^>]*>|@[A-Za-z0-9-]+)$') | t.rlike(
        r'"\^\^<http://www\.w3\.org/2001/XMLSchema#string>$')


def string_literal(text: Column) -> Column:
    return F.concat(F.lit('"'), escape(text), F.lit('"'))


def lang_literal(text: Column, lang: Column) -> Column:
    return F.when(lang == "", string_literal(text)).otherwise(
        F.concat(F.lit('"'), escape(text), F.lit('"@'), lang))


def boolean_literal(value: Column) -> Column:
    return F.when(value, F.lit(f'"true"^^<{T.XSD_BOOLEAN}>')).when(
        ~value, F.lit(f'"false"^^<{T.XSD_BOOLEAN}>'))


def numeric_literal(value: Column, rank: Column) -> Column:
    """Render a computed number with the datatype its rank says."""
    decimal = F.regexp_replace(F.regexp_replace(value.cast("decimal(38,12)").cast("string"),
                                                r"0+$", ""), r"\.$", ".0")
    finite = ~F.isnan(value) & (F.abs(value) != F.lit(float("inf")))
    return (F.when(value.isNull() | rank.isNull(), F.lit(None))
            .when((rank == 0) & finite, F.concat(F.lit('"'), value.cast("bigint").cast("string"),
                                                 F.lit(f'"^^<{T.XSD_INTEGER}>')))
            .when((rank == 1) & finite, F.concat(F.lit('"'), decimal, F.lit(f'"^^<{T.XSD_DECIMAL}>')))
            .when(rank == 2, F.concat(F.lit('"'), _double_lexical(value), F.lit(f'"^^<{T.XSD_FLOAT}>')))
            .otherwise(F.concat(F.lit('"'), _double_lexical(value), F.lit(f'"^^<{T.XSD_DOUBLE}>'))))


def _double_lexical(value: Column) -> Column:
    return (F.when(F.isnan(value), F.lit("NaN"))
            .when(value == float("inf"), F.lit("INF"))
            .when(value == float("-inf"), F.lit("-INF"))
            .otherwise(value.cast("string")))


def datetime_value(t: Column) -> Column:
    return F.when(datatype(t) == T.XSD_DATETIME, F.to_timestamp(lexical(t)))


def order_key(t: Column) -> list[Column]:
    """Sort keys for SPARQL ORDER BY (15.1): unbound < blank < IRI < literal; literals by number,
    then by time, then by lexical form."""
    kind = (F.when(t.isNull(), 0).when(is_blank(t), 1).when(is_iri(t), 2).otherwise(3))
    return [kind, numeric_value(t), datetime_value(t), F.coalesce(lexical(t), t), t]
