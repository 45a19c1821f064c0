"""RDF terms inside Spark: Column functions over N-Triples text.

A solution's variable is one string column holding the term's N-Triples text (NULL when
unbound). Everything SPARQL needs to know about a term (its kind, lexical form, datatype,
language, numeric value) is derived from that text with Spark SQL functions, so no Python
runs per row.

No regular expression runs where a position will do: an IRI or a language tag holds no ``"``,
so a literal's last ``"`` closes its lexical form and what follows it (``_suffix``) is empty, a
datatype ``^^<...>`` or a language tag ``@...``; and only a lexical form holding a backslash is
unescaped. Every aggregate, comparison and rendering parses terms this way, so on a day of
CityBench the regular expressions were about half of the window job's time.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rsp_jobs import terms as T
from rsp_jobs.spark import decimals as D


def is_iri(t: Column) -> Column:
    return t.startswith("<")


def is_blank(t: Column) -> Column:
    return t.startswith("_:")


def is_literal(t: Column) -> Column:
    return t.startswith('"')


def _suffix(t: Column) -> Column:
    """What follows a literal's closing quote: ``""``, ``^^<datatype>`` or ``@lang``."""
    return F.substring_index(t, '"', -1)


def _escaped(t: Column) -> Column:
    """A literal's lexical form as written (between its quotes, escapes kept)."""
    return F.substring(t, F.lit(2), F.length(t) - F.length(_suffix(t)) - F.lit(2))


def lexical(t: Column) -> Column:
    """The unescaped lexical form of a literal; NULL for other terms."""
    escaped = _escaped(t)
    return F.when(
        is_literal(t), F.when(escaped.contains("\\"), unescape(escaped)).otherwise(escaped)
    )


def unescape(escaped: Column) -> Column:
    out = F.regexp_replace(escaped, r"\\\\", "\u0001")
    out = F.regexp_replace(out, r'\\"', '"')
    out = F.regexp_replace(out, r"\\n", "\n")
    out = F.regexp_replace(out, r"\\r", "\r")
    out = F.regexp_replace(out, r"\\t", "\t")
    return F.regexp_replace(out, "\u0001", r"\\")  # a Java replacement: ``\\`` is one backslash


def escape(text: Column) -> Column:
    out = F.regexp_replace(text, r"\\", r"\\\\")
    out = F.regexp_replace(out, '"', r'\\"')
    out = F.regexp_replace(out, "\n", r"\\n")
    return F.regexp_replace(out, "\r", r"\\r")


def _typed(suffix: Column) -> Column:
    """The datatype IRI in a typed literal's suffix (``^^<iri>``)."""
    return F.substring(suffix, F.lit(4), F.length(suffix) - F.lit(4))


def datatype(t: Column) -> Column:
    """The datatype IRI of a literal (xsd:string for plain, rdf:langString for tagged)."""
    suffix = _suffix(t)
    return F.when(
        is_literal(t),
        F.when(suffix.startswith("^^<"), _typed(suffix))
        .when(suffix.startswith("@"), F.lit(T.RDF_LANGSTRING))
        .otherwise(F.lit(T.XSD_STRING)),
    )


def has_language(t: Column) -> Column:
    """Whether ``t`` is a literal with a language tag (rdf:langString)."""
    return is_literal(t) & _suffix(t).startswith("@")


def language(t: Column) -> Column:
    suffix = _suffix(t)
    return F.when(
        is_literal(t),
        F.when(suffix.startswith("@"), F.substring(suffix, 2, 2**31 - 1)).otherwise(F.lit("")),
    )


def numeric_rank(t: Column) -> Column:
    """0 integer, 1 decimal, 2 float, 3 double (SPARQL type promotion order); NULL if not numeric."""
    suffix = _suffix(t)
    return F.when(
        is_literal(t) & suffix.startswith("^^<"), F.try_element_at(F.expr(_RANKS), _typed(suffix))
    )


# the rank map as SQL text: one call to the JVM instead of one per datatype IRI and rank (about
# 35 for each numeric comparison, sum or rendering; an eighth of a window query's plan-building calls)
_RANKS = "map(" + ", ".join(f"'{iri}', {rank}" for iri, rank in T.NUMERIC_RANK.items()) + ")"


def numeric_value(t: Column) -> Column:
    """The value of a numeric literal as a double (numeric lexical forms need no unescaping)."""
    return F.when(numeric_rank(t).isNotNull(), _escaped(t).cast("double"))


def exact_value(t: Column) -> Column:
    """The value of an xsd:integer or xsd:decimal literal (and the types derived from them) as
    ``D.EXACT``; NULL for other terms and where it is out of that range (``rsp_jobs.spark.decimals``)."""
    return F.when(numeric_rank(t) <= 1, D.parse(_escaped(t)))


def is_string_literal(t: Column) -> Column:
    """Simple literals and xsd:string: the ones SPARQL compares as strings."""
    suffix = _suffix(t)
    return is_literal(t) & ((suffix == "") | (suffix == f"^^<{T.XSD_STRING}>"))


def string_literal(text: Column) -> Column:
    return F.concat(F.lit('"'), escape(text), F.lit('"'))


def lang_literal(text: Column, lang: Column) -> Column:
    return F.when(lang == "", string_literal(text)).otherwise(
        F.concat(F.lit('"'), escape(text), F.lit('"@'), lang)
    )


def boolean_literal(value: Column) -> Column:
    return F.when(value, F.lit(f'"true"^^<{T.XSD_BOOLEAN}>')).when(
        ~value, F.lit(f'"false"^^<{T.XSD_BOOLEAN}>')
    )


def numeric_literal(value: Column, rank: Column, exact: Column) -> Column:
    """Render a computed number with the datatype its rank says: an integer or a decimal from
    ``exact`` (NULL, an error, where that is out of range), a float or a double from ``value``."""
    return (
        F.when(rank.isNull(), F.lit(None))
        .when(
            rank == 0,
            F.concat(F.lit('"'), D.integer_lexical(exact), F.lit(f'"^^<{T.XSD_INTEGER}>')),
        )
        .when(
            rank == 1,
            F.concat(F.lit('"'), D.decimal_lexical(exact), F.lit(f'"^^<{T.XSD_DECIMAL}>')),
        )
        .when(value.isNull(), F.lit(None))
        .when(rank == 2, F.concat(F.lit('"'), _double_lexical(value), F.lit(f'"^^<{T.XSD_FLOAT}>')))
        .otherwise(F.concat(F.lit('"'), _double_lexical(value), F.lit(f'"^^<{T.XSD_DOUBLE}>')))
    )


def count_literal(count: Column) -> Column:
    """Render a count (a whole number, as a double) as an xsd:integer: ``numeric_literal``
    without the cases a count never is (NaN, infinite, fractional, another type)."""
    return F.concat(F.lit('"'), count.cast("bigint").cast("string"), F.lit(f'"^^<{T.XSD_INTEGER}>'))


def _double_lexical(value: Column) -> Column:
    return (
        F.when(F.isnan(value), F.lit("NaN"))
        .when(value == float("inf"), F.lit("INF"))
        .when(value == float("-inf"), F.lit("-INF"))
        .otherwise(value.cast("string"))
    )


def datetime_value(t: Column) -> Column:
    """The instant of an xsd:dateTime literal. Its lexical form as written: a valid one holds
    no escape, and unescaping (six replacements) would be most of the expression that every
    ORDER BY key, MIN, MAX and comparison carries into the plan."""
    # an IRI's "suffix" is itself
    return F.when(_suffix(t) == f"^^<{T.XSD_DATETIME}>", F.to_timestamp(_escaped(t)))


ORDER_TERM = "term"  # the field of ``order_struct`` that holds the term


def order_struct(t: Column) -> Column:
    """``order_key`` as one struct, compared field by field as ORDER BY sorts; its last field,
    ``ORDER_TERM``, is ``t`` itself (MIN and MAX keep the struct and read the term from it)."""
    kind, number, exact, time, text, term = order_key(t)
    return F.struct(
        kind.alias("kind"),
        number.alias("number"),
        exact.alias("exact"),
        time.alias("time"),
        text.alias("text"),
        term.alias(ORDER_TERM),
    )


def number_order_struct(number: Column, exact: Column, t: Column) -> Column:
    """``order_struct`` of ``t``, a computed number whose double and exact value are known: a
    MIN or MAX over ``?v * 10`` orders by them rather than by parsing the term rendered from them."""
    return F.struct(
        F.lit(3).alias("kind"),
        number.alias("number"),
        exact.alias("exact"),
        F.lit(None).cast("timestamp").alias("time"),
        t.alias("text"),
        t.alias(ORDER_TERM),
    )


def order_key(t: Column) -> list[Column]:
    """Sort keys for SPARQL ORDER BY (15.1): unbound < blank < IRI < literal; literals by number,
    then by time, then by lexical form. A number's double orders it, its exact value breaks a tie
    (two decimals or integers that one double rounds to; the exact value is NULL for others)."""
    kind = F.when(t.isNull(), 0).when(is_blank(t), 1).when(is_iri(t), 2).otherwise(3)
    return [kind, numeric_value(t), exact_value(t), datetime_value(t), F.coalesce(lexical(t), t), t]


RANKED_TERM, TERM_RANK = "term", "rank"  # the columns of ``ranks``


def ranks(spark, terms) -> DataFrame:
    """``terms`` (N-Triples) with their place in ``order_key``'s order, from 1, as a local
    relation (``RANKED_TERM``, ``TERM_RANK``): a greater rank is a greater term, so MIN and MAX
    of ranks are hash aggregates where those of ``order_struct`` sort every row. The keys are
    Spark's own (a projection of a local relation, which Spark evaluates on the driver without
    a job), compared in Python as Spark compares structs: NULL first, NaN above every number."""
    from rsp_jobs.spark.local import local_frame

    terms = set(terms)
    kind, number, exact, time, text, term = order_key(F.col(RANKED_TERM))
    keys = (
        local_frame(spark, [(t,) for t in terms], f"{RANKED_TERM} string")
        .select(kind, number, exact, F.unix_micros(time), text, term)
        .collect()
    )
    ordered = sorted(
        keys,
        key=lambda row: (
            row[0],
            _spark_order(row[1]),
            _spark_order(row[2]),
            _spark_order(row[3]),
            row[4],
            row[5],
        ),
    )
    return local_frame(
        spark,
        [(row[5], rank) for rank, row in enumerate(ordered, 1)],
        f"{RANKED_TERM} string, {TERM_RANK} long",
    )


def _spark_order(value) -> tuple:
    """A nullable number as a key Python orders as Spark does: NULL least, NaN greatest."""
    if value is None:
        return (0, 0)
    return (2, 0) if value != value else (1, value)
